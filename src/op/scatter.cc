// Index ops that address elements by computed positions: gather_nd,
// scatter_nd and scatter_elements. Registered from register_shape_ops
// (shape.cc). Data of any dtype; indices int32 or int64, where -d..-1 count
// from the end of an axis of size d and anything else outside 0..d-1 is an
// error when the kernel runs.
//
// gather_nd(data, indices; batch_dims=0): ONNX GatherND. With m the last dim
//   of indices and b = batch_dims, the first b dims of data and indices
//   match, 1 <= m <= rank(data) - b, and
//   out[B, I] = data[B, indices[B, I, 0], .., indices[B, I, m-1], ...]
//   of shape indices.shape[:-1] + data.shape[b+m:].
// scatter_nd(data, indices, updates; reduction="none"): ONNX ScatterND. A
//   copy of data where, for each index tuple k (the last dim of indices, m of
//   them), the slice data[indices[k]] is replaced by (or combined with)
//   updates[k]; updates has shape indices.shape[:-1] + data.shape[m:].
// scatter_elements(data, indices, updates; axis=0, reduction="none"): ONNX
//   ScatterElements. indices and updates share a shape of data's rank, at
//   most data's size on every axis but `axis`;
//   out[.., indices[p], ..] = updates[p] at the position p with its `axis`
//   coordinate replaced.
// reduction: "none" writes (a later duplicate index wins, in row-major order
// of indices), "add" and "mul" accumulate (wrapping for integers), "max" and
// "min" keep the larger or smaller; bool data takes "none" only.
#include <cstring>
#include <type_traits>

#include "op/nn_internal.h"

namespace kiln {
namespace {

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const std::string& op, const Attrs& attrs) {
  const std::string& r = attrs.get_string("reduction");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  throw Error(op + ": attribute 'reduction' = \"" + r + "\" is not one of none, add, mul, max, min");
}

void check_reduction(const std::string& op, const Attrs& attrs, DType t) {
  if (reduction_of(op, attrs) != Reduction::None && t == DType::Bool)
    throw Error(op + ": reduction \"" + attrs.get_string("reduction") + "\" is not defined for bool data");
}

int64_t index_at(const Tensor& idx, int64_t p) {
  return idx.dtype() == DType::Int32 ? idx.data<int32_t>()[p] : idx.data<int64_t>()[p];
}

// The index at position p of indices, wrapped into 0..size-1, or an error.
int64_t checked_index(const std::string& op, const Tensor& idx, int64_t p, int64_t axis, int64_t size) {
  int64_t i = index_at(idx, p);
  if (i < -size || i >= size)
    throw Error(op + ": index " + std::to_string(i) + " (at position " + std::to_string(p) +
                " of indices) is out of range for axis " + std::to_string(axis) + " of size " +
                std::to_string(size) + " (expected " + std::to_string(-size) + ".." +
                std::to_string(size - 1) + ")");
  return i < 0 ? i + size : i;
}

// dst[0..n) (op)= src[0..n) in data's dtype.
void combine(Reduction r, DType t, char* dst, const char* src, int64_t n) {
  if (r == Reduction::None) {
    std::memcpy(dst, src, static_cast<size_t>(n * dtype_bytes(t)));
    return;
  }
  dispatch_dtype(t, [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    if constexpr (std::is_same_v<C, bool>) {
      KILN_ASSERT(false, "a scatter reduction on bool passed inference");
    } else {
      S* d = reinterpret_cast<S*>(dst);
      const S* s = reinterpret_cast<const S*>(src);
      for (int64_t i = 0; i < n; ++i) {
        C a = Tag::load(d[i]), b = Tag::load(s[i]);
        C v = a;
        if constexpr (std::is_integral_v<C>) {
          // Through unsigned so that overflow wraps instead of being undefined.
          using U = std::make_unsigned_t<C>;
          if (r == Reduction::Add) v = static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
          if (r == Reduction::Mul) v = static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
        } else {
          if (r == Reduction::Add) v = a + b;
          if (r == Reduction::Mul) v = a * b;
        }
        if (r == Reduction::Max) v = b > a ? b : a;
        if (r == Reduction::Min) v = b < a ? b : a;
        d[i] = Tag::store(v);
      }
    }
  });
}

int64_t numel_of(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= s[i];
  return n;
}

// ---- gather_nd --------------------------------------------------------------

std::vector<TensorDesc> infer_gather_nd(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "gather_nd";
  const Shape& x = in[0].shape;
  const Shape& idx = in[1].shape;
  require_dtype(op, "indices", in[1].dtype, {DType::Int32, DType::Int64});
  int64_t b = attrs.get_int("batch_dims");
  if (idx.empty()) throw Error(op + ": indices must have rank >= 1 (the last axis holds index tuples)");
  if (b < 0 || b >= static_cast<int64_t>(idx.size()) || b >= static_cast<int64_t>(x.size()))
    throw Error(op + ": attribute 'batch_dims' = " + std::to_string(b) + " must be below the ranks of data " +
                shape_str(x) + " and indices " + shape_str(idx));
  size_t bd = static_cast<size_t>(b);
  for (size_t i = 0; i < bd; ++i)
    if (x[i] != idx[i])
      throw Error(op + ": the batch dims of data " + shape_str(x) + " and indices " + shape_str(idx) +
                  " differ");
  int64_t m = idx.back();
  if (m < 1 || m > static_cast<int64_t>(x.size()) - b)
    throw Error(op + ": index tuples of length " + std::to_string(m) + " (the last dim of indices " +
                shape_str(idx) + ") must be 1.." + std::to_string(static_cast<int64_t>(x.size()) - b) +
                " for data " + shape_str(x) + " with batch_dims " + std::to_string(b));
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), x.begin() + b + m, x.end());
  return {{out, in[0].dtype}};
}

void gather_nd_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  const Shape& xs = x.shape();
  const Shape& is = idx.shape();
  const size_t b = static_cast<size_t>(attrs.get_int("batch_dims"));
  const size_t m = static_cast<size_t>(is.back());
  const int64_t batches = numel_of(xs, 0, b);
  const int64_t tuples = numel_of(is, b, is.size() - 1);  // per batch
  const int64_t slice = numel_of(xs, b + m, xs.size()) * dtype_bytes(x.dtype());
  const int64_t batch_bytes = numel_of(xs, b, xs.size()) * dtype_bytes(x.dtype());
  const std::vector<int64_t> strides = contiguous_strides(xs);
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out[0].raw());
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t tuple = (bi * tuples + t) * static_cast<int64_t>(m);
      int64_t offset = 0;
      for (size_t j = 0; j < m; ++j) {
        int64_t a = static_cast<int64_t>(b + j);
        offset +=
            checked_index("gather_nd", idx, tuple + static_cast<int64_t>(j), a, xs[b + j]) * strides[b + j];
      }
      if (slice == 0) continue;
      std::memcpy(dst, src + bi * batch_bytes + offset * dtype_bytes(x.dtype()), static_cast<size_t>(slice));
      dst += slice;
    }
}

// Data, int32/int64 indices and updates of data's dtype; a known reduction.
void check_scatter_operands(const std::string& op, const std::vector<TensorDesc>& in, const Attrs& attrs) {
  require_dtype(op, "indices", in[1].dtype, {DType::Int32, DType::Int64});
  if (in[2].dtype != in[0].dtype)
    throw Error(op + ": updates have dtype " + std::string(dtype_name(in[2].dtype)) + " but data has " +
                std::string(dtype_name(in[0].dtype)));
  check_reduction(op, attrs, in[0].dtype);
}

// ---- scatter_nd -------------------------------------------------------------

std::vector<TensorDesc> infer_scatter_nd(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "scatter_nd";
  const Shape& x = in[0].shape;
  const Shape& idx = in[1].shape;
  check_scatter_operands(op, in, attrs);
  if (idx.empty()) throw Error(op + ": indices must have rank >= 1 (the last axis holds index tuples)");
  int64_t m = idx.back();
  if (m < 1 || m > static_cast<int64_t>(x.size()))
    throw Error(op + ": index tuples of length " + std::to_string(m) + " (the last dim of indices " +
                shape_str(idx) + ") must be 1.." + std::to_string(x.size()) + " for data " + shape_str(x));
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), x.begin() + m, x.end());
  if (in[2].shape != want)
    throw Error(op + ": updates have shape " + shape_str(in[2].shape) + "; data " + shape_str(x) +
                " and indices " + shape_str(idx) + " need " + shape_str(want));
  return {in[0]};
}

void scatter_nd_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  const Tensor& upd = in[2];
  Reduction r = reduction_of("scatter_nd", attrs);
  const Shape& xs = x.shape();
  const size_t m = static_cast<size_t>(idx.shape().back());
  const int64_t tuples = numel_of(idx.shape(), 0, idx.shape().size() - 1);
  const int64_t slice = numel_of(xs, m, xs.size());
  const int64_t elem = dtype_bytes(x.dtype());
  const std::vector<int64_t> strides = contiguous_strides(xs);
  if (x.nbytes()) std::memcpy(out[0].raw(), x.raw(), x.nbytes());
  char* dst = static_cast<char*>(out[0].raw());
  const char* src = static_cast<const char*>(upd.raw());
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (size_t j = 0; j < m; ++j)
      offset += checked_index("scatter_nd", idx, t * static_cast<int64_t>(m) + static_cast<int64_t>(j),
                              static_cast<int64_t>(j), xs[j]) *
                strides[j];
    combine(r, x.dtype(), dst + offset * elem, src + t * slice * elem, slice);
  }
}

// ---- scatter_elements -------------------------------------------------------

std::vector<TensorDesc> infer_scatter_elements(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "scatter_elements";
  const Shape& x = in[0].shape;
  const Shape& idx = in[1].shape;
  check_scatter_operands(op, in, attrs);
  if (x.empty()) throw Error(op + ": data is a scalar; scatter_elements needs rank >= 1");
  if (idx.size() != x.size())
    throw Error(op + ": indices " + shape_str(idx) + " must have the rank of data " + shape_str(x));
  if (in[2].shape != idx)
    throw Error(op + ": updates " + shape_str(in[2].shape) + " must have the shape of indices " +
                shape_str(idx));
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t axis = normalize_axis(op, attrs.get_int("axis"), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && idx[static_cast<size_t>(d)] > x[static_cast<size_t>(d)])
      throw Error(op + ": indices " + shape_str(idx) + " exceed data " + shape_str(x) + " on axis " +
                  std::to_string(d));
  return {in[0]};
}

void scatter_elements_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  Reduction r = reduction_of("scatter_elements", attrs);
  const size_t rank = static_cast<size_t>(x.ndim());
  const size_t axis =
      static_cast<size_t>(normalize_axis("scatter_elements", attrs.get_int("axis"), x.ndim()));
  const Shape& is = idx.shape();
  const std::vector<int64_t> xstride = contiguous_strides(x.shape());
  const int64_t size = x.shape()[axis];
  const int64_t elem = dtype_bytes(x.dtype());
  if (x.nbytes()) std::memcpy(out[0].raw(), x.raw(), x.nbytes());
  char* dst = static_cast<char*>(out[0].raw());
  const char* src = static_cast<const char*>(in[2].raw());
  std::vector<int64_t> pos(rank, 0);
  int64_t base = 0;  // output offset of pos with the axis coordinate left out
  for (int64_t p = 0, n = idx.numel(); p < n; ++p) {
    int64_t i = checked_index("scatter_elements", idx, p, static_cast<int64_t>(axis), size);
    combine(r, x.dtype(), dst + (base + i * xstride[axis]) * elem, src + p * elem, 1);
    for (size_t d = rank; d-- > 0;) {
      ++pos[d];
      if (d != axis) base += xstride[d];
      if (pos[d] < is[d]) break;
      if (d != axis) base -= xstride[d] * is[d];
      pos[d] = 0;
    }
  }
}

}  // namespace

void register_scatter_ops(OpRegistry& r) {
  AttrSpec reduction{"reduction", AttrKind::String, std::string("none")};
  r.add({"gather_nd",
         "gathers slices of data addressed by index tuples (the last axis of indices), ONNX GatherND",
         2,
         2,
         {{"batch_dims", AttrKind::Int, int64_t{0}}},
         false,
         infer_gather_nd,
         gather_nd_kernel});
  r.add({"scatter_nd",
         "a copy of data with slices addressed by index tuples replaced or combined with updates",
         3,
         3,
         {reduction},
         false,
         infer_scatter_nd,
         scatter_nd_kernel});
  r.add({"scatter_elements",
         "a copy of data with elements along one axis replaced or combined with updates",
         3,
         3,
         {{"axis", AttrKind::Int, int64_t{0}}, reduction},
         false,
         infer_scatter_elements,
         scatter_elements_kernel});
}

}  // namespace kiln
