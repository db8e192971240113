// Integer bounds of index expressions: affine forms and intervals.
#include "tir/te/bound.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "tir/mutator.h"

namespace kiln::tir::te {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

// Equal keys for structurally equal expressions; variables and buffers by
// identity, since names repeat across stages (every stage has an %i0).
std::string key_of(const Expr& e) {
  auto ptr = [](const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return std::string(buf);
  };
  switch (e->kind) {
    case ExprKind::IntImm:
      return std::to_string(static_cast<const IntImmNode&>(*e).value) + ":" + dtype_str(e->dtype);
    case ExprKind::Var:
      return "%" + ptr(e.get());
    case ExprKind::Binary: {
      auto& n = static_cast<const BinaryNode&>(*e);
      return std::string("(") + binary_op_text(n.op) + " " + key_of(n.a) + " " + key_of(n.b) + ")";
    }
    case ExprKind::Cast:
      return "cast<" + dtype_str(e->dtype) + ">(" + key_of(static_cast<const CastNode&>(*e).value) + ")";
    case ExprKind::BufferLoad: {
      auto& n = static_cast<const BufferLoadNode&>(*e);
      std::string k = "load " + ptr(n.buffer.get()) + "[";
      for (const Expr& i : n.indices) k += key_of(i) + ",";
      return k + "]";
    }
    case ExprKind::FloatImm:
    case ExprKind::StringImm:
    case ExprKind::Not:
    case ExprKind::Select:
    case ExprKind::Call:
    case ExprKind::Ramp:
    case ExprKind::Broadcast:
      break;
  }
  return "node " + ptr(e.get());  // compared by identity only
}

bool is_scalar_integer(const Expr& e) { return e->dtype.is_integer() && !e->dtype.is_vector(); }

class UsesRanging : public Visitor {
 public:
  explicit UsesRanging(const RangingVars& r) : ranging(r) {}
  const RangingVars& ranging;
  bool found = false;

 protected:
  void visit_Var(const VarNode& n) override { found = found || ranging.count(&n) > 0; }
};

bool uses_ranging(const Expr& e, const RangingVars& ranging) {
  UsesRanging u(ranging);
  u.visit(e);
  return u.found;
}

Interval point(const Affine& a) { return Interval{a, a}; }
Interval constant_interval(int64_t lo, int64_t hi) { return Interval{Affine(lo), Affine(hi)}; }

std::optional<Interval> scale(const Interval& x, int64_t c) {
  if (c >= 0) return Interval{x.lo * c, x.hi * c};
  return Interval{x.hi * c, x.lo * c};
}

std::optional<Interval> divide(const Interval& x, int64_t c, DataType t) {
  auto lo = x.lo.as_constant(), hi = x.hi.as_constant();
  if (lo && hi) return constant_interval(floor_div(*lo, c), floor_div(*hi, c));
  auto d = (x.hi - x.lo).as_constant();
  if (!d || *d < 0) return std::nullopt;
  if (x.lo.coefficients_divisible_by(c)) {
    Affine base = x.lo.terms_divided_by(c);
    return Interval{base + Affine(floor_div(x.lo.constant(), c)),
                    base + Affine(floor_div(x.lo.constant() + *d, c))};
  }
  // With x.lo = L + c0, L mod c is a multiple of g = gcd(coefficients, c),
  // so the quotient moves by at most the largest step over those remainders:
  // (8 fo + [0, 8)) / 16 is one value, (fo + [0, 8)) / 4 spans three.
  int64_t g = std::gcd(x.lo.coefficient_gcd(), c);
  int64_t spread = (*d + c - 1) / c;  // floor((x + d) / c) <= floor(x / c) + ceil(d / c)
  if (c / g <= 4096) {
    spread = 0;
    int64_t c0 = x.lo.constant();
    for (int64_t r = 0; r < c; r += g)
      spread = std::max(spread, floor_div(r + c0 + *d, c) - floor_div(r + c0, c));
  }
  Affine q = Affine::of(div(x.lo.to_expr(t), int_imm(c, t)));
  return Interval{q, q + Affine(spread)};
}

std::optional<Interval> modulo(const Interval& x, int64_t c) {
  Interval whole = constant_interval(0, c - 1);
  auto lo = x.lo.as_constant(), hi = x.hi.as_constant();
  if (lo && hi) {
    if (floor_div(*lo, c) != floor_div(*hi, c)) return whole;
    return constant_interval(floor_mod(*lo, c), floor_mod(*hi, c));
  }
  auto d = (x.hi - x.lo).as_constant();
  if (!d || !x.lo.coefficients_divisible_by(c)) return whole;
  int64_t r = floor_mod(x.lo.constant(), c);
  return r + *d < c ? constant_interval(r, r + *d) : whole;
}

// min(x, y) (or max): each bound is one of the operands' when they differ by
// a constant.
std::optional<Interval> min_max(const Interval& x, const Interval& y, bool is_min) {
  auto dlo = (x.lo - y.lo).as_constant(), dhi = (x.hi - y.hi).as_constant();
  if (!dlo || !dhi) return std::nullopt;
  bool x_lo = is_min ? *dlo <= 0 : *dlo >= 0;
  bool x_hi = is_min ? *dhi <= 0 : *dhi >= 0;
  return Interval{x_lo ? x.lo : y.lo, x_hi ? x.hi : y.hi};
}

std::optional<Interval> bound_binary(const BinaryNode& n, const RangingVars& ranging) {
  auto x = bound_of(n.a, ranging);
  auto y = bound_of(n.b, ranging);
  if (!x || !y) return std::nullopt;
  // y's value when its interval is one constant.
  std::optional<int64_t> y_const;
  if (auto lo = y->lo.as_constant(), hi = y->hi.as_constant(); lo && hi && *lo == *hi) y_const = *lo;
  switch (n.op) {
    case BinaryOp::Add:
      return Interval{x->lo + y->lo, x->hi + y->hi};
    case BinaryOp::Sub:
      return Interval{x->lo - y->hi, x->hi - y->lo};
    case BinaryOp::Mul: {
      if (y_const) return scale(*x, *y_const);
      auto x_lo = x->lo.as_constant();
      if (x_lo && x->hi.as_constant() == x_lo) return scale(*y, *x_lo);
      return std::nullopt;
    }
    case BinaryOp::Div:
      if (!y_const || *y_const <= 0) return std::nullopt;
      return divide(*x, *y_const, n.dtype);
    case BinaryOp::Mod:
      if (!y_const || *y_const <= 0) return std::nullopt;
      return modulo(*x, *y_const);
    case BinaryOp::Min:
      return min_max(*x, *y, true);
    case BinaryOp::Max:
      return min_max(*x, *y, false);
    case BinaryOp::EQ:
    case BinaryOp::NE:
    case BinaryOp::LT:
    case BinaryOp::LE:
    case BinaryOp::GT:
    case BinaryOp::GE:
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------- Affine

void Affine::add_term(const std::string& key, const Expr& e, int64_t coefficient) {
  auto it = std::find_if(terms_.begin(), terms_.end(), [&](const Term& t) { return t.key == key; });
  if (it == terms_.end()) {
    if (coefficient != 0) terms_.push_back(Term{key, e, coefficient});
    return;
  }
  it->coefficient += coefficient;
  if (it->coefficient == 0) terms_.erase(it);
}

Affine Affine::of(const Expr& e) {
  Affine out;
  DataType t = e->dtype;
  // Sums and products with a constant are taken apart; the rest are terms.
  auto walk = [&](auto& self, const Expr& x, int64_t coefficient) -> void {
    if (x->dtype == t && is_scalar_integer(x)) {
      if (auto* imm = as<IntImmNode>(x)) {
        out.constant_ += coefficient * imm->value;
        return;
      }
      if (auto* b = as<BinaryNode>(x)) {
        if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
          self(self, b->a, coefficient);
          self(self, b->b, b->op == BinaryOp::Add ? coefficient : -coefficient);
          return;
        }
        if (b->op == BinaryOp::Mul) {
          if (auto c = as<IntImmNode>(b->b)) return self(self, b->a, coefficient * c->value);
          if (auto c = as<IntImmNode>(b->a)) return self(self, b->b, coefficient * c->value);
        }
      }
    }
    out.add_term(key_of(x), x, coefficient);
  };
  walk(walk, e, 1);
  return out;
}

std::optional<int64_t> Affine::as_constant() const {
  if (!terms_.empty()) return std::nullopt;
  return constant_;
}

int64_t Affine::coefficient_gcd() const {
  int64_t g = 0;
  for (const Term& t : terms_) g = std::gcd(g, t.coefficient < 0 ? -t.coefficient : t.coefficient);
  return g;
}

bool Affine::coefficients_divisible_by(int64_t c) const {
  for (const Term& t : terms_)
    if (t.coefficient % c != 0) return false;
  return true;
}

Affine Affine::terms_divided_by(int64_t c) const {
  Affine out;
  for (const Term& t : terms_) out.terms_.push_back(Term{t.key, t.expr, t.coefficient / c});
  return out;
}

Affine Affine::operator+(const Affine& o) const {
  Affine out = *this;
  out.constant_ += o.constant_;
  for (const Term& t : o.terms_) out.add_term(t.key, t.expr, t.coefficient);
  return out;
}

Affine Affine::operator-(const Affine& o) const { return *this + o * -1; }

Affine Affine::operator*(int64_t c) const {
  if (c == 0) return Affine();
  Affine out = *this;
  out.constant_ *= c;
  for (Term& t : out.terms_) t.coefficient *= c;
  return out;
}

Expr Affine::to_expr(DataType t) const {
  Expr acc;
  for (const Term& term : terms_) {
    Expr x = cast(t, term.expr);
    int64_t c = term.coefficient;
    if (!acc) {
      acc = c == 1 ? x : mul(x, int_imm(c, t));
      continue;
    }
    Expr piece = c == 1 || c == -1 ? x : mul(x, int_imm(c < 0 ? -c : c, t));
    acc = c > 0 ? add(acc, piece) : sub(acc, piece);
  }
  if (!acc) return int_imm(constant_, t);
  if (constant_ > 0) return add(acc, int_imm(constant_, t));
  if (constant_ < 0) return sub(acc, int_imm(-constant_, t));
  return acc;
}

// ---------------------------------------------------------------- intervals

std::optional<int64_t> Interval::extent() const {
  auto d = (hi - lo).as_constant();
  if (!d) return std::nullopt;
  return *d + 1;
}

std::optional<Interval> bound_of(const Expr& e, const RangingVars& ranging) {
  if (!is_scalar_integer(e)) return std::nullopt;
  if (!uses_ranging(e, ranging)) return point(Affine::of(e));
  switch (e->kind) {
    case ExprKind::Var:
      return constant_interval(0, ranging.at(static_cast<const VarNode*>(e.get())) - 1);
    case ExprKind::Binary:
      return bound_binary(static_cast<const BinaryNode&>(*e), ranging);
    case ExprKind::Cast: {
      // Integer widening keeps the values; narrowing might wrap.
      const Expr& v = static_cast<const CastNode&>(*e).value;
      if (!is_scalar_integer(v) || v->dtype.bits > e->dtype.bits) return std::nullopt;
      auto x = bound_of(v, ranging);
      if (!x) return std::nullopt;
      auto lo = x->lo.as_constant(), hi = x->hi.as_constant();
      if (lo && hi) return x;  // affine forms of another type would not build back
      return std::nullopt;
    }
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::StringImm:
    case ExprKind::Not:
    case ExprKind::Select:
    case ExprKind::BufferLoad:
    case ExprKind::Call:
    case ExprKind::Ramp:
    case ExprKind::Broadcast:
      break;
  }
  return std::nullopt;
}

std::optional<Interval> union_of(const Interval& a, const Interval& b) {
  auto dlo = (a.lo - b.lo).as_constant(), dhi = (a.hi - b.hi).as_constant();
  if (!dlo || !dhi) return std::nullopt;
  return Interval{*dlo <= 0 ? a.lo : b.lo, *dhi >= 0 ? a.hi : b.hi};
}

Expr rebase_index(const Expr& index, const Expr& base) {
  if (is_const_int(base, 0)) return index;
  return (Affine::of(index) - Affine::of(base)).to_expr(index->dtype);
}

}  // namespace kiln::tir::te
