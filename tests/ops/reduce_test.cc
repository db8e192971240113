// Reductions and softmax against hand-computed values and a naive reduction
// written here (one pass per output element over an unravelled index).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "kiln/runtime/error.h"
#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

Attrs axes(std::vector<int64_t> a, int64_t keepdims = 0) { return {{"axis", a}, {"keepdims", keepdims}}; }

// Naive reduction: for each output element, visit every input element and
// keep those whose non-reduced coordinates match.
std::vector<double> naive_reduce(const Tensor& x, std::vector<int64_t> ax,
                                 const std::function<double(const std::vector<double>&)>& f) {
  size_t rank = x.shape().size();
  std::vector<bool> red(rank, ax.empty());
  for (int64_t a : ax) red[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(rank) : a)] = true;
  auto unravel = [&](int64_t k) {
    std::vector<int64_t> idx(rank);
    for (size_t i = rank; i-- > 0;) {
      idx[i] = k % x.shape()[i];
      k /= x.shape()[i];
    }
    return idx;
  };
  // Output keys: the kept coordinates, in row-major order of first appearance.
  std::vector<std::vector<int64_t>> keys;
  std::vector<std::vector<double>> groups;
  for (int64_t k = 0; k < x.numel(); ++k) {
    auto idx = unravel(k);
    std::vector<int64_t> key;
    for (size_t i = 0; i < rank; ++i)
      if (!red[i]) key.push_back(idx[i]);
    size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      groups.emplace_back();
    }
    groups[g].push_back(x.get_as_double(k));
  }
  std::vector<double> out;
  for (const auto& g : groups) out.push_back(f(g));
  return out;
}

double vsum(const std::vector<double>& v) {
  double s = 0;
  for (double d : v) s += d;
  return s;
}

TEST(Reduce, SumHandValues) {
  Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values(run1("sum", {x})), (std::vector<double>{21}));
  EXPECT_EQ(run1("sum", {x}).shape(), (Shape{}));
  EXPECT_EQ(values(run1("sum", {x}, axes({0}))), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(values(run1("sum", {x}, axes({1}))), (std::vector<double>{6, 15}));
  EXPECT_EQ(values(run1("sum", {x}, axes({-1}))), (std::vector<double>{6, 15}));
  Tensor k = run1("sum", {x}, axes({-1}, 1));
  EXPECT_EQ(k.shape(), (Shape{2, 1}));
  EXPECT_EQ(values(k), (std::vector<double>{6, 15}));
  Tensor all = run1("sum", {x}, axes({}, 1));
  EXPECT_EQ(all.shape(), (Shape{1, 1}));
  EXPECT_EQ(values(all), (std::vector<double>{21}));
  EXPECT_EQ(values(run1("mean", {x}, axes({0}))), (std::vector<double>{2.5, 3.5, 4.5}));
  EXPECT_EQ(values(run1("max", {x}, axes({1}))), (std::vector<double>{3, 6}));
  EXPECT_EQ(values(run1("min", {x}, axes({0}))), (std::vector<double>{1, 2, 3}));
}

TEST(Reduce, AgainstNaiveRank4) {
  Tensor x = Tensor::empty({2, 3, 4, 5}, DType::Float32);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_from_double(i, std::sin(0.37 * double(i)) * 10);
  std::vector<std::vector<int64_t>> cases = {{},     {0},    {1},      {3},          {-1},
                                             {0, 2}, {1, 3}, {-3, -1}, {0, 1, 2, 3}, {2, 0}};
  for (const auto& c : cases) {
    for (int64_t keep : {0, 1}) {
      Tensor s = run1("sum", {x}, axes(c, keep));
      auto want = naive_reduce(x, c, [](const std::vector<double>& g) { return double(float(vsum(g))); });
      auto got = values(s);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]);
      Tensor m = run1("mean", {x}, axes(c, keep));
      want = naive_reduce(x, c, [](const std::vector<double>& g) { return vsum(g) / double(g.size()); });
      got = values(m);
      for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]);
      EXPECT_EQ(values(run1("max", {x}, axes(c, keep))), naive_reduce(x, c, [](const std::vector<double>& g) {
                  return *std::max_element(g.begin(), g.end());
                }));
      EXPECT_EQ(values(run1("min", {x}, axes(c, keep))), naive_reduce(x, c, [](const std::vector<double>& g) {
                  return *std::min_element(g.begin(), g.end());
                }));
      // Shape: reduced axes dropped, or kept as 1.
      Shape want_shape;
      for (int64_t i = 0; i < 4; ++i) {
        bool r = c.empty();
        for (int64_t a : c) r = r || (a < 0 ? a + 4 : a) == i;
        if (!r)
          want_shape.push_back(x.shape()[size_t(i)]);
        else if (keep)
          want_shape.push_back(1);
      }
      EXPECT_EQ(s.shape(), want_shape);
    }
  }
}

TEST(Reduce, FloatSumAccumulatesInDouble) {
  // 2^24 + 1 + 1 + ... : float accumulation would get stuck at 2^24.
  std::vector<float> v(101, 1.0f);
  v[0] = 16777216.0f;
  Tensor x = Tensor::from_floats({101}, v);
  EXPECT_EQ(run1("sum", {x}).data<float>()[0], 16777316.0f);
}

TEST(Reduce, Integers) {
  Tensor x = Tensor::from_ints({2, 3}, {1, 2, 4, -1, -2, -4}, DType::Int32);
  Tensor s = run1("sum", {x}, axes({1}));
  EXPECT_EQ(s.dtype(), DType::Int32);
  EXPECT_EQ(values(s), (std::vector<double>{7, -7}));
  // mean: 7/3 = 2.33 -> 2, -7/3 -> -2; half away from zero: (1+2)/2 = 1.5 -> 2, -1.5 -> -2.
  EXPECT_EQ(values(run1("mean", {x}, axes({1}))), (std::vector<double>{2, -2}));
  Tensor h = Tensor::from_ints({2, 2}, {1, 2, -1, -2});
  EXPECT_EQ(values(run1("mean", {h}, axes({1}))), (std::vector<double>{2, -2}));
  Tensor t = Tensor::from_ints({1, 4}, {1, 1, 1, 2});  // 5/4 = 1.25 -> 1
  EXPECT_EQ(values(run1("mean", {t}, axes({1}))), (std::vector<double>{1}));
  // int32 sum wraps in int32.
  Tensor w = Tensor::from_ints({2}, {std::numeric_limits<int32_t>::max(), 1}, DType::Int32);
  EXPECT_EQ(run1("sum", {w}).data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  // int64 mean is exact even when the sum exceeds int64.
  int64_t big = std::numeric_limits<int64_t>::max();
  Tensor b = Tensor::zeros({2}, DType::Int64);  // from_ints goes through double: write directly
  b.data<int64_t>()[0] = big;
  b.data<int64_t>()[1] = big - 2;
  EXPECT_EQ(run1("mean", {b}).data<int64_t>()[0], big - 1);
  // max/min on int8 and uint8.
  Tensor i8 = Tensor::from_ints({4}, {-128, 5, 127, 0}, DType::Int8);
  EXPECT_EQ(values(run1("max", {i8})), (std::vector<double>{127}));
  EXPECT_EQ(values(run1("min", {i8})), (std::vector<double>{-128}));
  Tensor u8 = Tensor::from_ints({3}, {7, 255, 0}, DType::UInt8);
  EXPECT_EQ(values(run1("max", {u8})), (std::vector<double>{255}));
}

TEST(Reduce, NaNAndEmpty) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_floats({2, 2}, {nan, 1, 2, 3});
  Tensor mx = run1("max", {x}, axes({1}));
  EXPECT_TRUE(std::isnan(mx.data<float>()[0]));
  EXPECT_EQ(mx.data<float>()[1], 3.0f);
  Tensor mn = run1("min", {x}, axes({0}));
  EXPECT_TRUE(std::isnan(mn.data<float>()[0]));
  EXPECT_EQ(mn.data<float>()[1], 1.0f);
  Tensor e = Tensor::zeros({0, 3}, DType::Float32);
  EXPECT_EQ(values(run1("sum", {e}, axes({0}))), (std::vector<double>{0, 0, 0}));
  EXPECT_TRUE(std::isnan(run1("mean", {e}, axes({0})).data<float>()[0]));
  EXPECT_EQ(run1("max", {e}, axes({1})).shape(), (Shape{0}));
  expect_error([&] { run1("max", {e}, axes({0})); },
               "max: cannot reduce zero elements of Tensor[(0, 3), float32]");
}

TEST(Reduce, Float16) {
  Tensor x = Tensor::empty({3}, DType::Float16);
  for (int i = 0; i < 3; ++i) x.set_from_double(i, 1.5 * (i + 1));
  Tensor s = run1("sum", {x});
  EXPECT_EQ(s.dtype(), DType::Float16);
  EXPECT_EQ(values(s), (std::vector<double>{9}));
  EXPECT_EQ(values(run1("mean", {x})), (std::vector<double>{3}));
}

TEST(Reduce, Errors) {
  Tensor x = Tensor::zeros({2, 3}, DType::Float32);
  expect_error([&] { run1("sum", {x}, axes({2})); },
               "sum: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1)");
  expect_error([&] { run1("mean", {x}, axes({-3})); }, "mean: attribute 'axis' = -3 is out of range");
  expect_error([&] { run1("sum", {x}, axes({1, -1})); }, "sum: attribute 'axis' repeats axis 1");
  expect_error([&] { run1("sum", {x}, axes({0}, 2)); }, "sum: attribute 'keepdims' must be 0 or 1, got 2");
  expect_error([&] { run1("sum", {Tensor::zeros({2}, DType::Int8)}); },
               "sum: input x has dtype int8; expected one of float32, float16, float64, bfloat16, int16, "
               "uint16, int32, uint32, int64, uint64");
  expect_error([&] { run1("max", {Tensor::zeros({2}, DType::Bool)}); }, "max: input x has dtype bool");
  expect_error(
      [&] {
        run1("sum", {x}, {{"axis", int64_t{0}}});
      },
      "sum: attribute 'axis' must be a list of ints");
  expect_error([&] { run1("mean", {Tensor::zeros({0}, DType::Int32)}); },
               "mean: cannot reduce zero elements");
}

// ---- softmax ---------------------------------------------------------------

std::vector<double> naive_softmax(const std::vector<double>& row) {
  double m = *std::max_element(row.begin(), row.end()), s = 0;
  for (double v : row) s += std::exp(v - m);
  std::vector<double> out;
  for (double v : row) out.push_back(std::exp(v - m) / s);
  return out;
}

TEST(Softmax, HandValues) {
  Tensor x = Tensor::from_floats({1, 3}, {0, std::log(2.0f), std::log(5.0f)});
  Tensor y = run1("nn.softmax", {x});
  EXPECT_FLOAT_EQ(y.data<float>()[0], 0.125f);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 0.25f);
  EXPECT_FLOAT_EQ(y.data<float>()[2], 0.625f);
  Tensor l = run1("nn.log_softmax", {x});
  EXPECT_FLOAT_EQ(l.data<float>()[0], std::log(0.125f));
  EXPECT_FLOAT_EQ(l.data<float>()[2], std::log(0.625f));
}

TEST(Softmax, LargeInputsAreStable) {
  Tensor x = Tensor::from_floats({3}, {1000, 1000, -1000});
  Tensor y = run1("nn.softmax", {x});
  EXPECT_FLOAT_EQ(y.data<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 0.5f);
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  Tensor l = run1("nn.log_softmax", {x});
  EXPECT_FLOAT_EQ(l.data<float>()[0], -std::log(2.0f));
  EXPECT_FLOAT_EQ(l.data<float>()[2], -2000.0f - std::log(2.0f));
}

TEST(Softmax, EveryAxisAgainstNaive) {
  Shape shape = {2, 3, 4};
  Tensor x = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_from_double(i, std::cos(1.3 * double(i)) * 4);
  for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
    Tensor y = run1("nn.softmax", {x}, {{"axis", axis}});
    Tensor l = run1("nn.log_softmax", {x}, {{"axis", axis}});
    int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<int64_t> st = {12, 4, 1};
    // Visit each row along `a` by fixing the other two coordinates.
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          int64_t c[3] = {i, j, k};
          if (c[a] != 0) continue;
          std::vector<double> row;
          for (int64_t t = 0; t < shape[size_t(a)]; ++t) {
            c[a] = t;
            row.push_back(x.get_as_double(c[0] * st[0] + c[1] * st[1] + c[2] * st[2]));
          }
          auto want = naive_softmax(row);
          for (int64_t t = 0; t < shape[size_t(a)]; ++t) {
            c[a] = t;
            int64_t f = c[0] * st[0] + c[1] * st[1] + c[2] * st[2];
            EXPECT_FLOAT_EQ(y.data<float>()[f], float(want[size_t(t)])) << "axis " << axis;
            EXPECT_FLOAT_EQ(l.data<float>()[f], float(std::log(want[size_t(t)]))) << "axis " << axis;
          }
          c[a] = 0;
        }
  }
}

TEST(Softmax, Errors) {
  Tensor x = Tensor::zeros({2, 3}, DType::Float32);
  expect_error(
      [&] {
        run1("nn.softmax", {x}, {{"axis", int64_t{2}}});
      },
      "nn.softmax: attribute 'axis' = 2 is out of range for rank 2");
  expect_error([&] { run1("nn.log_softmax", {Tensor::zeros({2}, DType::Int32)}); },
               "nn.log_softmax: input x has dtype int32; expected one of float32, float16");
  expect_error([&] { run1("nn.softmax", {Tensor::zeros({}, DType::Float32)}); },
               "nn.softmax: input x must have rank >= 1");
}

// ---- prod ------------------------------------------------------------------

TEST(Reduce, ProdHandValuesAndNaive) {
  Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(run1("prod", {x}, axes({1})), {6, 120});
  expect_equal(run1("prod", {x}, axes({0}, 1)), {4, 10, 18});
  expect_equal(run1("prod", {x}), {720});
  // The product of nothing is 1.
  expect_equal(run1("prod", {Tensor::zeros({2, 0}, DType::Float32)}, axes({1})), {1, 1});
  // int32 wraps: 65536 * 65536 = 2^32 = 0 mod 2^32.
  expect_equal(run1("prod", {tensor_of({2}, DType::Int32, {65536, 65536})}), {0});
  expect_equal(run1("prod", {tensor_of({3}, DType::Int64, {-3, 5, 7})}), {-105});
  Tensor r = random_tensor({3, 4, 2}, DType::Float32, 9);
  auto vprod = [](const std::vector<double>& v) {
    double p = 1;
    for (double d : v) p *= d;
    return p;
  };
  for (auto ax : std::vector<std::vector<int64_t>>{{0}, {1, 2}, {-1}, {}})
    expect_close(run1("prod", {r}, axes(ax)), naive_reduce(r, ax, vprod), 1e-6);
  expect_error([&] { run1("prod", {tensor_of({1}, DType::Int8, {1})}); },
               "prod: input x has dtype int8; expected one of float32, float16, float64, bfloat16, int16, "
               "uint16, int32, uint32, int64, uint64");
}

// ---- argmax / argmin ---------------------------------------------------------

TEST(ArgMax, HandValuesTiesAndKeepdims) {
  // Rows [2, 7, 7] and [5, 1, 5]: argmax firsts 1 and 0, lasts 2 and 2.
  Tensor x = Tensor::from_floats({2, 3}, {2, 7, 7, 5, 1, 5});
  Tensor am = run1("argmax", {x}, {{"axis", int64_t{1}}});
  EXPECT_EQ(am.dtype(), DType::Int64);
  EXPECT_EQ(am.shape(), (Shape{2}));
  expect_equal(am, {1, 0});
  expect_equal(run1("argmax", {x}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}), {2, 2});
  expect_equal(run1("argmin", {x}, {{"axis", int64_t{-1}}}), {0, 1});
  expect_equal(run1("argmin", {x}, {{"axis", int64_t{0}}}), {0, 1, 1});
  Tensor k = run1("argmax", {x}, {{"axis", int64_t{0}}, {"keepdims", int64_t{1}}});
  EXPECT_EQ(k.shape(), (Shape{1, 3}));
  expect_equal(k, {1, 0, 0});
  // Columns of equal values: the first row, or the last one.
  Tensor ties = Tensor::from_floats({3, 2}, {3, 1, 3, 1, 3, 1});
  expect_equal(run1("argmin", {ties}, {{"axis", int64_t{0}}}), {0, 0});
  expect_equal(run1("argmin", {ties}, {{"axis", int64_t{0}}, {"select_last_index", int64_t{1}}}), {2, 2});
}

TEST(ArgMax, NaNWinsAndIntegers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor_of({5}, DType::Float32, {1, nan, 9, nan, -4});
  expect_equal(run1("argmax", {x}), {1});
  expect_equal(run1("argmin", {x}), {1});
  expect_equal(run1("argmax", {x}, {{"select_last_index", int64_t{1}}}), {3});
  // uint8 200 is the largest; int8 -128 the smallest.
  expect_equal(run1("argmax", {tensor_of({3}, DType::UInt8, {3, 200, 100})}), {1});
  expect_equal(run1("argmin", {tensor_of({3}, DType::Int8, {3, -128, 100})}), {1});
  Tensor h = tensor_of({2, 2}, DType::Float16, {0.5, -1, 0.25, 2});
  expect_equal(run1("argmax", {h}, {{"axis", int64_t{1}}}), {0, 1});
}

TEST(ArgMax, AgainstNaive) {
  Tensor x = random_tensor({3, 4, 5}, DType::Int32, 21);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int64_t last = 0; last < 2; ++last) {
      auto pick = [last](const std::vector<double>& v) {
        size_t best = 0;
        for (size_t i = 1; i < v.size(); ++i)
          if (v[i] > v[best] || (last && v[i] == v[best])) best = i;
        return static_cast<double>(best);
      };
      expect_equal(run1("argmax", {x}, {{"axis", axis}, {"select_last_index", last}}),
                   naive_reduce(x, {axis}, pick), "axis " + std::to_string(axis));
    }
}

TEST(ArgMax, Errors) {
  Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error(
      [&] {
        run1("argmax", {x}, {{"axis", int64_t{2}}});
      },
      "argmax: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1)");
  expect_error([&] { run1("argmin", {Tensor::from_floats({}, {1})}); },
               "argmin: input x must have rank >= 1");
  expect_error(
      [&] {
        run1("argmax", {Tensor::zeros({2, 0}, DType::Float32)}, {{"axis", int64_t{1}}});
      },
      "argmax: axis 1 of Tensor[(2, 0), float32] is empty");
  expect_error(
      [&] {
        run1("argmax", {x}, {{"keepdims", int64_t{2}}});
      },
      "argmax: attribute 'keepdims' must be 0 or 1, got 2");
  expect_error(
      [&] {
        run1("argmax", {tensor_of({2}, DType::Bool, {0, 1})});
      },
      "argmax: input x has dtype bool");
}

// ---- cumsum ------------------------------------------------------------------

TEST(CumSum, ModesHandValues) {
  Tensor x = Tensor::from_floats({5}, {1, 2, 3, 4, 5});
  expect_equal(run1("cumsum", {x}), {1, 3, 6, 10, 15});
  expect_equal(run1("cumsum", {x}, {{"exclusive", int64_t{1}}}), {0, 1, 3, 6, 10});
  expect_equal(run1("cumsum", {x}, {{"reverse", int64_t{1}}}), {15, 14, 12, 9, 5});
  expect_equal(run1("cumsum", {x}, {{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}), {14, 12, 9, 5, 0});
  // 2-D along each axis: [[1, 2, 3], [4, 5, 6]].
  Tensor m = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(run1("cumsum", {m}, {{"axis", int64_t{0}}}), {1, 2, 3, 5, 7, 9});
  expect_equal(run1("cumsum", {m}, {{"axis", int64_t{-1}}}), {1, 3, 6, 4, 9, 15});
  // int8 wraps: 100 + 100 = -56.
  expect_equal(run1("cumsum", {tensor_of({2}, DType::Int8, {100, 100})}), {100, -56});
  expect_equal(run1("cumsum", {tensor_of({3}, DType::Int64, {-5, 2, 10})}), {-5, -3, 7});
  expect_error(
      [&] {
        run1("cumsum", {m}, {{"axis", int64_t{2}}});
      },
      "cumsum: attribute 'axis' = 2 is out of range for rank 2");
  expect_error(
      [&] {
        run1("cumsum", {m}, {{"exclusive", int64_t{3}}});
      },
      "cumsum: attribute 'exclusive' must be 0 or 1, got 3");
}

TEST(CumSum, AgainstNaive) {
  Tensor x = random_tensor({3, 4, 2}, DType::Float32, 5);
  const Shape& s = x.shape();
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int64_t reverse = 0; reverse < 2; ++reverse)
      for (int64_t exclusive = 0; exclusive < 2; ++exclusive) {
        std::vector<double> want(static_cast<size_t>(x.numel()));
        std::vector<int64_t> st = {s[1] * s[2], s[2], 1};
        for (int64_t i = 0; i < s[0]; ++i)
          for (int64_t j = 0; j < s[1]; ++j)
            for (int64_t k = 0; k < s[2]; ++k) {
              std::vector<int64_t> at = {i, j, k};
              int64_t pos = at[static_cast<size_t>(axis)];
              double sum = 0;
              for (int64_t q = 0; q < s[static_cast<size_t>(axis)]; ++q) {
                bool in = reverse ? (exclusive ? q > pos : q >= pos) : (exclusive ? q < pos : q <= pos);
                if (!in) continue;
                std::vector<int64_t> src = at;
                src[static_cast<size_t>(axis)] = q;
                sum += x.get_as_double(src[0] * st[0] + src[1] * st[1] + src[2]);
              }
              want[static_cast<size_t>(i * st[0] + j * st[1] + k)] = sum;
            }
        expect_close(run1("cumsum", {x}, {{"axis", axis}, {"reverse", reverse}, {"exclusive", exclusive}}),
                     want, 1e-6);
      }
}

}  // namespace
}  // namespace kiln
