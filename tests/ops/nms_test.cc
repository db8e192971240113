// image.non_max_suppression (ONNX NonMaxSuppression) against selections
// worked out by hand from the definition in src/op/nms.cc. Each case states
// the boxes' overlaps (IoU = intersection / union) that decide it.
#include <gtest/gtest.h>

#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

constexpr const char* kNms = "image.non_max_suppression";

// boxes: B x N rows of 4; scores: B x C x N.
Tensor nms(int64_t b, int64_t c, int64_t n, const std::vector<double>& boxes,
           const std::vector<double>& scores, Attrs attrs) {
  return run1(kNms,
              {tensor_of({b, n, 4}, DType::Float32, boxes), tensor_of({b, c, n}, DType::Float32, scores)},
              attrs);
}

// The selected rows [batch, class, box], flattened.
void expect_rows(const Tensor& got, const std::vector<std::vector<double>>& rows) {
  ASSERT_EQ(got.dtype(), DType::Int64);
  ASSERT_EQ(got.shape(), (Shape{static_cast<int64_t>(rows.size()), 3}));
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  expect_equal(got, flat);
}

Attrs limits(int64_t max_out, double iou) {
  return {{"max_output_boxes_per_class", max_out}, {"iou_threshold", iou}};
}

// Box 0 is the unit square [y1, x1, y2, x2] = [0, 0, 1, 1]; box 1 is it moved
// by 0.1 along x (overlap 1 x 0.9, union 1.1: IoU 0.818); box 2 is far away.
const std::vector<double> kThreeBoxes = {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3};

TEST(Nms, SuppressesABoxOverlappingASelectedOne) {
  expect_rows(nms(1, 1, 3, kThreeBoxes, {0.9, 0.8, 0.7}, limits(10, 0.5)), {{0, 0, 0}, {0, 0, 2}});
  // Above the overlap (0.818 < 0.9) nothing is suppressed: order by score.
  expect_rows(nms(1, 1, 3, kThreeBoxes, {0.7, 0.8, 0.9}, limits(10, 0.9)), {{0, 0, 2}, {0, 0, 1}, {0, 0, 0}});
  // The higher-scored of the overlapping pair wins: box 1 here.
  expect_rows(nms(1, 1, 3, kThreeBoxes, {0.8, 0.9, 0.7}, limits(10, 0.5)), {{0, 0, 1}, {0, 0, 2}});
}

TEST(Nms, AnIouEqualToTheThresholdIsKept) {
  // Box 1 = [0, 0, 2, 1] is half of box 0 = [0, 0, 2, 2]: IoU 2 / 4 = 0.5 exactly.
  const std::vector<double> boxes = {0, 0, 2, 2, 0, 0, 2, 1};
  expect_rows(nms(1, 1, 2, boxes, {0.9, 0.8}, limits(5, 0.5)), {{0, 0, 0}, {0, 0, 1}});
  expect_rows(nms(1, 1, 2, boxes, {0.9, 0.8}, limits(5, 0.49)), {{0, 0, 0}});
}

TEST(Nms, CornersMayComeInAnyOrder) {
  // [1, 1, 0, 0] is the unit square too: IoU 1 with box 0.
  const std::vector<double> boxes = {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0};
  expect_rows(nms(1, 1, 3, boxes, {0.9, 0.8, 0.7}, limits(5, 0.99)), {{0, 0, 0}});
}

TEST(Nms, CenterPointBoxes) {
  // [x_center, y_center, width, height]: the same three boxes as kThreeBoxes.
  const std::vector<double> centers = {0.5, 0.5, 1, 1, 0.6, 0.5, 1, 1, 2.5, 0.5, 1, 1};
  Attrs a = limits(10, 0.5);
  a.set("center_point_box", int64_t{1});
  expect_rows(nms(1, 1, 3, centers, {0.9, 0.8, 0.7}, a), {{0, 0, 0}, {0, 0, 2}});
  // [0, 0, 2, 2] and [1, 1, 2, 2] as centers: [-1, 1]^2 and [0, 2]^2, overlap
  // 1, union 7, IoU 0.143; as corners: [0, 2]^2 and [1, 2]^2, IoU 1 / 4 = 0.25.
  const std::vector<double> boxes = {0, 0, 2, 2, 1, 1, 2, 2};
  a.set("iou_threshold", 0.2);
  expect_rows(nms(1, 1, 2, boxes, {0.9, 0.8}, a), {{0, 0, 0}, {0, 0, 1}});
  expect_rows(nms(1, 1, 2, boxes, {0.9, 0.8}, limits(10, 0.2)), {{0, 0, 0}});
}

TEST(Nms, ScoreThresholdKeepsOnlyHigherScores) {
  const std::vector<double> scores = {0.9, 0.5, 0.3};
  Attrs a = limits(10, 0.5);
  a.set("score_threshold", std::vector<double>{0.5});  // 0.5 itself is not above it
  expect_rows(nms(1, 1, 3, kThreeBoxes, scores, a), {{0, 0, 0}});
  a.set("score_threshold", std::vector<double>{0.3});
  // Box 1 passes the threshold but overlaps box 0; box 2 (0.3) does not pass.
  expect_rows(nms(1, 1, 3, kThreeBoxes, scores, a), {{0, 0, 0}});
  a.set("score_threshold", std::vector<double>{0.2});
  expect_rows(nms(1, 1, 3, kThreeBoxes, scores, a), {{0, 0, 0}, {0, 0, 2}});
}

TEST(Nms, EqualScoresTakeTheLowerBoxIndexFirst) {
  // Three disjoint boxes of one score, at most two: boxes 0 and 1.
  const std::vector<double> apart = {0, 0, 1, 1, 0, 2, 1, 3, 0, 4, 1, 5};
  expect_rows(nms(1, 1, 3, apart, {0.5, 0.5, 0.5}, limits(2, 0.5)), {{0, 0, 0}, {0, 0, 1}});
  // Boxes 1 and 2 are one square (IoU 1) of equal score: 1 is taken, 2 dropped.
  const std::vector<double> twins = {0, 4, 1, 5, 0, 0, 1, 1, 0, 0, 1, 1};
  expect_rows(nms(1, 1, 3, twins, {0.4, 0.8, 0.8}, limits(5, 0.5)), {{0, 0, 1}, {0, 0, 0}});
}

TEST(Nms, RowsComeByBatchThenClassThenSelection) {
  // Two batches of two disjoint boxes, two classes; one box per class.
  const std::vector<double> boxes = {0, 0, 1, 1, 0, 2, 1, 3, 0, 0, 1, 1, 0, 2, 1, 3};
  const std::vector<double> scores = {0.1, 0.9,    // batch 0, class 0: box 1
                                      0.8, 0.2,    // batch 0, class 1: box 0
                                      0.3, 0.6,    // batch 1, class 0: box 1
                                      0.7, 0.65};  // batch 1, class 1: box 0
  Tensor got = nms(2, 2, 2, boxes, scores, limits(1, 0.5));
  expect_rows(got, {{0, 0, 1}, {0, 1, 0}, {1, 0, 1}, {1, 1, 0}});
  // Two per class, every box kept, by descending score within (batch, class).
  expect_rows(nms(2, 2, 2, boxes, scores, limits(2, 0.5)),
              {{0, 0, 1}, {0, 0, 0}, {0, 1, 0}, {0, 1, 1}, {1, 0, 1}, {1, 0, 0}, {1, 1, 0}, {1, 1, 1}});
  // A score threshold of 0.5 leaves batch 1 class 0 only box 1 and trims the
  // result below its bound (2 * 2 * 2 = 8 rows).
  Attrs a = limits(2, 0.5);
  a.set("score_threshold", std::vector<double>{0.5});
  expect_rows(nms(2, 2, 2, boxes, scores, a), {{0, 0, 1}, {0, 1, 0}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}});
}

TEST(Nms, ZeroMaxOutputSelectsNothing) {
  Tensor got = nms(1, 1, 3, kThreeBoxes, {0.9, 0.8, 0.7}, limits(0, 0.5));
  EXPECT_EQ(got.shape(), (Shape{0, 3}));
  // The attribute's default is 0 too (ONNX's absent input).
  EXPECT_EQ(nms(1, 1, 3, kThreeBoxes, {0.9, 0.8, 0.7}, {}).shape(), (Shape{0, 3}));
}

TEST(Nms, BoxesOfZeroAreaSuppressNothing) {
  const std::vector<double> points = {1, 1, 1, 1, 1, 1, 1, 1};
  expect_rows(nms(1, 1, 2, points, {0.9, 0.8}, limits(5, 0.0)), {{0, 0, 0}, {0, 0, 1}});
}

TEST(Nms, InfersABoundedDynamicLeadingAxis) {
  const OpDef& op = op_named(kNms);
  std::vector<TensorDesc> in = {{{2, 5, 4}, DType::Float32}, {{2, 3, 5}, DType::Float32}};
  std::vector<TensorDesc> out = infer_op(op, in, limits(2, 0.5));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].bounded_outer);
  EXPECT_EQ(desc_str(out[0]), "Tensor[(<=12, 3), int64]");  // 2 batches * 3 classes * 2
  // max_output_boxes_per_class above N is capped at N: 2 * 3 * 5.
  EXPECT_EQ(desc_str(infer_op(op, in, limits(100, 0.5))[0]), "Tensor[(<=30, 3), int64]");
}

TEST(Nms, RejectsBadShapesAndAttributes) {
  const OpDef& op = op_named(kNms);
  TensorDesc boxes{{1, 3, 4}, DType::Float32}, scores{{1, 2, 3}, DType::Float32};
  expect_error([&] { infer_op(op, {{{1, 3, 5}, DType::Float32}, scores}, {}); }, "boxes must be (B, N, 4)");
  expect_error([&] { infer_op(op, {boxes, {{1, 2, 4}, DType::Float32}}, {}); }, "scores must be (B, C, N)");
  expect_error([&] { infer_op(op, {boxes, scores}, {{"iou_threshold", 1.5}}); }, "must be in [0, 1]");
  expect_error(
      [&] {
        infer_op(op, {boxes, scores}, {{"center_point_box", int64_t{2}}});
      },
      "'center_point_box' = 2");
  expect_error(
      [&] {
        infer_op(op, {boxes, scores}, {{"max_output_boxes_per_class", int64_t{-1}}});
      },
      "must be >= 0");
  expect_error(
      [&] {
        infer_op(op, {boxes, scores}, {{"score_threshold", std::vector<double>{0.1, 0.2}}});
      },
      "one value");
}

}  // namespace
}  // namespace kiln
