// quantize-convs: runs the convs of a quantized model (ONNX's QDQ form: a
// conv reading a dequantized uint8 activation and a weight dequantized from
// int8) on the integers, so a CPU with VNNI computes four byte products per
// int32 lane and instruction (src/lower/nn.cc, conv2d_uint8_dot) instead of
// float32 multiply-adds on the dequantized values.
//
// A float32 nn.conv2d (one group, stride and dilation 1: what the NCHW
// integer lowering takes; see block=N below) whose data is dequantize(q) (q uint8, one scale sx and
// zero point zx) and whose weight is a constant each of whose output
// channels o is, value for value, an int8 weight wq times one float32 scale
// sw[o] (as dequantizing a symmetric per-channel or per-tensor int8 weight
// gives it; the scale is found from the tensor's largest magnitude as 127
// steps, or the channel's as 127 down to 1, and checked on every value)
// becomes
//
//   conv(dq(q), w) = sx * sw[o] * (sum (q - zx) * wq)
//                  = sx * sw[o] * (conv_int32(pad(q, zx), wq) - zx * sum(wq[o]))
//
// q padded with its zero point (a padded position then adds zx * wq, which
// the subtracted sum of the channel's weights cancels, as the float conv's
// zero does), the integer conv unpadded. The sums are exact in int32 (a
// conv whose reduction could reach 2^31, 255 * 128 * C * KH * KW of it, is
// left alone); the one float32 multiply rounds where the float conv rounded
// each product and sum, so results agree within float32 rounding (which can
// move a value across a quantization step of the quantize after it).
//
// quantize-convs{min_columns=N} leaves convs whose output rows have fewer
// than N columns as they are: the integer conv computes whole vectors of
// output columns (16 with AVX-512), and on a 7x7 map most of its lanes would
// compute padding (ResNet-18's last stage in QDQ: 2.8 ms a conv on
// integers, 0.6 in float32; Zen 5). The compile pipeline passes half the
// dot's lanes.
//
// quantize-convs{block=N} also takes convs whose output channels are
// multiples of N at any stride and map width: convert-layout{block=N dot=4|2}
// runs those in channel blocks of N, whose lanes are output channels (the
// compile pipeline passes the dot's lanes when they are the float32
// lanes' count). Their input channels go in groups of four: a count that is
// no multiple of 4 (an image's 3) is padded to one, the data with its zero
// point by the same nn.pad, the weight with zeros.
//
// quantize-convs{dot=2} (with block=N) is for a CPU without byte dot
// products whose int16 pairs (vpmaddwd) have N lanes (AVX2: 8): it takes
// only the convs that run blocked, convert-layout{dot=2} widening their
// weights to int16; the NCHW integer conv needs byte dot products. The
// default, dot=4, is VNNI's.
//
// The same integer conv serves ONNX's QLinearConv as the importer writes
// it (src/frontend/onnx/convert_quant.cc): an int32 conv of
// subtract(astype(q, int32), zx) (q uint8, zx a constant) by a constant
// weight of int8 values (int8, or int32 within int8's range: shifted by a
// zero point of 0) becomes the uint8 x int8 conv of pad(q, zx) minus zx
// times each channel's weight sum, the same int32 sums (exact), the
// requantization after it unchanged.
//
// Requires: nothing. Guarantees: each rewritten conv's variable keeps its
// type (float32) and is bound to the multiply; other bindings are unchanged
// (dead-code-elimination drops a dequantize nothing else reads).
//
//   %d = dequantize(%q: uint8, scale=0.1, zero_point=128)
//   %y = nn.conv2d(%d, const(Tensor[(2, 1, 1, 1), float32], [0.5, -0.25]))
// =>
//   %y_acc = nn.conv2d(%q, const(Tensor[(2, 1, 1, 1), int8], [127, -127]), out_dtype="int32")
//   %y_centered = subtract(%y_acc, const(Tensor[(1, 2, 1, 1), int32], [16256, -16256]))
//   %y_float = astype(%y_centered, dtype="float32")
//   %y = multiply(%y_float, const(Tensor[(1, 2, 1, 1), float32], [0.1 * 0.5 / 127, 0.1 * 0.25 / 127]))
#include <algorithm>
#include <cmath>
#include <optional>

#include "transform/int8_weight.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// An int8 weight (O, C, KH, KW) with `extra` more input channels of zeros.
Tensor with_zero_channels(const Tensor& w, int64_t extra) {
  const Shape& s = w.shape();
  const int64_t taps = s[2] * s[3], c = s[1];
  Tensor out = Tensor::zeros({s[0], c + extra, s[2], s[3]}, DType::Int8);
  for (int64_t o = 0; o < s[0]; ++o)
    std::copy_n(w.data<int8_t>() + o * c * taps, c * taps, out.data<int8_t>() + o * (c + extra) * taps);
  return out;
}

class Rewriter : public BindingRewriter {
 public:
  Rewriter(const FunctionNode& f, int64_t min_columns, int64_t block, bool bytes)
      : BindingRewriter(f), min_columns_(min_columns), block_(block), bytes_(bytes) {}

 private:
  bool rewrite(const Binding& b) override {
    const CallNode* conv = op_call(b.value, "nn.conv2d");
    if (!conv) return false;
    const TensorDesc* out = tensor_desc(b.value);
    const TensorDesc* in = tensor_desc(conv->args[0]);
    if (!out || !in || out->shape.size() != 4 || in->shape.size() != 4) return false;
    const Attrs& a = conv->attrs;
    if (a.get_int("groups") != 1 || a.get_ints("dilation") != std::vector<int64_t>{1, 1}) return false;
    // In channel blocks any map and stride; in NCHW stride 1 and wide rows.
    // Input channels that fill no block are read in blocks of four (an
    // image's 3, padded to 4 with the zero point and zero weights).
    const bool blocked = block_ && out->shape[1] % block_ == 0;
    if (!blocked &&
        (!bytes_ || out->shape[3] < min_columns_ || a.get_ints("strides") != std::vector<int64_t>{1, 1}))
      return false;
    if (out->dtype == DType::Float32) return rewrite_dequantized(b, *conv, blocked);
    if (out->dtype == DType::Int32) return rewrite_shifted(b, *conv, blocked);
    return false;
  }

  // A float32 conv of dequantize(q) by int8 values times a scale per channel.
  bool rewrite_dequantized(const Binding& b, const CallNode& conv, bool blocked) {
    const CallNode* dq = op_call(value_of(conv.args[0]), "dequantize");
    if (!dq) return false;
    const TensorDesc* q = tensor_desc(dq->args[0]);
    if (!q || q->dtype != DType::UInt8) return false;
    const ConstantNode* w = as<ConstantNode>(value_of(conv.args[1]));
    if (!w || w->value.dtype() != DType::Float32 || w->value.ndim() != 4) return false;
    std::optional<Int8Weight> wq = int8_weight(w->value);
    if (!wq) return false;
    std::vector<Binding> added;
    const int64_t zx = dq->attrs.get_int("zero_point");
    Expr centered = integer_conv(b, conv, dq->args[0], zx, *wq, blocked, added);
    if (!centered) return false;
    const float sx = float(dq->attrs.get_float("scale"));
    std::vector<float> scales;
    for (float sw : wq->scales) scales.push_back(sx * sw);
    const Shape per_channel{1, int64_t(scales.size()), 1, 1};
    centered = bind(b.var->name + "_centered", centered, added);
    Attrs to_float;
    to_float.set("dtype", std::string("float32"));
    Expr wide = bind(b.var->name + "_float", make_op_call("astype", {centered}, to_float), added);
    Expr y = make_op_call("multiply", {wide, make_constant(Tensor::from_floats(per_channel, scales))});
    return finish(b, y, added);
  }

  // An int32 conv of subtract(astype(q, int32), zx) (ONNX's QLinearConv as
  // imported) by a constant of int8 values (int8, or int32 within int8's
  // range: a weight shifted by a zero point of 0): the same sums.
  bool rewrite_shifted(const Binding& b, const CallNode& conv, bool blocked) {
    const CallNode* shift = op_call(value_of(conv.args[0]), "subtract");
    if (!shift) return false;
    const CallNode* wide = op_call(value_of(shift->args[0]), "astype");
    const ConstantNode* zero_point = as<ConstantNode>(value_of(shift->args[1]));
    if (!wide || !zero_point || zero_point->value.numel() != 1) return false;
    const TensorDesc* q = tensor_desc(wide->args[0]);
    const TensorDesc* shifted = tensor_desc(shift->args[0]);
    if (!q || q->dtype != DType::UInt8 || !shifted || shifted->dtype != DType::Int32) return false;
    const double zx = zero_point->value.get_as_double(0);
    if (!(zx >= 0 && zx <= 255) || zx != std::floor(zx)) return false;
    const ConstantNode* w = as<ConstantNode>(value_of(conv.args[1]));
    if (!w || w->value.ndim() != 4) return false;
    std::optional<Tensor> values = int8_values(w->value);
    if (!values) return false;
    Int8Weight wq{*values, {}, {}};
    const int64_t channels = values->dim(0), n = values->numel() / channels;
    for (int64_t o = 0; o < channels; ++o) {
      int64_t sum = 0;
      for (int64_t i = o * n; i < (o + 1) * n; ++i) sum += values->data<int8_t>()[i];
      wq.sums.push_back(sum);
    }
    std::vector<Binding> added;
    Expr y = integer_conv(b, conv, wide->args[0], int64_t(zx), wq, blocked, added);
    return y && finish(b, y, added);
  }

  // The int32 sums of (q - zx) * w: q (uint8) padded with zx (and, when
  // blocked, to whole groups of four channels, the weight with zeros), the
  // uint8 x int8 conv unpadded, minus zx times each channel's weight sum.
  // Null when the sums could overflow int32 or the padding is malformed.
  Expr integer_conv(const Binding& b, const CallNode& conv, Expr data, int64_t zx, Int8Weight& wq,
                    bool blocked, std::vector<Binding>& added) {
    const Shape ws = wq.values.shape();
    const int64_t extra = blocked ? (4 - ws[1] % 4) % 4 : 0;
    if (255.0 * 128.0 * double((ws[1] + extra) * ws[2] * ws[3]) >= 2147483648.0) return nullptr;
    if (extra) wq.values = with_zero_channels(wq.values, extra);
    std::vector<int64_t> pad = conv.attrs.get_ints("padding");  // [h, w] or [top, left, bottom, right]
    if (pad.size() == 2) pad = {pad[0], pad[1], pad[0], pad[1]};
    if (pad.size() != 4) return nullptr;
    if (pad != std::vector<int64_t>{0, 0, 0, 0} || extra) {
      Attrs pa;
      pa.set("pad_width", std::vector<int64_t>{0, 0, 0, extra, pad[0], pad[2], pad[1], pad[3]});
      pa.set("pad_value", double(zx));
      pa.set("mode", std::string("constant"));
      data = bind(b.var->name + "_padded", make_op_call("nn.pad", {data}, pa), added);
    }
    Attrs ca = conv.attrs;
    ca.set("padding", std::vector<int64_t>{0, 0, 0, 0});
    ca.set("out_dtype", std::string("int32"));
    Expr acc = make_op_call("nn.conv2d", {data, make_constant(wq.values)}, ca);
    std::vector<int64_t> offsets;
    for (int64_t sum : wq.sums) offsets.push_back(zx * sum);
    acc = bind(b.var->name + "_acc", acc, added);
    const Shape per_channel{1, ws[0], 1, 1};
    return make_op_call("subtract",
                        {acc, make_constant(Tensor::from_ints(per_channel, offsets, DType::Int32))});
  }

  // `y` bound to the conv's variable after `added`, when its type is the conv's.
  bool finish(const Binding& b, const Expr& y, const std::vector<Binding>& added) {
    if (!type_equal(y->type, b.var->type)) return false;
    out_.insert(out_.end(), added.begin(), added.end());
    out_.push_back({b.var, y});
    return true;
  }

  const int64_t min_columns_;
  const int64_t block_;  // channels in blocks of it run blocked (0: none)
  const bool bytes_;     // byte dot products: NCHW convs too (dot=4)
};

}  // namespace

Module quantize_convs(const Module& m, const PassOptions& options) {
  check_pass_option_keys(options, "quantize-convs", {"min_columns", "block", "dot"});
  const int64_t min_columns =
      integer_pass_option_or(options, "quantize-convs", "min_columns", 1, 1 << 20,
                             "the narrowest output rows to rewrite, e.g. min_columns=16", 1);
  const int64_t block = integer_pass_option_or(
      options, "quantize-convs", "block", 4, 64,
      "the channel blocks convert-layout{block=N dot=4|2} runs integer convs in, e.g. block=16", 0);
  const int64_t dot =
      options.count("dot") ? dot_pass_option(options, "quantize-convs", "convs are rewritten") : 4;
  if (dot == 0)
    throw Error(
        "quantize-convs: option dot must be 4 or 2 (the products per lane of the integer dot product convs "
        "are rewritten for), got 0");
  if (dot == 2 && !block)
    throw Error(
        "quantize-convs: dot=2 takes only convs that run in blocks: give block=N too (the int16 pairs' "
        "lanes, e.g. block=8)");
  return rewrite_host_functions(
      m, [&](const FunctionNode& f) { return Rewriter(f, min_columns, block, dot == 4).run(); });
}

}  // namespace kiln
