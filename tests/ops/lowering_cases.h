// The case generators of the lowering tests (lowering_test.cc): a case is
// one op's inputs, attributes and value ranges; a generator gives an op's
// cases from a seeded generator. The window ops' generators are in
// lowering_cases_windows.cc.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lowering_util.h"
#include "op_test_util.h"

namespace kiln::testing {

struct Case {
  Case(std::vector<TensorDesc> in_, Attrs attrs_ = {}, std::vector<std::pair<double, double>> ranges_ = {},
       double rtol_ = 2e-5)
      : in(std::move(in_)), attrs(std::move(attrs_)), ranges(std::move(ranges_)), rtol(rtol_) {}
  std::vector<TensorDesc> in;
  Attrs attrs;
  // Per input, the value range [lo, hi) of random values (floats) or
  // integers in [lo, hi]; default [-2, 2).
  std::vector<std::pair<double, double>> ranges;
  double rtol = 2e-5;  // times the largest reference magnitude, plus atol
  double atol = 1e-5;
};

using CaseGen = std::function<std::vector<Case>(Lcg&)>;

inline TensorDesc typed(Shape s, DType t) { return {std::move(s), t}; }

inline Shape random_shape(Lcg& r, size_t rank, int64_t lo = 1, int64_t hi = 6) {
  Shape s;
  for (size_t i = 0; i < rank; ++i) s.push_back(r.integer(lo, hi));
  return s;
}

// Generators of conv2d, conv2d_blocked, the 2-D pools and the 3-D windows.
std::map<std::string, CaseGen> window_generators();

}  // namespace kiln::testing
