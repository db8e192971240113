// Channel-blocked layouts (NCHWc) for host convolutions: the ops the pass
// convert-layout (src/transform/convert_layout.cc) writes, with their
// reference kernels.
//
// In NCHWc the channels are split into blocks of c, the block innermost:
// channel b * c + i of row h, column w is element [n, b, h, w, i]. A conv in
// that layout reads, for each input channel and tap, c consecutive weights
// (one vector) and writes c consecutive output channels of one position, so
// its vector lanes are channels rather than columns: every lane is used
// however narrow the image (a 10x10 map wastes none), and a depthwise conv
// is one vector multiply-add per tap.
//
// nn.block_channels(x: (N, C, H, W)) {block} -> (N, C / block, H, W, block)
//   y[n, b, h, w, i] = x[n, b * block + i, h, w]; C must be a multiple of block.
// nn.unblock_channels(x: (N, B, H, W, c)) -> (N, B * c, H, W), the inverse.
// nn.block_conv_weight(w: (O, I, KH, KW)) {in_block, out_block}
//   -> (O / ob, I / ib, KH, KW, ib, ob),  y[p, q, ky, kx, i, o] = w[p * ob + o, q * ib + i, ky, kx]
// nn.conv2d_blocked(x: (N, C / c, H, W, c), w: (O / ob, I / ib, KH, KW, ib, ob))
//   {strides, padding, dilation, groups} -> (N, O / ob, OH, OW, ob):
//   nn.conv2d in these layouts, so that
//   unblock_channels(conv2d_blocked(block_channels(x), block_conv_weight(w))) == nn.conv2d(x, w).
//   groups is 1 (then ib == c) or C (depthwise: I == 1, ib == 1, ob == c).
//   NCHW data (4-D) is read as blocks of one channel (c = 1, ib = 1): the
//   first conv of a network, on an image of 3 channels, writes blocks
//   without its input being copied into them.
//
// All four take float32; block_channels and unblock_channels float16 too
// (a float16 model's rounded values between blocked convs, widen-float16).
#include <vector>

#include "op/nn_internal.h"

namespace kiln {
namespace {

int64_t positive_int(const std::string& op, const Attrs& attrs, const std::string& name) {
  int64_t v = attrs.get_int(name);
  if (v < 1) throw Error(op + ": attribute '" + name + "' = " + std::to_string(v) + " must be >= 1");
  return v;
}

// Copies between NCHW (N, C, HW) and blocked (N, C / c, HW, c) data of
// float32 (float) or float16 (its bits, uint16_t) elements.
template <typename T>
void block_data(const T* src, T* dst, int64_t n, int64_t channels, int64_t hw, int64_t c) {
  for (int64_t b = 0; b < n * channels; ++b) {
    const int64_t img = b / channels, ch = b % channels;
    T* out = dst + ((img * (channels / c) + ch / c) * hw) * c + ch % c;
    const T* in = src + b * hw;
    for (int64_t p = 0; p < hw; ++p) out[p * c] = in[p];
  }
}

template <typename T>
void unblock_data(const T* src, T* dst, int64_t n, int64_t channels, int64_t hw, int64_t c) {
  for (int64_t b = 0; b < n * channels; ++b) {
    const int64_t img = b / channels, ch = b % channels;
    const T* in = src + ((img * (channels / c) + ch / c) * hw) * c + ch % c;
    T* out = dst + b * hw;
    for (int64_t p = 0; p < hw; ++p) out[p] = in[p * c];
  }
}

// Blocked data: float32, or float16 (a float16 model's rounded values
// between blocked convs, widen-float16).
void require_blockable_data(const std::string& op, const TensorDesc& t) {
  if (t.dtype != DType::Float32 && t.dtype != DType::Float16)
    throw Error(op + ": data must be float32 or float16, got " + std::string(dtype_name(t.dtype)));
}

// Where weight element [oc, ic, tap] of an (O, I, taps) weight sits in its
// blocked form (O / ob, I / ib, taps, ib, ob).
int64_t blocked_weight_offset(int64_t oc, int64_t ic, int64_t tap, int64_t channels_in, int64_t taps,
                              int64_t ib, int64_t ob) {
  return (((oc / ob) * (channels_in / ib) + ic / ib) * taps + tap) * ib * ob + (ic % ib) * ob + oc % ob;
}

// ---- block_channels / unblock_channels ------------------------------------

const char* kBlock = "nn.block_channels";
const char* kUnblock = "nn.unblock_channels";

std::vector<TensorDesc> infer_block(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const TensorDesc& x = in[0];
  require_blockable_data(kBlock, x);
  require_rank(kBlock, "data", x, 4, "(N, C, H, W)");
  int64_t c = positive_int(kBlock, attrs, "block");
  if (x.shape[1] % c != 0)
    throw Error(std::string(kBlock) + ": data has " + std::to_string(x.shape[1]) +
                " channels, not a multiple of block=" + std::to_string(c));
  return {{{x.shape[0], x.shape[1] / c, x.shape[2], x.shape[3], c}, x.dtype}};
}

void block_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  if (x.dtype() == DType::Float16)
    block_data(x.data<uint16_t>(), out[0].data<uint16_t>(), x.dim(0), x.dim(1), x.dim(2) * x.dim(3),
               out[0].dim(4));
  else
    block_data(x.data<float>(), out[0].data<float>(), x.dim(0), x.dim(1), x.dim(2) * x.dim(3), out[0].dim(4));
}

std::vector<TensorDesc> infer_unblock(const std::vector<TensorDesc>& in, const Attrs&) {
  const TensorDesc& x = in[0];
  require_blockable_data(kUnblock, x);
  require_rank(kUnblock, "data", x, 5, "(N, C / c, H, W, c)");
  return {{{x.shape[0], x.shape[1] * x.shape[4], x.shape[2], x.shape[3]}, x.dtype}};
}

void unblock_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  if (x.dtype() == DType::Float16)
    unblock_data(x.data<uint16_t>(), out[0].data<uint16_t>(), x.dim(0), x.dim(1) * x.dim(4),
                 x.dim(2) * x.dim(3), x.dim(4));
  else
    unblock_data(x.data<float>(), out[0].data<float>(), x.dim(0), x.dim(1) * x.dim(4), x.dim(2) * x.dim(3),
                 x.dim(4));
}

// ---- block_conv_weight ----------------------------------------------------

const char* kBlockWeight = "nn.block_conv_weight";

std::vector<TensorDesc> infer_block_weight(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kBlockWeight;
  const TensorDesc& w = in[0];
  require_float32(op, "weight", w);
  require_rank(op, "weight", w, 4, "(O, I, KH, KW)");
  int64_t ib = positive_int(op, attrs, "in_block"), ob = positive_int(op, attrs, "out_block");
  if (w.shape[0] % ob != 0 || w.shape[1] % ib != 0)
    throw Error(op + ": weight " + shape_str(w.shape) + " does not split into blocks of out_block=" +
                std::to_string(ob) + " output and in_block=" + std::to_string(ib) + " input channels");
  return {{{w.shape[0] / ob, w.shape[1] / ib, w.shape[2], w.shape[3], ib, ob}, w.dtype}};
}

void block_weight_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& w = in[0];
  const int64_t o = w.dim(0), i = w.dim(1), taps = w.dim(2) * w.dim(3);
  const int64_t ib = attrs.get_int("in_block"), ob = attrs.get_int("out_block");
  const float* src = w.data<float>();
  float* dst = out[0].data<float>();
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t ic = 0; ic < i; ++ic)
      for (int64_t t = 0; t < taps; ++t)
        dst[blocked_weight_offset(oc, ic, t, i, taps, ib, ob)] = src[(oc * i + ic) * taps + t];
}

// ---- conv2d_blocked -------------------------------------------------------

const char* kConvBlocked = "nn.conv2d_blocked";

std::vector<TensorDesc> infer_conv_blocked(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConvBlocked;
  const TensorDesc &x = in[0], &w = in[1];
  require_float32(op, "data", x);
  require_float32(op, "weight", w);
  if (x.shape.size() != 4) require_rank(op, "data", x, 5, "(N, C / c, H, W, c) or 4-D (N, C, H, W)");
  require_rank(op, "weight", w, 6, "(O / ob, I / ib, KH, KW, ib, ob)");
  const int64_t c = x.shape.size() == 4 ? 1 : x.shape[4], channels = x.shape[1] * c, ib = w.shape[4],
                ob = w.shape[5];
  const int64_t groups = attrs.get_int("groups");
  const bool depthwise = groups == channels && groups > 1;
  if (groups != 1 && !depthwise)
    throw Error(op + ": attribute 'groups' = " + std::to_string(groups) + " must be 1 or the " +
                std::to_string(channels) + " channels of the data (depthwise)");
  if (!depthwise && (ib != c || w.shape[1] * ib != channels))
    throw Error(op + ": weight " + shape_str(w.shape) + " does not read data " + shape_str(x.shape) +
                ": its input blocks must be the data's channel blocks");
  if (depthwise && (ib != 1 || w.shape[1] != 1 || ob != c || w.shape[0] != x.shape[1]))
    throw Error(op + ": depthwise weight " + shape_str(w.shape) + " does not match data " +
                shape_str(x.shape) + ": expected (" + std::to_string(x.shape[1]) + ", 1, KH, KW, 1, " +
                std::to_string(c) + ")");
  // The output as nn.conv2d infers it on the unblocked shapes.
  std::vector<TensorDesc> plain = {
      {{x.shape[0], channels, x.shape[2], x.shape[3]}, x.dtype},
      {{w.shape[0] * ob, depthwise ? 1 : channels, w.shape[2], w.shape[3]}, w.dtype}};
  Attrs conv = attrs;
  conv.set("out_dtype", std::string());
  const OpDef* conv2d = find_op("nn.conv2d");
  KILN_ASSERT(conv2d != nullptr, "nn.conv2d is not registered");
  const Shape s = conv2d->infer(plain, conv)[0].shape;
  return {{{s[0], s[1] / ob, s[2], s[3], ob}, x.dtype}};
}

// nn.conv2d's reference kernel on the unblocked data and weight, its output
// blocked: the definition above, computed.
void conv_blocked_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  Attrs conv = attrs;
  conv.set("out_dtype", std::string());
  run_unblocked("nn.conv2d", in, conv, out);
}

}  // namespace

void run_unblocked(const std::string& plain_op, const std::vector<Tensor>& in, const Attrs& attrs,
                   std::vector<Tensor>& out) {
  const Tensor &x = in[0], &w = in[1];
  const int64_t c = x.ndim() == 4 ? 1 : x.dim(4), channels = x.dim(1) * c, ib = w.dim(4), ob = w.dim(5);
  const int64_t o = w.dim(0) * ob, i = w.dim(1) * ib, taps = w.dim(2) * w.dim(3);
  Tensor xp = x;
  if (x.ndim() == 5) {
    xp = Tensor::empty({x.dim(0), channels, x.dim(2), x.dim(3)}, DType::Float32);
    unblock_data(x.data<float>(), xp.data<float>(), x.dim(0), channels, x.dim(2) * x.dim(3), c);
  }
  Tensor wp = Tensor::empty({o, i, w.dim(2), w.dim(3)}, DType::Float32);
  const float* ws = w.data<float>();
  float* wd = wp.data<float>();
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t ic = 0; ic < i; ++ic)
      for (int64_t t = 0; t < taps; ++t)
        wd[(oc * i + ic) * taps + t] = ws[blocked_weight_offset(oc, ic, t, i, taps, ib, ob)];
  Tensor& y = out[0];
  std::vector<Tensor> plain = {Tensor::empty({y.dim(0), o, y.dim(2), y.dim(3)}, DType::Float32)};
  find_op(plain_op)->kernel({xp, wp}, attrs, plain);
  block_data(plain[0].data<float>(), y.data<float>(), y.dim(0), o, y.dim(2) * y.dim(3), ob);
}

void register_nn_blocked_ops(OpRegistry& r) {
  r.add({kBlock,
         "NCHW data to channel blocks: (N, C, H, W) -> (N, C / block, H, W, block)",
         1,
         1,
         {{"block", AttrKind::Int, std::nullopt}},
         false,
         infer_block,
         block_kernel});
  r.add({kUnblock,
         "channel-blocked data back to NCHW: (N, C / c, H, W, c) -> (N, C, H, W)",
         1,
         1,
         {},
         false,
         infer_unblock,
         unblock_kernel});
  r.add({kBlockWeight,
         "an OIHW conv weight in channel blocks: (O / ob, I / ib, KH, KW, ib, ob)",
         1,
         1,
         {{"in_block", AttrKind::Int, std::nullopt}, {"out_block", AttrKind::Int, std::nullopt}},
         false,
         infer_block_weight,
         block_weight_kernel});
  r.add({kConvBlocked,
         "2-D convolution on channel-blocked data and weight (groups 1 or depthwise)",
         2,
         2,
         {{"strides", AttrKind::Ints, std::vector<int64_t>{1, 1}},
          {"padding", AttrKind::Ints, std::vector<int64_t>{0, 0, 0, 0}},
          {"dilation", AttrKind::Ints, std::vector<int64_t>{1, 1}},
          {"groups", AttrKind::Int, int64_t{1}}},
         false,
         infer_conv_blocked,
         conv_blocked_kernel});
}

}  // namespace kiln
