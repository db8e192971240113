// image.roi_align: pools a fixed-size (output_height x output_width) map out
// of each region of interest of NCHW data by bilinear sampling (ONNX RoiAlign).
//
// image.roi_align(data (N, C, H, W), rois (R, 4), batch_indices (R)) ->
// (R, C, output_height, output_width). Row r of rois is [x1, y1, x2, y2] in
// the coordinates of image batch_indices[r] before spatial_scale.
//
// Attributes: mode="avg" ("avg" or "max"), output_height=1, output_width=1,
// sampling_ratio=0, spatial_scale=1.0, coordinate_transformation_mode=
// "half_pixel" ("half_pixel" or "output_half_pixel").
//
// Per region: start = x1 * spatial_scale - offset and end = x2 * spatial_scale
// - offset per axis, offset 0.5 for half_pixel and 0 for output_half_pixel
// (which also widens a region narrower than 1 pixel to 1). Each output bin is
// (end - start) / output_size wide and holds a g_h x g_w grid of samples at
// the centers of equal sub-cells, g = sampling_ratio, or ceil(region size /
// output size) when sampling_ratio is 0 (adaptive). A sample at (y, x) reads
// bilinearly the four pixels around it: coordinates below 0 clamp to 0, at or
// past the last pixel to the last pixel, and a sample more than one pixel
// outside the image (y < -1, y > H, x < -1 or x > W) contributes 0.
// avg: the mean over the grid (outside samples count). max: the largest over
// the grid of the largest of a sample's four weighted pixel terms w_i * v_i,
// which is how ONNX's reference and ONNX Runtime define the max mode.
//
// data and rois: float32 or float16 (one dtype; computed in float32);
// batch_indices int64 or int32, each in [0, N) (else an error naming it).
#include <algorithm>
#include <cmath>
#include <vector>

#include "op/nn_internal.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const char* kRoiAlign = "image.roi_align";

struct RoiAlignParams {
  bool max_mode, half_pixel;
  int64_t out_h, out_w, sampling_ratio;
  float spatial_scale;
};

RoiAlignParams roi_params(const Attrs& attrs) {
  const std::string op = kRoiAlign;
  RoiAlignParams p;
  const std::string& mode = attrs.get_string("mode");
  if (mode != "avg" && mode != "max")
    throw Error(op + ": attribute 'mode' = \"" + mode + "\" is not supported (expected \"avg\" or \"max\")");
  p.max_mode = mode == "max";
  const std::string& ctm = attrs.get_string("coordinate_transformation_mode");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    throw Error(op + ": attribute 'coordinate_transformation_mode' = \"" + ctm +
                "\" is not supported (expected \"half_pixel\" or \"output_half_pixel\")");
  p.half_pixel = ctm == "half_pixel";
  p.out_h = attrs.get_int("output_height");
  p.out_w = attrs.get_int("output_width");
  if (p.out_h < 1 || p.out_w < 1)
    throw Error(op + ": attributes 'output_height' = " + std::to_string(p.out_h) +
                " and 'output_width' = " + std::to_string(p.out_w) + " must be >= 1");
  p.sampling_ratio = attrs.get_int("sampling_ratio");
  if (p.sampling_ratio < 0)
    throw Error(op + ": attribute 'sampling_ratio' = " + std::to_string(p.sampling_ratio) +
                " must be >= 0 (0 = adaptive)");
  p.spatial_scale = static_cast<float>(attrs.get_float("spatial_scale"));
  return p;
}

std::vector<TensorDesc> infer_roi_align(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kRoiAlign;
  const TensorDesc& x = in[0];
  const TensorDesc& rois = in[1];
  const TensorDesc& bi = in[2];
  require_dtype(op, "data", x.dtype, {DType::Float32, DType::Float16});
  if (rois.dtype != x.dtype)
    throw Error(op + ": rois has dtype " + std::string(dtype_name(rois.dtype)) + " but data has " +
                std::string(dtype_name(x.dtype)) + "; they must match");
  require_dtype(op, "batch_indices", bi.dtype, {DType::Int64, DType::Int32});
  if (x.shape.size() != 4)
    throw Error(op + ": data must be 4-D (N, C, H, W), got shape " + shape_str(x.shape));
  if (x.shape[2] < 1 || x.shape[3] < 1)
    throw Error(op + ": data " + shape_str(x.shape) + " has an empty spatial axis");
  if (rois.shape.size() != 2 || rois.shape[1] != 4)
    throw Error(op + ": rois must be (R, 4) rows of [x1, y1, x2, y2], got shape " + shape_str(rois.shape));
  if (bi.shape.size() != 1 || bi.shape[0] != rois.shape[0])
    throw Error(op + ": batch_indices must be (R) with R = " + std::to_string(rois.shape[0]) +
                " (one per region), got shape " + shape_str(bi.shape));
  RoiAlignParams p = roi_params(attrs);
  return {{{rois.shape[0], x.shape[1], p.out_h, p.out_w}, x.dtype}};
}

// A sample's four pixels (flat offsets in one plane) and their weights; all
// weights 0 for a sample outside the image.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

// Clamps a coordinate to the image and splits it into the low pixel, the high
// pixel and the distance past the low one.
void split_coord(float v, int64_t size, int64_t& lo, int64_t& hi, float& frac) {
  v = std::max(v, 0.0f);
  lo = static_cast<int64_t>(v);
  if (lo >= size - 1) {
    lo = hi = size - 1;
    frac = 0;
    return;
  }
  hi = lo + 1;
  frac = v - static_cast<float>(lo);
}

Sample bilinear_sample(float y, float x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0f || y > static_cast<float>(h) || x < -1.0f || x > static_cast<float>(w)) return s;
  int64_t y0, y1, x0, x1;
  float ly, lx;
  split_coord(y, h, y0, y1, ly);
  split_coord(x, w, x0, x1, lx);
  const float hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * w + x0;
  s.pos[1] = y0 * w + x1;
  s.pos[2] = y1 * w + x0;
  s.pos[3] = y1 * w + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

void roi_align_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const RoiAlignParams p = roi_params(attrs);
  const Tensor& data = in[0];
  const Tensor& bi = in[2];
  const int64_t n_batch = data.dim(0), c = data.dim(1), h = data.dim(2), w = data.dim(3);
  const int64_t n_rois = in[1].dim(0);
  AccBuffer<float> xb(data), rb(in[1]);
  std::vector<float> result(static_cast<size_t>(n_rois * c * p.out_h * p.out_w));
  const float offset = p.half_pixel ? 0.5f : 0.0f;
  for (int64_t r = 0; r < n_rois; ++r) {
    const int64_t b = bi.dtype() == DType::Int64 ? bi.data<int64_t>()[r] : bi.data<int32_t>()[r];
    if (b < 0 || b >= n_batch)
      throw Error(std::string(kRoiAlign) + ": batch_indices[" + std::to_string(r) + "] = " +
                  std::to_string(b) + " is outside the batch of " + std::to_string(n_batch) + " images");
    const float* roi = rb.data() + r * 4;
    const float x_start = roi[0] * p.spatial_scale - offset, y_start = roi[1] * p.spatial_scale - offset;
    float roi_w = roi[2] * p.spatial_scale - offset - x_start,
          roi_h = roi[3] * p.spatial_scale - offset - y_start;
    if (!p.half_pixel) {
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    const float bin_h = roi_h / static_cast<float>(p.out_h), bin_w = roi_w / static_cast<float>(p.out_w);
    // A region of negative size (x2 < x1 with half_pixel) has no samples.
    const int64_t grid_h = p.sampling_ratio > 0
                               ? p.sampling_ratio
                               : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bin_h)));
    const int64_t grid_w = p.sampling_ratio > 0
                               ? p.sampling_ratio
                               : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(bin_w)));
    const float count = static_cast<float>(std::max<int64_t>(grid_h * grid_w, 1));
    // The samples depend on the region only, not the channel.
    std::vector<Sample> samples;
    for (int64_t oy = 0; oy < p.out_h; ++oy)
      for (int64_t ox = 0; ox < p.out_w; ++ox)
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const float y = y_start + static_cast<float>(oy) * bin_h +
                          (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const float x = x_start + static_cast<float>(ox) * bin_w +
                            (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(grid_w);
            samples.push_back(bilinear_sample(y, x, h, w));
          }
        }
    const size_t per_bin = static_cast<size_t>(grid_h * grid_w);
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* plane = xb.data() + (b * c + ch) * h * w;
      float* dst = result.data() + (r * c + ch) * p.out_h * p.out_w;
      for (int64_t bin = 0; bin < p.out_h * p.out_w; ++bin) {
        const Sample* s = samples.data() + static_cast<size_t>(bin) * per_bin;
        float v = 0;
        for (size_t k = 0; k < per_bin; ++k) {
          if (p.max_mode) {
            float m = s[k].w[0] * plane[s[k].pos[0]];
            for (int i = 1; i < 4; ++i) m = std::max(m, s[k].w[i] * plane[s[k].pos[i]]);
            v = k == 0 ? m : std::max(v, m);
          } else {
            for (int i = 0; i < 4; ++i) v += s[k].w[i] * plane[s[k].pos[i]];
          }
        }
        dst[bin] = p.max_mode ? v : v / count;
      }
    }
  }
  store_acc(result.data(), static_cast<int64_t>(result.size()), out[0], 0);
}

}  // namespace

void register_roi_align_ops(OpRegistry& r) {
  r.add({kRoiAlign,
         "bilinear region-of-interest pooling of NCHW data to a fixed size (avg or max)",
         3,
         3,
         {{"mode", AttrKind::String, std::string("avg")},
          {"output_height", AttrKind::Int, int64_t{1}},
          {"output_width", AttrKind::Int, int64_t{1}},
          {"sampling_ratio", AttrKind::Int, int64_t{0}},
          {"spatial_scale", AttrKind::Float, 1.0},
          {"coordinate_transformation_mode", AttrKind::String, std::string("half_pixel")}},
         false,
         infer_roi_align,
         roi_align_kernel});
}

}  // namespace kiln
