// ONNX comparison and logic operators: Equal, Less, LessOrEqual, Greater,
// GreaterOrEqual, And, Or, Xor, Not (kiln's ops of the same meaning, numpy
// broadcasting like ONNX), and the tests IsNaN and IsInf, which decompose:
// IsNaN = not_equal(x, x); IsInf = equal(x, +inf) or equal(x, -inf), each
// side only when its detect_* attribute asks for it.
#include <cmath>

#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

template <const char* Op>
void convert_binary(NodeContext& n) {
  n.set_output(0, n.call(Op, {n.input(0), n.input(1)}));
}

void convert_not(NodeContext& n) { n.set_output(0, n.call("logical_not", {n.input(0)})); }

void convert_is_nan(NodeContext& n) {
  Expr x = n.input(0);
  n.set_output(0, n.call("not_equal", {x, x}));
}

void convert_is_inf(NodeContext& n) {
  Expr x = n.input(0);
  DType t = x->type->tensor.dtype;
  if (!is_float(t))
    n.unsupported("input type " + std::string(dtype_name(t)) + " is not supported (float only)");
  bool neg = n.attr_int("detect_negative", 1) != 0, pos = n.attr_int("detect_positive", 1) != 0;
  if (!neg && !pos) {
    // Nothing to detect: all false, whatever x holds.
    n.set_output(0, n.constant_expr(Tensor::zeros(x->type->tensor.shape, DType::Bool)));
    return;
  }
  Expr y;
  if (pos) y = n.call("equal", {x, n.scalar(INFINITY, t)});
  if (neg) {
    Expr is_neg = n.call("equal", {x, n.scalar(-INFINITY, t)});
    y = y ? n.call("logical_or", {y, is_neg}) : is_neg;
  }
  n.set_output(0, y);
}

constexpr char kEqual[] = "equal", kLess[] = "less", kLessEqual[] = "less_equal", kGreater[] = "greater",
               kGreaterEqual[] = "greater_equal", kAnd[] = "logical_and", kOr[] = "logical_or",
               kXor[] = "logical_xor";

}  // namespace

void add_logic_converters(ConverterTable& t) {
  t["Equal"] = {convert_binary<kEqual>, {"equal"}};
  t["Less"] = {convert_binary<kLess>, {"less"}};
  t["LessOrEqual"] = {convert_binary<kLessEqual>, {"less_equal"}, 12};
  t["Greater"] = {convert_binary<kGreater>, {"greater"}};
  t["GreaterOrEqual"] = {convert_binary<kGreaterEqual>, {"greater_equal"}, 12};
  t["And"] = {convert_binary<kAnd>, {"logical_and"}};
  t["Or"] = {convert_binary<kOr>, {"logical_or"}};
  t["Xor"] = {convert_binary<kXor>, {"logical_xor"}};
  t["Not"] = {convert_not, {"logical_not"}};
  t["IsNaN"] = {convert_is_nan, {"not_equal"}, 9};
  t["IsInf"] = {convert_is_inf, {"equal", "logical_or"}, 10};
}

}  // namespace kiln::onnx_import
