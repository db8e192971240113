// ONNX sampling operators: GridSample (opsets 16 and 20) as image.grid_sample,
// RoiAlign (opsets 10, 16 and 22) as image.roi_align. Volumetric (rank-5)
// inputs are reported as unsupported.
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

void convert_grid_sample(NodeContext& n) {
  if (n.rank(0) != 4)
    n.unsupported("only 2-D spatial (NCHW, rank 4) inputs are supported; this one has rank " +
                  std::to_string(n.rank(0)));
  Attrs attrs{{"mode", n.attr_string("mode", n.opset() >= 20 ? "linear" : "bilinear")},
              {"padding_mode", n.attr_string("padding_mode", "zeros")},
              {"align_corners", n.attr_int("align_corners", 0)}};
  n.set_output(0, n.call("image.grid_sample", {n.input(0), n.input(1)}, attrs));
}

// Opset 10 had no coordinate_transformation_mode and did not shift by half a
// pixel: its behaviour is output_half_pixel, opset 16's default half_pixel.
void convert_roi_align(NodeContext& n) {
  if (n.rank(0) != 4)
    n.unsupported("only 2-D spatial (NCHW, rank 4) inputs are supported; this one has rank " +
                  std::to_string(n.rank(0)));
  Attrs attrs{{"mode", n.attr_string("mode", "avg")},
              {"output_height", n.attr_int("output_height", 1)},
              {"output_width", n.attr_int("output_width", 1)},
              {"sampling_ratio", n.attr_int("sampling_ratio", 0)},
              {"spatial_scale", n.attr_float("spatial_scale", 1.0)},
              {"coordinate_transformation_mode",
               n.attr_string("coordinate_transformation_mode",
                             n.opset() >= 16 ? "half_pixel" : "output_half_pixel")}};
  n.set_output(0, n.call("image.roi_align", {n.input(0), n.input(1), n.input(2)}, attrs));
}

}  // namespace

void add_sampling_converters(ConverterTable& t) {
  t["GridSample"] = {convert_grid_sample, {"image.grid_sample"}, 16};
  t["RoiAlign"] = {convert_roi_align, {"image.roi_align"}, 10};
}

}  // namespace kiln::onnx_import
