// Opsets outside the converters' range (7 to 18): the importer converts them
// with ONNX's version converter, says so on its log, and reports the
// converter's message when it cannot convert. The models are built here at
// old opsets, with the attributes those opsets had (Add's broadcast and
// axis, BatchNormalization's consumed_inputs and is_test), and checked
// against hand-computed values. An opset newer than the library knows:
// OnnxImportErrors.UnsupportedOpset.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

using onnx_test::attr_float;
using onnx_test::attr_int;
using onnx_test::attr_ints;
using onnx_test::ModelBuilder;

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(i));
  return v;
}

TEST(OnnxOpset, Opset6AddWithBroadcastAxisIsConverted) {
  // Opset 6 Add broadcasts B along the axis given (numpy broadcasting came
  // with opset 7): C[n, c, h] = A[n, c, h] + B[c].
  ModelBuilder b(6);
  b.input("a", {2, 3, 4});
  b.input("b", {3});
  b.output("c", {2, 3, 4});
  auto* n = b.node("Add", {"a", "b"}, {"c"}, "add_axis1");
  attr_int(n, "broadcast", 1);
  attr_int(n, "axis", 1);
  ImportOptions opts;
  std::ostringstream log;
  opts.log = &log;
  Module m = import_onnx_bytes(b.bytes(), "old.onnx", opts);
  EXPECT_EQ(log.str(), "old.onnx: converted from opset 6 to 7 with ONNX's version converter\n");
  std::vector<Tensor> out = interpret(
      m, "main", {Tensor::from_floats({2, 3, 4}, iota(24)), Tensor::from_floats({3}, {10, 20, 30})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  std::vector<double> want;
  for (int64_t i = 0; i < 24; ++i)
    want.push_back(static_cast<double>(i) + 10.0 * static_cast<double>(i / 4 % 3 + 1));
  EXPECT_EQ(values(out[0]), want);
}

TEST(OnnxOpset, Opset5BatchNormWithConsumedInputsIsConverted) {
  // Opset 1-5 BatchNormalization lists its in-place inputs (consumed_inputs)
  // and has is_test; y = scale * (x - mean) / sqrt(var + eps) + bias.
  ModelBuilder b(5);
  b.input("x", {1, 2, 1, 2});
  b.output("y", {1, 2, 1, 2});
  b.initializer("scale", Tensor::from_floats({2}, {2, 0.5f}));
  b.initializer("bias", Tensor::from_floats({2}, {1, -1}));
  b.initializer("mean", Tensor::from_floats({2}, {1, 10}));
  b.initializer("var", Tensor::from_floats({2}, {4, 0.25f}));
  auto* n = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  attr_ints(n, "consumed_inputs", {0, 0, 0, 1, 1});
  attr_int(n, "is_test", 1);
  attr_float(n, "epsilon", 0.0f);
  ImportOptions opts;
  std::ostringstream log;
  opts.log = &log;
  Module m = import_onnx_bytes(b.bytes(), "bn5.onnx", opts);
  EXPECT_EQ(log.str(), "bn5.onnx: converted from opset 5 to 7 with ONNX's version converter\n");
  std::vector<Tensor> out = interpret(m, "main", {Tensor::from_floats({1, 2, 1, 2}, {3, 5, 11, 9})});
  ASSERT_EQ(out.size(), 1u);
  // channel 0: 2 * (x - 1) / 2 + 1 = x; channel 1: 0.5 * (x - 10) / 0.5 - 1 = x - 11.
  EXPECT_EQ(values(out[0]), (std::vector<double>{3, 5, 0, -2}));
}

TEST(OnnxOpset, Opset1ModelIsConverted) {
  // Softsign has had one version since opset 1.
  ModelBuilder b(1);
  b.input("x", {3});
  b.output("y", {3});
  b.node("Softsign", {"x"}, {"y"});
  ImportOptions opts;
  std::ostringstream log;
  opts.log = &log;
  Module m = import_onnx_bytes(b.bytes(), "v1.onnx", opts);
  std::vector<Tensor> out = interpret(m, "main", {Tensor::from_floats({3}, {-3, 0, 1})});
  EXPECT_EQ(values(out.at(0)), (std::vector<double>{-0.75, 0, 0.5}));
}

TEST(OnnxOpset, NativeOpsetsAreNotConverted) {
  ModelBuilder b(13);
  b.input("x", {2});
  b.output("y", {2});
  b.node("Relu", {"x"}, {"y"});
  ImportOptions opts;
  std::ostringstream log;
  opts.log = &log;
  import_onnx_bytes(b.bytes(), "m.onnx", opts);
  EXPECT_EQ(log.str(), "");
}

TEST(OnnxOpset, ConverterFailureIsReportedWithTheFile) {
  // A valid opset-6 model the converter refuses: BatchNormalization in
  // training mode (is_test 0) has no opset-7 form. Its message, naming the
  // model.
  ModelBuilder b(6);
  b.input("x", {1, 1, 1, 2});
  b.output("y", {1, 1, 1, 2});
  for (const char* name : {"scale", "bias", "mean", "var"})
    b.initializer(name, Tensor::from_floats({1}, {1}));
  auto* n = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn_training");
  attr_int(n, "is_test", 0);
  ImportOptions opts;
  std::ostringstream log;
  opts.log = &log;
  try {
    import_onnx_bytes(b.bytes(), "broken.onnx", opts);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string prefix =
        "broken.onnx: ONNX's version converter cannot convert the model from opset 6 to 7: ";
    EXPECT_EQ(e.message().rfind(prefix, 0), 0u) << e.message();
    EXPECT_GT(e.message().size(), prefix.size()) << "the converter's message is missing";
  }
  EXPECT_EQ(log.str(), "");
}

TEST(OnnxOpset, MalformedOldModelIsAnErrorNotACrash) {
  // The converter reads the graph unchecked: a graph output no node computes
  // crashed it (found by kiln_fuzz_onnx_import).
  ModelBuilder b(1);
  b.input("x", {3});
  b.output("y", {3});
  try {
    import_onnx_bytes(b.bytes(), "old.onnx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "old.onnx: graph output 'y' is not computed by any node");
  }
}

TEST(OnnxOpset, ZeroStrideInAnOldModelIsAnErrorNotADivisionByZero) {
  // libonnx's shape inference, run before the version converter, divides by
  // each stride: a 0 stride killed the process with SIGFPE (found by
  // onnx_fuzz).
  ModelBuilder b(6);
  b.input("x", {1, 1, 5, 5});
  b.input("W", {1, 1, 3, 3});
  b.output("y", {1, 1, 3, 3});
  auto* n = b.node("Conv", {"x", "W"}, {"y"}, "conv");
  attr_ints(n, "kernel_shape", {3, 3});
  attr_ints(n, "strides", {2, 0});
  try {
    import_onnx_bytes(b.bytes(), "old.onnx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "old.onnx: Conv node 'conv' has strides 0; every value must be 1 or more");
  }
}

}  // namespace
}  // namespace kiln
