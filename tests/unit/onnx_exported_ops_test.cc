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

}  // namespace
}  // namespace kiln
