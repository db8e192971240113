// nn.batch_norm and nn.pad against hand-computed values.
#include <cmath>

#include "op_test_util.h"

namespace kiln {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::expect_error;
using testing::run1;

std::vector<int64_t> ints(std::initializer_list<int64_t> v) { return v; }

TEST(NnBatchNorm, Axis1) {
  // (1, 2, 2): channel 0 has mean 1, var 4; channel 1 mean -1, var 0.25.
  Tensor x = Tensor::from_floats({1, 2, 2}, {3, 5, -1, 0});
  Tensor gamma = Tensor::from_floats({2}, {2, 1});
  Tensor beta = Tensor::from_floats({2}, {0.5f, -3});
  Tensor mean = Tensor::from_floats({2}, {1, -1});
  Tensor var = Tensor::from_floats({2}, {4, 0.25f});
  Tensor y = run1("nn.batch_norm", {x, gamma, beta, mean, var}, {{"epsilon", 0.0}});
  expect_close(y, {(3 - 1) / 2.0 * 2 + 0.5, (5 - 1) / 2.0 * 2 + 0.5, 0 / 0.5 - 3, 1 / 0.5 - 3}, 1e-6);
  // epsilon is added to the variance.
  Tensor ye = run1("nn.batch_norm", {x, gamma, beta, mean, var}, {{"epsilon", 5.0}});
  expect_close(ye, {2 / 3.0 * 2 + 0.5, 4 / 3.0 * 2 + 0.5, 0 - 3.0, 1 / std::sqrt(5.25) - 3}, 1e-6);
}

TEST(NnBatchNorm, NegativeAxis) {
  Tensor x = Tensor::from_floats({2, 2}, {1, 2, 3, 4});
  Tensor one = Tensor::from_floats({2}, {1, 1});
  Tensor zero = Tensor::from_floats({2}, {0, 0});
  Tensor mean = Tensor::from_floats({2}, {1, 10});
  Tensor y = run1("nn.batch_norm", {x, one, zero, mean, one}, {{"axis", int64_t{-1}}, {"epsilon", 0.0}});
  expect_close(y, {0, -8, 2, -6}, 1e-6);
}

TEST(NnBatchNorm, Float16) {
  auto half = [](const Shape& s, const std::vector<double>& v) {
    return testing::tensor_of(s, DType::Float16, v);
  };
  Tensor y = run1(
      "nn.batch_norm",
      {half({1, 2}, {3, 1}), half({2}, {2, 1}), half({2}, {0.5, 0}), half({2}, {1, 0}), half({2}, {4, 1})},
      {{"epsilon", 0.0}});
  EXPECT_EQ(y.dtype(), DType::Float16);
  expect_equal(y, {2.5, 1});
}

TEST(NnBatchNorm, Errors) {
  Tensor x = Tensor::zeros({1, 3, 2, 2}, DType::Float32);
  Tensor p3 = Tensor::zeros({3}, DType::Float32);
  expect_error(
      [&] {
        run1("nn.batch_norm", {x, p3, p3, Tensor::zeros({4}, DType::Float32), p3});
      },
      "nn.batch_norm: moving_mean has shape (4,); expected (3,) to match axis 1 of data (1, 3, 2, 2)");
  expect_error(
      [&] {
        run1("nn.batch_norm", {x, p3, p3, p3, p3}, {{"axis", int64_t{4}}});
      },
      "nn.batch_norm: attribute 'axis' = 4 is out of range for rank 4");
  expect_error([&] { run1("nn.batch_norm", {x, p3, p3, p3}); }, "nn.batch_norm takes 5 input(s), got 4");
}

TEST(NnPad, ConstantAsymmetric) {
  Tensor x = Tensor::from_floats({2, 2}, {1, 2, 3, 4});
  Tensor y = run1("nn.pad", {x}, {{"pad_width", ints({1, 0, 0, 2})}, {"pad_value", 9.0}});
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  expect_equal(y, {9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9});
}

TEST(NnPad, NegativeCrops) {
  Tensor x = Tensor::from_floats({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = run1("nn.pad", {x}, {{"pad_width", ints({0, -1, -1, 1})}});
  EXPECT_EQ(y.shape(), (Shape{1, 4}));
  expect_equal(y, {2, 3, 4, 0});
}

TEST(NnPad, EdgeAndReflect) {
  Tensor x = Tensor::from_floats({3}, {1, 2, 3});
  expect_equal(run1("nn.pad", {x}, {{"pad_width", ints({2, 2})}, {"mode", std::string("edge")}}),
               {1, 1, 1, 2, 3, 3, 3});
  expect_equal(run1("nn.pad", {x}, {{"pad_width", ints({2, 2})}, {"mode", std::string("reflect")}}),
               {3, 2, 1, 2, 3, 2, 1});
  Tensor m = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = run1("nn.pad", {m}, {{"pad_width", ints({1, 0, 1, 1})}, {"mode", std::string("reflect")}});
  EXPECT_EQ(r.shape(), (Shape{3, 5}));
  expect_equal(r, {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5});
  Tensor e = run1("nn.pad", {m}, {{"pad_width", ints({0, 1, 1, 0})}, {"mode", std::string("edge")}});
  expect_equal(e, {1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6});
}

TEST(NnPad, Int8PadValue) {
  Tensor x = Tensor::from_ints({2}, {-5, 7}, DType::Int8);
  Tensor y = run1("nn.pad", {x}, {{"pad_width", ints({1, 1})}, {"pad_value", -128.0}});
  EXPECT_EQ(y.dtype(), DType::Int8);
  expect_equal(y, {-128, -5, 7, -128});
}

TEST(NnPad, Errors) {
  Tensor x = Tensor::zeros({2, 3}, DType::Float32);
  expect_error(
      [&] {
        run1("nn.pad", {x}, {{"pad_width", ints({1, 1})}});
      },
      "nn.pad: attribute 'pad_width' has 2 values; expected 4 (a before/after pair for each axis of data (2, "
      "3))");
  expect_error(
      [&] {
        run1("nn.pad", {x}, {{"pad_width", ints({0, 0, 3, 0})}, {"mode", std::string("reflect")}});
      },
      "nn.pad: mode \"reflect\" needs padding smaller than the axis size, but axis 1 has size 3");
  expect_error(
      [&] {
        run1("nn.pad", {x}, {{"pad_width", ints({0, 0, 0, 0})}, {"mode", std::string("wrap")}});
      },
      "nn.pad: attribute 'mode' = \"wrap\" is not one of");
  expect_error(
      [&] {
        run1("nn.pad", {x}, {{"pad_width", ints({-2, -1, 0, 0})}});
      },
      "nn.pad: pad_width (-2, -1) crops more than the 2 elements of axis 0");
}

}  // namespace
}  // namespace kiln
