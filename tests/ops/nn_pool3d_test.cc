// nn.max_pool3d, nn.avg_pool3d, nn.max_pool_with_indices and nn.max_unpool
// against hand-computed values, and the 3-D pools against the 2-D ones (an
// independent kernel) on inputs with a unit depth.
#include <gtest/gtest.h>

#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

using Ints = std::vector<int64_t>;

Tensor f32(const Shape& shape, const std::vector<double>& v) { return tensor_of(shape, DType::Float32, v); }

TEST(Pool3d, MaxAndAverageOverACube) {
  Tensor x = f32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_equal(run1("nn.max_pool3d", {x}, {{"pool_size", Ints{2, 2, 2}}}), {8});
  expect_equal(run1("nn.avg_pool3d", {x}, {{"pool_size", Ints{2, 2, 2}}}), {4.5});
  // A 1x2x1 window slides over H: planes z = 0, 1 and columns x = 0, 1.
  expect_equal(run1("nn.max_pool3d", {x}, {{"pool_size", Ints{1, 2, 1}}}), {3, 4, 7, 8});
}

TEST(Pool3d, PaddingCountIncludePadAndCeilMode) {
  Tensor x = f32({1, 1, 1, 1, 3}, {1, 2, 3});
  Attrs a{{"pool_size", Ints{1, 1, 2}}, {"strides", Ints{1, 1, 2}}, {"padding", Ints{0, 0, 1, 0, 0, 1}}};
  // Windows over W: {pad, 1} and {2, 3}.
  expect_equal(run1("nn.max_pool3d", {x}, a), {1, 3});
  expect_equal(run1("nn.avg_pool3d", {x}, a), {1, 2.5});
  Attrs cip = a;
  cip.set("count_include_pad", int64_t{1});
  expect_equal(run1("nn.avg_pool3d", {x}, cip), {0.5, 2.5});
  // ceil_mode keeps the last, partial window {5}.
  Tensor x5 = f32({1, 1, 1, 1, 5}, {1, 2, 3, 4, 5});
  Attrs c{{"pool_size", Ints{1, 1, 2}}, {"strides", Ints{1, 1, 2}}};
  expect_equal(run1("nn.avg_pool3d", {x5}, c), {1.5, 3.5});
  c.set("ceil_mode", int64_t{1});
  expect_equal(run1("nn.avg_pool3d", {x5}, c), {1.5, 3.5, 5});
  expect_equal(run1("nn.max_pool3d", {x5}, c), {2, 4, 5});
}

TEST(Pool3d, UnitDepthMatchesThe2dPools) {
  Tensor x = random_tensor({2, 3, 1, 7, 6}, DType::Float32, 5);
  Tensor x2 = tensor_of({2, 3, 7, 6}, DType::Float32, values(x));
  Attrs a3{{"pool_size", Ints{1, 3, 2}},
           {"strides", Ints{1, 2, 1}},
           {"padding", Ints{0, 1, 1, 0, 1, 0}},
           {"dilation", Ints{1, 1, 2}},
           {"ceil_mode", int64_t{1}}};
  Attrs a2{{"pool_size", Ints{3, 2}},
           {"strides", Ints{2, 1}},
           {"padding", Ints{1, 1, 1, 0}},
           {"dilation", Ints{1, 2}},
           {"ceil_mode", int64_t{1}}};
  expect_close(run1("nn.max_pool3d", {x}, a3), values(run1("nn.max_pool2d", {x2}, a2)), 0);
  a3.set("count_include_pad", int64_t{1});
  a2.set("count_include_pad", int64_t{1});
  expect_close(run1("nn.avg_pool3d", {x}, a3), values(run1("nn.avg_pool2d", {x2}, a2)), 1e-6);
}

TEST(Pool3d, IntegerAveragesRoundHalfAwayFromZero) {
  Tensor x = tensor_of({1, 1, 1, 1, 4}, DType::Int32, {1, 2, -1, -2});
  expect_equal(run1("nn.avg_pool3d", {x}, {{"pool_size", Ints{1, 1, 2}}, {"strides", Ints{1, 1, 2}}}),
               {2, -2});
}

std::vector<Tensor> pool_with_indices(const Tensor& x, const Attrs& attrs) {
  return run_op(op_named("nn.max_pool_with_indices"), {x}, attrs);
}

TEST(MaxPoolWithIndices, IndicesAreFlatPositionsInTheWholeInput) {
  // Channel 0 [[1, 5, 2], [4, 3, 6]], channel 1 its negation.
  Tensor x = f32({1, 2, 2, 3}, {1, 5, 2, 4, 3, 6, -1, -5, -2, -4, -3, -6});
  std::vector<Tensor> r = pool_with_indices(x, {{"pool_size", Ints{2, 2}}});
  expect_equal(r[0], {5, 6, -1, -2});
  EXPECT_EQ(r[1].dtype(), DType::Int64);
  // Row major: (0, 1) -> 1, (1, 2) -> 5; channel 1 adds 6: (0, 0) -> 6, (0, 2) -> 8.
  expect_equal(r[1], {1, 5, 6, 8});
  // Column major within a plane: y + H * x.
  r = pool_with_indices(x, {{"pool_size", Ints{2, 2}}, {"storage_order", int64_t{1}}});
  expect_equal(r[1], {2, 5, 6, 10});
}

TEST(MaxPoolWithIndices, ThreeDTiesAndPadding) {
  // (z, y, x): (0,0,0) = 1, (0,0,1) = 4, (1,0,0) = 3, (1,0,1) = 2.
  Tensor x = f32({1, 1, 2, 1, 2}, {1, 4, 3, 2});
  std::vector<Tensor> r = pool_with_indices(x, {{"pool_size", Ints{2, 1, 2}}});
  expect_equal(r[0], {4});
  expect_equal(r[1], {1});
  r = pool_with_indices(x, {{"pool_size", Ints{2, 1, 2}}, {"storage_order", int64_t{1}}});
  expect_equal(r[1], {2});  // z + D * (y + H * x) = 0 + 2 * 1
  // A tie goes to the first tap; padding never wins, even over negatives.
  r = pool_with_indices(f32({1, 1, 1, 2}, {3, 3}), {{"pool_size", Ints{1, 2}}});
  expect_equal(r[1], {0});
  r = pool_with_indices(f32({1, 1, 1, 2}, {-1, -2}), {{"pool_size", Ints{1, 2}}, {"padding", Ints{0, 1}}});
  expect_equal(r[0], {-1, -1, -2});
  expect_equal(r[1], {0, 0, 1});
}

TEST(MaxUnpool, ScattersValuesToTheirIndices) {
  Tensor x = f32({1, 1, 1, 2}, {5, 6});
  Tensor idx = tensor_of({1, 1, 1, 2}, DType::Int64, {1, 5});
  expect_equal(run1("nn.max_unpool", {x, idx}, {{"output_shape", Ints{1, 1, 2, 3}}}), {0, 5, 0, 0, 0, 6});
}

TEST(MaxUnpool, UndoesMaxPoolAtTheMaxima) {
  Tensor x = random_tensor({2, 3, 4, 6}, DType::Float32, 7);
  std::vector<Tensor> r = pool_with_indices(x, {{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  Tensor y = run1("nn.max_unpool", {r[0], r[1]}, {{"output_shape", Ints{2, 3, 4, 6}}});
  std::vector<double> xv = values(x), yv = values(y), iv = values(r[1]);
  double nonzero = 0;
  for (size_t i = 0; i < yv.size(); ++i) nonzero += yv[i] != 0;
  EXPECT_EQ(nonzero, static_cast<double>(iv.size()));
  for (double i : iv) EXPECT_EQ(yv[static_cast<size_t>(i)], xv[static_cast<size_t>(i)]);
}

TEST(Pool3d, BadShapesAndAttributesAreErrors) {
  Tensor x = f32({1, 1, 2, 2, 2}, std::vector<double>(8, 1));
  Tensor x4 = f32({1, 1, 2, 2}, std::vector<double>(4, 1));
  expect_error(
      [&] {
        run1("nn.max_pool3d", {x4}, {{"pool_size", Ints{2, 2}}});
      },
      "nn.max_pool3d: data must be 5-D (N, C, D, H, W)");
  expect_error([&] { run1("nn.avg_pool3d", {x}, {{"pool_size", Ints{2, 2}}}); }, "must have 3 values");
  expect_error(
      [&] {
        run1("nn.max_pool3d", {x}, {{"pool_size", Ints{3, 1, 1}}});
      },
      "larger than the padded input");
  expect_error(
      [&] {
        run1("nn.max_pool3d", {x}, {{"pool_size", Ints{1, 1, 1}}, {"padding", Ints{1, 1}}});
      },
      "must have 3 (symmetric) or 6 values");
  expect_error(
      [&] {
        run1("nn.avg_pool3d", {x}, {{"pool_size", Ints{1, 1, 1}}, {"count_include_pad", int64_t{2}}});
      },
      "'count_include_pad' = 2 must be 0 or 1");
  expect_error(
      [&] {
        pool_with_indices(x4, {{"pool_size", Ints{1, 1}}, {"storage_order", int64_t{2}}});
      },
      "'storage_order' = 2 must be 0 (row major) or 1 (column major)");
  expect_error(
      [&] {
        pool_with_indices(f32({1, 1, 2}, {1, 2}), {{"pool_size", Ints{1}}});
      },
      "data must be 4-D (N, C, H, W) or 5-D");
}

TEST(MaxUnpool, BadIndicesAndShapesAreErrors) {
  Tensor x = f32({1, 1, 1, 2}, {5, 6});
  Tensor idx = tensor_of({1, 1, 1, 2}, DType::Int64, {1, 7});
  expect_error(
      [&] {
        run1("nn.max_unpool", {x, idx}, {{"output_shape", Ints{1, 1, 2, 3}}});
      },
      "nn.max_unpool: index 7 at flat position 1 is outside the output (1, 1, 2, 3)");
  expect_error(
      [&] {
        run1("nn.max_unpool", {x, idx}, {{"output_shape", Ints{2, 1, 2, 3}}});
      },
      "must have the rank of data");
  Tensor idx3 = tensor_of({1, 1, 2}, DType::Int64, {0, 1});
  expect_error(
      [&] {
        run1("nn.max_unpool", {x, idx3}, {{"output_shape", Ints{1, 1, 2, 3}}});
      },
      "must have the shape of data");
  Tensor fidx = f32({1, 1, 1, 2}, {0, 1});
  expect_error(
      [&] {
        run1("nn.max_unpool", {x, fidx}, {{"output_shape", Ints{1, 1, 2, 3}}});
      },
      "indices has dtype float32");
}

}  // namespace
}  // namespace kiln
