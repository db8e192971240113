// nn.conv3d and nn.conv3d_transpose: reference kernels on NCDHW data.
//
// nn.conv3d(data (N, C, D, H, W), weight (O, C / groups, kd, kh, kw)).
// nn.conv3d_transpose(data (N, C, D, H, W), weight (C, O / groups, kd, kh, kw)):
// every input element scatters weight * x into the output, the gradient of
// conv3d with respect to its input.
//
// Attributes, one value per spatial axis (D, H, W): strides (default 1),
// dilation (default 1), padding (default 0; 3 values mean symmetric padding,
// 6 are [front, top, left, back, bottom, right]), groups=1, out_dtype="" (as
// conv2d: float32 -> float32, float16 -> float16, int8/uint8 -> int32); the
// transpose also output_padding (default 0; extra planes/rows/columns at the
// end, each smaller than the stride or the dilation of its axis).
// Output size per axis: conv (in + pad_begin + pad_end - d*(k-1) - 1) / s + 1;
// transpose (in - 1) * s - pad_begin - pad_end + d*(k-1) + output_padding + 1.
//
// float16 computes in float32 and rounds once at the end; int8/uint8
// accumulate exactly in int32. Padding is zero. The kernels are plain loop
// nests (no blocking): 3-D convolutions are rare in the models kiln targets.
#include <algorithm>
#include <array>
#include <vector>

#include "op/nn_internal.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const char* kConv3d = "nn.conv3d";
const char* kConv3dT = "nn.conv3d_transpose";

struct Conv3dParams {
  std::array<int64_t, 3> s, d, pad_begin, pad_end, out_pad;
  int64_t groups;
};

std::array<int64_t, 3> three(const std::string& op, const Attrs& attrs, const std::string& name, int64_t def,
                             int64_t min_value) {
  std::vector<int64_t> v = attrs.get_ints(name);
  if (v.empty()) v.assign(3, def);
  if (v.size() != 3)
    throw Error(op + ": attribute '" + name + "' = " + attr_value_str(v) +
                " must have 3 values, one per spatial axis (D, H, W)");
  for (int64_t x : v)
    if (x < min_value)
      throw Error(op + ": attribute '" + name + "' = " + attr_value_str(v) + " has a value below " +
                  std::to_string(min_value));
  return {v[0], v[1], v[2]};
}

Conv3dParams conv3d_params(const std::string& op, const Attrs& attrs, bool transpose) {
  Conv3dParams p;
  p.s = three(op, attrs, "strides", 1, 1);
  p.d = three(op, attrs, "dilation", 1, 1);
  std::vector<int64_t> pad = attrs.get_ints("padding");
  if (pad.empty()) pad.assign(6, 0);
  if (pad.size() == 3) pad.insert(pad.end(), pad.begin(), pad.end());
  if (pad.size() != 6)
    throw Error(op + ": attribute 'padding' = " + attr_value_str(attrs.get_ints("padding")) +
                " must have 3 (symmetric) or 6 values [front, top, left, back, bottom, right]");
  for (size_t i = 0; i < 6; ++i) {
    if (pad[i] < 0)
      throw Error(op + ": attribute 'padding' = " + attr_value_str(pad) + " has a negative value");
    (i < 3 ? p.pad_begin[i] : p.pad_end[i - 3]) = pad[i];
  }
  p.groups = attrs.get_int("groups");
  if (p.groups < 1) throw Error(op + ": attribute 'groups' = " + std::to_string(p.groups) + " must be >= 1");
  p.out_pad = {0, 0, 0};
  if (transpose) {
    p.out_pad = three(op, attrs, "output_padding", 0, 0);
    for (size_t i = 0; i < 3; ++i)
      if (p.out_pad[i] >= std::max(p.s[i], p.d[i]))
        throw Error(op +
                    ": attribute 'output_padding' = " + attr_value_str(attrs.get_ints("output_padding")) +
                    " must be smaller than the stride or the dilation on each axis");
  }
  return p;
}

void require_5d(const std::string& op, const std::string& what, const TensorDesc& t, const char* layout) {
  if (t.shape.size() != 5)
    throw Error(op + ": " + what + " must be 5-D " + layout + ", got shape " + shape_str(t.shape));
  for (size_t i = 2; i < 5; ++i)
    if (t.shape[i] < 1)
      throw Error(op + ": " + what + " " + shape_str(t.shape) + " has an empty spatial axis");
}

void require_divisible(const std::string& op, const std::string& what, int64_t channels, int64_t groups) {
  if (channels % groups != 0)
    throw Error(op + ": " + what + " has " + std::to_string(channels) +
                " channels, not divisible by groups=" + std::to_string(groups));
}

std::vector<TensorDesc> infer_conv3d(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConv3d;
  const TensorDesc& x = in[0];
  const TensorDesc& w = in[1];
  check_mul_operands(op, "data", x.dtype, "weight", w.dtype);
  require_5d(op, "data", x, "(N, C, D, H, W)");
  require_5d(op, "weight", w, "(O, C / groups, kd, kh, kw)");
  Conv3dParams p = conv3d_params(op, attrs, false);
  require_divisible(op, "data", x.shape[1], p.groups);
  require_divisible(op, "weight", w.shape[0], p.groups);
  if (w.shape[1] != x.shape[1] / p.groups)
    throw Error(op + ": weight has " + std::to_string(w.shape[1]) +
                " input channels per group but data has " + std::to_string(x.shape[1]) +
                " channels (groups=" + std::to_string(p.groups) + ")");
  Shape out = {x.shape[0], w.shape[0]};
  for (size_t i = 0; i < 3; ++i) {
    int64_t extent = p.d[i] * (w.shape[i + 2] - 1) + 1;
    int64_t padded = x.shape[i + 2] + p.pad_begin[i] + p.pad_end[i];
    if (padded < extent)
      throw Error(op + ": the dilated kernel (" + std::to_string(extent) + " on spatial axis " +
                  std::to_string(i) + ") is larger than the padded input (" + std::to_string(padded) + ")");
    out.push_back((padded - extent) / p.s[i] + 1);
  }
  return {{out, resolve_out_dtype(op, x.dtype, attrs)}};
}

std::vector<TensorDesc> infer_conv3d_transpose(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConv3dT;
  const TensorDesc& x = in[0];
  const TensorDesc& w = in[1];
  check_mul_operands(op, "data", x.dtype, "weight", w.dtype);
  require_5d(op, "data", x, "(N, C, D, H, W)");
  require_5d(op, "weight", w, "(C, O / groups, kd, kh, kw)");
  Conv3dParams p = conv3d_params(op, attrs, true);
  if (w.shape[0] != x.shape[1])
    throw Error(op + ": weight has " + std::to_string(w.shape[0]) + " input channels but data has " +
                std::to_string(x.shape[1]) + " channels");
  require_divisible(op, "data", x.shape[1], p.groups);
  Shape out = {x.shape[0], w.shape[1] * p.groups};
  for (size_t i = 0; i < 3; ++i) {
    int64_t o = (x.shape[i + 2] - 1) * p.s[i] - p.pad_begin[i] - p.pad_end[i] +
                p.d[i] * (w.shape[i + 2] - 1) + p.out_pad[i] + 1;
    if (o < 1)
      throw Error(op + ": padding " + attr_value_str(attrs.get_ints("padding")) +
                  " leaves an empty output for data " + shape_str(x.shape));
    out.push_back(o);
  }
  return {{out, resolve_out_dtype(op, x.dtype, attrs)}};
}

// The (D, H, W) sizes of a 5-D tensor and its element count per channel.
struct Volume {
  int64_t d, h, w;
  explicit Volume(const Tensor& t) : d(t.dim(2)), h(t.dim(3)), w(t.dim(4)) {}
  int64_t size() const { return d * h * w; }
};

template <typename Acc>
void conv3d_impl(const Tensor& data, const Tensor& weight, const Conv3dParams& p, Tensor& out) {
  const int64_t n_batch = data.dim(0), c = data.dim(1), o = weight.dim(0), cg = weight.dim(1);
  const Volume vi(data), vk(weight), vo(out);
  const int64_t og = o / p.groups;
  AccBuffer<Acc> xb(data), wb(weight);
  std::vector<Acc> acc(static_cast<size_t>(n_batch * o * vo.size()));
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t g = oc / og;
      Acc* dst = acc.data() + (n * o + oc) * vo.size();
      for (int64_t icg = 0; icg < cg; ++icg) {
        const Acc* x = xb.data() + (n * c + g * cg + icg) * vi.size();
        const Acc* k = wb.data() + (oc * cg + icg) * vk.size();
        for (int64_t oz = 0; oz < vo.d; ++oz)
          for (int64_t kz = 0; kz < vk.d; ++kz) {
            const int64_t z = oz * p.s[0] + kz * p.d[0] - p.pad_begin[0];
            if (z < 0 || z >= vi.d) continue;
            for (int64_t oy = 0; oy < vo.h; ++oy)
              for (int64_t ky = 0; ky < vk.h; ++ky) {
                const int64_t y = oy * p.s[1] + ky * p.d[1] - p.pad_begin[1];
                if (y < 0 || y >= vi.h) continue;
                const Acc* row = x + (z * vi.h + y) * vi.w;
                const Acc* taps = k + (kz * vk.h + ky) * vk.w;
                Acc* drow = dst + (oz * vo.h + oy) * vo.w;
                for (int64_t ox = 0; ox < vo.w; ++ox)
                  for (int64_t kx = 0; kx < vk.w; ++kx) {
                    const int64_t xx = ox * p.s[2] + kx * p.d[2] - p.pad_begin[2];
                    if (xx >= 0 && xx < vi.w) drow[ox] += taps[kx] * row[xx];
                  }
              }
          }
      }
    }
  store_acc(acc.data(), static_cast<int64_t>(acc.size()), out, 0);
}

template <typename Acc>
void conv3d_transpose_impl(const Tensor& data, const Tensor& weight, const Conv3dParams& p, Tensor& out) {
  const int64_t n_batch = data.dim(0), c = data.dim(1), og = weight.dim(1), o = out.dim(1);
  const Volume vi(data), vk(weight), vo(out);
  const int64_t cg = c / p.groups;
  AccBuffer<Acc> xb(data), wb(weight);
  std::vector<Acc> acc(static_cast<size_t>(n_batch * o * vo.size()));
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t ic = 0; ic < c; ++ic) {
      const int64_t g = ic / cg;
      const Acc* x = xb.data() + (n * c + ic) * vi.size();
      for (int64_t ocg = 0; ocg < og; ++ocg) {
        Acc* dst = acc.data() + (n * o + g * og + ocg) * vo.size();
        const Acc* k = wb.data() + (ic * og + ocg) * vk.size();
        for (int64_t iz = 0; iz < vi.d; ++iz)
          for (int64_t kz = 0; kz < vk.d; ++kz) {
            const int64_t z = iz * p.s[0] + kz * p.d[0] - p.pad_begin[0];
            if (z < 0 || z >= vo.d) continue;
            for (int64_t iy = 0; iy < vi.h; ++iy)
              for (int64_t ky = 0; ky < vk.h; ++ky) {
                const int64_t y = iy * p.s[1] + ky * p.d[1] - p.pad_begin[1];
                if (y < 0 || y >= vo.h) continue;
                const Acc* row = x + (iz * vi.h + iy) * vi.w;
                const Acc* taps = k + (kz * vk.h + ky) * vk.w;
                Acc* drow = dst + (z * vo.h + y) * vo.w;
                for (int64_t ix = 0; ix < vi.w; ++ix)
                  for (int64_t kx = 0; kx < vk.w; ++kx) {
                    const int64_t xx = ix * p.s[2] + kx * p.d[2] - p.pad_begin[2];
                    if (xx >= 0 && xx < vo.w) drow[xx] += taps[kx] * row[ix];
                  }
              }
          }
      }
    }
  store_acc(acc.data(), static_cast<int64_t>(acc.size()), out, 0);
}

void conv3d_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  Conv3dParams p = conv3d_params(kConv3d, attrs, false);
  if (is_int_acc_input(in[0].dtype()))
    conv3d_impl<int32_t>(in[0], in[1], p, out[0]);
  else
    conv3d_impl<float>(in[0], in[1], p, out[0]);
}

void conv3d_transpose_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  Conv3dParams p = conv3d_params(kConv3dT, attrs, true);
  if (is_int_acc_input(in[0].dtype()))
    conv3d_transpose_impl<int32_t>(in[0], in[1], p, out[0]);
  else
    conv3d_transpose_impl<float>(in[0], in[1], p, out[0]);
}

std::vector<AttrSpec> conv3d_attrs() {
  return {{"strides", AttrKind::Ints, std::vector<int64_t>{}},
          {"padding", AttrKind::Ints, std::vector<int64_t>{}},
          {"dilation", AttrKind::Ints, std::vector<int64_t>{}},
          {"groups", AttrKind::Int, int64_t{1}},
          {"out_dtype", AttrKind::String, std::string()}};
}

}  // namespace

void register_conv3d_ops(OpRegistry& r) {
  r.add({kConv3d, "3-D convolution, NCDHW data and (O, I, kd, kh, kw) weight", 2, 2, conv3d_attrs(), false,
         infer_conv3d, conv3d_kernel});
  std::vector<AttrSpec> t_attrs = conv3d_attrs();
  t_attrs.push_back({"output_padding", AttrKind::Ints, std::vector<int64_t>{}});
  r.add({kConv3dT, "3-D transposed convolution, NCDHW data and (I, O / groups, kd, kh, kw) weight", 2, 2,
         t_attrs, false, infer_conv3d_transpose, conv3d_transpose_kernel});
}

}  // namespace kiln
