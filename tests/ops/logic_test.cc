// Comparisons and logic ops against hand-computed truth tables and a naive
// broadcasting loop written here (each output index unravelled and mapped to
// both inputs).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// out[i] = f(a[...], b[...]) with numpy broadcasting, one index at a time.
std::vector<double> naive(const Tensor& a, const Tensor& b, const Shape& out,
                          const std::function<bool(double, double)>& f) {
  auto at = [&](const Tensor& t, std::vector<int64_t> idx) {
    int64_t flat = 0;
    size_t off = out.size() - t.shape().size();
    for (size_t i = 0; i < t.shape().size(); ++i)
      flat = flat * t.shape()[i] + (t.shape()[i] == 1 ? 0 : idx[off + i]);
    return t.get_as_double(flat);
  };
  std::vector<double> r;
  for (int64_t k = 0; k < shape_numel(out); ++k) {
    std::vector<int64_t> idx(out.size());
    int64_t rem = k;
    for (size_t i = out.size(); i-- > 0;) {
      idx[i] = rem % out[i];
      rem /= out[i];
    }
    r.push_back(f(at(a, idx), at(b, idx)) ? 1.0 : 0.0);
  }
  return r;
}

TEST(Compare, HandComputed) {
  Tensor a = Tensor::from_floats({5}, {1, 2, 3, -1, 0});
  Tensor b = Tensor::from_floats({5}, {1, 3, 2, -1, -0.0f});
  Tensor eq = run1("equal", {a, b});
  EXPECT_EQ(eq.dtype(), DType::Bool);
  expect_equal(eq, {1, 0, 0, 1, 1});  // 0 == -0
  expect_equal(run1("not_equal", {a, b}), {0, 1, 1, 0, 0});
  expect_equal(run1("less", {a, b}), {0, 1, 0, 0, 0});
  expect_equal(run1("less_equal", {a, b}), {1, 1, 0, 1, 1});
  expect_equal(run1("greater", {a, b}), {0, 0, 1, 0, 0});
  expect_equal(run1("greater_equal", {a, b}), {1, 0, 1, 1, 1});
}

TEST(Compare, NaNAndInfinity) {
  Tensor a = tensor_of({4}, DType::Float32, {kNaN, kNaN, kInf, -kInf});
  Tensor b = tensor_of({4}, DType::Float32, {kNaN, 1, kInf, 0});
  expect_equal(run1("equal", {a, b}), {0, 0, 1, 0});
  expect_equal(run1("not_equal", {a, b}), {1, 1, 0, 1});
  expect_equal(run1("less", {a, b}), {0, 0, 0, 1});
  expect_equal(run1("greater_equal", {a, b}), {0, 0, 1, 0});
  // float16 compares the same way.
  Tensor h = tensor_of({3}, DType::Float16, {kNaN, 0.5, -2});
  expect_equal(run1("equal", {h, h}), {0, 1, 1});
}

TEST(Compare, IntegersAndBools) {
  // Values that differ only above float precision compare exactly.
  Tensor a = tensor_of({3}, DType::Int64, {0, 1, -5});
  a.data<int64_t>()[0] = (int64_t{1} << 53) + 1;
  Tensor b = tensor_of({3}, DType::Int64, {0, 1, 5});
  b.data<int64_t>()[0] = int64_t{1} << 53;
  expect_equal(run1("equal", {a, b}), {0, 1, 0});
  expect_equal(run1("greater", {a, b}), {1, 0, 0});
  Tensor u = tensor_of({2}, DType::UInt8, {200, 3});
  Tensor v = tensor_of({2}, DType::UInt8, {100, 3});
  expect_equal(run1("greater", {u, v}), {1, 0});  // 200 is not -56
  Tensor t = tensor_of({4}, DType::Bool, {0, 0, 1, 1});
  Tensor f = tensor_of({4}, DType::Bool, {0, 1, 0, 1});
  expect_equal(run1("equal", {t, f}), {1, 0, 0, 1});
  expect_equal(run1("not_equal", {t, f}), {0, 1, 1, 0});
}

TEST(Compare, BroadcastingAgainstNaive) {
  struct Case {
    Shape a, b, out;
  };
  std::vector<Case> cases = {{{2, 3}, {3}, {2, 3}},
                             {{4, 1, 3}, {2, 1}, {4, 2, 3}},
                             {{}, {2, 2}, {2, 2}},
                             {{2, 1, 4, 1}, {3, 1, 5}, {2, 3, 4, 5}}};
  std::vector<std::pair<std::string, std::function<bool(double, double)>>> ops = {
      {"equal", [](double x, double y) { return x == y; }},
      {"less", [](double x, double y) { return x < y; }},
      {"greater_equal", [](double x, double y) { return x >= y; }}};
  uint32_t seed = 1;
  for (const auto& c : cases)
    for (DType t : {DType::Int32, DType::Int8}) {
      Tensor a = random_tensor(c.a, t, seed++), b = random_tensor(c.b, t, seed++);
      // Small ranges so that equal is true often enough to matter.
      for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, std::fmod(a.get_as_double(i), 3));
      for (int64_t i = 0; i < b.numel(); ++i) b.set_from_double(i, std::fmod(b.get_as_double(i), 3));
      for (const auto& [name, f] : ops) {
        Tensor y = run1(name, {a, b});
        EXPECT_EQ(y.shape(), c.out) << name;
        expect_equal(y, naive(a, b, c.out, f), name + " " + shape_str(c.a) + " vs " + shape_str(c.b));
      }
    }
}

TEST(Compare, Errors) {
  Tensor f = Tensor::from_floats({2}, {1, 2});
  Tensor i = tensor_of({2}, DType::Int32, {1, 2});
  Tensor b = tensor_of({2}, DType::Bool, {1, 0});
  expect_error(
      [&] {
        run1("less", {f, i});
      },
      "less: inputs have different dtypes float32 and int32; insert an astype to match them");
  expect_error([&] { run1("greater", {b, b}); }, "greater: input 0 has dtype bool; expected one of float32");
  expect_error(
      [&] {
        run1("equal", {f, Tensor::from_floats({3}, {1, 2, 3})});
      },
      "equal: shapes (2,) and (3,) do not broadcast");
}

TEST(Logic, TruthTablesAndBroadcasting) {
  Tensor a = tensor_of({4}, DType::Bool, {0, 0, 1, 1});
  Tensor b = tensor_of({4}, DType::Bool, {0, 1, 0, 1});
  expect_equal(run1("logical_and", {a, b}), {0, 0, 0, 1});
  expect_equal(run1("logical_or", {a, b}), {0, 1, 1, 1});
  expect_equal(run1("logical_xor", {a, b}), {0, 1, 1, 0});
  Tensor n = run1("logical_not", {a});
  EXPECT_EQ(n.dtype(), DType::Bool);
  expect_equal(n, {1, 1, 0, 0});
  // (2, 1) with (3,): rows of a column against one row.
  Tensor col = tensor_of({2, 1}, DType::Bool, {1, 0});
  Tensor row = tensor_of({3}, DType::Bool, {1, 0, 1});
  Tensor y = run1("logical_xor", {col, row});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  expect_equal(y, {0, 1, 0, 1, 0, 1});
}

TEST(Logic, Errors) {
  Tensor f = Tensor::from_floats({2}, {1, 0});
  Tensor b = tensor_of({2}, DType::Bool, {1, 0});
  expect_error([&] { run1("logical_and", {b, f}); }, "logical_and: input 1 has dtype float32; expected bool");
  expect_error([&] { run1("logical_not", {f}); }, "logical_not: input x has dtype float32; expected bool");
  expect_error(
      [&] {
        run1("logical_or", {b, tensor_of({3}, DType::Bool, {1, 1, 1})});
      },
      "logical_or: shapes (2,) and (3,) do not broadcast");
}

}  // namespace
}  // namespace kiln
