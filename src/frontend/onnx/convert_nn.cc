// ONNX neural-network operators: BatchNormalization, Gemm, MatMul,
// Softmax/LogSoftmax, Resize/Upsample, LayerNormalization,
// InstanceNormalization, MeanVarianceNormalization, LRN,
// QuantizeLinear/DequantizeLinear. (Convolution and pooling: convert_conv.cc.)
//
// Decompositions: Gemm is dense or matmul, times alpha, plus beta * C; the
// normalisations are mean / subtract / sqrt / divide chains.
#include <algorithm>
#include <cmath>
#include <optional>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {
namespace {

Expr reshape(NodeContext& n, Expr x, const Shape& shape) {
  if (x->type->tensor.shape == shape) return x;
  return n.call("reshape", {x}, {{"newshape", std::vector<int64_t>(shape)}});
}

void require_4d(NodeContext& n) {
  if (n.rank(0) != 4)
    n.unsupported("only 2-D spatial (NCHW, rank 4) inputs are supported; this one has rank " +
                  std::to_string(n.rank(0)));
}

// Training mode (opset 14 on): y is normalised with the batch's own mean and
// (population) variance over every axis but the channels; outputs 1 and 2
// are the running statistics updated with them:
//   running_mean = mean * momentum + batch_mean * (1 - momentum)
//   running_var  = var * momentum + batch_var * (1 - momentum)
void convert_batch_norm_training(NodeContext& n) {
  Expr x = n.input(0);
  if (n.rank(0) < 2) n.fail("the input must have a channel axis (rank 2 or more)");
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < n.rank(0); ++a)
    if (a != 1) axes.push_back(a);
  Expr batch_mean = n.call("mean", {x}, {{"axis", axes}, {"keepdims", int64_t{0}}});
  Shape bshape(static_cast<size_t>(n.rank(0)), 1);
  bshape[1] = n.desc(0).shape[1];
  Expr d = n.call("subtract", {x, reshape(n, batch_mean, bshape)});
  Expr batch_var = n.call("mean", {n.call("multiply", {d, d})}, {{"axis", axes}, {"keepdims", int64_t{0}}});
  n.set_output(0, n.call("nn.batch_norm", {x, n.input(1), n.input(2), batch_mean, batch_var},
                         {{"axis", int64_t{1}}, {"epsilon", n.attr_float("epsilon", 1e-5)}}));
  const double momentum = n.attr_float("momentum", 0.9);
  auto running = [&](size_t i, Expr batch) {
    DType st = n.desc(i).dtype;
    if (batch->type->tensor.dtype != st)
      batch = n.call("astype", {batch}, {{"dtype", std::string(dtype_name(st))}});
    return n.call("add", {n.call("multiply", {n.input(i), n.scalar(momentum, st)}),
                          n.call("multiply", {batch, n.scalar(1 - momentum, st)})});
  };
  n.set_output(1, running(3, batch_mean));
  n.set_output(2, running(4, batch_var));
}

void convert_batch_norm(NodeContext& n) {
  if (n.attr_int("training_mode", 0) && n.opset() >= 14) return convert_batch_norm_training(n);
  if (n.has_output(1) || n.has_output(2) || n.attr_int("training_mode", 0))
    n.unsupported(
        "training mode before opset 14 (the saved statistics outputs of opsets 7 to 13) is not "
        "supported; import the model at opset 14 or newer");
  n.set_output(0, n.call("nn.batch_norm", {n.input(0), n.input(1), n.input(2), n.input(3), n.input(4)},
                         {{"axis", int64_t{1}}, {"epsilon", n.attr_float("epsilon", 1e-5)}}));
}

void convert_gemm(NodeContext& n) {
  Expr a = n.input(0), b = n.input(1);
  if (n.rank(0) != 2 || n.rank(1) != 2) n.fail("A and B must be 2-D");
  if (n.attr_int("transA", 0)) a = n.call("permute_dims", {a}, {{"axes", std::vector<int64_t>{1, 0}}});
  // B transposed is exactly nn.dense's weight layout (N, K).
  Expr y = n.attr_int("transB", 0) ? n.call("nn.dense", {a, b}) : n.call("matmul", {a, b});
  DType t = y->type->tensor.dtype;
  double alpha = n.attr_float("alpha", 1.0), beta = n.attr_float("beta", 1.0);
  if (alpha != 1.0) y = n.call("multiply", {y, n.scalar(alpha, t)});
  if (n.has_input(2) && beta != 0.0) {
    Expr c = n.input(2);
    if (beta != 1.0) c = n.call("multiply", {c, n.scalar(beta, t)});
    y = n.call("add", {y, c});
  }
  n.set_output(0, y);
}

void convert_matmul(NodeContext& n) { n.set_output(0, n.call("matmul", {n.input(0), n.input(1)})); }

template <bool Log>
void convert_softmax(NodeContext& n) {
  const char* op = Log ? "nn.log_softmax" : "nn.softmax";
  int64_t r = n.rank(0);
  int64_t axis = normalize_axis(n.attr_int("axis", n.opset() < 13 ? 1 : -1), r, n);
  if (n.opset() >= 13 || axis == r - 1) {
    n.set_output(0, n.call(op, {n.input(0)}, {{"axis", axis}}));
    return;
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and normalised per row.
  const Shape& s = n.desc(0).shape;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i)];
  Expr x = reshape(n, n.input(0), {outer, inner});
  x = n.call(op, {x}, {{"axis", int64_t{-1}}});
  n.set_output(0, reshape(n, x, s));
}

std::vector<double> resize_scales(NodeContext& n, size_t input) {
  if (!n.has_input(input)) return {};
  Tensor t = n.require_constant(input, "scales");
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

void convert_resize(NodeContext& n) {
  require_4d(n);
  const Shape& in = n.desc(0).shape;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  bool upsample = n.node().op_type() == "Upsample";
  std::string coord = "asymmetric";
  std::string rounding = "floor";
  if (upsample) {
    scales = n.opset() < 9 ? n.attr_floats("scales") : resize_scales(n, 1);
  } else if (n.opset() < 11) {
    scales = resize_scales(n, 1);
  } else {
    scales = resize_scales(n, 2);
    if (n.has_input(3)) sizes = n.require_ints(3, "sizes");
    coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
    rounding = n.attr_string("nearest_mode", "round_prefer_floor");
    if (n.has_attr("axes")) n.unsupported("the axes attribute of Resize is not supported");
    if (n.attr_int("antialias", 0) != 0) n.unsupported("antialias=1 is not supported");
    if (n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
      n.unsupported("keep_aspect_ratio_policy other than 'stretch' is not supported");
  }
  std::vector<double> roi;
  if (coord == "tf_crop_and_resize") {
    if (!n.has_input(1)) n.fail("coordinate_transformation_mode 'tf_crop_and_resize' needs the roi input");
    Tensor r = n.require_constant(1, "roi");
    if (r.numel() != 8)
      n.fail("roi must hold 8 values (starts, then ends, of N, C, H and W), got " +
             std::to_string(r.numel()));
    for (int64_t i = 0; i < 8; ++i) roi.push_back(r.get_as_double(i));
    if (roi[0] != 0 || roi[1] != 0 || roi[4] != 1 || roi[5] != 1)
      n.unsupported("a roi that crops the batch or channel axis is not supported");
  }
  if (sizes.empty() && scales.empty()) n.fail("neither scales nor sizes is given");
  if (sizes.empty()) {
    if (scales.size() != 4) n.fail("scales must have 4 entries for a 4-D input");
    for (size_t i = 0; i < 4; ++i) sizes.push_back(static_cast<int64_t>(std::floor(in[i] * scales[i])));
  }
  if (sizes.size() != 4) n.fail("sizes must have 4 entries for a 4-D input");
  if (sizes[0] != in[0] || sizes[1] != in[1])
    n.unsupported("resizing the batch or channel axis is not supported");
  // kiln's resize maps coordinates with the size ratio unless given the
  // scale; ONNX uses the given scale, which differs only when in * scale is
  // not a whole number. Whole ones keep the exact ratio path.
  std::vector<double> coord_scale;
  for (size_t i = 2; i < 4 && !scales.empty(); ++i)
    if (std::abs(in[i] * scales[i] - static_cast<double>(sizes[i])) > 1e-6)
      coord_scale = {scales[2], scales[3]};
  std::string mode = n.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") n.fail("unknown mode '" + mode + "'");
  Attrs attrs{{"size", std::vector<int64_t>{sizes[2], sizes[3]}},
              {"method", mode},
              {"coordinate_transformation_mode", coord},
              {"rounding_method", rounding},
              {"cubic_alpha", n.attr_float("cubic_coeff_a", -0.75)},
              {"exclude_outside", n.attr_int("exclude_outside", 0)}};
  if (!coord_scale.empty()) attrs.set("scale", coord_scale);
  if (!roi.empty()) {
    attrs.set("roi", std::vector<double>{roi[2], roi[3], roi[6], roi[7]});
    attrs.set("extrapolation_value", n.attr_float("extrapolation_value", 0.0));
  }
  n.set_output(0, n.call("image.resize2d", {n.input(0)}, attrs));
}

// y = (x - mean) / sqrt(var + eps), statistics over `axes` (kept).
struct Normalized {
  Expr y, mean, std_dev;  // std_dev = sqrt(var + eps)
};
Normalized normalize_parts(NodeContext& n, Expr x, const std::vector<int64_t>& axes, double eps) {
  DType t = x->type->tensor.dtype;
  Attrs red{{"axis", axes}, {"keepdims", int64_t{1}}};
  Expr mean = n.call("mean", {x}, red);
  Expr d = n.call("subtract", {x, mean});
  Expr var = n.call("mean", {n.call("multiply", {d, d})}, red);
  Expr denom = n.call("sqrt", {n.call("add", {var, n.scalar(eps, t)})});
  return {n.call("divide", {d, denom}), mean, denom};
}
Expr normalize(NodeContext& n, Expr x, const std::vector<int64_t>& axes, double eps) {
  return normalize_parts(n, x, axes, eps).y;
}

Expr cast(NodeContext& n, Expr x, DType to) {
  if (x->type->tensor.dtype == to) return x;
  return n.call("astype", {x}, {{"dtype", std::string(dtype_name(to))}});
}

// Y = normalize(X) * Scale + B over axes [axis, rank); the optional outputs
// are the Mean and 1 / sqrt(var + eps), kept as size-1 axes.
void convert_layer_norm(NodeContext& n) {
  int64_t r = n.rank(0);
  int64_t axis = normalize_axis(n.attr_int("axis", -1), r, n);
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  // stash_type is the type the statistics are computed in (1 = float32, the
  // default); float16 inputs are widened for it, like ONNX's reference.
  int64_t stash = n.attr_int("stash_type", 1);
  if (stash != 1)
    n.unsupported("stash_type " + std::to_string(stash) + " is not supported (only 1, float32 statistics)");
  DType t = n.desc(0).dtype;
  if (t != DType::Float32 && t != DType::Float16)
    n.unsupported("input type " + std::string(dtype_name(t)) + " is not supported (float32 or float16)");
  Normalized p = normalize_parts(n, cast(n, n.input(0), DType::Float32), axes, n.attr_float("epsilon", 1e-5));
  Expr y = n.call("multiply", {p.y, cast(n, n.input(1), DType::Float32)});
  if (n.has_input(2)) y = n.call("add", {y, cast(n, n.input(2), DType::Float32)});
  n.set_output(0, cast(n, y, t));
  n.set_output(1, p.mean);
  if (n.has_output(2)) n.set_output(2, n.call("divide", {n.scalar(1.0, DType::Float32), p.std_dev}));
}

// MeanVarianceNormalization: (X - mean) / (sqrt(var) + 1e-9) over `axes`
// (default [0, 2, 3]); ONNX adds its epsilon to the standard deviation.
void convert_mvn(NodeContext& n) {
  std::vector<int64_t> axes = n.attr_ints("axes", {0, 2, 3});
  for (auto& a : axes) a = normalize_axis(a, n.rank(0), n);
  Expr x = n.input(0);
  DType t = x->type->tensor.dtype;
  Attrs red{{"axis", axes}, {"keepdims", int64_t{1}}};
  Expr d = n.call("subtract", {x, n.call("mean", {x}, red)});
  Expr sd = n.call("sqrt", {n.call("mean", {n.call("multiply", {d, d})}, red)});
  n.set_output(0, n.call("divide", {d, n.call("add", {sd, n.scalar(1e-9, t)})}));
}

void convert_instance_norm(NodeContext& n) {
  int64_t r = n.rank(0);
  if (r < 3) n.fail("the input must have rank 3 or more");
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < r; ++i) axes.push_back(i);
  Expr y = normalize(n, n.input(0), axes, n.attr_float("epsilon", 1e-5));
  Shape cshape(static_cast<size_t>(r - 1), 1);
  cshape[0] = n.desc(0).shape[1];
  y = n.call("multiply", {y, reshape(n, n.input(1), cshape)});
  n.set_output(0, n.call("add", {y, reshape(n, n.input(2), cshape)}));
}

// LRN: x / (bias + alpha / size * sum of x^2 over a window of `size`
// channels)^beta. The channel window sum is an average pool of x^2 seen as
// (N, 1, C, rest) with a (size, 1) window that counts its zero padding, times
// size: the window covers channels c - floor((size-1)/2) .. c + ceil((size-1)/2).
void convert_lrn(NodeContext& n) {
  int64_t size = n.attr_int("size", 0);
  if (size <= 0) n.fail("size must be positive, got " + std::to_string(size));
  if (n.rank(0) < 3) n.fail("the input must have rank 3 or more (N, C, spatial...)");
  Expr x = n.input(0);
  const Shape& s = n.desc(0).shape;
  DType t = n.desc(0).dtype;
  int64_t rest = 1;
  for (size_t i = 2; i < s.size(); ++i) rest *= s[i];
  Expr sq = reshape(n, n.call("multiply", {x, x}), {s[0], 1, s[1], rest});
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Expr avg = n.call("nn.avg_pool2d", {sq},
                    {{"pool_size", std::vector<int64_t>{size, 1}},
                     {"padding", std::vector<int64_t>{before, 0, after, 0}},
                     {"count_include_pad", int64_t{1}}});
  double alpha = n.attr_float("alpha", 1e-4), beta = n.attr_float("beta", 0.75),
         bias = n.attr_float("bias", 1.0);
  // alpha / size * (avg * size) = alpha * avg.
  Expr base = n.call("add", {n.call("multiply", {avg, n.scalar(alpha, t)}), n.scalar(bias, t)});
  Expr denom = n.call("power", {base, n.scalar(beta, t)});
  n.set_output(0, n.call("divide", {x, reshape(n, denom, s)}));
}

// Per-axis quantization (a 1-D scale and zero point along `axis`, opset 13)
// decomposes into elementwise ops with the same rounding as kiln's quantize:
//   quantize:   astype(clip(round(x / scale) + zp, qmin, qmax)), NaN -> zp
//   dequantize: (astype(q, float32) - zp) * scale
// with scale and zp reshaped to lie along `axis`.
struct AxisParams {
  Expr scale, zero_point;  // float32, shaped (1, .., C, .., 1)
  DType zp_dtype = DType::UInt8;
};

std::optional<AxisParams> axis_params(NodeContext& n) {
  Tensor s = n.require_constant(1, "scale");
  if (s.numel() == 1) return std::nullopt;
  int64_t r = n.rank(0);
  int64_t axis = normalize_axis(n.attr_int("axis", 1), r, n);
  int64_t size = n.desc(0).shape[static_cast<size_t>(axis)];
  if (s.ndim() != 1 || s.numel() != size)
    n.fail("the scale has shape " + shape_str(s.shape()) + "; per-axis quantization along axis " +
           std::to_string(axis) + " needs (" + std::to_string(size) + ",)");
  Tensor z = Tensor::zeros(s.shape(), DType::UInt8);
  if (n.has_input(2)) z = n.require_constant(2, "zero_point");
  if (z.shape() != s.shape())
    n.fail("the zero point has shape " + shape_str(z.shape()) + ", the scale " + shape_str(s.shape()));
  Shape along(static_cast<size_t>(r), 1);
  along[static_cast<size_t>(axis)] = size;
  Attrs to_axis{{"newshape", std::vector<int64_t>(along)}};
  AxisParams p;
  p.zp_dtype = z.dtype();
  p.scale = n.call("reshape", {cast(n, n.constant_expr(s), DType::Float32)}, to_axis);
  p.zero_point = n.call("reshape", {cast(n, n.constant_expr(z), DType::Float32)}, to_axis);
  return p;
}

void quantize_per_axis(NodeContext& n, const AxisParams& p) {
  DType t = p.zp_dtype;
  if (t != DType::Int8 && t != DType::UInt8) n.unsupported("quantizing to " + std::string(dtype_name(t)));
  Expr q = n.call("divide", {cast(n, n.input(0), DType::Float32), p.scale});
  q = n.call("where", {n.call("equal", {q, q}), n.call("round", {q}), n.scalar(0, DType::Float32)});
  q = n.call("add", {q, p.zero_point});
  bool i8 = t == DType::Int8;
  q = n.call("clip", {q}, {{"a_min", i8 ? -128.0 : 0.0}, {"a_max", i8 ? 127.0 : 255.0}});
  n.set_output(0, cast(n, q, t));
}

void dequantize_per_axis(NodeContext& n, const AxisParams& p) {
  Expr d = n.call("subtract", {cast(n, n.input(0), DType::Float32), p.zero_point});
  n.set_output(0, n.call("multiply", {d, p.scale}));
}

// Per-tensor scale and zero point (constants).
void quant_params(NodeContext& n, double& scale, int64_t& zero_point, DType& zp_dtype) {
  Tensor s = n.require_constant(1, "scale");
  if (s.numel() != 1) n.unsupported("per-axis quantization is not supported");
  scale = s.get_as_double(0);
  zero_point = 0;
  zp_dtype = DType::UInt8;
  if (n.has_input(2)) {
    Tensor z = n.require_constant(2, "zero_point");
    if (z.numel() != 1) n.unsupported("per-axis quantization is not supported");
    zero_point = static_cast<int64_t>(z.get_as_double(0));
    zp_dtype = z.dtype();
  }
}

void convert_quantize(NodeContext& n) {
  if (auto p = axis_params(n)) {
    quantize_per_axis(n, *p);
    return;
  }
  double scale;
  int64_t zp;
  DType t;
  quant_params(n, scale, zp, t);
  if (t != DType::Int8 && t != DType::UInt8) n.unsupported("quantizing to " + std::string(dtype_name(t)));
  n.set_output(0, n.call("quantize", {n.input(0)},
                         {{"scale", scale}, {"zero_point", zp}, {"out_dtype", std::string(dtype_name(t))}}));
}

void convert_dequantize(NodeContext& n) {
  if (auto p = axis_params(n)) {
    dequantize_per_axis(n, *p);
    return;
  }
  double scale;
  int64_t zp;
  DType t;
  quant_params(n, scale, zp, t);
  n.set_output(0, n.call("dequantize", {n.input(0)}, {{"scale", scale}, {"zero_point", zp}}));
}

}  // namespace

void add_nn_converters(ConverterTable& t) {
  t["BatchNormalization"] = {convert_batch_norm,
                             {"nn.batch_norm", "mean", "subtract", "multiply", "add", "reshape", "astype"}};
  t["Gemm"] = {convert_gemm, {"nn.dense", "matmul", "permute_dims", "multiply", "add"}};
  t["MatMul"] = {convert_matmul, {"matmul"}};
  t["Softmax"] = {convert_softmax<false>, {"nn.softmax", "reshape"}};
  t["LogSoftmax"] = {convert_softmax<true>, {"nn.log_softmax", "reshape"}};
  t["Resize"] = {convert_resize, {"image.resize2d"}, 10};
  t["Upsample"] = {convert_resize, {"image.resize2d"}};
  t["LayerNormalization"] = {
      convert_layer_norm, {"mean", "subtract", "multiply", "add", "sqrt", "divide", "astype"}, 17};
  t["MeanVarianceNormalization"] = {
      convert_mvn, {"mean", "subtract", "multiply", "add", "sqrt", "divide"}, 9};
  t["InstanceNormalization"] = {convert_instance_norm,
                                {"mean", "subtract", "multiply", "add", "sqrt", "divide", "reshape"}};
  t["QuantizeLinear"] = {
      convert_quantize,
      {"quantize", "reshape", "astype", "divide", "equal", "round", "where", "add", "clip"},
      10};
  t["DequantizeLinear"] = {
      convert_dequantize, {"dequantize", "reshape", "astype", "subtract", "multiply"}, 10};
  t["LRN"] = {convert_lrn, {"multiply", "reshape", "nn.avg_pool2d", "add", "power", "divide"}};
}

}  // namespace kiln::onnx_import
