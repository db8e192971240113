// fold-batch-norm: folds an inference nn.batch_norm into the convolution or
// matrix product that feeds it.
//
// With s = gamma / sqrt(moving_var + epsilon) per channel, batch_norm(op(x, w) + b)
// equals op(x, w * s) + ((b - moving_mean) * s + beta): the weight is scaled
// along its output-channel axis and the rest becomes one bias add. The data
// input must be an nn.conv2d (channel axis 1), an nn.conv2d_transpose with
// one group, an nn.dense or a matmul with a 2-D weight (channel axis last),
// with a float32 or float16 constant weight, optionally followed by an add
// of a per-channel constant bias; gamma, beta, moving_mean and moving_var
// must be constants. The bias add has the form the ONNX importer gives Conv with a
// bias (a constant of shape (1, C, 1, 1) on NCHW results, (C,) after dense
// or matmul), so backend patterns for conv + bias + activation match folded
// and imported convolutions alike.
//
// Requires: nothing (run fold-constants first so parameters computed from
// constants are constants). Guarantees: every folded batch_norm binding now
// holds the bias add, under the same variable and type; the producer keeps
// its variable with the scaled weight; the old bias add is removed. A chain
// is folded only when the batch_norm is the only user of the op (and of its
// bias add). The new constants are computed in float32, so results match
// the unfolded graph within float rounding; a float16 op's are then rounded
// to float16 (unless that overflows: then nothing is folded), one rounding
// of its weights for the two of the batch norm's result it saves.
//
//   %c = nn.conv2d(%x, const(Tensor[(2, 1, 1, 1), float32], [1.0, 2.0]))
//   %y = nn.batch_norm(%c, %gamma, %beta, %mean, %var)      (all constants)
// =>
//   %c = nn.conv2d(%x, const(Tensor[(2, 1, 1, 1), float32], [w0 * s0, w1 * s1]))
//   %y = add(%c, const(Tensor[(1, 2, 1, 1), float32], [beta0 - mean0 * s0, ...]))
#include <cmath>
#include <optional>
#include <unordered_map>

#include "ir/visitor.h"
#include "transform/fold_weights.h"
#include "transform/pass.h"

namespace kiln {
namespace {

class FunctionIndex {
 public:
  explicit FunctionIndex(const FunctionNode& f) : f_(f) {
    for (size_t i = 0; i < f.bindings.size(); ++i) producer_[f.bindings[i].var.get()] = i;
    std::vector<const ExprNode*> used;
    for (const auto& b : f.bindings) collect_used_vars(b.value, used);
    collect_used_vars(f.result, used);
    for (const ExprNode* v : used) ++uses_[v];
  }

  // The index of the binding that defines `e`, when `e` is a bound variable.
  std::optional<size_t> producer(const Expr& e) const {
    auto it = producer_.find(e.get());
    if (it == producer_.end()) return std::nullopt;
    return it->second;
  }

  int uses(const Expr& var) const {
    auto it = uses_.find(var.get());
    return it == uses_.end() ? 0 : it->second;
  }

  // The call `e` names when it is a variable bound to an op call used once.
  const CallNode* single_use_call(const Expr& e, size_t& index) const {
    std::optional<size_t> p = producer(e);
    if (!p || uses(e) != 1) return nullptr;
    auto* c = as<CallNode>(f_.bindings[*p].value);
    if (!c || !c->is_op_call()) return nullptr;
    index = *p;
    return c;
  }

  // The values, as float32, of the float32 or float16 constant `e` is,
  // directly or through a variable bound to it.
  std::optional<Tensor> float_constant(const Expr& e) const {
    const ConstantNode* c = as<ConstantNode>(e);
    if (std::optional<size_t> p = producer(e)) c = as<ConstantNode>(f_.bindings[*p].value);
    if (!c) return std::nullopt;
    return float32_values(c->value);
  }

 private:
  const FunctionNode& f_;
  std::unordered_map<const ExprNode*, size_t> producer_;
  std::unordered_map<const ExprNode*, int> uses_;
};

// The axis of the op's weight that indexes the output channel `bn_axis` of
// its result, when the op is one the batch norm can fold into.
std::optional<int64_t> weight_channel_axis(const CallNode& c, int64_t bn_axis) {
  if (!foldable(c.type->tensor.dtype)) return std::nullopt;
  int64_t rank = static_cast<int64_t>(c.type->tensor.shape.size());
  const std::string& op = c.op->name;
  if (op == "nn.conv2d") return bn_axis == 1 ? std::optional<int64_t>(0) : std::nullopt;
  // IOHW: with one group, weight axis 1 is the output channel.
  if (op == "nn.conv2d_transpose")
    return bn_axis == 1 && c.attrs.get_int("groups") == 1 ? std::optional<int64_t>(1) : std::nullopt;
  if (bn_axis != rank - 1 || rank < 2) return std::nullopt;
  if (op == "nn.dense") return 0;
  if (op == "matmul" && c.args[1]->type->tensor.shape.size() == 2) return 1;
  return std::nullopt;
}

std::vector<float> values_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// One batch norm to fold: the bindings it touches and their new values.
struct Fold {
  size_t op_binding;
  std::optional<size_t> bias_binding;  // the add between the op and the batch norm
  size_t bn_binding;
  Expr new_op;
  Expr new_bn;
};

std::optional<Fold> plan_fold(const FunctionNode& f, const FunctionIndex& index, size_t bn_binding) {
  auto* bn = as<CallNode>(f.bindings[bn_binding].value);
  if (!bn || !bn->is_op_call() || bn->op->name != "nn.batch_norm") return std::nullopt;
  const Shape& out_shape = bn->type->tensor.shape;
  int64_t rank = static_cast<int64_t>(out_shape.size());
  int64_t axis = bn->attrs.get_int("axis");
  if (axis < 0) axis += rank;
  std::vector<Tensor> params;
  for (size_t i = 1; i < 5; ++i) {
    std::optional<Tensor> t = index.float_constant(bn->args[i]);
    if (!t) return std::nullopt;
    params.push_back(*t);
  }
  Fold fold{0, std::nullopt, bn_binding, nullptr, nullptr};
  size_t at = 0;
  const CallNode* producer = index.single_use_call(bn->args[0], at);
  if (!producer) return std::nullopt;
  int64_t channels = out_shape[static_cast<size_t>(axis)];
  std::vector<float> bias(static_cast<size_t>(channels), 0.0f);
  Expr bias_shape_from;
  if (producer->op->name == "add") {
    fold.bias_binding = at;
    const CallNode* op = nullptr;
    for (size_t k = 0; k < 2 && !op; ++k) {
      std::optional<Tensor> b = index.float_constant(producer->args[1 - k]);
      std::optional<std::vector<float>> v = b ? per_channel(*b, rank, axis, channels) : std::nullopt;
      if (!v) continue;
      op = index.single_use_call(producer->args[k], at);
      bias = *v;
      bias_shape_from = producer->args[1 - k];
    }
    if (!op) return std::nullopt;
    producer = op;
  }
  fold.op_binding = at;
  std::optional<int64_t> w_axis = weight_channel_axis(*producer, axis);
  if (!w_axis) return std::nullopt;
  std::optional<Tensor> w = index.float_constant(producer->args[1]);
  if (!w || w->shape()[static_cast<size_t>(*w_axis)] != channels) return std::nullopt;

  const float eps = static_cast<float>(bn->attrs.get_float("epsilon"));
  std::vector<float> gamma = values_of(params[0]), beta = values_of(params[1]), mean = values_of(params[2]),
                     var = values_of(params[3]);
  std::vector<float> scale(static_cast<size_t>(channels));
  for (size_t c = 0; c < scale.size(); ++c) {
    scale[c] = gamma[c] / std::sqrt(var[c] + eps);
    bias[c] = (bias[c] - mean[c]) * scale[c] + beta[c];
  }
  // The old bias's shape when it was per channel, else the importer's.
  Shape bias_shape = axis == 1 && rank == 4 ? Shape{1, channels, 1, 1} : Shape{channels};
  if (bias_shape_from && shape_numel(bias_shape_from->type->tensor.shape) == channels)
    bias_shape = bias_shape_from->type->tensor.shape;

  const DType dtype = producer->type->tensor.dtype;
  std::optional<Tensor> new_w = stored_as(scale_along(*w, *w_axis, scale), dtype);
  std::optional<Tensor> new_bias = stored_as(Tensor::from_floats(bias_shape, bias), dtype);
  if (!new_w || !new_bias) return std::nullopt;
  fold.new_op = make_op_call(*producer->op, {producer->args[0], make_constant(*new_w)}, producer->attrs);
  fold.new_bn = make_op_call("add", {f.bindings[fold.op_binding].var, make_constant(*new_bias)});
  if (!type_equal(fold.new_bn->type, bn->type)) return std::nullopt;
  return fold;
}

Function fold_in_function(const Function& f) {
  FunctionIndex index(*f);
  std::vector<Fold> folds;
  for (size_t i = 0; i < f->bindings.size(); ++i)
    if (std::optional<Fold> fold = plan_fold(*f, index, i)) folds.push_back(std::move(*fold));
  if (folds.empty()) return f;
  std::vector<Expr> replaced(f->bindings.size());
  std::vector<bool> dropped(f->bindings.size(), false);
  for (const Fold& fold : folds) {
    replaced[fold.op_binding] = fold.new_op;
    replaced[fold.bn_binding] = fold.new_bn;
    if (fold.bias_binding) dropped[*fold.bias_binding] = true;
  }
  return with_bindings(f, replaced, dropped);
}

}  // namespace

Module fold_batch_norm(const Module& m) {
  Module out = m;
  for (auto& f : out.functions) f = fold_in_function(f);
  return out;
}

}  // namespace kiln
