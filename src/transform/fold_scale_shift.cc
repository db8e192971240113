// fold-scale-shift: folds the constant per-channel multiplies and adds that
// follow a convolution or matrix product into its weight and one bias add.
//
// PP-OCRv4 follows each conv + bias with a learnable scale and shift,
// conv2d -> add(b) -> multiply(s) -> add(t) -> activation. Because
// (op(x, w) + b) * s + t equals op(x, w * s) + (b * s + t) when s and t are
// constant per output channel, the whole chain becomes the ONNX importer's
// conv + bias form, which backend patterns for conv + bias + activation match.
// The op must be an nn.conv2d (any groups; channel axis 1), an
// nn.conv2d_transpose with one group, an nn.dense or a matmul with a 2-D
// weight (channel axis last), with a float32 or float16 constant weight.
// Each step of the chain is a multiply or an add (either operand order) of a
// float32 or float16 constant whose dims, right-aligned to the result, are 1
// except C on the channel axis (a scalar, (C, 1, 1), (1, C, 1, 1); (C,)
// after dense/matmul), and leaves the result's type unchanged. The chain goes on while each value
// has exactly one user, so chains of several multiplies and adds fold in one
// walk from the op (an already folded bias add is one more step), and one run
// reaches the fixpoint: running the pass again changes nothing.
//
// Requires: nothing (run fold-constants first so scales computed from
// constants are constants, fold-batch-norm first so a batch_norm between the
// conv and its scale is a bias add). Guarantees: with an add in the chain,
// the op keeps its variable with the scaled weight and the last step's
// variable holds add(op, b') with b' of shape (1, C, 1, 1) on NCHW results,
// (C,) otherwise; with only multiplies the last step's variable holds the
// op itself. The steps in between are removed. An op with one add of a
// per-channel bias already in that form is left unchanged. The new
// constants are computed in float32, so results match the unfolded graph
// within float rounding; a float16 op's are then rounded to float16 (unless
// that overflows: then the chain is left alone).
//
//   %c = nn.conv2d(%x, const(Tensor[(2, 1, 1, 1), float32], [1.0, 2.0]))
//   %b = add(%c, const(Tensor[(1, 2, 1, 1), float32], [1.0, -1.0]))
//   %m = multiply(const(Tensor[(1,), float32], [2.0]), %b)
//   %a = add(%m, const(Tensor[(1,), float32], [0.5]))
// =>
//   %c = nn.conv2d(%x, const(Tensor[(2, 1, 1, 1), float32], [2.0, 4.0]))
//   %a = add(%c, const(Tensor[(1, 2, 1, 1), float32], [2.5, -1.5]))
#include <optional>
#include <unordered_map>

#include "ir/visitor.h"
#include "transform/fold_weights.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// Where each variable of a function is bound, how often it is used and by
// which binding (the last one, which is the only one when used once).
class FunctionIndex {
 public:
  explicit FunctionIndex(const FunctionNode& f) : f_(f) {
    for (size_t i = 0; i < f.bindings.size(); ++i) producer_[f.bindings[i].var.get()] = i;
    for (size_t i = 0; i < f.bindings.size(); ++i) {
      std::vector<const ExprNode*> used;
      collect_used_vars(f.bindings[i].value, used);
      for (const ExprNode* v : used) {
        ++uses_[v];
        user_[v] = i;
      }
    }
    std::vector<const ExprNode*> used;
    collect_used_vars(f.result, used);
    for (const ExprNode* v : used) {
      ++uses_[v];
      user_.erase(v);
    }
  }

  // The binding that uses `var`, when it is its only use (and not the result).
  std::optional<size_t> single_user(const Var& var) const {
    auto uses = uses_.find(var.get());
    auto user = user_.find(var.get());
    if (uses == uses_.end() || uses->second != 1 || user == user_.end()) return std::nullopt;
    return user->second;
  }

  // The values, as float32, of the float32 or float16 constant `e` is,
  // directly or through a variable bound to it.
  std::optional<Tensor> float_constant(const Expr& e) const {
    const ConstantNode* c = as<ConstantNode>(e);
    if (auto p = producer_.find(e.get()); p != producer_.end())
      c = as<ConstantNode>(f_.bindings[p->second].value);
    if (!c) return std::nullopt;
    return float32_values(c->value);
  }

 private:
  const FunctionNode& f_;
  std::unordered_map<const ExprNode*, size_t> producer_;
  std::unordered_map<const ExprNode*, int> uses_;
  std::unordered_map<const ExprNode*, size_t> user_;
};

// Where an op's output channels are: the axis of its result and of its weight.
struct ChannelAxes {
  int64_t result;
  int64_t weight;
};

std::optional<ChannelAxes> channel_axes(const CallNode& c) {
  if (!foldable(c.type->tensor.dtype)) return std::nullopt;
  int64_t rank = static_cast<int64_t>(c.type->tensor.shape.size());
  const std::string& op = c.op->name;
  if (op == "nn.conv2d") return ChannelAxes{1, 0};
  // IOHW: with one group, weight axis 1 is the output channel.
  if (op == "nn.conv2d_transpose")
    return c.attrs.get_int("groups") == 1 ? std::optional<ChannelAxes>(ChannelAxes{1, 1}) : std::nullopt;
  if (rank < 2) return std::nullopt;
  if (op == "nn.dense") return ChannelAxes{rank - 1, 0};
  if (op == "matmul" && c.args[1]->type->tensor.shape.size() == 2) return ChannelAxes{rank - 1, 1};
  return std::nullopt;
}

// The shape the ONNX importer gives a bias on this result.
Shape importer_bias_shape(const Shape& result, int64_t axis) {
  int64_t channels = result[static_cast<size_t>(axis)];
  return axis == 1 && result.size() == 4 ? Shape{1, channels, 1, 1} : Shape{channels};
}

// One step of a chain: multiply or add of `value` by a per-channel constant.
struct Step {
  bool is_multiply;
  std::vector<float> values;
  bool canonical_bias;  // add(value, c) with c in the importer's bias shape
};

std::optional<Step> plan_step(const FunctionIndex& index, const CallNode& c, const Var& value, int64_t axis,
                              int64_t channels) {
  if (!c.is_op_call() || (c.op->name != "multiply" && c.op->name != "add") || c.args.size() != 2)
    return std::nullopt;
  if (!type_equal(c.type, value->type)) return std::nullopt;
  size_t data = c.args[0].get() == value.get() ? 0 : 1;
  if (c.args[data].get() != value.get()) return std::nullopt;
  std::optional<Tensor> k = index.float_constant(c.args[1 - data]);
  if (!k) return std::nullopt;
  int64_t rank = static_cast<int64_t>(value->type->tensor.shape.size());
  std::optional<std::vector<float>> v = per_channel(*k, rank, axis, channels);
  if (!v) return std::nullopt;
  bool canonical = data == 0 && k->shape() == importer_bias_shape(value->type->tensor.shape, axis);
  return Step{c.op->name == "multiply", std::move(*v), canonical};
}

// One chain to fold: the bindings it touches and their new values.
struct Fold {
  size_t op_binding;
  std::vector<size_t> step_bindings;  // in order; the last keeps its variable
  Expr new_op;                        // bound to the op's variable, or the last step's without an add
  Expr new_bias_add;                  // bound to the last step's variable; null without an add
};

bool is_already_folded(const std::vector<Step>& steps) {
  return steps.size() == 1 && !steps[0].is_multiply && steps[0].canonical_bias;
}

std::optional<Fold> plan_fold(const FunctionNode& f, const FunctionIndex& index, size_t op_binding) {
  auto* op = as<CallNode>(f.bindings[op_binding].value);
  if (!op || !op->is_op_call() || op->args.size() < 2) return std::nullopt;
  std::optional<ChannelAxes> axes = channel_axes(*op);
  if (!axes) return std::nullopt;
  const Shape& out_shape = op->type->tensor.shape;
  int64_t channels = out_shape[static_cast<size_t>(axes->result)];
  std::optional<Tensor> w = index.float_constant(op->args[1]);
  if (!w || w->shape()[static_cast<size_t>(axes->weight)] != channels) return std::nullopt;

  Fold fold{op_binding, {}, nullptr, nullptr};
  std::vector<Step> steps;
  Var value = f.bindings[op_binding].var;
  while (std::optional<size_t> user = index.single_user(value)) {
    auto* c = as<CallNode>(f.bindings[*user].value);
    std::optional<Step> step = c ? plan_step(index, *c, value, axes->result, channels) : std::nullopt;
    if (!step) break;
    steps.push_back(std::move(*step));
    fold.step_bindings.push_back(*user);
    value = f.bindings[*user].var;
  }
  if (steps.empty() || is_already_folded(steps)) return std::nullopt;

  std::vector<float> scale(static_cast<size_t>(channels), 1.0f), bias(static_cast<size_t>(channels), 0.0f);
  bool has_bias = false;
  for (const Step& s : steps) {
    for (size_t k = 0; k < scale.size(); ++k) {
      if (s.is_multiply) {
        scale[k] *= s.values[k];
        bias[k] *= s.values[k];
      } else {
        bias[k] += s.values[k];
      }
    }
    has_bias = has_bias || !s.is_multiply;
  }
  const DType dtype = op->type->tensor.dtype;
  std::optional<Tensor> new_w = stored_as(scale_along(*w, axes->weight, scale), dtype);
  std::optional<Tensor> new_bias =
      stored_as(Tensor::from_floats(importer_bias_shape(out_shape, axes->result), bias), dtype);
  if (!new_w || !new_bias) return std::nullopt;
  std::vector<Expr> args = op->args;
  args[1] = make_constant(*new_w);
  fold.new_op = make_op_call(*op->op, std::move(args), op->attrs);
  if (has_bias)
    fold.new_bias_add = make_op_call("add", {f.bindings[op_binding].var, make_constant(*new_bias)});
  Expr last = has_bias ? fold.new_bias_add : fold.new_op;
  if (!type_equal(last->type, f.bindings[fold.step_bindings.back()].var->type)) return std::nullopt;
  return fold;
}

Function fold_in_function(const Function& f) {
  FunctionIndex index(*f);
  std::vector<Expr> replaced(f->bindings.size());
  std::vector<bool> dropped(f->bindings.size(), false);
  bool changed = false;
  for (size_t i = 0; i < f->bindings.size(); ++i) {
    std::optional<Fold> fold = plan_fold(*f, index, i);
    if (!fold) continue;
    changed = true;
    for (size_t s : fold->step_bindings) dropped[s] = true;
    size_t last = fold->step_bindings.back();
    dropped[last] = false;
    if (fold->new_bias_add) {
      replaced[fold->op_binding] = fold->new_op;
      replaced[last] = fold->new_bias_add;
      continue;
    }
    // Only multiplies: the op moves to the last step, under its variable.
    dropped[fold->op_binding] = true;
    replaced[last] = fold->new_op;
  }
  if (!changed) return f;
  return with_bindings(f, replaced, dropped);
}

}  // namespace

Module fold_scale_shift(const Module& m) {
  Module out = m;
  for (auto& f : out.functions) f = fold_in_function(f);
  return out;
}

}  // namespace kiln
