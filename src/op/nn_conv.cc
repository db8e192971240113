// nn.conv2d and nn.conv2d_transpose: reference kernels.
//
// nn.conv2d(data NCHW, weight OIHW) with I = C / groups (depthwise when
// groups == C). Attributes: strides=[1, 1], padding=[0, 0, 0, 0] (top, left,
// bottom, right; [h, w] means symmetric), dilation=[1, 1], groups=1,
// out_dtype="" (float32 -> float32, float16 -> float16, int8/uint8/int32 -> int32).
// Output size per spatial axis: (H + pad_before + pad_after - d*(k-1) - 1) / s + 1.
//
// nn.conv2d_transpose(data NCHW, weight IOHW = (C_in, C_out / groups, kh, kw)):
// the gradient of conv2d with respect to its input, i.e. every input element
// scatters weight * x into the output. Attributes as conv2d plus
// output_padding=[0, 0] (extra rows/columns at the bottom/right; must be
// smaller than the stride or the dilation). Output size
// (H - 1) * s - pad_top - pad_bottom + d * (k - 1) + output_padding + 1.
//
// float16 computes in float32 and rounds once at the end; int8/uint8 accumulate
// exactly in int32, and so do int32 operands (8-bit values with a zero point
// subtracted, the ONNX ConvInteger/QLinearConv decomposition) while the sums
// stay within int32. Padding is zero (no zero point).
//
// Speed: conv2d computes blocks of 8 output columns for 4 output channels at
// once, accumulating over every input channel and tap in registers (loops of
// constant length, which the compiler vectorises); the transpose scatters one
// contiguous input row at a time with a scalar weight.
#include <algorithm>
#include <vector>

#include "op/nn_internal.h"

namespace kiln {
namespace {

struct ConvParams {
  int64_t sh, sw, dh, dw, groups;
  Pad2d pad;
};

ConvParams conv_params(const std::string& op, const Attrs& attrs) {
  std::vector<int64_t> s = ints_attr(op, attrs, "strides", 2, 1);
  std::vector<int64_t> d = ints_attr(op, attrs, "dilation", 2, 1);
  int64_t groups = attrs.get_int("groups");
  if (groups < 1) throw Error(op + ": attribute 'groups' = " + std::to_string(groups) + " must be >= 1");
  return {s[0], s[1], d[0], d[1], groups, pad2d_attr(op, attrs)};
}

void require_4d(const std::string& op, const std::string& what, const TensorDesc& t, const char* layout) {
  if (t.shape.size() != 4)
    throw Error(op + ": " + what + " must be 4-D " + layout + ", got shape " + shape_str(t.shape));
}

// ---- conv2d ---------------------------------------------------------------

const char* kConv2d = "nn.conv2d";

std::vector<TensorDesc> infer_conv2d(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConv2d;
  const TensorDesc& x = in[0];
  const TensorDesc& w = in[1];
  check_mul_operands(op, "data", x.dtype, "weight", w.dtype);
  require_4d(op, "data", x, "(N, C, H, W)");
  require_4d(op, "weight", w, "(O, I, kh, kw)");
  ConvParams p = conv_params(op, attrs);
  int64_t c = x.shape[1], o = w.shape[0];
  if (c % p.groups != 0)
    throw Error(op + ": data has " + std::to_string(c) +
                " channels, not divisible by groups=" + std::to_string(p.groups));
  if (o % p.groups != 0)
    throw Error(op + ": weight has " + std::to_string(o) +
                " output channels, not divisible by groups=" + std::to_string(p.groups));
  if (w.shape[1] != c / p.groups)
    throw Error(op + ": weight has " + std::to_string(w.shape[1]) +
                " input channels per group but data has " + std::to_string(c) +
                " channels (groups=" + std::to_string(p.groups) + ")");
  if (w.shape[2] < 1 || w.shape[3] < 1)
    throw Error(op + ": weight has an empty kernel " + shape_str(w.shape));
  int64_t eh = p.dh * (w.shape[2] - 1) + 1, ew = p.dw * (w.shape[3] - 1) + 1;
  int64_t hp = x.shape[2] + p.pad.top + p.pad.bottom, wp = x.shape[3] + p.pad.left + p.pad.right;
  if (hp < eh || wp < ew)
    throw Error(op + ": the dilated kernel (" + std::to_string(eh) + "x" + std::to_string(ew) +
                ") is larger than the padded input (" + std::to_string(hp) + "x" + std::to_string(wp) + ")");
  DType out = resolve_out_dtype(op, x.dtype, attrs);
  return {{{x.shape[0], o, (hp - eh) / p.sh + 1, (wp - ew) / p.sw + 1}, out}};
}

// Output columns computed per block: a fixed count, so the tap loops below
// have constant trip counts and the compiler keeps the accumulators in vector
// registers (even at -O2, whose cost model vectorises only such loops).
constexpr int64_t kConvBlock = 8;

// acc[b][j] = sum over taps of w_b * x for NB output channels of one group and
// kConvBlock output columns starting at input column ix0 of input row iy0.
// S is the column stride when it is 1 or 2 (the common cases), 0 otherwise.
template <typename Acc, int NB, int S>
void conv_block(const Acc* planes, int64_t cg, int64_t hp, int64_t wp, const Acc* const* wk, int64_t kh,
                int64_t kw, int64_t dh, int64_t dw, int64_t sw, int64_t iy0, int64_t ix0,
                Acc (&acc)[NB][kConvBlock]) {
  for (int b = 0; b < NB; ++b)
    for (int64_t j = 0; j < kConvBlock; ++j) acc[b][j] = 0;
  const int64_t step = S == 0 ? sw : S;
  for (int64_t icg = 0; icg < cg; ++icg)
    for (int64_t ky = 0; ky < kh; ++ky) {
      const Acc* row = planes + (icg * hp + iy0 + ky * dh) * wp + ix0;
      const int64_t wbase = (icg * kh + ky) * kw;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const Acc* src = row + kx * dw;
        Acc v[kConvBlock];
        for (int64_t j = 0; j < kConvBlock; ++j) v[j] = src[j * step];
        for (int b = 0; b < NB; ++b) {
          const Acc w = wk[b][wbase + kx];
          for (int64_t j = 0; j < kConvBlock; ++j) acc[b][j] += w * v[j];
        }
      }
    }
}

template <typename Acc, int NB>
void conv_block_any_stride(const Acc* planes, int64_t cg, int64_t hp, int64_t wp, const Acc* const* wk,
                           int64_t kh, int64_t kw, const ConvParams& p, int64_t iy0, int64_t ix0,
                           Acc (&acc)[NB][kConvBlock]) {
  if (p.sw == 1)
    conv_block<Acc, NB, 1>(planes, cg, hp, wp, wk, kh, kw, p.dh, p.dw, p.sw, iy0, ix0, acc);
  else if (p.sw == 2)
    conv_block<Acc, NB, 2>(planes, cg, hp, wp, wk, kh, kw, p.dh, p.dw, p.sw, iy0, ix0, acc);
  else
    conv_block<Acc, NB, 0>(planes, cg, hp, wp, wk, kh, kw, p.dh, p.dw, p.sw, iy0, ix0, acc);
}

template <typename Acc>
void conv2d_impl(const Tensor& data, const Tensor& weight, const ConvParams& p, Tensor& out) {
  const int64_t n_batch = data.dim(0), c = data.dim(1), h = data.dim(2), w = data.dim(3);
  const int64_t o = weight.dim(0), cg = weight.dim(1), kh = weight.dim(2), kw = weight.dim(3);
  const int64_t oh = out.dim(2), ow = out.dim(3);
  const int64_t og = o / p.groups;
  const int64_t hp = h + p.pad.top + p.pad.bottom, wp = w + p.pad.left + p.pad.right;
  AccBuffer<Acc> xb(data), wb(weight);
  // One zero-padded copy of a batch item, so the inner loops need no bounds
  // checks; the slack at the end lets the last block read past the last row
  // (those columns are computed and dropped).
  const int64_t slack = kConvBlock * p.sw + kw * p.dw;
  std::vector<Acc> padded(static_cast<size_t>(c * hp * wp + slack));
  constexpr int kOcBlock = 4;  // output channels sharing each input load
  for (int64_t n = 0; n < n_batch; ++n) {
    std::fill(padded.begin(), padded.end(), Acc(0));
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < h; ++y)
        std::copy_n(xb.data() + ((n * c + ci) * h + y) * w, w,
                    padded.data() + (ci * hp + y + p.pad.top) * wp + p.pad.left);
    for (int64_t g = 0; g < p.groups; ++g) {
      const Acc* planes = padded.data() + g * cg * hp * wp;
      for (int64_t oc0 = g * og; oc0 < (g + 1) * og;) {
        const int64_t nb = (g + 1) * og - oc0 >= kOcBlock ? kOcBlock : 1;
        const Acc* wk[kOcBlock];
        for (int64_t b = 0; b < nb; ++b) wk[b] = wb.data() + (oc0 + b) * cg * kh * kw;
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t x0 = 0; x0 < ow; x0 += kConvBlock) {
            const int64_t count = std::min(kConvBlock, ow - x0);
            if (nb == kOcBlock) {
              Acc acc[kOcBlock][kConvBlock];
              conv_block_any_stride<Acc, kOcBlock>(planes, cg, hp, wp, wk, kh, kw, p, y * p.sh, x0 * p.sw,
                                                   acc);
              for (int64_t b = 0; b < kOcBlock; ++b)
                store_acc(acc[b], count, out, ((n * o + oc0 + b) * oh + y) * ow + x0);
            } else {
              Acc acc[1][kConvBlock];
              conv_block_any_stride<Acc, 1>(planes, cg, hp, wp, wk, kh, kw, p, y * p.sh, x0 * p.sw, acc);
              store_acc(acc[0], count, out, ((n * o + oc0) * oh + y) * ow + x0);
            }
          }
        }
        oc0 += nb;
      }
    }
  }
}

void conv2d_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  ConvParams p = conv_params(kConv2d, attrs);
  if (is_int_acc_input(in[0].dtype()))
    conv2d_impl<int32_t>(in[0], in[1], p, out[0]);
  else
    conv2d_impl<float>(in[0], in[1], p, out[0]);
}

// ---- conv2d_transpose -----------------------------------------------------

const char* kConv2dT = "nn.conv2d_transpose";

std::vector<int64_t> output_padding(const std::string& op, const Attrs& attrs, const ConvParams& p) {
  std::vector<int64_t> op_pad = ints_attr(op, attrs, "output_padding", 2, 0);
  if (op_pad[0] >= std::max(p.sh, p.dh) || op_pad[1] >= std::max(p.sw, p.dw))
    throw Error(op + ": attribute 'output_padding' = " + attr_value_str(op_pad) +
                " must be smaller than the stride or the dilation on each axis");
  return op_pad;
}

std::vector<TensorDesc> infer_conv2d_transpose(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConv2dT;
  const TensorDesc& x = in[0];
  const TensorDesc& w = in[1];
  check_mul_operands(op, "data", x.dtype, "weight", w.dtype);
  require_4d(op, "data", x, "(N, C, H, W)");
  require_4d(op, "weight", w, "(C_in, C_out / groups, kh, kw)");
  ConvParams p = conv_params(op, attrs);
  std::vector<int64_t> op_pad = output_padding(op, attrs, p);
  int64_t c = x.shape[1];
  if (w.shape[0] != c)
    throw Error(op + ": weight has " + std::to_string(w.shape[0]) + " input channels but data has " +
                std::to_string(c) + " channels");
  if (c % p.groups != 0)
    throw Error(op + ": data has " + std::to_string(c) +
                " channels, not divisible by groups=" + std::to_string(p.groups));
  if (w.shape[2] < 1 || w.shape[3] < 1)
    throw Error(op + ": weight has an empty kernel " + shape_str(w.shape));
  int64_t oh = (x.shape[2] - 1) * p.sh - p.pad.top - p.pad.bottom + p.dh * (w.shape[2] - 1) + op_pad[0] + 1;
  int64_t ow = (x.shape[3] - 1) * p.sw - p.pad.left - p.pad.right + p.dw * (w.shape[3] - 1) + op_pad[1] + 1;
  if (x.shape[2] < 1 || x.shape[3] < 1 || oh < 1 || ow < 1)
    throw Error(op + ": padding " + attr_value_str(attrs.get_ints("padding")) +
                " leaves an empty output for data " + shape_str(x.shape));
  DType out = resolve_out_dtype(op, x.dtype, attrs);
  return {{{x.shape[0], w.shape[1] * p.groups, oh, ow}, out}};
}

template <typename Acc>
void conv2d_transpose_impl(const Tensor& data, const Tensor& weight, const ConvParams& p, Tensor& out) {
  const int64_t n_batch = data.dim(0), c = data.dim(1), h = data.dim(2), w = data.dim(3);
  const int64_t og = weight.dim(1), kh = weight.dim(2), kw = weight.dim(3);
  const int64_t o = out.dim(1), oh = out.dim(2), ow = out.dim(3);
  const int64_t cg = c / p.groups;
  // The canvas holds every position an input can scatter to, plus whatever
  // output_padding adds past it; the output is a window of it.
  const int64_t hc = std::max((h - 1) * p.sh + p.dh * (kh - 1) + 1, p.pad.top + oh);
  const int64_t wc = std::max((w - 1) * p.sw + p.dw * (kw - 1) + 1, p.pad.left + ow);
  AccBuffer<Acc> xb(data), wb(weight);
  std::vector<Acc> canvas(static_cast<size_t>(hc * wc));
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t g = oc / og, ocg = oc % og;
      std::fill(canvas.begin(), canvas.end(), Acc(0));
      for (int64_t icg = 0; icg < cg; ++icg) {
        const int64_t ic = g * cg + icg;
        const Acc* xin = xb.data() + (n * c + ic) * h * w;
        const Acc* wk = wb.data() + (ic * og + ocg) * kh * kw;
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            const Acc wv = wk[ky * kw + kx];
            for (int64_t y = 0; y < h; ++y) {
              Acc* dst = canvas.data() + (y * p.sh + ky * p.dh) * wc + kx * p.dw;
              const Acc* src = xin + y * w;
              if (p.sw == 1) {
                for (int64_t x = 0; x < w; ++x) dst[x] += wv * src[x];
              } else {
                const int64_t s = p.sw;
                for (int64_t x = 0; x < w; ++x) dst[x * s] += wv * src[x];
              }
            }
          }
      }
      for (int64_t y = 0; y < oh; ++y)
        store_acc(canvas.data() + (y + p.pad.top) * wc + p.pad.left, ow, out, ((n * o + oc) * oh + y) * ow);
    }
  }
}

void conv2d_transpose_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  ConvParams p = conv_params(kConv2dT, attrs);
  if (is_int_acc_input(in[0].dtype()))
    conv2d_transpose_impl<int32_t>(in[0], in[1], p, out[0]);
  else
    conv2d_transpose_impl<float>(in[0], in[1], p, out[0]);
}

std::vector<AttrSpec> conv_attrs() {
  return {{"strides", AttrKind::Ints, std::vector<int64_t>{1, 1}},
          {"padding", AttrKind::Ints, std::vector<int64_t>{0, 0, 0, 0}},
          {"dilation", AttrKind::Ints, std::vector<int64_t>{1, 1}},
          {"groups", AttrKind::Int, int64_t{1}},
          {"out_dtype", AttrKind::String, std::string()}};
}

}  // namespace

void register_nn_conv_ops(OpRegistry& r) {
  r.add({kConv2d, "2-D convolution, NCHW data and OIHW weight", 2, 2, conv_attrs(), false, infer_conv2d,
         conv2d_kernel});
  std::vector<AttrSpec> t_attrs = conv_attrs();
  t_attrs.push_back({"output_padding", AttrKind::Ints, std::vector<int64_t>{0, 0}});
  r.add({kConv2dT, "2-D transposed convolution, NCHW data and IOHW weight", 2, 2, t_attrs, false,
         infer_conv2d_transpose, conv2d_transpose_kernel});
}

}  // namespace kiln
