// Converter for the ONNX Einsum operator (opset 12) to kiln's einsum.
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

void convert_einsum(NodeContext& n) {
  if (!n.has_attr("equation")) n.fail("attribute equation is required");
  std::vector<Expr> args;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) n.fail("input " + std::to_string(i) + " is empty; Einsum has no optional inputs");
    args.push_back(n.input(i));
  }
  if (args.empty()) n.fail("Einsum needs at least one input");
  n.set_output(0, n.call("einsum", std::move(args), {{"equation", n.attr_string("equation", "")}}));
}

}  // namespace

void add_einsum_converters(ConverterTable& t) { t["Einsum"] = {convert_einsum, {"einsum"}, 12}; }

}  // namespace kiln::onnx_import
