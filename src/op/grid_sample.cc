// image.grid_sample: samples an NCHW tensor at the positions of a flow field
// (ONNX GridSample, opsets 16 to 20, 2-D spatial inputs).
//
//   y[n, c, h, w] = x[n, c] sampled at grid[n, h, w] = (gx, gy)
//
// gx and gy are normalized: -1 is the left (top) edge and 1 the right
// (bottom) one. With align_corners they are the centers of the corner
// pixels: px = (gx + 1) / 2 * (W - 1); without, the outer edges of the
// corner pixels: px = ((gx + 1) * W - 1) / 2. Positions outside the image
// take their value from padding_mode: zeros (0), border (the position
// clamped into the image) or reflection (the position mirrored at the
// edges, then clamped). mode is nearest (the nearest pixel, ties to even),
// bilinear (4 pixels) or bicubic (16 pixels, cubic convolution with
// a = -0.75); with bicubic the padding applies to each of the 16 pixels.
#include <cmath>
#include <string>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const char* kOp = "image.grid_sample";

enum class Padding { Zeros, Border, Reflection };

struct Sampler {
  const float* plane;  // x[n, c]: H x W
  int64_t h, w;
  bool align_corners;
  Padding padding;

  // Normalized to pixel coordinates along an axis of `size` pixels.
  double unnormalize(double g, int64_t size) const {
    return align_corners ? (g + 1) / 2 * double(size - 1) : ((g + 1) * double(size) - 1) / 2;
  }

  // Mirrors `v` into [lo, hi] as often as needed.
  static double reflect(double v, double lo, double hi) {
    if (hi <= lo) return lo;
    const double span = hi - lo;
    double d = std::fabs(v - lo);
    const double flips = std::floor(d / span);
    const double extra = d - flips * span;
    return std::fmod(flips, 2.0) == 0 ? lo + extra : hi - extra;
  }

  // The padding mode applied to a position along an axis of `size` pixels.
  double pad(double v, int64_t size) const {
    const double last = double(size - 1);
    if (padding == Padding::Border) return std::clamp(v, 0.0, last);
    if (padding == Padding::Reflection) {
      v = align_corners ? reflect(v, 0.0, last) : reflect(v, -0.5, double(size) - 0.5);
      return std::clamp(v, 0.0, last);
    }
    return v;
  }

  // The pixel at the integer-valued position (row, col), 0 outside the
  // image. Tested as doubles, so NaN and positions beyond any integer type
  // are outside too.
  double at(double row, double col) const {
    if (!(row >= 0 && row <= double(h - 1) && col >= 0 && col <= double(w - 1))) return 0;
    return plane[int64_t(row) * w + int64_t(col)];
  }

  // A pixel of the bicubic neighbourhood, its position padded first (and
  // truncated: reflection can leave a fraction).
  double padded_at(double row, double col) const {
    if (padding == Padding::Zeros) return at(row, col);
    return at(std::floor(pad(row, h)), std::floor(pad(col, w)));
  }

  static void cubic_weights(double t, double a, double out[4]) {
    auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
    auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
    out[0] = far(t + 1);
    out[1] = near(t);
    out[2] = near(1 - t);
    out[3] = far(2 - t);
  }

  double sample(const std::string& mode, double gx, double gy) const {
    double px = unnormalize(gx, w), py = unnormalize(gy, h);
    if (mode == "bicubic") {
      const double fx = std::floor(px), fy = std::floor(py);
      double wx[4], wy[4];
      cubic_weights(px - fx, -0.75, wx);
      cubic_weights(py - fy, -0.75, wy);
      double sum = 0;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) sum += wy[i] * wx[j] * padded_at(fy - 1 + i, fx - 1 + j);
      return sum;
    }
    px = pad(px, w);
    py = pad(py, h);
    if (mode == "nearest") return at(std::nearbyint(py), std::nearbyint(px));
    const double fx = std::floor(px), fy = std::floor(py);
    const double tx = px - fx, ty = py - fy;
    return (1 - ty) * ((1 - tx) * at(fy, fx) + tx * at(fy, fx + 1)) +
           ty * ((1 - tx) * at(fy + 1, fx) + tx * at(fy + 1, fx + 1));
  }
};

std::string normalized_mode(const std::string& mode) {
  if (mode == "linear") return "bilinear";  // opset 20's names
  if (mode == "cubic") return "bicubic";
  return mode;
}

std::vector<TensorDesc> grid_sample_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const TensorDesc& x = in[0];
  const TensorDesc& grid = in[1];
  require_dtype(kOp, "input x", x.dtype, {DType::Float32, DType::Float16});
  require_dtype(kOp, "input grid", grid.dtype, {DType::Float32, DType::Float16});
  if (x.shape.size() != 4)
    throw Error(std::string(kOp) + ": input x must be NCHW (rank 4), got " + desc_str(x) +
                " (volumetric inputs are not supported)");
  if (grid.shape.size() != 4 || grid.shape[0] != x.shape[0] || grid.shape[3] != 2)
    throw Error(std::string(kOp) + ": input grid must be (N, H_out, W_out, 2) with N = " +
                std::to_string(x.shape[0]) + " as in x, got " + desc_str(grid));
  const std::string mode = normalized_mode(attrs.get_string("mode"));
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    throw Error(std::string(kOp) + ": attribute 'mode' = \"" + attrs.get_string("mode") +
                "\" is not supported (expected \"bilinear\", \"nearest\" or \"bicubic\")");
  const std::string padding = attrs.get_string("padding_mode");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    throw Error(std::string(kOp) + ": attribute 'padding_mode' = \"" + padding +
                "\" is not supported (expected \"zeros\", \"border\" or \"reflection\")");
  const int64_t align = attrs.get_int("align_corners");
  if (align != 0 && align != 1)
    throw Error(std::string(kOp) + ": attribute 'align_corners' must be 0 or 1, got " +
                std::to_string(align));
  return {TensorDesc{{x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}, x.dtype}};
}

// float16 data or grids are sampled as float32, the result rounded to float16.
void grid_sample_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor x = float32_copy(in[0]);
  const Tensor grid = float32_copy(in[1]);
  Tensor y = out[0].dtype() == DType::Float16 ? Tensor::empty(out[0].shape(), DType::Float32) : out[0];
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t ho = grid.shape()[1], wo = grid.shape()[2];
  const std::string mode = normalized_mode(attrs.get_string("mode"));
  const std::string padding = attrs.get_string("padding_mode");
  Sampler s{nullptr, h, w, attrs.get_int("align_corners") != 0,
            padding == "border"       ? Padding::Border
            : padding == "reflection" ? Padding::Reflection
                                      : Padding::Zeros};
  const float* g = grid.data<float>();
  float* dst = y.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      s.plane = x.data<float>() + (b * c + ch) * h * w;
      for (int64_t i = 0; i < ho * wo; ++i) {
        const float* p = g + (b * ho * wo + i) * 2;
        *dst++ = float(s.sample(mode, p[0], p[1]));
      }
    }
  if (out[0].dtype() == DType::Float16) store_float16(y, out[0]);
}

}  // namespace

void register_grid_sample_ops(OpRegistry& r) {
  OpDef d;
  d.name = kOp;
  d.summary = "samples an NCHW tensor at a normalized flow field (ONNX GridSample)";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"mode", AttrKind::String, AttrValue(std::string("bilinear"))},
             {"padding_mode", AttrKind::String, AttrValue(std::string("zeros"))},
             {"align_corners", AttrKind::Int, AttrValue(int64_t{0})}};
  d.infer = grid_sample_infer;
  d.kernel = grid_sample_kernel;
  r.add(std::move(d));
}

}  // namespace kiln
