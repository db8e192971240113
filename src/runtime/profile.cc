// Dispatch logs and Chrome traces.
#include "runtime/profile.h"

#include <map>
#include <nlohmann/json.hpp>

#include "kiln/runtime/error.h"

namespace kiln {

std::string dispatch_log(const std::vector<DispatchEvent>& events) {
  std::string s;
  for (const auto& e : events)
    if (e.backend != "host") s += e.to_json() + "\n";
  return s;
}

std::string chrome_trace(const std::vector<DispatchEvent>& events) {
  using json = nlohmann::json;
  json trace = json::array();
  std::map<std::string, int> tracks;  // backend -> thread id; host is 1
  tracks["host"] = 1;
  for (const auto& e : events)
    if (!tracks.count(e.backend)) tracks.emplace(e.backend, static_cast<int>(tracks.size()) + 1);
  for (const auto& [name, tid] : tracks)
    trace.push_back(
        {{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}});
  for (const auto& e : events) {
    json args{{"op", e.op}, {"engine", e.engine}};
    if (e.backend != "host") {
      args["function"] = e.function;
      args["cycles"] = e.cycles;
      args["tiles"] = e.tiles;
      args["fused"] = e.fused;
      args["bytes_per_tier"] = e.bytes_per_tier;
      for (const auto& [k, v] : e.counters) args[k] = v;
    }
    trace.push_back({{"name", e.node + " (" + e.op + ")"},
                     {"cat", e.backend},
                     {"ph", "X"},
                     {"pid", 1},
                     {"tid", tracks[e.backend]},
                     {"ts", e.start_us},
                     {"dur", std::max(e.duration_us, 0.001)},
                     {"args", args}});
  }
  return json{{"traceEvents", trace}, {"displayTimeUnit", "ns"}}.dump(1) + "\n";
}

}  // namespace kiln
