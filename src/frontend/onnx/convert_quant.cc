// ONNX integer and quantized operators: ConvInteger, MatMulInteger,
// QLinearConv, QLinearMatMul, DynamicQuantizeLinear. Each decomposes into
// existing kiln ops; the integer parts are exact.
//
// The 8-bit operands are shifted by their zero points in int32 (an absent
// zero point leaves the operand 8-bit), and the product accumulates in int32
// (nn.conv2d and matmul take int32 operands for this):
//
//   y = ConvInteger(x: uint8, w: uint8, x_zero_point)
//   =>  %xs = subtract(astype(%x, int32), astype(%x_zero_point, int32))
//       %y  = nn.conv2d(%xs, %w, ...)                            // int32
//
// Padding adds zeros to the shifted input, i.e. pads x with its zero point,
// as ONNX specifies. The QLinear ops then requantize the int32 accumulator
// (plus QLinearConv's int32 bias) in float32:
//
//   y = astype(round(astype(acc, float32) * (a_scale * b_scale / y_scale)) + y_zero_point, T)
//
// with the multiplier computed in float32 in that order, round half to even,
// and astype saturating to T's range (T is y_zero_point's dtype). The
// accumulator rounds to float32 only beyond 2^24.
//
// Scales and zero points are per tensor (one value) or, where ONNX allows,
// per row of a / per column of b (a vector of M or N values, or the N-D
// forms (..., M, 1) and (..., 1, N)), and per output channel of a
// convolution's weight (a vector of M values). They may be graph inputs.
//
// DynamicQuantizeLinear(x: float32) -> (y: uint8, y_scale, y_zero_point):
//   lo = min(min(x), 0), hi = max(max(x), 0), y_scale = (hi - lo) / 255,
//   y_zero_point = astype(round(0 - lo / y_scale), uint8),
//   y = astype(round(x / y_scale) + y_zero_point, uint8)
// all in float32. An all-zero x gives y_scale 0, and the 0/0 NaNs convert to
// 0 (astype sends NaN to 0): y and y_zero_point are 0.
#include <optional>
#include <string>
#include <utility>

#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

Expr reshape(NodeContext& n, Expr x, const Shape& shape) {
  if (x->type->tensor.shape == shape) return x;
  return n.call("reshape", {x}, {{"newshape", std::vector<int64_t>(shape)}});
}

Expr cast(NodeContext& n, Expr x, DType to) {
  if (x->type->tensor.dtype == to) return x;
  return n.call("astype", {x}, {{"dtype", std::string(dtype_name(to))}});
}

int64_t numel_of(const Shape& s) {
  int64_t k = 1;
  for (int64_t d : s) k *= d;
  return k;
}

void require_8bit(NodeContext& n, size_t i, const std::string& what) {
  DType t = n.desc(i).dtype;
  if (t != DType::Int8 && t != DType::UInt8)
    n.fail(what + " has dtype " + std::string(dtype_name(t)) + "; expected int8 or uint8");
}

// A zero point must have its data's dtype.
void require_same_dtype(NodeContext& n, size_t zp, const std::string& zp_what, size_t data,
                        const std::string& data_what) {
  if (n.desc(zp).dtype != n.desc(data).dtype)
    n.fail(zp_what + " has dtype " + std::string(dtype_name(n.desc(zp).dtype)) + " but " + data_what +
           " has dtype " + std::string(dtype_name(n.desc(data).dtype)) + "; they must match");
}

void require_float32(NodeContext& n, size_t i, const std::string& what) {
  if (n.desc(i).dtype != DType::Float32)
    n.fail(what + " has dtype " + std::string(dtype_name(n.desc(i).dtype)) + "; expected float32");
}

// How a scale or zero point may vary: one value, or one per output channel
// of a convolution, per row of matmul's a, per column of matmul's b.
enum class Granularity { Tensor, Channel, Row, Column };

// Input i (a scale or zero point, `what`) reshaped to broadcast against a
// tensor whose varying axis has `size` entries followed by `trailing` axes
// (the channel axis of a weight or an output, the rows or columns of a
// matmul operand or result), as `to` (float32 for scales, int32 for zero
// points). `data` is the operand's shape, for the N-D per-row/column form.
Expr quant_param(NodeContext& n, size_t i, const std::string& what, Granularity g, const Shape& data,
                 int64_t size, int64_t trailing, DType to) {
  const Shape& s = n.desc(i).shape;
  Expr p = cast(n, n.input(i), to);
  if (numel_of(s) == 1) return reshape(n, p, {});
  auto expected = [&]() -> std::string {
    if (size < 1) return "a single value (per tensor)";
    switch (g) {
      case Granularity::Tensor:
        return "a single value (per tensor)";
      case Granularity::Channel:
        return "a single value or (" + std::to_string(size) + ",) (per output channel)";
      case Granularity::Row:
        return "a single value, (" + std::to_string(size) + ",) or (..., " + std::to_string(size) +
               ", 1) (per row)";
      case Granularity::Column:
        return "a single value, (" + std::to_string(size) + ",) or (..., 1, " + std::to_string(size) +
               ") (per column)";
    }
    return "";
  };
  if (g == Granularity::Tensor || size < 1)
    n.fail(what + " has shape " + shape_str(s) + "; expected " + expected());
  if (s.size() == 1 && s[0] == size) {
    Shape along(static_cast<size_t>(trailing) + 1, 1);
    along[0] = size;
    return reshape(n, p, along);
  }
  // The N-D form: data's shape with the reduced axis (K) set to 1.
  if ((g == Granularity::Row || g == Granularity::Column) && s.size() == data.size() && s.size() >= 2) {
    Shape want = data;
    want[data.size() - (g == Granularity::Row ? 1 : 2)] = 1;
    if (s == want) return p;
  }
  n.fail(what + " has shape " + shape_str(s) + "; expected " + expected());
}

// Operand `data` shifted by its zero point `zp` (already shaped): int32.
// Without a zero point the 8-bit operand is used as it is.
Expr shifted(NodeContext& n, size_t data, std::optional<Expr> zp) {
  if (!zp) return n.input(data);
  return n.call("subtract", {cast(n, n.input(data), DType::Int32), *zp});
}

// y = astype(round(astype(acc, float32) * multiplier) + zero_point, T).
Expr requantize(NodeContext& n, Expr acc, Expr multiplier, size_t zp_input) {
  DType t = n.desc(zp_input).dtype;
  Expr zp = reshape(n, cast(n, n.input(zp_input), DType::Float32), {});
  Expr v = n.call("round", {n.call("multiply", {cast(n, acc, DType::Float32), multiplier})});
  return cast(n, n.call("add", {v, zp}), t);
}

// ---- convolutions ----------------------------------------------------------

// Channels of a convolution weight (M, C/group, k...).
int64_t weight_channels(NodeContext& n, size_t w) {
  if (n.rank(w) < 1) n.fail("the weight is a scalar; expected (M, C/group, k...)");
  return n.desc(w).shape[0];
}

// The channel axis of a convolution result (N, M, spatial...) is followed by
// the weight's spatial axes.
int64_t spatial_axes(NodeContext& n, size_t w) { return n.rank(w) - 2; }

// ConvInteger(x, w, x_zero_point?, w_zero_point?) -> int32.
void convert_conv_integer(NodeContext& n) {
  require_8bit(n, 0, "x");
  require_8bit(n, 1, "w");
  const int64_t m = weight_channels(n, 1), trailing = n.rank(1) - 1;
  std::optional<Expr> xz, wz;
  if (n.has_input(2)) {
    require_same_dtype(n, 2, "x_zero_point", 0, "x");
    xz = quant_param(n, 2, "x_zero_point", Granularity::Tensor, {}, 0, 0, DType::Int32);
  }
  if (n.has_input(3)) {
    require_same_dtype(n, 3, "w_zero_point", 1, "w");
    wz = quant_param(n, 3, "w_zero_point", Granularity::Channel, {}, m, trailing, DType::Int32);
  }
  Expr y = conv_from_node_attrs(n, shifted(n, 0, xz), shifted(n, 1, wz));
  n.set_output(0, cast(n, y, DType::Int32));
}

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B?) -> y_zero_point's dtype.
void convert_qlinear_conv(NodeContext& n) {
  require_8bit(n, 0, "x");
  require_8bit(n, 3, "w");
  require_8bit(n, 7, "y_zero_point");
  require_same_dtype(n, 2, "x_zero_point", 0, "x");
  require_same_dtype(n, 5, "w_zero_point", 3, "w");
  for (auto [i, what] : {std::pair<size_t, const char*>{1, "x_scale"}, {4, "w_scale"}, {6, "y_scale"}})
    require_float32(n, i, what);
  const int64_t m = weight_channels(n, 3), w_trailing = n.rank(3) - 1, y_trailing = spatial_axes(n, 3);
  Expr xz = quant_param(n, 2, "x_zero_point", Granularity::Tensor, {}, 0, 0, DType::Int32);
  Expr wz = quant_param(n, 5, "w_zero_point", Granularity::Channel, {}, m, w_trailing, DType::Int32);
  Expr acc = conv_from_node_attrs(n, shifted(n, 0, xz), shifted(n, 3, wz));
  if (n.has_input(8)) {
    if (n.desc(8).dtype != DType::Int32)
      n.fail("B has dtype " + std::string(dtype_name(n.desc(8).dtype)) + "; expected int32");
    if (n.desc(8).shape != Shape{m})
      n.fail("B has shape " + shape_str(n.desc(8).shape) + "; expected (" + std::to_string(m) + ",)");
    Shape along(static_cast<size_t>(y_trailing) + 1, 1);
    along[0] = m;
    acc = n.call("add", {acc, reshape(n, n.input(8), along)});
  }
  Expr xs = quant_param(n, 1, "x_scale", Granularity::Tensor, {}, 0, 0, DType::Float32);
  Expr ws = quant_param(n, 4, "w_scale", Granularity::Channel, {}, m, y_trailing, DType::Float32);
  Expr ys = quant_param(n, 6, "y_scale", Granularity::Tensor, {}, 0, 0, DType::Float32);
  quant_param(n, 7, "y_zero_point", Granularity::Tensor, {}, 0, 0, DType::Float32);  // its shape
  Expr multiplier = n.call("divide", {n.call("multiply", {xs, ws}), ys});
  n.set_output(0, requantize(n, acc, multiplier, 7));
}

// ---- matrix products -------------------------------------------------------

// Rows of a (M in (..., M, K)) and columns of b (N in (..., K, N)); 0 for a
// 1-D operand, which has only per-tensor parameters.
int64_t rows_of(NodeContext& n, size_t a) {
  const Shape& s = n.desc(a).shape;
  return s.size() >= 2 ? s[s.size() - 2] : 0;
}
int64_t columns_of(NodeContext& n, size_t b) {
  const Shape& s = n.desc(b).shape;
  return s.size() >= 2 ? s.back() : 0;
}

Expr row_param(NodeContext& n, size_t i, const std::string& what, size_t a, DType to) {
  return quant_param(n, i, what, Granularity::Row, n.desc(a).shape, rows_of(n, a), 1, to);
}
Expr column_param(NodeContext& n, size_t i, const std::string& what, size_t b, DType to) {
  return quant_param(n, i, what, Granularity::Column, n.desc(b).shape, columns_of(n, b), 0, to);
}

// MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> int32.
void convert_matmul_integer(NodeContext& n) {
  require_8bit(n, 0, "A");
  require_8bit(n, 1, "B");
  std::optional<Expr> az, bz;
  if (n.has_input(2)) {
    require_same_dtype(n, 2, "a_zero_point", 0, "A");
    az = row_param(n, 2, "a_zero_point", 0, DType::Int32);
  }
  if (n.has_input(3)) {
    require_same_dtype(n, 3, "b_zero_point", 1, "B");
    bz = column_param(n, 3, "b_zero_point", 1, DType::Int32);
  }
  n.set_output(0, cast(n, n.call("matmul", {shifted(n, 0, az), shifted(n, 1, bz)}), DType::Int32));
}

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point) -> y_zero_point's dtype.
void convert_qlinear_matmul(NodeContext& n) {
  require_8bit(n, 0, "a");
  require_8bit(n, 3, "b");
  require_8bit(n, 7, "y_zero_point");
  require_same_dtype(n, 2, "a_zero_point", 0, "a");
  require_same_dtype(n, 5, "b_zero_point", 3, "b");
  for (auto [i, what] : {std::pair<size_t, const char*>{1, "a_scale"}, {4, "b_scale"}, {6, "y_scale"}})
    require_float32(n, i, what);
  Expr az = row_param(n, 2, "a_zero_point", 0, DType::Int32);
  Expr bz = column_param(n, 5, "b_zero_point", 3, DType::Int32);
  Expr acc = n.call("matmul", {shifted(n, 0, az), shifted(n, 3, bz)});
  Expr as = row_param(n, 1, "a_scale", 0, DType::Float32);
  Expr bs = column_param(n, 4, "b_scale", 3, DType::Float32);
  Expr ys = quant_param(n, 6, "y_scale", Granularity::Tensor, {}, 0, 0, DType::Float32);
  quant_param(n, 7, "y_zero_point", Granularity::Tensor, {}, 0, 0, DType::Float32);  // its shape
  Expr multiplier = n.call("divide", {n.call("multiply", {as, bs}), ys});
  n.set_output(0, requantize(n, acc, multiplier, 7));
}

// ---- DynamicQuantizeLinear -------------------------------------------------

void convert_dynamic_quantize(NodeContext& n) {
  require_float32(n, 0, "x");
  if (numel_of(n.desc(0).shape) == 0) n.fail("x is empty; its range (and so the scale) is undefined");
  const DType f = DType::Float32;
  Expr x = n.input(0), zero = n.scalar(0, f);
  Expr lo = n.call("minimum", {n.call("min", {x}), zero});
  Expr hi = n.call("maximum", {n.call("max", {x}), zero});
  Expr scale = n.call("divide", {n.call("subtract", {hi, lo}), n.scalar(255, f)});
  Expr zp =
      cast(n, n.call("round", {n.call("subtract", {zero, n.call("divide", {lo, scale})})}), DType::UInt8);
  Expr q = n.call("add", {n.call("round", {n.call("divide", {x, scale})}), cast(n, zp, f)});
  n.set_output(0, cast(n, q, DType::UInt8));
  n.set_output(1, scale);
  n.set_output(2, zp);
}

}  // namespace

void add_quant_converters(ConverterTable& t) {
  t["ConvInteger"] = {convert_conv_integer, {"nn.conv2d", "astype", "subtract", "reshape"}, 10};
  t["MatMulInteger"] = {convert_matmul_integer, {"matmul", "astype", "subtract", "reshape"}, 10};
  t["QLinearConv"] = {convert_qlinear_conv,
                      {"nn.conv2d", "astype", "subtract", "reshape", "add", "multiply", "divide", "round"},
                      10};
  t["QLinearMatMul"] = {convert_qlinear_matmul,
                        {"matmul", "astype", "subtract", "reshape", "add", "multiply", "divide", "round"},
                        10};
  t["DynamicQuantizeLinear"] = {
      convert_dynamic_quantize,
      {"min", "max", "minimum", "maximum", "subtract", "divide", "round", "add", "astype"},
      11};
}

}  // namespace kiln::onnx_import
