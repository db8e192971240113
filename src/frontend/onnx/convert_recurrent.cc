// Converters for the ONNX recurrent layers RNN, GRU and LSTM (opsets 7 and
// 14) to nn.rnn, nn.gru and nn.lstm.
//
// The kiln ops are sequence-first (layout 0); a layout 1 (batch-first) node
// gets its x, initial_h and initial_c permuted in and its outputs permuted
// back. A skipped optional input that an input after it needs is filled with
// its ONNX default (zeros for b, initial_h, initial_c and p; the full
// sequence length for sequence_lens). Only the requested outputs are set.
#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

enum class Layer { Rnn, Gru, Lstm };

struct LayerInfo {
  const char* op;
  int64_t gates;
  size_t max_inputs;
};

LayerInfo layer_info(Layer l) {
  switch (l) {
    case Layer::Rnn:
      return {"nn.rnn", 1, 6};
    case Layer::Gru:
      return {"nn.gru", 3, 6};
    case Layer::Lstm:
      return {"nn.lstm", 4, 8};
  }
  return {"", 0, 0};
}

std::string join(const std::vector<std::string>& xs) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : ",") + x;
  return s;
}

template <Layer L>
void convert_recurrent(NodeContext& n) {
  const LayerInfo info = layer_info(L);
  const int64_t layout = n.opset() >= 14 ? n.attr_int("layout", 0) : 0;
  if (layout != 0 && layout != 1) n.fail("attribute layout must be 0 or 1, got " + std::to_string(layout));
  if (n.rank(0) != 3) n.fail("input X must have rank 3, got rank " + std::to_string(n.rank(0)));
  if (n.desc(0).dtype != DType::Float32) n.unsupported("only float32 inputs are supported");
  if (!n.has_attr("hidden_size")) n.fail("attribute hidden_size is required");
  const int64_t hidden = n.attr_int("hidden_size", 0);
  const std::string direction = n.attr_string("direction", "forward");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (n.rank(1) != 3) n.fail("input W must have rank 3, got rank " + std::to_string(n.rank(1)));

  const Shape& xs = n.desc(0).shape;
  const int64_t seq = layout ? xs[1] : xs[0];
  const int64_t batch = layout ? xs[0] : xs[1];
  const std::vector<int64_t> swap01{1, 0, 2};
  Expr x = n.input(0);
  if (layout) x = n.call("permute_dims", {x}, {{"axes", swap01}});

  // Inputs in kiln order, trailing absent ones dropped, gaps filled.
  std::vector<Expr> args{x, n.input(1), n.input(2)};
  size_t last = 2;
  for (size_t i = 3; i < info.max_inputs; ++i)
    if (n.has_input(i)) last = i;
  for (size_t i = 3; i <= last; ++i) {
    const bool state = i == 5 || i == 6;  // initial_h, initial_c
    if (n.has_input(i)) {
      Expr e = n.input(i);
      if (state && layout) e = n.call("permute_dims", {e}, {{"axes", swap01}});
      args.push_back(e);
      continue;
    }
    if (i == 3)
      args.push_back(n.constant_expr(Tensor::zeros({dirs, 2 * info.gates * hidden}, DType::Float32)));
    if (i == 4)
      args.push_back(n.constant_expr(
          Tensor::from_ints({batch}, std::vector<int64_t>(static_cast<size_t>(batch), seq), DType::Int32)));
    if (state) args.push_back(n.constant_expr(Tensor::zeros({dirs, batch, hidden}, DType::Float32)));
    if (i == 7) args.push_back(n.constant_expr(Tensor::zeros({dirs, 3 * hidden}, DType::Float32)));
  }

  Attrs attrs{{"hidden_size", hidden},
              {"direction", direction},
              {"activations", join([&] {
                 std::vector<std::string> names;
                 if (const auto* a = n.find_attr("activations"))
                   for (const auto& s : a->strings()) names.push_back(s);
                 return names;
               }())},
              {"activation_alpha", n.attr_floats("activation_alpha")},
              {"activation_beta", n.attr_floats("activation_beta")}};
  if (n.has_attr("clip")) {
    double clip = n.attr_float("clip", 0);
    if (clip <= 0) n.fail("attribute clip must be positive, got " + std::to_string(clip));
    attrs.set("clip", clip);
  }
  if (L == Layer::Gru)
    attrs.set("linear_before_reset", n.attr_int("linear_before_reset", 0) ? int64_t{1} : int64_t{0});
  if (L == Layer::Lstm) attrs.set("input_forget", n.attr_int("input_forget", 0) ? int64_t{1} : int64_t{0});

  Expr result = n.call(info.op, std::move(args), attrs);
  const size_t outputs = L == Layer::Lstm ? 3 : 2;
  for (size_t i = 0; i < outputs; ++i) {
    if (!n.has_output(i)) continue;
    Expr out = n.builder().tuple_item(result, static_cast<int64_t>(i));
    // y: (seq, dirs, batch, hidden) -> (batch, seq, dirs, hidden); states:
    // (dirs, batch, hidden) -> (batch, dirs, hidden).
    if (layout)
      out = n.call("permute_dims", {out},
                   {{"axes", i == 0 ? std::vector<int64_t>{2, 0, 1, 3} : std::vector<int64_t>{1, 0, 2}}});
    n.set_output(i, out);
  }
}

}  // namespace

void add_recurrent_converters(ConverterTable& t) {
  t["RNN"] = {convert_recurrent<Layer::Rnn>, {"nn.rnn", "permute_dims"}, 7};
  t["GRU"] = {convert_recurrent<Layer::Gru>, {"nn.gru", "permute_dims"}, 7};
  t["LSTM"] = {convert_recurrent<Layer::Lstm>, {"nn.lstm", "permute_dims"}, 7};
}

}  // namespace kiln::onnx_import
