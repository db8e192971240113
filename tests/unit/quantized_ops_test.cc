// Quantized ops on integers: uint8 by int8 convs and matmuls into int32
// compiled with VNNI's byte dot products (dot_i8x4: vpdpbusd on 16 lanes
// with AVX-512 VNNI, 8 with AVX-VNNI) and without them (dot_i16x2:
// vpmaddwd's int16 pairs, AVX2 and AVX-512BW), bit for bit against
// the interpreter; a QDQ model (dequantized uint8 activations, int8
// weights) whose convs quantize-convs runs on those integers, against the
// interpreter on the float model within a quantization step; and the
// products of dynamically quantized data (MatMulInteger), which
// quantize-matmuls runs as uint8 by int8 products.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>

#include "compile_util.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "random_args.h"
#include "runtime/vm.h"
#include "schedule/schedule.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing::random_ints;

uint32_t next(uint32_t& state) {
  state = state * 1664525u + 1013904223u;
  return state >> 8;
}

// The CPUs to compile for: this machine's, AVX-VNNI's 8 lanes (Alder Lake,
// when this machine runs its code) and two without byte dot products:
// AVX2 (int16 pairs on 8 lanes) and AVX-512 without VNNI (Skylake-X: 16).
std::vector<std::string> cpus() {
  std::vector<std::string> c = {"", "x86-64-v3"};
  if (__builtin_cpu_supports("avxvnni")) c.push_back("alderlake");
  if (__builtin_cpu_supports("avx512bw")) c.push_back("skylake-avx512");
  return c;
}

codegen::Target target_of(const std::string& cpu) {
  return cpu.empty() ? codegen::host_target() : codegen::parse_target("llvm -mcpu=" + cpu);
}

// Byte dot products' lanes (VNNI), 0 without them (int16 pairs then).
int dot_lanes(const std::string& cpu) { return target_of(cpu).int8_dot_lanes; }

// The channels of a block: the float32 lanes.
int block_lanes(const std::string& cpu) { return target_of(cpu).vector_bytes / 4; }

// `m` compiled for each CPU (cpus()) and run on `args`: bit for bit the
// interpreter's outputs; `check` then reads what the compile printed.
void expect_exact_for_each_cpu(
    const Module& m, const std::vector<Tensor>& args, const std::string& what,
    const std::function<void(const std::string& cpu, const std::string& printed)>& check) {
  const std::vector<Tensor> want = interpret(m, "main", args);
  for (const std::string& cpu : cpus()) {
    SCOPED_TRACE(what + " for " + (cpu.empty() ? "this CPU" : cpu));
    std::string printed;
    VirtualMachine vm(testing::compile_printed(m, cpu, &printed));
    const std::vector<Tensor> got = vm.run(args);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(got[i].bitwise_equal(want[i]));
    check(cpu, printed);
  }
}

// The IR text of `t` as a constant.
std::string constant_text(const Tensor& t) { return print_expr(make_constant(t)); }

TEST(QuantizedConv, UInt8ByInt8ConvsAreExact) {
  struct Shape4 {
    int64_t c, o, h, w, k, pad;
  };
  // Channels not a multiple of 4, widths not of the lanes, 1x1 to 7x7.
  for (const Shape4& s :
       {Shape4{64, 64, 20, 56, 3, 1}, Shape4{30, 13, 9, 13, 3, 1}, Shape4{16, 40, 7, 7, 1, 0},
        Shape4{8, 24, 20, 33, 5, 2}, Shape4{3, 8, 10, 17, 7, 3}}) {
    const int64_t oh = s.h + 2 * s.pad - s.k + 1, ow = s.w + 2 * s.pad - s.k + 1;
    std::ostringstream text;
    text << "def @main(%x: Tensor[(1, " << s.c << ", " << s.h << ", " << s.w << "), uint8], %w: Tensor[("
         << s.o << ", " << s.c << ", " << s.k << ", " << s.k << "), int8]) -> Tensor[(1, " << s.o << ", "
         << oh << ", " << ow << "), int32] {\n  %y = nn.conv2d(%x, %w, padding=[" << s.pad << ", " << s.pad
         << ", " << s.pad << ", " << s.pad << "], out_dtype=\"int32\")\n  return %y\n}\n";
    Module m = parse_module(text.str(), "conv.kir");
    const std::vector<Tensor> args = {random_ints({1, s.c, s.h, s.w}, DType::UInt8, 0, 255, 3),
                                      random_ints({s.o, s.c, s.k, s.k}, DType::Int8, -128, 127, 5)};
    expect_exact_for_each_cpu(m, args, text.str(), [](const std::string& cpu, const std::string& printed) {
      // With byte dot products every column vector of the tiles is one.
      if (dot_lanes(cpu)) {
        EXPECT_NE(printed.find("dot_i8x4"), std::string::npos);
      }
    });
  }
}

Tensor run1(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {}) {
  return run_op(*find_op(op), in, attrs)[0];
}

TEST(QuantizedConv, IntegerWeightsBlockInGroupsAndBlockedConvsMatchNchw) {
  // nn.block_conv_weight of int8: (O / ob, I / ib, KH, KW, ib / 4, ob, 4).
  Tensor w = random_ints({6, 8, 2, 1}, DType::Int8, -128, 127, 7);
  Tensor b = run1("nn.block_conv_weight", {w}, {{"in_block", int64_t{4}}, {"out_block", int64_t{3}}});
  ASSERT_EQ(b.shape(), (Shape{2, 2, 2, 1, 1, 3, 4}));
  for (int64_t o = 0; o < 6; ++o)
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t t = 0; t < 2; ++t)
        EXPECT_EQ(b.data<int8_t>()[(((o / 3) * 2 + i / 4) * 2 + t) * 12 + (o % 3) * 4 + i % 4],
                  w.data<int8_t>()[(o * 8 + i) * 2 + t]);
  // conv2d_blocked of uint8 blocks by those weights: nn.conv2d, blocked.
  Tensor x = random_ints({1, 8, 7, 9}, DType::UInt8, 0, 255, 8);
  Tensor w3 = random_ints({8, 8, 3, 3}, DType::Int8, -128, 127, 9);
  const Attrs conv = {{"strides", std::vector<int64_t>{2, 1}}, {"padding", std::vector<int64_t>{1, 0, 1, 2}}};
  Tensor xb = run1("nn.block_channels", {x}, {{"block", int64_t{4}}});
  ASSERT_EQ(xb.dtype(), DType::UInt8);
  Tensor wb = run1("nn.block_conv_weight", {w3}, {{"in_block", int64_t{4}}, {"out_block", int64_t{4}}});
  Tensor y = run1("nn.conv2d_blocked", {xb, wb}, conv);
  ASSERT_EQ(y.dtype(), DType::Int32);
  Attrs plain = conv;
  plain.set("out_dtype", std::string("int32"));
  Tensor want = run1("nn.conv2d", {x, w3}, plain);
  EXPECT_TRUE(run1("nn.unblock_channels", {y}).bitwise_equal(want));
  // int16 (int8 values widened, for vpmaddwd): pairs of input channels,
  // (O / ob, I / ib, KH, KW, ib / 2, ob, 2), and the conv the same.
  Tensor w16 = Tensor::empty(w.shape(), DType::Int16);
  std::copy_n(w.data<int8_t>(), w.numel(), w16.data<int16_t>());
  Tensor b16 = run1("nn.block_conv_weight", {w16}, {{"in_block", int64_t{4}}, {"out_block", int64_t{3}}});
  ASSERT_EQ(b16.shape(), (Shape{2, 2, 2, 1, 2, 3, 2}));
  for (int64_t o = 0; o < 6; ++o)
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t t = 0; t < 2; ++t)
        EXPECT_EQ(b16.data<int16_t>()[(((o / 3) * 2 + i / 4) * 2 + t) * 12 + ((i % 4) / 2) * 6 + (o % 3) * 2 +
                                      i % 2],
                  w.data<int8_t>()[(o * 8 + i) * 2 + t]);
  Tensor w3_16 = Tensor::empty(w3.shape(), DType::Int16);
  std::copy_n(w3.data<int8_t>(), w3.numel(), w3_16.data<int16_t>());
  Tensor wb16 = run1("nn.block_conv_weight", {w3_16}, {{"in_block", int64_t{4}}, {"out_block", int64_t{4}}});
  EXPECT_TRUE(run1("nn.unblock_channels", {run1("nn.conv2d_blocked", {xb, wb16}, conv)}).bitwise_equal(want));
  // What the blocked integer ops refuse.
  EXPECT_NE(testing::error_of([&] {
              run1("nn.block_conv_weight", {w3_16}, {{"in_block", int64_t{1}}, {"out_block", int64_t{4}}});
            }).find("an int16 weight's in_block=1 must be a multiple of 2"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.conv2d_blocked", {xb, Tensor::zeros({2, 2, 3, 3, 2, 4, 4}, DType::Int16)});
            }).find("int16 weight (2, 2, 3, 3, 2, 4, 4) must end in groups of 2 input channels"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.block_conv_weight", {w3}, {{"in_block", int64_t{2}}, {"out_block", int64_t{4}}});
            }).find("in_block=2 must be a multiple of 4"),
            std::string::npos);
  Tensor fw = Tensor::zeros({2, 2, 3, 3, 4, 4}, DType::Float32);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.conv2d_blocked", {xb, fw});
            }).find("uint8 data takes an int8 or int16 weight, got float32"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.conv2d_blocked", {xb, wb}, {{"groups", int64_t{8}}});
            }).find("'groups' = 8 must be 1 for integer data"),
            std::string::npos);
}

// uint8 convs whose channels fill blocks run in them (convert-layout
// {dot=4} with byte dot products of the block's lanes, {dot=2} with int16
// pairs): lanes of output channels, at any map and stride. Bit for bit
// against the interpreter.
TEST(QuantizedConv, BlockedUInt8ConvsAreExactAtAnyMapAndStride) {
  struct Case {
    int64_t c, o, h, w, k, stride, pad;
  };
  for (const Case& s :
       {Case{32, 32, 7, 7, 3, 1, 1}, Case{16, 48, 15, 15, 3, 2, 1}, Case{32, 16, 14, 14, 1, 2, 0},
        Case{16, 32, 9, 11, 5, 1, 2}, Case{48, 16, 3, 40, 1, 1, 0}}) {
    const int64_t oh = (s.h + 2 * s.pad - s.k) / s.stride + 1, ow = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    std::ostringstream text;
    text << "def @main(%x: Tensor[(1, " << s.c << ", " << s.h << ", " << s.w << "), uint8]) -> Tensor[(1, "
         << s.o << ", " << oh << ", " << ow << "), int32] {\n  %y = nn.conv2d(%x, "
         << constant_text(random_ints({s.o, s.c, s.k, s.k}, DType::Int8, -128, 127, uint32_t(s.c + s.o)))
         << ", strides=[" << s.stride << ", " << s.stride << "], padding=[" << s.pad << ", " << s.pad << ", "
         << s.pad << ", " << s.pad << "], out_dtype=\"int32\")\n  return %y\n}\n";
    Module m = parse_module(text.str(), "conv.kir");
    const std::vector<Tensor> args = {random_ints({1, s.c, s.h, s.w}, DType::UInt8, 0, 255, 3)};
    const std::string what = "conv " + std::to_string(s.c) + " -> " + std::to_string(s.o) + " at " +
                             std::to_string(s.h) + "x" + std::to_string(s.w);
    expect_exact_for_each_cpu(m, args, what, [](const std::string& cpu, const std::string& printed) {
      EXPECT_NE(printed.find("nn.conv2d_blocked"), std::string::npos);
      EXPECT_NE(printed.find(dot_lanes(cpu) ? "dot_i8x4(" : "dot_i16x2("), std::string::npos);
    });
  }
}

// A float32 constant of int8 values times `scale` (a power of two, so its
// decimal text is exact), in IR text.
std::string int8_weight(const Shape& shape, double scale, uint32_t& state) {
  std::ostringstream s;
  s << std::setprecision(12) << "const(Tensor[(";
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    s << (i ? ", " : "") << shape[i];
    n *= shape[i];
  }
  s << "), float32], [";
  for (int64_t i = 0; i < n; ++i) s << (i ? ", " : "") << double(int64_t(next(state) % 255) - 127) * scale;
  s << "])";
  return s.str();
}

// QDQ: each conv reads its input quantized and dequantized (uint8, zero
// point 128) and an int8 weight dequantized per channel (folded: float32
// values on the int8 grid), as ONNX Runtime's quantizer writes a model.
Module qdq_model() {
  uint32_t state = 11;
  std::string text = R"(
def @main(%x: Tensor[(1, 8, 18, 40), float32]) -> Tensor[(1, 16, 18, 40), float32] {
  %q1 = quantize(%x, scale=0.05, zero_point=128, out_dtype="uint8")
  %d1 = dequantize(%q1, scale=0.05, zero_point=128)
  %c1 = nn.conv2d(%d1, W1, padding=[1, 1, 1, 1])
  %r1 = nn.relu(%c1)
  %q2 = quantize(%r1, scale=0.02, zero_point=128, out_dtype="uint8")
  %d2 = dequantize(%q2, scale=0.02, zero_point=128)
  %c2 = nn.conv2d(%d2, W2)
  %q3 = quantize(%c2, scale=0.05, zero_point=128, out_dtype="uint8")
  %d3 = dequantize(%q3, scale=0.05, zero_point=128)
  return %d3
})";
  text.replace(text.find("W1"), 2, int8_weight({16, 8, 3, 3}, 1.0 / 1024, state));
  text.replace(text.find("W2"), 2, int8_weight({16, 16, 1, 1}, 1.0 / 512, state));
  return parse_module(text, "qdq.kir");
}

// `m` (one float32 input `shape`) compiled for each CPU against the
// interpreter: within one quantization step `step` of each output, 99% of
// it equal; `check` reads the IR after the pass `pass` ("" where it did
// not run).
void expect_within_a_step(
    const Module& m, const Shape& shape, double step, const std::string& pass,
    const std::function<void(const std::string& cpu, const std::string& rewritten)>& check) {
  Tensor x = Tensor::empty(shape, DType::Float32);
  uint32_t state = 2;
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(next(state) % 2001) / 1000.0f - 1.0f;
  const std::vector<Tensor> want = interpret(m, "main", {x});
  for (const std::string& cpu : cpus()) {
    SCOPED_TRACE(cpu.empty() ? "this CPU" : cpu);
    std::string printed;
    VirtualMachine vm(testing::compile_printed(m, cpu, &printed));
    const std::vector<Tensor> got = vm.run({x});
    // Float32 rounding in another order can move a value across the
    // midpoint of two steps of the quantize after the conv or product.
    testing::expect_outputs_near(got, want, step + 1e-6);
    for (size_t o = 0; o < want.size(); ++o) {
      int64_t exact = 0;
      for (int64_t i = 0; i < want[o].numel(); ++i)
        exact += got[o].get_as_double(i) == want[o].get_as_double(i);
      EXPECT_GT(exact, want[o].numel() * 99 / 100) << "output " << o;
    }
    const size_t at = printed.find("# IR after " + pass);
    check(cpu, at == std::string::npos ? "" : printed.substr(at, printed.find("\n# ", at + 1) - at));
  }
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; ++p) ++n;
  return n;
}

TEST(QuantizedConv, QdqConvsRunOnIntegersWithinAQuantizationStep) {
  expect_within_a_step(qdq_model(), {1, 8, 18, 40}, 0.05, "quantize-convs",
                       [](const std::string&, const std::string& rewritten) {
                         // Byte dot products or int16 pairs: both convs fill blocks.
                         EXPECT_EQ(count(rewritten, "out_dtype=\"int32\""), 2u) << rewritten;
                       });
}

// An image's conv (3 channels, 7x7, stride 2, as ResNet's first): on
// integers in channel blocks, its input channels padded to 4 (the zero
// point's pad) and its weight's with zeros.
TEST(QuantizedConv, AnImagesThreeChannelsArePaddedToFour) {
  uint32_t state = 5;
  std::string text = R"(
def @main(%x: Tensor[(1, 3, 20, 26), float32]) -> Tensor[(1, 16, 10, 13), float32] {
  %q1 = quantize(%x, scale=0.05, zero_point=128, out_dtype="uint8")
  %d1 = dequantize(%q1, scale=0.05, zero_point=128)
  %c1 = nn.conv2d(%d1, W1, strides=[2, 2], padding=[3, 3, 3, 3])
  %q2 = quantize(%c1, scale=0.05, zero_point=128, out_dtype="uint8")
  %d2 = dequantize(%q2, scale=0.05, zero_point=128)
  return %d2
})";
  text.replace(text.find("W1"), 2, int8_weight({16, 3, 7, 7}, 1.0 / 1024, state));
  expect_within_a_step(parse_module(text, "image.kir"), {1, 3, 20, 26}, 0.05, "quantize-convs",
                       [](const std::string& cpu, const std::string& rewritten) {
                         EXPECT_EQ(count(rewritten, "out_dtype=\"int32\""), 1u) << rewritten;
                         // Blocks of 16 or 8 output channels: the image's pad reaches 4 channels.
                         EXPECT_NE(rewritten.find("pad_width=[0, 0, 0, 1, 3, 3, 3, 3]"), std::string::npos)
                             << cpu << rewritten;
                       });
}

// A max pool of a relu of dequantized uint8 values (QDQ, after ResNet's
// first conv) pools the uint8 values (quantized-max-pools, on any host):
// the same values, bit for bit, padded windows and all.
TEST(QuantizedConv, MaxPoolsOfDequantizedValuesPoolTheIntegers) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(1, 16, 13, 15), float32]) -> Tensor[(1, 16, 7, 8), float32] {
  %q = quantize(%x, scale=0.01, zero_point=100, out_dtype="uint8")
  %d = dequantize(%q, scale=0.01, zero_point=100)
  %r = nn.relu(%d)
  %m = nn.max_pool2d(%r, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
  return %m
})",
                          "pool.kir");
  Tensor x = Tensor::empty({1, 16, 13, 15}, DType::Float32);
  uint32_t state = 4;
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(next(state) % 2001) / 1000.0f - 1.0f;
  expect_exact_for_each_cpu(m, {x}, "max pool", [](const std::string&, const std::string& printed) {
    // On every host, with byte dot products or without.
    EXPECT_NE(printed.find("%m_pooled = nn.max_pool2d(%q"), std::string::npos) << printed;
  });
}

// ONNX's QLinearConv as imported (an int32 conv of the uint8 data shifted
// by its zero point, then requantized to uint8) runs as the uint8 x int8
// conv (in blocks where its channels fill them; in NCHW at stride 1 where
// they do not), bit for bit against the interpreter: the int32 sums are
// exact either way.
TEST(QuantizedConv, QLinearConvsRunAsUInt8ByInt8Convs) {
  struct Case {
    int64_t c, o, h, w, k, stride, pad;
  };
  for (const Case& s : {Case{32, 32, 9, 11, 3, 2, 1}, Case{8, 12, 10, 20, 3, 1, 1}}) {
    const int64_t oh = (s.h + 2 * s.pad - s.k) / s.stride + 1, ow = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    std::ostringstream text;
    text << "def @main(%x: Tensor[(1, " << s.c << ", " << s.h << ", " << s.w << "), uint8]) -> Tensor[(1, "
         << s.o << ", " << oh << ", " << ow << "), uint8] {\n"
         << "  %a = astype(%x, dtype=\"int32\")\n"
         << "  %s = subtract(%a, const(Tensor[(), int32], [131]))\n"
         << "  %c = nn.conv2d(%s, "
         << constant_text(random_ints({s.o, s.c, s.k, s.k}, DType::Int32, -128, 127, uint32_t(s.o)))
         << ", strides=[" << s.stride << ", " << s.stride << "], padding=[" << s.pad << ", " << s.pad << ", "
         << s.pad << ", " << s.pad << "])\n"
         << "  %f = astype(%c, dtype=\"float32\")\n"
         << "  %m = multiply(%f, const(Tensor[(), float32], [0.0007]))\n"
         << "  %r = round(%m)\n"
         << "  %z = add(%r, const(Tensor[(), float32], [128.0]))\n"
         << "  %y = astype(%z, dtype=\"uint8\")\n  return %y\n}\n";
    Module m = parse_module(text.str(), "qlinear.kir");
    const std::vector<Tensor> args = {random_ints({1, s.c, s.h, s.w}, DType::UInt8, 0, 255, 21)};
    const std::string what = "conv " + std::to_string(s.c) + " -> " + std::to_string(s.o);
    expect_exact_for_each_cpu(m, args, what, [&](const std::string& cpu, const std::string& printed) {
      const size_t at = printed.find("# IR after quantize-convs");
      // Int16 pairs take only the convs that run blocked.
      if (dot_lanes(cpu) || s.o % block_lanes(cpu) == 0) {
        ASSERT_NE(at, std::string::npos);
        const std::string rewritten = printed.substr(at, printed.find("\n# ", at + 1) - at);
        EXPECT_NE(rewritten.find("nn.conv2d(%c_padded, const(Tensor[(" + std::to_string(s.o) + ", " +
                                 std::to_string(s.c) + ", 3, 3), int8]"),
                  std::string::npos)
            << rewritten;
      }
    });
  }
}

// ONNX's MatMulInteger as imported (uint8 data shifted by its zero point in
// int32: one runtime value, as DynamicQuantizeLinear gives it, one per row,
// a constant, or none; the weight a constant of int8 values) runs as the
// uint8 x int8 product (quantize-matmuls) packed for byte dot products
// (pack-matmul-weights{dot=4}; without them, AVX2's, in int16 pairs for
// vpmaddwd: dot=2), bit for bit against the interpreter:
// 1-D and batched data, K of no whole groups of four, rows and columns that
// fill no tile.
TEST(QuantizedMatmul, ShiftedUInt8ProductsRunAsUInt8ByInt8Products) {
  struct Case {
    Shape x;
    int64_t n;
    std::string zero_point;  // "input", "row", "const" or "none"
  };
  for (const Case& c : {Case{{40, 64}, 100, "input"}, Case{{2, 19, 36}, 33, "row"},
                        Case{{7, 30}, 17, "const"}, Case{{5, 12}, 40, "none"}, Case{{24}, 40, "input"}}) {
    const int64_t k = c.x.back();
    Shape y = c.x;
    y.back() = c.n;
    std::ostringstream text;
    text << "def @main(%q: Tensor[" << shape_str(c.x) << ", uint8]";
    if (c.zero_point == "input") text << ", %z: Tensor[(), uint8]";
    if (c.zero_point == "row") text << ", %z: Tensor[(" << c.x[1] << ", 1), uint8]";
    text << ") -> Tensor[" << shape_str(y) << ", int32] {\n";
    std::string data = "%q";
    if (c.zero_point != "none") {
      text << "  %a = astype(%q, dtype=\"int32\")\n";
      if (c.zero_point == "const")
        text << "  %s = subtract(%a, const(Tensor[(), int32], [77]))\n";
      else
        text << "  %zi = astype(%z, dtype=\"int32\")\n  %s = subtract(%a, %zi)\n";
      data = "%s";
    }
    text << "  %y = matmul(" << data << ", "
         << constant_text(random_ints({k, c.n}, DType::Int32, -128, 127, uint32_t(k + c.n))) << ")\n"
         << "  return %y\n}\n";
    Module m = parse_module(text.str(), "matmul.kir");
    std::vector<Tensor> args = {random_ints(c.x, DType::UInt8, 0, 255, 31)};
    if (c.zero_point == "input") args.push_back(random_ints({}, DType::UInt8, 0, 255, 32));
    if (c.zero_point == "row") args.push_back(random_ints({c.x[1], 1}, DType::UInt8, 0, 255, 33));
    const std::string what = shape_str(c.x) + " by (" + std::to_string(k) + ", " + std::to_string(c.n) +
                             "), zero point " + c.zero_point;
    const bool rows = c.x.size() >= 2;
    // With byte dot products four products a lane and step (dot_i8x4);
    // without, AVX2's int16 pairs (dot_i16x2, the weight packed as int16).
    expect_exact_for_each_cpu(m, args, what, [rows](const std::string& cpu, const std::string& printed) {
      EXPECT_NE(printed.find("# IR after quantize-matmuls"), std::string::npos);
      EXPECT_NE(printed.find("nn.matmul_packed"), std::string::npos);
      // A single row (1-D data) is not tiled: its sums stay scalar.
      const char* dot = dot_lanes(cpu) ? "dot_i8x4(" : "dot_i16x2(";
      EXPECT_EQ(printed.find(dot) != std::string::npos, rows) << dot;
    });
  }
}

// QDQ's products: a MatMul and a Gemm (nn.dense) of dequantized uint8 data
// by int8 weights dequantized per tensor and per output unit run as uint8 x
// int8 products, scaled after (quantize-matmuls), within a quantization
// step of the interpreter's float product (99% equal) on every CPU.
TEST(QuantizedMatmul, QdqProductsRunOnIntegersWithinAQuantizationStep) {
  uint32_t state = 9;
  // nn.dense's (20, 40) weight, each output unit's row at its own scale.
  std::ostringstream dense_weight;
  dense_weight << std::setprecision(12) << "const(Tensor[(20, 40), float32], [";
  for (int64_t i = 0; i < 20 * 40; ++i)
    dense_weight << (i ? ", " : "") << double(int64_t(next(state) % 255) - 127) / double(512 << (i / 40 % 3));
  dense_weight << "])";
  std::string text = R"(
def @main(%x: Tensor[(2, 24, 40), float32]) -> (Tensor[(2, 24, 30), float32], Tensor[(48, 20), float32]) {
  %q = quantize(%x, scale=0.05, zero_point=128, out_dtype="uint8")
  %d = dequantize(%q, scale=0.05, zero_point=128)
  %m = matmul(%d, W1)
  %mq = quantize(%m, scale=0.05, zero_point=128, out_dtype="uint8")
  %md = dequantize(%mq, scale=0.05, zero_point=128)
  %r = reshape(%x, newshape=[48, 40])
  %rq = quantize(%r, scale=0.05, zero_point=128, out_dtype="uint8")
  %rd = dequantize(%rq, scale=0.05, zero_point=128)
  %g = nn.dense(%rd, W2)
  %gq = quantize(%g, scale=0.05, zero_point=128, out_dtype="uint8")
  %gd = dequantize(%gq, scale=0.05, zero_point=128)
  return (%md, %gd)
})";
  text.replace(text.find("W1"), 2, int8_weight({40, 30}, 1.0 / 1024, state));
  text.replace(text.find("W2"), 2, dense_weight.str());
  // On every CPU: byte dot products, or AVX2's int16 pairs.
  expect_within_a_step(
      parse_module(text, "qdq_products.kir"), {2, 24, 40}, 0.05, "quantize-matmuls",
      [](const std::string&, const std::string& rewritten) {
        EXPECT_NE(rewritten.find("matmul(%q, const(Tensor[(40, 30), int8]"), std::string::npos) << rewritten;
        EXPECT_NE(rewritten.find("nn.dense(%rq, const(Tensor[(20, 40), int8]"), std::string::npos)
            << rewritten;
      });
}

}  // namespace
}  // namespace kiln
