// The example NPU emulator: every pattern it claims computes the reference
// interpreter's values, tiling really splits the work (small L1 forces many
// tiles), fusion keeps intermediates out of DRAM, and the dispatch events
// describe what happened.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "pattern/registry.h"
#include "runtime/vm.h"

namespace kiln {
namespace {

// The example NPU alone (an empty list would let every registered backend claim).
PartitionOptions example_npu_only() {
  PartitionOptions o;
  o.backends = {"example_npu"};
  return o;
}

Tensor random_tensor(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t = Tensor::empty(shape, dtype);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  std::uniform_int_distribution<int> small(-20, 20);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set_from_double(i, dtype == DType::Float32 ? real(rng) : small(rng));
  return t;
}

struct NpuRun {
  std::vector<Tensor> got, want;
  std::vector<DispatchEvent> events;
  PartitionReport report;
};

// Partitions for example_npu (merged), builds, runs on the VM, and runs the
// reference interpreter on the original module with the same inputs.
NpuRun run_both(const std::string& text, const CodegenOptions& device = {}, uint32_t seed = 1) {
  Module m = parse_module(text, "npu_test.kir");
  PartitionOptions opts;
  opts.backends = {"example_npu"};
  NpuRun r;
  Module parted = partition_module(m, opts, true, &r.report);
  RunCodegenOptions cg;
  cg.backend["example_npu"] = device;
  VirtualMachine vm(build_executable(parted, "main", cg));
  std::vector<Tensor> inputs;
  for (const auto& p : m.find("main")->params)
    inputs.push_back(random_tensor(p->type->tensor.shape, p->type->tensor.dtype, seed++));
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  RunResult run = vm.run(inputs, ro);
  r.got = run.outputs;
  r.events = run.events;
  r.want = interpret(m, "main", inputs);
  return r;
}

void expect_close(const NpuRun& r, double rel = 1e-5) {
  ASSERT_EQ(r.got.size(), r.want.size());
  for (size_t k = 0; k < r.got.size(); ++k) {
    ASSERT_EQ(r.got[k].shape(), r.want[k].shape());
    ASSERT_EQ(r.got[k].dtype(), r.want[k].dtype());
    bool exact = !is_float(r.want[k].dtype());
    for (int64_t i = 0; i < r.want[k].numel(); ++i) {
      double a = r.got[k].get_as_double(i), b = r.want[k].get_as_double(i);
      double tolerance = exact ? 0.0 : rel * (1 + std::fabs(b));
      ASSERT_NEAR(a, b, tolerance) << "output " << k << " element " << i;
    }
  }
}

int64_t npu_dispatches(const NpuRun& r) {
  int64_t n = 0;
  for (const auto& e : r.events) n += e.backend == "example_npu";
  return n;
}

const DispatchEvent* event_for(const NpuRun& r, const std::string& op) {
  for (const auto& e : r.events)
    if (e.backend == "example_npu" && e.op == op) return &e;
  return nullptr;
}

const char* kMatmulRelu = R"(
def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 8), float32]) -> Tensor[(2, 8), float32] {
  %y = matmul(%x, %w)
  %z = nn.relu(%y)
  return %z
}
)";

TEST(Npu, MatmulReluIsOneFusedRegion) {
  NpuRun r = run_both(kMatmulRelu);
  expect_close(r);
  EXPECT_EQ(r.report.summary(), "2 of 2 ops offloaded in 1 region (example_npu: 2); 0 on the host");
  EXPECT_EQ(r.report.ops[0].pattern, "example_npu.matmul_relu_fused");
  ASSERT_EQ(npu_dispatches(r), 1);
  const DispatchEvent* e = event_for(r, "matmul+nn.relu");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->fused);
  EXPECT_EQ(e->engine, "MATRIX");
  EXPECT_EQ(e->tiles, 1);
  // Small operands live in L0; the intermediate never touches DRAM.
  EXPECT_EQ(e->bytes_per_tier.count("DRAM"), 0u);
  EXPECT_GT(e->cycles, 0);
}

TEST(Npu, Conv2dReluTiledMatchesReference) {
  const char* text = R"(
def @main(%x: Tensor[(1, 3, 32, 32), float32], %w: Tensor[(16, 3, 3, 3), float32]) -> Tensor[(1, 16, 30, 30), float32] {
  %y = nn.conv2d(%x, %w)
  %z = nn.relu(%y)
  return %z
}
)";
  NpuRun untiled = run_both(text);
  expect_close(untiled);
  EXPECT_EQ(event_for(untiled, "nn.conv2d+nn.relu")->tiles, 1);
  // An 8 KiB L1 forces tiles over channels and rows, with kernel halos.
  NpuRun tiled = run_both(text, {{"l0", "1K"}, {"l1", "8K"}, {"l2", "64K"}});
  expect_close(tiled);
  const DispatchEvent* e = event_for(tiled, "nn.conv2d+nn.relu");
  ASSERT_NE(e, nullptr);
  EXPECT_GT(e->tiles, 4);
  EXPECT_EQ(e->tile.size(), 4u);
  EXPECT_EQ(e->engine, "CONV");
  EXPECT_TRUE(e->fused);
  EXPECT_GT(e->bytes_per_tier.at("L1"), 0);
}

TEST(Npu, PaddedStridedConvTiles) {
  const char* text = R"(
def @main(%x: Tensor[(2, 4, 11, 9), float32], %w: Tensor[(6, 4, 3, 3), float32]) -> Tensor[(2, 6, 6, 5), float32] {
  %y = nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1])
  return %y
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "1K"}});
  expect_close(r);
  EXPECT_GT(event_for(r, "nn.conv2d")->tiles, 8);
}

TEST(Npu, DepthwiseConvTiles) {
  const char* text = R"(
def @main(%x: Tensor[(1, 8, 10, 10), float32], %w: Tensor[(8, 1, 3, 3), float32]) -> Tensor[(1, 8, 10, 10), float32] {
  %y = nn.conv2d(%x, %w, padding=[1, 1], groups=8)
  return %y
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "1K"}});
  expect_close(r);
  EXPECT_EQ(r.report.ops[0].pattern, "example_npu.depthwise_conv2d");
  EXPECT_GT(event_for(r, "nn.conv2d")->tiles, 4);
  EXPECT_EQ(event_for(r, "nn.conv2d")->engine, "VECTOR");
}

TEST(Npu, PointwiseConvRunsOnTheMatrixEngine) {
  const char* text = R"(
def @main(%x: Tensor[(1, 16, 6, 6), float32], %w: Tensor[(8, 16, 1, 1), float32]) -> Tensor[(1, 8, 6, 6), float32] {
  %y = nn.conv2d(%x, %w)
  return %y
}
)";
  NpuRun r = run_both(text);
  expect_close(r);
  EXPECT_EQ(event_for(r, "nn.conv2d")->engine, "MATRIX");
}

TEST(Npu, Int8MatmulIsExactWhenTiled) {
  const char* text = R"(
def @main(%x: Tensor[(24, 40), int8], %w: Tensor[(40, 36), int8]) -> Tensor[(24, 36), int32] {
  %y = matmul(%x, %w)
  return %y
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "2K"}});
  expect_close(r);  // integer outputs compare exactly
  const DispatchEvent* e = event_for(r, "matmul");
  ASSERT_NE(e, nullptr);
  EXPECT_GT(e->tiles, 2);
}

TEST(Npu, CostModelCountsWorkAndBytes) {
  auto matmul = [](const std::string& dtype, const std::string& out) {
    return "def @main(%x: Tensor[(32, 64), " + dtype + "], %w: Tensor[(64, 32), " + dtype +
           "]) -> Tensor[(32, 32), " + out + "] {\n  %y = matmul(%x, %w)\n  return %y\n}\n";
  };
  NpuRun r8 = run_both(matmul("int8", "int32"));
  NpuRun r32 = run_both(matmul("float32", "float32"));
  const DispatchEvent* e8 = event_for(r8, "matmul");
  const DispatchEvent* e32 = event_for(r32, "matmul");
  ASSERT_NE(e8, nullptr);
  ASSERT_NE(e32, nullptr);
  // int8: 32*32*64 MACs at 256 per cycle = 256 cycles, plus bytes over each
  // tier's bandwidth: x and w (2 KiB each) and the 4 KiB int32 result all
  // fit L0 (128 bytes per cycle).
  EXPECT_EQ(e8->bytes_per_tier.at("L0"), 2048 + 2048 + 4096);
  EXPECT_EQ(e8->cycles, 256 + (2048 + 2048 + 4096) / 128);
  // float32 MACs take 4 slots: 1024 cycles; x and w (8 KiB each) sit in L1
  // (64 bytes per cycle), the 4 KiB result in L0.
  EXPECT_EQ(e32->bytes_per_tier.at("L1"), 8192 + 8192);
  EXPECT_EQ(e32->cycles, 1024 + (8192 + 8192) / 64 + 4096 / 128);
  EXPECT_EQ(e32->operands[0].tier, "L1");
  EXPECT_EQ(e32->operands[2].tier, "L0");
}

TEST(Npu, DenseTiles) {
  const char* text = R"(
def @main(%x: Tensor[(16, 32), float32], %w: Tensor[(20, 32), float32]) -> Tensor[(16, 20), float32] {
  %y = nn.dense(%x, %w)
  %z = nn.relu(%y)
  return %z
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "2K"}});
  expect_close(r);
  EXPECT_GT(event_for(r, "nn.dense+nn.relu")->tiles, 2);
}

TEST(Npu, ElementwiseAndActivationsTileWithBroadcasting) {
  const char* text = R"(
def @main(%a: Tensor[(2, 8, 6, 6), float32], %b: Tensor[(1, 8, 1, 1), float32], %c: Tensor[(6,), float32]) -> Tensor[(2, 8, 6, 6), float32] {
  %s = add(%a, %b)
  %m = multiply(%s, %c)
  %d = subtract(%m, %a)
  %q = divide(%d, const(Tensor[(1,), float32], [4.0]))
  %r6 = clip(%q, a_min=0.0, a_max=6.0)
  %cl = clip(%r6, a_min=0.5, a_max=5.0)
  %sg = sigmoid(%cl)
  %th = tanh(%sg)
  %ge = nn.gelu(%th)
  %re = nn.relu(%ge)
  return %re
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "1K"}});
  expect_close(r);
  EXPECT_EQ(r.report.offloaded_count(), 10);
  EXPECT_EQ(r.report.region_count(), 1);
  for (const auto& e : r.events)
    if (e.backend == "example_npu") {
      EXPECT_GT(e.tiles, 1) << e.op;
    }
  EXPECT_EQ(r.report.find("main", "r6")->pattern, "example_npu.relu6");
  EXPECT_EQ(r.report.find("main", "cl")->pattern, "example_npu.clip");
}

TEST(Npu, SoftmaxBatchNormPoolsTile) {
  const char* text = R"(
def @main(%x: Tensor[(2, 6, 8, 8), float32], %g: Tensor[(6,), float32], %b: Tensor[(6,), float32], %mu: Tensor[(6,), float32]) -> (Tensor[(2, 6, 4, 4), float32], Tensor[(2, 6, 4, 4), float32], Tensor[(2, 6, 8, 8), float32]) {
  %v = multiply(%g, %g)
  %n = nn.batch_norm(%x, %g, %b, %mu, %v)
  %mp = nn.max_pool2d(%n, pool_size=[2, 2], strides=[2, 2])
  %ap = nn.avg_pool2d(%n, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
  %sm = nn.softmax(%x)
  %t = (%mp, %ap, %sm)
  return %t
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "1K"}});
  expect_close(r);
  for (const char* op : {"nn.batch_norm", "nn.max_pool2d", "nn.avg_pool2d", "nn.softmax"}) {
    const DispatchEvent* e = event_for(r, op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_GT(e->tiles, 1) << op;
  }
  EXPECT_EQ(event_for(r, "nn.max_pool2d")->engine, "POOLING");
}

TEST(Npu, PoolingTilesRowsAndColumns) {
  // One image of two channels: 4 KiB per channel, L1 of 1 KiB. Only splitting
  // rows and columns (with the window halo and the padding re-derived at block
  // edges) gets a tile into L1; padding, dilation and both averaging rules
  // must come out as on the reference.
  const char* text = R"(
def @main(%x: Tensor[(1, 2, 32, 32), float32]) -> (Tensor[(1, 2, 16, 16), float32], Tensor[(1, 2, 16, 16), float32], Tensor[(1, 2, 16, 16), float32], Tensor[(1, 2, 14, 14), float32]) {
  %mp = nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
  %ai = nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad=1)
  %ae = nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[0, 0, 2, 2])
  %md = nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], dilation=[2, 2])
  %t = (%mp, %ai, %ae, %md)
  return %t
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "1K"}});
  expect_close(r);
  for (const char* op : {"nn.max_pool2d", "nn.avg_pool2d"}) {
    const DispatchEvent* e = event_for(r, op);
    ASSERT_NE(e, nullptr) << op;
    ASSERT_EQ(e->tile.size(), 4u);
    EXPECT_EQ(e->tile[0], 1);
    EXPECT_EQ(e->tile[1], 1);
    EXPECT_LT(e->tile[2] * e->tile[3], 16 * 16) << op << ": rows or columns were split";
  }
}

TEST(Npu, CeilModePoolingTilesOnlyBatchAndChannels) {
  const char* text = R"(
def @main(%x: Tensor[(2, 4, 9, 9), float32]) -> Tensor[(2, 4, 5, 5), float32] {
  %a = nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
  return %a
}
)";
  NpuRun r = run_both(text, {{"l0", "256"}, {"l1", "1K"}});
  expect_close(r);
  const DispatchEvent* e = event_for(r, "nn.avg_pool2d");
  ASSERT_NE(e, nullptr);
  EXPECT_GT(e->tiles, 1);
  EXPECT_EQ(e->tile[2], 5);
  EXPECT_EQ(e->tile[3], 5);
}

TEST(Npu, QuantizeDequantizeExact) {
  const char* text = R"(
def @main(%x: Tensor[(4, 64), float32]) -> Tensor[(4, 64), float32] {
  %q = quantize(%x, scale=0.05, zero_point=3, out_dtype="int8")
  %d = dequantize(%q, scale=0.05, zero_point=3)
  return %d
}
)";
  NpuRun r = run_both(text, {{"l0", "64"}, {"l1", "256"}});
  expect_close(r, 0.0);
  EXPECT_GT(event_for(r, "quantize")->tiles, 1);
}

TEST(Npu, ChecksRejectWithReasons) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32], %i: Tensor[(4,), int32], %a: Tensor[(2, 3, 4), float32], %b: Tensor[(2, 4, 5), float32]) -> (Tensor[(1, 4, 6, 6), float32], Tensor[(4,), int32], Tensor[(2, 3, 5), float32], Tensor[(1, 4, 8, 8), float32]) {
  %c = nn.conv2d(%x, %w, groups=2)
  %s = add(%i, %i)
  %mm = matmul(%a, %b)
  %sm = nn.softmax(%x, axis=1)
  %t = (%c, %s, %mm, %sm)
  return %t
}
)",
                          "checks.kir");
  PartitionReport report;
  PartitionOptions opts;
  opts.backends = {"example_npu"};
  partition_module(m, opts, true, &report);
  EXPECT_NE(report.find("main", "c")->reason.find("grouped convolution (groups=2) is not supported"),
            std::string::npos)
      << report.find("main", "c")->reason;
  EXPECT_NE(report.find("main", "s")->reason.find("check rejected: add: dtype int32 is not supported"),
            std::string::npos);
  EXPECT_NE(report.find("main", "mm")->reason.find("2-D only"), std::string::npos);
  EXPECT_NE(report.find("main", "sm")->reason.find("axis 1 is not supported (last axis only)"),
            std::string::npos);
  EXPECT_EQ(report.offloaded_count(), 0);
}

TEST(Npu, WeightTooLargeForL2IsRejected) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(1, 512), float32], %w: Tensor[(512, 512), float32]) -> Tensor[(1, 512), float32] {
  %y = matmul(%x, %w)
  return %y
}
)",
                          "big.kir");
  PartitionReport report;
  partition_module(m, example_npu_only(), true, &report);
  EXPECT_NE(report.ops[0].reason.find("weight of 1048576 bytes cannot be tiled into L2 (524288 bytes)"),
            std::string::npos)
      << report.ops[0].reason;
}

TEST(Npu, RunsAreDeterministicAndRepeatable) {
  Module m = parse_module(kMatmulRelu, "mr.kir");
  Module parted = partition_module(m, {}, true, nullptr);
  VirtualMachine vm(build_executable(parted));
  Tensor x = random_tensor({2, 4}, DType::Float32, 7), w = random_tensor({4, 8}, DType::Float32, 8);
  std::vector<Tensor> first = vm.run({x, w});
  for (int i = 0; i < 50; ++i) {
    std::vector<Tensor> again = vm.run({x, w});
    ASSERT_TRUE(again[0].bitwise_equal(first[0]));
  }
}

TEST(Npu, BadDeviceOptionIsAnError) {
  Module m = parse_module(kMatmulRelu, "mr.kir");
  Module parted = partition_module(m, {}, true, nullptr);
  RunCodegenOptions cg;
  cg.backend["example_npu"] = {{"l9", "4K"}};
  try {
    build_executable(parted, "main", cg);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown device option 'l9'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// One small model per registered pattern: every pattern the NPU registers
// claims its op, executes on the emulator (tiled: L1 is 512 bytes) and
// equals the reference interpreter. A pattern added without a model here
// fails the test.
TEST(Npu, EveryRegisteredPatternExecutes) {
  // A per-channel bias in the ONNX importer's form for Conv with a bias.
  const char* kBias = "const(Tensor[(1, 4, 1, 1), float32], [0.5, -0.5, 1.0, 0.0])";
  // pattern -> (body, result type)
  const std::map<std::string, std::pair<std::string, std::string>> models = {
      {"conv2d_relu_fused",
       {"%a = nn.conv2d(%x4, %w4, padding=[1, 1])\n  %b = nn.relu(%a)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"matmul_relu_fused", {"%a = nn.dense(%m, %n)\n  %b = nn.relu(%a)", "Tensor[(12, 9), float32]"}},
      {"conv2d_activation_fused",
       {"%a = nn.conv2d(%x4, %w4, padding=[1, 1])\n  %c = add(%a, " + std::string(kBias) +
            ")\n  %b = nn.hard_swish(%c)",
        "Tensor[(2, 4, 6, 6), float32]"}},
      {"depthwise_conv2d_activation_fused",
       {"%a = nn.conv2d(%x4, %dw, groups=4)\n  %c = add(%a, " + std::string(kBias) +
            ")\n  %b = nn.hard_sigmoid(%c)",
        "Tensor[(2, 4, 4, 4), float32]"}},
      {"conv2d_bias",
       {"%a = nn.conv2d(%x4, %w4, padding=[1, 1])\n  %b = add(%a, " + std::string(kBias) + ")",
        "Tensor[(2, 4, 6, 6), float32]"}},
      {"hard_swish", {"%b = nn.hard_swish(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"hard_sigmoid", {"%b = nn.hard_sigmoid(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"silu", {"%b = nn.silu(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"depthwise_conv2d", {"%b = nn.conv2d(%x4, %dw, groups=4)", "Tensor[(2, 4, 4, 4), float32]"}},
      {"conv2d", {"%b = nn.conv2d(%q4, %qw, strides=[2, 2])", "Tensor[(2, 6, 2, 2), int32]"}},
      {"matmul", {"%b = matmul(%m, %mt)", "Tensor[(12, 9), float32]"}},
      {"add", {"%b = add(%x4, %x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"subtract", {"%b = subtract(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"multiply", {"%b = multiply(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"divide", {"%b = divide(%x4, const(Tensor[(1,), float32], [3.0]))", "Tensor[(2, 4, 6, 6), float32]"}},
      {"relu", {"%b = nn.relu(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"relu6", {"%b = clip(%x4, a_min=0.0, a_max=6.0)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"clip", {"%b = clip(%x4, a_min=-0.5, a_max=0.5)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"sigmoid", {"%b = sigmoid(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"tanh", {"%b = tanh(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"gelu", {"%b = nn.gelu(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"softmax", {"%b = nn.softmax(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"batch_norm",
       {"%b = nn.batch_norm(%x4, %g, %g, %g, const(Tensor[(4,), float32], [1.0, 2.0, 0.5, 3.0]))",
        "Tensor[(2, 4, 6, 6), float32]"}},
      {"max_pool2d",
       {"%b = nn.max_pool2d(%x4, pool_size=[3, 3], padding=[1, 1])", "Tensor[(2, 4, 6, 6), float32]"}},
      {"avg_pool2d",
       {"%b = nn.avg_pool2d(%x4, pool_size=[2, 2], strides=[2, 2])", "Tensor[(2, 4, 3, 3), float32]"}},
      {"quantize",
       {"%b = quantize(%x4, scale=0.02, zero_point=-4, out_dtype=\"int8\")", "Tensor[(2, 4, 6, 6), int8]"}},
      {"dequantize", {"%b = dequantize(%q4, scale=0.5, zero_point=2)", "Tensor[(2, 4, 6, 6), float32]"}},
  };
  const std::string params =
      "%x4: Tensor[(2, 4, 6, 6), float32], %y4: Tensor[(2, 4, 6, 6), float32], %w4: Tensor[(4, 4, 3, 3), "
      "float32], "
      "%dw: Tensor[(4, 1, 3, 3), float32], %q4: Tensor[(2, 4, 6, 6), int8], %qw: Tensor[(6, 4, 3, 3), int8], "
      "%m: Tensor[(12, 10), float32], %n: Tensor[(9, 10), float32], %mt: Tensor[(10, 9), float32], "
      "%g: Tensor[(4,), float32]";
  std::set<std::string> covered;
  for (const auto& [pattern, model] : models) {
    std::string text =
        "def @main(" + params + ") -> " + model.second + " {\n  " + model.first + "\n  return %b\n}\n";
    Module m = parse_module(text, pattern + ".kir");
    PartitionReport report;
    PartitionOptions opts;
    opts.backends = {"example_npu"};
    Module parted = partition_module(m, opts, true, &report);
    ASSERT_EQ(report.offloaded_count(), static_cast<int64_t>(report.ops.size())) << pattern << "\n"
                                                                                 << report.explain();
    EXPECT_EQ(report.ops.back().pattern, "example_npu." + pattern) << report.explain();
    covered.insert(report.ops.back().pattern);
    RunCodegenOptions cg;
    cg.backend["example_npu"] = {{"l0", "128"}, {"l1", "512"}};
    VirtualMachine vm(build_executable(parted, "main", cg));
    std::vector<Tensor> inputs;
    uint32_t seed = 5;
    for (const auto& p : m.find("main")->params)
      inputs.push_back(random_tensor(p->type->tensor.shape, p->type->tensor.dtype, seed++));
    // batch_norm needs a positive variance: %g feeds it, so use |g| + 0.5.
    for (int64_t i = 0; i < inputs.back().numel(); ++i)
      inputs.back().set_from_double(i, std::fabs(inputs.back().get_as_double(i)) + 0.5);
    VirtualMachine::RunOptions ro;
    ro.record_events = true;
    RunResult run = vm.run(inputs, ro);
    std::vector<Tensor> want = interpret(m, "main", inputs);
    NpuRun r{run.outputs, want, run.events, report};
    expect_close(r);
    bool tiled = false;
    for (const auto& e : r.events) tiled = tiled || e.tiles > 1;
    EXPECT_TRUE(tiled) << pattern << " ran in one tile; the test should force tiling";
  }
  std::set<std::string> registered;
  for (const PatternEntry* e : pattern_registry().for_backend("example_npu")) registered.insert(e->name);
  EXPECT_EQ(covered, registered);
}

}  // namespace
}  // namespace kiln
