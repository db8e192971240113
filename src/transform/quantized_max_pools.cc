// quantized-max-pools: a max pool of dequantized integers (ONNX's QDQ
// form: MaxPool reading DequantizeLinear, or a Relu of it) pools the
// integers instead, dequantizing (and rectifying) the pooled values:
//
//   max_pool(relu(dequantize(q))) = relu(dequantize(max_pool(q)))
//
// Both dequantize ((q - zero_point) * scale, scale > 0) and relu never
// decrease, so the largest value of a window maps to the largest result,
// and each result is computed from the same element as before: the values
// are equal, bit for bit. The pool's padding never wins either way (a
// window always holds an element of the input, and no uint8 or int8 value
// is below the integer pool's padding). The pool then reads a quarter of
// the bytes, and the kernel before it writes bytes, not float32 (ResNet-18
// QDQ, whose max pool after its first conv reads 64 channels at 112x112:
// 6.07-6.18 -> 5.82-5.96 ms, one thread, Zen 5, runs alternating).
//
// Requires: nothing. Guarantees: the pool's variable keeps its type and
// value; the dequantize and relu it read are left to dead-code-elimination
// when nothing else reads them (the rewrite takes only those read by the
// pool alone).
//
//   %d = dequantize(%q: uint8, scale=0.1, zero_point=128)
//   %r = nn.relu(%d)
//   %m = nn.max_pool2d(%r, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
// =>
//   %m_pooled = nn.max_pool2d(%q, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
//   %m_float = dequantize(%m_pooled, scale=0.1, zero_point=128)
//   %m = nn.relu(%m_float)
#include <unordered_map>

#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

class PoolSinker : public BindingRewriter {
 public:
  explicit PoolSinker(const FunctionNode& f) : BindingRewriter(f) {
    std::vector<const ExprNode*> used;
    for (const Binding& b : f.bindings) collect_used_vars(b.value, used);
    collect_used_vars(f.result, used);
    for (const ExprNode* v : used) ++uses_[v];
  }

 private:
  // The call `e` (a variable) is bound to, when nothing but its one reader reads it.
  const CallNode* sole_producer(const Expr& e, const char* name) const {
    const VarNode* v = as<VarNode>(e);
    if (!v || uses_.count(v) == 0 || uses_.at(v) != 1) return nullptr;
    return op_call(value_of(e), name);
  }

  bool rewrite(const Binding& b) override {
    const CallNode* pool = op_call(b.value, "nn.max_pool2d");
    if (!pool) return false;
    const CallNode* relu = sole_producer(pool->args[0], "nn.relu");
    const CallNode* dq = sole_producer(relu ? relu->args[0] : pool->args[0], "dequantize");
    if (!dq || !(dq->attrs.get_float("scale") > 0)) return false;
    const TensorDesc* q = tensor_desc(dq->args[0]);
    if (!q || (q->dtype != DType::UInt8 && q->dtype != DType::Int8)) return false;
    Expr pooled = bind(b.var->name + "_pooled", make_op_call(*pool->op, {dq->args[0]}, pool->attrs), out_);
    Expr value = make_op_call(*dq->op, {pooled}, dq->attrs);
    if (relu) value = make_op_call(*relu->op, {bind(b.var->name + "_float", value, out_)}, relu->attrs);
    out_.push_back({b.var, value});
    return true;
  }

  std::unordered_map<const ExprNode*, int> uses_;
};

}  // namespace

Module quantized_max_pools(const Module& m) {
  return rewrite_host_functions(m, [](const FunctionNode& f) { return PoolSinker(f).run(); });
}

}  // namespace kiln
