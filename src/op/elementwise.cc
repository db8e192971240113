// Elementwise ops: binary arithmetic with numpy broadcasting, unary math and
// activations, clip, and astype.
//
// Semantics (the reference every backend is compared with):
// - Binary ops (add, subtract, multiply, divide, power, maximum, minimum, mod,
//   fmod) take two inputs of one dtype (float32, float16, float64, bfloat16,
//   int8, uint8, int16, uint16, int32, uint32, int64, uint64) and broadcast
//   like numpy. float16 and bfloat16 compute in float and round once on store.
//   Integer add/subtract/multiply wrap around (two's complement, like numpy).
//   Integer divide truncates toward zero (like C and ONNX Div); INT_MIN / -1
//   wraps to INT_MIN; division by zero throws kiln::Error. Integer power is
//   exact (wrapping) for exponents >= 0; a negative exponent gives
//   1 / x^-e truncated toward zero (1 for x = 1, +-1 for x = -1, else 0) and
//   0 to a negative power throws like a division by zero. maximum/minimum
//   propagate NaN. mod is the floored remainder (the sign of the divisor,
//   like numpy.mod and Python's %), fmod the truncated one (the sign of the
//   dividend, like C's fmod); both throw on an integer division by zero and
//   give NaN for a float one.
// - Unary float ops (exp, log, sqrt, erf, the trigonometric and hyperbolic
//   functions and their inverses, ...) compute in double and round once to the
//   output dtype; arguments outside the domain give NaN like std::.
//   nn.relu, clip, negative and abs also accept integers; negative and abs wrap
//   (abs(-128) is -128 in int8, like numpy). clip on integers clamps to the
//   bounds rounded half to even and saturated to the dtype's range. clip is
//   min(max(x, a_min), a_max), so a_min > a_max gives a_max everywhere (like
//   numpy and ONNX Clip); NaN bounds are an error. round is half to even.
//   sign is -1, 0 or 1 (NaN stays NaN) and also accepts integers.
// - astype converts any dtype to any dtype: float -> int truncates toward zero
//   and saturates at the type's range, NaN -> 0; int -> narrower int wraps
//   (like numpy and C); anything -> bool is "nonzero"; bool -> x is 0 or 1;
//   -> float16 and -> bfloat16 round to nearest even (float64 -> 16-bit
//   floats goes through float32, like numpy's casts).
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kNumeric = kNumericDTypes;
constexpr std::initializer_list<DType> kFloats = kFloatDTypes;

// ---- binary ---------------------------------------------------------------

enum class BinaryKind { Add, Subtract, Multiply, Divide, Power, Maximum, Minimum, Mod, FMod };

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

// Integer power by squaring in unsigned arithmetic, so overflow wraps.
template <typename T>
T int_power(T base, T exp) {
  if (exp < 0) {
    if (base == 0) throw Error("power: integer 0 raised to a negative power (division by zero)");
    if (base == 1) return 1;
    if (base == static_cast<T>(-1)) return (exp % 2 == 0) ? 1 : static_cast<T>(-1);
    return 0;
  }
  using U = Unsigned<T>;
  U result = 1, b = static_cast<U>(base);
  for (auto e = static_cast<U>(exp); e != 0; e >>= 1) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<T>(result);
}

template <BinaryKind K, typename C>
C apply_binary(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if constexpr (K == BinaryKind::Add) return a + b;
    if constexpr (K == BinaryKind::Subtract) return a - b;
    if constexpr (K == BinaryKind::Multiply) return a * b;
    if constexpr (K == BinaryKind::Divide) return a / b;
    if constexpr (K == BinaryKind::Power) return static_cast<C>(std::pow(double(a), double(b)));
    if constexpr (K == BinaryKind::Maximum) return std::isnan(a) || a > b ? a : b;
    if constexpr (K == BinaryKind::Minimum) return std::isnan(a) || a < b ? a : b;
    if constexpr (K == BinaryKind::FMod) return std::fmod(a, b);
    if constexpr (K == BinaryKind::Mod) {
      C r = std::fmod(a, b);
      return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
  } else {
    using U = Unsigned<C>;
    if constexpr (K == BinaryKind::Add)
      return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    if constexpr (K == BinaryKind::Subtract)
      return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
    if constexpr (K == BinaryKind::Multiply)
      return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    if constexpr (K == BinaryKind::Divide) {
      if (b == 0) throw Error("divide: integer division by zero");
      if constexpr (std::is_signed_v<C>)
        if (b == -1) return static_cast<C>(static_cast<U>(0) - static_cast<U>(a));  // wraps INT_MIN
      return static_cast<C>(a / b);
    }
    if constexpr (K == BinaryKind::Power) return int_power<C>(a, b);
    if constexpr (K == BinaryKind::Maximum) return a > b ? a : b;
    if constexpr (K == BinaryKind::Minimum) return a < b ? a : b;
    if constexpr (K == BinaryKind::Mod || K == BinaryKind::FMod) {
      if (b == 0)
        throw Error(std::string(K == BinaryKind::Mod ? "mod" : "fmod") + ": integer division by zero");
      C r = 0;
      // INT_MIN % -1 overflows in C++; the remainder is 0 for any divisor -1.
      if constexpr (std::is_signed_v<C>)
        r = b == -1 ? C{0} : static_cast<C>(a % b);
      else
        r = static_cast<C>(a % b);
      if constexpr (K == BinaryKind::Mod && std::is_signed_v<C>)
        if (r != 0 && (r < 0) != (b < 0)) r = static_cast<C>(r + b);
      return r;
    }
  }
}

template <BinaryKind K>
void binary_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  Tensor& y = out[0];
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    if constexpr (std::is_same_v<C, bool>) {
      KILN_ASSERT(false, "binary op on bool passed inference");
    } else {
      const S* pa = a.data<S>();
      const S* pb = b.data<S>();
      S* py = y.data<S>();
      auto f = [](S x, S z) { return Tag::store(apply_binary<K, C>(Tag::load(x), Tag::load(z))); };
      std::array<std::vector<int64_t>, 2> strides{broadcast_strides(a.shape(), y.shape()),
                                                  broadcast_strides(b.shape(), y.shape())};
      for_each_row<2>(y.shape(), strides,
                      [&](int64_t o, std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
                        const S* ra = pa + off[0];
                        const S* rb = pb + off[1];
                        S* ry = py + o;
                        // The common layouts get loops the compiler can vectorise.
                        if (st[0] == 1 && st[1] == 1) {
                          for (int64_t i = 0; i < n; ++i) ry[i] = f(ra[i], rb[i]);
                        } else if (st[0] == 1 && st[1] == 0) {
                          for (int64_t i = 0; i < n; ++i) ry[i] = f(ra[i], rb[0]);
                        } else if (st[0] == 0 && st[1] == 1) {
                          for (int64_t i = 0; i < n; ++i) ry[i] = f(ra[0], rb[i]);
                        } else {
                          for (int64_t i = 0; i < n; ++i) ry[i] = f(ra[i * st[0]], rb[i * st[1]]);
                        }
                      });
    }
  });
}

// The op name for messages is recovered from the kind at registration time.
template <BinaryKind K>
std::vector<TensorDesc> binary_infer(const std::vector<TensorDesc>& in, const Attrs&);

const char* binary_name(BinaryKind k) {
  switch (k) {
    case BinaryKind::Add:
      return "add";
    case BinaryKind::Subtract:
      return "subtract";
    case BinaryKind::Multiply:
      return "multiply";
    case BinaryKind::Divide:
      return "divide";
    case BinaryKind::Power:
      return "power";
    case BinaryKind::Maximum:
      return "maximum";
    case BinaryKind::Minimum:
      return "minimum";
    case BinaryKind::Mod:
      return "mod";
    case BinaryKind::FMod:
      return "fmod";
  }
  return "?";
}

template <BinaryKind K>
std::vector<TensorDesc> binary_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  std::string op = binary_name(K);
  if (in[0].dtype != in[1].dtype)
    throw Error(op + ": inputs have different dtypes " + std::string(dtype_name(in[0].dtype)) + " and " +
                std::string(dtype_name(in[1].dtype)) + "; insert an astype to match them");
  require_dtype(op, "input 0", in[0].dtype, kNumeric);
  return {{broadcast_shapes(op, in[0].shape, in[1].shape), in[0].dtype}};
}

template <BinaryKind K>
void add_binary(OpRegistry& r, const char* summary) {
  OpDef d;
  d.name = binary_name(K);
  d.summary = summary;
  d.min_inputs = d.max_inputs = 2;
  d.infer = binary_infer<K>;
  d.kernel = binary_kernel<K>;
  d.dynamic_inputs = DynamicInputs::Follow;
  r.add(std::move(d));
}

// ---- unary ----------------------------------------------------------------

// Applies f (double -> double) to a float tensor (float32, float16, float64,
// bfloat16); the result rounds once to the dtype (through float for the
// 16-bit types, as before).
template <typename F>
void map_float(const Tensor& x, Tensor& y, F f) {
  KILN_ASSERT(is_float(x.dtype()), "map_float on a non-float tensor");
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    if constexpr (std::is_floating_point_v<C>) {
      const S* px = x.data<S>();
      S* py = y.data<S>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i)
        py[i] = Tag::store(static_cast<C>(f(static_cast<double>(Tag::load(px[i])))));
    }
  });
}

// Applies f to any numeric tensor: f(double) for floats, f(C) for integers,
// where C is the integer compute type (the result is converted back with a
// wrap-around static_cast).
template <typename FF, typename FI>
void map_numeric(const Tensor& x, Tensor& y, FF ffloat, FI fint) {
  if (is_float(x.dtype())) return map_float(x, y, ffloat);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    if constexpr (std::is_integral_v<typename Tag::compute> && !std::is_same_v<typename Tag::compute, bool>) {
      const S* px = x.data<S>();
      S* py = y.data<S>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = static_cast<S>(fint(px[i]));
    } else {
      KILN_ASSERT(false, "map_numeric on an unsupported dtype");
    }
  });
}

std::vector<TensorDesc> infer_float_unary(const std::string& op, const std::vector<TensorDesc>& in) {
  require_dtype(op, "input x", in[0].dtype, kFloats);
  return {in[0]};
}
std::vector<TensorDesc> infer_numeric_unary(const std::string& op, const std::vector<TensorDesc>& in) {
  require_dtype(op, "input x", in[0].dtype, kNumeric);
  return {in[0]};
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double hard_sigmoid(double x, double alpha, double beta) {
  return std::max(0.0, std::min(1.0, alpha * x + beta));
}

// One struct per float-only unary op keeps the registration table short: the
// name, summary and the function of one element.
#define KILN_FLOAT_UNARY(IDENT, NAME, SUMMARY, EXPR)                                           \
  std::vector<TensorDesc> IDENT##_infer(const std::vector<TensorDesc>& in, const Attrs&) {     \
    return infer_float_unary(NAME, in);                                                        \
  }                                                                                            \
  void IDENT##_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) { \
    map_float(in[0], out[0], [](double x) { return EXPR; });                                   \
  }

KILN_FLOAT_UNARY(sigmoid, "sigmoid", "1 / (1 + exp(-x))", sigmoid(x))
KILN_FLOAT_UNARY(tanh, "tanh", "hyperbolic tangent", std::tanh(x))
KILN_FLOAT_UNARY(sqrt, "sqrt", "square root (NaN below 0)", std::sqrt(x))
KILN_FLOAT_UNARY(exp, "exp", "e to the power x", std::exp(x))
KILN_FLOAT_UNARY(erf, "erf", "the Gauss error function", std::erf(x))
KILN_FLOAT_UNARY(log, "log", "natural logarithm (-inf at 0, NaN below 0)", std::log(x))
KILN_FLOAT_UNARY(floor, "floor", "largest integer <= x", std::floor(x))
KILN_FLOAT_UNARY(ceil, "ceil", "smallest integer >= x", std::ceil(x))
KILN_FLOAT_UNARY(round, "round", "nearest integer, ties to even", round_half_even(x))
KILN_FLOAT_UNARY(sin, "sin", "sine", std::sin(x))
KILN_FLOAT_UNARY(cos, "cos", "cosine", std::cos(x))
KILN_FLOAT_UNARY(tan, "tan", "tangent", std::tan(x))
KILN_FLOAT_UNARY(asin, "asin", "arc sine", std::asin(x))
KILN_FLOAT_UNARY(acos, "acos", "arc cosine", std::acos(x))
KILN_FLOAT_UNARY(atan, "atan", "arc tangent", std::atan(x))
KILN_FLOAT_UNARY(sinh, "sinh", "hyperbolic sine", std::sinh(x))
KILN_FLOAT_UNARY(cosh, "cosh", "hyperbolic cosine", std::cosh(x))
KILN_FLOAT_UNARY(asinh, "asinh", "inverse hyperbolic sine", std::asinh(x))
KILN_FLOAT_UNARY(acosh, "acosh", "inverse hyperbolic cosine", std::acosh(x))
KILN_FLOAT_UNARY(atanh, "atanh", "inverse hyperbolic tangent", std::atanh(x))
KILN_FLOAT_UNARY(silu, "nn.silu", "x * sigmoid(x)", x* sigmoid(x))
KILN_FLOAT_UNARY(hard_swish, "nn.hard_swish", "x * clamp((x + 3) / 6, 0, 1)",
                 x* std::max(0.0, std::min(1.0, (x + 3.0) / 6.0)))
#undef KILN_FLOAT_UNARY

// nn.relu, negative, abs: floats and integers.
std::vector<TensorDesc> relu_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  return infer_numeric_unary("nn.relu", in);
}
void relu_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  map_numeric(
      in[0], out[0], [](double x) { return x < 0 ? 0.0 : x; },  // keeps NaN
      [](auto x) { return x < 0 ? decltype(x){0} : x; });
}

std::vector<TensorDesc> negative_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  return infer_numeric_unary("negative", in);
}
void negative_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  map_numeric(
      in[0], out[0], [](double x) { return -x; },
      [](auto x) {
        using U = std::make_unsigned_t<decltype(x)>;
        return static_cast<decltype(x)>(static_cast<U>(U{0} - static_cast<U>(x)));
      });
}

std::vector<TensorDesc> abs_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  return infer_numeric_unary("abs", in);
}
void abs_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  map_numeric(
      in[0], out[0], [](double x) { return std::fabs(x); },
      [](auto x) {
        using T = decltype(x);
        using U = std::make_unsigned_t<T>;
        if constexpr (std::is_signed_v<T>)
          return x < 0 ? static_cast<T>(static_cast<U>(U{0} - static_cast<U>(x))) : x;
        else
          return x;
      });
}

std::vector<TensorDesc> sign_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  return infer_numeric_unary("sign", in);
}
void sign_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  map_numeric(
      in[0], out[0], [](double x) { return std::isnan(x) ? x : double((x > 0) - (x < 0)); },
      [](auto x) {
        if constexpr (std::is_signed_v<decltype(x)>)
          return (x > 0) - (x < 0);
        else
          return static_cast<int>(x > 0);
      });
}

// clip(a_min, a_max).
std::vector<TensorDesc> clip_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  double lo = attrs.get_float("a_min"), hi = attrs.get_float("a_max");
  if (std::isnan(lo) || std::isnan(hi)) throw Error("clip: attributes 'a_min' and 'a_max' must not be NaN");
  return infer_numeric_unary("clip", in);
}
void clip_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  double lo = attrs.get_float("a_min"), hi = attrs.get_float("a_max");
  if (is_float(in[0].dtype())) {
    return map_float(in[0], out[0], [&](double x) {
      if (std::isnan(x)) return x;
      return std::min(std::max(x, lo), hi);
    });
  }
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using S = typename decltype(tag)::storage;
    if constexpr (std::is_integral_v<typename decltype(tag)::compute> &&
                  !std::is_same_v<typename decltype(tag)::compute, bool>) {
      auto bound = [](double v) {
        double r = round_half_even(v);
        if (r <= static_cast<double>(std::numeric_limits<S>::lowest()))
          return std::numeric_limits<S>::lowest();
        if (r >= static_cast<double>(std::numeric_limits<S>::max())) return std::numeric_limits<S>::max();
        return static_cast<S>(r);
      };
      S l = bound(lo), h = bound(hi);
      const S* px = in[0].data<S>();
      S* py = out[0].data<S>();
      for (int64_t i = 0, n = in[0].numel(); i < n; ++i) py[i] = std::min(std::max(px[i], l), h);
    }
  });
}

// nn.gelu(approximate).
std::vector<TensorDesc> gelu_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string& a = attrs.get_string("approximate");
  if (a != "none" && a != "tanh")
    throw Error("nn.gelu: attribute 'approximate' = \"" + a +
                "\" is not supported (expected \"none\" or \"tanh\")");
  return infer_float_unary("nn.gelu", in);
}
void gelu_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  if (attrs.get_string("approximate") == "tanh") {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return map_float(in[0], out[0],
                     [k](double x) { return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))); });
  }
  map_float(in[0], out[0], [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); });
}

// nn.leaky_relu(alpha).
std::vector<TensorDesc> leaky_relu_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  return infer_float_unary("nn.leaky_relu", in);
}
void leaky_relu_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  double alpha = attrs.get_float("alpha");
  map_float(in[0], out[0], [alpha](double x) { return x < 0 ? alpha * x : x; });
}

// nn.hard_sigmoid(alpha, beta).
std::vector<TensorDesc> hard_sigmoid_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  return infer_float_unary("nn.hard_sigmoid", in);
}
void hard_sigmoid_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  double alpha = attrs.get_float("alpha"), beta = attrs.get_float("beta");
  map_float(in[0], out[0], [=](double x) { return std::isnan(x) ? x : hard_sigmoid(x, alpha, beta); });
}

// ---- astype ---------------------------------------------------------------

DType astype_target(const Attrs& attrs) {
  const std::string& name = attrs.get_string("dtype");
  auto t = dtype_from_name(name);
  if (!t)
    throw Error("astype: attribute 'dtype' = \"" + name +
                "\" is not a dtype (expected float32, float16, float64, bfloat16, int8, uint8, int16, "
                "uint16, int32, uint32, int64, uint64 or bool)");
  return *t;
}

std::vector<TensorDesc> astype_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  return {{in[0].shape, astype_target(attrs)}};
}

// Float to integer: truncate toward zero, saturate, NaN -> 0.
template <typename T>
T float_to_int(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  // lowest() and max() + 1 are powers of two, exact in double.
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// float64 to float32 rounding to odd: then one more rounding to a 16-bit
// float (11 or 8 significant bits) equals rounding the double directly, so a
// float64 -> float16 / bfloat16 cast rounds once, like numpy.
float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::isinf(f)) return std::copysign(std::numeric_limits<float>::max(), f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (bits & 1u) return f;
  return std::nextafter(f, d > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                      : -std::numeric_limits<float>::infinity());
}

template <typename From, typename To>
typename To::storage convert(typename From::storage s) {
  using FC = typename From::compute;
  using TS = typename To::storage;
  using TC = typename To::compute;
  FC v = From::load(s);
  if constexpr (std::is_same_v<TC, bool>) {
    return To::store(v != FC{0});
  } else if constexpr (std::is_same_v<FC, double> && std::is_same_v<TC, float> && sizeof(TS) == 2) {
    return To::store(round_to_odd_float(v));
  } else if constexpr (std::is_floating_point_v<TC>) {
    return To::store(static_cast<TC>(v));
  } else if constexpr (std::is_floating_point_v<FC>) {
    return static_cast<TS>(float_to_int<TS>(static_cast<double>(v)));
  } else {
    // Integer (or bool) to integer: two's complement wrap, as C++20 defines it.
    return static_cast<TS>(v);
  }
}

void astype_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  if (x.dtype() == y.dtype()) {
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  dispatch_dtype(x.dtype(), [&](auto from) {
    dispatch_dtype(y.dtype(), [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      const auto* px = x.data<typename From::storage>();
      auto* py = y.data<typename To::storage>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = convert<From, To>(px[i]);
    });
  });
}

// ---- registration ---------------------------------------------------------

void add_unary(OpRegistry& r, const char* name, const char* summary, InferFn infer, KernelFn kernel,
               std::vector<AttrSpec> attrs = {}) {
  OpDef d;
  d.name = name;
  d.summary = summary;
  d.attrs = std::move(attrs);
  d.infer = infer;
  d.kernel = kernel;
  d.dynamic_inputs = DynamicInputs::Follow;
  r.add(std::move(d));
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  add_binary<BinaryKind::Add>(r, "a + b, numpy broadcasting; integers wrap");
  add_binary<BinaryKind::Subtract>(r, "a - b, numpy broadcasting; integers wrap");
  add_binary<BinaryKind::Multiply>(r, "a * b, numpy broadcasting; integers wrap");
  add_binary<BinaryKind::Divide>(r, "a / b, numpy broadcasting; integers truncate toward zero");
  add_binary<BinaryKind::Power>(r, "a to the power b, numpy broadcasting; exact for integers");
  add_binary<BinaryKind::Maximum>(r, "elementwise max(a, b), numpy broadcasting; NaN propagates");
  add_binary<BinaryKind::Minimum>(r, "elementwise min(a, b), numpy broadcasting; NaN propagates");
  add_binary<BinaryKind::Mod>(r, "floored remainder (sign of b, like numpy.mod), numpy broadcasting");
  add_binary<BinaryKind::FMod>(r, "truncated remainder (sign of a, like C fmod), numpy broadcasting");

  add_unary(r, "nn.relu", "max(x, 0)", relu_infer, relu_kernel);
  add_unary(r, "clip", "clamp x to [a_min, a_max]", clip_infer, clip_kernel,
            {{"a_min", AttrKind::Float, std::nullopt}, {"a_max", AttrKind::Float, std::nullopt}});
  add_unary(r, "sigmoid", "1 / (1 + exp(-x))", sigmoid_infer, sigmoid_kernel);
  add_unary(r, "tanh", "hyperbolic tangent", tanh_infer, tanh_kernel);
  add_unary(r, "nn.gelu", "x * Phi(x); approximate=\"tanh\" uses the tanh form", gelu_infer, gelu_kernel,
            {{"approximate", AttrKind::String, AttrValue(std::string("none"))}});
  add_unary(r, "sqrt", "square root", sqrt_infer, sqrt_kernel);
  add_unary(r, "exp", "e to the power x", exp_infer, exp_kernel);
  add_unary(r, "negative", "-x; integers wrap", negative_infer, negative_kernel);
  add_unary(r, "abs", "|x|; integers wrap at the minimum", abs_infer, abs_kernel);
  add_unary(r, "erf", "the Gauss error function", erf_infer, erf_kernel);
  add_unary(r, "log", "natural logarithm", log_infer, log_kernel);
  add_unary(r, "nn.leaky_relu", "x for x >= 0, alpha * x below", leaky_relu_infer, leaky_relu_kernel,
            {{"alpha", AttrKind::Float, AttrValue(0.01)}});
  add_unary(r, "nn.hard_sigmoid", "clamp(alpha * x + beta, 0, 1)", hard_sigmoid_infer, hard_sigmoid_kernel,
            {{"alpha", AttrKind::Float, AttrValue(0.2)}, {"beta", AttrKind::Float, AttrValue(0.5)}});
  add_unary(r, "nn.hard_swish", "x * clamp((x + 3) / 6, 0, 1)", hard_swish_infer, hard_swish_kernel);
  add_unary(r, "nn.silu", "x * sigmoid(x) (swish)", silu_infer, silu_kernel);
  add_unary(r, "floor", "largest integer <= x", floor_infer, floor_kernel);
  add_unary(r, "ceil", "smallest integer >= x", ceil_infer, ceil_kernel);
  add_unary(r, "round", "nearest integer, ties to even", round_infer, round_kernel);
  add_unary(r, "sign", "-1, 0 or 1 by the sign of x; NaN stays NaN", sign_infer, sign_kernel);
  add_unary(r, "sin", "sine", sin_infer, sin_kernel);
  add_unary(r, "cos", "cosine", cos_infer, cos_kernel);
  add_unary(r, "tan", "tangent", tan_infer, tan_kernel);
  add_unary(r, "asin", "arc sine (NaN outside [-1, 1])", asin_infer, asin_kernel);
  add_unary(r, "acos", "arc cosine (NaN outside [-1, 1])", acos_infer, acos_kernel);
  add_unary(r, "atan", "arc tangent", atan_infer, atan_kernel);
  add_unary(r, "sinh", "hyperbolic sine", sinh_infer, sinh_kernel);
  add_unary(r, "cosh", "hyperbolic cosine", cosh_infer, cosh_kernel);
  add_unary(r, "asinh", "inverse hyperbolic sine", asinh_infer, asinh_kernel);
  add_unary(r, "acosh", "inverse hyperbolic cosine (NaN below 1)", acosh_infer, acosh_kernel);
  add_unary(r, "atanh", "inverse hyperbolic tangent (NaN outside [-1, 1])", atanh_infer, atanh_kernel);
  add_unary(r, "astype", "convert to another dtype (float -> int truncates and saturates)", astype_infer,
            astype_kernel, {{"dtype", AttrKind::String, AttrValue(std::string("float32"))}});
}

}  // namespace kiln
