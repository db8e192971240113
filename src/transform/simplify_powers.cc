// simplify-powers: a power by the constant 2 becomes a product, by 1 the
// base itself.
//
// ONNX exports of LayerNorm and RMSNorm before opset 17 square with
// Pow(x, 2). power is a call per element (no vector form), and the kernel
// it is fused into cannot see that its exponent is 2: it is a constant
// passed to the kernel. x * x is the correctly rounded square, as pow(x, 2)
// is, so values do not change. Other exponents stay (x^0.5 and sqrt differ
// at -0 and -inf; x^3 as products rounds twice).
//
// Requires: fold-constants first, so exponents computed from constants are
// constants. Guarantees: a rewritten square keeps its variable and type; the
// users of a power by 1 read its base instead, and its binding is gone; a
// power whose result broadcasts beyond the base (an exponent of more
// dimensions) is left as it is.
//
//   %s = power(%x, const(Tensor[(1,), float32], [2.0]))   =>   %s = multiply(%x, %x)
#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// The value of a constant of one element, if `e` is one.
std::optional<double> scalar_constant(const Expr& e) {
  const ConstantNode* c = as<ConstantNode>(e);
  if (!c || c->value.numel() != 1) return std::nullopt;
  return c->value.get_as_double(0);
}

class PowerSimplifier : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;

 protected:
  std::optional<Binding> rewrite_binding(const Binding& old, Expr value) override {
    const CallNode* call = as<CallNode>(value);
    if (call && call->is_op_call() && call->op->name == "power" &&
        type_equal(call->type, call->args[0]->type)) {
      const TensorDesc& d = call->type->tensor;
      const bool is_float = d.dtype == DType::Float32 || d.dtype == DType::Float16;
      std::optional<double> exponent = scalar_constant(call->args[1]);
      if (is_float && exponent == 2.0) value = make_op_call("multiply", {call->args[0], call->args[0]});
      if (is_float && exponent == 1.0) {
        map_var(old.var, call->args[0]);
        return std::nullopt;
      }
    }
    return ExprMutator::rewrite_binding(old, std::move(value));
  }
};

}  // namespace

Module simplify_powers(const Module& m) {
  Module out = m;
  for (auto& f : out.functions) f = PowerSimplifier(&m).mutate_function(f);
  return out;
}

}  // namespace kiln
