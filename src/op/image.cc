// image.resize2d: resizes the two spatial axes of an NCHW tensor.
//
// Follows the ONNX Resize operator (with `sizes`, no roi):
// - size = [out_h, out_w] (required, > 0). scale = out / in per axis, unless
//   the optional attribute scale = [scale_h, scale_w] (each > 0) gives it:
//   ONNX Resize with `scales` maps coordinates with the given scale even when
//   the output size floor(in * scale) makes out / in differ from it (and
//   align_corners then uses the unrounded length in * scale for out).
// - coordinate_transformation_mode maps an output coordinate o to an input
//   coordinate x (without a scale attribute computed exactly as o * in / out
//   in double, so ties are real ties):
//     half_pixel          x = (o + 0.5) / scale - 0.5            (default)
//     pytorch_half_pixel  x = out > 1 ? (o + 0.5) / scale - 0.5 : 0
//     tf_half_pixel_for_nn  x = (o + 0.5) / scale
//     tf_crop_and_resize  x = out > 1 ? start (in - 1) + o (end - start) (in - 1) / (out - 1)
//                                     : (start + end) / 2 (in - 1)
//   where roi = [start_h, start_w, end_h, end_w] (required by
//   tf_crop_and_resize, normalised: 0 and 1 are the first and last pixel)
//   gives the crop; an output element whose x or y falls outside
//   [0, in - 1] is extrapolation_value (default 0).
//     align_corners       x = out > 1 ? o * (in - 1) / (out - 1) : 0
//     asymmetric          x = o / scale
// - method "nearest" (default, like ONNX): an integral x is taken as is;
//   otherwise rounding_method picks floor(x) or ceil(x): round_prefer_floor
//   (default; ties go down), round_prefer_ceil (ties go up), floor, ceil.
//   Indices are clamped to [0, in - 1]. Exact for every dtype.
// - method "linear": taps floor(x), floor(x) + 1 with weights 1 - t, t
//   (t = x - floor(x)); "cubic": taps floor(x) - 1 .. floor(x) + 2 with
//   the Keys kernel of parameter cubic_alpha (default -0.75). Taps outside the
//   input read the edge value; with exclude_outside = 1 they get weight 0 and
//   the remaining weights are renormalised to sum 1 (nearest ignores it: its
//   single tap is always clamped into the input). Separable: the weight of
//   (y, x) taps is wy * wx, accumulated in double.
// - dtypes float32, float16 (resized as float32, each result rounded to
//   float16 as the other ops' results), int8, uint8. Integer linear/cubic
//   results are rounded half to even and saturated (cubic can overshoot).
#include <cmath>
#include <limits>
#include <string>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const char* kOp = "image.resize2d";

void check_one_of(const std::string& attr, const std::string& value,
                  std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
  }
  throw Error(std::string(kOp) + ": attribute '" + attr + "' = \"" + value +
              "\" is not supported (expected one of " + list + ")");
}

std::vector<TensorDesc> resize_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const TensorDesc& x = in[0];
  require_dtype(kOp, "input x", x.dtype, {DType::Float32, DType::Float16, DType::Int8, DType::UInt8});
  if (x.shape.size() != 4)
    throw Error(std::string(kOp) + ": input x must be NCHW (rank 4), got " + desc_str(x));
  const auto& size = attrs.get_ints("size");
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
    throw Error(std::string(kOp) + ": attribute 'size' must be [height, width] with both > 0, got " +
                attr_value_str(size));
  check_one_of("method", attrs.get_string("method"), {"nearest", "linear", "cubic"});
  check_one_of("coordinate_transformation_mode", attrs.get_string("coordinate_transformation_mode"),
               {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                "tf_crop_and_resize"});
  const auto& roi = attrs.get_floats("roi");
  const bool crop = attrs.get_string("coordinate_transformation_mode") == "tf_crop_and_resize";
  bool roi_ok = crop ? roi.size() == 4 : roi.empty();
  for (double v : roi) roi_ok = roi_ok && std::isfinite(v);
  if (!roi_ok)
    throw Error(std::string(kOp) +
                ": attribute 'roi' must be [start_h, start_w, end_h, end_w] (finite) with " +
                "tf_crop_and_resize and [] otherwise, got " + attr_value_str(roi));
  if (!std::isfinite(attrs.get_float("extrapolation_value")))
    throw Error(std::string(kOp) + ": attribute 'extrapolation_value' must be finite");
  check_one_of("rounding_method", attrs.get_string("rounding_method"),
               {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  int64_t exclude = attrs.get_int("exclude_outside");
  if (exclude != 0 && exclude != 1)
    throw Error(std::string(kOp) + ": attribute 'exclude_outside' must be 0 or 1, got " +
                std::to_string(exclude));
  if (!std::isfinite(attrs.get_float("cubic_alpha")))
    throw Error(std::string(kOp) + ": attribute 'cubic_alpha' must be finite");
  const auto& scale = attrs.get_floats("scale");
  bool scale_ok = scale.empty() || scale.size() == 2;
  for (double v : scale) scale_ok = scale_ok && std::isfinite(v) && v > 0;
  if (!scale_ok)
    throw Error(std::string(kOp) +
                ": attribute 'scale' must be [] or [scale_h, scale_w] with both finite and > 0, got " +
                attr_value_str(scale));
  if ((x.shape[2] == 0 || x.shape[3] == 0) && x.shape[0] * x.shape[1] > 0)
    throw Error(std::string(kOp) + ": cannot resize an empty image " + desc_str(x));
  return {{{x.shape[0], x.shape[1], size[0], size[1]}, x.dtype}};
}

// The taps of one output coordinate along one axis.
struct AxisTaps {
  int k = 1;                   // taps per output coordinate: 1, 2 or 4
  std::vector<int64_t> index;  // out * k input indices (clamped)
  std::vector<double> weight;  // out * k weights
  std::vector<bool> outside;   // per output coordinate: extrapolated (tf_crop_and_resize)
};

// The crop of one axis for tf_crop_and_resize, as fractions of in - 1.
struct Crop {
  double start = 0, end = 1;
};

// `scale` 0 means out / in, applied as * in / out so that ties stay exact.
double source_coord(const std::string& mode, int64_t o, int64_t in, int64_t out, double scale, Crop crop) {
  double od = static_cast<double>(o), ind = static_cast<double>(in), outd = static_cast<double>(out);
  if (mode == "tf_crop_and_resize") {
    const double length = scale > 0 ? ind * scale : outd;
    if (length <= 1) return 0.5 * (crop.start + crop.end) * (ind - 1);
    return crop.start * (ind - 1) + od * (crop.end - crop.start) * (ind - 1) / (length - 1);
  }
  if (scale > 0) {
    // ONNX's reference aligns corners to the unrounded length in * scale.
    double length = ind * scale;
    if (mode == "align_corners") return length == 1 ? 0.0 : od * (ind - 1) / (length - 1);
    if (mode == "asymmetric") return od / scale;
    if (mode == "pytorch_half_pixel" && out <= 1) return 0.0;
    if (mode == "tf_half_pixel_for_nn") return (od + 0.5) / scale;
    return (od + 0.5) / scale - 0.5;
  }
  if (mode == "half_pixel") return (od + 0.5) * ind / outd - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (od + 0.5) * ind / outd - 0.5 : 0.0;
  if (mode == "align_corners") return out > 1 ? od * (ind - 1) / (outd - 1) : 0.0;
  if (mode == "tf_half_pixel_for_nn") return (od + 0.5) * ind / outd;
  KILN_ASSERT(mode == "asymmetric", "unknown coordinate mode passed inference");
  return od * ind / outd;
}

int64_t nearest_index(const std::string& rounding, double x) {
  double f = std::floor(x);
  if (x == f) return static_cast<int64_t>(f);
  double t = x - f;
  bool up = rounding == "round_prefer_floor"  ? t > 0.5
            : rounding == "round_prefer_ceil" ? t >= 0.5
                                              : rounding == "ceil";
  return static_cast<int64_t>(up ? f + 1 : f);
}

// Keys cubic convolution weights for taps at distances 1 + t, t, 1 - t, 2 - t.
void cubic_weights(double t, double a, double w[4]) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  w[0] = far(1 + t);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

AxisTaps make_taps(const Attrs& attrs, int64_t in, int64_t out, double scale, Crop crop) {
  const std::string& method = attrs.get_string("method");
  const std::string& mode = attrs.get_string("coordinate_transformation_mode");
  const std::string& rounding = attrs.get_string("rounding_method");
  double alpha = attrs.get_float("cubic_alpha");
  bool exclude = attrs.get_int("exclude_outside") != 0;
  AxisTaps taps;
  taps.k = method == "nearest" ? 1 : method == "linear" ? 2 : 4;
  auto clamp = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
  const bool crops = mode == "tf_crop_and_resize";
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coord(mode, o, in, out, scale, crop);
    taps.outside.push_back(crops && (x < 0 || x > static_cast<double>(in - 1)));
    if (taps.k == 1) {
      taps.index.push_back(clamp(nearest_index(rounding, x)));
      taps.weight.push_back(1.0);
      continue;
    }
    double f = std::floor(x), t = x - f;
    auto base = static_cast<int64_t>(f) - (taps.k == 4 ? 1 : 0);
    double w[4] = {1 - t, t, 0, 0};
    if (taps.k == 4) cubic_weights(t, alpha, w);
    double total = 0;
    for (int j = 0; j < taps.k; ++j) {
      int64_t i = base + j;
      if (exclude && (i < 0 || i >= in)) w[j] = 0;
      total += w[j];
    }
    for (int j = 0; j < taps.k; ++j) {
      taps.index.push_back(clamp(base + j));
      taps.weight.push_back(exclude && total != 0 ? w[j] / total : w[j]);
    }
  }
  return taps;
}

template <typename T>
T store_value(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    double r = round_half_even(v);
    r = std::min(std::max(r, double(std::numeric_limits<T>::lowest())),
                 double(std::numeric_limits<T>::max()));
    return static_cast<T>(r);
  }
}

template <typename T>
void resize_typed(const Tensor& x, const AxisTaps& ty, const AxisTaps& tx, double extrapolation, Tensor& y) {
  int64_t planes = x.dim(0) * x.dim(1);
  int64_t ih = x.dim(2), iw = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for (int64_t p = 0; p < planes; ++p) {
    const T* src = px + p * ih * iw;
    T* dst = py + p * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t* iy = &ty.index[static_cast<size_t>(oy * ty.k)];
      const double* wy = &ty.weight[static_cast<size_t>(oy * ty.k)];
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t* ix = &tx.index[static_cast<size_t>(ox * tx.k)];
        const double* wx = &tx.weight[static_cast<size_t>(ox * tx.k)];
        if (ty.outside[static_cast<size_t>(oy)] || tx.outside[static_cast<size_t>(ox)]) {
          dst[oy * ow + ox] = store_value<T>(extrapolation);
          continue;
        }
        if (ty.k == 1 && tx.k == 1) {  // nearest: a copy, exact for every dtype
          dst[oy * ow + ox] = src[iy[0] * iw + ix[0]];
          continue;
        }
        double acc = 0;
        for (int a = 0; a < ty.k; ++a) {
          const T* row = src + iy[a] * iw;
          double racc = 0;
          for (int b = 0; b < tx.k; ++b) racc += wx[b] * static_cast<double>(row[ix[b]]);
          acc += wy[a] * racc;
        }
        dst[oy * ow + ox] = store_value<T>(acc);
      }
    }
  }
}

void resize_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  const auto& scale = attrs.get_floats("scale");
  const auto& roi = attrs.get_floats("roi");
  Crop crop_h, crop_w;
  if (roi.size() == 4) {
    crop_h = {roi[0], roi[2]};
    crop_w = {roi[1], roi[3]};
  }
  AxisTaps ty = make_taps(attrs, x.dim(2), y.dim(2), scale.empty() ? 0.0 : scale[0], crop_h);
  AxisTaps tx = make_taps(attrs, x.dim(3), y.dim(3), scale.empty() ? 0.0 : scale[1], crop_w);
  const double extrapolation = attrs.get_float("extrapolation_value");
  switch (x.dtype()) {
    case DType::Float32:
      return resize_typed<float>(x, ty, tx, extrapolation, y);
    case DType::Int8:
      return resize_typed<int8_t>(x, ty, tx, extrapolation, y);
    case DType::UInt8:
      return resize_typed<uint8_t>(x, ty, tx, extrapolation, y);
    case DType::Float16: {
      Tensor yf = Tensor::empty(y.shape(), DType::Float32);
      resize_typed<float>(float32_copy(x), ty, tx, extrapolation, yf);
      return store_float16(yf, y);
    }
    case DType::Int32:
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
  KILN_ASSERT(false, "image.resize2d dtype passed inference");
}

}  // namespace

void register_image_ops(OpRegistry& r) {
  OpDef d;
  d.name = "image.resize2d";
  d.summary = "resize H and W of an NCHW tensor (nearest, linear, cubic; ONNX Resize modes)";
  d.attrs = {{"size", AttrKind::Ints, std::nullopt},
             {"method", AttrKind::String, AttrValue(std::string("nearest"))},
             {"coordinate_transformation_mode", AttrKind::String, AttrValue(std::string("half_pixel"))},
             {"rounding_method", AttrKind::String, AttrValue(std::string("round_prefer_floor"))},
             {"cubic_alpha", AttrKind::Float, AttrValue(-0.75)},
             {"exclude_outside", AttrKind::Int, AttrValue(int64_t{0})},
             {"scale", AttrKind::Floats, AttrValue(std::vector<double>{})},
             {"roi", AttrKind::Floats, AttrValue(std::vector<double>{})},
             {"extrapolation_value", AttrKind::Float, AttrValue(0.0)}};
  d.infer = resize_infer;
  d.kernel = resize_kernel;
  r.add(std::move(d));
}

}  // namespace kiln
