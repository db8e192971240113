// The example NPU's precision option: float32 data held in fp16 or bf16 on
// the device (float32 accumulation), so `--verify` meets a real difference:
// the rounding itself, the error sizes the formats predict on small_cnn, and
// the run failing at the default tolerances and passing at the format's.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "backends/example_npu/runtime/device.h"
#include "cli_util.h"

namespace kiln {
namespace {

using example_npu::Precision;
using example_npu::round_to;
using Result = testing::CliResult;
using testing::kiln_cmd;

TEST(NpuPrecision, RoundsToTheNearestValueOfTheFormat) {
  EXPECT_EQ(round_to(1.0f / 3.0f, Precision::Float32), 1.0f / 3.0f);
  // fp16 has 10 fraction bits: 1/3 is 0x3555 = 0.333251953125.
  EXPECT_EQ(round_to(1.0f / 3.0f, Precision::Float16), 0.333251953125f);
  // bf16 keeps 7: 1/3 is 0x3eab = 0.333984375 (rounded up).
  EXPECT_EQ(round_to(1.0f / 3.0f, Precision::BFloat16), 0.333984375f);
  // Ties go to even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 in bf16.
  EXPECT_EQ(round_to(1.0f + 1.0f / 256.0f, Precision::BFloat16), 1.0f);
  EXPECT_EQ(round_to(1.0f + 3.0f / 256.0f, Precision::BFloat16), 1.0f + 4.0f / 256.0f);
  // Out of fp16's range; bf16 keeps the exponent of float32.
  EXPECT_TRUE(std::isinf(round_to(1e6f, Precision::Float16)));
  EXPECT_NEAR(round_to(1e6f, Precision::BFloat16), 1e6f, 1e6f / 128);
  EXPECT_TRUE(std::isnan(round_to(NAN, Precision::BFloat16)));
}

class NpuPrecisionCli : public testing::CliTest {
 protected:
  NpuPrecisionCli() : CliTest("npu-precision-test") {}

  Result run(const std::string& precision, const std::string& extra = "") {
    return kiln_cmd(
        "run " + std::string(KILN_SOURCE_DIR) +
        "/examples/small_cnn/small_cnn.kir --backend example_npu --option example_npu.precision=" +
        precision + " --random-inputs 1 --verify " + extra);
  }

  // The largest "max abs" of the regions' verify lines.
  static double worst_error(const Result& r) {
    std::regex line(R"(verify @\S+ \(example_npu\): max abs ([0-9.e+-]+))");
    double worst = -1;
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line); it != std::sregex_iterator(); ++it)
      worst = std::max(worst, std::stod((*it)[1]));
    return worst;
  }
};

TEST_F(NpuPrecisionCli, VerifyMeetsTheErrorTheFormatPredicts) {
  Result fp32 = run("fp32");
  EXPECT_EQ(fp32.code, 0) << fp32.out;
  EXPECT_EQ(worst_error(fp32), 0.0) << fp32.out;  // the emulator is exact in float32

  Result fp16 = run("fp16");
  EXPECT_EQ(fp16.code, 1) << fp16.out;
  EXPECT_NE(fp16.out.find("MISMATCH; first divergent node: "), std::string::npos) << fp16.out;
  EXPECT_NE(fp16.out.find("error: --verify failed"), std::string::npos) << fp16.out;
  const double e16 = worst_error(fp16);
  // small_cnn's activations are of order 0.1-1: half's rounding (2^-11
  // relative) over a few layers, well under 1e-2.
  EXPECT_GT(e16, 1e-5) << fp16.out;
  EXPECT_LT(e16, 1e-2) << fp16.out;

  Result bf16 = run("bf16");
  EXPECT_EQ(bf16.code, 1) << bf16.out;
  const double e16b = worst_error(bf16);
  // bf16 keeps 3 fraction bits fewer than fp16: its error is several times larger.
  EXPECT_GT(e16b, 3 * e16) << bf16.out;
  EXPECT_LT(e16b, 5e-2) << bf16.out;

  // At tolerances sized for the format the run passes.
  Result loose = run("fp16", "--atol 2e-3 --rtol 1e-2");
  EXPECT_EQ(loose.code, 0) << loose.out;
}

TEST_F(NpuPrecisionCli, AnUnknownPrecisionIsAnError) {
  Result r = run("fp8");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("example_npu option precision=fp8: expected fp32, fp16 or bf16"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace kiln
