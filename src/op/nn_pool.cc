// 2-D pooling on NCHW data: nn.max_pool2d, nn.avg_pool2d, nn.adaptive_avg_pool2d.
//
// max/avg: pool_size (required, [kh, kw]), strides=[1, 1],
// padding=[0, 0, 0, 0] (top, left, bottom, right; [h, w] means symmetric),
// dilation=[1, 1], ceil_mode=0; avg also count_include_pad=0.
// Output size per axis: (H + pad_before + pad_after - d*(k-1) - 1) / s + 1,
// rounded down, or up with ceil_mode; with ceil_mode a last window that would
// start past the input and its leading padding is dropped (as in PyTorch).
//
// Padded positions never win a max, nor does NaN (a window of NaN and -inf
// gives -inf). avg divides by the number of taps inside
// the input, or with count_include_pad by the number inside the padded input
// (taps in the overhang that ceil_mode adds past the padding never count). A
// window that sees no input element at all (only possible when the padding is
// at least the window size) gives 0.
//
// nn.adaptive_avg_pool2d(output_size=[1, 1]): output bin i of an axis of size
// H averages rows floor(i*H/out) .. ceil((i+1)*H/out) - 1 (global average
// pooling is output_size=[1, 1]).
//
// dtypes: float32, float16 (computed in float32), int8, uint8, int32; integer
// averages round half away from zero, integer sums are exact in int64.
//
// nn.max_pool2d also takes channel-blocked data (N, C / c, H, W, c)
// (src/op/nn_blocked.cc) and gives (N, C / c, OH, OW, c): each channel
// pooled as in NCHW (convert-layout keeps a blocked value blocked through
// it).
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "op/nn_internal.h"
#include "op/pool_window.h"

namespace kiln {
namespace {

const char* kMaxPool = "nn.max_pool2d";
const char* kAvgPool = "nn.avg_pool2d";
const char* kAdaptiveAvgPool = "nn.adaptive_avg_pool2d";

void check_pool_input(const std::string& op, const TensorDesc& x, bool blocked_ok = false) {
  require_dtype(op, "data", x.dtype,
                {DType::Float32, DType::Float16, DType::Int8, DType::UInt8, DType::Int32});
  if (x.shape.size() != 4 && !(blocked_ok && x.shape.size() == 5))
    throw Error(op + ": data must be 4-D (N, C, H, W)" +
                (blocked_ok ? std::string(" or 5-D channel blocks (N, C / c, H, W, c)") : std::string()) +
                ", got shape " + shape_str(x.shape));
}

struct PoolParams {
  PoolAxis y, x;
};

PoolParams pool_params(const std::string& op, const Shape& shape, const Attrs& attrs) {
  std::vector<int64_t> k = ints_attr(op, attrs, "pool_size", 2, 1);
  std::vector<int64_t> s = ints_attr(op, attrs, "strides", 2, 1);
  std::vector<int64_t> d = ints_attr(op, attrs, "dilation", 2, 1);
  Pad2d p = pad2d_attr(op, attrs);
  int64_t ceil_mode = attrs.get_int("ceil_mode");
  if (ceil_mode != 0 && ceil_mode != 1)
    throw Error(op + ": attribute 'ceil_mode' = " + std::to_string(ceil_mode) + " must be 0 or 1");
  PoolParams pp{{shape[2], k[0], s[0], d[0], p.top, p.bottom, ceil_mode == 1},
                {shape[3], k[1], s[1], d[1], p.left, p.right, ceil_mode == 1}};
  for (const PoolAxis* a : {&pp.y, &pp.x})
    if (a->in + a->pad_before + a->pad_after < a->extent())
      throw Error(op + ": the window (pool_size " + attr_value_str(k) + ", dilation " + attr_value_str(d) +
                  ") is larger than the padded input " + shape_str(shape));
  return pp;
}

std::vector<TensorDesc> infer_pool(const std::string& op, const std::vector<TensorDesc>& in,
                                   const Attrs& attrs) {
  check_pool_input(op, in[0], op == kMaxPool);
  PoolParams p = pool_params(op, in[0].shape, attrs);
  Shape y = {in[0].shape[0], in[0].shape[1], p.y.out_size(), p.x.out_size()};
  if (in[0].shape.size() == 5) y.push_back(in[0].shape[4]);
  return {{y, in[0].dtype}};
}

std::vector<TensorDesc> infer_max_pool(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  return infer_pool(kMaxPool, in, attrs);
}

std::vector<TensorDesc> infer_avg_pool(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  int64_t cip = attrs.get_int("count_include_pad");
  if (cip != 0 && cip != 1)
    throw Error(std::string(kAvgPool) + ": attribute 'count_include_pad' = " + std::to_string(cip) +
                " must be 0 or 1");
  return infer_pool(kAvgPool, in, attrs);
}

// Max or average over each window; Acc is float or int64_t.
template <typename Acc>
void pool_impl(const Tensor& data, const PoolParams& p, bool is_max, bool count_include_pad, Tensor& out) {
  const int64_t planes = data.dim(0) * data.dim(1), h = data.dim(2), w = data.dim(3);
  const int64_t oh = out.dim(2), ow = out.dim(3);
  AccBuffer<Acc> xb(data);
  std::vector<PoolAxis::Taps> ty, tx;
  for (int64_t i = 0; i < oh; ++i) ty.push_back(p.y.taps(i));
  for (int64_t i = 0; i < ow; ++i) tx.push_back(p.x.taps(i));
  std::vector<Acc> result(static_cast<size_t>(planes * oh * ow));
  for (int64_t pl = 0; pl < planes; ++pl) {
    const Acc* plane = xb.data() + pl * h * w;
    Acc* dst = result.data() + pl * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const PoolAxis::Taps& a = ty[static_cast<size_t>(oy)];
      for (int64_t ox = 0; ox < ow; ++ox) {
        const PoolAxis::Taps& b = tx[static_cast<size_t>(ox)];
        // From -inf for floats (a window of -inf gives -inf), else the least value.
        Acc best = std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                          : std::numeric_limits<Acc>::lowest();
        Acc sum = 0;
        for (int64_t jy = a.lo; jy < a.hi; ++jy) {
          const Acc* row = plane + (a.start + jy * p.y.d) * w + b.start;
          for (int64_t jx = b.lo; jx < b.hi; ++jx) {
            Acc v = row[jx * p.x.d];
            best = v > best ? v : best;
            sum += v;
          }
        }
        int64_t count = count_include_pad
                            ? a.padded_count * b.padded_count
                            : std::max<int64_t>(a.hi - a.lo, 0) * std::max<int64_t>(b.hi - b.lo, 0);
        bool empty = a.hi <= a.lo || b.hi <= b.lo;
        Acc v;
        if (empty) {
          v = 0;
        } else if (is_max) {
          v = best;
        } else if constexpr (std::is_same_v<Acc, float>) {
          v = sum / static_cast<float>(count);
        } else {
          v = int_average(sum, count);
        }
        dst[oy * ow + ox] = v;
      }
    }
  }
  store_pooled(result, out);
}

template <bool IsMax>
void pool_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  if (in[0].ndim() == 5) {
    // Channel blocks: the NCHW pool of the unblocked data, blocked.
    const Tensor plain = run_op(*find_op("nn.unblock_channels"), {in[0]}, {})[0];
    const Tensor pooled = run_op(*find_op(IsMax ? kMaxPool : kAvgPool), {plain}, attrs)[0];
    const Tensor blocked = run_op(*find_op("nn.block_channels"), {pooled}, {{"block", in[0].dim(4)}})[0];
    std::memcpy(out[0].raw(), blocked.raw(), blocked.nbytes());
    return;
  }
  PoolParams p = pool_params(IsMax ? kMaxPool : kAvgPool, in[0].shape(), attrs);
  bool cip = !IsMax && attrs.get_int("count_include_pad") != 0;
  if (is_float(in[0].dtype()))
    pool_impl<float>(in[0], p, IsMax, cip, out[0]);
  else
    pool_impl<int64_t>(in[0], p, IsMax, cip, out[0]);
}

// ---- adaptive average pooling ---------------------------------------------

std::vector<int64_t> adaptive_size(const Attrs& attrs) {
  const std::string op = kAdaptiveAvgPool;
  std::vector<int64_t> s = attrs.get_ints("output_size");
  if (s.size() == 1) s.push_back(s[0]);
  if (s.size() != 2 || s[0] < 1 || s[1] < 1)
    throw Error(op + ": attribute 'output_size' = " + attr_value_str(attrs.get_ints("output_size")) +
                " must be [out_h, out_w] with values >= 1");
  return s;
}

std::vector<TensorDesc> infer_adaptive(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kAdaptiveAvgPool;
  check_pool_input(op, in[0]);
  std::vector<int64_t> s = adaptive_size(attrs);
  if (in[0].shape[2] < 1 || in[0].shape[3] < 1)
    throw Error(op + ": data " + shape_str(in[0].shape) + " has an empty spatial axis");
  return {{{in[0].shape[0], in[0].shape[1], s[0], s[1]}, in[0].dtype}};
}

template <typename Acc>
void adaptive_impl(const Tensor& data, Tensor& out) {
  const int64_t planes = data.dim(0) * data.dim(1), h = data.dim(2), w = data.dim(3);
  const int64_t oh = out.dim(2), ow = out.dim(3);
  AccBuffer<Acc> xb(data);
  std::vector<Acc> result(static_cast<size_t>(planes * oh * ow));
  for (int64_t pl = 0; pl < planes; ++pl) {
    const Acc* plane = xb.data() + pl * h * w;
    for (int64_t oy = 0; oy < oh; ++oy) {
      int64_t y0 = oy * h / oh, y1 = ((oy + 1) * h + oh - 1) / oh;
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t x0 = ox * w / ow, x1 = ((ox + 1) * w + ow - 1) / ow;
        Acc sum = 0;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t x = x0; x < x1; ++x) sum += plane[y * w + x];
        int64_t count = (y1 - y0) * (x1 - x0);
        Acc v;
        if constexpr (std::is_same_v<Acc, float>)
          v = sum / static_cast<float>(count);
        else
          v = int_average(sum, count);
        result[static_cast<size_t>((pl * oh + oy) * ow + ox)] = v;
      }
    }
  }
  store_pooled(result, out);
}

void adaptive_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  if (is_float(in[0].dtype()))
    adaptive_impl<float>(in[0], out[0]);
  else
    adaptive_impl<int64_t>(in[0], out[0]);
}

std::vector<AttrSpec> pool_attrs(bool avg) {
  std::vector<AttrSpec> a = {{"pool_size", AttrKind::Ints, std::nullopt},
                             {"strides", AttrKind::Ints, std::vector<int64_t>{1, 1}},
                             {"padding", AttrKind::Ints, std::vector<int64_t>{0, 0, 0, 0}},
                             {"dilation", AttrKind::Ints, std::vector<int64_t>{1, 1}},
                             {"ceil_mode", AttrKind::Int, int64_t{0}}};
  if (avg) a.push_back({"count_include_pad", AttrKind::Int, int64_t{0}});
  return a;
}

}  // namespace

void register_nn_pool_ops(OpRegistry& r) {
  r.add({kMaxPool, "2-D max pooling over NCHW data", 1, 1, pool_attrs(false), false, infer_max_pool,
         pool_kernel<true>});
  r.add({kAvgPool, "2-D average pooling over NCHW data", 1, 1, pool_attrs(true), false, infer_avg_pool,
         pool_kernel<false>});
  r.add({kAdaptiveAvgPool,
         "2-D average pooling to a fixed output size (adaptive bins)",
         1,
         1,
         {{"output_size", AttrKind::Ints, std::vector<int64_t>{1, 1}}},
         false,
         infer_adaptive,
         adaptive_kernel});
}

}  // namespace kiln
