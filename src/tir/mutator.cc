#include "tir/mutator.h"

namespace kiln::tir {

// ---------------------------------------------------------------- visitor

void Visitor::visit(const Expr& e) {
  switch (e->kind) {
#define KILN_TIR_CASE(name)                           \
  case ExprKind::name:                                \
    visit_##name(static_cast<const name##Node&>(*e)); \
    return;
    KILN_TIR_EXPR_KINDS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
}

void Visitor::visit(const Stmt& s) {
  switch (s->kind) {
#define KILN_TIR_CASE(name)                           \
  case StmtKind::name:                                \
    visit_##name(static_cast<const name##Node&>(*s)); \
    return;
    KILN_TIR_STMT_KINDS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
}

void Visitor::visit_IntImm(const IntImmNode&) {}
void Visitor::visit_FloatImm(const FloatImmNode&) {}
void Visitor::visit_StringImm(const StringImmNode&) {}
void Visitor::visit_Var(const VarNode&) {}
void Visitor::visit_Binary(const BinaryNode& n) {
  visit(n.a);
  visit(n.b);
}
void Visitor::visit_Not(const NotNode& n) { visit(n.a); }
void Visitor::visit_Cast(const CastNode& n) { visit(n.value); }
void Visitor::visit_Select(const SelectNode& n) {
  visit(n.cond);
  visit(n.true_value);
  visit(n.false_value);
}
void Visitor::visit_BufferLoad(const BufferLoadNode& n) {
  for (auto& i : n.indices) visit(i);
}
void Visitor::visit_Call(const CallNode& n) {
  for (auto& a : n.args) visit(a);
}
void Visitor::visit_Ramp(const RampNode& n) {
  visit(n.base);
  visit(n.stride);
}
void Visitor::visit_Broadcast(const BroadcastNode& n) { visit(n.value); }
void Visitor::visit_For(const ForNode& n) {
  visit(n.min);
  visit(n.extent);
  visit(n.body);
}
void Visitor::visit_Allocate(const AllocateNode& n) { visit(n.body); }
void Visitor::visit_DeclBuffer(const DeclBufferNode& n) { visit(n.body); }
void Visitor::visit_BufferStore(const BufferStoreNode& n) {
  for (auto& i : n.indices) visit(i);
  visit(n.value);
}
void Visitor::visit_LetStmt(const LetStmtNode& n) {
  visit(n.value);
  visit(n.body);
}
void Visitor::visit_IfThenElse(const IfThenElseNode& n) {
  visit(n.cond);
  visit(n.then_case);
  if (n.else_case) visit(n.else_case);
}
void Visitor::visit_Seq(const SeqNode& n) {
  for (auto& s : n.stmts) visit(s);
}
void Visitor::visit_Evaluate(const EvaluateNode& n) { visit(n.value); }
void Visitor::visit_Return(const ReturnNode& n) { visit(n.value); }

// ---------------------------------------------------------------- mutator

Expr Mutator::mutate(const Expr& e) {
  switch (e->kind) {
#define KILN_TIR_CASE(name) \
  case ExprKind::name:      \
    return mutate_##name(e, static_cast<const name##Node&>(*e));
    KILN_TIR_EXPR_KINDS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
  return e;
}

Stmt Mutator::mutate(const Stmt& s) {
  switch (s->kind) {
#define KILN_TIR_CASE(name) \
  case StmtKind::name:      \
    return mutate_##name(s, static_cast<const name##Node&>(*s));
    KILN_TIR_STMT_KINDS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
  return s;
}

PrimFunc Mutator::mutate_function(const PrimFunc& f) {
  std::vector<PrimParam> params;
  bool changed = false;
  for (const PrimParam& p : f->params) {
    if (!p.buffer) {
      params.push_back(p);
      continue;
    }
    Buffer b = mutate_buffer_ref(p.buffer);
    changed |= b != p.buffer;
    params.push_back(buffer_param(b));
  }
  Stmt body = mutate(f->body);
  if (!changed && body == f->body) return f;
  return make_prim_func(f->name, std::move(params), std::move(body));
}

std::vector<Expr> Mutator::mutate_all(const std::vector<Expr>& v, bool* changed) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (const Expr& e : v) {
    out.push_back(mutate(e));
    if (out.back() != e) *changed = true;
  }
  return out;
}

Expr Mutator::mutate_IntImm(const Expr& e, const IntImmNode&) { return e; }
Expr Mutator::mutate_FloatImm(const Expr& e, const FloatImmNode&) { return e; }
Expr Mutator::mutate_StringImm(const Expr& e, const StringImmNode&) { return e; }
Expr Mutator::mutate_Var(const Expr& e, const VarNode&) { return e; }

Expr Mutator::mutate_Binary(const Expr& e, const BinaryNode& n) {
  Expr a = mutate(n.a), b = mutate(n.b);
  if (a == n.a && b == n.b) return e;
  return binary(n.op, a, b);
}
Expr Mutator::mutate_Not(const Expr& e, const NotNode& n) {
  Expr a = mutate(n.a);
  return a == n.a ? e : logical_not(a);
}
Expr Mutator::mutate_Cast(const Expr& e, const CastNode& n) {
  Expr v = mutate(n.value);
  return v == n.value ? e : cast(n.dtype, v);
}
Expr Mutator::mutate_Select(const Expr& e, const SelectNode& n) {
  Expr c = mutate(n.cond), t = mutate(n.true_value), f = mutate(n.false_value);
  if (c == n.cond && t == n.true_value && f == n.false_value) return e;
  return select(c, t, f);
}
Expr Mutator::mutate_BufferLoad(const Expr& e, const BufferLoadNode& n) {
  bool changed = false;
  auto idx = mutate_all(n.indices, &changed);
  Buffer b = mutate_buffer_ref(n.buffer);
  if (!changed && b == n.buffer) return e;
  return load(b, std::move(idx));
}
Expr Mutator::mutate_Call(const Expr& e, const CallNode& n) {
  bool changed = false;
  auto args = mutate_all(n.args, &changed);
  if (!changed) return e;
  return std::make_shared<CallNode>(n.dtype, n.call_kind, n.name, std::move(args));
}
Expr Mutator::mutate_Ramp(const Expr& e, const RampNode& n) {
  Expr b = mutate(n.base), s = mutate(n.stride);
  if (b == n.base && s == n.stride) return e;
  return ramp(b, s, n.lanes);
}
Expr Mutator::mutate_Broadcast(const Expr& e, const BroadcastNode& n) {
  Expr v = mutate(n.value);
  return v == n.value ? e : broadcast(v, n.lanes);
}

Stmt Mutator::mutate_For(const Stmt& s, const ForNode& n) {
  Expr mn = mutate(n.min), ext = mutate(n.extent);
  Stmt body = mutate(n.body);
  if (mn == n.min && ext == n.extent && body == n.body) return s;
  return for_loop(n.var, mn, ext, n.for_kind, body);
}
Stmt Mutator::mutate_Allocate(const Stmt& s, const AllocateNode& n) {
  Buffer b = mutate_buffer_ref(n.buffer);
  Stmt body = mutate(n.body);
  if (b == n.buffer && body == n.body) return s;
  return allocate(b, body);
}
Stmt Mutator::mutate_DeclBuffer(const Stmt& s, const DeclBufferNode& n) {
  Buffer b = mutate_buffer_ref(n.buffer);
  Stmt body = mutate(n.body);
  if (b == n.buffer && body == n.body) return s;
  return decl_buffer(b, body);
}
Stmt Mutator::mutate_BufferStore(const Stmt& s, const BufferStoreNode& n) {
  bool changed = false;
  auto idx = mutate_all(n.indices, &changed);
  Expr v = mutate(n.value);
  Buffer b = mutate_buffer_ref(n.buffer);
  if (!changed && v == n.value && b == n.buffer) return s;
  return store(b, std::move(idx), v);
}
Stmt Mutator::mutate_LetStmt(const Stmt& s, const LetStmtNode& n) {
  Expr v = mutate(n.value);
  Stmt body = mutate(n.body);
  if (v == n.value && body == n.body) return s;
  return let_stmt(n.var, v, body);
}
Stmt Mutator::mutate_IfThenElse(const Stmt& s, const IfThenElseNode& n) {
  Expr c = mutate(n.cond);
  Stmt t = mutate(n.then_case);
  Stmt f = n.else_case ? mutate(n.else_case) : nullptr;
  if (c == n.cond && t == n.then_case && f == n.else_case) return s;
  return if_then_else(c, t, f);
}
Stmt Mutator::mutate_Seq(const Stmt& s, const SeqNode& n) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& c : n.stmts) {
    out.push_back(mutate(c));
    changed |= out.back() != c;
  }
  return changed ? seq(std::move(out)) : s;
}
Stmt Mutator::mutate_Evaluate(const Stmt& s, const EvaluateNode& n) {
  Expr v = mutate(n.value);
  return v == n.value ? s : evaluate(v);
}
Stmt Mutator::mutate_Return(const Stmt& s, const ReturnNode& n) {
  Expr v = mutate(n.value);
  return v == n.value ? s : return_stmt(v);
}

// ---------------------------------------------------------------- substitution

namespace {
class Substituter : public Mutator {
 public:
  explicit Substituter(const std::unordered_map<const VarNode*, Expr>& map) : map_(map) {}

 protected:
  Expr mutate_Var(const Expr& e, const VarNode& n) override {
    auto it = map_.find(&n);
    return it == map_.end() ? e : it->second;
  }

 private:
  const std::unordered_map<const VarNode*, Expr>& map_;
};
}  // namespace

namespace {

class DefinesNames : public Visitor {
 public:
  bool found = false;

 protected:
  void visit_For(const ForNode&) override { found = true; }
  void visit_LetStmt(const LetStmtNode&) override { found = true; }
  void visit_Allocate(const AllocateNode&) override { found = true; }
  void visit_DeclBuffer(const DeclBufferNode&) override { found = true; }
};

}  // namespace

bool defines_names(const Stmt& s) {
  DefinesNames d;
  d.visit(s);
  return d.found;
}

namespace {

class UsesVar : public Visitor {
 public:
  explicit UsesVar(const VarNode* v) : var_(v) {}
  bool found = false;

 protected:
  void visit_Var(const VarNode& n) override { found |= &n == var_; }

 private:
  const VarNode* var_;
};

}  // namespace

bool uses_var(const Expr& e, const Var& v) {
  UsesVar u(v.get());
  u.visit(e);
  return u.found;
}

Stmt substitute(const Stmt& s, const std::unordered_map<const VarNode*, Expr>& map) {
  return Substituter(map).mutate(s);
}
Expr substitute(const Expr& e, const std::unordered_map<const VarNode*, Expr>& map) {
  return Substituter(map).mutate(e);
}

}  // namespace kiln::tir
