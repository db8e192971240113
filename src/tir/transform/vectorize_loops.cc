// vectorize-loops: a `vectorized` loop of a constant extent becomes vector
// expressions, so the vector code does not depend on LLVM's loop vectorizer
// (which gives up on some loops, a register tile among them, and leaves them
// scalar).
//
// The loop variable becomes ramp(min, 1, lanes); expressions that do not
// depend on it stay scalar and are broadcast where they meet a vector. An
// index that is affine in the variable stays a ramp (a contiguous ramp is
// one vector load or store; another stride is a gather or scatter, lane by
// lane). A loop of up to four vector registers' lanes (a multiple of them)
// becomes one vector statement; another becomes a loop over chunks of two
// registers and a tail of whole registers and one shorter vector:
//
//   for %i from 0 extent 16 vectorized { %A[%j * 16 + %i] = %B[%i] * %c[%j] }
// becomes
//   %A[ramp(%j * 16, 1, 16)] = %B[ramp(0, 1, 16)] * broadcast(%c[%j], 16)
//
// A body that is one guarded statement, `if c { ... }` (the stores of a
// tile padded past the output's edge), becomes the vector statement under
// a scalar test that c holds at every lane (c of the lanes' form e < n, at
// the last lane), and the lanes one by one, each guarded, otherwise:
//
//   for %c from 0 extent 16 vectorized { if %o * 16 + %c < 6625 { %y[%o * 16 + %c] = ... } }
// becomes
//   if %o * 16 + 15 < 6625 { %y[ramp(%o * 16, 1, 16)] = ... }
//   else { for %c_lane from 0 extent 16 { if %o * 16 + %c_lane < 6625 { ... } } }
//
// A guard that reads no lane keeps only its vector statement.
//
// Loops whose body is not a sequence of stores and lets over loads,
// arithmetic, selects and pure intrinsics (an inner loop, a branch, an extern
// call, a store to an index that does not depend on the variable) are left
// as they are, with their hint for LLVM. So is every loop when the target's
// vector length is 0 (Hexagon: HVX code comes from hand-written kernels).
#include <cstdlib>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

// The widest element (bytes) the body loads or stores: it sets the lanes.
class WidestElement : public Visitor {
 public:
  int64_t bytes = 1;

 protected:
  void visit_BufferLoad(const BufferLoadNode& n) override {
    bytes = std::max(bytes, n.buffer->dtype.element().bytes());
    Visitor::visit_BufferLoad(n);
  }
  void visit_BufferStore(const BufferStoreNode& n) override {
    bytes = std::max(bytes, n.buffer->dtype.element().bytes());
    Visitor::visit_BufferStore(n);
  }
};

// Whether anything in a loop body is a float (a buffer's element, a cast's
// result, a constant).
class TouchesFloat : public Visitor {
 public:
  bool found = false;

 protected:
  void visit_BufferLoad(const BufferLoadNode& n) override {
    found = found || n.buffer->dtype.is_float();
    Visitor::visit_BufferLoad(n);
  }
  void visit_BufferStore(const BufferStoreNode& n) override {
    found = found || n.buffer->dtype.is_float();
    Visitor::visit_BufferStore(n);
  }
  void visit_Cast(const CastNode& n) override {
    found = found || n.dtype.is_float();
    Visitor::visit_Cast(n);
  }
  void visit_FloatImm(const FloatImmNode&) override { found = true; }
};

// Variables of loops that start at a constant >= 0: never negative.
class NonNegativeVars : public Visitor {
 public:
  std::unordered_set<const VarNode*> vars;

 protected:
  void visit_For(const ForNode& n) override {
    if (auto m = as_const_int(n.min); m && *m >= 0) vars.insert(n.var.get());
    Visitor::visit_For(n);
  }
};

using VarSet = std::unordered_set<const VarNode*>;

// Whether e >= 0 follows from its form (loop variables of `vars`, constants,
// and +, *, /, mod of such).
bool non_negative(const Expr& e, const VarSet& vars) {
  if (auto c = as_const_int(e)) return *c >= 0;
  if (auto* v = as<VarNode>(e)) return vars.count(v) > 0;
  if (auto* b = as<BinaryNode>(e)) {
    switch (b->op) {
      case BinaryOp::Add:
      case BinaryOp::Mul:
      case BinaryOp::Div:
      case BinaryOp::Mod:
      case BinaryOp::Min:
      case BinaryOp::Max:
        return non_negative(b->a, vars) && non_negative(b->b, vars);
      default:
        return false;
    }
  }
  return false;
}

// Whether e is a multiple of c > 0 by its form.
bool multiple_of(const Expr& e, int64_t c) {
  if (auto k = as_const_int(e)) return *k % c == 0;
  if (auto* b = as<BinaryNode>(e)) {
    if (b->op == BinaryOp::Mul) return multiple_of(b->a, c) || multiple_of(b->b, c);
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) return multiple_of(b->a, c) && multiple_of(b->b, c);
  }
  return false;
}

// Rewrites one loop body for `lanes` lanes; nullopt when it cannot.
class LaneRewriter {
 public:
  LaneRewriter(const VarNode* var, Expr lanes_value, int lanes, const VarSet& non_negative)
      : lanes_(lanes), non_negative_(non_negative) {
    vars_[var] = std::move(lanes_value);
  }

  std::optional<Stmt> stmt(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::BufferStore: {
        auto& n = static_cast<const BufferStoreNode&>(*s);
        if (n.indices.size() != 1 || n.buffer->dtype.is_vector()) return std::nullopt;
        auto index = expr(n.indices[0]);
        auto value = index ? expr(n.value) : std::nullopt;
        // A store to one place from every lane keeps the last lane's value:
        // not a vector store.
        if (!value || !(*index)->dtype.is_vector()) return std::nullopt;
        return store(n.buffer, {*index}, widen(*value));
      }
      case StmtKind::Seq: {
        std::vector<Stmt> out;
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) {
          auto v = stmt(c);
          if (!v) return std::nullopt;
          out.push_back(*v);
        }
        return seq(std::move(out));
      }
      case StmtKind::LetStmt: {
        auto& n = static_cast<const LetStmtNode&>(*s);
        auto value = expr(n.value);
        if (!value) return std::nullopt;
        Var v = n.var;
        if ((*value)->dtype.is_vector()) {
          v = make_var(n.var->name, (*value)->dtype);
          vars_[n.var.get()] = v;
        }
        auto body = stmt(n.body);
        if (!body) return std::nullopt;
        return let_stmt(v, *value, *body);
      }
      default:
        return std::nullopt;
    }
  }

  // Whether `cond` is the same at every lane (it reads no lane).
  bool uniform(const Expr& cond) {
    auto whole = expr(cond);
    return whole && !(*whole)->dtype.is_vector();
  }

  // A scalar that is true when `cond` holds at every lane, when its form
  // shows one: terms that do not depend on the lanes, e < b and e <= b with
  // e a ramp of a non-negative stride (true at every lane when true at the
  // last), e >= b and e > b (when true at the first), and conjunctions.
  std::optional<Expr> all_lanes(const Expr& cond) {
    auto whole = expr(cond);
    if (!whole) return std::nullopt;
    if (!(*whole)->dtype.is_vector()) return whole;
    auto* b = as<BinaryNode>(cond);
    if (!b) return std::nullopt;
    if (b->op == BinaryOp::And) {
      auto x = all_lanes(b->a), y = x ? all_lanes(b->b) : std::nullopt;
      if (!y) return std::nullopt;
      return binary(BinaryOp::And, *x, *y);
    }
    const bool upper = b->op == BinaryOp::LT || b->op == BinaryOp::LE;
    if (!upper && b->op != BinaryOp::GE && b->op != BinaryOp::GT) return std::nullopt;
    auto e = expr(b->a), bound = expr(b->b);
    if (!e || !bound || (*bound)->dtype.is_vector()) return std::nullopt;
    const RampNode* r = as_ramp(*e);
    auto stride = r ? as_const_int(r->stride) : std::nullopt;
    if (!stride || *stride < 0) return std::nullopt;
    Expr lane =
        upper ? simplify_expr(add(r->base, mul(r->stride, int_imm(lanes_ - 1, r->base->dtype)))) : r->base;
    return binary(b->op, lane, *bound);
  }

 private:
  Expr widen(const Expr& e) const { return e->dtype.is_vector() ? e : broadcast(e, lanes_); }

  static const RampNode* as_ramp(const Expr& e) { return as<RampNode>(e); }

  // Integer a op b where either side may be a ramp: stays a ramp when affine.
  std::optional<Expr> affine(BinaryOp op, const Expr& a, const Expr& b) const {
    const RampNode* ra = as_ramp(a);
    const RampNode* rb = as_ramp(b);
    bool sa = !a->dtype.is_vector(), sb = !b->dtype.is_vector();
    auto s = [](const Expr& e) { return simplify_expr(e); };
    if (op == BinaryOp::Add || op == BinaryOp::Sub) {
      if (ra && sb) return ramp(s(binary(op, ra->base, b)), ra->stride, lanes_);
      if (sa && rb) {
        Expr stride = op == BinaryOp::Add ? rb->stride : s(sub(int_imm(0, rb->stride->dtype), rb->stride));
        return ramp(s(binary(op, a, rb->base)), stride, lanes_);
      }
      if (ra && rb)
        return ramp(s(binary(op, ra->base, rb->base)), s(binary(op, ra->stride, rb->stride)), lanes_);
    }
    if (op == BinaryOp::Mul) {
      if (ra && sb) return ramp(s(mul(ra->base, b)), s(mul(ra->stride, b)), lanes_);
      if (sa && rb) return ramp(s(mul(a, rb->base)), s(mul(a, rb->stride)), lanes_);
    }
    return std::nullopt;
  }

  // ramp(b, s, n) / c and mod(ramp(b, s, n), c), b a non-negative multiple
  // of c and s >= 0: the scalar part apart from a pattern of constants per
  // lane (each lane b + l * s is non-negative, so truncation is floor):
  //   broadcast(b / c) + ramp(0, s, n) / c   and   mod(ramp(0, s, n), c)
  // (a transposed conv's input and weight indices). Codegen loads such an
  // index as one contiguous span and picks the lanes from it.
  std::optional<Expr> split_lanes(BinaryOp op, const Expr& a, const Expr& b) const {
    const RampNode* r = as_ramp(a);
    auto c = as_const_int(b);
    auto stride = r ? as_const_int(r->stride) : std::nullopt;
    if (!r || !c || *c <= 0 || !stride || *stride < 0 || (op != BinaryOp::Div && op != BinaryOp::Mod))
      return std::nullopt;
    if (!multiple_of(r->base, *c) || !non_negative(r->base, non_negative_)) return std::nullopt;
    Expr pattern = binary(op, ramp(int_imm(0, r->base->dtype), r->stride, lanes_), broadcast(b, lanes_));
    if (op == BinaryOp::Mod) return pattern;
    return add(broadcast(simplify_expr(div(r->base, b)), lanes_), pattern);
  }

  std::optional<Expr> expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::StringImm:
        return e;
      case ExprKind::Var: {
        auto it = vars_.find(static_cast<const VarNode*>(e.get()));
        return it == vars_.end() ? e : it->second;
      }
      case ExprKind::Binary: {
        auto& n = static_cast<const BinaryNode&>(*e);
        auto a = expr(n.a), b = a ? expr(n.b) : std::nullopt;
        if (!b) return std::nullopt;
        if (!(*a)->dtype.is_vector() && !(*b)->dtype.is_vector())
          return *a == n.a && *b == n.b ? e : binary(n.op, *a, *b);
        if (n.a->dtype.is_integer()) {
          if (auto r = affine(n.op, *a, *b)) return r;
          if (auto r = split_lanes(n.op, *a, *b)) return r;
        }
        return binary(n.op, widen(*a), widen(*b));
      }
      case ExprKind::Not: {
        auto a = expr(static_cast<const NotNode&>(*e).a);
        if (!a) return std::nullopt;
        return logical_not(*a);
      }
      case ExprKind::Cast: {
        auto& n = static_cast<const CastNode&>(*e);
        auto v = expr(n.value);
        if (!v) return std::nullopt;
        return cast(n.dtype.with_lanes((*v)->dtype.lanes), *v);
      }
      case ExprKind::Select: {
        auto& n = static_cast<const SelectNode&>(*e);
        auto c = expr(n.cond), t = c ? expr(n.true_value) : std::nullopt;
        auto f = t ? expr(n.false_value) : std::nullopt;
        if (!f) return std::nullopt;
        if (!(*c)->dtype.is_vector() && !(*t)->dtype.is_vector() && !(*f)->dtype.is_vector())
          return select(*c, *t, *f);
        return select(widen(*c), widen(*t), widen(*f));
      }
      case ExprKind::BufferLoad: {
        auto& n = static_cast<const BufferLoadNode&>(*e);
        if (n.indices.size() != 1 || n.buffer->dtype.is_vector()) return std::nullopt;
        auto index = expr(n.indices[0]);
        if (!index) return std::nullopt;
        return load(n.buffer, {*index});
      }
      case ExprKind::Call: {
        auto& n = static_cast<const CallNode&>(*e);
        if (n.call_kind != CallKind::Intrinsic) return std::nullopt;
        auto intrinsic = intrinsic_from_name(n.name);
        bool pure = intrinsic && *intrinsic != Intrinsic::ParallelStatus && *intrinsic != Intrinsic::IsNull &&
                    *intrinsic != Intrinsic::AddressOffset && *intrinsic != Intrinsic::Likely;
        std::vector<Expr> args;
        bool vector = false;
        for (const Expr& a : n.args) {
          auto v = expr(a);
          if (!v) return std::nullopt;
          vector = vector || (*v)->dtype.is_vector();
          args.push_back(*v);
        }
        if (!vector) return call_intrinsic(*intrinsic, args);
        if (!pure) return std::nullopt;
        for (Expr& a : args) a = widen(a);
        return call_intrinsic(*intrinsic, args);
      }
      case ExprKind::Ramp:
      case ExprKind::Broadcast:
        return std::nullopt;  // already vector code
    }
    return std::nullopt;
  }

  int lanes_;
  const VarSet& non_negative_;
  std::unordered_map<const VarNode*, Expr> vars_;
};

class LoopVectorizer : public Mutator {
 public:
  LoopVectorizer(const TirPassOptions& options, VarSet non_negative)
      : vector_bytes_(options.vector_bytes),
        vector_float_(options.vector_float),
        drop_hints_(options.drop_vector_hints),
        non_negative_(std::move(non_negative)) {}

 protected:
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    Stmt m = Mutator::mutate_For(s, n);
    auto& f = static_cast<const ForNode&>(*m);
    auto extent = as_const_int(f.extent);
    if (f.for_kind != ForKind::Vectorized) return m;
    auto serial = [&] { return drop_hints_ ? for_loop(f.var, f.min, f.extent, ForKind::Serial, f.body) : m; };
    if (!vector_float_) {
      TouchesFloat floats;
      floats.visit(f.body);
      if (floats.found) return for_loop(f.var, f.min, f.extent, ForKind::Serial, f.body);
    }
    if (vector_bytes_ <= 0 || !extent || *extent < 2) return serial();
    WidestElement widest;
    widest.visit(f.body);
    // Lanes of one vector register for the widest element.
    const int64_t lanes = std::max<int64_t>(2, vector_bytes_ / widest.bytes);
    auto body_at = [&](Expr first, int64_t n) -> std::optional<Stmt> {
      if (n == 1) return substitute(f.body, {{f.var.get(), first}});
      Expr step = int_imm(1, f.var->dtype);
      LaneRewriter lanes(f.var.get(), ramp(simplify_expr(first), step, int(n)), int(n), non_negative_);
      // A guarded body (the stores of a tile padded past the output's
      // edge): when the guard holds at every lane, one vector statement;
      // else the lanes one by one. A masked store instead is microcode on
      // AMD with AVX2 (vmaskmovps: a quarter of a padded product's time).
      if (auto* guard = as<IfThenElseNode>(f.body); guard && !guard->else_case) {
        auto all = lanes.all_lanes(guard->cond);
        auto vector = all ? lanes.stmt(guard->then_case) : std::nullopt;
        // A guard the same at every lane (a tile's row past the output's
        // last, over all its columns) leaves the lanes nothing to do when
        // it fails: no lane loop, whose branch would also keep an unrolled
        // loop around it rolled (a Winograd output's rows by phase).
        if (vector && lanes.uniform(guard->cond)) return if_then_else(simplify_expr(*all), *vector);
        if (vector) {
          Var lane = make_var(f.var->name + "_lane", f.var->dtype);
          Stmt one_by_one =
              for_loop(lane, int_imm(0, f.var->dtype), int_imm(n, f.var->dtype), ForKind::Serial,
                       substitute(f.body, {{f.var.get(), simplify_expr(add(first, lane))}}));
          return if_then_else(simplify_expr(*all), *vector, one_by_one);
        }
      }
      return lanes.stmt(f.body);
    };
    // Up to four whole registers: one statement.
    if (*extent % lanes == 0 && *extent <= 4 * lanes) return body_at(f.min, *extent).value_or(m);
    // Otherwise chunks of two registers (one for short loops), then the rest
    // in whole registers and one shorter vector, so every access but the
    // last starts at a multiple of the register's lanes.
    const int64_t chunk = *extent >= 2 * lanes ? 2 * lanes : lanes;
    std::vector<Stmt> out;
    if (*extent / chunk == 1) {
      auto once = body_at(f.min, chunk);
      if (!once) return m;
      out.push_back(*once);
    } else if (*extent >= chunk) {
      Var outer = make_var(f.var->name + "_chunk", f.var->dtype);
      non_negative_.insert(outer.get());
      auto chunk_body = body_at(add(f.min, mul(outer, int_imm(chunk, f.var->dtype))), chunk);
      if (!chunk_body) return m;
      // A few chunks are unrolled: at constant columns, a padded input's
      // bounds checks and clamps fold away (simplify) in all but the edges.
      out.push_back(for_loop(outer, int_imm(0, f.var->dtype), int_imm(*extent / chunk, f.var->dtype),
                             *extent / chunk <= 8 ? ForKind::Unrolled : ForKind::Serial, *chunk_body));
    }
    for (int64_t done = *extent / chunk * chunk; done < *extent;) {
      int64_t n = *extent - done >= lanes ? lanes : *extent - done;
      auto piece = body_at(add(f.min, int_imm(done, f.var->dtype)), n);
      if (!piece) return m;
      out.push_back(*piece);
      done += n;
    }
    return seq(std::move(out));
  }

 private:
  int64_t vector_bytes_;
  bool vector_float_;
  bool drop_hints_;
  VarSet non_negative_;
};

}  // namespace

PrimFunc vectorize_loops(const PrimFunc& f, const TirPassOptions& options) {
  if (options.vector_bytes <= 0 && options.vector_float && !options.drop_vector_hints) return f;
  NonNegativeVars loops;
  loops.visit(f->body);
  return LoopVectorizer(options, std::move(loops.vars)).mutate_function(f);
}

}  // namespace kiln::tir
