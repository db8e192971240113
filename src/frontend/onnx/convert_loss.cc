// ONNX loss operators: NegativeLogLikelihoodLoss (kiln's nn.nll_loss) and
// SoftmaxCrossEntropyLoss (nn.log_softmax over the class axis 1, then
// nn.nll_loss; the optional second output is that log_softmax). float32
// inputs only; reduction, weight and ignore_index pass through.
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

Attrs loss_attrs(NodeContext& n) {
  Attrs a{{"reduction", n.attr_string("reduction", "mean")}};
  if (n.has_attr("ignore_index")) a.set("ignore_index", n.attr_int("ignore_index", 0));
  return a;
}

void check_inputs(NodeContext& n) {
  DType t = n.desc(0).dtype;
  if (t != DType::Float32)
    n.unsupported("input type " + std::string(dtype_name(t)) + " is not supported (float32 only)");
  if (n.rank(0) < 2) n.fail("input 0 must have shape (N, C, d1..dk), got rank " + std::to_string(n.rank(0)));
}

Expr nll(NodeContext& n, Expr log_prob) {
  std::vector<Expr> args = {std::move(log_prob), n.input(1)};
  if (n.has_input(2)) args.push_back(n.input(2));
  return n.call("nn.nll_loss", std::move(args), loss_attrs(n));
}

void convert_nll(NodeContext& n) {
  check_inputs(n);
  n.set_output(0, nll(n, n.input(0)));
}

void convert_sce(NodeContext& n) {
  check_inputs(n);
  Expr log_prob = n.call("nn.log_softmax", {n.input(0)}, {{"axis", int64_t{1}}});
  n.set_output(0, nll(n, log_prob));
  if (n.has_output(1)) n.set_output(1, log_prob);
}

}  // namespace

void add_loss_converters(ConverterTable& t) {
  t["NegativeLogLikelihoodLoss"] = {convert_nll, {"nn.nll_loss"}, 12};
  t["SoftmaxCrossEntropyLoss"] = {convert_sce, {"nn.log_softmax", "nn.nll_loss"}, 12};
}

}  // namespace kiln::onnx_import
