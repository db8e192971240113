// Affine quantization: quantize (float32 -> int8/uint8) and dequantize
// (int8/uint8/int32 -> float32), per tensor.
//
// Semantics, matching ONNX QuantizeLinear / DequantizeLinear:
//   quantize:   q = clamp(round_half_to_even(x / scale) + zero_point, qmin, qmax)
//   dequantize: x = (q - zero_point) * scale
// The division and the multiplication are done in float32 with the scale
// rounded to float32 (what ONNX and ONNX Runtime do), so ties land exactly
// where a peer puts them. NaN quantizes to zero_point; +-inf clamps.
// Attributes: scale (float, finite, > 0, required), zero_point (int, must fit
// the quantized dtype, default 0), out_dtype ("int8" or "uint8", quantize only,
// default "int8"), axis (int, default -1). Scale and zero point are scalars
// here, so every quantization is per tensor and `axis` is accepted (ONNX
// models carry it) but unused; per-axis scales are not supported yet.
#include <cmath>
#include <limits>
#include <string>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

struct QRange {
  int64_t lo, hi;
};

QRange qrange(DType t) {
  switch (t) {
    case DType::Int8:
      return {-128, 127};
    case DType::UInt8:
      return {0, 255};
    case DType::Int32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::Float32:
    case DType::Float16:
    case DType::Int64:
    case DType::Bool:
    case DType::Float64:
    case DType::Int16:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
    case DType::BFloat16:
      break;
  }
  KILN_ASSERT(false, "qrange of a non-quantized dtype");
  return {0, 0};
}

void check_scale_and_zero_point(const std::string& op, const Attrs& attrs, DType qtype) {
  double scale = attrs.get_float("scale");
  if (!(scale > 0) || !std::isfinite(scale) || !std::isfinite(static_cast<float>(scale)) ||
      static_cast<float>(scale) == 0.0f)
    throw Error(op + ": attribute 'scale' must be a finite number > 0 (as float32), got " +
                attr_value_str(scale));
  int64_t zp = attrs.get_int("zero_point");
  QRange r = qrange(qtype);
  if (zp < r.lo || zp > r.hi)
    throw Error(op + ": attribute 'zero_point' = " + std::to_string(zp) + " does not fit " +
                std::string(dtype_name(qtype)) + " (" + std::to_string(r.lo) + ".." + std::to_string(r.hi) +
                ")");
}

DType quantize_out_dtype(const Attrs& attrs) {
  const std::string& name = attrs.get_string("out_dtype");
  if (name == "int8") return DType::Int8;
  if (name == "uint8") return DType::UInt8;
  throw Error("quantize: attribute 'out_dtype' = \"" + name +
              "\" is not supported (expected \"int8\" or \"uint8\")");
}

std::vector<TensorDesc> quantize_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  require_dtype("quantize", "input x", in[0].dtype, {DType::Float32});
  DType out = quantize_out_dtype(attrs);
  check_scale_and_zero_point("quantize", attrs, out);
  return {{in[0].shape, out}};
}

template <typename Q>
void quantize_typed(const Tensor& x, float scale, int64_t zp, Tensor& y) {
  const float* px = x.data<float>();
  Q* py = y.data<Q>();
  const double lo = std::numeric_limits<Q>::lowest(), hi = std::numeric_limits<Q>::max();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    float v = px[i] / scale;  // float32 division, as ONNX specifies
    if (std::isnan(v)) {
      py[i] = static_cast<Q>(zp);
      continue;
    }
    double q = round_half_even(static_cast<double>(v)) + static_cast<double>(zp);
    py[i] = static_cast<Q>(std::min(std::max(q, lo), hi));
  }
}

void quantize_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  auto scale = static_cast<float>(attrs.get_float("scale"));
  int64_t zp = attrs.get_int("zero_point");
  if (out[0].dtype() == DType::Int8) return quantize_typed<int8_t>(in[0], scale, zp, out[0]);
  quantize_typed<uint8_t>(in[0], scale, zp, out[0]);
}

std::vector<TensorDesc> dequantize_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  require_dtype("dequantize", "input q", in[0].dtype, {DType::Int8, DType::UInt8, DType::Int32});
  check_scale_and_zero_point("dequantize", attrs, in[0].dtype);
  return {{in[0].shape, DType::Float32}};
}

void dequantize_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  auto scale = static_cast<float>(attrs.get_float("scale"));
  int64_t zp = attrs.get_int("zero_point");
  float* py = out[0].data<float>();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using S = typename decltype(tag)::storage;
    if constexpr (std::is_integral_v<typename decltype(tag)::compute> &&
                  !std::is_same_v<typename decltype(tag)::compute, bool>) {
      const S* pq = in[0].data<S>();
      // q - zp is exact in int64; its float32 rounding then the float32
      // product is what ONNX specifies.
      for (int64_t i = 0, n = in[0].numel(); i < n; ++i)
        py[i] = static_cast<float>(static_cast<int64_t>(pq[i]) - zp) * scale;
    } else {
      KILN_ASSERT(false, "dequantize dtype passed inference");
    }
  });
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  OpDef q;
  q.name = "quantize";
  q.summary = "float32 -> int8/uint8: clamp(round_half_even(x / scale) + zero_point)";
  q.attrs = {{"scale", AttrKind::Float, std::nullopt},
             {"zero_point", AttrKind::Int, AttrValue(int64_t{0})},
             {"out_dtype", AttrKind::String, AttrValue(std::string("int8"))},
             {"axis", AttrKind::Int, AttrValue(int64_t{-1})}};
  q.infer = quantize_infer;
  q.kernel = quantize_kernel;
  r.add(std::move(q));

  OpDef d;
  d.name = "dequantize";
  d.summary = "int8/uint8/int32 -> float32: (q - zero_point) * scale";
  d.attrs = {{"scale", AttrKind::Float, std::nullopt},
             {"zero_point", AttrKind::Int, AttrValue(int64_t{0})},
             {"axis", AttrKind::Int, AttrValue(int64_t{-1})}};
  d.infer = dequantize_infer;
  d.kernel = dequantize_kernel;
  r.add(std::move(d));
}

}  // namespace kiln
