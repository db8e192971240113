// check-bounds: buffer indices and integer divisors, checked.
//
// Always (a build without the option too): an access at a constant index
// outside its buffer, or an integer division or remainder by the constant 0,
// is a compile-time kiln::Error naming the kernel, the buffer and the index.
// No run of such a statement could be right.
//
// With TirPassOptions::check_bounds (`--check-bounds`), every access whose
// index the pass cannot prove inside its dimension, and every integer
// division or remainder by a value it cannot prove non-zero, is preceded by a
// check. A failing check reports the kernel, the buffer, the dimension, the
// index and the extent through the runtime (KilnBackendIndexError, or
// KilnBackendCheckFailed for a divisor) and returns -1, which the caller
// turns into a kiln::Error; nothing is read or written out of bounds.
//
//   %B[%i] = %A[%A[%i]]
// becomes
//   if or(%A[%i] < 0, %A[%i] >= 4) {
//     evaluate call_extern<int32>("KilnBackendIndexError", "f", "A", 0, %A[%i], 4)
//     return -1
//   }
//   %B[%i] = %A[%A[%i]]
//
// Proofs use the ranges of loop variables with constant bounds and interval
// arithmetic over + - * / mod min max. An access in one arm of a select is
// checked only when that arm is chosen. Vector indices are checked at their
// first and last lanes (ramps) or their one value (broadcasts); other vector
// indices are not checked. A vectorized loop that gets a check inside becomes
// serial: the checks are for finding the fault, not for speed. The pass runs
// first in a build, so the allocation lowerings release buffers on the early
// returns it adds.
#include <algorithm>
#include <optional>

#include "tir/mutator.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

struct Interval {
  int64_t lo, hi;
};

// Bounds of scalar integer expressions from the ranges of the enclosing
// loops' variables; nullopt when unknown (or on overflow).
class RangeOf {
 public:
  void push(const VarNode* v, Interval r) { ranges_.push_back({v, r}); }
  void pop() { ranges_.pop_back(); }

  std::optional<Interval> operator()(const Expr& e) const {
    if (auto c = as_const_int(e)) return Interval{*c, *c};
    if (auto* v = as<VarNode>(e)) {
      for (auto it = ranges_.rbegin(); it != ranges_.rend(); ++it)
        if (it->first == v) return it->second;
      return std::nullopt;
    }
    if (auto* c = as<CastNode>(e))
      return c->dtype.is_int() && c->value->dtype.is_int() ? (*this)(c->value) : std::nullopt;
    auto* b = as<BinaryNode>(e);
    if (!b) return std::nullopt;
    auto x = (*this)(b->a);
    auto y = (*this)(b->b);
    if (!x || !y) return std::nullopt;
    int64_t lo = 0, hi = 0;
    switch (b->op) {
      case BinaryOp::Add:
        if (__builtin_add_overflow(x->lo, y->lo, &lo) || __builtin_add_overflow(x->hi, y->hi, &hi))
          return std::nullopt;
        return Interval{lo, hi};
      case BinaryOp::Sub:
        if (__builtin_sub_overflow(x->lo, y->hi, &lo) || __builtin_sub_overflow(x->hi, y->lo, &hi))
          return std::nullopt;
        return Interval{lo, hi};
      case BinaryOp::Mul: {
        int64_t p[4];
        if (__builtin_mul_overflow(x->lo, y->lo, &p[0]) || __builtin_mul_overflow(x->lo, y->hi, &p[1]) ||
            __builtin_mul_overflow(x->hi, y->lo, &p[2]) || __builtin_mul_overflow(x->hi, y->hi, &p[3]))
          return std::nullopt;
        return Interval{std::min({p[0], p[1], p[2], p[3]}), std::max({p[0], p[1], p[2], p[3]})};
      }
      case BinaryOp::Div:  // truncating; a positive constant divisor keeps the order
        if (y->lo != y->hi || y->lo <= 0) return std::nullopt;
        return Interval{x->lo / y->lo, x->hi / y->lo};
      case BinaryOp::Mod:
        if (y->lo != y->hi || y->lo <= 0 || x->lo < 0) return std::nullopt;
        if (x->hi < y->lo) return *x;
        return Interval{0, y->lo - 1};
      case BinaryOp::Min:
        return Interval{std::min(x->lo, y->lo), std::min(x->hi, y->hi)};
      case BinaryOp::Max:
        return Interval{std::max(x->lo, y->lo), std::max(x->hi, y->hi)};
      default:
        return std::nullopt;
    }
  }

 private:
  std::vector<std::pair<const VarNode*, Interval>> ranges_;
};

Expr as_int64(const Expr& e) {
  if (auto c = as_const_int(e)) return int_imm(*c, DataType::int64());
  return cast(DataType::int64(), e);
}

Expr logical_or(Expr a, Expr b) { return a ? binary(BinaryOp::Or, std::move(a), std::move(b)) : b; }
Expr logical_and(Expr a, Expr b) { return a ? binary(BinaryOp::And, std::move(a), std::move(b)) : b; }

class CheckBounds : public Mutator {
 public:
  CheckBounds(const PrimFuncNode& f, bool runtime_checks) : f_(f), runtime_checks_(runtime_checks) {}

 protected:
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode& n) override {
    std::vector<Stmt> checks;
    for (const Expr& i : n.indices) collect(i, nullptr, checks);
    collect(n.value, nullptr, checks);
    check_access(*n.buffer, n.indices, nullptr, checks);
    return guarded(s, std::move(checks));
  }
  Stmt mutate_Evaluate(const Stmt& s, const EvaluateNode& n) override {
    std::vector<Stmt> checks;
    collect(n.value, nullptr, checks);
    return guarded(s, std::move(checks));
  }
  Stmt mutate_Return(const Stmt& s, const ReturnNode& n) override {
    std::vector<Stmt> checks;
    collect(n.value, nullptr, checks);
    return guarded(s, std::move(checks));
  }
  Stmt mutate_LetStmt(const Stmt& s, const LetStmtNode& n) override {
    std::vector<Stmt> checks;
    collect(n.value, nullptr, checks);
    return guarded(Mutator::mutate_LetStmt(s, n), std::move(checks));
  }
  Stmt mutate_IfThenElse(const Stmt& s, const IfThenElseNode& n) override {
    std::vector<Stmt> checks;
    collect(n.cond, nullptr, checks);
    return guarded(Mutator::mutate_IfThenElse(s, n), std::move(checks));
  }
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    std::vector<Stmt> checks;
    collect(n.min, nullptr, checks);
    collect(n.extent, nullptr, checks);
    auto lo = as_const_int(n.min);
    auto extent = as_const_int(n.extent);
    const bool ranged = lo && extent && *extent >= 1;
    if (ranged) ranges_.push(n.var.get(), {*lo, *lo + *extent - 1});
    const int before = checks_added_;
    Stmt body = mutate(n.body);
    if (ranged) ranges_.pop();
    ForKind kind = n.for_kind;
    if (kind == ForKind::Vectorized && checks_added_ != before) kind = ForKind::Serial;
    Stmt loop = body == n.body && kind == n.for_kind ? s : for_loop(n.var, n.min, n.extent, kind, body);
    return guarded(loop, std::move(checks));
  }

 private:
  // Checks for the loads and divisions in `e` (inner ones first); `guard`
  // is the condition under which `e` is evaluated (null: always).
  void collect(const Expr& e, const Expr& guard, std::vector<Stmt>& out) {
    if (!e) return;
    if (auto* sel = as<SelectNode>(e)) {
      collect(sel->cond, guard, out);
      if (sel->cond->dtype.lanes == 1) {
        collect(sel->true_value, logical_and(guard, sel->cond), out);
        collect(sel->false_value, logical_and(guard, logical_not(sel->cond)), out);
      } else {
        collect(sel->true_value, guard, out);
        collect(sel->false_value, guard, out);
      }
      return;
    }
    if (auto* load = as<BufferLoadNode>(e)) {
      for (const Expr& i : load->indices) collect(i, guard, out);
      check_access(*load->buffer, load->indices, guard, out);
      return;
    }
    if (auto* b = as<BinaryNode>(e)) {
      collect(b->a, guard, out);
      collect(b->b, guard, out);
      if ((b->op == BinaryOp::Div || b->op == BinaryOp::Mod) && b->dtype.is_integer())
        check_divisor(*b, e, guard, out);
      return;
    }
    if (auto* n = as<NotNode>(e)) return collect(n->a, guard, out);
    if (auto* c = as<CastNode>(e)) return collect(c->value, guard, out);
    if (auto* c = as<CallNode>(e)) {
      for (const Expr& a : c->args) collect(a, guard, out);
      return;
    }
    if (auto* r = as<RampNode>(e)) {
      collect(r->base, guard, out);
      collect(r->stride, guard, out);
      return;
    }
    if (auto* b = as<BroadcastNode>(e)) collect(b->value, guard, out);
  }

  void check_access(const BufferNode& buf, const std::vector<Expr>& indices, const Expr& guard,
                    std::vector<Stmt>& out) {
    for (size_t d = 0; d < indices.size() && d < buf.shape.size(); ++d) {
      for (const Expr& index : lane_ends(indices[d])) {
        const Expr& extent = buf.shape[d];
        auto range = ranges_(index);
        auto ext = as_const_int(extent);
        if (range && ext && range->lo >= 0 && range->hi < *ext) continue;
        if (!guard && range && ext && range->lo == range->hi)
          throw Error("kernel @" + f_.name + ": buffer %" + buf.name + " is indexed at " +
                      std::to_string(range->lo) + " in dimension " + std::to_string(d) + ", outside [0, " +
                      std::to_string(*ext) + ")");
        if (!runtime_checks_ || index->dtype.lanes != 1) continue;
        Expr outside = logical_or(lt(as_int64(index), int_imm(0, DataType::int64())),
                                  binary(BinaryOp::GE, as_int64(index), as_int64(extent)));
        Expr report = call_extern(DataType::int32(), "KilnBackendIndexError",
                                  {string_imm(f_.name), string_imm(buf.name), int_imm(int64_t(d)),
                                   as_int64(index), as_int64(extent)});
        out.push_back(failure(logical_and(guard, outside), report));
      }
    }
  }

  // The lanes whose values bound a vector index; the index itself when scalar.
  static std::vector<Expr> lane_ends(const Expr& index) {
    if (auto* r = as<RampNode>(index))
      return {r->base, simplify_expr(add(r->base, mul(r->stride, int_imm(r->lanes - 1, r->stride->dtype))))};
    if (auto* b = as<BroadcastNode>(index)) return {b->value};
    return {index};
  }

  void check_divisor(const BinaryNode& b, const Expr& e, const Expr& guard, std::vector<Stmt>& out) {
    auto range = ranges_(b.b);
    if (range && (range->lo > 0 || range->hi < 0)) return;
    if (!guard && range && range->lo == 0 && range->hi == 0)
      throw Error("kernel @" + f_.name + ": integer " + (b.op == BinaryOp::Div ? "division" : "remainder") +
                  " by zero in " + print_expr(e));
    if (!runtime_checks_ || b.b->dtype.lanes != 1) return;
    const std::string message = "kernel @" + f_.name + ": integer " +
                                (b.op == BinaryOp::Div ? "division" : "remainder") +
                                " by zero: " + print_expr(b.b) + " is 0 in " + print_expr(e);
    Expr report = call_extern(DataType::int32(), "KilnBackendCheckFailed", {string_imm(message)});
    out.push_back(failure(logical_and(guard, eq(b.b, int_imm(0, b.b->dtype))), report));
  }

  Stmt failure(const Expr& cond, const Expr& report) {
    ++checks_added_;
    return if_then_else(cond, seq({evaluate(report), return_stmt(int_imm(-1))}));
  }

  static Stmt guarded(Stmt s, std::vector<Stmt> checks) {
    if (checks.empty()) return s;
    checks.push_back(std::move(s));
    return seq(std::move(checks));
  }

  const PrimFuncNode& f_;
  bool runtime_checks_;
  RangeOf ranges_;
  int checks_added_ = 0;
};

}  // namespace

PrimFunc check_bounds(const PrimFunc& f, const TirPassOptions& options) {
  return CheckBounds(*f, options.check_bounds).mutate_function(f);
}

}  // namespace kiln::tir
