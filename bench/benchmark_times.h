// What the Google Benchmark programs share: running the registered
// benchmarks (console output without colour) and keeping each one's real
// time per iteration, by name, for the ratio table printed after them.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::bench {

class TimeCollector : public benchmark::ConsoleReporter {
 public:
  TimeCollector() : ConsoleReporter(OO_None) {}
  std::map<std::string, double> seconds;  // by benchmark name
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && r.iterations > 0)
        seconds[r.run_name.function_name] = r.real_accumulated_time / double(r.iterations);
    ConsoleReporter::ReportRuns(runs);
  }
};

// Runs the registered benchmarks (with Google Benchmark's flags from the
// command line); the seconds per iteration of each, by name.
inline std::map<std::string, double> run_benchmarks(int& argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  TimeCollector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();
  return collector.seconds;
}

}  // namespace kiln::bench
