// simplify: constant folding and arithmetic identities.
//
// Rewrites integer and boolean arithmetic over constants to constants,
// x + 0, x - 0, x * 1, x * 0, x / 1 and 0 + x, 1 * x to x (or 0), and
// x / c * c + mod(x, c) to x; casts of constants; select and if with a
// constant condition; loops of extent 0 (removed) and extent 1 (the
// variable becomes the loop's min). Floating-point arithmetic is folded
// only for casts, since reassociating it changes results. Integer division
// and remainder by a positive constant use the ranges of the enclosing
// loops' variables: x / c is 0 and x mod c is x when 0 <= x < c, and
// (x / a) / b is x / (a * b) when x >= 0 (a fused loop over a batch of 1
// leaves such terms in every index). Integer vectors: operations on
// broadcasts are one broadcast, a ramp plus a broadcast is a ramp, and a
// ramp whose lanes share one quotient by c (its base a non-negative
// multiple of a divisor of c larger than its span) divides to a broadcast
// and takes its remainder as a ramp, so that a reshape's index taken apart
// again by a transpose reads whole vectors, not gathers.
// Requires a verified function; keeps it verified.
//
//   for %i from 0 extent 1 { %A[%i * 4 + 0] = %B[%i] }
// becomes
//   %A[0] = %B[0]
//
//   for %f from 0 extent 480 { %A[%f / 80 / 6 * 1000 + mod(%f, 80)] = ... }
// becomes
//   for %f from 0 extent 480 { %A[mod(%f, 80)] = ... }
#include <cstdlib>
#include <numeric>
#include <unordered_map>

#include "tir/mutator.h"
#include "tir/parallel.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

// Wraps a 64-bit result to the width of `t` (two's complement), as the code would.
int64_t wrap(int64_t v, DataType t) {
  if (t.bits >= 64) return v;
  uint64_t mask = (uint64_t(1) << t.bits) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (t.is_int() && (u >> (t.bits - 1)) & 1) u |= ~mask;
  return int64_t(u);
}

std::optional<int64_t> fold_int(BinaryOp op, int64_t a, int64_t b, DataType t) {
  switch (op) {
    case BinaryOp::Add:
      return wrap(int64_t(uint64_t(a) + uint64_t(b)), t);
    case BinaryOp::Sub:
      return wrap(int64_t(uint64_t(a) - uint64_t(b)), t);
    case BinaryOp::Mul:
      return wrap(int64_t(uint64_t(a) * uint64_t(b)), t);
    case BinaryOp::Div:
      if (b == 0 || (b == -1 && a == INT64_MIN)) return std::nullopt;  // left for run time
      return t.is_uint() ? int64_t(uint64_t(a) / uint64_t(b)) : a / b;
    case BinaryOp::Mod:
      if (b == 0 || b == -1) return std::nullopt;
      return t.is_uint() ? int64_t(uint64_t(a) % uint64_t(b)) : a % b;
    case BinaryOp::Min:
      return t.is_uint() ? int64_t(std::min(uint64_t(a), uint64_t(b))) : std::min(a, b);
    case BinaryOp::Max:
      return t.is_uint() ? int64_t(std::max(uint64_t(a), uint64_t(b))) : std::max(a, b);
    case BinaryOp::EQ:
      return a == b;
    case BinaryOp::NE:
      return a != b;
    case BinaryOp::LT:
      return t.is_uint() ? uint64_t(a) < uint64_t(b) : a < b;
    case BinaryOp::LE:
      return t.is_uint() ? uint64_t(a) <= uint64_t(b) : a <= b;
    case BinaryOp::GT:
      return t.is_uint() ? uint64_t(a) > uint64_t(b) : a > b;
    case BinaryOp::GE:
      return t.is_uint() ? uint64_t(a) >= uint64_t(b) : a >= b;
    case BinaryOp::And:
      return a && b;
    case BinaryOp::Or:
      return a || b;
    case BinaryOp::Shl:
      if (b < 0 || b >= t.bits) return std::nullopt;  // unspecified: left as it is
      return wrap(int64_t(uint64_t(a) << b), t);
    case BinaryOp::Shr:
      if (b < 0 || b >= t.bits) return std::nullopt;
      // An unsigned value is held zero-extended (wrap), so a logical shift of its bits.
      return t.is_uint() ? wrap(int64_t(uint64_t(a) >> b), t) : a >> b;
  }
  return std::nullopt;
}

bool is_scalar_int_like(const Expr& e) {
  return (e->dtype.is_integer() || e->dtype.is_bool()) && !e->dtype.is_vector();
}

// The constant an integer constant, or each lane of a broadcast of one, is.
std::optional<int64_t> lane_constant(const Expr& e) {
  if (auto* b = as<BroadcastNode>(e)) return as_const_int(b->value);
  return as_const_int(e);
}

// A constant every value of the scalar `e` is a multiple of: 0 for the
// constant 0 (any divides it), 1 when nothing is known.
int64_t known_divisor(const Expr& e) {
  constexpr int64_t kLimit = int64_t(1) << 30;
  if (auto c = as_const_int(e)) return *c < -kLimit || *c > kLimit ? 1 : std::abs(*c);
  auto* b = as<BinaryNode>(e);
  if (!b || e->dtype.is_vector()) return 1;
  if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub)
    return std::gcd(known_divisor(b->a), known_divisor(b->b));
  if (b->op != BinaryOp::Mul) return 1;
  const int64_t x = known_divisor(b->a), y = known_divisor(b->b);
  if (x == 0 || y == 0) return 0;
  return x <= kLimit / y ? x * y : std::max(x, y);
}

// x when `q` is x / c * c (or c * (x / c)) and `r` is mod(x, c), for one
// constant c: their sum, with division truncating, whatever the sign of x.
std::optional<Expr> recombined_quotient(const Expr& q, const Expr& r) {
  auto* mul = as<BinaryNode>(q);
  auto* mod = as<BinaryNode>(r);
  if (!mul || mul->op != BinaryOp::Mul || !mod || mod->op != BinaryOp::Mod) return std::nullopt;
  auto c = lane_constant(mod->b);
  if (!c || *c == 0) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto* div = as<BinaryNode>(side == 0 ? mul->a : mul->b);
    const Expr& k = side == 0 ? mul->b : mul->a;
    if (div && div->op == BinaryOp::Div && lane_constant(k) == c && lane_constant(div->b) == c &&
        structural_equal(div->a, mod->a))
      return div->a;
  }
  return std::nullopt;
}

// A closed interval of integer values.
struct Range {
  int64_t lo, hi;
};

class Simplifier : public Mutator {
 protected:
  // The values a signed integer expression can take, from the enclosing
  // loops' constant bounds; nullopt when unknown (or when bounds overflow).
  std::optional<Range> range_of(const Expr& e) const {
    if (!e->dtype.is_int() || e->dtype.is_vector()) return std::nullopt;
    if (auto c = as_const_int(e)) return Range{*c, *c};
    if (auto* v = as<VarNode>(e)) {
      auto it = loop_ranges_.find(v);
      if (it == loop_ranges_.end()) return std::nullopt;
      return it->second;
    }
    auto* b = as<BinaryNode>(e);
    if (!b) return std::nullopt;
    auto ra = range_of(b->a), rb = range_of(b->b);
    if (!ra || !rb) return std::nullopt;
    constexpr int64_t kLimit = int64_t(1) << 30;  // far from int32 overflow
    auto bounded = [&](Range r) -> std::optional<Range> {
      if (r.lo < -kLimit || r.hi > kLimit) return std::nullopt;
      return r;
    };
    switch (b->op) {
      case BinaryOp::Add:
        return bounded({ra->lo + rb->lo, ra->hi + rb->hi});
      case BinaryOp::Sub:
        return bounded({ra->lo - rb->hi, ra->hi - rb->lo});
      case BinaryOp::Mul:
        if (ra->lo < 0 || rb->lo < 0) return std::nullopt;
        return bounded({ra->lo * rb->lo, ra->hi * rb->hi});
      case BinaryOp::Div:
        if (ra->lo < 0 || rb->lo <= 0) return std::nullopt;
        return Range{ra->lo / rb->hi, ra->hi / rb->lo};
      case BinaryOp::Mod:
        if (ra->lo < 0 || rb->lo <= 0) return std::nullopt;
        return Range{0, std::min(ra->hi, rb->hi - 1)};
      default:
        return std::nullopt;
    }
  }

  // The values a scalar, or any lane of an integer ramp or broadcast, can take.
  std::optional<Range> lane_range(const Expr& e) const {
    if (!e->dtype.is_vector()) return range_of(e);
    if (auto* b = as<BroadcastNode>(e)) return range_of(b->value);
    auto* r = as<RampNode>(e);
    if (!r) return std::nullopt;
    auto base = range_of(r->base);
    auto stride = as_const_int(r->stride);
    if (!base || !stride) return std::nullopt;
    const int64_t span = *stride * (r->lanes - 1);
    return Range{base->lo + std::min<int64_t>(0, span), base->hi + std::max<int64_t>(0, span)};
  }

  // A comparison, min or max decided by its operands' ranges, for vectors
  // (ramps, broadcasts) in every lane: a padded input's bounds check over a
  // chunk of columns that lies inside the input, or over the columns of a
  // loop that partition-loops cut to the inside.
  std::optional<Expr> simplify_lanes(BinaryOp op, const Expr& a, const Expr& b, DataType t) const {
    if (op == BinaryOp::And && t.is_vector()) {
      auto truth = [](const Expr& x) -> std::optional<int64_t> {
        auto* bc = as<BroadcastNode>(x);
        return bc ? as_const_int(bc->value) : std::nullopt;
      };
      if (auto v = truth(a)) return *v ? b : a;
      if (auto v = truth(b)) return *v ? a : b;
      return std::nullopt;
    }
    auto ra = lane_range(a), rb = lane_range(b);
    if (!ra || !rb) return std::nullopt;
    if (op == BinaryOp::And || op == BinaryOp::Or) return std::nullopt;
    auto all = [&](bool v) {
      return t.is_vector() ? broadcast(int_imm(v, DataType::bool_()), t.lanes)
                           : int_imm(v, DataType::bool_());
    };
    switch (op) {
      case BinaryOp::Min:
        if (ra->hi <= rb->lo) return a;
        if (rb->hi <= ra->lo) return b;
        break;
      case BinaryOp::Max:
        if (ra->lo >= rb->hi) return a;
        if (rb->lo >= ra->hi) return b;
        break;
      case BinaryOp::LT:
        if (ra->hi < rb->lo) return all(true);
        if (ra->lo >= rb->hi) return all(false);
        break;
      case BinaryOp::LE:
        if (ra->hi <= rb->lo) return all(true);
        if (ra->lo > rb->hi) return all(false);
        break;
      case BinaryOp::GT:
        if (ra->lo > rb->hi) return all(true);
        if (ra->hi <= rb->lo) return all(false);
        break;
      case BinaryOp::GE:
        if (ra->lo >= rb->hi) return all(true);
        if (ra->hi < rb->lo) return all(false);
        break;
      default:
        break;
    }
    return std::nullopt;
  }

  // e / c when e is by its form a multiple of c: x * k with k a multiple
  // of c, a constant multiple of c, or a sum of those.
  std::optional<Expr> exact_quotient(const Expr& e, int64_t c, DataType t) const {
    if (auto v = as_const_int(e)) {
      if (*v % c == 0) return int_imm(*v / c, t);
      return std::nullopt;
    }
    auto* n = as<BinaryNode>(e);
    if (!n) return std::nullopt;
    if (n->op == BinaryOp::Mul) {
      for (int side = 0; side < 2; ++side) {
        auto k = as_const_int(side ? n->a : n->b);
        const Expr& x = side ? n->b : n->a;
        if (k && *k % c == 0) return *k == c ? x : binary(BinaryOp::Mul, x, int_imm(*k / c, t));
      }
      return std::nullopt;
    }
    if (n->op != BinaryOp::Add) return std::nullopt;
    auto qa = exact_quotient(n->a, c, t), qb = exact_quotient(n->b, c, t);
    if (!qa || !qb) return std::nullopt;
    return binary(BinaryOp::Add, *qa, *qb);
  }

  // x / c and x mod c for a positive constant c and x in a known range.
  std::optional<Expr> simplify_div_mod(BinaryOp op, const Expr& a, int64_t c, DataType t) const {
    if (c <= 0 || !t.is_int() || t.is_vector()) return std::nullopt;
    auto r = range_of(a);
    if (!r || r->lo < 0) return std::nullopt;
    if (r->hi < c) return op == BinaryOp::Div ? int_imm(0, t) : a;
    // A multiple of c plus a non-negative rest (a split loop's index
    // o * c + i, both in known ranges; or a loop split twice, (p * 4 + o)
    // * c + i, whose multiple is a sum of them):
    //   (x * k + y) / c == x * (k / c) + y / c,  (x * k + y) mod c == y mod c.
    if (auto* sum = as<BinaryNode>(a); sum && sum->op == BinaryOp::Add) {
      for (int side = 0; side < 2; ++side) {
        const Expr& x = side == 0 ? sum->a : sum->b;
        const Expr& y = side == 0 ? sum->b : sum->a;
        std::optional<Expr> q = exact_quotient(x, c, t);
        auto rx = range_of(x), ry = range_of(y);
        if (!q || !rx || !ry || rx->lo < 0 || ry->lo < 0) continue;
        Expr rest = mutate_const(binary(op, y, int_imm(c, t)));
        if (op == BinaryOp::Mod) return rest;
        return mutate_const(binary(BinaryOp::Add, *q, rest));
      }
    }
    if (op != BinaryOp::Div) return std::nullopt;
    // (x / a) / c == x / (a * c) for x >= 0.
    if (auto* inner = as<BinaryNode>(a); inner && inner->op == BinaryOp::Div)
      if (auto ia = as_const_int(inner->b); ia && *ia > 0 && *ia <= (int64_t(1) << 30) / c)
        return mutate_const(binary(BinaryOp::Div, inner->a, int_imm(*ia * c, t)));
    return std::nullopt;
  }

  // Integer vector forms: op(broadcast(x), broadcast(y)) is broadcast(op(x,
  // y)); ramp(b, s, n) + broadcast(x) is ramp(b + x, s, n) (and x + ramp,
  // ramp - x); ramp(b, s, n) / c and mod(ramp(b, s, n), c) are
  // broadcast(b / c) and ramp(mod(b, c), s, n) when no lane crosses a
  // multiple of c: b >= 0 is a multiple of d, a divisor of c, and the lanes
  // span fewer than d values; ramp(b / c, s / c, n) and broadcast(mod(b, c))
  // when s >= 0 is a multiple of c.
  std::optional<Expr> simplify_vector(BinaryOp op, const Expr& a, const Expr& b) const {
    if (!a->dtype.is_vector() || !a->dtype.is_integer()) return std::nullopt;
    const bool arithmetic = op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul ||
                            op == BinaryOp::Div || op == BinaryOp::Mod || op == BinaryOp::Min ||
                            op == BinaryOp::Max;
    if (!arithmetic) return std::nullopt;
    auto* ba = as<BroadcastNode>(a);
    auto* bb = as<BroadcastNode>(b);
    if (ba && bb) return broadcast(mutate_const(binary(op, ba->value, bb->value)), a->dtype.lanes);
    auto* ra = as<RampNode>(a);
    auto* rb = as<RampNode>(b);
    if (op == BinaryOp::Add && ra && bb)
      return ramp(mutate_const(binary(BinaryOp::Add, ra->base, bb->value)), ra->stride, ra->lanes);
    if (op == BinaryOp::Add && ba && rb)
      return ramp(mutate_const(binary(BinaryOp::Add, ba->value, rb->base)), rb->stride, rb->lanes);
    if (op == BinaryOp::Sub && ra && bb)
      return ramp(mutate_const(binary(BinaryOp::Sub, ra->base, bb->value)), ra->stride, ra->lanes);
    if ((op == BinaryOp::Div || op == BinaryOp::Mod) && ra && bb && a->dtype.is_int()) {
      auto c = as_const_int(bb->value);
      auto stride = as_const_int(ra->stride);
      auto base = range_of(ra->base);
      if (!c || *c <= 0 || !stride || *stride < 0 || !base || base->lo < 0) return std::nullopt;
      Expr scalar = mutate_const(binary(op, ra->base, bb->value));
      // A stride that is a multiple of c: every lane has b's remainder.
      if (*stride % *c == 0)
        return op == BinaryOp::Mod ? broadcast(scalar, ra->lanes)
                                   : ramp(scalar, int_imm(*stride / *c, ra->stride->dtype), ra->lanes);
      if (*stride * (ra->lanes - 1) >= std::gcd(known_divisor(ra->base), *c)) return std::nullopt;
      return op == BinaryOp::Div ? broadcast(scalar, ra->lanes) : ramp(scalar, ra->stride, ra->lanes);
    }
    return std::nullopt;
  }

  // Simplifies an expression built here once more (its parts are simplified).
  Expr mutate_const(const Expr& e) const { return const_cast<Simplifier*>(this)->mutate(e); }

  Expr mutate_Binary(const Expr& e, const BinaryNode& n) override {
    Expr a = mutate(n.a), b = mutate(n.b);
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca && cb && is_scalar_int_like(a))
      if (auto v = fold_int(n.op, *ca, *cb, a->dtype)) return int_imm(*v, n.dtype);
    if ((n.op == BinaryOp::Div || n.op == BinaryOp::Mod) && cb)
      if (auto s = simplify_div_mod(n.op, a, *cb, n.dtype)) return *s;
    if (auto s = simplify_vector(n.op, a, b)) return *s;
    if (n.op == BinaryOp::Add && a->dtype.is_integer()) {
      if (auto x = recombined_quotient(a, b)) return *x;
      if (auto x = recombined_quotient(b, a)) return *x;
    }
    if (auto s = simplify_lanes(n.op, a, b, n.dtype)) return *s;
    if (a->dtype.is_integer()) {
      switch (n.op) {
        case BinaryOp::Add:
          if (cb == 0) return a;
          if (ca == 0) return b;
          break;
        case BinaryOp::Sub:
          if (cb == 0) return a;
          break;
        case BinaryOp::Mul:
          if (cb == 1) return a;
          if (ca == 1) return b;
          if (cb == 0 || ca == 0) return int_imm(0, n.dtype);
          break;
        case BinaryOp::Div:
          if (cb == 1) return a;
          break;
        case BinaryOp::Mod:
          if (cb == 1) return int_imm(0, n.dtype);
          break;
        default:
          break;
      }
    }
    if (n.op == BinaryOp::And && a->dtype.is_bool()) {
      if (ca == 1) return b;
      if (cb == 1) return a;
      if (ca == 0 || cb == 0) return int_imm(0, n.dtype);
    }
    if (n.op == BinaryOp::Or && a->dtype.is_bool()) {
      if (ca == 0) return b;
      if (cb == 0) return a;
      if (ca == 1 || cb == 1) return int_imm(1, n.dtype);
    }
    if (a == n.a && b == n.b) return e;
    return binary(n.op, a, b);
  }

  Expr mutate_Not(const Expr& e, const NotNode& n) override {
    Expr a = mutate(n.a);
    if (auto c = as_const_int(a)) return int_imm(!*c, DataType::bool_());
    return a == n.a ? e : logical_not(a);
  }

  Expr mutate_Cast(const Expr& e, const CastNode& n) override {
    Expr v = mutate(n.value);
    if (n.dtype.is_vector()) return v == n.value ? e : cast(n.dtype, v);
    if (auto c = as_const_int(v)) {
      if (n.dtype.is_integer()) return int_imm(wrap(*c, n.dtype), n.dtype);
      if (n.dtype.is_bool()) return int_imm(*c != 0, n.dtype);
      if (n.dtype.is_float() && !v->dtype.is_uint()) return float_imm(double(*c), n.dtype);
    }
    if (auto* f = as<FloatImmNode>(v); f && n.dtype.is_float() && n.dtype.bits == 64)
      return float_imm(f->value, n.dtype);
    return v == n.value ? e : cast(n.dtype, v);
  }

  Expr mutate_Select(const Expr& e, const SelectNode& n) override {
    Expr c = mutate(n.cond);
    if (auto v = as_const_int(c)) return mutate(*v ? n.true_value : n.false_value);
    if (auto* all = as<BroadcastNode>(c))
      if (auto v = as_const_int(all->value)) return mutate(*v ? n.true_value : n.false_value);
    Expr t = mutate(n.true_value), f = mutate(n.false_value);
    if (c == n.cond && t == n.true_value && f == n.false_value) return e;
    return select(c, t, f);
  }

  Stmt mutate_IfThenElse(const Stmt& s, const IfThenElseNode& n) override {
    Expr c = mutate(n.cond);
    if (auto v = as_const_int(c)) {
      if (*v) return mutate(n.then_case);
      return n.else_case ? mutate(n.else_case) : seq({});
    }
    Stmt t = mutate(n.then_case);
    Stmt f = n.else_case ? mutate(n.else_case) : nullptr;
    if (c == n.cond && t == n.then_case && f == n.else_case) return s;
    return if_then_else(c, t, f);
  }

  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    Expr mn = mutate(n.min), ext = mutate(n.extent);
    if (auto e = as_const_int(ext); e && *e <= 0) return seq({});
    // A parallel loop that can return stays a loop: its returns end a task
    // and its failure check follows it (tir/parallel.h).
    bool keep_loop = n.for_kind == ForKind::Parallel && contains_return(n.body);
    if (is_const_int(ext, 1) && !keep_loop) return mutate(substitute(n.body, {{n.var.get(), mn}}));
    auto lo = as_const_int(mn), count = as_const_int(ext);
    if (lo && count) loop_ranges_[n.var.get()] = Range{*lo, *lo + *count - 1};
    Stmt body = mutate(n.body);
    loop_ranges_.erase(n.var.get());
    if (mn == n.min && ext == n.extent && body == n.body) return s;
    return for_loop(n.var, mn, ext, n.for_kind, body);
  }

  std::unordered_map<const VarNode*, Range> loop_ranges_;

  Stmt mutate_Seq(const Stmt& s, const SeqNode& n) override {
    // Rebuild through seq() so emptied statements disappear.
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& c : n.stmts) {
      Stmt m = mutate(c);
      changed |= m != c;
      if (auto* q = as<SeqNode>(m); q && q->stmts.empty()) continue;
      out.push_back(m);
    }
    return changed ? seq(std::move(out)) : s;
  }
};

}  // namespace

Expr simplify_expr(const Expr& e) { return Simplifier().mutate(e); }

Stmt simplify_stmt(const Stmt& s) { return Simplifier().mutate(s); }

PrimFunc simplify(const PrimFunc& f) { return Simplifier().mutate_function(f); }

}  // namespace kiln::tir
