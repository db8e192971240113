// Profiles: dispatch logs and Chrome trace event files.
#pragma once

#include <string>
#include <vector>

#include "kiln/runtime/backend.h"

namespace kiln {

// One JSON object per line per backend dispatch (host ops are left out).
std::string dispatch_log(const std::vector<DispatchEvent>& events);
// Chrome trace event format (opens in Perfetto / chrome://tracing): host ops
// on one track, each backend on its own track, modelled cycles in the args.
std::string chrome_trace(const std::vector<DispatchEvent>& events);
// A table of where a run's time goes, over several runs (`runs`, each a
// run's events in order): one row per dispatch (node, op, backend) with its
// median time, its share of the sum of the medians and the cumulative
// share, slowest first, the `top` slowest (0: all) and a line for the rest;
// then the sum of the medians and the median of the runs' spans (first
// start to last end).
std::string profile_summary(const std::vector<std::vector<DispatchEvent>>& runs, size_t top);

}  // namespace kiln
