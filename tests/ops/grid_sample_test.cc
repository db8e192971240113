// image.grid_sample (ONNX GridSample) against values worked out by hand
// from the definitions in src/op/grid_sample.cc.
#include <gtest/gtest.h>

#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

// x = [[1, 2, 3], [4, 5, 6]] (1 x 1 x 2 x 3), sampled at the (gx, gy) pairs.
std::vector<double> sample(const std::vector<double>& points, const std::string& mode,
                           const std::string& padding, int64_t align,
                           const Tensor& x = tensor_of({1, 1, 2, 3}, DType::Float32, {1, 2, 3, 4, 5, 6})) {
  Tensor grid = tensor_of({1, 1, int64_t(points.size() / 2), 2}, DType::Float32, points);
  return values(run1("image.grid_sample", {x, grid},
                     {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align}}));
}

TEST(GridSample, BilinearMapsTheGridToPixelsWithAndWithoutAlignedCorners) {
  // (0, 0) is the middle of the image either way: between rows 0 and 1 at column 1.
  EXPECT_EQ(sample({0, 0}, "bilinear", "zeros", 1), std::vector<double>{3.5});
  EXPECT_EQ(sample({0, 0}, "bilinear", "zeros", 0), std::vector<double>{3.5});
  // (-1, -1) with aligned corners is the center of the first pixel; without,
  // its outer corner (-0.5, -0.5): a quarter of pixel (0, 0), the rest zeros.
  EXPECT_EQ(sample({-1, -1}, "bilinear", "zeros", 1), std::vector<double>{1});
  EXPECT_EQ(sample({-1, -1}, "bilinear", "zeros", 0), std::vector<double>{0.25});
}

TEST(GridSample, PaddingModesDecideOutsideValues) {
  // (-1, -1) unaligned is (-0.5, -0.5): border and reflection both land on pixel (0, 0).
  EXPECT_EQ(sample({-1, -1}, "bilinear", "border", 0), std::vector<double>{1});
  EXPECT_EQ(sample({-1, -1}, "bilinear", "reflection", 0), std::vector<double>{1});
  // gx = 1.5 unaligned is column 3.25: border clamps it to 2 (value 3);
  // reflection mirrors it at 2.5 to 1.75 (2 * 0.25 + 3 * 0.75); zeros finds nothing there.
  EXPECT_EQ(sample({1.5, -1}, "bilinear", "border", 0), std::vector<double>{3});
  EXPECT_EQ(sample({1.5, -1}, "bilinear", "reflection", 0), std::vector<double>{2.75});
  EXPECT_EQ(sample({1.5, -1}, "bilinear", "zeros", 0), std::vector<double>{0});
}

TEST(GridSample, NearestRoundsHalvesToEven) {
  // Aligned: gx = 0.5 is column 1.5 (to 2), gx = -0.5 is column 0.5 (to 0); gy = 1 is row 1.
  EXPECT_EQ(sample({0.5, 1, -0.5, 1}, "nearest", "zeros", 1), (std::vector<double>{6, 4}));
}

TEST(GridSample, BicubicUsesSixteenNeighboursWithAMinusThreeQuarters) {
  // At a pixel center the cubic weights are 0, 1, 0, 0: the pixel itself.
  EXPECT_EQ(sample({0, -1}, "bicubic", "zeros", 1), std::vector<double>{2});
  // Halfway between columns 1 and 2 of [1, 4, 9, 16]: weights -0.09375,
  // 0.59375, 0.59375, -0.09375, so 0.59375 * 13 - 0.09375 * 17 = 6.125.
  Tensor squares = tensor_of({1, 1, 1, 4}, DType::Float32, {1, 4, 9, 16});
  auto got = sample({0, 0}, "bicubic", "zeros", 1, squares);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NEAR(got[0], 6.125, 1e-6);
  // opset 20's names for the modes.
  EXPECT_EQ(sample({0, -1}, "cubic", "zeros", 1), std::vector<double>{2});
  EXPECT_EQ(sample({0, 0}, "linear", "zeros", 1), std::vector<double>{3.5});
}

TEST(GridSample, BadInputsAndAttributesAreErrors) {
  Tensor x = tensor_of({1, 1, 2, 3}, DType::Float32, {1, 2, 3, 4, 5, 6});
  Tensor grid3 = tensor_of({1, 1, 1, 3}, DType::Float32, {0, 0, 0});
  expect_error([&] { run1("image.grid_sample", {x, grid3}); }, "input grid must be (N, H_out, W_out, 2)");
  Tensor grid = tensor_of({1, 1, 1, 2}, DType::Float32, {0, 0});
  expect_error(
      [&] {
        run1("image.grid_sample", {x, grid}, {{"mode", std::string("area")}});
      },
      "attribute 'mode' = \"area\" is not supported");
  expect_error(
      [&] {
        run1("image.grid_sample", {x, grid}, {{"padding_mode", std::string("wrap")}});
      },
      "attribute 'padding_mode' = \"wrap\" is not supported");
  Tensor x5 = tensor_of({1, 1, 1, 2, 3}, DType::Float32, {1, 2, 3, 4, 5, 6});
  expect_error([&] { run1("image.grid_sample", {x5, grid}); }, "volumetric inputs are not supported");
}

}  // namespace
}  // namespace kiln
