// eliminate-common-subexpressions: merges bindings that compute the same value.
//
// Two bindings are the same when their values are calls of the same op (or
// function) with equal attributes and the same arguments, the same tuple,
// the same field of the same tuple, or the same constant; arguments are the
// same when they are the same variable (after earlier merges) or constants
// of equal type and bytes (names do not matter). All ops are pure, so the
// later binding's uses can read the earlier one.
//
// Requires: nothing. Guarantees: no two bindings of a function have the same
// value; every removed binding's uses see the binding it was merged into.
// Merging can make further bindings equal, and they merge in the same pass.
//
//   %a = nn.relu(%x)                     %a = nn.relu(%x)
//   %b = nn.relu(%x)               =>    %c = add(%a, %a)
//   %c = add(%a, %b)                     return %c
//   return %c
#include <functional>
#include <unordered_map>

#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

void hash_combine(size_t& seed, size_t v) { seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }

size_t hash_value(const Expr& e) {
  size_t h = static_cast<size_t>(e->kind);
  if (as<VarNode>(e)) {
    hash_combine(h, std::hash<const void*>()(e.get()));
    return h;
  }
  if (auto* c = as<ConstantNode>(e)) {
    hash_combine(h, static_cast<size_t>(c->value.dtype()));
    for (int64_t d : c->value.shape()) hash_combine(h, std::hash<int64_t>()(d));
    hash_combine(h, std::hash<std::string_view>()(
                        std::string_view(static_cast<const char*>(c->value.raw()), c->value.nbytes())));
    return h;
  }
  if (auto* c = as<CallNode>(e)) {
    hash_combine(h, std::hash<const void*>()(c->op));
    hash_combine(h, std::hash<std::string>()(c->callee));
    for (const auto& [k, v] : c->attrs.items())
      hash_combine(h, std::hash<std::string>()(k + attr_value_str(v)));
    for (const auto& a : c->args) hash_combine(h, hash_value(a));
    return h;
  }
  if (auto* t = as<TupleNode>(e)) {
    for (const auto& f : t->fields) hash_combine(h, hash_value(f));
    return h;
  }
  auto* g = as<TupleGetItemNode>(e);
  hash_combine(h, std::hash<int64_t>()(g->index));
  hash_combine(h, hash_value(g->tuple));
  return h;
}

bool same_values(const std::vector<Expr>& a, const std::vector<Expr>& b);

bool same_value(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (a->kind != b->kind || !type_equal(a->type, b->type)) return false;
  switch (a->kind) {
    case ExprKind::Var:
      return false;  // distinct variables (a == b was checked)
    case ExprKind::Constant:
      return as<ConstantNode>(a)->value.bitwise_equal(as<ConstantNode>(b)->value);
    case ExprKind::Call: {
      auto* ca = as<CallNode>(a);
      auto* cb = as<CallNode>(b);
      return ca->op == cb->op && ca->callee == cb->callee && ca->attrs == cb->attrs &&
             same_values(ca->args, cb->args);
    }
    case ExprKind::Tuple:
      return same_values(as<TupleNode>(a)->fields, as<TupleNode>(b)->fields);
    case ExprKind::TupleGetItem: {
      auto* ga = as<TupleGetItemNode>(a);
      auto* gb = as<TupleGetItemNode>(b);
      return ga->index == gb->index && same_value(ga->tuple, gb->tuple);
    }
  }
  return false;
}

bool same_values(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_value(a[i], b[i])) return false;
  return true;
}

class CommonSubexpressionEliminator : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;

 protected:
  std::optional<Binding> rewrite_binding(const Binding& old, Expr value) override {
    // A variable alias is not a computation; leave it to fold-constants.
    if (as<VarNode>(value)) return ExprMutator::rewrite_binding(old, std::move(value));
    size_t h = hash_value(value);
    auto range = seen_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
      if (!same_value(it->second.value, value)) continue;
      map_var(old.var, it->second.var);
      return std::nullopt;
    }
    std::optional<Binding> kept = ExprMutator::rewrite_binding(old, std::move(value));
    seen_.emplace(h, *kept);
    return kept;
  }

 private:
  std::unordered_multimap<size_t, Binding> seen_;
};

}  // namespace

Module eliminate_common_subexpressions(const Module& m) {
  Module out = m;
  for (auto& f : out.functions) f = CommonSubexpressionEliminator(&m).mutate_function(f);
  return out;
}

}  // namespace kiln
