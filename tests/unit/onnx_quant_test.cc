// The ONNX integer and quantized operators (convert_quant.cc) against
// hand-computed values: per-channel, per-row and per-column zero points and
// scales, a bias, rounding half to even and saturation, DynamicQuantizeLinear
// on all-zero input, interpreted and compiled; and the errors for bad dtypes and parameter shapes,
// which must name the operator, its opset and the node.
#include <gtest/gtest.h>

#include "compile_util.h"
#include "driver/compile_model.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "onnx_test_util.h"
#include "schedule/schedule.h"

namespace kiln {
namespace {

using onnx_test::attr_ints;
using onnx_test::ModelBuilder;

constexpr int32_t kU8 = onnx::TensorProto_DataType_UINT8;
constexpr int32_t kI8 = onnx::TensorProto_DataType_INT8;
constexpr int32_t kI32 = onnx::TensorProto_DataType_INT32;
constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

// Interpreted; compiled (every op lowered) it must give the same values.
std::vector<Tensor> run_model(const ModelBuilder& b, const std::vector<Tensor>& args) {
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions opts;
  opts.check_bounds = true;
  driver::CompileSummary summary;
  VirtualMachine vm(driver::compile_model(m, opts, &summary));
  EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
  std::vector<Tensor> got = vm.run(args);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    EXPECT_EQ(values(got[i]), values(want[i])) << "compiled output " << i;
  }
  return want;
}

std::string error_of(const ModelBuilder& b) {
  try {
    import_onnx_bytes(b.bytes(), "m.onnx");
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

void expect_contains(const std::string& msg, const std::string& needle) {
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
}

Tensor u8(const Shape& s, const std::vector<int64_t>& v) { return Tensor::from_ints(s, v, DType::UInt8); }
Tensor i8(const Shape& s, const std::vector<int64_t>& v) { return Tensor::from_ints(s, v, DType::Int8); }

TEST(OnnxQuant, ConvIntegerPerChannelWeightZeroPoint) {
  // x - 10 = [0, 10, 20, 30]; w - w_zero_point = [3 - 1, 5 - 7] = [2, -2] per output channel.
  ModelBuilder b(10);
  b.input("x", {1, 1, 2, 2}, kU8);
  b.output("y", {1, 2, 2, 2}, kI32);
  b.initializer("w", u8({2, 1, 1, 1}, {3, 5}));
  b.initializer("xz", u8({}, {10}));
  b.initializer("wz", u8({2}, {1, 7}));
  b.node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"});
  std::vector<Tensor> y = run_model(b, {u8({1, 1, 2, 2}, {10, 20, 30, 40})});
  EXPECT_EQ(y.at(0).dtype(), DType::Int32);
  EXPECT_EQ(y.at(0).shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(values(y.at(0)), (std::vector<double>{0, 20, 40, 60, 0, -20, -40, -60}));
}

TEST(OnnxQuant, ConvIntegerOn1dWithoutZeroPoints) {
  // int8 x (1, 1, 4) * w [1, -1], pads 1: [0 - -3, -3 - 4, 4 - 127, 127 - -128, -128 - 0].
  ModelBuilder b(10);
  b.input("x", {1, 1, 4}, kI8);
  b.input("w", {1, 1, 2}, kI8);
  b.output("y", {1, 1, 5}, kI32);
  attr_ints(b.node("ConvInteger", {"x", "w"}, {"y"}), "pads", {1, 1});
  std::vector<Tensor> y = run_model(b, {i8({1, 1, 4}, {-3, 4, 127, -128}), i8({1, 1, 2}, {1, -1})});
  EXPECT_EQ(values(y.at(0)), (std::vector<double>{3, -7, -123, 255, -128}));
}

TEST(OnnxQuant, MatMulIntegerPerRowAndPerColumnZeroPoints) {
  // A - [1, 2] per row = [[1, 2], [1, 0]]; B - [0, 5] per column = [[1, -3], [2, -5]].
  ModelBuilder b(10);
  b.input("a", {2, 2}, kU8);
  b.input("b", {2, 2}, kU8);
  b.output("y", {2, 2}, kI32);
  b.initializer("az", u8({2}, {1, 2}));
  b.initializer("bz", u8({2}, {0, 5}));
  b.node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"});
  std::vector<Tensor> y = run_model(b, {u8({2, 2}, {2, 3, 3, 2}), u8({2, 2}, {1, 2, 2, 0})});
  EXPECT_EQ(values(y.at(0)), (std::vector<double>{1 + 4, -3 - 10, 1, -3}));
}

TEST(OnnxQuant, QLinearMatMulRoundsHalfToEvenAndSaturates) {
  // a - 1 = [1]; b = [1, 3, 5, 255]; multiplier 0.25 * b_scale / 0.5 with
  // b_scale [1, 1, 2, 1] per column: [0.5, 1.5, 5, 127.5] -> [0, 2, 5, 128]
  // (ties to even), + 200 -> [200, 202, 205, 255] (328 saturates).
  ModelBuilder b(10);
  b.input("a", {1, 1}, kU8);
  b.input("b", {1, 4}, kU8);
  b.output("y", {1, 4}, kU8);
  b.initializer("as", Tensor::from_floats({}, {0.25f}));
  b.initializer("az", u8({}, {1}));
  b.initializer("bs", Tensor::from_floats({4}, {1, 1, 2, 1}));
  b.initializer("bz", u8({4}, {0, 0, 0, 0}));
  b.initializer("ys", Tensor::from_floats({}, {0.5f}));
  b.initializer("yz", u8({}, {200}));
  b.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  std::vector<Tensor> y = run_model(b, {u8({1, 1}, {2}), u8({1, 4}, {1, 3, 5, 255})});
  EXPECT_EQ(y.at(0).dtype(), DType::UInt8);
  EXPECT_EQ(values(y.at(0)), (std::vector<double>{200, 202, 205, 255}));
}

TEST(OnnxQuant, QLinearConvPerChannelScaleAndBias) {
  // x - 1 = [4, 8]; w - [1, 0] = [2, -2]; + B [2, -3]: [10, 18] and [-11, -19].
  // Multipliers 0.5 * [0.25, 1] / 0.5 = [0.25, 1]: [2.5, 4.5] -> [2, 4] (ties
  // to even) and [-11, -19]; + y_zero_point -10.
  ModelBuilder b(10);
  b.input("x", {1, 1, 1, 2}, kU8);
  b.output("y", {1, 2, 1, 2}, kI8);
  b.initializer("xs", Tensor::from_floats({}, {0.5f}));
  b.initializer("xz", u8({}, {1}));
  b.initializer("w", i8({2, 1, 1, 1}, {3, -2}));
  b.initializer("ws", Tensor::from_floats({2}, {0.25f, 1}));
  b.initializer("wz", i8({2}, {1, 0}));
  b.initializer("ys", Tensor::from_floats({}, {0.5f}));
  b.initializer("yz", i8({}, {-10}));
  b.initializer("bias", Tensor::from_ints({2}, {2, -3}, DType::Int32));
  b.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"}, {"y"});
  std::vector<Tensor> y = run_model(b, {u8({1, 1, 1, 2}, {5, 9})});
  EXPECT_EQ(y.at(0).dtype(), DType::Int8);
  EXPECT_EQ(values(y.at(0)), (std::vector<double>{-8, -6, -21, -29}));
}

ModelBuilder dynamic_quantize_model(const Shape& shape) {
  ModelBuilder b(11);
  b.input("x", shape, kF32);
  b.output("y", shape, kU8);
  b.output("s", {}, kF32);
  b.output("z", {}, kU8);
  b.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"});
  return b;
}

TEST(OnnxQuant, DynamicQuantizeLinear) {
  // Range [-1, 1.5]: scale 2.5 / 255, zero point 1 / scale = 102.
  std::vector<Tensor> out = run_model(dynamic_quantize_model({3}), {Tensor::from_floats({3}, {-1, 0, 1.5f})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 102, 255}));
  EXPECT_EQ(out[1].shape(), Shape{});
  EXPECT_FLOAT_EQ(static_cast<float>(out[1].get_as_double(0)), 2.5f / 255.0f);
  EXPECT_EQ(out[2].dtype(), DType::UInt8);
  EXPECT_EQ(values(out[2]), (std::vector<double>{102}));
  // All zeros: scale 0, and y and the zero point 0.
  out = run_model(dynamic_quantize_model({2}), {Tensor::from_floats({2}, {0, 0})});
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{0}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{0}));
}

// A product as ONNX Runtime's quantize_dynamic writes it (its input through
// DynamicQuantizeLinear, MatMulInteger by an int8 weight, Cast, Mul by the
// scales): compiled, it runs as uint8 x int8 products (quantize-matmuls,
// packed for this CPU's dot products), the same values as interpreted.
TEST(OnnxQuant, DynamicallyQuantizedProductsRunOnBytes) {
  ModelBuilder b(11);
  b.input("x", {6, 24}, kF32);
  b.output("y", {6, 40}, kF32);
  std::vector<int64_t> w;
  for (int64_t i = 0; i < 24 * 40; ++i) w.push_back((i * 37) % 255 - 127);
  b.initializer("w", i8({24, 40}, w));
  b.initializer("wz", i8({}, {0}));
  b.initializer("ws", Tensor::from_floats({}, {0.01f}));
  b.node("DynamicQuantizeLinear", {"x"}, {"q", "s", "z"});
  b.node("MatMulInteger", {"q", "w", "z", "wz"}, {"acc"});
  onnx_test::attr_int(b.node("Cast", {"acc"}, {"accf"}), "to", kF32);
  b.node("Mul", {"s", "ws"}, {"scale"});
  b.node("Mul", {"accf", "scale"}, {"y"});
  std::vector<float> x;
  for (int64_t i = 0; i < 6 * 24; ++i) x.push_back(float((i * 13) % 29) / 7.0f - 2.0f);
  const Tensor input = Tensor::from_floats({6, 24}, x);
  run_model(b, {input});
  std::string printed;
  testing::compile_printed(import_onnx_bytes(b.bytes(), "m.onnx"), "", &printed);
  const schedule::CpuTarget cpu = schedule::host_cpu_target();
  if (cpu.int8_dot_lanes == cpu.float32_lanes() || cpu.int16_dot_lanes == cpu.float32_lanes()) {
    EXPECT_NE(printed.find("# IR after quantize-matmuls"), std::string::npos);
    EXPECT_NE(printed.find(cpu.int8_dot_lanes ? "dot_i8x4(" : "dot_i16x2("), std::string::npos);
  }
}

TEST(OnnxQuant, ErrorsNameTheNodeAndTheParameter) {
  {
    ModelBuilder b(10);
    b.input("x", {1, 1, 2, 2});
    b.input("w", {1, 1, 1, 1}, kU8);
    b.output("y", {1, 1, 2, 2}, kI32);
    b.node("ConvInteger", {"x", "w"}, {"y"}, "ci");
    std::string msg = error_of(b);
    expect_contains(msg, "ConvInteger (opset 10) node 'ci'");
    expect_contains(msg, "x has dtype float32; expected int8 or uint8");
  }
  {
    ModelBuilder b(10);
    b.input("a", {2, 3}, kU8);
    b.input("b", {3, 2}, kI8);
    b.output("y", {2, 2}, kI32);
    b.initializer("bz", u8({}, {0}));
    b.node("MatMulInteger", {"a", "b", "", "bz"}, {"y"}, "mi");
    std::string msg = error_of(b);
    expect_contains(msg, "MatMulInteger (opset 10) node 'mi'");
    expect_contains(msg, "b_zero_point has dtype uint8 but B has dtype int8; they must match");
  }
  auto qlinear_matmul = [](const Tensor& a_scale) {
    ModelBuilder b(10);
    b.input("a", {2, 3}, kU8);
    b.input("b", {3, 2}, kU8);
    b.output("y", {2, 2}, kU8);
    b.initializer("as", a_scale);
    b.initializer("az", u8(a_scale.shape(), std::vector<int64_t>(static_cast<size_t>(a_scale.numel()), 0)));
    b.initializer("s", Tensor::from_floats({}, {1}));
    b.initializer("z", u8({}, {0}));
    b.node("QLinearMatMul", {"a", "as", "az", "b", "s", "z", "s", "z"}, {"y"}, "qm");
    return b;
  };
  {
    std::string msg = error_of(qlinear_matmul(Tensor::from_floats({3}, {1, 1, 1})));
    expect_contains(msg, "QLinearMatMul (opset 10) node 'qm'");
    expect_contains(msg,
                    "a_zero_point has shape (3,); expected a single value, (2,) or (..., 2, 1) (per row)");
  }
  // The per-row forms are accepted.
  EXPECT_EQ(error_of(qlinear_matmul(Tensor::from_floats({2}, {1, 1}))), "(no error)");
  EXPECT_EQ(error_of(qlinear_matmul(Tensor::from_floats({2, 1}, {1, 1}))), "(no error)");
  {
    ModelBuilder b(10);
    b.input("x", {1, 2, 2, 2}, kU8);
    b.output("y", {1, 1, 2, 2}, kU8);
    b.initializer("xs", Tensor::from_floats({2}, {1, 1}));
    b.initializer("xz", u8({2}, {0, 0}));
    b.initializer("w", u8({1, 2, 1, 1}, {1, 1}));
    b.initializer("s", Tensor::from_floats({}, {1}));
    b.initializer("z", u8({}, {0}));
    b.node("QLinearConv", {"x", "xs", "xz", "w", "s", "z", "s", "z"}, {"y"}, "qc");
    std::string msg = error_of(b);
    expect_contains(msg, "QLinearConv (opset 10) node 'qc'");
    expect_contains(msg, "x_zero_point has shape (2,); expected a single value (per tensor)");
  }
  {
    ModelBuilder b(11);
    b.input("x", {2}, kI32);
    b.output("y", {2}, kU8);
    b.output("s", {}, kF32);
    b.output("z", {}, kU8);
    b.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}, "dq");
    std::string msg = error_of(b);
    expect_contains(msg, "DynamicQuantizeLinear (opset 11) node 'dq'");
    expect_contains(msg, "x has dtype int32; expected float32");
  }
}

}  // namespace
}  // namespace kiln
