// ONNX reductions: ReduceSum/Mean/Max/Min map to kiln's sum/mean/max/min;
// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp
// decompose into elementwise ops around a sum.
//
// Axes are an attribute before opset 13 (ReduceSum) or 18 (the others) and
// an input after; noop_with_empty_axes=1 with no axes is the identity.
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

enum class Reduce { Sum, Mean, Max, Min, L1, L2, SumSquare, LogSum, LogSumExp };

template <Reduce R>
void convert_reduce(NodeContext& n) {
  int64_t axes_input_opset = R == Reduce::Sum ? 13 : 18;
  std::vector<int64_t> axes;
  if (n.opset() < axes_input_opset) axes = n.attr_ints("axes");
  else if (n.has_input(1)) axes = n.require_ints(1, "axes");
  Expr x = n.input(0);
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0)) {
    n.set_output(0, x);
    return;
  }
  for (auto& a : axes) a = normalize_axis(a, n.rank(0), n);
  Attrs attrs{{"axis", axes}, {"keepdims", n.attr_int("keepdims", 1) ? int64_t{1} : int64_t{0}}};
  switch (R) {
    case Reduce::Sum: n.set_output(0, n.call("sum", {x}, attrs)); return;
    case Reduce::Mean: n.set_output(0, n.call("mean", {x}, attrs)); return;
    case Reduce::Max: n.set_output(0, n.call("max", {x}, attrs)); return;
    case Reduce::Min: n.set_output(0, n.call("min", {x}, attrs)); return;
    case Reduce::L1: n.set_output(0, n.call("sum", {n.call("abs", {x})}, attrs)); return;
    case Reduce::L2: n.set_output(0, n.call("sqrt", {n.call("sum", {n.call("multiply", {x, x})}, attrs)})); return;
    case Reduce::SumSquare: n.set_output(0, n.call("sum", {n.call("multiply", {x, x})}, attrs)); return;
    case Reduce::LogSum: n.set_output(0, n.call("log", {n.call("sum", {x}, attrs)})); return;
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

}  // namespace

void add_reduce_converters(ConverterTable& t) {
  t["ReduceSum"] = {convert_reduce<Reduce::Sum>, {"sum"}};
  t["ReduceMean"] = {convert_reduce<Reduce::Mean>, {"mean"}};
  t["ReduceMax"] = {convert_reduce<Reduce::Max>, {"max"}};
  t["ReduceMin"] = {convert_reduce<Reduce::Min>, {"min"}};
  t["ReduceL1"] = {convert_reduce<Reduce::L1>, {"sum", "abs"}};
  t["ReduceL2"] = {convert_reduce<Reduce::L2>, {"sum", "multiply", "sqrt"}};
  t["ReduceSumSquare"] = {convert_reduce<Reduce::SumSquare>, {"sum", "multiply"}};
  t["ReduceLogSum"] = {convert_reduce<Reduce::LogSum>, {"sum", "log"}};
  t["ReduceLogSumExp"] = {convert_reduce<Reduce::LogSumExp>, {"sum", "log", "exp", "max", "subtract", "add"}};
}

}  // namespace kiln::onnx_import
