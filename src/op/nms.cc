// image.non_max_suppression: greedy selection of boxes by score, dropping a
// box that overlaps an already selected one too much (ONNX NonMaxSuppression).
//
// image.non_max_suppression(boxes (B, N, 4), scores (B, C, N)) ->
// selected (<=B*C*min(max_output_boxes_per_class, N), 3) int64: rows
// [batch, class, box index]. The result's leading axis is bounded dynamic
// (TensorDesc::bounded_outer): the kernel writes the rows into the output
// allocated at the bound and trims it to the rows it selected.
//
// Attributes: max_output_boxes_per_class=0 (the most boxes kept per batch and
// class; 0 keeps none), iou_threshold=0.0 (in [0, 1]), score_threshold=[]
// (none, or one value: only boxes with score > it are candidates),
// center_point_box=0 (0: a box is [y1, x1, y2, x2], two opposite corners in
// any order; 1: [x_center, y_center, width, height]).
//
// Per batch b and class c: the candidates sorted by descending score (equal
// scores: the lower box index first), each taken in turn unless its IoU with
// a box already selected for (b, c) is > iou_threshold, until
// max_output_boxes_per_class are selected. A box of zero area overlaps
// nothing. Rows come by batch, then class, then selection order. Boxes and
// scores are float32, float16, bfloat16 or float64 (one dtype); coordinates
// and IoU are computed in float32.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const char* kNms = "image.non_max_suppression";

struct NmsParams {
  int64_t max_per_class = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
  bool center_point_box = false;
};

NmsParams nms_params(const Attrs& attrs) {
  const std::string op = kNms;
  NmsParams p;
  p.max_per_class = attrs.get_int("max_output_boxes_per_class");
  if (p.max_per_class < 0)
    throw Error(op + ": attribute 'max_output_boxes_per_class' = " + std::to_string(p.max_per_class) +
                " must be >= 0");
  double iou = attrs.get_float("iou_threshold");
  if (!(iou >= 0 && iou <= 1))
    throw Error(op + ": attribute 'iou_threshold' = " + attr_value_str(iou) + " must be in [0, 1]");
  p.iou_threshold = static_cast<float>(iou);
  const std::vector<double>& score = attrs.get_floats("score_threshold");
  if (score.size() > 1)
    throw Error(op + ": attribute 'score_threshold' = " + attr_value_str(score) +
                " must be [] (no threshold) or one value");
  p.has_score_threshold = !score.empty();
  if (p.has_score_threshold) p.score_threshold = static_cast<float>(score[0]);
  int64_t cpb = attrs.get_int("center_point_box");
  if (cpb != 0 && cpb != 1)
    throw Error(op + ": attribute 'center_point_box' = " + std::to_string(cpb) +
                " must be 0 ([y1, x1, y2, x2]) or 1 ([x_center, y_center, width, height])");
  p.center_point_box = cpb == 1;
  return p;
}

std::vector<TensorDesc> infer_nms(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kNms;
  const TensorDesc& boxes = in[0];
  const TensorDesc& scores = in[1];
  require_dtype(op, "boxes", boxes.dtype, kFloatDTypes);
  if (scores.dtype != boxes.dtype)
    throw Error(op + ": scores has dtype " + std::string(dtype_name(scores.dtype)) + " but boxes has " +
                std::string(dtype_name(boxes.dtype)) + "; they must match");
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4)
    throw Error(op + ": boxes must be (B, N, 4), got shape " + shape_str(boxes.shape));
  if (scores.shape.size() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
    throw Error(op + ": scores must be (B, C, N) = (" + std::to_string(boxes.shape[0]) + ", C, " +
                std::to_string(boxes.shape[1]) + ") for boxes " + shape_str(boxes.shape) + ", got shape " +
                shape_str(scores.shape));
  NmsParams p = nms_params(attrs);
  const int64_t per_class = std::min(p.max_per_class, boxes.shape[1]);
  // B * C * per_class, each at most 2^48 (check_shape_extent): no overflow
  // below 2^63 unless the product of all three is huge, which is refused.
  const int64_t b = boxes.shape[0], c = scores.shape[1];
  if (b != 0 && c != 0 && per_class != 0 && (b > kMaxShapeExtent / c || b * c > kMaxShapeExtent / per_class))
    throw Error(op + ": the bound B * C * min(max_output_boxes_per_class, N) = " + std::to_string(b) + " * " +
                std::to_string(c) + " * " + std::to_string(per_class) + " is too large");
  return {{{b * c * per_class, 3}, DType::Int64, true}};
}

// A box as its extent on two axes: [lo0, hi0] x [lo1, hi1].
struct Extent {
  float lo0, hi0, lo1, hi1;
  float area() const { return (hi0 - lo0) * (hi1 - lo1); }
};

Extent box_extent(const float* v, bool center_point_box) {
  if (center_point_box) {
    const float half_w = v[2] / 2, half_h = v[3] / 2;
    return {v[0] - half_w, v[0] + half_w, v[1] - half_h, v[1] + half_h};
  }
  return {std::min(v[0], v[2]), std::max(v[0], v[2]), std::min(v[1], v[3]), std::max(v[1], v[3])};
}

// Whether a and b overlap with IoU > threshold; boxes of zero area and
// disjoint boxes never do.
bool overlaps_too_much(const Extent& a, const Extent& b, float threshold) {
  const float lo0 = std::max(a.lo0, b.lo0), hi0 = std::min(a.hi0, b.hi0);
  const float lo1 = std::max(a.lo1, b.lo1), hi1 = std::min(a.hi1, b.hi1);
  const float area_a = a.area(), area_b = b.area();
  if (area_a <= 0 || area_b <= 0 || hi0 <= lo0 || hi1 <= lo1) return false;
  const float inter = (hi0 - lo0) * (hi1 - lo1);
  return inter / (area_a + area_b - inter) > threshold;
}

std::vector<float> as_floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(t.get_as_double(i));
  return v;
}

void nms_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const NmsParams p = nms_params(attrs);
  const int64_t n_batch = in[0].dim(0), n_boxes = in[0].dim(1), n_classes = in[1].dim(1);
  const std::vector<float> boxes = as_floats(in[0]), scores = as_floats(in[1]);
  const int64_t bound = out[0].dim(0);
  int64_t* rows = out[0].data<int64_t>();
  int64_t count = 0;
  std::vector<Extent> extents(static_cast<size_t>(n_boxes));
  std::vector<int64_t> order, selected;
  for (int64_t b = 0; b < n_batch; ++b) {
    for (int64_t i = 0; i < n_boxes; ++i)
      extents[static_cast<size_t>(i)] =
          box_extent(&boxes[static_cast<size_t>((b * n_boxes + i) * 4)], p.center_point_box);
    for (int64_t c = 0; c < n_classes; ++c) {
      const float* s = &scores[static_cast<size_t>((b * n_classes + c) * n_boxes)];
      order.clear();
      for (int64_t i = 0; i < n_boxes; ++i)
        if (!p.has_score_threshold || s[i] > p.score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      selected.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(selected.size()) >= p.max_per_class) break;
        const Extent& e = extents[static_cast<size_t>(i)];
        bool suppressed = std::any_of(selected.begin(), selected.end(), [&](int64_t k) {
          return overlaps_too_much(extents[static_cast<size_t>(k)], e, p.iou_threshold);
        });
        if (suppressed) continue;
        selected.push_back(i);
        KILN_ASSERT(count < bound, "image.non_max_suppression: more rows than the bound");
        rows[count * 3 + 0] = b;
        rows[count * 3 + 1] = c;
        rows[count * 3 + 2] = i;
        ++count;
      }
    }
  }
  out[0] = out[0].slice_outer(0, count);
}

}  // namespace

void register_nms_ops(OpRegistry& r) {
  r.add({kNms,
         "greedy non-maximum suppression of boxes by score and IoU per batch and class; rows [batch, class, "
         "box] (a bounded dynamic count)",
         2,
         2,
         {{"max_output_boxes_per_class", AttrKind::Int, int64_t{0}},
          {"iou_threshold", AttrKind::Float, 0.0},
          {"score_threshold", AttrKind::Floats, std::vector<double>{}},
          {"center_point_box", AttrKind::Int, int64_t{0}}},
         false,
         infer_nms,
         nms_kernel});
}

}  // namespace kiln
