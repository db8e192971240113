// widen-float16: runs the host's float16 ops on float32 values, each result
// rounded to float16 as the op's own result is (the reference kernels load
// float16 as float, compute and store the result rounded to nearest even:
// src/op/kernel_util.h), so a float16 model computes the same values as on
// its reference kernels but through the float32 paths of the passes after
// it: convert-layout's channel blocks, pack-matmul-weights' panels and
// winograd-weights' transforms, which take float32 convs and products
// only. Its float16 constants become float32 ones (fold-constants).
//
// Each op call with a float16 operand or result whose type follows its
// operands' (inferred again on float32 operands, every float16 result
// becomes float32 and nothing else changes) is computed on the float32
// values of its operands and bound to a fresh variable; the original
// variable becomes that result rounded (astype to float16), which the
// function's result and the ops left alone (astype, tuples of results, ops
// whose result type an attribute fixes) read as before. An operand's
// float32 value is astype of it to float32, bound once per variable; an op
// that only selects, moves or negates float16 values (relu, clip to float16
// bounds, max pools, reshapes, concat, ...: exact_on_float16) has a float16
// value as its float32 result, which the next op reads as it is. The
// rounding pairs, astype to float16 and back, are what the reference
// computes between ops; fuse puts them in the producing kernel's epilogue,
// and convert-layout keeps them in channel blocks.
//
// Without float16 conversions in the target's vectors (F16C) the model
// compile pipeline does not run it: its float16 ops stay on their reference
// kernels.
//
// widen-float16{excess_precision=1} (`kiln compile --float16-precision
// excess`) keeps every widened op's float32 result for the ops after it,
// exact or not: values are rounded to float16 only where a float16 tensor
// is read (the function's results, ops left on float16, backend regions).
// The results are then those of the model computed in float32 between its
// inputs and outputs, as ONNX Runtime's CPU kernels compute float16 models
// (casting around each op without a float16 kernel and dropping the casts
// between them) and as XLA's allow-excess-precision does: more accurate
// than rounding each op, not bit-equal to the reference kernels, and
// without the two conversions a rounding costs in each kernel's epilogue.
//
// Requires: nothing; run fold-constants and dead-code-elimination after it.
// Guarantees: every variable keeps its type and value; the function's
// results are unchanged.
//
//   %c = nn.conv2d(%x: float16, const float16)
//   %y = nn.relu(%c)
// =>
//   %x_f32 = astype(%x, dtype="float32")
//   %c_wide = nn.conv2d(%x_f32, astype(const, dtype="float32"))
//   %c = astype(%c_wide, dtype="float16")
//   %c_f32 = astype(%c, dtype="float32")
//   %y_wide = nn.relu(%c_f32)
//   %y = astype(%y_wide, dtype="float16")
#include <set>
#include <unordered_map>

#include "kiln/runtime/dtype.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// Ops whose result on float16 values is a float16 value (it selects, moves
// or negates them, or rounds them to integers): rounding it changes
// nothing, so the float32 result itself is what the next op reads.
const std::set<std::string>& exact_ops() {
  static const std::set<std::string> ops = {
      "nn.relu",       "maximum",      "minimum", "abs",           "negative",        "nn.max_pool2d",
      "reshape",       "flatten",      "squeeze", "expand_dims",   "concat",          "permute_dims",
      "strided_slice", "broadcast_to", "take",    "where",         "gather_elements", "gather_nd",
      "max",           "min",          "trilu",   "nn.max_pool3d", "nn.max_unpool",   "floor",
      "ceil",          "round",        "sign"};
  return ops;
}

// Whether `v` is a float16 value (a bound of clip, a pad value).
bool in_float16(double v) { return double(half_to_float(float_to_half(float(v)))) == v; }

// Whether the call's result on float16 values is one too.
bool exact_on_float16(const CallNode& call) {
  const std::string& op = call.op->name;
  if (exact_ops().count(op)) return true;
  if (op == "clip")
    return in_float16(call.attrs.get_float("a_min")) && in_float16(call.attrs.get_float("a_max"));
  // A nearest resize picks inputs, or writes the extrapolation value past a crop.
  if (op == "image.resize2d")
    return call.attrs.get_string("method") == "nearest" &&
           (call.attrs.get_string("coordinate_transformation_mode") != "tf_crop_and_resize" ||
            in_float16(call.attrs.get_float("extrapolation_value")));
  if (op == "nn.pad")
    return call.attrs.get_string("mode") != "constant" || in_float16(call.attrs.get_float("pad_value"));
  return false;
}

bool is_float16(const Expr& e) {
  const TensorDesc* d = tensor_desc(e);
  return d && d->dtype == DType::Float16;
}

Attrs dtype_attrs(const char* name) {
  Attrs a;
  a.set("dtype", std::string(name));
  return a;
}

class Widener {
 public:
  Widener(const FunctionNode& f, bool excess_precision) : f_(f), fresh_(f), excess_(excess_precision) {}

  Function run() {
    for (const Binding& b : f_.bindings) {
      if (!widen(b)) out_.push_back(b);
    }
    if (!changed_) return nullptr;
    return make_function(f_.name, f_.params, std::move(out_), f_.result, f_.attrs);
  }

 private:
  // The float32 value of float16 operand `x`: a constant's converted in
  // place (fold-constants folds it), a variable's bound once.
  Expr wide(const Expr& x) {
    Expr call = make_op_call("astype", {x}, dtype_attrs("float32"));
    const VarNode* v = as<VarNode>(x);
    if (!v) return call;
    auto it = wide_.find(v);
    if (it != wide_.end()) return it->second;
    Var w = make_var(fresh_(v->name + "_f32"), call->type);
    out_.push_back({w, call});
    wide_[v] = w;
    return w;
  }

  bool widen(const Binding& b) {
    const CallNode* call = as<CallNode>(b.value);
    if (!call || !call->is_op_call() || call->op->name == "astype") return false;
    const TensorDesc* out = tensor_desc(b.value);
    if (!out) return false;
    bool any = out->dtype == DType::Float16;
    for (const Expr& a : call->args) {
      if (!tensor_desc(a)) return false;
      any |= is_float16(a);
    }
    if (!any) return false;
    // The op's type on float32 operands (converted here, unbound): float16
    // results must become float32 and nothing else may change.
    TensorDesc expected = *out;
    if (expected.dtype == DType::Float16) expected.dtype = DType::Float32;
    try {
      std::vector<Expr> converted;
      for (const Expr& a : call->args)
        converted.push_back(is_float16(a) ? make_op_call("astype", {a}, dtype_attrs("float32")) : a);
      const Expr widened = make_op_call(*call->op, converted, call->attrs);
      const TensorDesc* d = tensor_desc(widened);
      if (!d || !(*d == expected)) return false;
    } catch (const Error&) {
      return false;
    }
    // Every float operand a float16 value: exact ops keep their results' float32 values.
    bool float16_operands = true;
    std::vector<Expr> args;
    for (const Expr& a : call->args) {
      float16_operands &= !is_float(tensor_desc(a)->dtype) || is_float16(a);
      args.push_back(is_float16(a) ? wide(a) : a);
    }
    Expr value = make_op_call(*call->op, args, call->attrs);
    if (out->dtype != DType::Float16) {
      out_.push_back({b.var, value});
    } else {
      Var v = make_var(fresh_(b.var->name + "_wide"), value->type);
      out_.push_back({v, value});
      out_.push_back({b.var, make_op_call("astype", {v}, dtype_attrs("float16"))});
      // Its float32 result is a float16 value already (or excess precision
      // is allowed): the next op reads it, not the rounding.
      if (excess_ || (float16_operands && exact_on_float16(*call))) wide_[b.var.get()] = v;
    }
    changed_ = true;
    return true;
  }

  const FunctionNode& f_;
  FreshNames fresh_;
  std::vector<Binding> out_;
  const bool excess_;
  std::unordered_map<const VarNode*, Var> wide_;
  bool changed_ = false;
};

}  // namespace

Module widen_float16(const Module& m, const PassOptions& options) {
  const bool excess =
      !options.empty() && integer_pass_option(options, "widen-float16", "excess_precision", 0, 1,
                                              "1 to keep float32 results between ops, 0 to "
                                              "round each op's (the default)") == 1;
  return rewrite_host_functions(m, [&](const FunctionNode& f) { return Widener(f, excess).run(); });
}

}  // namespace kiln
