// ONNX elementwise operators: binary arithmetic (numpy broadcasting, like
// kiln's binary ops), Mod, BitShift, unary math and activations, Clip, Cast, Identity,
// Dropout (inference). Activations without a kiln op decompose:
// Softplus = log(exp(x) + 1), Softsign = x / (1 + |x|),
// Elu = relu(x) + min(0, alpha * (exp(x) - 1)), Celu = Elu of x / alpha
// scaled by alpha, PRelu = max(x, 0) + slope * min(x, 0) (a 1-D slope per
// channel where it does not broadcast from the right), Reciprocal = 1 / x,
// ThresholdedRelu = where(x > alpha, x, 0), Shrink = where(x < -lambd, x + bias,
// where(x > lambd, x - bias, 0)).
#include <cmath>
#include <limits>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {
namespace {

template <const char* Op>
void convert_binary(NodeContext& n) {
  n.set_output(0, n.call(Op, {n.input(0), n.input(1)}));
}

Expr cast(NodeContext& n, Expr x, DType to) {
  if (x->type->tensor.dtype == to) return x;
  return n.call("astype", {x}, {{"dtype", std::string(dtype_name(to))}});
}

// Pow's exponent may have another type than the base (opset 12+), and the
// result has the base's type; kiln's power takes one dtype. A float
// exponent is never rounded: with an integer base both compute in float32
// and the result truncates to the base's type (4 ^ 0.5 = 2, like ONNX
// Runtime), with a float16 base and a float32 exponent in float32. An
// integer exponent is exact in the float base's type.
void convert_pow(NodeContext& n) {
  Expr a = n.input(0), b = n.input(1);
  DType base = a->type->tensor.dtype, exponent = b->type->tensor.dtype;
  if (base == exponent || !is_float(exponent)) {
    n.set_output(0, n.call("power", {a, cast(n, b, base)}));
    return;
  }
  Expr power = n.call("power", {cast(n, a, DType::Float32), cast(n, b, DType::Float32)});
  n.set_output(0, cast(n, power, base));
}

// Max, Min, Sum, Mean take any number of inputs.
template <const char* Op>
void convert_variadic(NodeContext& n) {
  Expr acc = n.input(0);
  for (size_t i = 1; i < n.num_inputs(); ++i) acc = n.call(Op, {acc, n.input(i)});
  n.set_output(0, acc);
}

void convert_mean(NodeContext& n) {
  Expr acc = n.input(0);
  for (size_t i = 1; i < n.num_inputs(); ++i) acc = n.call("add", {acc, n.input(i)});
  if (n.num_inputs() > 1)
    acc = n.call("divide", {acc, n.scalar(static_cast<double>(n.num_inputs()), acc->type->tensor.dtype)});
  n.set_output(0, acc);
}

template <const char* Op>
void convert_unary(NodeContext& n) {
  n.set_output(0, n.call(Op, {n.input(0)}));
}

void convert_identity(NodeContext& n) { n.set_output(0, n.input(0)); }

// Inference: Dropout is the identity and its mask is all true. In training
// mode only a ratio of 0 is deterministic (the same identity).
void convert_dropout(NodeContext& n) {
  bool training = n.has_input(2) && n.require_constant(2, "training_mode").get_as_double(0) != 0;
  if (training) {
    double ratio = n.has_input(1) ? n.require_constant(1, "ratio").get_as_double(0) : 0.5;
    if (ratio != 0)
      n.unsupported(
          "training mode with a ratio other than 0 is not supported (it drops random elements; "
          "kiln imports inference graphs)");
  }
  Expr x = n.input(0);
  n.set_output(0, x);
  if (!n.has_output(1)) return;
  // The mask is bool from opset 10, the data's type before.
  Tensor mask = Tensor::zeros(x->type->tensor.shape, n.opset() >= 10 ? DType::Bool : x->type->tensor.dtype);
  for (int64_t i = 0; i < mask.numel(); ++i) mask.set_from_double(i, 1.0);
  n.set_output(1, n.constant_expr(mask));
}

void convert_mod(NodeContext& n) {
  bool fmod = n.attr_int("fmod", 0) != 0;
  if (!fmod && is_float(n.desc(0).dtype))
    n.fail("fmod=0 is not defined for floating-point inputs (ONNX requires fmod=1 for them)");
  n.set_output(0, n.call(fmod ? "fmod" : "mod", {n.input(0), n.input(1)}));
}

void convert_bitshift(NodeContext& n) {
  if (!n.has_attr("direction")) n.fail("the required attribute 'direction' is missing");
  std::string direction = n.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    n.fail("attribute 'direction' = \"" + direction + "\" is not LEFT or RIGHT");
  n.set_output(0, n.call("bitshift", {n.input(0), n.input(1)},
                         {{"direction", std::string(direction == "LEFT" ? "left" : "right")}}));
}

void convert_thresholded_relu(NodeContext& n) {
  Expr x = n.input(0);
  DType t = x->type->tensor.dtype;
  Expr above = n.call("greater", {x, n.scalar(n.attr_float("alpha", 1.0), t)});
  n.set_output(0, n.call("where", {above, x, n.scalar(0.0, t)}));
}

void convert_shrink(NodeContext& n) {
  Expr x = n.input(0);
  DType t = x->type->tensor.dtype;
  double lambd = n.attr_float("lambd", 0.5), bias = n.attr_float("bias", 0.0);
  // The decomposition compares and subtracts in x's type, where a fractional
  // lambd or bias would be rounded; ONNX leaves that rounding open.
  if (!is_float(t))
    n.unsupported("integer input " + std::string(dtype_name(t)) + " is not supported (float only)");
  Expr high = n.call("where", {n.call("greater", {x, n.scalar(lambd, t)}),
                               n.call("subtract", {x, n.scalar(bias, t)}), n.scalar(0.0, t)});
  n.set_output(0, n.call("where", {n.call("less", {x, n.scalar(-lambd, t)}),
                                   n.call("add", {x, n.scalar(bias, t)}), high}));
}

void convert_leaky_relu(NodeContext& n) {
  n.set_output(0, n.call("nn.leaky_relu", {n.input(0)}, {{"alpha", n.attr_float("alpha", 0.01)}}));
}

void convert_hard_sigmoid(NodeContext& n) {
  n.set_output(0, n.call("nn.hard_sigmoid", {n.input(0)},
                         {{"alpha", n.attr_float("alpha", 0.2)}, {"beta", n.attr_float("beta", 0.5)}}));
}

void convert_reciprocal(NodeContext& n) {
  Expr x = n.input(0);
  n.set_output(0, n.call("divide", {n.scalar(1.0, x->type->tensor.dtype), x}));
}

void convert_softplus(NodeContext& n) {
  Expr x = n.input(0);
  Expr e = n.call("exp", {x});
  n.set_output(0, n.call("log", {n.call("add", {e, n.scalar(1.0, x->type->tensor.dtype)})}));
}

void convert_softsign(NodeContext& n) {
  Expr x = n.input(0);
  Expr d = n.call("add", {n.call("abs", {x}), n.scalar(1.0, x->type->tensor.dtype)});
  n.set_output(0, n.call("divide", {x, d}));
}

// relu(x) + min(0, alpha * (exp(x) - 1)): for alpha >= 0 the second term is
// zero exactly where x > 0, which is Elu.
Expr elu_expr(NodeContext& n, Expr x, double alpha) {
  if (alpha < 0) n.unsupported("a negative alpha is not supported");
  DType t = x->type->tensor.dtype;
  Expr em1 = n.call("subtract", {n.call("exp", {x}), n.scalar(1.0, t)});
  Expr neg = n.call("minimum", {n.call("multiply", {em1, n.scalar(alpha, t)}), n.scalar(0.0, t)});
  return n.call("add", {n.call("nn.relu", {x}), neg});
}

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) = alpha * Elu(x / alpha)
// with Elu's alpha 1.
void convert_celu(NodeContext& n) {
  Expr x = n.input(0);
  double alpha = n.attr_float("alpha", 1.0);
  if (alpha <= 0) n.unsupported("alpha <= 0 is not supported");
  DType t = x->type->tensor.dtype;
  Expr e = elu_expr(n, n.call("divide", {x, n.scalar(alpha, t)}), 1.0);
  n.set_output(0, n.call("multiply", {e, n.scalar(alpha, t)}));
}

void convert_elu(NodeContext& n) { n.set_output(0, elu_expr(n, n.input(0), n.attr_float("alpha", 1.0))); }

void convert_selu(NodeContext& n) {
  Expr x = n.input(0);
  Expr e = elu_expr(n, x, n.attr_float("alpha", 1.67326319217681884765625));
  n.set_output(0, n.call("multiply", {e, n.scalar(n.attr_float("gamma", 1.05070102214813232421875),
                                                  x->type->tensor.dtype)}));
}

// Whether `from` broadcasts to `to` from the right without changing it
// (ONNX's unidirectional broadcasting).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    int64_t f = from[from.size() - i], t = to[to.size() - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

// The slope broadcasts to x from the right, as ONNX specifies; a 1-D slope
// of x's channel count that does not (shape (C,) against (N, C, H, W), as
// exporters write nn.PReLU(C)) applies per channel, reshaped to (C, 1, 1).
void convert_prelu(NodeContext& n) {
  Expr x = n.input(0), slope = n.input(1);
  const Shape& xs = n.desc(0).shape;
  const Shape ss = n.desc(1).shape;
  if (!broadcasts_to(ss, xs)) {
    bool per_channel = ss.size() == 1 && xs.size() >= 3 && ss[0] == xs[1];
    if (!per_channel)
      n.fail("the slope's shape " + shape_str(ss) + " does not broadcast to the input's " + shape_str(xs) +
             " (from the right, or per channel for a 1-D slope of the channel count)");
    Shape per_channel_shape(xs.size() - 1, 1);
    per_channel_shape[0] = ss[0];
    slope = n.call("reshape", {slope}, {{"newshape", std::vector<int64_t>(per_channel_shape)}});
  }
  DType t = x->type->tensor.dtype;
  Expr pos = n.call("maximum", {x, n.scalar(0.0, t)});
  Expr neg = n.call("minimum", {x, n.scalar(0.0, t)});
  n.set_output(0, n.call("add", {pos, n.call("multiply", {slope, neg})}));
}

void convert_clip(NodeContext& n) {
  Expr x = n.input(0);
  DType t = x->type->tensor.dtype;
  double lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
  if (t == DType::Int64 || t == DType::Int32) {
    lo =
        static_cast<double>(t == DType::Int64 ? std::numeric_limits<int32_t>::min() * 1024.0 * 1024.0 * 1024.0
                                              : std::numeric_limits<int32_t>::min());
    hi = -lo - 1;
  }
  if (n.opset() < 11) {
    lo = n.attr_float("min", lo);
    hi = n.attr_float("max", hi);
    n.set_output(0, n.call("clip", {x}, {{"a_min", lo}, {"a_max", hi}}));
    return;
  }
  // Bounds are inputs from opset 11; constant bounds use clip, others max/min.
  Expr out = x;
  bool constant_bounds = (!n.has_input(1) || n.constant(1)) && (!n.has_input(2) || n.constant(2));
  if (constant_bounds) {
    if (n.has_input(1)) lo = n.constant(1)->get_as_double(0);
    if (n.has_input(2)) hi = n.constant(2)->get_as_double(0);
    n.set_output(0, n.call("clip", {x}, {{"a_min", lo}, {"a_max", hi}}));
    return;
  }
  if (n.has_input(1)) out = n.call("maximum", {out, n.input(1)});
  if (n.has_input(2)) out = n.call("minimum", {out, n.input(2)});
  n.set_output(0, out);
}

void cast_to(NodeContext& n, int32_t onnx_type) {
  auto to = dtype_from_onnx(onnx_type);
  if (!to) n.unsupported("casting to " + onnx_type_name(onnx_type) + " is not supported");
  Expr x = n.input(0);
  if (x->type->tensor.dtype == *to) {
    n.set_output(0, x);
    return;
  }
  n.set_output(0, n.call("astype", {x}, {{"dtype", std::string(dtype_name(*to))}}));
}

void convert_cast(NodeContext& n) {
  if (!n.has_attr("to")) n.fail("the required attribute 'to' is missing");
  cast_to(n, static_cast<int32_t>(n.attr_int("to", 0)));
}

void convert_cast_like(NodeContext& n) { cast_to(n, onnx_type_from_dtype(n.desc(1).dtype)); }

constexpr char kAdd[] = "add", kSub[] = "subtract", kMul[] = "multiply", kDiv[] = "divide",
               kMax[] = "maximum", kMin[] = "minimum";
constexpr char kRelu[] = "nn.relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp", kLog[] = "log",
               kSqrt[] = "sqrt", kAbs[] = "abs", kNeg[] = "negative", kErf[] = "erf", kFloor[] = "floor",
               kCeil[] = "ceil", kRound[] = "round", kHardSwish[] = "nn.hard_swish", kSign[] = "sign",
               kSin[] = "sin", kCos[] = "cos", kTan[] = "tan", kAsin[] = "asin", kAcos[] = "acos",
               kAtan[] = "atan", kSinh[] = "sinh", kCosh[] = "cosh", kAsinh[] = "asinh", kAcosh[] = "acosh",
               kAtanh[] = "atanh";

}  // namespace

void add_elementwise_converters(ConverterTable& t) {
  t["Add"] = {convert_binary<kAdd>, {"add"}};
  t["Sub"] = {convert_binary<kSub>, {"subtract"}};
  t["Mul"] = {convert_binary<kMul>, {"multiply"}};
  t["Div"] = {convert_binary<kDiv>, {"divide"}};
  t["Pow"] = {convert_pow, {"power", "astype"}};
  t["BitShift"] = {convert_bitshift, {"bitshift"}, 11};
  t["Max"] = {convert_variadic<kMax>, {"maximum"}};
  t["Min"] = {convert_variadic<kMin>, {"minimum"}};
  t["Sum"] = {convert_variadic<kAdd>, {"add"}};
  t["Mean"] = {convert_mean, {"add", "divide"}};
  t["Relu"] = {convert_unary<kRelu>, {"nn.relu"}};
  t["Sigmoid"] = {convert_unary<kSigmoid>, {"sigmoid"}};
  t["Tanh"] = {convert_unary<kTanh>, {"tanh"}};
  t["Exp"] = {convert_unary<kExp>, {"exp"}};
  t["Log"] = {convert_unary<kLog>, {"log"}};
  t["Sqrt"] = {convert_unary<kSqrt>, {"sqrt"}};
  t["Abs"] = {convert_unary<kAbs>, {"abs"}};
  t["Neg"] = {convert_unary<kNeg>, {"negative"}};
  t["Erf"] = {convert_unary<kErf>, {"erf"}};
  t["Floor"] = {convert_unary<kFloor>, {"floor"}};
  t["Ceil"] = {convert_unary<kCeil>, {"ceil"}};
  t["Round"] = {convert_unary<kRound>, {"round"}};
  t["HardSwish"] = {convert_unary<kHardSwish>, {"nn.hard_swish"}};
  t["LeakyRelu"] = {convert_leaky_relu, {"nn.leaky_relu"}};
  t["HardSigmoid"] = {convert_hard_sigmoid, {"nn.hard_sigmoid"}};
  t["Reciprocal"] = {convert_reciprocal, {"divide"}};
  t["Softplus"] = {convert_softplus, {"exp", "log", "add"}};
  t["Softsign"] = {convert_softsign, {"abs", "add", "divide"}};
  t["Elu"] = {convert_elu, {"exp", "subtract", "multiply", "minimum", "nn.relu", "add"}};
  t["Selu"] = {convert_selu, {"exp", "subtract", "multiply", "minimum", "nn.relu", "add"}};
  t["PRelu"] = {convert_prelu, {"maximum", "minimum", "multiply", "add", "reshape"}};
  t["Clip"] = {convert_clip, {"clip", "maximum", "minimum"}};
  t["Cast"] = {convert_cast, {"astype"}};
  t["CastLike"] = {convert_cast_like, {"astype"}};
  t["Identity"] = {convert_identity, {}};
  t["Dropout"] = {convert_dropout, {}};
  t["Mod"] = {convert_mod, {"mod", "fmod"}, 10};
  t["Sign"] = {convert_unary<kSign>, {"sign"}, 9};
  t["Sin"] = {convert_unary<kSin>, {"sin"}};
  t["Cos"] = {convert_unary<kCos>, {"cos"}};
  t["Tan"] = {convert_unary<kTan>, {"tan"}};
  t["Asin"] = {convert_unary<kAsin>, {"asin"}};
  t["Acos"] = {convert_unary<kAcos>, {"acos"}};
  t["Atan"] = {convert_unary<kAtan>, {"atan"}};
  t["Sinh"] = {convert_unary<kSinh>, {"sinh"}, 9};
  t["Cosh"] = {convert_unary<kCosh>, {"cosh"}, 9};
  t["Asinh"] = {convert_unary<kAsinh>, {"asinh"}, 9};
  t["Acosh"] = {convert_unary<kAcosh>, {"acosh"}, 9};
  t["Atanh"] = {convert_unary<kAtanh>, {"atanh"}, 9};
  t["ThresholdedRelu"] = {convert_thresholded_relu, {"greater", "where"}, 10};
  t["Shrink"] = {convert_shrink, {"greater", "less", "where", "add", "subtract"}, 9};
  t["Celu"] = {convert_celu, {"exp", "subtract", "multiply", "minimum", "nn.relu", "add", "divide"}, 12};
}

}  // namespace kiln::onnx_import
