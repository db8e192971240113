// A float16 model through the compile pipeline: widen-float16 runs its ops
// on float32 values with each result rounded, so its convs run in channel
// blocks and by Winograd's transforms and its product on packed panels,
// every op compiled; its outputs against the reference interpreter's (which
// rounds each op's result to float16 too). For a target without float16
// conversions (x86-64: no F16C) the ops stay on their reference kernels,
// named with the reason.
#include <gtest/gtest.h>

#include <cmath>
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

// A float16 constant of `shape` in IR text, values from a fixed generator in [-scale, scale).
std::string constant_text(const Shape& shape, double scale, uint32_t& state) {
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
    s << (i ? ", " : "") << scale * (double(state >> 8) / double(1u << 24) * 2 - 1);
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
