// Dispatch logs and Chrome traces.
#include "runtime/profile.h"

#include <algorithm>
#include <cstdio>
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

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string profile_summary(const std::vector<std::vector<DispatchEvent>>& runs, size_t top) {
  // A dispatch is identified by its position among the run's events with
  // its name: a node dispatched twice (a loop) keeps two rows.
  struct Row {
    std::string name, op, backend;
    std::vector<double> us;
  };
  std::vector<Row> rows;
  std::vector<double> spans;
  for (const auto& events : runs) {
    if (events.empty()) continue;
    double first = events.front().start_us, last = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      const DispatchEvent& e = events[i];
      first = std::min(first, e.start_us);
      last = std::max(last, e.start_us + e.duration_us);
      if (i >= rows.size()) rows.push_back({e.node, e.op, e.backend, {}});
      if (rows[i].name != e.node)
        throw Error("profile summary: run dispatches differ at " + std::to_string(i) + ": " + rows[i].name +
                    " and " + e.node);
      rows[i].us.push_back(e.duration_us);
    }
    spans.push_back(last - first);
  }
  std::vector<std::pair<double, const Row*>> by_time;
  double total = 0;
  for (const Row& r : rows) {
    const double m = median(r.us);
    by_time.push_back({m, &r});
    total += m;
  }
  std::stable_sort(by_time.begin(), by_time.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%10s %6s %6s  %-40s %s\n", "median us", "share", "cum", "node",
                "op (backend)");
  out += line;
  double cumulative = 0, rest = 0;
  size_t rest_count = 0;
  for (size_t k = 0; k < by_time.size(); ++k) {
    const auto& [us, r] = by_time[k];
    cumulative += us;
    if (top && k >= top) {
      rest += us;
      ++rest_count;
      continue;
    }
    const double share = total > 0 ? 100 * us / total : 0, cum = total > 0 ? 100 * cumulative / total : 0;
    std::snprintf(line, sizeof line, "%10.1f %5.1f%% %5.1f%%  %-40s %s (%s)\n", us, share, cum,
                  r->name.c_str(), r->op.c_str(), r->backend.c_str());
    out += line;
  }
  if (rest_count) {
    std::snprintf(line, sizeof line, "%10.1f %5.1f%% %5.1f%%  (%zu more dispatches)\n", rest,
                  total > 0 ? 100 * rest / total : 0.0, 100.0, rest_count);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "%zu dispatches per run over %zu runs: %.1f us summed medians, %.1f us median span\n",
                rows.size(), spans.size(), total, median(spans));
  out += line;
  return out;
}

}  // namespace kiln
