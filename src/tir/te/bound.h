// Integer bounds of index expressions, for compute_at's bound inference.
//
// A producer computed inside a consumer's loop needs, per axis, the range of
// indices the consumer reads while the loops outside the attach point stay
// fixed and the loops inside it run. An index like (io * 8 + ii) + 2, with
// io fixed and ii in [0, 8), spans [io * 8 + 2, io * 8 + 9]: the first index
// is an expression of the fixed loops and the extent (8) is a constant.
// Expressions are taken apart into affine forms (constant + sum of
// coefficient * term); what is not affine (i / 4, i mod 4, a load) stays
// whole as a term. Anything these rules cannot bound is nullopt, and the
// caller falls back to the whole axis.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tir/tir.h"

namespace kiln::tir::te {

// constant + sum of coefficient * term. Terms keep the order in which they
// first appear, so expressions built back print deterministically.
class Affine {
 public:
  Affine() = default;
  explicit Affine(int64_t constant) : constant_(constant) {}
  // Never fails: subexpressions that are not sums or products with a
  // constant become terms.
  static Affine of(const Expr& e);

  std::optional<int64_t> as_constant() const;
  int64_t constant() const { return constant_; }
  // The greatest common divisor of the coefficients (0 without terms).
  int64_t coefficient_gcd() const;
  // Whether every coefficient (not the constant) is a multiple of `c`.
  bool coefficients_divisible_by(int64_t c) const;
  // The terms divided by `c` (which divides every coefficient), constant 0.
  Affine terms_divided_by(int64_t c) const;

  Affine operator+(const Affine& o) const;
  Affine operator-(const Affine& o) const;
  Affine operator*(int64_t c) const;

  // The expression, of type `t`: terms first, then the constant.
  Expr to_expr(DataType t = DataType::int32()) const;

 private:
  struct Term {
    std::string key;  // structural, with variables by identity
    Expr expr;
    int64_t coefficient;
  };
  void add_term(const std::string& key, const Expr& e, int64_t coefficient);
  int64_t constant_ = 0;
  std::vector<Term> terms_;
};

// The smallest and largest value, inclusive.
struct Interval {
  Affine lo, hi;
  // hi - lo + 1 when that is a constant.
  std::optional<int64_t> extent() const;
};

// Loops that run (variable -> extent, from 0); every other variable is fixed.
using RangingVars = std::unordered_map<const VarNode*, int64_t>;

// The values `e` takes as the ranging loops run; nullopt when the rules
// cannot tell (a product of two ranging loops, a division by a variable).
// Indices are assumed non-negative, as in-bounds indices are.
std::optional<Interval> bound_of(const Expr& e, const RangingVars& ranging);

// The smallest interval holding both; nullopt when the bounds of the two do
// not differ by a constant.
std::optional<Interval> union_of(const Interval& a, const Interval& b);

// index - base, with terms that cancel removed: (io * 8 + ii + 1) - io * 8 is ii + 1.
Expr rebase_index(const Expr& index, const Expr& base);

}  // namespace kiln::tir::te
