// ONNX converters beyond what the node tests cover: 1-D convolution (the
// data set has no 1-D Conv test), decompositions checked against
// hand-computed values, the unsupported cases, whose messages must name
// the operator, its opset, the node and what is not supported, and the
// example NPU leaving the new ops on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "driver/build.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

using onnx_test::attr_float;
using onnx_test::attr_int;
using onnx_test::attr_ints;
using onnx_test::ModelBuilder;

constexpr int32_t kInt64 = onnx::TensorProto_DataType_INT64;
constexpr int32_t kBool = onnx::TensorProto_DataType_BOOL;

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

Tensor run_model(const ModelBuilder& b, const std::vector<Tensor>& args) {
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  std::vector<Tensor> out = interpret(m, "main", args);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

std::string unsupported_of(const ModelBuilder& b) {
  try {
    import_onnx_bytes(b.bytes(), "m.onnx");
  } catch (const UnsupportedError& e) {
    return e.message();
  } catch (const Error& e) {
    return "(not UnsupportedError) " + e.message();
  }
  return "(no error)";
}

void expect_contains(const std::string& msg, const std::string& needle) {
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
}

TEST(OnnxConvert, Conv1dRunsAsConv2d) {
  // x = [1, 2, 3, 4, 5], w = [1, 0, -1], pads 1 each side, stride 2:
  // padded [0, 1, 2, 3, 4, 5, 0]; windows at 0, 2, 4 give 0-2, 2-4, 4-0; plus bias 10.
  ModelBuilder b(13);
  b.input("x", {1, 1, 5});
  b.output("y", {1, 1, 3});
  b.initializer("w", Tensor::from_floats({1, 1, 3}, {1, 0, -1}));
  b.initializer("b", Tensor::from_floats({1}, {10}));
  auto* n = b.node("Conv", {"x", "w", "b"}, {"y"}, "conv1d");
  attr_ints(n, "pads", {1, 1});
  attr_ints(n, "strides", {2});
  Tensor y = run_model(b, {Tensor::from_floats({1, 1, 5}, {1, 2, 3, 4, 5})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{8, 8, 14}));
}

TEST(OnnxConvert, Conv1dSameUpperDilatedTwoChannels) {
  // Two input channels summed by a (1, 2, 2) kernel of ones, dilation 2, SAME_UPPER
  // on length 4: extent 3, total pad 2 -> 1 before, 1 after. Output[i] = sum over
  // channels of xp[i] + xp[i + 2] with xp the padded row.
  ModelBuilder b(13);
  b.input("x", {1, 2, 4});
  b.output("y", {1, 1, 4});
  b.initializer("w", Tensor::from_floats({1, 2, 2}, {1, 1, 1, 1}));
  auto* n = b.node("Conv", {"x", "w"}, {"y"});
  attr_ints(n, "dilations", {2});
  n->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("auto_pad");
    a.set_type(onnx::AttributeProto_AttributeType_STRING);
    a.set_s("SAME_UPPER");
    return a;
  }());
  // Channel 0: [1, 2, 3, 4], padded [0, 1, 2, 3, 4, 0] -> [2, 4, 6, 3];
  // channel 1: [10, 20, 30, 40] -> [20, 40, 60, 30].
  Tensor y = run_model(b, {Tensor::from_floats({1, 2, 4}, {1, 2, 3, 4, 10, 20, 30, 40})});
  EXPECT_EQ(values(y), (std::vector<double>{22, 44, 66, 33}));
}

TEST(OnnxConvert, Pool1d) {
  ModelBuilder b(13);
  b.input("x", {1, 1, 5});
  b.output("y", {1, 1, 2});
  auto* n = b.node("MaxPool", {"x"}, {"y"});
  attr_ints(n, "kernel_shape", {2});
  attr_ints(n, "strides", {2});
  EXPECT_EQ(values(run_model(b, {Tensor::from_floats({1, 1, 5}, {3, 1, 4, 1, 5})})),
            (std::vector<double>{3, 4}));
  ModelBuilder a(13);
  a.input("x", {1, 1, 5});
  a.output("y", {1, 1, 5});
  auto* m = a.node("AveragePool", {"x"}, {"y"});
  attr_ints(m, "kernel_shape", {3});
  attr_ints(m, "pads", {1, 1});
  // Padding does not count: the ends average two elements.
  std::vector<double> avg = values(run_model(a, {Tensor::from_floats({1, 1, 5}, {3, 1, 4, 1, 5})}));
  std::vector<double> want = {2, 8.0 / 3, 2, 10.0 / 3, 3};
  ASSERT_EQ(avg.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(avg[i], want[i], 1e-6) << i;
}

TEST(OnnxConvert, GlobalAveragePoolOn1d) {
  ModelBuilder b(13);
  b.input("x", {1, 2, 3});
  b.output("y", {1, 2, 1});
  b.node("GlobalAveragePool", {"x"}, {"y"});
  EXPECT_EQ(values(run_model(b, {Tensor::from_floats({1, 2, 3}, {1, 2, 3, 4, 5, 9})})),
            (std::vector<double>{2, 6}));
}

TEST(OnnxConvert, FourDWindowsAreUnsupported) {
  ModelBuilder b(13);
  b.input("x", {1, 1, 2, 2, 2, 2});
  b.output("y", {1, 1, 1, 1, 1, 1});
  auto* n = b.node("MaxPool", {"x"}, {"y"}, "pool4d");
  attr_ints(n, "kernel_shape", {2, 2, 2, 2});
  std::string msg = unsupported_of(b);
  expect_contains(msg, "MaxPool (opset 13) node 'pool4d'");
  expect_contains(msg, "this one has rank 6");
}

TEST(OnnxConvert, Conv3dAddsItsBiasPerChannel) {
  // A 1x1x1 kernel [1, 2] over two output channels, bias [10, 20].
  ModelBuilder b(13);
  b.input("x", {1, 1, 1, 1, 2});
  b.output("y", {1, 2, 1, 1, 2});
  b.initializer("w", Tensor::from_floats({2, 1, 1, 1, 1}, {1, 2}));
  b.initializer("bias", Tensor::from_floats({2}, {10, 20}));
  b.node("Conv", {"x", "w", "bias"}, {"y"});
  EXPECT_EQ(values(run_model(b, {Tensor::from_floats({1, 1, 1, 1, 2}, {3, 4})})),
            (std::vector<double>{13, 14, 26, 28}));
}

TEST(OnnxConvert, MaxPool1dIndicesAndMaxUnpoolWithTheDefaultShape) {
  // [1, 3, 2, 0] in windows of 2 (stride 2): maxima 3 at 1 and 2 at 2.
  ModelBuilder b(13);
  b.input("x", {1, 1, 4});
  b.output("y", {1, 1, 4});
  auto* p = b.node("MaxPool", {"x"}, {"m", "i"});
  attr_ints(p, "kernel_shape", {2});
  attr_ints(p, "strides", {2});
  // MaxUnpool's default output length is (2 - 1) * 2 + 2 = 4.
  auto* u = b.node("MaxUnpool", {"m", "i"}, {"y"});
  attr_ints(u, "kernel_shape", {2});
  attr_ints(u, "strides", {2});
  EXPECT_EQ(values(run_model(b, {Tensor::from_floats({1, 1, 4}, {1, 3, 2, 0})})),
            (std::vector<double>{0, 3, 2, 0}));
}

TEST(OnnxConvert, ComparisonsFeedWhere) {
  // y = where(x > 0 and not (x == 2), x, -1)
  ModelBuilder b(13);
  b.input("x", {5});
  b.output("y", {5});
  b.initializer("zero", Tensor::from_floats({}, {0}));
  b.initializer("two", Tensor::from_floats({}, {2}));
  b.initializer("neg", Tensor::from_floats({}, {-1}));
  b.node("Greater", {"x", "zero"}, {"pos"});
  b.node("Equal", {"x", "two"}, {"is2"});
  b.node("Not", {"is2"}, {"not2"});
  b.node("And", {"pos", "not2"}, {"keep"});
  b.node("Where", {"keep", "x", "neg"}, {"y"});
  EXPECT_EQ(values(run_model(b, {Tensor::from_floats({5}, {-3, 0, 1, 2, 5})})),
            (std::vector<double>{-1, -1, 1, -1, 5}));
}

TEST(OnnxConvert, IsNaNAndIsInfFlags) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_floats({4}, {inf, -inf, nan, 1});
  ModelBuilder b(13);
  b.input("x", {4});
  b.output("y", {4}, kBool);
  b.node("IsNaN", {"x"}, {"y"});
  EXPECT_EQ(values(run_model(b, {x})), (std::vector<double>{0, 0, 1, 0}));
  for (auto [neg, pos, want] :
       {std::tuple{1, 1, std::vector<double>{1, 1, 0, 0}}, std::tuple{0, 1, std::vector<double>{1, 0, 0, 0}},
        std::tuple{1, 0, std::vector<double>{0, 1, 0, 0}},
        std::tuple{0, 0, std::vector<double>{0, 0, 0, 0}}}) {
    ModelBuilder c(13);
    c.input("x", {4});
    c.output("y", {4}, kBool);
    auto* n = c.node("IsInf", {"x"}, {"y"});
    attr_int(n, "detect_negative", neg);
    attr_int(n, "detect_positive", pos);
    EXPECT_EQ(values(run_model(c, {x})), want) << "detect_negative=" << neg << " detect_positive=" << pos;
  }
}

TEST(OnnxConvert, HardmaxAndOneHot) {
  ModelBuilder b(13);
  b.input("x", {2, 3});
  b.output("y", {2, 3});
  b.node("Hardmax", {"x"}, {"y"});
  // Ties pick the first maximum.
  EXPECT_EQ(values(run_model(b, {Tensor::from_floats({2, 3}, {1, 5, 5, 9, 0, 2})})),
            (std::vector<double>{0, 1, 0, 1, 0, 0}));
  // OneHot on axis 0 with depth 3, values [off=-1, on=7]; -1 wraps to 2, 3 is out of range.
  ModelBuilder o(13);
  o.input("i", {3}, kInt64);
  o.output("y", {3, 3});
  o.initializer("depth", Tensor::from_ints({}, {3}));
  o.initializer("vals", Tensor::from_floats({2}, {-1, 7}));
  auto* n = o.node("OneHot", {"i", "depth", "vals"}, {"y"});
  attr_int(n, "axis", 0);
  Tensor y = run_model(o, {Tensor::from_ints({3}, {0, -1, 3})});
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  // y[d][k] = on when i[k] (wrapped) == d.
  EXPECT_EQ(values(y), (std::vector<double>{7, -1, -1, -1, -1, -1, -1, 7, -1}));
}

TEST(OnnxConvert, ShrinkThresholdedReluCelu) {
  Tensor x = Tensor::from_floats({5}, {-2, -0.5f, 0, 0.75f, 3});
  ModelBuilder s(13);
  s.input("x", {5});
  s.output("y", {5});
  auto* n = s.node("Shrink", {"x"}, {"y"});
  attr_float(n, "lambd", 0.6f);
  attr_float(n, "bias", 0.5f);
  EXPECT_EQ(values(run_model(s, {x})), (std::vector<double>{-1.5, 0, 0, 0.25, 2.5}));
  ModelBuilder t(13);
  t.input("x", {5});
  t.output("y", {5});
  attr_float(t.node("ThresholdedRelu", {"x"}, {"y"}), "alpha", 0.5f);
  EXPECT_EQ(values(run_model(t, {x})), (std::vector<double>{0, 0, 0, 0.75, 3}));
  ModelBuilder c(13);
  c.input("x", {5});
  c.output("y", {5});
  attr_float(c.node("Celu", {"x"}, {"y"}), "alpha", 2.0f);
  Tensor y = run_model(c, {x});
  // celu(x) = max(0, x) + min(0, 2 * (exp(x / 2) - 1)).
  for (int64_t i = 0; i < 5; ++i) {
    double v = x.get_as_double(i);
    EXPECT_NEAR(y.get_as_double(i), std::max(0.0, v) + std::min(0.0, 2 * (std::exp(v / 2) - 1)), 1e-6);
  }
}

TEST(OnnxConvert, LayerNormStatisticsOutputs) {
  // Rows [1, 3] and [2, 6]: means 2 and 4, variances 1 and 4.
  ModelBuilder b(17);
  b.input("x", {2, 2});
  b.output("y", {2, 2});
  b.output("mean", {2, 1});
  b.output("inv_std", {2, 1});
  b.initializer("scale", Tensor::from_floats({2}, {1, 1}));
  auto* n = b.node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv_std"});
  attr_float(n, "epsilon", 0.0f);
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  std::vector<Tensor> out = interpret(m, "main", {Tensor::from_floats({2, 2}, {1, 3, 2, 6})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{-1, 1, -1, 1}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{2, 4}));
  EXPECT_EQ(out[2].shape(), (Shape{2, 1}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{1, 0.5}));
}

TEST(OnnxConvert, UnsupportedCasesNameTheNode) {
  {
    // Trilu's k from a graph input cannot be static.
    ModelBuilder b(14);
    b.input("x", {3, 3});
    b.input("k", {}, kInt64);
    b.output("y", {3, 3});
    b.node("Trilu", {"x", "k"}, {"y"}, "tri");
    std::string msg = unsupported_of(b);
    expect_contains(msg, "Trilu (opset 14) node 'tri'");
    expect_contains(msg, "input 1 (k) must be a constant");
  }
  {
    ModelBuilder b(13);
    b.input("x", {3});
    b.output("y", {3});
    b.initializer("train", Tensor::from_ints({}, {1}, DType::Bool));
    b.initializer("r", Tensor::from_floats({}, {0.25f}));
    b.node("Dropout", {"x", "r", "train"}, {"y"}, "drop");
    std::string msg = unsupported_of(b);
    expect_contains(msg, "Dropout (opset 13) node 'drop'");
    expect_contains(msg, "training mode with a ratio other than 0 is not supported");
  }
  {
    ModelBuilder b(17);
    b.input("x", {2, 2});
    b.output("y", {2, 2});
    b.initializer("scale", Tensor::from_floats({2}, {1, 1}));
    attr_int(b.node("LayerNormalization", {"x", "scale"}, {"y"}, "ln"), "stash_type", 11);
    std::string msg = unsupported_of(b);
    expect_contains(msg, "LayerNormalization (opset 17) node 'ln'");
    expect_contains(msg, "stash_type 11 is not supported");
  }
}

TEST(OnnxConvert, ModOnFloatsNeedsFmod) {
  ModelBuilder b(13);
  b.input("a", {2});
  b.input("b", {2});
  b.output("y", {2});
  b.node("Mod", {"a", "b"}, {"y"}, "m");
  try {
    import_onnx_bytes(b.bytes(), "m.onnx");
    FAIL() << "no error";
  } catch (const Error& e) {
    expect_contains(e.message(), "Mod (opset 13) node 'm'");
    expect_contains(e.message(), "fmod=0 is not defined for floating-point inputs");
  }
  attr_int(b.graph().mutable_node(0), "fmod", 1);
  EXPECT_EQ(values(run_model(b, {Tensor::from_floats({2}, {-7, 7}), Tensor::from_floats({2}, {3, -3})})),
            (std::vector<double>{-1, 1}));
}

TEST(OnnxConvert, ArgMaxKeepsDimsByDefault) {
  ModelBuilder b(13);
  b.input("x", {2, 3});
  b.output("y", {2, 1}, kInt64);
  attr_int(b.node("ArgMax", {"x"}, {"y"}), "axis", 1);
  Tensor y = run_model(b, {Tensor::from_floats({2, 3}, {1, 9, 3, 7, 2, 7})});
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 0}));
}

TEST(OnnxConvert, PerAxisQuantizeAndDequantize) {
  // Channel scales 0.5 and 2, zero points 1 and -3, along axis 1 of (1, 2, 2).
  Tensor x = Tensor::from_floats({1, 2, 2}, {1.25f, -100, 5, std::numeric_limits<float>::quiet_NaN()});
  ModelBuilder q(13);
  q.input("x", {1, 2, 2});
  q.output("y", {1, 2, 2}, onnx::TensorProto_DataType_INT8);
  q.initializer("s", Tensor::from_floats({2}, {0.5f, 2}));
  q.initializer("z", Tensor::from_ints({2}, {1, -3}, DType::Int8));
  q.node("QuantizeLinear", {"x", "s", "z"}, {"y"});
  // 1.25 / 0.5 = 2.5 -> 2 (ties to even) + 1 = 3; -100 / 0.5 + 1 saturates at -128;
  // 5 / 2 = 2.5 -> 2 - 3 = -1; NaN -> the zero point -3.
  Tensor y = run_model(q, {x});
  EXPECT_EQ(y.dtype(), DType::Int8);
  EXPECT_EQ(values(y), (std::vector<double>{3, -128, -1, -3}));
  ModelBuilder d(13);
  d.input("q", {1, 2, 2}, onnx::TensorProto_DataType_INT8);
  d.output("y", {1, 2, 2});
  d.initializer("s", Tensor::from_floats({2}, {0.5f, 2}));
  d.initializer("z", Tensor::from_ints({2}, {1, -3}, DType::Int8));
  d.node("DequantizeLinear", {"q", "s", "z"}, {"y"});
  EXPECT_EQ(values(run_model(d, {y})), (std::vector<double>{1, -64.5, 4, 0}));
}

TEST(OnnxConvert, LrnAgainstFormula) {
  // size 3 over 4 channels at one position: window c-1 .. c+1.
  ModelBuilder b(13);
  b.input("x", {1, 4, 1, 1});
  b.output("y", {1, 4, 1, 1});
  auto* n = b.node("LRN", {"x"}, {"y"});
  attr_int(n, "size", 3);
  attr_float(n, "alpha", 0.3f);
  attr_float(n, "beta", 0.5f);
  attr_float(n, "bias", 2.0f);
  std::vector<double> xs = {1, 2, 3, 4};
  Tensor y = run_model(b, {Tensor::from_floats({1, 4, 1, 1}, {1, 2, 3, 4})});
  for (int c = 0; c < 4; ++c) {
    double sq = 0;
    for (int i = std::max(0, c - 1); i <= std::min(3, c + 1); ++i)
      sq += xs[static_cast<size_t>(i)] * xs[static_cast<size_t>(i)];
    double want = xs[static_cast<size_t>(c)] / std::pow(2.0 + 0.3 / 3 * sq, 0.5);
    EXPECT_NEAR(y.get_as_double(c), want, 1e-6) << "channel " << c;
  }
}

TEST(OnnxConvert, TopKOutputsAndConvTransposeGrowth) {
  ModelBuilder b(13);
  b.input("x", {5});
  b.output("v", {2});
  b.output("i", {2}, kInt64);
  b.initializer("k", Tensor::from_ints({1}, {2}));
  attr_int(b.node("TopK", {"x", "k"}, {"v", "i"}), "largest", 0);
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  std::vector<Tensor> out = interpret(m, "main", {Tensor::from_floats({5}, {4, -1, 7, -1, 0})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{-1, -1}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{1, 3}));
  // ConvTranspose 1-D, stride 1, kernel [1, 1], output_shape 4 from length 2: the full
  // result has 3 elements, the fourth receives nothing and holds the bias.
  ModelBuilder c(13);
  c.input("x", {1, 1, 2});
  c.output("y", {1, 1, 4});
  c.initializer("w", Tensor::from_floats({1, 1, 2}, {1, 1}));
  c.initializer("b", Tensor::from_floats({1}, {0.5f}));
  attr_ints(c.node("ConvTranspose", {"x", "w", "b"}, {"y"}), "output_shape", {4});
  EXPECT_EQ(values(run_model(c, {Tensor::from_floats({1, 1, 2}, {1, 10})})),
            (std::vector<double>{1.5, 11.5, 10.5, 0.5}));
}

TEST(OnnxConvert, ExampleNpuLeavesNewOpsOnTheHost) {
  // Conv + Relu (which the example NPU claims) feeding ArgMax, Greater and Where
  // (which it does not know): partitioned, the new ops stay on the host and the
  // VM's results equal the interpreter's.
  ModelBuilder b(13);
  b.input("x", {1, 2, 3, 3});
  b.output("am", {1, 1, 3, 3}, kInt64);
  b.output("w", {1, 2, 3, 3});
  b.initializer("k", Tensor::from_floats({2, 2, 1, 1}, {1, -1, 0.5f, 2}));
  b.initializer("zero", Tensor::from_floats({}, {0}));
  b.initializer("neg", Tensor::from_floats({}, {-7}));
  b.node("Conv", {"x", "k"}, {"c"});
  b.node("Relu", {"c"}, {"r"});
  attr_int(b.node("ArgMax", {"r"}, {"am"}), "axis", 1);
  b.node("Greater", {"r", "zero"}, {"g"});
  b.node("Where", {"g", "r", "neg"}, {"w"});
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  PartitionOptions po;
  po.backends = {"example_npu"};
  PartitionReport report;
  Module parted = partition_module(m, po, /*merge=*/true, &report);
  bool conv_offloaded = false;
  for (const OpDecision& d : report.ops) {
    if (d.op == "nn.conv2d") conv_offloaded = d.offloaded();
    if (d.op == "argmax" || d.op == "greater" || d.op == "where") {
      EXPECT_FALSE(d.offloaded()) << d.op << " went to " << d.backend;
    }
  }
  EXPECT_TRUE(conv_offloaded) << report.explain();
  std::vector<float> xs(18);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 7) - 3;
  Tensor x = Tensor::from_floats({1, 2, 3, 3}, xs);
  VirtualMachine vm(build_executable(parted, "main"));
  std::vector<Tensor> got = vm.run({x});
  std::vector<Tensor> want = interpret(m, "main", {x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(values(got[i]), values(want[i])) << "output " << i;
}

}  // namespace
}  // namespace kiln
