// Affine quantization as tensor expressions, as the reference kernels
// compute it (src/op/quant.cc; ONNX QuantizeLinear / DequantizeLinear with
// a scale and zero point per tensor):
//
//   quantize(x, scale=s, zero_point=z)    =>  q = int8(clamp(round(x / s) + z, -128, 127)), NaN -> z
//   dequantize(q, scale=s, zero_point=z)  =>  x = float32(q - z) * s
//
// The division and the product are float32 with the scale rounded to
// float32, rounding is to nearest with ties to even, and q - z is exact
// (int32 for 8-bit q, int64 for int32 q). The reference adds z to the
// rounded quotient in float64; in float32 the sum is exact wherever the
// clamp does not decide the result (|x / s| < 2^24).
#include <limits>

#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

Lowered quantize(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const tir::DataType f32 = tir::DataType::float32();
  const auto out = lowered_dtype(c.out[0].dtype);
  if (!out) return unsupported("quantize to " + std::string(dtype_name(c.out[0].dtype)));
  const auto scale = static_cast<float>(c.attrs.get_float("scale"));
  const int64_t zp = c.attrs.get_int("zero_point");
  const bool is_signed = c.out[0].dtype == DType::Int8;
  const double lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        Expr v = tir::div((*x)(i), tir::float_imm(scale, f32));
        Expr q = tir::add(tir::call_intrinsic(tir::Intrinsic::Round, {v}), tir::float_imm(double(zp), f32));
        // Clamped by selects (NaN takes the zero point below).
        q = tir::select(tir::lt(q, tir::float_imm(lo, f32)), tir::float_imm(lo, f32), q);
        q = tir::select(tir::binary(tir::BinaryOp::GT, q, tir::float_imm(hi, f32)), tir::float_imm(hi, f32),
                        q);
        q = tir::select(tir::binary(tir::BinaryOp::NE, v, v), tir::float_imm(double(zp), f32), q);
        return tir::cast(*out, q);
      },
      c.name);
  return lowered({y});
}

Lowered dequantize(const LowerContext& c) {
  const te::Tensor& q = c.inputs[0];
  const tir::DataType f32 = tir::DataType::float32();
  const tir::DataType wide = q->dtype.bits <= 8 ? tir::DataType::int32() : tir::DataType::int64();
  const auto scale = static_cast<float>(c.attrs.get_float("scale"));
  const int64_t zp = c.attrs.get_int("zero_point");
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        Expr d = tir::sub(tir::cast(wide, (*q)(i)), tir::int_imm(zp, wide));
        return tir::mul(tir::cast(f32, d), tir::float_imm(scale, f32));
      },
      c.name);
  return lowered({y});
}

}  // namespace

void register_quant_lowerings(LoweringTable& t) {
  t.add("quantize", OpPattern::Injective, quantize);
  t.add("dequantize", OpPattern::Injective, dequantize);
}

}  // namespace kiln::lower
