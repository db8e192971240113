// One loaded module run from several threads at once: everything a run
// mutates (its events, its --verify checks, its arena of intermediate values)
// belongs to that run, so concurrent runs with profiling and verify on give
// the outputs, events and checks of a run alone.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "driver/compile_model.h"
#include "ir/text.h"
#include "random_args.h"
#include "runtime/module_file.h"
#include "runtime/vm.h"

namespace kiln {
namespace {

// Host kernels before, between and after two example_npu regions, so a run
// has kernel calls, backend dispatches and arena-placed intermediates.
const char* kMixed = R"(
def @main(%x: Tensor[(1, 3, 12, 12), float32], %w: Tensor[(8, 3, 3, 3), float32], %w2: Tensor[(8, 8, 3, 3), float32]) -> Tensor[(1, 8, 12, 12), float32] {
  %e = exp(%x)
  %h = multiply(%e, %x)
  %c = nn.conv2d(%h, %w, padding=[1, 1, 1, 1])
  %r = nn.relu(%c)
  %m = multiply(%r, %r)
  %n = subtract(%m, %r)
  %c2 = nn.conv2d(%n, %w2, padding=[1, 1, 1, 1])
  %r2 = nn.relu(%c2)
  %y = add(%r2, %n)
  return %y
}
)";

// Elements in [-0.5, 0.5).
std::vector<Tensor> random_args(const FunctionNode& fn, uint64_t seed) {
  return testing::random_args(fn, seed, -0.5, 0.5);
}

// What a run recorded, without the times (which differ from run to run).
std::vector<std::string> event_keys(const RunResult& r) {
  std::vector<std::string> keys;
  for (const auto& e : r.events)
    keys.push_back(e.backend + "|" + e.function + "|" + e.node + "|" + e.op + "|" + std::to_string(e.cycles));
  return keys;
}

std::vector<std::string> check_keys(const RunResult& r) {
  std::vector<std::string> keys;
  for (const auto& c : r.checks) keys.push_back(c.str());
  return keys;
}

TEST(VmConcurrency, OneModuleRunFromFourThreadsWithProfileAndVerifyMatchesSingleRuns) {
  Module m = parse_module(kMixed, "mixed.kir");
  driver::CompileOptions co;
  co.partition.backends = {"example_npu"};
  Executable exe = driver::compile_model(m, co);
  // The module exercises what the test is about.
  ASSERT_FALSE(exe.backends.empty());
  ASSERT_FALSE(exe.host_code.empty());
  ASSERT_GT(exe.memory.arena_bytes, 0);
  // Through the .kmod bytes, as `kiln run model.kmod` loads it.
  const VirtualMachine vm(decode_kmod(encode_kmod(exe), "mixed.kmod"));
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  ro.verify = true;

  constexpr int kThreads = 4;
  constexpr int kIterations = 60;
  // One input set per thread, so a run reading another run's arena or
  // outputs shows as wrong values.
  std::vector<std::vector<Tensor>> inputs;
  std::vector<RunResult> want;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(random_args(*m.find("main"), 100 + t));
    want.push_back(vm.run(inputs.back(), ro));
    ASSERT_FALSE(want.back().events.empty());
    ASSERT_FALSE(want.back().checks.empty());
    for (const auto& c : want.back().checks) ASSERT_TRUE(c.ok) << c.str();
  }
  size_t npu_events = 0, host_events = 0;
  for (const auto& e : want[0].events) (e.backend == "example_npu" ? npu_events : host_events) += 1;
  EXPECT_GT(npu_events, 0u);
  EXPECT_GT(host_events, 0u);

  std::atomic<int> runs{0}, wrong{0};
  std::mutex mu;
  std::string first_problem;
  auto note = [&](const std::string& problem) {
    ++wrong;
    std::lock_guard<std::mutex> lock(mu);
    if (first_problem.empty()) first_problem = problem;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        try {
          RunResult got = vm.run(inputs[t], ro);
          ++runs;
          if (got.outputs.size() != want[t].outputs.size() ||
              !got.outputs[0].bitwise_equal(want[t].outputs[0]))
            note("thread " + std::to_string(t) + " run " + std::to_string(i) + ": outputs differ");
          else if (event_keys(got) != event_keys(want[t]))
            note("thread " + std::to_string(t) + " run " + std::to_string(i) + ": " +
                 std::to_string(got.events.size()) + " events, not those of a run alone");
          else if (check_keys(got) != check_keys(want[t]))
            note("thread " + std::to_string(t) + " run " + std::to_string(i) + ": " +
                 std::to_string(got.checks.size()) + " checks, not those of a run alone");
          for (const auto& e : got.events)
            if (e.start_us < 0 || e.duration_us < 0) note("an event with a negative time: " + e.to_json());
        } catch (const std::exception& e) {
          note(std::string("thread ") + std::to_string(t) + ": " + e.what());
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(runs.load(), kThreads * kIterations);
  EXPECT_EQ(wrong.load(), 0) << first_problem;
  // Sequential runs still share one arena: a run after the others matches.
  EXPECT_TRUE(vm.run(inputs[0])[0].bitwise_equal(want[0].outputs[0]));
}

}  // namespace
}  // namespace kiln
