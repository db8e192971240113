// image.roi_align (ONNX RoiAlign) against values worked out by hand from the
// definitions in src/op/roi_align.cc. The data [[1, 2], [3, 4]] is 1 + x + 2y,
// which bilinear sampling reproduces exactly inside the image.
#include <gtest/gtest.h>

#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

Tensor square() { return tensor_of({1, 1, 2, 2}, DType::Float32, {1, 2, 3, 4}); }

Tensor roi_align(const Tensor& x, const std::vector<double>& box, Attrs attrs, int64_t batch = 0) {
  Tensor rois = tensor_of({1, 4}, DType::Float32, box);
  Tensor bi = tensor_of({1}, DType::Int64, {static_cast<double>(batch)});
  return run1("image.roi_align", {x, rois, bi}, attrs);
}

TEST(RoiAlign, HalfPixelShiftsTheRegion) {
  // half_pixel: [0, 2] becomes [-0.5, 1.5], one sample at its center 0.5.
  Attrs a{{"sampling_ratio", int64_t{1}}};
  expect_close(roi_align(square(), {0, 0, 2, 2}, a), {2.5}, 1e-6);
  // output_half_pixel: no shift, the sample at (1, 1) is the last pixel.
  a.set("coordinate_transformation_mode", std::string("output_half_pixel"));
  expect_close(roi_align(square(), {0, 0, 2, 2}, a), {4}, 1e-6);
}

TEST(RoiAlign, AveragesAGridOfSamplesPerBin) {
  // [0, 1] unshifted with 2 x 2 samples at 0.25 and 0.75: mean x = mean y = 0.5.
  Attrs a{{"sampling_ratio", int64_t{2}},
          {"coordinate_transformation_mode", std::string("output_half_pixel")}};
  expect_close(roi_align(square(), {0, 0, 1, 1}, a), {2.5}, 1e-6);
  // Two bins along x over [0, 2]: sample x = 0.5 and 1.5 (clamped to the
  // last column 1), at y = 1 (the last row): 1 + 0.5 + 2 = 3.5 and 4.
  a.set("sampling_ratio", int64_t{1});
  a.set("output_width", int64_t{2});
  expect_close(roi_align(square(), {0, 0, 2, 2}, a), {3.5, 4}, 1e-6);
}

TEST(RoiAlign, AdaptiveSamplingAndSpatialScale) {
  // spatial_scale 0.5 maps [0, 4] to [0, 2], shifted to [-0.5, 1.5]; the
  // adaptive grid is ceil(2 / 1) = 2 per axis: samples at 0 and 1, the pixels.
  Attrs a{{"spatial_scale", 0.5}};
  expect_close(roi_align(square(), {0, 0, 4, 4}, a), {2.5}, 1e-6);
}

TEST(RoiAlign, SamplesOutsideTheImageContributeZero) {
  Attrs a{{"sampling_ratio", int64_t{1}},
          {"coordinate_transformation_mode", std::string("output_half_pixel")}};
  expect_close(roi_align(square(), {5, 5, 7, 7}, a), {0}, 1e-6);
  // x = -0.5 is less than a pixel outside: clamped to column 0 (at y = 0.5).
  expect_close(roi_align(square(), {-1, 0, 0, 1}, a), {2}, 1e-6);
}

TEST(RoiAlign, MaxTakesTheLargestWeightedPixelTerm) {
  // One sample at (0.5, 0.5): weights 0.25 each, terms 0.25, 0.5, 0.75, 1.
  Attrs a{{"sampling_ratio", int64_t{1}}, {"mode", std::string("max")}};
  expect_close(roi_align(square(), {0, 0, 2, 2}, a), {1}, 1e-6);
  // Samples at 0.25 / 0.75: the largest term is at (0.75, 0.75): 0.5625 * 4.
  a.set("sampling_ratio", int64_t{2});
  a.set("coordinate_transformation_mode", std::string("output_half_pixel"));
  expect_close(roi_align(square(), {0, 0, 1, 1}, a), {2.25}, 1e-6);
}

TEST(RoiAlign, BatchIndicesPickTheImage) {
  Tensor x = tensor_of({2, 1, 1, 1}, DType::Float32, {10, 20});
  Attrs a{{"sampling_ratio", int64_t{1}},
          {"coordinate_transformation_mode", std::string("output_half_pixel")}};
  expect_close(roi_align(x, {0, 0, 1, 1}, a, 1), {20}, 1e-6);
  expect_error(
      [&] {
        roi_align(x, {0, 0, 1, 1}, a, 2);
      },
      "image.roi_align: batch_indices[0] = 2 is outside the batch of 2 images");
}

TEST(RoiAlign, BadInputsAndAttributesAreErrors) {
  Tensor x = square();
  expect_error(
      [&] {
        roi_align(x, {0, 0, 1, 1}, {{"mode", std::string("min")}});
      },
      "attribute 'mode' = \"min\" is not supported");
  expect_error(
      [&] {
        roi_align(x, {0, 0, 1, 1}, {{"coordinate_transformation_mode", std::string("asymmetric")}});
      },
      "'coordinate_transformation_mode' = \"asymmetric\" is not supported");
  expect_error([&] { roi_align(x, {0, 0, 1, 1}, {{"output_height", int64_t{0}}}); }, "must be >= 1");
  expect_error(
      [&] {
        roi_align(x, {0, 0, 1, 1}, {{"sampling_ratio", int64_t{-1}}});
      },
      "'sampling_ratio' = -1");
  Tensor rois3 = tensor_of({1, 3}, DType::Float32, {0, 0, 1});
  Tensor bi = tensor_of({1}, DType::Int64, {0});
  expect_error([&] { run1("image.roi_align", {x, rois3, bi}); }, "rois must be (R, 4)");
  Tensor rois = tensor_of({1, 4}, DType::Float32, {0, 0, 1, 1});
  Tensor bi2 = tensor_of({2}, DType::Int64, {0, 0});
  expect_error([&] { run1("image.roi_align", {x, rois, bi2}); }, "batch_indices must be (R) with R = 1");
  Tensor x5 = tensor_of({1, 1, 1, 2, 2}, DType::Float32, {1, 2, 3, 4});
  expect_error([&] { run1("image.roi_align", {x5, rois, bi}); }, "data must be 4-D");
}

}  // namespace
}  // namespace kiln
