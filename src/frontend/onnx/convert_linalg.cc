// Converter for the ONNX Det operator (opset 11) to kiln's det.
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

void convert_det(NodeContext& n) {
  if (n.rank(0) < 2) n.fail("the input has rank " + std::to_string(n.rank(0)) + "; Det needs [..., M, M]");
  n.set_output(0, n.call("det", {n.input(0)}));
}

}  // namespace

void add_linalg_converters(ConverterTable& t) { t["Det"] = {convert_det, {"det"}, 11}; }

}  // namespace kiln::onnx_import
