// The channel-blocked layout (NCHWc): the ops' reference kernels against
// their definitions (src/op/nn_blocked.cc) computed here loop by loop; the
// pass convert-layout's refusals; compiled models in the blocked layout
// against the reference interpreter, for AVX-512's and AVX2's blocks.
#include <gtest/gtest.h>

#include "compile_util.h"
#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "random_args.h"
#include "test_util.h"
#include "transform/pass.h"

namespace kiln {
namespace {

Tensor run1(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {}) {
  return run_op(*find_op(op), in, attrs)[0];
}

TEST(BlockedLayout, BlockChannelsPutsEachBlockOfChannelsInnermost) {
  // x[0, ch, 0, w] = 10 * ch + w: 4 channels of one row of 2, blocks of 2.
  Tensor x = Tensor::from_floats({1, 4, 1, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Tensor y = run1("nn.block_channels", {x}, {{"block", int64_t{2}}});
  ASSERT_EQ(y.shape(), (Shape{1, 2, 1, 2, 2}));
  // y[0, b, 0, w, i] = x[0, 2b + i, 0, w].
  const std::vector<float> want = {0, 10, 1, 11, 20, 30, 21, 31};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y.data<float>()[i], want[i]) << i;
  Tensor back = run1("nn.unblock_channels", {y});
  EXPECT_TRUE(back.bitwise_equal(x));
  // float16 data (a float16 model's rounded values, widen-float16): the same
  // positions, the values' bits unchanged.
  Tensor h = Tensor::empty({1, 4, 1, 2}, DType::Float16);
  for (int64_t i = 0; i < h.numel(); ++i) h.set_from_double(i, x.get_as_double(i) + 0.5);
  Tensor hy = run1("nn.block_channels", {h}, {{"block", int64_t{2}}});
  ASSERT_EQ(hy.dtype(), DType::Float16);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(hy.get_as_double(int64_t(i)), want[i] + 0.5) << i;
  EXPECT_TRUE(run1("nn.unblock_channels", {hy}).bitwise_equal(h));
}

TEST(BlockedLayout, BlockConvWeightFollowsItsDefinition) {
  Tensor w = testing::random_floats({6, 4, 3, 2}, 1);
  Tensor b = run1("nn.block_conv_weight", {w}, {{"in_block", int64_t{2}}, {"out_block", int64_t{3}}});
  ASSERT_EQ(b.shape(), (Shape{2, 2, 3, 2, 2, 3}));
  for (int64_t o = 0; o < 6; ++o)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t t = 0; t < 6; ++t)
        EXPECT_EQ(b.data<float>()[(((o / 3) * 2 + i / 2) * 6 + t) * 6 + (i % 2) * 3 + o % 3],
                  w.data<float>()[(o * 4 + i) * 6 + t]);
}

// conv2d_blocked's definition on blocked tensors, one output element at a time.
Tensor blocked_conv_by_definition(const Tensor& x, const Tensor& w, int64_t s, int64_t pad, int64_t d,
                                  bool depthwise, const Shape& out_shape) {
  Tensor y = Tensor::zeros(out_shape, DType::Float32);
  const int64_t B = x.dim(1), H = x.dim(2), W = x.dim(3), c = x.dim(4);
  const int64_t ib = w.dim(4), ob = w.dim(5), KH = w.dim(2), KW = w.dim(3);
  auto xa = [&](int64_t b, int64_t h, int64_t v, int64_t i) {
    return x.data<float>()[((b * H + h) * W + v) * c + i];
  };
  auto wa = [&](int64_t p, int64_t q, int64_t ky, int64_t kx, int64_t i, int64_t o) {
    return w.data<float>()[((((p * w.dim(1) + q) * KH + ky) * KW + kx) * ib + i) * ob + o];
  };
  float* out = y.data<float>();
  for (int64_t p = 0; p < y.dim(1); ++p)
    for (int64_t oh = 0; oh < y.dim(2); ++oh)
      for (int64_t ow = 0; ow < y.dim(3); ++ow)
        for (int64_t o = 0; o < ob; ++o) {
          double acc = 0;
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t h = oh * s + ky * d - pad, v = ow * s + kx * d - pad;
              if (h < 0 || h >= H || v < 0 || v >= W) continue;
              if (depthwise) {
                acc += double(xa(p, h, v, o)) * wa(p, 0, ky, kx, 0, o);
                continue;
              }
              for (int64_t q = 0; q < B; ++q)
                for (int64_t i = 0; i < ib; ++i) acc += double(xa(q, h, v, i)) * wa(p, q, ky, kx, i, o);
            }
          out[((p * y.dim(2) + oh) * y.dim(3) + ow) * ob + o] = float(acc);
        }
  return y;
}

Attrs conv_attrs(int64_t s, int64_t pad, int64_t d, int64_t groups) {
  return {{"strides", std::vector<int64_t>{s, s}},
          {"padding", std::vector<int64_t>{pad, pad}},
          {"dilation", std::vector<int64_t>{d, d}},
          {"groups", groups}};
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), tol) << i;
}

TEST(BlockedLayout, ConvMatchesItsDefinitionAndNchwConv) {
  struct Case {
    int64_t channels, out, k, s, pad, d, c;
    bool depthwise;
  };
  for (const Case& t : {Case{8, 12, 3, 1, 1, 1, 4, false}, Case{4, 8, 1, 2, 0, 1, 4, false},
                        Case{8, 8, 3, 2, 1, 1, 4, true}, Case{6, 6, 3, 1, 2, 2, 2, true}}) {
    SCOPED_TRACE("channels " + std::to_string(t.channels) + (t.depthwise ? " depthwise" : ""));
    Tensor x = testing::random_floats({1, t.channels, 7, 9}, 2);
    Tensor w = testing::random_floats({t.out, t.depthwise ? 1 : t.channels, t.k, t.k}, 3);
    const int64_t groups = t.depthwise ? t.channels : 1;
    Attrs nchw = conv_attrs(t.s, t.pad, t.d, groups);
    Tensor want = run1("nn.conv2d", {x, w}, nchw);
    Tensor xb = run1("nn.block_channels", {x}, {{"block", t.c}});
    Tensor wb =
        run1("nn.block_conv_weight", {w}, {{"in_block", t.depthwise ? int64_t{1} : t.c}, {"out_block", t.c}});
    Tensor yb = run1("nn.conv2d_blocked", {xb, wb}, nchw);
    expect_close(yb, blocked_conv_by_definition(xb, wb, t.s, t.pad, t.d, t.depthwise, yb.shape()), 1e-5);
    expect_close(run1("nn.unblock_channels", {yb}), want, 1e-5);
  }
}

TEST(BlockedLayout, BadShapesAndAttributesAreErrorsNamingThem) {
  Tensor x = testing::random_floats({1, 6, 2, 2}, 4);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.block_channels", {x}, {{"block", int64_t{4}}});
            }).find("data has 6 channels, not a multiple of block=4"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.block_channels", {x}, {{"block", int64_t{0}}});
            }).find("'block' = 0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { run1("nn.unblock_channels", {x}); }).find("must be 5-D"),
            std::string::npos);
  Tensor xb = run1("nn.block_channels", {x}, {{"block", int64_t{2}}});
  Tensor w = testing::random_floats({2, 1, 3, 3, 4, 2}, 5);  // input blocks of 4, data's are 2
  EXPECT_NE(testing::error_of([&] {
              run1("nn.conv2d_blocked", {xb, w});
            }).find("its input blocks must be the data's channel blocks"),
            std::string::npos);
  Tensor w1 = testing::random_floats({1, 3, 1, 1, 2, 2}, 6);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.conv2d_blocked", {xb, w1}, {{"groups", int64_t{2}}});
            }).find("'groups' = 2 must be 1 or the 6 channels"),
            std::string::npos);
  Tensor doubles = Tensor::zeros({1, 4, 2, 2}, DType::Float64);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.block_channels", {doubles}, {{"block", int64_t{2}}});
            }).find("must be float32, float16, uint8, int8 or int32, got float64"),
            std::string::npos);
}

// nn.max_pool2d of channel blocks: the NCHW pool, blocked (its reference
// kernel), and compiled against the interpreter for float32 and uint8
// blocks, padded windows at stride 2 and ceil_mode's partial windows.
TEST(BlockedLayout, MaxPoolOfBlocksPoolsEachChannel) {
  Tensor x = testing::random_floats({1, 8, 7, 9}, 12);
  const Attrs pool = {{"pool_size", std::vector<int64_t>{3, 3}},
                      {"strides", std::vector<int64_t>{2, 2}},
                      {"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  Tensor want = run1("nn.max_pool2d", {x}, pool);
  Tensor got = run1("nn.max_pool2d", {run1("nn.block_channels", {x}, {{"block", int64_t{4}}})}, pool);
  ASSERT_EQ(got.shape(), (Shape{1, 2, 4, 5, 4}));
  EXPECT_TRUE(run1("nn.unblock_channels", {got}).bitwise_equal(want));
  for (const char* dtype : {"float32", "uint8"}) {
    const std::string text =
        std::string("def @main(%x: Tensor[(1, 2, 7, 10, 8), ") + dtype + "]) -> Tensor[(1, 16, 4, 5), " +
        dtype +
        "] {\n  %m = nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 0, 1, 0], "
        "ceil_mode=1)\n  %y = nn.unblock_channels(%m)\n  return %y\n}\n";
    Module m = parse_module(text, "pool.kir");
    std::vector<Tensor> args = testing::random_args(*m.find("main"), 13);
    std::vector<Tensor> expected = interpret(m, "main", args);
    for (const char* cpu : {"", "x86-64-v3"}) {
      SCOPED_TRACE(std::string(dtype) + " for cpu " + cpu);
      std::string printed;
      Executable exe = testing::compile_printed(m, cpu, &printed);
      EXPECT_NE(printed.find("kiln_max_pool2d"), std::string::npos) << printed;  // compiled
      EXPECT_TRUE(VirtualMachine(exe).run(args)[0].bitwise_equal(expected[0]));
    }
  }
  EXPECT_NE(testing::error_of([&] {
              run1("nn.avg_pool2d", {run1("nn.block_channels", {x}, {{"block", int64_t{4}}})}, pool);
            }).find("must be 4-D (N, C, H, W), got shape"),
            std::string::npos);
}

// uint8 blocks (a quantized model's values between integer convs) are
// copied in and out of NCHW by transposes of byte blocks, as float32 ones
// (TransposeTile), on rows whose widths take 16, 8 and 4 lanes: the same
// bytes as the interpreter's.
TEST(BlockedLayout, ByteBlocksTransposeInAndOut) {
  for (int64_t width : {16, 24, 20}) {
    const std::string shape = "(1, 32, 3, " + std::to_string(width) + ")";
    Module m = parse_module("def @main(%x: Tensor[" + shape + ", uint8]) -> (Tensor[(1, 2, 3, " +
                                std::to_string(width) + ", 16), uint8], Tensor[" + shape +
                                ", uint8]) {\n  %b = nn.block_channels(%x, block=16)\n"
                                "  %u = nn.unblock_channels(%b)\n  return (%b, %u)\n}\n",
                            "bytes.kir");
    std::vector<Tensor> args = testing::random_args(*m.find("main"), 17);
    std::vector<Tensor> want = interpret(m, "main", args);
    for (const char* cpu : {"", "x86-64-v3"}) {
      SCOPED_TRACE("width " + std::to_string(width) + " for cpu " + cpu);
      std::string printed;
      std::vector<Tensor> got = VirtualMachine(testing::compile_printed(m, cpu, &printed)).run(args);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(got[0].bitwise_equal(want[0]));
      EXPECT_TRUE(got[1].bitwise_equal(want[1]));
    }
  }
}

TEST(BlockedLayout, ThePassRefusesAMissingOrBadBlock) {
  Module m = parse_module(
      "def @main(%x: Tensor[(1, 4, 2, 2), float32]) -> Tensor[(1, 4, 2, 2), float32] {\n"
      "  %r = nn.relu(%x)\n  return %r\n}\n",
      "t.kir");
  EXPECT_NE(testing::error_of([&] {
              run_passes(m, {"convert-layout"});
            }).find("option block must be an integer from 2 to 64"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { run_passes(m, {"convert-layout{block=x8}"}); }).find("got 'x8'"),
            std::string::npos);
  EXPECT_NE(
      testing::error_of([&] { run_passes(m, {"convert-layout{lanes=8}"}); }).find("unknown option 'lanes'"),
      std::string::npos);
}

// A conv with a bias and hard_swish, a strided depthwise conv, a squeeze-
// and-excite block (global pool, 1x1 convs, hard_sigmoid, multiply), a
// residual add and a conv whose channels do not divide into blocks.
Module net_with_weights() {
  const std::string text =
      "def @main(%x: Tensor[(1, 16, 12, 20), float32]) -> Tensor[(1, 6, 6, 10), float32] {\n"
      "  %c0 = nn.conv2d(%x, " +
      testing::random_constant_text({32, 16, 3, 3}, 10) +
      ", padding=[1, 1])\n"
      "  %b0 = add(%c0, " +
      testing::random_constant_text({1, 32, 1, 1}, 11) +
      ")\n"
      "  %a0 = nn.hard_swish(%b0)\n"
      "  %d1 = nn.conv2d(%a0, " +
      testing::random_constant_text({32, 1, 3, 3}, 12) +
      ", strides=[2, 2], padding=[1, 1], groups=32)\n"
      "  %r1 = nn.relu(%d1)\n"
      "  %p = nn.adaptive_avg_pool2d(%r1, output_size=[1, 1])\n"
      "  %s1 = nn.conv2d(%p, " +
      testing::random_constant_text({16, 32, 1, 1}, 13) +
      ")\n"
      "  %s2 = nn.relu(%s1)\n"
      "  %s3 = nn.conv2d(%s2, " +
      testing::random_constant_text({32, 16, 1, 1}, 14) +
      ")\n"
      "  %s4 = nn.hard_sigmoid(%s3)\n"
      "  %se = multiply(%r1, %s4)\n"
      "  %res = add(%se, %r1)\n"
      "  %y = nn.conv2d(%res, " +
      testing::random_constant_text({6, 32, 1, 1}, 15) +
      ")\n"
      "  return %y\n"
      "}\n";
  return parse_module(text, "net.kir");
}

TEST(BlockedLayout, CompiledNetMatchesTheInterpreterForEachVectorWidth) {
  Module m = net_with_weights();
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 7);
  std::vector<Tensor> want = interpret(m, "main", args);
  for (const char* cpu : {"", "x86-64-v3"}) {
    SCOPED_TRACE(std::string("cpu ") + cpu);
    std::string printed;
    Executable exe = testing::compile_printed(m, cpu, &printed);
    // Every conv but the last (6 output channels) runs blocked, the first
    // (3x3 at stride 1, rows of 20) by Winograd's F(4, 3) in blocks; the
    // global pool is a mean of the blocked value.
    const std::string converted = testing::ir_after(printed, "convert-layout");
    ASSERT_FALSE(converted.empty()) << printed;
    EXPECT_EQ(testing::count_calls(converted, "nn.conv2d_blocked"), 4) << converted;
    EXPECT_NE(printed.find("%c0_b = nn.conv2d_winograd(%x_b"), std::string::npos) << printed;
    EXPECT_EQ(testing::count_calls(converted, "mean"), 1) << converted;
    EXPECT_EQ(testing::count_calls(converted, "nn.block_channels"), 1) << converted;
    testing::expect_outputs_near(VirtualMachine(exe).run(args), want, 1e-4);
  }
}

// A 3x3 conv whose rows idle NCHW's lanes (7 or 14 columns: AVX-512's 16
// lanes, AVX2's 8) runs blocked: by Winograd's F(m, 3) in blocks where
// each transformed weight serves 48 multiply-adds or more (images x row
// tiles x columns: one 14x14 image in F(4, 3)'s 4 tiles, 56; four 7x7
// images in 2 tiles, 56), else direct (one 7x7 image: 28 in F(2, 3)'s 4
// tiles), never by Winograd in NCHW. Values against the interpreter where
// this machine runs the code.
TEST(BlockedLayout, NarrowRowsRunBlockedByWinogradWhereItsWeightsServeEnoughOutputs) {
  struct Case {
    int64_t images, width;
    const char* cpu;
    bool winograd;
  };
  const Case cases[] = {{1, 7, "skylake-avx512", false}, {1, 7, "x86-64-v3", false},
                        {1, 14, "skylake-avx512", true}, {1, 14, "x86-64-v3", true},
                        {4, 7, "skylake-avx512", true},  {4, 7, "x86-64-v3", true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.cpu) + ", " + std::to_string(c.images) + " images of width " +
                 std::to_string(c.width));
    const std::string shape = "(" + std::to_string(c.images) + ", 16, " + std::to_string(c.width) + ", " +
                              std::to_string(c.width) + ")";
    Module m = parse_module("def @main(%x: Tensor[" + shape + ", float32]) -> Tensor[" + shape +
                                ", float32] {\n  %y = nn.conv2d(%x, " +
                                testing::random_constant_text({16, 16, 3, 3}, 21) +
                                ", padding=[1, 1, 1, 1])\n  return %y\n}\n",
                            "narrow.kir");
    std::string printed;
    Executable exe = testing::compile_printed(m, c.cpu, &printed);
    const std::string converted = testing::ir_after(printed, "convert-layout");
    EXPECT_EQ(testing::count_calls(converted, "nn.conv2d_blocked"), 1) << printed;
    EXPECT_EQ(printed.find("%y_b = nn.conv2d_winograd(%x_b") != std::string::npos, c.winograd) << printed;
    EXPECT_EQ(printed.find("%y = nn.conv2d_winograd("), std::string::npos) << printed;
    if (std::string(c.cpu) == "skylake-avx512" && !__builtin_cpu_supports("avx512f")) continue;
    std::vector<Tensor> args = testing::random_args(*m.find("main"), 9);
    testing::expect_outputs_near(VirtualMachine(exe).run(args), interpret(m, "main", args), 1e-4);
  }
}

// An inverted residual's expansion (1x1 16 -> 32 at 16x16, bias, clip)
// feeding a 3x3/2 depthwise conv: with AVX-512 the depthwise conv's rows of
// 8 idle half its vector and run blocked, and the expansion, whose rows of
// 16 fill NCHW's vectors, runs blocked too, reading its NCHW input as it is,
// instead of a block_channels of its result. With AVX2 (rows of 8 fill a
// vector) all stays in NCHW. Values against the interpreter.
TEST(BlockedLayout, AConvWhoseResultABlockedConvReadsWritesItBlocked) {
  Module m = parse_module(
      "def @main(%x: Tensor[(1, 16, 16, 16), float32]) -> Tensor[(1, 16, 8, 8), float32] {\n"
      "  %e = nn.conv2d(%x, " +
          testing::random_constant_text({32, 16, 1, 1}, 31) +
          ")\n"
          "  %b = add(%e, " +
          testing::random_constant_text({1, 32, 1, 1}, 32) +
          ")\n"
          "  %r = clip(%b, a_min=0.0, a_max=6.0)\n"
          "  %d = nn.conv2d(%r, " +
          testing::random_constant_text({32, 1, 3, 3}, 33) +
          ", strides=[2, 2], padding=[1, 1], groups=32)\n"
          "  %y = nn.conv2d(%d, " +
          testing::random_constant_text({16, 32, 1, 1}, 34) +
          ")\n"
          "  return %y\n"
          "}\n",
      "expand.kir");
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 5);
  for (const char* cpu : {"skylake-avx512", "x86-64-v3"}) {
    SCOPED_TRACE(cpu);
    std::string printed;
    Executable exe = testing::compile_printed(m, cpu, &printed);
    // The IR is printed after a pass that changed it.
    const bool avx512 = std::string(cpu) == "skylake-avx512";
    const std::string converted = testing::ir_after(printed, "convert-layout");
    ASSERT_EQ(!converted.empty(), avx512) << printed;
    EXPECT_EQ(testing::count_calls(converted, "nn.conv2d_blocked"), avx512 ? 3 : 0) << converted;
    EXPECT_EQ(testing::count_calls(converted, "nn.block_channels"), 0) << converted;
    if (avx512 && !__builtin_cpu_supports("avx512f")) continue;
    testing::expect_outputs_near(VirtualMachine(exe).run(args), interpret(m, "main", args), 1e-4);
  }
}

// Pointwise convs on 7 x 7 images with a bias, a clip and a residual add:
// AVX2's tiles of 7 output columns by one block of 8 channels (7
// accumulators) give way to tiles of the image's 49 positions as one axis
// (lower/layout.cc, pointwise_positions), the epilogue reading the
// positions afterwards; AVX-512's 7 x 2 blocks stay. Values against the
// interpreter.
TEST(BlockedLayout, PointwiseConvsOnSevenColumnsTileTheImagesPositionsWithAvx2) {
  Module m = parse_module(
      "def @main(%x: Tensor[(1, 64, 7, 7), float32]) -> Tensor[(1, 64, 7, 7), float32] {\n"
      "  %e = nn.conv2d(%x, " +
          testing::random_constant_text({96, 64, 1, 1}, 41) +
          ")\n"
          "  %b = add(%e, " +
          testing::random_constant_text({1, 96, 1, 1}, 42) +
          ")\n"
          "  %r = clip(%b, a_min=0.0, a_max=6.0)\n"
          "  %p = nn.conv2d(%r, " +
          testing::random_constant_text({64, 96, 1, 1}, 43) +
          ")\n"
          "  %y = add(%p, %x)\n"
          "  return %y\n"
          "}\n",
      "pointwise.kir");
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 6);
  for (const char* cpu : {"skylake-avx512", "x86-64-v3"}) {
    SCOPED_TRACE(cpu);
    std::string printed;
    Executable exe = testing::compile_printed(m, cpu, &printed);
    const bool avx2 = std::string(cpu) == "x86-64-v3";
    const std::string converted = testing::ir_after(printed, "convert-layout");
    EXPECT_EQ(testing::count_calls(converted, "nn.conv2d_blocked"), 2) << printed;
    // 96 channels (12 blocks of 8) tile 4 columns of 3 blocks, padded to
    // 8 columns (10.5 useful accumulators); 64 (8 blocks) only 7 x 1 or
    // 4 x 2 blocks: their positions tile 6 x 2, padded to 54.
    EXPECT_EQ(printed.find("_positions: Buffer[(1, 12, 1, "), std::string::npos) << printed;
    EXPECT_EQ(printed.find("_positions: Buffer[(1, 8, 1, 54, 8)") != std::string::npos, avx2) << printed;
    EXPECT_EQ(printed.find("_positions_local: Buffer[(1, 2, 1, 6, 8)") != std::string::npos, avx2) << printed;
    if (!avx2 && !__builtin_cpu_supports("avx512f")) continue;
    testing::expect_outputs_near(VirtualMachine(exe).run(args), interpret(m, "main", args), 1e-4);
  }
}

TEST(BlockedLayout, TheNchwLayoutIsKeptWhenAsked) {
  Module m = net_with_weights();
  driver::CompileOptions o;
  o.blocked_layout = false;
  std::ostringstream log;
  o.print_after_all = true;
  o.log = &log;
  Executable exe = driver::compile_model(m, o);
  EXPECT_EQ(log.str().find("convert-layout"), std::string::npos);
  EXPECT_EQ(log.str().find("nn.conv2d_blocked"), std::string::npos);
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 8);
  std::vector<Tensor> want = interpret(m, "main", args);
  testing::expect_outputs_near(VirtualMachine(exe).run(args), want, 1e-4);
}

}  // namespace
}  // namespace kiln
