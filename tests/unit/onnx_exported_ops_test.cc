// Operators as exporters write them, beyond the node tests: PRelu with a
// per-channel slope, Pow with exponents of another type and negative bases,
// Sqrt, and Expand whose shape is a graph input. Each model runs on the
// reference interpreter and compiled (no backends, on the VM), against
// hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "driver/compile_model.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "onnx_test_util.h"
#include "runtime/vm.h"

namespace kiln {
namespace {

using onnx_test::ModelBuilder;

constexpr int32_t kFloat = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kFloat16 = onnx::TensorProto_DataType_FLOAT16;
constexpr int32_t kInt32 = onnx::TensorProto_DataType_INT32;
constexpr int32_t kInt64 = onnx::TensorProto_DataType_INT64;

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

// The one output of the model on `args`, interpreted and compiled; both must
// have `dtype`, `shape` and `want` (to `tol`, relative).
void expect_output(const ModelBuilder& b, const std::vector<Tensor>& args, DType dtype, const Shape& shape,
                   const std::vector<double>& want, double tol = 1e-6) {
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  std::vector<Tensor> interpreted = interpret(m, "main", args);
  VirtualMachine vm(driver::compile_model(m, driver::CompileOptions{}));
  std::vector<Tensor> compiled = vm.run(args);
  for (const auto* out : {&interpreted, &compiled}) {
    const char* path = out == &interpreted ? "interpreted" : "compiled";
    ASSERT_EQ(out->size(), 1u) << path;
    const Tensor& y = out->at(0);
    EXPECT_EQ(y.dtype(), dtype) << path;
    EXPECT_EQ(y.shape(), shape) << path;
    std::vector<double> got = values(y);
    ASSERT_EQ(got.size(), want.size()) << path;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << path << " element " << i << " is " << got[i] << ", expected NaN";
        continue;
      }
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << path << " element " << i;
    }
  }
}

Tensor tensor_of(const Shape& shape, DType dtype, const std::vector<double>& v) {
  Tensor t = Tensor::empty(shape, dtype);
  for (size_t i = 0; i < v.size(); ++i) t.set_from_double(static_cast<int64_t>(i), v[i]);
  return t;
}

std::string import_error(const ModelBuilder& b, const ImportOptions& opts = {}) {
  try {
    import_onnx_bytes(b.bytes(), "m.onnx", opts);
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

std::vector<float> ramp(int64_t n, float start) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + static_cast<float>(i));
  return v;
}

// ---------------------------------------------------------------- PRelu

// x = -6, -5, ... over (N, C, ...) with C = 3; y = x for x >= 0, slope[c] * x else.
std::vector<double> prelu_want(const Shape& shape, const std::vector<float>& x,
                               const std::vector<float>& slope) {
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> want;
  for (size_t i = 0; i < x.size(); ++i) {
    double s = slope[static_cast<size_t>(static_cast<int64_t>(i) / inner % shape[1])];
    want.push_back(x[i] >= 0 ? x[i] : s * x[i]);
  }
  return want;
}

void expect_per_channel_prelu(const Shape& shape, const std::vector<int64_t>& slope_shape) {
  ModelBuilder b(13);
  b.input("x", std::vector<int64_t>(shape));
  b.output("y", std::vector<int64_t>(shape));
  std::vector<float> slope = {0.5f, 2, -1};
  b.initializer("slope", Tensor::from_floats(Shape(slope_shape), slope));
  b.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<float> x = ramp(numel, -6);
  SCOPED_TRACE("x " + shape_str(shape) + ", slope " + shape_str(Shape(slope_shape)));
  expect_output(b, {Tensor::from_floats(shape, x)}, DType::Float32, shape, prelu_want(shape, x, slope));
}

TEST(OnnxExportedOps, PReluPerChannelSlopeOnRank3To5) {
  expect_per_channel_prelu({2, 3, 4}, {3});
  expect_per_channel_prelu({1, 3, 2, 2}, {3});
  expect_per_channel_prelu({1, 3, 2, 1, 2}, {3});
}

TEST(OnnxExportedOps, PReluSlopeBroadcastFromTheRight) {
  expect_per_channel_prelu({1, 3, 2, 2}, {3, 1, 1});
  expect_per_channel_prelu({2, 3}, {3});
  // A 1-D slope that matches the last dimension applies along it (numpy
  // broadcasting, as ONNX specifies), even when it matches the channels too.
  ModelBuilder b(13);
  b.input("x", {1, 3, 3});
  b.output("y", {1, 3, 3});
  b.initializer("slope", Tensor::from_floats({3}, {1, 2, 3}));
  b.node("PRelu", {"x", "slope"}, {"y"});
  expect_output(b, {Tensor::from_floats({1, 3, 3}, std::vector<float>(9, -1))}, DType::Float32, {1, 3, 3},
                {-1, -2, -3, -1, -2, -3, -1, -2, -3});
}

TEST(OnnxExportedOps, PReluSlopeThatDoesNotBroadcastIsAnError) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 4});
  b.output("y", {2, 3, 4});
  b.initializer("slope", Tensor::from_floats({5}, {1, 2, 3, 4, 5}));
  b.node("PRelu", {"x", "slope"}, {"y"}, "bad_prelu");
  std::string msg = import_error(b);
  expect_contains(msg,
                  "(not UnsupportedError) m.onnx: PRelu (opset 13) node 'bad_prelu': the slope's shape (5,) "
                  "does not broadcast to the "
                  "input's (2, 3, 4)");
}

// ---------------------------------------------------------------- Pow, Sqrt

ModelBuilder pow_model(int32_t base_type, int32_t exponent_type, const std::vector<int64_t>& shape) {
  ModelBuilder b(15);
  b.input("x", shape, base_type);
  b.input("y", shape, exponent_type);
  b.output("z", shape, base_type);
  b.node("Pow", {"x", "y"}, {"z"});
  return b;
}

TEST(OnnxExportedOps, PowNegativeBasesWithIntegralExponents) {
  // (x - mean)^2 in exported layer norms: negative bases, a float exponent 2.
  ModelBuilder b = pow_model(kFloat, kFloat, {6});
  expect_output(b,
                {Tensor::from_floats({6}, {-2, -3, -0.5f, 2, -2, -1}),
                 Tensor::from_floats({6}, {2, 3, 2, -1, -2, 0.5f})},
                DType::Float32, {6}, {4, -27, 0.25, 0.5, 0.25, NAN});
}

TEST(OnnxExportedOps, PowFloatBaseIntegerExponent) {
  ModelBuilder b = pow_model(kFloat, kInt64, {4});
  expect_output(b, {Tensor::from_floats({4}, {-2, 1.5f, 3, 2}), Tensor::from_ints({4}, {3, 2, 0, -2})},
                DType::Float32, {4}, {-8, 2.25, 1, 0.25});
}

TEST(OnnxExportedOps, PowIntegerBaseFloatExponent) {
  // The exponent is not rounded to the base's type: 4^0.5 = 2, 9^1.5 = 27,
  // 2^-1 = 0.5 (0 in int32); the result has the base's type.
  ModelBuilder b = pow_model(kInt32, kFloat, {4});
  Tensor x = tensor_of({4}, DType::Int32, {4, 9, 2, -3});
  expect_output(b, {x, Tensor::from_floats({4}, {0.5f, 1.5f, -1, 3})}, DType::Int32, {4}, {2, 27, 0, -27});
}

TEST(OnnxExportedOps, PowFloat16BaseFloatExponent) {
  // The exponent keeps its float32 value: in float16 0.99975 would round to
  // 0.99951, and 60000 ^ 0.99951 is 59679, not 59835.
  ModelBuilder b = pow_model(kFloat16, kFloat, {2});
  Tensor x = tensor_of({2}, DType::Float16, {60000, 2});
  expect_output(b, {x, Tensor::from_floats({2}, {0.99975f, 10})}, DType::Float16, {2},
                {std::pow(60000.0, static_cast<double>(0.99975f)), 1024}, 1e-3);
}

TEST(OnnxExportedOps, SqrtValues) {
  ModelBuilder b(13);
  b.input("x", {5});
  b.output("y", {5});
  b.node("Sqrt", {"x"}, {"y"});
  expect_output(b, {Tensor::from_floats({5}, {0, 4, 2, 1e-8f, -1})}, DType::Float32, {5},
                {0, 2, std::sqrt(2.0), std::sqrt(static_cast<double>(1e-8f)), NAN});
}

TEST(OnnxExportedOps, SqrtFloat16) {
  ModelBuilder b(13);
  b.input("x", {3}, kFloat16);
  b.output("y", {3}, kFloat16);
  b.node("Sqrt", {"x"}, {"y"});
  expect_output(b, {tensor_of({3}, DType::Float16, {2, 60000, 0.25})}, DType::Float16, {3},
                {std::sqrt(2.0), std::sqrt(60000.0), 0.5}, 1e-3);
}

TEST(OnnxExportedOps, SqrtOfReduceMeanOfPowLikeLayerNorm) {
  // sqrt(mean((x - mean(x))^2) + eps), the exported layer norm's denominator.
  ModelBuilder b(13);
  b.input("x", {1, 4});
  b.output("y", {1, 1});
  b.initializer("two", Tensor::from_floats({}, {2}));
  b.initializer("eps", Tensor::from_floats({}, {0}));
  b.node("ReduceMean", {"x"}, {"m"});
  b.node("Sub", {"x", "m"}, {"d"});
  b.node("Pow", {"d", "two"}, {"sq"});
  b.node("ReduceMean", {"sq"}, {"var"});
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"y"});
  onnx_test::attr_ints(b.graph().mutable_node(0), "axes", {-1});
  onnx_test::attr_ints(b.graph().mutable_node(3), "axes", {-1});
  // x = 1, 2, 3, 6: mean 3, deviations -2 -1 0 3, variance 14 / 4.
  expect_output(b, {Tensor::from_floats({1, 4}, {1, 2, 3, 6})}, DType::Float32, {1, 1}, {std::sqrt(3.5)});
}

// ---------------------------------------------------------------- Expand

TEST(OnnxExportedOps, ExpandShapeGraphInputIsAClearError) {
  ModelBuilder b(13);
  b.input("x", {3, 1});
  b.input("shape", {2}, kInt64);
  b.output("y", {3, 4});
  b.node("Expand", {"x", "shape"}, {"y"}, "expand_by_input");
  std::string msg = import_error(b);
  expect_contains(msg, "Expand (opset 13) node 'expand_by_input': input 1 (shape) must be a constant");
  expect_contains(msg, "it is the graph input 'shape', whose values are known only at run time");
  expect_contains(msg, "make 'shape' a constant of the model (an initializer)");
  expect_contains(msg, "--input-shape");
}

TEST(OnnxExportedOps, ExpandShapeComputedFromGraphInputValuesIsAClearError) {
  ModelBuilder b(13);
  b.input("x", {3, 1});
  b.input("s", {2}, kInt64);
  b.output("y", {3, 4});
  b.initializer("one", Tensor::from_ints({1}, {1}));
  b.node("Mul", {"s", "one"}, {"shape"});
  b.node("Expand", {"x", "shape"}, {"y"}, "expand_computed");
  std::string msg = import_error(b);
  expect_contains(msg, "node 'expand_computed': input 1 (shape) must be a constant");
  expect_contains(msg, "'shape' is computed from the values of graph inputs at run time");
}

TEST(OnnxExportedOps, ExpandShapeFromABoundInputShapeFolds) {
  // expand(x, shape(y)) with y's shape symbolic until --input-shape binds it.
  ModelBuilder b(13);
  b.input("x", {3, 1});
  b.input("y", {-1, -1});
  b.output("z", {-1, -1});
  b.node("Shape", {"y"}, {"s"});
  b.node("Expand", {"x", "s"}, {"e"});
  b.node("Add", {"e", "y"}, {"z"});
  ImportOptions opts;
  opts.input_shapes["y"] = {3, 2};
  Module m = import_onnx_bytes(b.bytes(), "m.onnx", opts);
  std::vector<Tensor> out = interpret(
      m, "main",
      {Tensor::from_floats({3, 1}, {1, 2, 3}), Tensor::from_floats({3, 2}, std::vector<float>(6, 10))});
  EXPECT_EQ(values(out.at(0)), (std::vector<double>{11, 11, 12, 12, 13, 13}));
}

}  // namespace
}  // namespace kiln
