// topk against hand-computed values and a naive selection written here
// (repeatedly picking the best remaining element of a lane).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

std::vector<Tensor> topk(const Tensor& x, int64_t k, int64_t axis = -1, int64_t largest = 1) {
  std::vector<Tensor> out = run_op(op_named("topk"), {x}, {{"k", k}, {"axis", axis}, {"largest", largest}});
  EXPECT_EQ(out.size(), 2u);
  return out;
}

TEST(TopK, HandValuesAndTies) {
  // Rows [1, 5, 3, 5] and [4, 4, 0, 2]: equal values keep ascending indices.
  Tensor x = Tensor::from_floats({2, 4}, {1, 5, 3, 5, 4, 4, 0, 2});
  std::vector<Tensor> out = topk(x, 3);
  const Tensor& v = out[0];
  const Tensor& i = out[1];
  EXPECT_EQ(v.shape(), (Shape{2, 3}));
  EXPECT_EQ(i.dtype(), DType::Int64);
  expect_equal(v, {5, 5, 3, 4, 4, 2});
  expect_equal(i, {1, 3, 2, 0, 1, 3});
  auto small = topk(x, 2, 1, 0);
  expect_equal(small[0], {1, 3, 0, 2});
  expect_equal(small[1], {0, 2, 2, 3});
  // Along axis 0: columns of two.
  auto col = topk(x, 1, 0);
  EXPECT_EQ(col[0].shape(), (Shape{1, 4}));
  expect_equal(col[0], {4, 5, 3, 5});
  expect_equal(col[1], {1, 0, 0, 0});
  // k = 0 gives empty results.
  EXPECT_EQ(topk(x, 0)[0].shape(), (Shape{2, 0}));
}

TEST(TopK, NaNOrdersAboveNumbers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor_of({4}, DType::Float32, {2, nan, 7, nan});
  auto big = topk(x, 3);
  EXPECT_TRUE(std::isnan(big[0].get_as_double(0)));
  EXPECT_TRUE(std::isnan(big[0].get_as_double(1)));
  EXPECT_EQ(big[0].get_as_double(2), 7);
  expect_equal(big[1], {1, 3, 2});
  auto small = topk(x, 4, -1, 0);
  expect_equal(small[1], {0, 2, 1, 3});
}

TEST(TopK, IntegersAgainstNaive) {
  Tensor x = random_tensor({3, 7, 2}, DType::Int8, 11);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int64_t largest = 0; largest < 2; ++largest) {
      int64_t n = x.shape()[static_cast<size_t>(axis)];
      int64_t k = n > 1 ? n - 1 : 1;
      auto out = topk(x, k, axis, largest);
      Shape os = x.shape();
      os[static_cast<size_t>(axis)] = k;
      EXPECT_EQ(out[0].shape(), os);
      EXPECT_EQ(out[0].dtype(), DType::Int8);
      std::vector<int64_t> xs = {14, 2, 1};  // strides of (3, 7, 2)
      std::vector<int64_t> ys = {os[1] * os[2], os[2], 1};
      for (int64_t a = 0; a < os[0]; ++a)
        for (int64_t b = 0; b < os[1]; ++b)
          for (int64_t c = 0; c < os[2]; ++c) {
            std::vector<int64_t> at = {a, b, c};
            int64_t r = at[static_cast<size_t>(axis)];
            // The lane's values, then the r-th pick: best value, lowest index among equals.
            std::vector<bool> used(static_cast<size_t>(n), false);
            int64_t pick = -1;
            for (int64_t step = 0; step <= r; ++step) {
              pick = -1;
              for (int64_t q = 0; q < n; ++q) {
                if (used[static_cast<size_t>(q)]) continue;
                std::vector<int64_t> src = at;
                src[static_cast<size_t>(axis)] = q;
                double v = x.get_as_double(src[0] * xs[0] + src[1] * xs[1] + src[2]);
                double best = 0;
                if (pick >= 0) {
                  src[static_cast<size_t>(axis)] = pick;
                  best = x.get_as_double(src[0] * xs[0] + src[1] * xs[1] + src[2]);
                }
                if (pick < 0 || (largest ? v > best : v < best)) pick = q;
              }
              used[static_cast<size_t>(pick)] = true;
            }
            int64_t o = a * ys[0] + b * ys[1] + c;
            std::vector<int64_t> src = at;
            src[static_cast<size_t>(axis)] = pick;
            EXPECT_EQ(out[1].get_as_double(o), pick) << "axis " << axis << " largest " << largest;
            EXPECT_EQ(out[0].get_as_double(o), x.get_as_double(src[0] * xs[0] + src[1] * xs[1] + src[2]));
          }
    }
}

TEST(TopK, Errors) {
  Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error([&] { topk(x, 4); },
               "topk: attribute 'k' = 4 is out of range for axis 1 of size 3 (expected 0..3)");
  expect_error([&] { topk(x, -1); }, "topk: attribute 'k' = -1 is out of range");
  expect_error([&] { topk(x, 1, 2); }, "topk: attribute 'axis' = 2 is out of range for rank 2");
  expect_error([&] { topk(x, 1, -1, 2); }, "topk: attribute 'largest' must be 0 or 1, got 2");
  expect_error([&] { run_op(op_named("topk"), {x}, {}); }, "topk: missing required attribute 'k'");
  expect_error([&] { topk(tensor_of({2}, DType::Bool, {1, 0}), 1); }, "topk: input x has dtype bool");
}

}  // namespace
}  // namespace kiln
