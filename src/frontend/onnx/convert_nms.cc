// ONNX NonMaxSuppression (opsets 10 and 11) as image.non_max_suppression.
//
// The optional scalar inputs max_output_boxes_per_class (int64, absent: 0,
// no boxes), iou_threshold (absent: 0) and score_threshold (absent: none)
// become the op's attributes, so they must be known at import: initializers,
// Constant nodes, values folded from those, or graph inputs bound with
// --input-value NAME=V. Otherwise the error names the input to bind. The
// result, selected_indices, has a bounded dynamic leading axis
// (<=B*C*min(max_output_boxes_per_class, N)).
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

// Input i's one value (a scalar or a 1-element tensor), when present.
std::optional<double> scalar_input(NodeContext& n, size_t i, const std::string& what) {
  if (!n.has_input(i)) return std::nullopt;
  Tensor t = n.require_constant(i, what);
  if (t.numel() != 1)
    n.fail("input " + std::to_string(i) + " (" + what + ") must hold one value, got shape " +
           shape_str(t.shape()));
  return t.get_as_double(0);
}

// max_output_boxes_per_class, read exactly (exporters write INT64_MAX for
// "no limit"); the op caps it at the box count.
int64_t max_output_input(NodeContext& n) {
  if (!n.has_input(2)) return 0;
  std::vector<int64_t> v = n.require_ints(2, "max_output_boxes_per_class");
  if (v.size() != 1)
    n.fail("input 2 (max_output_boxes_per_class) must hold one value, got " + std::to_string(v.size()));
  if (v[0] < 0) n.fail("input 2 (max_output_boxes_per_class) must be >= 0, got " + std::to_string(v[0]));
  return v[0];
}

void convert_nms(NodeContext& n) {
  const int64_t max_out = max_output_input(n);
  std::optional<double> iou = scalar_input(n, 3, "iou_threshold");
  std::optional<double> score = scalar_input(n, 4, "score_threshold");
  Attrs attrs{{"max_output_boxes_per_class", max_out},
              {"iou_threshold", iou.value_or(0.0)},
              {"score_threshold", score ? std::vector<double>{*score} : std::vector<double>{}},
              {"center_point_box", n.attr_int("center_point_box", 0)}};
  n.set_output(0, n.call("image.non_max_suppression", {n.input(0), n.input(1)}, attrs));
}

}  // namespace

void add_nms_converters(ConverterTable& t) {
  t["NonMaxSuppression"] = {convert_nms, {"image.non_max_suppression"}, 10};
}

}  // namespace kiln::onnx_import
