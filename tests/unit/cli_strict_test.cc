// The `kiln` command as a script sees it: a failed --verify fails the run,
// out-of-range flags and misspelt backend options are usage errors instead of
// silently running with something else, and partition, compile and run share
// one merge default and print it.
#include <gtest/gtest.h>

#include "cli_util.h"

namespace kiln {
namespace {

using Result = testing::CliResult;
using testing::kiln_cmd;

class CliStrict : public testing::CliTest {
 protected:
  CliStrict() : CliTest("cli-strict-test") {}
};

// A 64-long dot product per output: compiled, it accumulates in another order
// (and with FMA) than the reference kernel, so the results differ in the last
// bits and `--atol 0 --rtol 0` cannot pass.
const char* kDense = R"(
def @main(%x: Tensor[(4, 64), float32], %w: Tensor[(64, 64), float32]) -> Tensor[(4, 64), float32] {
  %y = matmul(%x, %w)
  %z = nn.relu(%y)
  return %z
}
)";

const char* kMiddle = R"(
def @main(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] {
  %a = add(%x, %x)
  %h = exp(%a)
  %m = multiply(%a, %h)
  %s = sigmoid(%m)
  return %s
}
)";

bool has(const Result& r, const std::string& needle) { return r.out.find(needle) != std::string::npos; }

TEST_F(CliStrict, VerifyMismatchFailsTheRunNamingTheFirstCheck) {
  std::string model = file("d.kir", kDense);
  Result exact = kiln_cmd("run " + model + " --random-inputs 1 --verify --atol 0 --rtol 0");
  EXPECT_EQ(exact.code, 1) << exact.out;
  EXPECT_TRUE(has(exact, ": MISMATCH")) << exact.out;  // the verify lines stay
  EXPECT_TRUE(
      has(exact, "error: --verify failed: 1 of 1 checks mismatch the reference kernels; first: host kernel "))
      << exact.out;
  EXPECT_TRUE(has(exact, "output_0:")) << exact.out;  // outputs are still printed
  // The default tolerances pass, and so does a .kmod of the same model.
  Result loose = kiln_cmd("run " + model + " --random-inputs 1 --verify");
  EXPECT_EQ(loose.code, 0) << loose.out;
  EXPECT_TRUE(has(loose, "verify: 1 of 1 host kernel calls match")) << loose.out;
  ASSERT_EQ(kiln_cmd("compile " + model + " -o " + path("d.kmod")).code, 0);
  Result kmod = kiln_cmd("run " + path("d.kmod") + " --random-inputs 1 --verify --atol 0 --rtol 0");
  EXPECT_EQ(kmod.code, 1) << kmod.out;
  EXPECT_TRUE(has(kmod, "error: --verify failed")) << kmod.out;
}

TEST_F(CliStrict, OutOfRangeNumbersAreUsageErrors) {
  std::string model = file("m.kir", kMiddle);
  struct Case {
    const char* flags;
    const char* needle;
  };
  for (const Case& c :
       {Case{"--random-inputs 1 --atol -5", "--atol"}, Case{"--random-inputs 1 --rtol -1", "--rtol"},
        Case{"--random-inputs -1", "--random-inputs"},
        Case{"--random-inputs 99999999999999999999999", "--random-inputs"},
        Case{"--random-inputs 1 --min-region-size -3", "--min-region-size"},
        Case{"--random-inputs 1 --print-limit -5", "--print-limit"}}) {
    Result r = kiln_cmd("run " + model + " " + c.flags);
    EXPECT_EQ(r.code, 2) << c.flags << "\n" << r.out;
    EXPECT_TRUE(has(r, "error: ")) << c.flags << "\n" << r.out;
    EXPECT_TRUE(has(r, c.needle)) << c.flags << "\n" << r.out;
  }
  // The largest seed is still a seed.
  EXPECT_EQ(kiln_cmd("run " + model + " --random-inputs 18446744073709551615").code, 0);
}

TEST_F(CliStrict, BackendOptionsNameABackendInUseAndAKeyItTakes) {
  std::string model = file("m.kir", kMiddle);
  Result typo = kiln_cmd("run " + model + " -b example_npu --random-inputs 1 --option exmple_npu.l1=8K");
  EXPECT_EQ(typo.code, 1) << typo.out;
  EXPECT_TRUE(has(
      typo,
      "error: --option exmple_npu.l1=8K: unknown backend 'exmple_npu' (registered: example_npu, hexagon)"))
      << typo.out;
  Result unused = kiln_cmd("compile " + model + " -o " + path("m.kmod") + " --option example_npu.l1=8K");
  EXPECT_EQ(unused.code, 1) << unused.out;
  EXPECT_TRUE(has(unused, "example_npu is not used (add --backend example_npu)")) << unused.out;
  Result key = kiln_cmd("partition " + model + " -b example_npu --option example_npu.l9=8K");
  EXPECT_EQ(key.code, 1) << key.out;
  EXPECT_TRUE(has(key,
                  "example_npu: unknown option 'l9' (example_npu takes l0=SIZE, l1=SIZE, l2=SIZE, "
                  "systolic=SIZE, precision=fp32|fp16|bf16)"))
      << key.out;
  ASSERT_EQ(kiln_cmd("compile " + model + " -b example_npu -o " + path("m.kmod")).code, 0);
  Result compiled = kiln_cmd("run " + path("m.kmod") + " --random-inputs 1 --option example_npu.l1=8K");
  EXPECT_EQ(compiled.code, 1) << compiled.out;
  EXPECT_TRUE(has(compiled, "its backend options were fixed by `kiln compile`")) << compiled.out;
}

TEST_F(CliStrict, UnknownCommandListsTheCommands) {
  Result r = kiln_cmd("frobnicate x.kir");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r, "error: unknown command 'frobnicate' (commands: run, opt, ops, import,")) << r.out;
  Result none = kiln_cmd("");
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_TRUE(has(none, "error: ")) << none.out;
  EXPECT_EQ(kiln_cmd("--version").code, 0);
}

TEST_F(CliStrict, PartitionMergesByDefaultLikeCompileAndRun) {
  std::string model = file("m.kir", kMiddle);
  // add and multiply cannot merge across exp (a cycle), multiply and sigmoid can.
  Result merged = kiln_cmd("partition " + model + " -b example_npu");
  ASSERT_EQ(merged.code, 0) << merged.out;
  EXPECT_TRUE(has(
      merged, "offload: 3 of 4 ops offloaded in 2 regions (example_npu: 3); 1 on the host; regions merged"))
      << merged.out;
  Result apart = kiln_cmd("partition " + model + " -b example_npu --no-merge");
  ASSERT_EQ(apart.code, 0) << apart.out;
  EXPECT_TRUE(has(apart, "in 3 regions (example_npu: 3); 1 on the host; one region per match (--no-merge)"))
      << apart.out;
  Result run = kiln_cmd("run " + model + " -b example_npu --random-inputs 1");
  EXPECT_TRUE(
      has(run, "offload: 3 of 4 ops offloaded in 2 regions (example_npu: 3); 1 on the host; regions merged"))
      << run.out;
  // Without --backend nothing is offloaded by compile and run; partition, whose
  // whole point is offloading, asks for one.
  Result host = kiln_cmd("compile " + model + " -o " + path("m.kmod"));
  ASSERT_EQ(host.code, 0) << host.out;
  EXPECT_FALSE(has(host, "offload:")) << host.out;
  EXPECT_TRUE(has(host, "backends: none")) << host.out;
  Result none = kiln_cmd("partition " + model);
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_TRUE(has(none, "name at least one --backend (registered: example_npu")) << none.out;
}

}  // namespace
}  // namespace kiln
