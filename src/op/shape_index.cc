// Shape ops that select or replicate elements: strided_slice, broadcast_to,
// take, gather_elements, where and trilu. Registered from register_shape_ops
// (shape.cc). All dtypes.
//
// strided_slice(begin, end, strides=[], axes=[]): numpy slicing of the listed
//   axes (default: axes 0..len(begin)-1), begin:end:stride on each; strides
//   default to 1. Negative begin/end count from the end, out-of-range values
//   clamp (so a huge end means "to the end", a huge negative end with a
//   negative stride "to the front"), a negative stride walks backwards, and a
//   stride of 0 is an error. Unlisted axes are kept whole.
// broadcast_to(shape): numpy broadcasting of data to `shape`.
// take(data, indices int32/int64; axis=0): out = data.shape[:axis] +
//   indices.shape + data.shape[axis+1:], out[..., j, ...] = data[..., indices[j], ...].
//   Negative indices wrap once (-1 is the last); anything outside [-d, d) is an
//   error when the kernel runs.
// gather_elements(data, indices int32/int64; axis=0): indices has data's rank
//   and, on every axis but `axis`, at most data's size; out has indices' shape
//   and out[i0, .., ia, ..] = data[i0, .., indices[i0, .., ia, ..], ..]
//   (ONNX GatherElements, torch.gather). Indices wrap and fail like take's.
// where(cond bool, x, y): elementwise cond ? x : y with numpy broadcasting of
//   all three; x and y share a dtype.
// trilu(k=0, upper=1): keeps the upper (j - i >= k) or lower (j - i <= k)
//   triangle of each matrix in the last two axes and zeroes the rest; rank >= 2.
#include <cstring>
#include <vector>

#include "op/nn_internal.h"

namespace kiln {
namespace {

// ---- strided_slice --------------------------------------------------------

// Python's slice.indices(): normalises begin/end/step against a size d.
SliceAxis slice_axis(int64_t b, int64_t e, int64_t s, int64_t d) {
  SliceAxis r;
  r.step = s;
  if (s > 0) {
    if (b < 0) b = std::max<int64_t>(b + d, 0);
    if (e < 0) e = std::max<int64_t>(e + d, 0);
    b = std::min(b, d);
    e = std::min(e, d);
    r.start = b;
    r.count = e > b ? 1 + (e - b - 1) / s : 0;
  } else {
    if (b < 0) b = std::max<int64_t>(b + d, -1);
    if (e < 0) e = std::max<int64_t>(e + d, -1);
    b = std::min(b, d - 1);
    e = std::min(e, d - 1);
    r.start = b;
    r.count = b > e ? 1 + (b - e - 1) / -s : 0;
  }
  return r;
}

}  // namespace

std::vector<SliceAxis> slice_plan(const Shape& shape, const Attrs& attrs) {
  const std::string op = "strided_slice";
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t>& begin = attrs.get_ints("begin");
  const std::vector<int64_t>& end = attrs.get_ints("end");
  std::vector<int64_t> strides = attrs.get_ints("strides");
  std::vector<int64_t> axes = attrs.get_ints("axes");
  const size_t k = begin.size();
  if (end.size() != k)
    throw Error(op + ": attribute 'end' has " + std::to_string(end.size()) + " values but 'begin' has " +
                std::to_string(k));
  if (strides.empty()) strides.assign(k, 1);
  if (strides.size() != k)
    throw Error(op + ": attribute 'strides' has " + std::to_string(strides.size()) +
                " values but 'begin' has " + std::to_string(k));
  if (axes.empty()) {
    if (static_cast<int64_t>(k) > rank)
      throw Error(op + ": attribute 'begin' has " + std::to_string(k) + " values but data " +
                  shape_str(shape) + " has only " + std::to_string(rank) + " axes");
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.size() != k)
    throw Error(op + ": attribute 'axes' has " + std::to_string(axes.size()) + " values but 'begin' has " +
                std::to_string(k));
  normalize_axes(op, axes, rank, "attribute 'axes'");  // rejects repeats and out-of-range axes
  std::vector<SliceAxis> plan;
  for (int64_t d : shape) plan.push_back({0, d, 1});
  for (size_t i = 0; i < k; ++i) {
    if (strides[i] == 0) throw Error(op + ": attribute 'strides' = " + attr_value_str(strides) + " has a 0");
    int64_t a = normalize_axis(op, axes[i], rank, "attribute 'axes'");
    plan[static_cast<size_t>(a)] = slice_axis(begin[i], end[i], strides[i], shape[static_cast<size_t>(a)]);
  }
  return plan;
}

namespace {

std::vector<TensorDesc> infer_strided_slice(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::vector<SliceAxis> plan = slice_plan(in[0].shape, attrs);
  Shape out;
  for (const SliceAxis& s : plan) out.push_back(s.count);
  // A bounded dynamic leading axis may only be kept whole: from 0 with step
  // 1 to (or past) the bound, which at run time clamps to the actual extent.
  const bool whole =
      !plan.empty() && plan[0].start == 0 && plan[0].step == 1 && plan[0].count == in[0].shape[0];
  if (in[0].bounded_outer && !whole)
    throw Error(
        "strided_slice: data " + desc_str(in[0]) +
        " has a bounded dynamic leading axis, which may be sliced only whole (begin 0, stride 1, end >= " +
        std::to_string(in[0].shape[0]) + "); slice the other axes");
  return {{out, in[0].dtype, in[0].bounded_outer}};
}

void strided_slice_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  std::vector<SliceAxis> plan = slice_plan(in[0].shape(), attrs);
  std::vector<int64_t> in_strides = contiguous_strides(in[0].shape());
  int64_t base = 0;
  std::vector<int64_t> strides;
  for (size_t a = 0; a < plan.size(); ++a) {
    base += plan[a].start * in_strides[a];
    strides.push_back(plan[a].step * in_strides[a]);
  }
  if (out[0].numel() == 0) return;
  copy_strided(in[0], base, strides, out[0]);
}

// ---- broadcast_to ---------------------------------------------------------

std::vector<TensorDesc> infer_broadcast_to(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "broadcast_to";
  const Shape& s = in[0].shape;
  const std::vector<int64_t>& target = attrs.get_ints("shape");
  bool ok = target.size() >= s.size();
  for (int64_t d : target) ok = ok && d >= 0;
  for (size_t i = 0; ok && i < s.size(); ++i) {
    int64_t t = target[target.size() - s.size() + i];
    ok = s[i] == t || s[i] == 1;
  }
  if (!ok)
    throw Error(op + ": data of shape " + shape_str(s) +
                " cannot be broadcast to attribute 'shape' = " + attr_value_str(target));
  return {{target, in[0].dtype}};
}

void broadcast_to_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  copy_strided(in[0], 0, broadcast_strides(in[0].shape(), out[0].shape()), out[0]);
}

// ---- take -----------------------------------------------------------------

std::vector<TensorDesc> infer_take(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "take";
  const TensorDesc& x = in[0];
  const TensorDesc& idx = in[1];
  require_dtype(op, "indices", idx.dtype, {DType::Int32, DType::Int64});
  if (x.shape.empty()) throw Error(op + ": data is a scalar; take needs rank >= 1");
  const size_t axis =
      static_cast<size_t>(normalize_axis(op, attrs.get_int("axis"), static_cast<int64_t>(x.shape.size())));
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<int64_t>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + static_cast<int64_t>(axis) + 1, x.shape.end());
  // A bounded dynamic leading axis stays the result's leading axis: data's
  // when taking along another axis, the indices' when taking along axis 0.
  if (x.bounded_outer && (axis == 0 || idx.bounded_outer))
    throw Error(op + ": data " + desc_str(x) + " has a bounded dynamic leading axis; taking " +
                (axis == 0
                     ? std::string("along that axis is not supported (an index may exceed its actual extent)")
                     : std::string("along another axis needs static indices")));
  if (idx.bounded_outer && axis != 0)
    throw Error(op + ": indices " + desc_str(idx) +
                " have a bounded dynamic leading axis, which take supports along axis 0 only (it becomes the "
                "result's leading axis), not axis " +
                std::to_string(axis));
  return {{out, x.dtype, x.bounded_outer || idx.bounded_outer}};
}

void take_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  const int64_t axis = normalize_axis("take", attrs.get_int("axis"), x.ndim());
  AxisSplit s = split_at_axis(x.shape(), axis);
  const int64_t n_idx = idx.numel();
  std::vector<int64_t> rows(static_cast<size_t>(n_idx));
  for (int64_t j = 0; j < n_idx; ++j) {
    int64_t i = idx.dtype() == DType::Int32 ? idx.data<int32_t>()[j] : idx.data<int64_t>()[j];
    if (i < -s.n || i >= s.n)
      throw Error("take: index " + std::to_string(i) + " (at position " + std::to_string(j) +
                  " of indices) is out of range for axis " + std::to_string(axis) + " of size " +
                  std::to_string(s.n) + " (expected " + std::to_string(-s.n) + ".." +
                  std::to_string(s.n - 1) + ")");
    rows[static_cast<size_t>(j)] = i < 0 ? i + s.n : i;
  }
  const int64_t chunk = s.inner * dtype_bytes(x.dtype());
  if (chunk == 0) return;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out[0].raw());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < n_idx; ++j) {
      std::memcpy(dst, src + (o * s.n + rows[static_cast<size_t>(j)]) * chunk, static_cast<size_t>(chunk));
      dst += chunk;
    }
}

// ---- where ----------------------------------------------------------------

std::vector<TensorDesc> infer_where(const std::vector<TensorDesc>& in, const Attrs&) {
  const std::string op = "where";
  require_dtype(op, "cond", in[0].dtype, {DType::Bool});
  if (in[1].dtype != in[2].dtype)
    throw Error(op + ": x has dtype " + std::string(dtype_name(in[1].dtype)) + " but y has dtype " +
                std::string(dtype_name(in[2].dtype)) + "; they must match");
  Shape out = broadcast_shapes(op, broadcast_shapes(op, in[0].shape, in[1].shape), in[2].shape);
  return {{out, in[1].dtype}};
}

void where_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Shape& shape = out[0].shape();
  const uint8_t* cond = in[0].data<uint8_t>();
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using S = typename decltype(tag)::storage;
    const S* x = in[1].data<S>();
    const S* y = in[2].data<S>();
    S* dst = out[0].data<S>();
    for_each_row<3>(shape,
                    {broadcast_strides(in[0].shape(), shape), broadcast_strides(in[1].shape(), shape),
                     broadcast_strides(in[2].shape(), shape)},
                    [&](int64_t o, std::array<int64_t, 3> offs, int64_t n, std::array<int64_t, 3> st) {
                      for (int64_t i = 0; i < n; ++i)
                        dst[o + i] =
                            cond[offs[0] + i * st[0]] ? x[offs[1] + i * st[1]] : y[offs[2] + i * st[2]];
                    });
  });
}

// ---- gather_elements --------------------------------------------------------

std::vector<TensorDesc> infer_gather_elements(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "gather_elements";
  const TensorDesc& x = in[0];
  const TensorDesc& idx = in[1];
  require_dtype(op, "indices", idx.dtype, {DType::Int32, DType::Int64});
  if (x.shape.empty()) throw Error(op + ": data is a scalar; gather_elements needs rank >= 1");
  if (idx.shape.size() != x.shape.size())
    throw Error(op + ": indices " + shape_str(idx.shape) + " must have the rank of data " +
                shape_str(x.shape));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = normalize_axis(op, attrs.get_int("axis"), rank);
  for (int64_t d = 0; d < rank; ++d) {
    size_t i = static_cast<size_t>(d);
    if (d != axis && idx.shape[i] > x.shape[i])
      throw Error(op + ": indices " + shape_str(idx.shape) + " exceed data " + shape_str(x.shape) +
                  " on axis " + std::to_string(d) + " (only axis " + std::to_string(axis) +
                  " may differ freely)");
  }
  return {{idx.shape, x.dtype}};
}

void gather_elements_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  const size_t rank = static_cast<size_t>(x.ndim());
  const size_t axis = static_cast<size_t>(normalize_axis("gather_elements", attrs.get_int("axis"), x.ndim()));
  const Shape& ishape = idx.shape();
  const std::vector<int64_t> xstride = contiguous_strides(x.shape());
  const int64_t size = x.shape()[axis];
  const int64_t elem = dtype_bytes(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out[0].raw());
  std::vector<int64_t> pos(rank, 0);
  int64_t base = 0;  // data offset of pos with the axis coordinate left out
  for (int64_t p = 0, n = idx.numel(); p < n; ++p) {
    int64_t i = idx.dtype() == DType::Int32 ? idx.data<int32_t>()[p] : idx.data<int64_t>()[p];
    if (i < -size || i >= size)
      throw Error("gather_elements: index " + std::to_string(i) + " (at position " + std::to_string(p) +
                  " of indices) is out of range for axis " + std::to_string(axis) + " of size " +
                  std::to_string(size) + " (expected " + std::to_string(-size) + ".." +
                  std::to_string(size - 1) + ")");
    if (i < 0) i += size;
    std::memcpy(dst + p * elem, src + (base + i * xstride[axis]) * elem, static_cast<size_t>(elem));
    for (size_t d = rank; d-- > 0;) {
      ++pos[d];
      if (d != axis) base += xstride[d];
      if (pos[d] < ishape[d]) break;
      if (d != axis) base -= xstride[d] * ishape[d];
      pos[d] = 0;
    }
  }
}

// ---- trilu ------------------------------------------------------------------

std::vector<TensorDesc> infer_trilu(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "trilu";
  if (in[0].shape.size() < 2)
    throw Error(op + ": input x must have rank >= 2 (matrices in the last two axes), got " + desc_str(in[0]));
  int64_t upper = attrs.get_int("upper");
  if (upper != 0 && upper != 1)
    throw Error(op + ": attribute 'upper' must be 0 or 1, got " + std::to_string(upper));
  return {in[0]};
}

void trilu_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const int64_t k = attrs.get_int("k");
  const bool upper = attrs.get_int("upper") != 0;
  const Shape& s = x.shape();
  const int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  const int64_t elem = dtype_bytes(x.dtype());
  if (x.nbytes()) std::memcpy(out[0].raw(), x.raw(), x.nbytes());
  char* dst = static_cast<char*>(out[0].raw());
  // Zero bytes are 0 in every dtype (0.0f, half 0, false), so one memset fits all.
  for (int64_t m = 0, batches = rows * cols == 0 ? 0 : x.numel() / (rows * cols); m < batches; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) std::memset(dst + ((m * rows + i) * cols + j) * elem, 0, static_cast<size_t>(elem));
      }
}

}  // namespace

void register_shape_index_ops(OpRegistry& r) {
  r.add({"strided_slice",
         "numpy slicing begin:end:stride on chosen axes",
         1,
         1,
         {{"begin", AttrKind::Ints, std::nullopt},
          {"end", AttrKind::Ints, std::nullopt},
          {"strides", AttrKind::Ints, std::vector<int64_t>{}},
          {"axes", AttrKind::Ints, std::vector<int64_t>{}}},
         false,
         infer_strided_slice,
         strided_slice_kernel,
         DynamicInputs::Custom});
  r.add({"broadcast_to",
         "numpy broadcasting to a given shape",
         1,
         1,
         {{"shape", AttrKind::Ints, std::nullopt}},
         false,
         infer_broadcast_to,
         broadcast_to_kernel});
  r.add({"take",
         "gathers slices along one axis by index",
         2,
         2,
         {{"axis", AttrKind::Int, int64_t{0}}},
         false,
         infer_take,
         take_kernel,
         DynamicInputs::Custom});
  r.add({"where",
         "elementwise select cond ? x : y with broadcasting",
         3,
         3,
         {},
         false,
         infer_where,
         where_kernel});
  r.add({"gather_elements",
         "picks data elements by index along one axis; the result has the indices' shape",
         2,
         2,
         {{"axis", AttrKind::Int, int64_t{0}}},
         false,
         infer_gather_elements,
         gather_elements_kernel});
  r.add({"trilu",
         "keeps the upper or lower triangle (offset k) of the last two axes, zeroes the rest",
         1,
         1,
         {{"k", AttrKind::Int, int64_t{0}}, {"upper", AttrKind::Int, int64_t{1}}},
         false,
         infer_trilu,
         trilu_kernel});
}

}  // namespace kiln
