// Shared helpers for all op tests (tests/ops/*_test.cc): running an op,
// building tensors from values, deterministic pseudo-random inputs, reading
// values back, value comparisons, and expecting errors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/runtime/error.h"
#include "kiln/runtime/tensor.h"
#include "op/op.h"

namespace kiln::testing {

inline const OpDef& op_named(const std::string& name) {
  const OpDef* op = find_op(name);
  if (!op) throw Error("test: op " + name + " is not registered");
  return *op;
}

// Runs an op and returns its only output.
inline Tensor run1(const std::string& name, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  std::vector<Tensor> out = run_op(op_named(name), inputs, attrs);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

// Deterministic values: a 32-bit LCG, so tests never depend on a library's RNG.
class Lcg {
 public:
  explicit Lcg(uint32_t seed) : state_(seed * 2654435761u + 1) {}
  uint32_t next() {
    state_ = state_ * 1664525u + 1013904223u;
    return state_ >> 8;
  }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * (next() / 16777216.0); }
  int64_t integer(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint32_t>(hi - lo + 1));
  }

 private:
  uint32_t state_;
};

// A tensor of the given dtype with values uniform in [-1, 1) for floats and
// in the dtype's range (or [-50, 50] for wide integers) otherwise.
inline Tensor random_tensor(const Shape& shape, DType dtype, uint32_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  Lcg rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v;
    switch (dtype) {
      case DType::Int8:
        v = static_cast<double>(rng.integer(-128, 127));
        break;
      case DType::UInt8:
        v = static_cast<double>(rng.integer(0, 255));
        break;
      case DType::Int32:
      case DType::Int64:
        v = static_cast<double>(rng.integer(-50, 50));
        break;
      case DType::Bool:
        v = static_cast<double>(rng.integer(0, 1));
        break;
      default:
        v = rng.uniform(-1, 1);
        break;
    }
    t.set_from_double(i, v);
  }
  return t;
}

// A tensor of the given shape and dtype holding `v` in row-major order.
inline Tensor tensor_of(const Shape& shape, DType dtype, const std::vector<double>& v) {
  Tensor t = Tensor::empty(shape, dtype);
  if (static_cast<int64_t>(v.size()) != t.numel())
    throw Error("test: tensor_of got " + std::to_string(v.size()) + " values for " +
                std::to_string(t.numel()) + " elements");
  for (size_t i = 0; i < v.size(); ++i) t.set_from_double(static_cast<int64_t>(i), v[i]);
  return t;
}

// All elements, converted to double, in row-major order.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_as_double(i);
  return v;
}

// Element-wise |a - b| <= tol * max(1, |b|).
inline void expect_close(const Tensor& actual, const std::vector<double>& expected, double tol,
                         const std::string& what = "") {
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size())) << what;
  int reported = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.get_as_double(i), e = expected[static_cast<size_t>(i)];
    if (std::fabs(a - e) > tol * std::max(1.0, std::fabs(e)) && reported++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << a << ", expected " << e;
  }
}

inline void expect_equal(const Tensor& actual, const std::vector<double>& expected,
                         const std::string& what = "") {
  expect_close(actual, expected, 0.0, what);
}

// Expects fn to throw kiln::Error whose message contains `needle`.
inline void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(needle), std::string::npos)
        << "message: " << e.message() << "\nexpected to contain: " << needle;
    return;
  }
  ADD_FAILURE() << "no kiln::Error thrown; expected one containing: " << needle;
}

}  // namespace kiln::testing
