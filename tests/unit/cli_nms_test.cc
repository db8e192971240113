// `kiln run` and `kiln compile` on an ONNX NonMaxSuppression model whose
// limit and IoU threshold are graph inputs: bound with --input-value (an
// integer and a float), the selected rows are written trimmed to .npy, also
// with --verify and from a .kmod; unbound, the error names the input.
#include <gtest/gtest.h>

#include "cli_util.h"
#include "kiln/runtime/npy.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

using testing::kiln_cmd;

bool has(const testing::CliResult& r, const std::string& needle) {
  return r.out.find(needle) != std::string::npos;
}

// selected = NonMaxSuppression(boxes (1, 4, 4), scores (1, 1, 4), max_out, iou).
std::string nms_model() {
  onnx_test::ModelBuilder b(11);
  b.input("boxes", {1, 4, 4});
  b.input("scores", {1, 1, 4});
  b.input("max_out", {1}, onnx::TensorProto_DataType_INT64);
  b.input("iou", {1});
  b.node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou"}, {"selected"});
  b.output("selected", {-1, 3}, onnx::TensorProto_DataType_INT64);
  return b.bytes();
}

class CliNms : public testing::CliTest {
 protected:
  CliNms() : CliTest("cli-nms-test") {}
  void SetUp() override {
    CliTest::SetUp();
    model_ = file("nms.onnx", nms_model());
    // Box 1 overlaps box 0 (IoU 0.818); by score: 3, 0, (1 suppressed), 2.
    write_npy(path("boxes.npy"),
              Tensor::from_floats({1, 4, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 0, 4, 1, 5}));
    write_npy(path("scores.npy"), Tensor::from_floats({1, 1, 4}, {0.9f, 0.8f, 0.7f, 0.95f}));
    inputs_ = " --input boxes=" + path("boxes.npy") + " --input scores=" + path("scores.npy");
  }
  void expect_selected(const std::string& out, const std::vector<int64_t>& rows) {
    Tensor y = read_npy(out + "/output_0.npy");
    ASSERT_EQ(y.shape(), (Shape{static_cast<int64_t>(rows.size() / 3), 3}));
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(y.data<int64_t>()[i], rows[i]) << i;
  }
  std::string model_, inputs_;
};

TEST_F(CliNms, RunWritesTheTrimmedRows) {
  auto r = kiln_cmd("run " + model_ + " --input-value max_out=4 --input-value iou=0.5" + inputs_ +
                    " --verify --out " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "(3, 3) int64")) << r.out;
  expect_selected(path("out"), {0, 0, 3, 0, 0, 0, 0, 0, 2});
  // At most one per class: the best box alone.
  r = kiln_cmd("run " + model_ + " --input-value max_out=1 --input-value iou=0.5" + inputs_ + " --out " +
               path("one"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_selected(path("one"), {0, 0, 3});
}

TEST_F(CliNms, CompiledModuleRunsTrimmed) {
  auto c =
      kiln_cmd("compile " + model_ + " --input-value max_out=4 --input-value iou=0.5 -o " + path("m.kmod"));
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_TRUE(has(c, "image.non_max_suppression x1: dynamic shape")) << c.out;
  auto r = kiln_cmd("run " + path("m.kmod") + inputs_ + " --out " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_selected(path("out"), {0, 0, 3, 0, 0, 0, 0, 0, 2});
  auto strict =
      kiln_cmd("compile " + model_ + " --input-value max_out=4 --input-value iou=0.5 --strict-compile -o " +
               path("s.kmod"));
  EXPECT_NE(strict.code, 0);
  EXPECT_TRUE(has(strict, "dynamic shape")) << strict.out;
}

TEST_F(CliNms, UnboundLimitIsAnErrorNamingIt) {
  auto r = kiln_cmd("run " + model_ + " --input-value iou=0.5" + inputs_);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r, "max_output_boxes_per_class")) << r.out;
  EXPECT_TRUE(has(r, "the graph input 'max_out'")) << r.out;
  EXPECT_TRUE(has(r, "--input-value max_out=")) << r.out;
}

}  // namespace
}  // namespace kiln
