// ONNX sampling operators: GridSample (opsets 16 and 20) as image.grid_sample.
// Volumetric (rank-5) inputs are reported as unsupported.
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

}  // namespace

void add_sampling_converters(ConverterTable& t) {
  t["GridSample"] = {convert_grid_sample, {"image.grid_sample"}, 16};
}

}  // namespace kiln::onnx_import
