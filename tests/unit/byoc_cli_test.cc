// `kiln partition`, `kiln compile` and `kiln run` with backends, end to end:
// values against a simple implementation in the test, the explain lines, the
// JSON report, the DOT file, dispatch logs, traces, --verify, strict mode and
// broken .kmod files.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/runtime/npy.h"

#include "cli_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::kiln_cmd;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ByocCli : public testing::CliTest {
 protected:
  ByocCli() : CliTest("byoc-cli-test") {}
};

const char* kMatmulRelu = R"(
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(3, 2), float32]) -> Tensor[(2, 2), float32] {
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

TEST_F(ByocCli, CompileAndRunKmodComputesMatmulRelu) {
  std::string model = file("mr.kir", kMatmulRelu);
  Tensor x = Tensor::from_floats({2, 3}, {1, -2, 3, -1, 0.5f, 2});
  Tensor w = Tensor::from_floats({3, 2}, {1, -1, 2, 0.5f, -1, 1});
  write_npy(path("x.npy"), x);
  write_npy(path("w.npy"), w);
  Result c = kiln_cmd("compile " + model + " --backend example_npu -o " + path("mr.kmod"));
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("offload: 2 of 2 ops offloaded in 1 region (example_npu: 2); 0 on the host"),
            std::string::npos)
      << c.out;
  Result r = kiln_cmd("run " + path("mr.kmod") + " --input x=" + path("x.npy") +
                      " --input w=" + path("w.npy") + " --out " + path("out") + " --verify --dispatch-log " +
                      path("d.jsonl") + " --profile " + path("t.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("offload: 2 of 2 ops"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify @example_npu_main_0 (example_npu): max abs 0, max rel 0: ok"),
            std::string::npos)
      << r.out;
  // relu(x @ w), computed here.
  Tensor got = read_npy(path("out/output_0.npy"));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float acc = 0;
      for (int k = 0; k < 3; ++k) acc += x.data<float>()[i * 3 + k] * w.data<float>()[k * 2 + j];
      EXPECT_FLOAT_EQ(got.data<float>()[i * 2 + j], std::max(acc, 0.0f));
    }
  std::string log = slurp(path("d.jsonl"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1);
  EXPECT_NE(log.find("\"engine\":\"MATRIX\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"fused\":true"), std::string::npos);
  EXPECT_NE(log.find("\"cycles\":"), std::string::npos);
  EXPECT_NE(slurp(path("t.json")).find("\"traceEvents\""), std::string::npos);
}

TEST_F(ByocCli, PartitionExplainsReportsAndDraws) {
  std::string model = file("m.kir", kMiddle);
  Result r = kiln_cmd("partition " + model + " --backend example_npu --explain --report " + path("r.json") +
                      " --dot " + path("g.dot"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("@main %h = exp: host: no pattern matched"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("@main %a = add: example_npu by example_npu.add in @example_npu_main_0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("refused: would create a cycle"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("offload: 3 of 4 ops offloaded in 2 regions (example_npu: 3); 1 on the host"),
            std::string::npos)
      << r.out;
  EXPECT_NE(slurp(path("r.json")).find("\"summary\": \"3 of 4 ops offloaded in 2 regions"),
            std::string::npos);
  EXPECT_NE(slurp(path("g.dot")).find("digraph kiln"), std::string::npos);
}

TEST_F(ByocCli, RunWithBackendPrintsTheSummaryAndMatchesTheInterpreter) {
  std::string model = file("m.kir", kMiddle);
  Result npu = kiln_cmd("run " + model + " -b example_npu --random-inputs 3 --verify");
  Result ref = kiln_cmd("run " + model + " --random-inputs 3");
  ASSERT_EQ(npu.code, 0) << npu.out;
  ASSERT_EQ(ref.code, 0) << ref.out;
  EXPECT_NE(npu.out.find("offload: 3 of 4 ops offloaded in 2 regions"), std::string::npos) << npu.out;
  EXPECT_EQ(ref.out.find("offload:"), std::string::npos) << ref.out;
  // Same output lines: the summaries and printed values agree.
  auto outputs = [](const std::string& s) { return s.substr(s.find("output_0:")); };
  EXPECT_EQ(outputs(npu.out), outputs(ref.out));
}

TEST_F(ByocCli, PatternChecksSeeTheDeviceOptions) {
  // A 64 KiB weight fits the default L2 (512 KiB), not a 32 KiB one: the
  // partition judges against the device --option describes, the same one
  // the codegen and the emulator use.
  std::string model = file("w.kir", R"(
def @main(%x: Tensor[(4, 128), float32], %w: Tensor[(128, 128), float32]) -> Tensor[(4, 128), float32] {
  %y = matmul(%x, %w)
  return %y
}
)");
  Result fits = kiln_cmd("partition " + model + " --backend example_npu --explain");
  ASSERT_EQ(fits.code, 0) << fits.out;
  EXPECT_NE(fits.out.find("offload: 1 of 1 ops offloaded"), std::string::npos) << fits.out;
  Result small =
      kiln_cmd("partition " + model +
               " --backend example_npu --explain --option example_npu.l1=16K --option example_npu.l2=32K");
  ASSERT_EQ(small.code, 0) << small.out;
  EXPECT_NE(small.out.find("matmul: weight of 65536 bytes cannot be tiled into L2 (32768 bytes)"),
            std::string::npos)
      << small.out;
  EXPECT_NE(small.out.find("offload: 0 of 1 ops offloaded"), std::string::npos) << small.out;
  Result bad = kiln_cmd("partition " + model + " --backend example_npu --option example_npu.l2=lots");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("l2"), std::string::npos) << bad.out;
}

TEST_F(ByocCli, StrictModeFailsListingTheOps) {
  std::string model = file("m.kir", kMiddle);
  Result r = kiln_cmd("partition " + model + " --backend example_npu --strict");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: strict partitioning: 1 op(s) of @main would fall back to the host:"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("%h = exp: no pattern matched"), std::string::npos) << r.out;
}

TEST_F(ByocCli, BrokenKmodFilesAreClearErrors) {
  std::string model = file("mr.kir", kMatmulRelu);
  ASSERT_EQ(kiln_cmd("compile " + model + " -b example_npu -o " + path("m.kmod")).code, 0);
  std::string bytes = slurp(path("m.kmod"));
  file("cut.kmod", bytes.substr(0, bytes.size() - 20));
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 1;
  file("flip.kmod", flipped);
  Result cut = kiln_cmd("run " + path("cut.kmod") + " --random-inputs 1");
  EXPECT_EQ(cut.code, 1);
  EXPECT_NE(cut.out.find("truncated .kmod file"), std::string::npos) << cut.out;
  Result flip = kiln_cmd("run " + path("flip.kmod") + " --random-inputs 1");
  EXPECT_EQ(flip.code, 1);
  EXPECT_NE(flip.out.find("checksum mismatch"), std::string::npos) << flip.out;
  Result unknown = kiln_cmd("partition " + model + " --backend nope");
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.out.find("unknown backend 'nope' (registered: example_npu, hexagon)"), std::string::npos)
      << unknown.out;
}

}  // namespace
}  // namespace kiln
