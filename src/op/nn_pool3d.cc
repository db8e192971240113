// 3-D pooling on NCDHW data (nn.max_pool3d, nn.avg_pool3d) and max pooling
// that also returns where each maximum came from (nn.max_pool_with_indices,
// on NCHW or NCDHW data).
//
// Attributes, one value per spatial axis (D, H, W; or H, W for 2-D data):
// pool_size (required), strides (default 1), dilation (default 1), padding
// (default 0; n values mean symmetric padding, 2n values are [begin...,
// end...], e.g. [front, top, left, back, bottom, right]), ceil_mode=0; avg
// also count_include_pad=0. The window arithmetic is that of the 2-D pools
// (nn_pool.cc, shared through pool_window.h): padded positions never win a
// max (nor does NaN in nn.max_pool3d, whose maximum starts from -inf), avg
// divides by the taps inside the input (or inside the padded input with
// count_include_pad), and a window that sees no input element gives 0.
//
// nn.max_pool_with_indices returns the tuple (max, indices): indices is
// int64 and holds, for each output, the flat position of its maximum in the
// whole input tensor: ((n * C + c) * D + z) * H * W + y * W + x with
// storage_order=0 (row major), and (n * C + c) * D * H * W + z + D * (y + H * x)
// with storage_order=1 (column major within each (n, c) plane, so for 2-D data
// y + H * x). Ties go to the first tap in row-major window order; an empty
// window's index is -1.
//
// dtypes: float32, float16 (computed in float32), int8, uint8, int32; integer
// averages round half away from zero, integer sums are exact in int64.
#include <array>
#include <limits>
#include <vector>

#include "op/pool_window.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const char* kMaxPool3d = "nn.max_pool3d";
const char* kAvgPool3d = "nn.avg_pool3d";
const char* kMaxPoolIdx = "nn.max_pool_with_indices";

// The window along (D, H, W); 2-D data has a unit D axis (kernel 1, stride 1).
using Window = std::array<PoolAxis, 3>;

void check_data(const std::string& op, const TensorDesc& x, bool allow_2d) {
  require_dtype(op, "data", x.dtype,
                {DType::Float32, DType::Float16, DType::Int8, DType::UInt8, DType::Int32});
  if (x.shape.size() == 5 || (allow_2d && x.shape.size() == 4)) return;
  throw Error(op + ": data must be " + (allow_2d ? "4-D (N, C, H, W) or " : "") +
              "5-D (N, C, D, H, W), got shape " + shape_str(x.shape));
}

// An ints attribute with one value per spatial axis; empty means all `def`.
std::vector<int64_t> per_axis(const std::string& op, const Attrs& attrs, const std::string& name, size_t n,
                              int64_t def, int64_t min_value) {
  std::vector<int64_t> v = attrs.get_ints(name);
  if (v.empty()) v.assign(n, def);
  if (v.size() != n)
    throw Error(op + ": attribute '" + name + "' = " + attr_value_str(v) + " must have " + std::to_string(n) +
                " values, one per spatial axis");
  for (int64_t x : v)
    if (x < min_value)
      throw Error(op + ": attribute '" + name + "' = " + attr_value_str(v) + " has a value below " +
                  std::to_string(min_value));
  return v;
}

Window pool_window(const std::string& op, const Shape& shape, const Attrs& attrs) {
  const size_t n = shape.size() - 2;
  std::vector<int64_t> k = per_axis(op, attrs, "pool_size", n, 0, 1);
  std::vector<int64_t> s = per_axis(op, attrs, "strides", n, 1, 1);
  std::vector<int64_t> d = per_axis(op, attrs, "dilation", n, 1, 1);
  std::vector<int64_t> pad = attrs.get_ints("padding");
  if (pad.empty()) pad.assign(2 * n, 0);
  if (pad.size() == n) pad.insert(pad.end(), pad.begin(), pad.end());
  if (pad.size() != 2 * n)
    throw Error(op + ": attribute 'padding' = " + attr_value_str(attrs.get_ints("padding")) + " must have " +
                std::to_string(n) + " (symmetric) or " + std::to_string(2 * n) +
                " values [begin..., end...]");
  for (int64_t p : pad)
    if (p < 0) throw Error(op + ": attribute 'padding' = " + attr_value_str(pad) + " has a negative value");
  int64_t ceil_mode = attrs.get_int("ceil_mode");
  if (ceil_mode != 0 && ceil_mode != 1)
    throw Error(op + ": attribute 'ceil_mode' = " + std::to_string(ceil_mode) + " must be 0 or 1");
  Window w;
  w[0] = {1, 1, 1, 1, 0, 0, false};
  const size_t first = 3 - n;
  for (size_t i = 0; i < n; ++i)
    w[first + i] = {shape[2 + i], k[i], s[i], d[i], pad[i], pad[i + n], ceil_mode == 1};
  for (const PoolAxis& a : w)
    if (a.in + a.pad_before + a.pad_after < a.extent())
      throw Error(op + ": the window (pool_size " + attr_value_str(k) + ", dilation " + attr_value_str(d) +
                  ") is larger than the padded input " + shape_str(shape));
  return w;
}

Shape pooled_shape(const Shape& in, const Window& w) {
  Shape out = {in[0], in[1]};
  for (size_t i = 3 - (in.size() - 2); i < 3; ++i) out.push_back(w[i].out_size());
  return out;
}

std::vector<TensorDesc> infer_max3d(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  check_data(kMaxPool3d, in[0], false);
  return {{pooled_shape(in[0].shape, pool_window(kMaxPool3d, in[0].shape, attrs)), in[0].dtype}};
}

std::vector<TensorDesc> infer_avg3d(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  check_data(kAvgPool3d, in[0], false);
  int64_t cip = attrs.get_int("count_include_pad");
  if (cip != 0 && cip != 1)
    throw Error(std::string(kAvgPool3d) + ": attribute 'count_include_pad' = " + std::to_string(cip) +
                " must be 0 or 1");
  return {{pooled_shape(in[0].shape, pool_window(kAvgPool3d, in[0].shape, attrs)), in[0].dtype}};
}

int64_t storage_order(const Attrs& attrs) {
  int64_t so = attrs.get_int("storage_order");
  if (so != 0 && so != 1)
    throw Error(std::string(kMaxPoolIdx) + ": attribute 'storage_order' = " + std::to_string(so) +
                " must be 0 (row major) or 1 (column major)");
  return so;
}

std::vector<TensorDesc> infer_max_idx(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  check_data(kMaxPoolIdx, in[0], true);
  storage_order(attrs);
  Shape out = pooled_shape(in[0].shape, pool_window(kMaxPoolIdx, in[0].shape, attrs));
  return {{out, in[0].dtype}, {out, DType::Int64}};
}

enum class Reduce { Max, Avg };

// Pools every (n, c) plane; `indices`, when given, receives the flat input
// position of each maximum. Acc is float or int64_t.
template <typename Acc>
void pool3d_impl(const Tensor& data, const Window& w, Reduce reduce, bool count_include_pad, int64_t order,
                 Tensor& out, Tensor* indices) {
  const int64_t dd = w[0].in, hh = w[1].in, ww = w[2].in;
  const int64_t planes = data.dim(0) * data.dim(1);
  const int64_t od = w[0].out_size(), oh = w[1].out_size(), ow = w[2].out_size();
  AccBuffer<Acc> xb(data);
  std::array<std::vector<PoolAxis::Taps>, 3> taps;
  for (size_t a = 0; a < 3; ++a)
    for (int64_t o = 0; o < w[a].out_size(); ++o) taps[a].push_back(w[a].taps(o));
  std::vector<Acc> result(static_cast<size_t>(planes * od * oh * ow));
  int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
  size_t at = 0;
  for (int64_t pl = 0; pl < planes; ++pl) {
    const Acc* plane = xb.data() + pl * dd * hh * ww;
    for (const PoolAxis::Taps& a : taps[0])
      for (const PoolAxis::Taps& b : taps[1])
        for (const PoolAxis::Taps& c : taps[2]) {
          // `best` and its position: the first tap, then any strictly
          // greater (nn.max_pool_with_indices); `top` from -inf (floats),
          // which a NaN never replaces, as nn.max_pool2d's (nn.max_pool3d).
          Acc best = std::numeric_limits<Acc>::lowest(), sum = 0;
          Acc top = std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                           : std::numeric_limits<Acc>::lowest();
          int64_t bz = -1, by = -1, bx = -1;
          for (int64_t jz = a.lo; jz < a.hi; ++jz)
            for (int64_t jy = b.lo; jy < b.hi; ++jy)
              for (int64_t jx = c.lo; jx < c.hi; ++jx) {
                const int64_t z = a.start + jz * w[0].d, y = b.start + jy * w[1].d, x = c.start + jx * w[2].d;
                const Acc v = plane[(z * hh + y) * ww + x];
                sum += v;
                top = v > top ? v : top;
                if (bz < 0 || v > best) {
                  best = v;
                  bz = z;
                  by = y;
                  bx = x;
                }
              }
          Acc v = 0;
          if (bz >= 0 && reduce == Reduce::Max) {
            v = idx ? best : top;
          } else if (bz >= 0) {
            int64_t count = count_include_pad ? a.padded_count * b.padded_count * c.padded_count
                                              : (a.hi - a.lo) * (b.hi - b.lo) * (c.hi - c.lo);
            if constexpr (std::is_same_v<Acc, float>)
              v = sum / static_cast<float>(count);
            else
              v = int_average(sum, count);
          }
          if (idx) {
            const int64_t local = order == 0 ? (bz * hh + by) * ww + bx : bz + dd * (by + hh * bx);
            idx[at] = bz < 0 ? -1 : pl * dd * hh * ww + local;
          }
          result[at++] = v;
        }
  }
  store_pooled(result, out);
}

void run_pool3d(const Tensor& data, const Window& w, Reduce reduce, bool cip, int64_t order, Tensor& out,
                Tensor* indices) {
  if (is_float(data.dtype()))
    pool3d_impl<float>(data, w, reduce, cip, order, out, indices);
  else
    pool3d_impl<int64_t>(data, w, reduce, cip, order, out, indices);
}

void max3d_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  run_pool3d(in[0], pool_window(kMaxPool3d, in[0].shape(), attrs), Reduce::Max, false, 0, out[0], nullptr);
}

void avg3d_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  run_pool3d(in[0], pool_window(kAvgPool3d, in[0].shape(), attrs), Reduce::Avg,
             attrs.get_int("count_include_pad") != 0, 0, out[0], nullptr);
}

void max_idx_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  run_pool3d(in[0], pool_window(kMaxPoolIdx, in[0].shape(), attrs), Reduce::Max, false, storage_order(attrs),
             out[0], &out[1]);
}

std::vector<AttrSpec> window_attrs() {
  return {{"pool_size", AttrKind::Ints, std::nullopt},
          {"strides", AttrKind::Ints, std::vector<int64_t>{}},
          {"padding", AttrKind::Ints, std::vector<int64_t>{}},
          {"dilation", AttrKind::Ints, std::vector<int64_t>{}},
          {"ceil_mode", AttrKind::Int, int64_t{0}}};
}

}  // namespace

void register_pool3d_ops(OpRegistry& r) {
  r.add({kMaxPool3d, "3-D max pooling over NCDHW data", 1, 1, window_attrs(), false, infer_max3d,
         max3d_kernel});
  std::vector<AttrSpec> avg = window_attrs();
  avg.push_back({"count_include_pad", AttrKind::Int, int64_t{0}});
  r.add({kAvgPool3d, "3-D average pooling over NCDHW data", 1, 1, avg, false, infer_avg3d, avg3d_kernel});
  std::vector<AttrSpec> idx = window_attrs();
  idx.push_back({"storage_order", AttrKind::Int, int64_t{0}});
  r.add({kMaxPoolIdx, "2-D or 3-D max pooling that also returns the flat int64 input index of each maximum",
         1, 1, idx, true, infer_max_idx, max_idx_kernel});
}

}  // namespace kiln
