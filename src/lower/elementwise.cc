// Elementwise ops as tensor expressions: unary math and activations,
// numpy-broadcasting binary ops, comparisons and logic, where, clip, astype.
//
//   add(a: (2, 3), b: (3))  =>  y[i, j] = a[i, j] + b[j]
//
// Values follow the reference kernels (src/op/elementwise.cc, logic.cc):
// maximum, minimum, clip and the activations keep NaN; integers wrap;
// float -> integer casts truncate, saturate and send NaN to 0. Floats
// compute in float32 where the reference computes in double, so results
// agree to float rounding. Integer remainders check their divisors for 0
// first (a DivisorCheck: mod and fmod are opaque kernels, so the divisor is
// a kernel input). Integer power squares in a loop (an extern) after
// checking for 0 to a negative power. bitshift shifts unsigned integers, by
// the type's width or more to 0.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;
using UnaryFn = std::function<Expr(Expr)>;
using BinaryFn = std::function<Expr(Expr, Expr)>;

tir::DataType elem(const te::Tensor& t) { return t->dtype; }

Expr is_nan(const Expr& x) { return tir::binary(tir::BinaryOp::NE, x, x); }

bool is_number(const Expr& e) {
  const auto* f = tir::as<tir::FloatImmNode>(e);
  return f && !std::isnan(f->value);
}

// max and min that return NaN when either operand is NaN (floats). Against
// a number b (relu, clip, the hard activations), `b > a ? b : a` (`b < a`
// for min): the reference kernels' std::max (std::min), which keeps a NaN
// a and a -0 (the general form gives b when they compare equal: +0 for
// -0), and one x86 instruction (maxps b, a).
Expr max_nan(const Expr& a, const Expr& b) {
  if (!a->dtype.is_float()) return tir::max(a, b);
  if (is_number(b)) return tir::select(tir::binary(tir::BinaryOp::GT, b, a), b, a);
  return tir::select(tir::binary(tir::BinaryOp::Or, is_nan(a), tir::binary(tir::BinaryOp::GT, a, b)), a, b);
}
Expr min_nan(const Expr& a, const Expr& b) {
  if (!a->dtype.is_float()) return tir::min(a, b);
  if (is_number(b)) return tir::select(tir::lt(b, a), b, a);
  return tir::select(tir::binary(tir::BinaryOp::Or, is_nan(a), tir::lt(a, b)), a, b);
}

Expr fconst(double v, const Expr& like) { return constant(v, like->dtype); }

te::Tensor map_unary(const LowerContext& c, const UnaryFn& f) {
  const te::Tensor& x = c.inputs[0];
  return te::compute(
      c.out[0].shape, [&](const te::Axes& i) { return f((*x)(i)); }, c.name);
}

Lowered unary(const LowerContext& c, const UnaryFn& f) { return lowered({map_unary(c, f)}); }

bool is_float_input(const LowerContext& c) { return elem(c.inputs[0]).is_float(); }

Lowered float_unary(const LowerContext& c, const UnaryFn& f) {
  if (!is_float_input(c)) return unsupported(c.op + " on integers");
  return unary(c, f);
}

te::Tensor map_binary(const LowerContext& c, const BinaryFn& f) {
  const te::Tensor& a = c.inputs[0];
  const te::Tensor& b = c.inputs[1];
  const Shape sa = c.in[0].shape, sb = c.in[1].shape;
  return te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) { return f((*a)(broadcast_index(i, sa)), (*b)(broadcast_index(i, sb))); },
      c.name);
}

Lowered binary(const LowerContext& c, const BinaryFn& f) { return lowered({map_binary(c, f)}); }

// ---------------------------------------------------------------- unary

Lowered relu(const LowerContext& c) {
  return unary(c, [](Expr x) { return tir::select(tir::lt(x, fconst(0, x)), fconst(0, x), x); });
}

Lowered negative(const LowerContext& c) {
  return unary(c, [](Expr x) { return tir::sub(fconst(0, x), x); });
}

Lowered abs_op(const LowerContext& c) {
  return unary(c, [](Expr x) { return tir::call_intrinsic(tir::Intrinsic::Abs, {x}); });
}

Lowered sign(const LowerContext& c) {
  return unary(c, [](Expr x) {
    Expr s = tir::select(tir::binary(tir::BinaryOp::GT, x, fconst(0, x)), fconst(1, x),
                         tir::select(tir::lt(x, fconst(0, x)), fconst(-1, x), fconst(0, x)));
    return x->dtype.is_float() ? tir::select(is_nan(x), x, s) : s;
  });
}

Lowered clip(const LowerContext& c) {
  double lo = c.attrs.get_float("a_min"), hi = c.attrs.get_float("a_max");
  if (!is_float_input(c)) {
    // Bounds saturate to the integer type, as the reference does.
    tir::DataType t = elem(c.inputs[0]);
    double tmin = t.is_uint() ? 0.0 : -std::ldexp(1.0, t.bits - 1);
    double tmax = t.is_uint() ? std::ldexp(1.0, t.bits) - 1 : std::ldexp(1.0, t.bits - 1) - 1;
    lo = std::clamp(std::round(lo), tmin, tmax);
    hi = std::clamp(std::round(hi), tmin, tmax);
    if (t.bits == 64) return unsupported("clip of int64 (bounds beyond double precision)");
  }
  return unary(c, [&](Expr x) { return min_nan(max_nan(x, fconst(lo, x)), fconst(hi, x)); });
}

Lowered silu(const LowerContext& c) {
  return float_unary(c,
                     [](Expr x) { return tir::mul(x, tir::call_intrinsic(tir::Intrinsic::Sigmoid, {x})); });
}

Lowered gelu(const LowerContext& c) {
  if (c.attrs.get_string("approximate") == "tanh") {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return float_unary(c, [k](Expr x) {
      Expr x3 = tir::mul(tir::mul(x, x), x);
      Expr inner = tir::mul(fconst(k, x), tir::add(x, tir::mul(fconst(0.044715, x), x3)));
      return tir::mul(tir::mul(fconst(0.5, x), x),
                      tir::add(fconst(1, x), tir::call_intrinsic(tir::Intrinsic::Tanh, {inner})));
    });
  }
  return float_unary(c, [](Expr x) {
    Expr e = tir::call_intrinsic(tir::Intrinsic::Erf, {tir::mul(x, fconst(1.0 / std::numbers::sqrt2, x))});
    return tir::mul(tir::mul(fconst(0.5, x), x), tir::add(fconst(1, x), e));
  });
}

Lowered leaky_relu(const LowerContext& c) {
  double alpha = c.attrs.get_float("alpha");
  return float_unary(
      c, [alpha](Expr x) { return tir::select(tir::lt(x, fconst(0, x)), tir::mul(fconst(alpha, x), x), x); });
}

Expr hard_sigmoid_of(const Expr& x, double alpha, double beta) {
  return min_nan(max_nan(tir::add(tir::mul(fconst(alpha, x), x), fconst(beta, x)), fconst(0, x)),
                 fconst(1, x));
}

Lowered hard_sigmoid(const LowerContext& c) {
  double alpha = c.attrs.get_float("alpha"), beta = c.attrs.get_float("beta");
  return float_unary(c, [=](Expr x) { return hard_sigmoid_of(x, alpha, beta); });
}

Lowered hard_swish(const LowerContext& c) {
  return float_unary(c, [](Expr x) { return tir::mul(x, hard_sigmoid_of(x, 1.0 / 6.0, 0.5)); });
}

template <tir::Intrinsic I>
Lowered intrinsic_unary(const LowerContext& c) {
  return float_unary(c, [](Expr x) { return tir::call_intrinsic(I, {x}); });
}

// ---------------------------------------------------------------- binary

Lowered add(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::add(a, b); });
}
Lowered subtract(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::sub(a, b); });
}
Lowered multiply(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::mul(a, b); });
}
Lowered maximum(const LowerContext& c) { return binary(c, max_nan); }
Lowered minimum(const LowerContext& c) { return binary(c, min_nan); }

// Integers truncate toward zero after a check that no divisor is 0 (the
// reference kernel's error; the op is then opaque, pattern_of, so its
// divisor is a kernel input); a divisor of -1 negates, wrapping INT_MIN
// (whose x86 division would trap).
Lowered divide(const LowerContext& c) {
  if (is_float_input(c)) return binary(c, [](Expr a, Expr b) { return tir::div(a, b); });
  const tir::DataType t = elem(c.inputs[0]);
  Lowered r = binary(c, [&](Expr a, Expr b) {
    if (t.is_uint()) return tir::div(a, b);
    Expr minus_one = tir::eq(b, constant(-1, t));
    return tir::select(minus_one, tir::sub(constant(0, t), a),
                       tir::div(a, tir::select(minus_one, constant(1, t), b)));
  });
  r.divisor_checks.push_back({c.inputs[1], "divide: integer division by zero"});
  return r;
}

// A truncated remainder of a by b made floored: one of the other sign
// than b (and not zero) moves by b.
Expr floored_remainder(const Expr& rem, const Expr& b) {
  Expr zero = constant(0, rem->dtype);
  Expr other_sign = tir::binary(tir::BinaryOp::NE, tir::lt(rem, zero), tir::lt(b, zero));
  return tir::select(tir::binary(tir::BinaryOp::And, tir::binary(tir::BinaryOp::NE, rem, zero), other_sign),
                     tir::add(rem, b), rem);
}

// mod (the floored remainder: the divisor's sign) and fmod (the truncated
// one: the dividend's). Integers after a check that no divisor is 0 (the
// reference kernel's error); a divisor of -1 leaves remainder 0, so it
// divides by 1 instead (INT_MIN % -1 traps on x86). Floats through the C
// library's fmod, lane by lane (exact; a zero divisor gives NaN).
Lowered remainder(const LowerContext& c, bool floored) {
  if (is_float_input(c)) {
    // The C library's fmod (exact), in the input's type as the reference.
    return binary(c, [&](Expr a, Expr b) {
      Expr rem = tir::call_intrinsic(tir::Intrinsic::Fmod, {a, b});
      return floored ? floored_remainder(rem, b) : rem;
    });
  }
  const tir::DataType t = elem(c.inputs[0]);
  Lowered r = binary(c, [&](Expr a, Expr b) {
    Expr divisor = t.is_uint() ? b : tir::select(tir::eq(b, constant(-1, t)), constant(1, t), b);
    Expr rem = tir::mod(a, divisor);
    return floored && !t.is_uint() ? floored_remainder(rem, b) : rem;
  });
  r.divisor_checks.push_back({c.inputs[1], c.op + ": integer division by zero"});
  return r;
}

Lowered mod(const LowerContext& c) { return remainder(c, true); }
Lowered fmod(const LowerContext& c) { return remainder(c, false); }

// Integer power as the reference (src/op/elementwise.cc, int_power): by
// squaring in the unsigned type of the same width, so products wrap; a
// negative exponent gives 1 for a base of 1, +-1 for -1 (its parity) and
// 0 for any other base but 0, which fails the kernel with the reference's
// message before anything is written. Statements (an extern): the
// squaring keeps its running product and power in a local buffer, one
// step per bit of the exponent.
Lowered integer_power(const LowerContext& c) {
  const Shape sa = c.in[0].shape, sb = c.in[1].shape, ys = c.out[0].shape;
  const tir::DataType t = elem(c.inputs[0]), u = tir::DataType::uint(t.bits);
  auto body = [=](const std::vector<tir::Buffer>& in, const tir::Buffer& y) {
    // The base and exponent output position p reads.
    auto operands = [&](const std::vector<Expr>& p) {
      return std::pair{tir::load(in[0], broadcast_index(p, sa)), tir::load(in[1], broadcast_index(p, sb))};
    };
    std::vector<tir::Stmt> steps;
    if (t.is_int())
      steps.push_back(loop_nest(ys, "q", [&](const std::vector<Expr>& p) {
        auto [base, exponent] = operands(p);
        Expr report = tir::call_extern(
            tir::DataType::int32(), "KilnBackendCheckFailed",
            {tir::string_imm("power: integer 0 raised to a negative power (division by zero)")});
        return tir::if_then_else(
            tir::binary(tir::BinaryOp::And, tir::eq(base, constant(0, t)), tir::lt(exponent, constant(0, t))),
            tir::seq({tir::evaluate(report), tir::return_stmt(tir::int_imm(-1))}));
      }));
    tir::Buffer acc = tir::make_buffer(c.name + "_squares", u, {tir::int_imm(2)}, tir::MemoryScope::Local);
    steps.push_back(loop_nest(ys, "p", [&](const std::vector<Expr>& p) {
      auto [base, exponent] = operands(p);
      const Expr result = tir::load(acc, {tir::int_imm(0)}), square = tir::load(acc, {tir::int_imm(1)});
      const Expr e = tir::cast(u, exponent);
      tir::Var k = tir::make_var("bit", tir::DataType::int32());
      Expr bit = tir::eq(tir::mod(tir::binary(tir::BinaryOp::Shr, e, tir::cast(u, k)), constant(2, u)),
                         constant(1, u));
      tir::Stmt squaring =
          tir::seq({tir::store(acc, {tir::int_imm(0)}, constant(1, u)),
                    tir::store(acc, {tir::int_imm(1)}, tir::cast(u, base)),
                    tir::for_loop(k, tir::int_imm(0), tir::int_imm(t.bits), tir::ForKind::Serial,
                                  tir::seq({tir::store(acc, {tir::int_imm(0)},
                                                       tir::select(bit, tir::mul(result, square), result)),
                                            tir::store(acc, {tir::int_imm(1)}, tir::mul(square, square))}))});
      Expr value = tir::cast(t, result);
      if (t.is_int()) {
        // Negative exponents: 1 for 1, -1 to an odd power is -1, else 0.
        Expr even = tir::eq(tir::mod(exponent, constant(2, t)), constant(0, t));
        Expr negative =
            tir::select(tir::eq(base, constant(1, t)), constant(1, t),
                        tir::select(tir::eq(base, constant(-1, t)),
                                    tir::select(even, constant(1, t), constant(-1, t)), constant(0, t)));
        value = tir::select(tir::lt(exponent, constant(0, t)), negative, value);
      }
      return tir::seq({squaring, tir::store(y, p, value)});
    }));
    return tir::allocate(acc, tir::seq(std::move(steps)));
  };
  return lowered({te::extern_compute(ys, t, c.inputs, body, c.name)});
}

Lowered power(const LowerContext& c) {
  if (!is_float_input(c)) return integer_power(c);
  return binary(c, [](Expr a, Expr b) { return tir::call_intrinsic(tir::Intrinsic::Pow, {a, b}); });
}

// x shifted by s bits (unsigned), 0 for a shift by the type's width or
// more as the reference (a shift's amount must be below the width).
Lowered bitshift(const LowerContext& c) {
  const bool left = c.attrs.get_string("direction") == "left";
  return binary(c, [&](Expr x, Expr s) {
    const tir::DataType t = x->dtype;
    Expr in_range = tir::lt(s, constant(double(t.bits), t));
    Expr amount = tir::select(in_range, s, constant(0, t));
    Expr shifted = tir::binary(left ? tir::BinaryOp::Shl : tir::BinaryOp::Shr, x, amount);
    return tir::select(in_range, shifted, constant(0, t));
  });
}

// ---------------------------------------------------------------- comparisons and logic

template <tir::BinaryOp Op>
Lowered compare(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::binary(Op, a, b); });
}

Lowered not_equal(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::binary(tir::BinaryOp::NE, a, b); });
}

Lowered logical_and(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::binary(tir::BinaryOp::And, a, b); });
}
Lowered logical_or(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::binary(tir::BinaryOp::Or, a, b); });
}
Lowered logical_xor(const LowerContext& c) {
  return binary(c, [](Expr a, Expr b) { return tir::binary(tir::BinaryOp::NE, a, b); });
}
Lowered logical_not(const LowerContext& c) {
  return unary(c, [](Expr x) { return tir::logical_not(x); });
}

Lowered where(const LowerContext& c) {
  const te::Tensor &cond = c.inputs[0], &a = c.inputs[1], &b = c.inputs[2];
  Shape sc = c.in[0].shape, sa = c.in[1].shape, sb = c.in[2].shape;
  return lowered({te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        return tir::select((*cond)(broadcast_index(i, sc)), (*a)(broadcast_index(i, sa)),
                           (*b)(broadcast_index(i, sb)));
      },
      c.name)});
}

// ---------------------------------------------------------------- astype

// Float to integer as the reference converts: truncate, saturate, NaN -> 0.
Expr float_to_int(const Expr& v, tir::DataType to) {
  double lo = to.is_uint() ? 0.0 : -std::ldexp(1.0, to.bits - 1);
  double hi_excl = to.is_uint() ? std::ldexp(1.0, to.bits) : std::ldexp(1.0, to.bits - 1);
  int64_t imin = to.is_uint() ? 0 : std::numeric_limits<int64_t>::min() >> (64 - to.bits);
  int64_t imax = to.is_uint() ? int64_t((uint64_t(1) << to.bits) - 1)
                              : std::numeric_limits<int64_t>::max() >> (64 - to.bits);
  Expr r = tir::cast(to, v);
  r = tir::select(tir::binary(tir::BinaryOp::LE, v, fconst(lo, v)), tir::int_imm(imin, to), r);
  r = tir::select(tir::binary(tir::BinaryOp::GE, v, fconst(hi_excl, v)), tir::int_imm(imax, to), r);
  return tir::select(is_nan(v), tir::int_imm(0, to), r);
}

Lowered astype(const LowerContext& c) {
  auto to = lowered_dtype(c.out[0].dtype);
  if (!to) return unsupported("astype to " + std::string(dtype_name(c.out[0].dtype)));
  tir::DataType from = elem(c.inputs[0]);
  if (to->is_uint() && to->bits == 64) return unsupported("astype to uint64");
  return unary(c, [&](Expr x) -> Expr {
    if (from == *to) return x;
    if (to->is_bool()) return tir::binary(tir::BinaryOp::NE, x, constant(0, from));
    if (from.is_float() && to->is_integer()) return float_to_int(x, *to);
    return tir::cast(*to, x);
  });
}

}  // namespace

void register_elementwise_lowerings(LoweringTable& t) {
  constexpr OpPattern E = OpPattern::Injective;
  t.add("add", E, add, Dtypes::Any);
  t.add("subtract", E, subtract, Dtypes::Any);
  t.add("multiply", E, multiply, Dtypes::Any);
  t.add("divide", E, divide, Dtypes::Any);
  t.add("power", E, power, Dtypes::Any);
  t.add("mod", OpPattern::Opaque, mod, Dtypes::Any);
  t.add("bitshift", E, bitshift, Dtypes::Any);
  t.add("fmod", OpPattern::Opaque, fmod, Dtypes::Any);
  t.add("maximum", E, maximum, Dtypes::Any);
  t.add("minimum", E, minimum, Dtypes::Any);
  t.add("nn.relu", E, relu);
  t.add("clip", E, clip);
  t.add("sigmoid", E, intrinsic_unary<tir::Intrinsic::Sigmoid>);
  t.add("nn.silu", E, silu);
  t.add("tanh", E, intrinsic_unary<tir::Intrinsic::Tanh>);
  t.add("nn.gelu", E, gelu);
  t.add("sqrt", E, intrinsic_unary<tir::Intrinsic::Sqrt>, Dtypes::Any);
  t.add("exp", E, intrinsic_unary<tir::Intrinsic::Exp>, Dtypes::Any);
  t.add("negative", E, negative, Dtypes::Any);
  t.add("abs", E, abs_op, Dtypes::Any);
  t.add("erf", E, intrinsic_unary<tir::Intrinsic::Erf>);
  t.add("log", E, intrinsic_unary<tir::Intrinsic::Log>, Dtypes::Any);
  t.add("nn.leaky_relu", E, leaky_relu);
  t.add("nn.hard_sigmoid", E, hard_sigmoid);
  t.add("nn.hard_swish", E, hard_swish);
  t.add("floor", E, intrinsic_unary<tir::Intrinsic::Floor>);
  t.add("ceil", E, intrinsic_unary<tir::Intrinsic::Ceil>);
  t.add("round", E, intrinsic_unary<tir::Intrinsic::Round>);
  t.add("sign", E, sign);
  t.add("sin", E, intrinsic_unary<tir::Intrinsic::Sin>);
  t.add("cos", E, intrinsic_unary<tir::Intrinsic::Cos>);
  t.add("tan", E, intrinsic_unary<tir::Intrinsic::Tan>);
  t.add("asin", E, intrinsic_unary<tir::Intrinsic::Asin>);
  t.add("acos", E, intrinsic_unary<tir::Intrinsic::Acos>);
  t.add("atan", E, intrinsic_unary<tir::Intrinsic::Atan>);
  t.add("sinh", E, intrinsic_unary<tir::Intrinsic::Sinh>);
  t.add("cosh", E, intrinsic_unary<tir::Intrinsic::Cosh>);
  t.add("asinh", E, intrinsic_unary<tir::Intrinsic::Asinh>);
  t.add("acosh", E, intrinsic_unary<tir::Intrinsic::Acosh>);
  t.add("atanh", E, intrinsic_unary<tir::Intrinsic::Atanh>);
  t.add("astype", E, astype, Dtypes::Any);
  t.add("equal", E, compare<tir::BinaryOp::EQ>, Dtypes::Any);
  t.add("not_equal", E, not_equal, Dtypes::Any);
  t.add("less", E, compare<tir::BinaryOp::LT>, Dtypes::Any);
  t.add("less_equal", E, compare<tir::BinaryOp::LE>, Dtypes::Any);
  t.add("greater", E, compare<tir::BinaryOp::GT>, Dtypes::Any);
  t.add("greater_equal", E, compare<tir::BinaryOp::GE>, Dtypes::Any);
  t.add("logical_and", E, logical_and);
  t.add("logical_or", E, logical_or);
  t.add("logical_xor", E, logical_xor);
  t.add("logical_not", E, logical_not);
  t.add("where", E, where, Dtypes::Any);
}

}  // namespace kiln::lower
