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

}  // namespace kiln
