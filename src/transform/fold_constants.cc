// fold-constants: evaluates op calls whose arguments are all constants.
//
// Requires: nothing. Guarantees: no op call has only constant arguments
// (except one whose result has a bounded dynamic axis, which stays); a
// field access of a literal tuple is replaced by the field; uses of a
// variable bound to a constant, a literal tuple or another variable see that
// value directly (the binding is left for dead-code-elimination). The folded
// value is computed by the op's reference kernel, so folding never changes
// results. Folded constants larger than kNameAbove elements are named after
// their binding, which puts them in the side file when the module is saved.
//
//   %c = add(const(Tensor[(2,), float32], [1.0, 2.0]), const(Tensor[(2,), float32], [3.0, 4.5]))
//   %d = multiply(%x, %c)
// =>
//   %c = const(Tensor[(2,), float32], [4.0, 6.5])
//   %d = multiply(%x, const(Tensor[(2,), float32], [4.0, 6.5]))
#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

constexpr int64_t kNameAbove = 16;

class ConstantFolder : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;

 protected:
  Expr mutate_Call(const Expr& e, const CallNode& n) override {
    Expr rebuilt = ExprMutator::mutate_Call(e, n);
    auto* call = as<CallNode>(rebuilt);
    if (!call || !call->is_op_call() || call->type->is_tuple()) return rebuilt;
    // A result typed with a bounded dynamic axis keeps its type (the
    // function's and its users' types say <=N): it is not folded.
    if (call->type->tensor.bounded_outer) return rebuilt;
    std::vector<Tensor> inputs;
    for (const auto& a : call->args) {
      auto* c = as<ConstantNode>(a);
      if (!c) return rebuilt;
      inputs.push_back(c->value);
    }
    std::vector<Tensor> out = run_op(*call->op, inputs, call->attrs);
    return make_constant(std::move(out.at(0)));
  }

  Expr mutate_TupleGetItem(const Expr& e, const TupleGetItemNode& n) override {
    Expr rebuilt = ExprMutator::mutate_TupleGetItem(e, n);
    auto* item = as<TupleGetItemNode>(rebuilt);
    if (!item) return rebuilt;
    if (auto* tup = as<TupleNode>(item->tuple)) return tup->fields[static_cast<size_t>(item->index)];
    return rebuilt;
  }

  std::optional<Binding> rewrite_binding(const Binding& old, Expr value) override {
    auto* c = as<ConstantNode>(value);
    if (c && value != old.value && c->name.empty() && c->value.numel() > kNameAbove)
      value = make_constant(c->value, old.var->name);
    // Later uses see the constant itself, so chains fold in one pass.
    // Aliases (%a = %b) are propagated the same way.
    if (as<ConstantNode>(value) || as<TupleNode>(value) || as<VarNode>(value)) map_var(old.var, value);
    return ExprMutator::rewrite_binding(old, std::move(value));
  }
};

}  // namespace

Module fold_constants(const Module& m) {
  Module out = m;
  for (auto& f : out.functions) f = ConstantFolder(&m).mutate_function(f);
  return out;
}

}  // namespace kiln
