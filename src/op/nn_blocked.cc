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
// (a float16 model's rounded values between blocked convs, widen-float16)
// and the integers of a quantized model (uint8, int8, int32).
//
// Integer convs (uint8 data, int8 weight, int32 output; one group): the
// weight's input channels are in groups of four innermost, the layout of
// byte dot products (four products summed per int32 lane: VNNI's
// vpdpbusd), so one group's four weights for each output channel of a
// block are one contiguous run:
//   nn.block_conv_weight(w: int8 (O, I, KH, KW)) {in_block, out_block}
//     -> (O / ob, I / ib, KH, KW, ib / 4, ob, 4),
//     y[p, q, ky, kx, g, o, k] = w[p * ob + o, q * ib + g * 4 + k, ky, kx]; ib a multiple of 4.
//   nn.conv2d_blocked(x: uint8 (N, C / c, H, W, c), w: int8 (O / ob, C / c, KH, KW, c / 4, ob, 4))
//     -> int32 (N, O / ob, OH, OW, ob).
// An int16 weight (int8 values widened, for a CPU without byte dot
// products) goes in pairs of input channels, the layout of vpmaddwd (two
// int16 products summed per int32 lane): (O / ob, I / ib, KH, KW, ib / 2,
// ob, 2), and uint8 data by it gives int32 the same way.
#include <algorithm>
#include <cstring>
#include <vector>

#include "op/nn_internal.h"

namespace kiln {
namespace {

int64_t positive_int(const std::string& op, const Attrs& attrs, const std::string& name) {
  int64_t v = attrs.get_int(name);
  if (v < 1) throw Error(op + ": attribute '" + name + "' = " + std::to_string(v) + " must be >= 1");
  return v;
}

// Copies between NCHW (N, C, HW) and blocked (N, C / c, HW, c) data (to
// blocks with `to_blocks`, else back), the elements as bits of their size.
template <typename T>
void copy_blocks(const T* src, T* dst, int64_t n, int64_t channels, int64_t hw, int64_t c, bool to_blocks) {
  for (int64_t b = 0; b < n * channels; ++b) {
    const int64_t img = b / channels, ch = b % channels;
    const int64_t blocked = ((img * (channels / c) + ch / c) * hw) * c + ch % c, plain = b * hw;
    if (to_blocks)
      for (int64_t p = 0; p < hw; ++p) dst[blocked + p * c] = src[plain + p];
    else
      for (int64_t p = 0; p < hw; ++p) dst[plain + p] = src[blocked + p * c];
  }
}

// Blocked data: float32, float16 (a float16 model's rounded values between
// blocked convs, widen-float16), or a quantized model's uint8, int8 and
// int32 values (integer convs in blocks).
void require_blockable_data(const std::string& op, const TensorDesc& t) {
  if (t.dtype != DType::Float32 && t.dtype != DType::Float16 && t.dtype != DType::UInt8 &&
      t.dtype != DType::Int8 && t.dtype != DType::Int32)
    throw Error(op + ": data must be float32, float16, uint8, int8 or int32, got " +
                std::string(dtype_name(t.dtype)));
}

// copy_blocks on tensors of 1-, 2- or 4-byte elements.
void copy_blocks(const Tensor& src, Tensor& dst, int64_t n, int64_t channels, int64_t hw, int64_t c,
                 bool to_blocks) {
  switch (dtype_bytes(src.dtype())) {
    case 1:
      return copy_blocks(src.data<uint8_t>(), dst.data<uint8_t>(), n, channels, hw, c, to_blocks);
    case 2:
      return copy_blocks(src.data<uint16_t>(), dst.data<uint16_t>(), n, channels, hw, c, to_blocks);
    default:
      return copy_blocks(src.data<uint32_t>(), dst.data<uint32_t>(), n, channels, hw, c, to_blocks);
  }
}

// Where weight element [oc, ic, tap] of an (O, I, taps) weight sits in its
// blocked form: (O / ob, I / ib, taps, ib, ob), or in `group`s of input
// channels (int8 by 4, int16 by 2) (O / ob, I / ib, taps, ib / group, ob, group).
int64_t blocked_weight_offset(int64_t oc, int64_t ic, int64_t tap, int64_t channels_in, int64_t taps,
                              int64_t ib, int64_t ob, int64_t group) {
  const int64_t block = (((oc / ob) * (channels_in / ib) + ic / ib) * taps + tap) * ib * ob;
  if (group) return block + ((ic % ib) / group) * ob * group + (oc % ob) * group + ic % group;
  return block + (ic % ib) * ob + oc % ob;
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
  copy_blocks(x, out[0], x.dim(0), x.dim(1), x.dim(2) * x.dim(3), out[0].dim(4), true);
}

std::vector<TensorDesc> infer_unblock(const std::vector<TensorDesc>& in, const Attrs&) {
  const TensorDesc& x = in[0];
  require_blockable_data(kUnblock, x);
  require_rank(kUnblock, "data", x, 5, "(N, C / c, H, W, c)");
  return {{{x.shape[0], x.shape[1] * x.shape[4], x.shape[2], x.shape[3]}, x.dtype}};
}

void unblock_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  copy_blocks(x, out[0], x.dim(0), x.dim(1) * x.dim(4), x.dim(2) * x.dim(3), x.dim(4), false);
}

// ---- block_conv_weight ----------------------------------------------------

const char* kBlockWeight = "nn.block_conv_weight";

std::vector<TensorDesc> infer_block_weight(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kBlockWeight;
  const TensorDesc& w = in[0];
  const int64_t g = dot_group(w.dtype);
  if (!g) require_float32(op, "weight", w);
  require_rank(op, "weight", w, 4, "(O, I, KH, KW)");
  int64_t ib = positive_int(op, attrs, "in_block"), ob = positive_int(op, attrs, "out_block");
  if (w.shape[0] % ob != 0 || w.shape[1] % ib != 0)
    throw Error(op + ": weight " + shape_str(w.shape) + " does not split into blocks of out_block=" +
                std::to_string(ob) + " output and in_block=" + std::to_string(ib) + " input channels");
  if (g) {
    if (ib % g != 0)
      throw Error(op + ": an " + std::string(dtype_name(w.dtype)) +
                  " weight's in_block=" + std::to_string(ib) + " must be a multiple of " + std::to_string(g) +
                  " (its input channels go in groups of " + std::to_string(g) + ")");
    return {{{w.shape[0] / ob, w.shape[1] / ib, w.shape[2], w.shape[3], ib / g, ob, g}, w.dtype}};
  }
  return {{{w.shape[0] / ob, w.shape[1] / ib, w.shape[2], w.shape[3], ib, ob}, w.dtype}};
}

template <typename T>
void block_weight(const Tensor& w, Tensor& y, int64_t ib, int64_t ob) {
  const int64_t o = w.dim(0), i = w.dim(1), taps = w.dim(2) * w.dim(3);
  const int64_t group = dot_group(w.dtype());
  const T* src = w.data<T>();
  T* dst = y.data<T>();
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t ic = 0; ic < i; ++ic)
      for (int64_t t = 0; t < taps; ++t)
        dst[blocked_weight_offset(oc, ic, t, i, taps, ib, ob, group)] = src[(oc * i + ic) * taps + t];
}

void block_weight_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const int64_t ib = attrs.get_int("in_block"), ob = attrs.get_int("out_block");
  if (in[0].dtype() == DType::Int8)
    block_weight<int8_t>(in[0], out[0], ib, ob);
  else if (in[0].dtype() == DType::Int16)
    block_weight<int16_t>(in[0], out[0], ib, ob);
  else
    block_weight<float>(in[0], out[0], ib, ob);
}

// ---- conv2d_blocked -------------------------------------------------------

const char* kConvBlocked = "nn.conv2d_blocked";

std::vector<TensorDesc> infer_conv_blocked(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConvBlocked;
  const TensorDesc &x = in[0], &w = in[1];
  // uint8 data by int8 weights (byte dot products) or int16 ones (pairs), or float32.
  const bool integer = x.dtype == DType::UInt8;
  const int64_t g = dot_group(w.dtype);
  if (integer) {
    if (!g)
      throw Error(op + ": uint8 data takes an int8 or int16 weight, got " + std::string(dtype_name(w.dtype)));
    require_rank(op, "data", x, 5, "(N, C / c, H, W, c)");
    require_rank(
        op, "weight", w, 7,
        g == 4 ? "(O / ob, I / ib, KH, KW, ib / 4, ob, 4)" : "(O / ob, I / ib, KH, KW, ib / 2, ob, 2)");
  } else {
    require_float32(op, "data", x);
    require_float32(op, "weight", w);
    if (x.shape.size() != 4) require_rank(op, "data", x, 5, "(N, C / c, H, W, c) or 4-D (N, C, H, W)");
    require_rank(op, "weight", w, 6, "(O / ob, I / ib, KH, KW, ib, ob)");
  }
  const int64_t c = x.shape.size() == 4 ? 1 : x.shape[4], channels = x.shape[1] * c;
  const int64_t ib = integer ? w.shape[4] * w.shape[6] : w.shape[4], ob = w.shape[5];
  const int64_t groups = attrs.get_int("groups");
  const bool depthwise = groups == channels && groups > 1 && !integer;
  if (groups != 1 && !depthwise)
    throw Error(op + ": attribute 'groups' = " + std::to_string(groups) + " must be 1" +
                (integer ? std::string(" for integer data")
                         : " or the " + std::to_string(channels) + " channels of the data (depthwise)"));
  if (integer && w.shape[6] != g)
    throw Error(op + ": " + std::string(dtype_name(w.dtype)) + " weight " + shape_str(w.shape) +
                " must end in groups of " + std::to_string(g) + " input channels");
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
      {{w.shape[0] * ob, depthwise ? 1 : channels, w.shape[2], w.shape[3]},
       w.dtype == DType::Int16 ? DType::Int32 : w.dtype}};  // int16 as the kernel reads it
  Attrs conv = attrs;
  conv.set("out_dtype", std::string());
  const OpDef* conv2d = find_op("nn.conv2d");
  KILN_ASSERT(conv2d != nullptr, "nn.conv2d is not registered");
  const TensorDesc y = conv2d->infer(plain, conv)[0];
  return {{{y.shape[0], y.shape[1] / ob, y.shape[2], y.shape[3], ob}, y.dtype}};
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
  // An integer weight (O / ob, I / ib, KH, KW, ib / g, ob, g), else (..., ib, ob).
  const int64_t group = w.ndim() == 7 ? w.dim(6) : 0;
  const int64_t c = x.ndim() == 4 ? 1 : x.dim(4), channels = x.dim(1) * c;
  const int64_t ib = group ? w.dim(4) * w.dim(6) : w.dim(4), ob = w.dim(5);
  const int64_t o = w.dim(0) * ob, i = w.dim(1) * ib, taps = w.dim(2) * w.dim(3);
  Tensor xp = x;
  if (x.ndim() == 5) {
    xp = Tensor::empty({x.dim(0), channels, x.dim(2), x.dim(3)}, x.dtype());
    copy_blocks(x, xp, x.dim(0), channels, x.dim(2) * x.dim(3), c, false);
  }
  Tensor wp = Tensor::empty({o, i, w.dim(2), w.dim(3)}, w.dtype());
  const size_t bytes = dtype_bytes(w.dtype());
  const auto* ws = static_cast<const unsigned char*>(w.raw());
  auto* wd = static_cast<unsigned char*>(wp.raw());
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t ic = 0; ic < i; ++ic)
      for (int64_t t = 0; t < taps; ++t)
        std::memcpy(wd + size_t((oc * i + ic) * taps + t) * bytes,
                    ws + size_t(blocked_weight_offset(oc, ic, t, i, taps, ib, ob, group)) * bytes, bytes);
  // The plain conv takes int8, uint8 and int32 integers: int16 as int32.
  if (wp.dtype() == DType::Int16) {
    Tensor wide = Tensor::empty(wp.shape(), DType::Int32);
    std::copy_n(wp.data<int16_t>(), wp.numel(), wide.data<int32_t>());
    wp = wide;
  }
  Tensor& y = out[0];
  std::vector<Tensor> plain = {Tensor::empty({y.dim(0), o, y.dim(2), y.dim(3)}, y.dtype())};
  find_op(plain_op)->kernel({xp, wp}, attrs, plain);
  copy_blocks(plain[0], y, y.dim(0), o, y.dim(2) * y.dim(3), ob, true);
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
