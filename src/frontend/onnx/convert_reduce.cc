// ONNX reductions: ReduceSum/Mean/Max/Min/Prod map to kiln's
// sum/mean/max/min/prod; ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp decompose into elementwise ops around a sum. Also the ops
// that reduce to an index, select or scan along an axis: ArgMax/ArgMin
// (argmax/argmin), Hardmax (equal(argmax, iota) as a one-hot), TopK (topk)
// and CumSum (cumsum).
//
// Axes are an attribute before opset 13 (ReduceSum) or 18 (the others) and
// an input after; noop_with_empty_axes=1 with no axes is the identity.
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

template <Reduce R>
void convert_reduce(NodeContext& n) {
  int64_t axes_input_opset = R == Reduce::Sum ? 13 : 18;
  std::vector<int64_t> axes;
  if (n.opset() < axes_input_opset)
    axes = n.attr_ints("axes");
  else if (n.has_input(1))
    axes = n.require_ints(1, "axes");
  Expr x = n.input(0);
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0)) {
    n.set_output(0, x);
    return;
  }
  for (auto& a : axes) a = normalize_axis(a, n.rank(0), n);
  Attrs attrs{{"axis", axes}, {"keepdims", n.attr_int("keepdims", 1) ? int64_t{1} : int64_t{0}}};
  switch (R) {
    case Reduce::Sum:
      n.set_output(0, n.call("sum", {x}, attrs));
      return;
    case Reduce::Mean:
      n.set_output(0, n.call("mean", {x}, attrs));
      return;
    case Reduce::Max:
      n.set_output(0, n.call("max", {x}, attrs));
      return;
    case Reduce::Min:
      n.set_output(0, n.call("min", {x}, attrs));
      return;
    case Reduce::Prod:
      n.set_output(0, n.call("prod", {x}, attrs));
      return;
    case Reduce::L1:
      n.set_output(0, n.call("sum", {n.call("abs", {x})}, attrs));
      return;
    case Reduce::L2:
      n.set_output(0, n.call("sqrt", {n.call("sum", {n.call("multiply", {x, x})}, attrs)}));
      return;
    case Reduce::SumSquare:
      n.set_output(0, n.call("sum", {n.call("multiply", {x, x})}, attrs));
      return;
    case Reduce::LogSum:
      n.set_output(0, n.call("log", {n.call("sum", {x}, attrs)}));
      return;
    case Reduce::LogSumExp: {
      // log(sum(exp(x - m))) + m with m the max, so large inputs do not overflow.
      Attrs keep{{"axis", axes}, {"keepdims", int64_t{1}}};
      Expr m = n.call("max", {x}, keep);
      Expr s = n.call("log", {n.call("sum", {n.call("exp", {n.call("subtract", {x, m})})}, attrs)});
      Expr mm = n.attr_int("keepdims", 1) ? m : n.call("max", {x}, attrs);
      n.set_output(0, n.call("add", {s, mm}));
      return;
    }
  }
}

template <bool Max>
void convert_arg(NodeContext& n) {
  if (n.rank(0) == 0) n.fail("the input is a scalar; it needs rank >= 1");
  int64_t axis = normalize_axis(n.attr_int("axis", 0), n.rank(0), n);
  n.set_output(0,
               n.call(Max ? "argmax" : "argmin", {n.input(0)},
                      {{"axis", axis},
                       {"keepdims", n.attr_int("keepdims", 1) ? int64_t{1} : int64_t{0}},
                       {"select_last_index", n.attr_int("select_last_index", 0) ? int64_t{1} : int64_t{0}}}));
}

Expr reshape(NodeContext& n, Expr x, const Shape& shape) {
  if (x->type->tensor.shape == shape) return x;
  return n.call("reshape", {x}, {{"newshape", std::vector<int64_t>(shape)}});
}

// 1 at the first maximum along `axis`, 0 elsewhere: the argmax (kept as a
// size-1 axis) compared with 0, 1, ..., n-1 laid out along that axis.
Expr hardmax(NodeContext& n, Expr x, int64_t axis) {
  const Shape& s = x->type->tensor.shape;
  int64_t size = s[static_cast<size_t>(axis)];
  Expr am = n.call("argmax", {x}, {{"axis", axis}, {"keepdims", int64_t{1}}});
  std::vector<int64_t> iota(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) iota[static_cast<size_t>(i)] = i;
  Shape iota_shape(s.size(), 1);
  iota_shape[static_cast<size_t>(axis)] = size;
  Expr hot = n.call("equal", {am, n.constant_expr(Tensor::from_ints(iota_shape, iota))});
  return n.call("astype", {hot}, {{"dtype", std::string(dtype_name(x->type->tensor.dtype))}});
}

void convert_hardmax(NodeContext& n) {
  int64_t r = n.rank(0);
  if (r == 0) n.fail("the input is a scalar; it needs rank >= 1");
  int64_t axis = normalize_axis(n.attr_int("axis", n.opset() < 13 ? 1 : -1), r, n);
  if (n.opset() >= 13) {
    n.set_output(0, hardmax(n, n.input(0), axis));
    return;
  }
  // Before opset 13 the input is coerced to 2-D at `axis`, one row per
  // leading index (like Softmax).
  const Shape& s = n.desc(0).shape;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i)];
  Expr y = hardmax(n, reshape(n, n.input(0), {outer, inner}), 1);
  n.set_output(0, reshape(n, y, s));
}

// kiln's topk always sorts, which is one of the orders sorted=0 allows.
void convert_topk(NodeContext& n) {
  int64_t k = n.attr_int("k", -1);
  if (n.opset() >= 10) {
    std::vector<int64_t> ks = n.require_ints(1, "K");
    if (ks.size() != 1) n.fail("K must hold one value, got " + std::to_string(ks.size()));
    k = ks[0];
  }
  if (n.rank(0) == 0) n.fail("the input is a scalar; it needs rank >= 1");
  int64_t axis = normalize_axis(n.attr_int("axis", -1), n.rank(0), n);
  Expr t =
      n.call("topk", {n.input(0)},
             {{"k", k}, {"axis", axis}, {"largest", n.attr_int("largest", 1) ? int64_t{1} : int64_t{0}}});
  n.set_output(0, n.builder().tuple_item(t, 0));
  n.set_output(1, n.builder().tuple_item(t, 1));
}

void convert_cumsum(NodeContext& n) {
  std::vector<int64_t> axis = n.require_ints(1, "axis");
  if (axis.size() != 1) n.fail("axis must hold one value, got " + std::to_string(axis.size()));
  if (n.rank(0) == 0) n.fail("the input is a scalar; it needs rank >= 1");
  n.set_output(0, n.call("cumsum", {n.input(0)},
                         {{"axis", normalize_axis(axis[0], n.rank(0), n)},
                          {"exclusive", n.attr_int("exclusive", 0) ? int64_t{1} : int64_t{0}},
                          {"reverse", n.attr_int("reverse", 0) ? int64_t{1} : int64_t{0}}}));
}

}  // namespace

void add_reduce_converters(ConverterTable& t) {
  t["ReduceSum"] = {convert_reduce<Reduce::Sum>, {"sum"}};
  t["ReduceMean"] = {convert_reduce<Reduce::Mean>, {"mean"}};
  t["ReduceMax"] = {convert_reduce<Reduce::Max>, {"max"}};
  t["ReduceMin"] = {convert_reduce<Reduce::Min>, {"min"}};
  t["ReduceProd"] = {convert_reduce<Reduce::Prod>, {"prod"}};
  t["ReduceL1"] = {convert_reduce<Reduce::L1>, {"sum", "abs"}};
  t["ReduceL2"] = {convert_reduce<Reduce::L2>, {"sum", "multiply", "sqrt"}};
  t["ReduceSumSquare"] = {convert_reduce<Reduce::SumSquare>, {"sum", "multiply"}};
  t["ReduceLogSum"] = {convert_reduce<Reduce::LogSum>, {"sum", "log"}};
  t["ReduceLogSumExp"] = {convert_reduce<Reduce::LogSumExp>, {"sum", "log", "exp", "max", "subtract", "add"}};
  t["ArgMax"] = {convert_arg<true>, {"argmax"}};
  t["ArgMin"] = {convert_arg<false>, {"argmin"}};
  t["Hardmax"] = {convert_hardmax, {"argmax", "equal", "astype", "reshape"}};
  t["CumSum"] = {convert_cumsum, {"cumsum"}, 11};
  t["TopK"] = {convert_topk, {"topk"}};
}

}  // namespace kiln::onnx_import
