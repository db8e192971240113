// A float16 model through the compile pipeline: widen-float16 runs its ops
// on float32 values with each result rounded, so its convs run in channel
// blocks and by Winograd's transforms and its product on packed panels,
// every op compiled; its outputs against the reference interpreter's (which
// rounds each op's result to float16 too). For a target without float16
// conversions (x86-64: no F16C) the ops stay on their reference kernels,
// named with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "compile_util.h"
#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "random_args.h"
#include "runtime/vm.h"
#include "test_util.h"

namespace kiln {
namespace {

// A float16 constant of `shape` in IR text, values from a fixed generator in
// [offset - scale, offset + scale), rounded to float16.
std::string constant_text(const Shape& shape, double scale, uint32_t& state, double offset = 0) {
  std::ostringstream s;
  s << "const(Tensor[(";
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    s << (i ? ", " : "") << shape[i];
    n *= shape[i];
  }
  s << "), float16], [";
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    const float v = float(offset + scale * (double(state >> 8) / double(1u << 24) * 2 - 1));
    // Written as the float16 value exactly, so the model in float32 (below) has the same weights.
    s << (i ? ", " : "") << std::setprecision(9) << half_to_float(float_to_half(v));
  }
  s << "])";
  return s.str();
}

// A small float16 CNN: a 3x3 conv (Winograd's F(m, 3) in blocks), bias,
// relu, a depthwise conv, a 1x1 conv with a residual add, a global pool
// and a dense layer (packed) with a softmax.
Module float16_net() {
  uint32_t state = 7;
  std::string text = R"(
def @main(%x: Tensor[(1, 16, 14, 14), float16]) -> Tensor[(1, 10), float16] {
  %c = nn.conv2d(%x, W3, padding=[1, 1, 1, 1])
  %b = add(%c, B)
  %r = nn.relu(%b)
  %d = nn.conv2d(%r, WD, padding=[1, 1, 1, 1], groups=16)
  %p = nn.conv2d(%d, W1)
  %s = add(%p, %r)
  %g = nn.adaptive_avg_pool2d(%s, output_size=[1, 1])
  %f = reshape(%g, newshape=[1, 16])
  %y = nn.dense(%f, WF)
  %z = nn.softmax(%y)
  return %z
})";
  auto put = [&](const std::string& name, const Shape& shape, double scale) {
    text.replace(text.find(name), name.size(), constant_text(shape, scale, state));
  };
  put("W3", {16, 16, 3, 3}, 0.15);
  put("WD", {16, 1, 3, 3}, 0.3);
  put("W1", {16, 16, 1, 1}, 0.25);
  put("WF", {10, 16}, 0.5);
  put("B", {1, 16, 1, 1}, 0.1);
  return parse_module(text, "float16_net.kir");
}

TEST(Float16Model, RunsThroughTheFloat32PathsAndMatchesTheInterpreter) {
  Module m = float16_net();
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 11);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions o;
  if (!codegen::host_target().float16_conversions) GTEST_SKIP() << "this CPU has no F16C: see the next test";
  std::ostringstream log;
  o.print_after_all = true;
  o.log = &log;
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, o, &summary);
  EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
  const std::string printed = log.str();
  const std::string host = printed.substr(printed.find("# after widen-float16"));
  for (const char* op : {"nn.conv2d_blocked", "nn.conv2d_winograd", "nn.matmul_packed"})
    EXPECT_NE(host.find(op), std::string::npos) << op << " missing:\n" << host;
  VirtualMachine vm(exe);
  std::vector<Tensor> got = vm.run(args);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].dtype(), DType::Float16);
  // Softmax probabilities: a flipped rounding upstream moves them by a few
  // float16 units (2^-11 below 1) at most.
  for (int64_t i = 0; i < want[0].numel(); ++i)
    EXPECT_NEAR(got[0].get_as_double(i), want[0].get_as_double(i), 4.0 / 2048) << i;
}

// A float16 conv with a batch norm and one with PP-OCRv4's scale and shift
// (multiply, add): fold-batch-norm and fold-scale-shift fold both into the
// convs' float16 weights and bias adds, which changes the roundings (the
// folded constants are rounded once, the batch norm's and the scale's
// results no longer are), within a few float16 units of the interpreter on
// the unfolded model.
TEST(Float16Model, FoldsBatchNormsAndScalesIntoFloat16Convs) {
  uint32_t state = 5;
  std::string text = R"(
def @main(%x: Tensor[(1, 8, 10, 10), float16]) -> Tensor[(1, 8, 10, 10), float16] {
  %c = nn.conv2d(%x, W3, padding=[1, 1, 1, 1])
  %n = nn.batch_norm(%c, GAMMA, BETA, MEAN, VAR, epsilon=1e-05)
  %r = nn.relu(%n)
  %p = nn.conv2d(%r, W1)
  %b = add(%p, BIAS)
  %m = multiply(%b, SCALE)
  %a = add(%m, SHIFT)
  %h = nn.hard_swish(%a)
  return %h
})";
  auto put = [&](const std::string& name, const Shape& shape, double scale, double offset = 0) {
    text.replace(text.find(name), name.size(), constant_text(shape, scale, state, offset));
  };
  put("W3", {8, 8, 3, 3}, 0.2);
  put("GAMMA", {8}, 0.5, 1.0);
  put("BETA", {8}, 0.5);
  put("MEAN", {8}, 0.3);
  put("VAR", {8}, 0.4, 0.6);
  put("W1", {8, 8, 1, 1}, 0.3);
  put("BIAS", {1, 8, 1, 1}, 0.1);
  put("SCALE", {1, 8, 1, 1}, 0.5, 1.0);
  put("SHIFT", {1, 8, 1, 1}, 0.2);
  Module m = parse_module(text, "float16_folds.kir");
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 3);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions o;
  std::ostringstream log;
  o.print_after_all = true;
  o.log = &log;
  Executable exe = driver::compile_model(m, o);
  const std::string printed = log.str();
  const size_t at = printed.find("# IR after fold-scale-shift");
  ASSERT_NE(at, std::string::npos) << "fold-scale-shift changed nothing";
  const std::string folded = printed.substr(at, printed.find("\n# ", at + 1) - at);
  for (const char* op : {"nn.batch_norm", "multiply"})
    EXPECT_EQ(folded.find(op), std::string::npos) << op << " left:\n" << folded;
  VirtualMachine vm(exe);
  std::vector<Tensor> got = vm.run(args);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].dtype(), DType::Float16);
  for (int64_t i = 0; i < want[0].numel(); ++i) {
    const double w = want[0].get_as_double(i);
    EXPECT_NEAR(got[0].get_as_double(i), w, 8.0 / 2048 * std::max(1.0, std::fabs(w))) << i;
  }
}

// --float16-precision excess: the model computes in float32 between its
// float16 input and output, so its result is the float32 model's (same
// weights, the input widened) rounded once to float16, within one float16
// unit (2^-11 below 1: Winograd and blocked sums add in another order than
// the interpreter's), and the widened program rounds only its result; with
// per-op precision every op's result is rounded.
TEST(Float16Model, ExcessPrecisionComputesInFloat32BetweenOps) {
  if (!codegen::host_target().float16_conversions) GTEST_SKIP() << "this CPU has no F16C";
  Module m = float16_net();
  std::string text32 = print_module(m);
  for (size_t at = 0; (at = text32.find("float16", at)) != std::string::npos;)
    text32.replace(at, 7, "float32");
  Module m32 = parse_module(text32, "float32_net.kir");
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 11);
  Tensor x32 = Tensor::empty(args[0].shape(), DType::Float32);
  for (int64_t i = 0; i < x32.numel(); ++i) x32.data<float>()[i] = float(args[0].get_as_double(i));
  const Tensor want = interpret(m32, "main", {x32})[0];
  for (const bool excess : {true, false}) {
    SCOPED_TRACE(excess ? "excess" : "per-op");
    driver::CompileOptions o;
    o.float16_excess_precision = excess;
    std::ostringstream log;
    o.print_after_all = true;
    o.log = &log;
    VirtualMachine vm(driver::compile_model(m, o));
    const Tensor got = vm.run(args)[0];
    int64_t off = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double rounded = half_to_float(float_to_half(want.data<float>()[i]));
      off += std::fabs(got.get_as_double(i) - rounded) > 1.0 / 2048;
    }
    const std::string printed = log.str();
    // The widened program once dead-code-elimination dropped what nothing reads.
    const size_t at =
        printed.find("# IR after dead-code-elimination", printed.find("# IR after widen-float16"));
    ASSERT_NE(at, std::string::npos) << printed;
    const std::string widened = printed.substr(at, printed.find("\n# ", at + 1) - at);
    size_t roundings = 0;
    for (size_t p = 0; (p = widened.find("dtype=\"float16\"", p)) != std::string::npos; ++p) ++roundings;
    if (excess) {
      EXPECT_EQ(off, 0) << "elements more than one float16 unit from the float32 model's";
      EXPECT_EQ(roundings, 1u) << widened;
    } else {
      EXPECT_GT(roundings, 4u) << widened;
    }
  }
}

TEST(Float16Model, StaysOnReferenceKernelsWithoutFloat16Conversions) {
  Module m = float16_net();
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 11);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions o;
  o.target = codegen::parse_target("llvm -mcpu=x86-64");
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, o, &summary);
  ASSERT_TRUE(summary.reference_ops.count("nn.conv2d")) << summary.str();
  EXPECT_EQ(summary.reference_ops.at("nn.conv2d").second,
            "float16 tensors need a target with float16 conversions (x86's F16C)");
  VirtualMachine vm(exe);
  std::vector<Tensor> got = vm.run(args);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].bitwise_equal(want[0]));
}

}  // namespace
}  // namespace kiln
