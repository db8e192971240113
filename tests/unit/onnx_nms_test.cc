// ONNX NonMaxSuppression as exporters use it: its scalar inputs as
// initializers or bound with --input-value (ImportOptions::constant_inputs),
// the error naming an unbound one, and the detection chain NMS -> Gather
// (box index column) -> Gather (the boxes) run interpreted and compiled with
// the trimmed shapes and values worked out by hand.
#include <gtest/gtest.h>

#include <cstdint>

#include "driver/compile_model.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "onnx_test_util.h"
#include "runtime/vm.h"
#include "test_util.h"

namespace kiln {
namespace {

using onnx_test::ModelBuilder;

constexpr int32_t kFloat = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto_DataType_INT64;

// boxes (1, 4, 4) [y1, x1, y2, x2]: box 1 overlaps box 0 (IoU 0.818), boxes
// 2 and 3 are apart. scores (1, 1, 4). With IoU threshold 0.5 the selection
// by score is boxes 3 (0.95), 0 (0.9), 2 (0.7); box 1 (0.8) is suppressed.
std::vector<Tensor> inputs() {
  return {Tensor::from_floats({1, 4, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 0, 4, 1, 5}),
          Tensor::from_floats({1, 1, 4}, {0.9f, 0.8f, 0.7f, 0.95f})};
}

// max_output_boxes_per_class is the graph input "max_out" when
// `max_out_is_input`, else an initializer (4); iou_threshold an initializer.
ModelBuilder chain_model(bool max_out_is_input) {
  ModelBuilder b(11);
  b.input("boxes", {1, 4, 4});
  b.input("scores", {1, 1, 4});
  if (max_out_is_input)
    b.input("max_out", {1}, kInt64);
  else
    b.initializer("max_out", Tensor::from_ints({1}, {4}));
  b.initializer("iou", Tensor::from_floats({1}, {0.5f}));
  b.initializer("column", Tensor::from_ints({}, {2}));
  b.initializer("flat_shape", Tensor::from_ints({2}, {4, 4}));
  b.node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou"}, {"selected"}, "nms");
  onnx_test::attr_int(b.node("Gather", {"selected", "column"}, {"box_index"}), "axis", 1);
  b.node("Reshape", {"boxes", "flat_shape"}, {"flat"});
  onnx_test::attr_int(b.node("Gather", {"flat", "box_index"}, {"picked"}), "axis", 0);
  b.output("selected", {-1, 3}, kInt64);
  b.output("picked", {-1, 4}, kFloat);
  return b;
}

void expect_chain(const std::vector<Tensor>& out, const char* path) {
  ASSERT_EQ(out.size(), 2u) << path;
  ASSERT_EQ(out[0].shape(), (Shape{3, 3})) << path;
  const int64_t* sel = out[0].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(sel, sel + 9), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 2})) << path;
  ASSERT_EQ(out[1].shape(), (Shape{3, 4})) << path;
  const float* picked = out[1].data<float>();
  EXPECT_EQ(std::vector<float>(picked, picked + 12), (std::vector<float>{0, 4, 1, 5, 0, 0, 1, 1, 0, 2, 1, 3}))
      << path;
}

TEST(OnnxNms, ChainRunsInterpretedAndCompiled) {
  Module m = import_onnx_bytes(chain_model(false).bytes(), "nms.onnx");
  EXPECT_EQ(type_str(m.find("main")->ret_type), "(Tensor[(<=4, 3), int64], Tensor[(<=4, 4), float32])");
  expect_chain(interpret(m, "main", inputs()), "interpreted");
  driver::CompileSummary sum;
  VirtualMachine vm(driver::compile_model(m, {}, &sum));
  expect_chain(vm.run(inputs()), "compiled");
  EXPECT_TRUE(sum.reference_ops.count("image.non_max_suppression")) << sum.str();
}

TEST(OnnxNms, AnUnboundMaxOutputIsAnErrorNamingTheInput) {
  std::string err = testing::error_of([] { import_onnx_bytes(chain_model(true).bytes(), "nms.onnx"); });
  EXPECT_NE(err.find("max_output_boxes_per_class"), std::string::npos) << err;
  EXPECT_NE(err.find("graph input 'max_out'"), std::string::npos) << err;
  EXPECT_NE(err.find("--input-value max_out="), std::string::npos) << err;
  // Bound at import (what --input-value max_out=4 does), it runs.
  ImportOptions opts;
  opts.constant_inputs["max_out"] = Tensor::from_ints({1}, {4});
  Module m = import_onnx_bytes(chain_model(true).bytes(), "nms.onnx", opts);
  expect_chain(interpret(m, "main", inputs()), "interpreted");
}

// Gather with a 1-D index keeps a column axis; Squeeze and Unsqueeze of the
// other axes keep the dynamic one, Cast follows it; Shape cannot fold it.
TEST(OnnxNms, SqueezeUnsqueezeAndCastKeepTheDynamicAxis) {
  ModelBuilder b(13);
  b.input("boxes", {1, 4, 4});
  b.input("scores", {1, 1, 4});
  b.initializer("max_out", Tensor::from_ints({1}, {4}));
  b.initializer("iou", Tensor::from_floats({1}, {0.5f}));
  b.initializer("column", Tensor::from_ints({1}, {2}));
  b.initializer("axis1", Tensor::from_ints({1}, {1}));
  b.node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou"}, {"selected"});
  onnx_test::attr_int(b.node("Gather", {"selected", "column"}, {"col"}), "axis", 1);  // (<=4, 1)
  b.node("Squeeze", {"col", "axis1"}, {"flat"});                                      // (<=4,)
  b.node("Unsqueeze", {"flat", "axis1"}, {"again"});                                  // (<=4, 1)
  onnx_test::attr_int(b.node("Cast", {"again"}, {"y"}), "to", kFloat);
  b.output("y", {-1, 1}, kFloat);
  Module m = import_onnx_bytes(b.bytes(), "nms.onnx");
  EXPECT_EQ(type_str(m.find("main")->ret_type), "Tensor[(<=4, 1), float32]");
  std::vector<Tensor> interpreted = interpret(m, "main", inputs());
  std::vector<Tensor> compiled = VirtualMachine(driver::compile_model(m, {})).run(inputs());
  for (const auto* out : {&interpreted, &compiled}) {
    ASSERT_EQ(out->at(0).shape(), (Shape{3, 1}));
    const float* y = out->at(0).data<float>();
    EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{3, 0, 2}));
  }
  ModelBuilder s(13);
  s.input("boxes", {1, 4, 4});
  s.input("scores", {1, 1, 4});
  s.initializer("max_out", Tensor::from_ints({1}, {4}));
  s.node("NonMaxSuppression", {"boxes", "scores", "max_out"}, {"selected"});
  s.node("Shape", {"selected"}, {"shape"});
  s.output("shape", {2}, kInt64);
  std::string err = testing::error_of([&] { import_onnx_bytes(s.bytes(), "shape.onnx"); });
  EXPECT_NE(err.find("has a bounded dynamic leading axis"), std::string::npos) << err;
}

TEST(OnnxNms, MissingScalarsTakeOnnxDefaults) {
  // No max_output_boxes_per_class: no boxes at all.
  ModelBuilder b(10);
  b.input("boxes", {1, 4, 4});
  b.input("scores", {1, 1, 4});
  b.node("NonMaxSuppression", {"boxes", "scores"}, {"selected"});
  b.output("selected", {-1, 3}, kInt64);
  Module m = import_onnx_bytes(b.bytes(), "nms.onnx");
  std::vector<Tensor> out = interpret(m, "main", inputs());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
  // INT64_MAX ("no limit", as exporters write it) is capped at the 4 boxes;
  // without iou_threshold (0) any overlap suppresses: box 1 goes.
  ModelBuilder all(10);
  all.input("boxes", {1, 4, 4});
  all.input("scores", {1, 1, 4});
  all.initializer("max_out", Tensor::from_ints({1}, {INT64_MAX}));
  all.node("NonMaxSuppression", {"boxes", "scores", "max_out"}, {"selected"});
  all.output("selected", {-1, 3}, kInt64);
  Module unlimited = import_onnx_bytes(all.bytes(), "nms.onnx");
  EXPECT_EQ(type_str(unlimited.find("main")->ret_type), "Tensor[(<=4, 3), int64]");
  out = interpret(unlimited, "main", inputs());
  ASSERT_EQ(out[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(out[0].data<int64_t>()[2], 3);
}

}  // namespace
}  // namespace kiln
