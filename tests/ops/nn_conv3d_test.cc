// nn.conv3d and nn.conv3d_transpose against hand-computed values, and
// against the 2-D ops (an independent kernel) on inputs with a unit depth.
#include <gtest/gtest.h>

#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

using Ints = std::vector<int64_t>;

Tensor f32(const Shape& shape, const std::vector<double>& v) { return tensor_of(shape, DType::Float32, v); }

// Drops axis 2 (a unit depth) of a 5-D tensor.
Tensor drop_depth(const Tensor& t) {
  const Shape& s = t.shape();
  return tensor_of({s[0], s[1], s[3], s[4]}, t.dtype(), values(t));
}

TEST(Conv3d, SumsTheWindowOverEveryAxis) {
  Tensor x = f32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor ones = f32({1, 1, 2, 2, 2}, std::vector<double>(8, 1));
  expect_equal(run1("nn.conv3d", {x, ones}), {36});
  // Symmetric padding 1: a 3x3x3 output whose corner sees only x[0,0,0]
  // and whose center sees all of x.
  Tensor y = run1("nn.conv3d", {x, ones}, {{"padding", Ints{1, 1, 1}}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 3, 3}));
  std::vector<double> v = values(y);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[13], 36);
  EXPECT_EQ(v[26], 8);
}

TEST(Conv3d, StridesDilationAndGroups) {
  Tensor x = f32({1, 1, 1, 1, 5}, {1, 2, 3, 4, 5});
  Tensor w = f32({1, 1, 1, 1, 2}, {1, 10});
  // Dilation 2 on W: x[i] + 10 x[i + 2].
  expect_equal(run1("nn.conv3d", {x, w}, {{"dilation", Ints{1, 1, 2}}}), {31, 42, 53});
  // Stride 2 on W: windows at 0 and 2.
  expect_equal(run1("nn.conv3d", {x, w}, {{"strides", Ints{1, 1, 2}}}), {21, 43});
  // Two groups of one channel each.
  Tensor x2 = f32({1, 2, 1, 1, 1}, {2, 3});
  Tensor w2 = f32({2, 1, 1, 1, 1}, {10, 100});
  expect_equal(run1("nn.conv3d", {x2, w2}, {{"groups", int64_t{2}}}), {20, 300});
}

TEST(Conv3d, UnitDepthMatchesConv2d) {
  Tensor x = random_tensor({2, 4, 1, 6, 7}, DType::Float32, 1);
  Tensor w = random_tensor({6, 2, 1, 3, 2}, DType::Float32, 2);
  Attrs a3{{"strides", Ints{1, 2, 1}}, {"padding", Ints{0, 1, 0, 0, 2, 1}}, {"groups", int64_t{2}}};
  Attrs a2{{"strides", Ints{2, 1}}, {"padding", Ints{1, 0, 2, 1}}, {"groups", int64_t{2}}};
  Tensor y3 = run1("nn.conv3d", {x, w}, a3);
  Tensor y2 = run1("nn.conv2d", {drop_depth(x), drop_depth(w)}, a2);
  expect_close(drop_depth(y3), values(y2), 1e-5);
}

TEST(Conv3d, IntegersAccumulateInInt32) {
  Tensor x = tensor_of({1, 1, 1, 1, 2}, DType::Int8, {100, 100});
  Tensor w = tensor_of({1, 1, 1, 1, 2}, DType::Int8, {100, 100});
  Tensor y = run1("nn.conv3d", {x, w});
  EXPECT_EQ(y.dtype(), DType::Int32);
  expect_equal(y, {20000});
}

TEST(Conv3dTranspose, ScattersEachInputThroughTheKernel) {
  Tensor x = f32({1, 1, 1, 1, 2}, {1, 2});
  Tensor w = f32({1, 1, 1, 1, 3}, {1, 10, 100});
  // Stride 2: x0 writes 1, 10, 100 at 0..2 and x1 writes 2, 20, 200 at 2..4.
  expect_equal(run1("nn.conv3d_transpose", {x, w}, {{"strides", Ints{1, 1, 2}}}), {1, 10, 102, 20, 200});
  // Padding crops the result; output_padding adds a zero at the end.
  expect_equal(
      run1("nn.conv3d_transpose", {x, w}, {{"strides", Ints{1, 1, 2}}, {"padding", Ints{0, 0, 1, 0, 0, 1}}}),
      {10, 102, 20});
  expect_equal(
      run1("nn.conv3d_transpose", {x, w}, {{"strides", Ints{1, 1, 2}}, {"output_padding", Ints{0, 0, 1}}}),
      {1, 10, 102, 20, 200, 0});
}

TEST(Conv3dTranspose, UnitDepthMatchesConv2dTranspose) {
  Tensor x = random_tensor({1, 4, 1, 5, 4}, DType::Float32, 3);
  Tensor w = random_tensor({4, 3, 1, 3, 2}, DType::Float32, 4);
  Attrs a3{{"strides", Ints{1, 2, 3}},
           {"dilation", Ints{1, 1, 2}},
           {"padding", Ints{0, 1, 0, 0, 0, 1}},
           {"groups", int64_t{2}},
           {"output_padding", Ints{0, 1, 0}}};
  Attrs a2{{"strides", Ints{2, 3}},
           {"dilation", Ints{1, 2}},
           {"padding", Ints{1, 0, 0, 1}},
           {"groups", int64_t{2}},
           {"output_padding", Ints{1, 0}}};
  Tensor y3 = run1("nn.conv3d_transpose", {x, w}, a3);
  Tensor y2 = run1("nn.conv2d_transpose", {drop_depth(x), drop_depth(w)}, a2);
  expect_close(drop_depth(y3), values(y2), 1e-5);
}

TEST(Conv3d, BadShapesAndAttributesAreErrors) {
  Tensor x = f32({1, 2, 2, 2, 2}, std::vector<double>(16, 1));
  Tensor w = f32({1, 2, 1, 1, 1}, {1, 1});
  Tensor w4 = f32({1, 2, 1, 1}, {1, 1});
  expect_error([&] { run1("nn.conv3d", {x, w4}); }, "nn.conv3d: weight must be 5-D");
  Tensor x4 = f32({1, 2, 2, 2}, std::vector<double>(8, 1));
  expect_error([&] { run1("nn.conv3d", {x4, w}); }, "nn.conv3d: data must be 5-D");
  Tensor w2 = f32({2, 2, 1, 1, 1}, {1, 1, 1, 1});
  expect_error([&] { run1("nn.conv3d", {x, w2}, {{"groups", int64_t{2}}}); }, "input channels per group");
  expect_error(
      [&] {
        run1("nn.conv3d", {x, w}, {{"strides", Ints{1, 1}}});
      },
      "'strides' = [1, 1] must have 3 values");
  expect_error(
      [&] {
        run1("nn.conv3d", {x, w}, {{"padding", Ints{1, 1}}});
      },
      "must have 3 (symmetric) or 6 values");
  Tensor big = f32({1, 2, 3, 1, 1}, std::vector<double>(6, 1));
  expect_error([&] { run1("nn.conv3d", {x, big}); }, "larger than the padded input");
  Tensor wt = f32({2, 1, 1, 1, 1}, {1, 1});
  expect_error(
      [&] {
        run1("nn.conv3d_transpose", {x, wt}, {{"output_padding", Ints{0, 0, 1}}});
      },
      "'output_padding' = [0, 0, 1] must be smaller than the stride or the dilation");
  expect_error([&] { run1("nn.conv3d_transpose", {x, w}); }, "weight has 1 input channels but data has 2");
}

}  // namespace
}  // namespace kiln
