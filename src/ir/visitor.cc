#include "ir/visitor.h"

namespace kiln {

void ExprVisitor::visit(const Expr& e) {
  switch (e->kind) {
#define KILN_VISIT_CASE(name)                               \
  case ExprKind::name:                                      \
    visit_##name(*static_cast<const name##Node*>(e.get())); \
    return;
    KILN_EXPR_KINDS(KILN_VISIT_CASE)
#undef KILN_VISIT_CASE
  }
}

void ExprVisitor::visit_function(const FunctionNode& f) {
  for (const auto& b : f.bindings) visit(b.value);
  visit(f.result);
}

void ExprVisitor::visit_Var(const VarNode&) {}
void ExprVisitor::visit_Constant(const ConstantNode&) {}
void ExprVisitor::visit_Call(const CallNode& n) {
  for (const auto& a : n.args) visit(a);
}
void ExprVisitor::visit_Tuple(const TupleNode& n) {
  for (const auto& f : n.fields) visit(f);
}
void ExprVisitor::visit_TupleGetItem(const TupleGetItemNode& n) { visit(n.tuple); }

Expr ExprMutator::mutate(const Expr& e) {
  switch (e->kind) {
#define KILN_MUTATE_CASE(name) \
  case ExprKind::name:         \
    return mutate_##name(e, *static_cast<const name##Node*>(e.get()));
    KILN_EXPR_KINDS(KILN_MUTATE_CASE)
#undef KILN_MUTATE_CASE
  }
  KILN_ASSERT(false, "unknown expression kind");
}

Expr ExprMutator::mutate_Var(const Expr& e, const VarNode&) {
  auto it = var_map_.find(e.get());
  return it == var_map_.end() ? e : it->second;
}

Expr ExprMutator::mutate_Constant(const Expr& e, const ConstantNode&) { return e; }

static bool mutate_all(ExprMutator& m, const std::vector<Expr>& in, std::vector<Expr>& out,
                       Expr (ExprMutator::*fn)(const Expr&)) {
  bool changed = false;
  out.reserve(in.size());
  for (const auto& a : in) {
    out.push_back((m.*fn)(a));
    changed |= out.back() != a;
  }
  return changed;
}

void collect_used_vars(const Expr& e, std::vector<const ExprNode*>& out) {
  if (as<VarNode>(e)) return out.push_back(e.get());
  if (const auto* c = as<CallNode>(e))
    for (const auto& a : c->args) collect_used_vars(a, out);
  if (const auto* t = as<TupleNode>(e))
    for (const auto& f : t->fields) collect_used_vars(f, out);
  if (const auto* g = as<TupleGetItemNode>(e)) collect_used_vars(g->tuple, out);
}

Expr rebuild_call(const CallNode& c, std::vector<Expr> args, const Module* module) {
  if (c.is_op_call()) return make_op_call(*c.op, std::move(args), c.attrs);
  KILN_ASSERT(module != nullptr, "rebuilding a function call needs the module");
  const FunctionNode* callee = module->find(c.callee);
  KILN_CHECK(callee != nullptr, "call of unknown function @", c.callee);
  std::vector<Type> params;
  for (const auto& p : callee->params) params.push_back(p->type);
  return make_function_call(c.callee, params, callee->ret_type, std::move(args));
}

Expr ExprMutator::mutate_Call(const Expr& e, const CallNode& n) {
  std::vector<Expr> args;
  if (!mutate_all(*this, n.args, args, &ExprMutator::mutate)) return e;
  return rebuild_call(n, std::move(args), module_);
}

Expr ExprMutator::mutate_Tuple(const Expr& e, const TupleNode& n) {
  std::vector<Expr> fields;
  if (!mutate_all(*this, n.fields, fields, &ExprMutator::mutate)) return e;
  return make_tuple(std::move(fields));
}

Expr ExprMutator::mutate_TupleGetItem(const Expr& e, const TupleGetItemNode& n) {
  Expr t = mutate(n.tuple);
  if (t == n.tuple) return e;
  return make_tuple_get_item(std::move(t), n.index);
}

std::optional<Binding> ExprMutator::rewrite_binding(const Binding& old, Expr value) {
  if (value == old.value) return old;
  if (type_equal(value->type, old.var->type)) return Binding{old.var, std::move(value)};
  Var fresh = make_var(old.var->name, value->type);
  map_var(old.var, fresh);
  return Binding{fresh, std::move(value)};
}

Function ExprMutator::mutate_function(const Function& f) {
  std::vector<Binding> bindings;
  bool changed = false;
  for (const auto& b : f->bindings) {
    Expr value = mutate(b.value);
    std::optional<Binding> nb = rewrite_binding(b, std::move(value));
    if (!nb) {
      changed = true;
      continue;
    }
    changed |= nb->var != b.var || nb->value != b.value;
    bindings.push_back(std::move(*nb));
  }
  Expr result = mutate(f->result);
  changed |= result != f->result;
  if (!changed) return f;
  return make_function(f->name, f->params, std::move(bindings), std::move(result), f->attrs);
}

}  // namespace kiln
