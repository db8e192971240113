// partition-loops: a serial loop whose body tests its variable against
// constants runs as up to three loops: the iterations before every test
// holds, those where all of them hold, and those after. simplify then
// decides the middle loop's tests and clamps from its variable's range, so
// its body runs without them (a channel-blocked conv's padded input: one
// 8-lane statement per column, each with its column's bounds check and
// clamped load; only the first and last columns need them).
//
// A test is a comparison (<, <=, >, >=) or a clamp (min, max) of a + b * v
// (v the loop variable, a and b integer constants, b not 0) against a
// constant. The middle range is where every comparison holds and every
// clamp leaves its operand as it is. Loops are cut only where that range
// holds at least two iterations and leaves some out, and only when the body
// defines nothing (a nested loop, a let, a buffer), which three copies
// could not share.
//
//   for %x from 0 extent 10 { %A[%x] = select(%x - 1 >= 0, %B[max(%x - 1, 0)], 0.0) }
// becomes
//   for %x_before from 0 extent 1 { ... %x_before ... }
//   for %x from 1 extent 9 { %A[%x] = select(%x - 1 >= 0, %B[max(%x - 1, 0)], 0.0) }
// and simplify folds the second loop's test and clamp.
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "tir/mutator.h"
#include "tir/te/bound.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

// `e` as constant + coefficient * v (te::Affine's sums and products with
// constants), the coefficient not 0; nullopt when `e` has any other term
// (another variable, a division) or none.
struct Linear {
  int64_t constant, coefficient;
};
std::optional<Linear> linear_in(const Expr& e, const Var& v) {
  if (!e->dtype.is_int() || e->dtype.is_vector()) return std::nullopt;
  constexpr int64_t kLimit = int64_t(1) << 30;  // far from overflow in the bounds below
  const te::Affine a = te::Affine::of(e);
  const int64_t g = a.coefficient_gcd();
  if (g == 0 || g > kLimit || std::abs(a.constant()) > kLimit) return std::nullopt;
  for (int64_t c : {g, -g})
    if ((a - te::Affine::of(v) * c).as_constant()) return Linear{a.constant(), c};
  return std::nullopt;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// The loop's iterations where every test in its body holds: [lo, hi].
class TestRange : public Visitor {
 public:
  TestRange(Var v, int64_t lo, int64_t hi) : v_(std::move(v)), lo_(lo), hi_(hi) {}
  int64_t lo() const { return lo_; }
  int64_t hi() const { return hi_; }
  bool found() const { return found_; }

 protected:
  void visit_Binary(const BinaryNode& n) override {
    Visitor::visit_Binary(n);
    // A vector test holds in every lane where it holds at both ends of
    // its ramp (a chunk of a padded row's columns).
    if (auto* r = as<RampNode>(n.a)) {
      auto* k = as<BroadcastNode>(n.b);
      auto stride = as_const_int(r->stride);
      if (!k || !stride) return;
      test(n.op, r->base, k->value);
      test(n.op, add(r->base, int_imm(*stride * (r->lanes - 1), r->base->dtype)), k->value);
      return;
    }
    test(n.op, n.a, n.b);
  }

 private:
  void test(BinaryOp op, const Expr& a, const Expr& b) {
    auto e = linear_in(a, v_);
    auto k = as_const_int(b);
    if (!e || !k) return;
    switch (op) {
      case BinaryOp::GE:
      case BinaryOp::Max:  // max(e, k) is e where e >= k
        at_least(*e, *k);
        break;
      case BinaryOp::GT:
        at_least(*e, *k + 1);
        break;
      case BinaryOp::LE:
      case BinaryOp::Min:  // min(e, k) is e where e <= k
        at_most(*e, *k);
        break;
      case BinaryOp::LT:
        at_most(*e, *k - 1);
        break;
      default:
        return;
    }
    found_ = true;
  }

  // constant + coefficient * v >= k
  void at_least(const Linear& e, int64_t k) {
    if (e.coefficient > 0)
      lo_ = std::max(lo_, ceil_div(k - e.constant, e.coefficient));
    else
      hi_ = std::min(hi_, floor_div(e.constant - k, -e.coefficient));
  }
  // constant + coefficient * v <= k
  void at_most(const Linear& e, int64_t k) {
    if (e.coefficient > 0)
      hi_ = std::min(hi_, floor_div(k - e.constant, e.coefficient));
    else
      lo_ = std::max(lo_, ceil_div(e.constant - k, -e.coefficient));
  }

  Var v_;
  int64_t lo_, hi_;
  bool found_ = false;
};

class Partitioner : public Mutator {
 protected:
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    Stmt m = Mutator::mutate_For(s, n);
    auto& f = static_cast<const ForNode&>(*m);
    auto min = as_const_int(f.min), extent = as_const_int(f.extent);
    if (f.for_kind != ForKind::Serial || !min || !extent || *extent < 3) return m;
    if (defines_names(f.body)) return m;
    const int64_t first = *min, last = *min + *extent - 1;
    TestRange range(f.var, first, last);
    range.visit(f.body);
    const int64_t lo = range.lo(), hi = range.hi();
    if (!range.found() || hi - lo < 1 || (lo == first && hi == last)) return m;
    std::vector<Stmt> parts;
    auto part = [&](int64_t from, int64_t to, const std::string& suffix) {
      if (to < from) return;
      Var v = suffix.empty() ? f.var : make_var(f.var->name + suffix, f.var->dtype);
      Stmt body = suffix.empty() ? f.body : substitute(f.body, {{f.var.get(), Expr(v)}});
      DataType t = f.var->dtype;
      parts.push_back(for_loop(v, int_imm(from, t), int_imm(to - from + 1, t), ForKind::Serial, body));
    };
    part(first, lo - 1, "_before");
    part(lo, hi, "");
    part(hi + 1, last, "_after");
    return seq(std::move(parts));
  }
};

}  // namespace

PrimFunc partition_loops(const PrimFunc& f) { return Partitioner().mutate_function(f); }

}  // namespace kiln::tir
