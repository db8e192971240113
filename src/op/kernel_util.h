// Small helpers shared by the reference kernels: dtype checks and dispatch,
// axis normalisation, numpy broadcasting by strides, and exact rounding.
//
// Everything here is header-only and user-facing errors are kiln::Error
// messages that start with the op's name, like every op error.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/runtime/dtype.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- dtypes ---------------------------------------------------------------

// "float32, float16" for messages.
inline std::string dtype_list_str(std::initializer_list<DType> dtypes) {
  std::string s;
  for (DType t : dtypes) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

// Every dtype but bool, and every float dtype: what most ops accept.
inline constexpr std::initializer_list<DType> kNumericDTypes = {
    DType::Float32, DType::Float16, DType::Float64, DType::BFloat16, DType::Int8,  DType::UInt8,
    DType::Int16,   DType::UInt16,  DType::Int32,   DType::UInt32,   DType::Int64, DType::UInt64};
inline constexpr std::initializer_list<DType> kFloatDTypes = {DType::Float32, DType::Float16, DType::Float64,
                                                              DType::BFloat16};

// Throws "OP: WHAT has dtype int8; expected one of float32, float16".
inline void require_dtype(const std::string& op, const std::string& what, DType t,
                          std::initializer_list<DType> allowed) {
  for (DType a : allowed)
    if (a == t) return;
  throw Error(op + ": " + what + " has dtype " + std::string(dtype_name(t)) + "; expected " +
              (allowed.size() == 1 ? "" : "one of ") + dtype_list_str(allowed));
}

// Compile-time facts about one dtype. `storage` is the C type in memory;
// `compute` is the type arithmetic is done in (float16 and bfloat16 compute
// in float).
template <DType D>
struct DTypeTag;
#define KILN_DTYPE_TAG(D, S, C)                                         \
  template <>                                                           \
  struct DTypeTag<D> {                                                  \
    static constexpr DType dtype = D;                                   \
    using storage = S;                                                  \
    using compute = C;                                                  \
    static compute load(storage s) { return static_cast<compute>(s); }  \
    static storage store(compute c) { return static_cast<storage>(c); } \
  }
KILN_DTYPE_TAG(DType::Float32, float, float);
KILN_DTYPE_TAG(DType::Int8, int8_t, int8_t);
KILN_DTYPE_TAG(DType::UInt8, uint8_t, uint8_t);
KILN_DTYPE_TAG(DType::Int32, int32_t, int32_t);
KILN_DTYPE_TAG(DType::Int64, int64_t, int64_t);
KILN_DTYPE_TAG(DType::Float64, double, double);
KILN_DTYPE_TAG(DType::Int16, int16_t, int16_t);
KILN_DTYPE_TAG(DType::UInt16, uint16_t, uint16_t);
KILN_DTYPE_TAG(DType::UInt32, uint32_t, uint32_t);
KILN_DTYPE_TAG(DType::UInt64, uint64_t, uint64_t);
#undef KILN_DTYPE_TAG
template <>
struct DTypeTag<DType::Float16> {
  static constexpr DType dtype = DType::Float16;
  using storage = uint16_t;
  using compute = float;
  static compute load(storage s) { return half_to_float(s); }
  static storage store(compute c) { return float_to_half(c); }
};
template <>
struct DTypeTag<DType::BFloat16> {
  static constexpr DType dtype = DType::BFloat16;
  using storage = uint16_t;
  using compute = float;
  static compute load(storage s) { return bfloat16_to_float(s); }
  static storage store(compute c) { return float_to_bfloat16(c); }
};
template <>
struct DTypeTag<DType::Bool> {
  static constexpr DType dtype = DType::Bool;
  using storage = uint8_t;
  using compute = bool;
  static compute load(storage s) { return s != 0; }
  static storage store(compute c) { return c ? 1 : 0; }
};

// Calls f(DTypeTag<D>{}) for the runtime dtype t and returns its result, so
// one generic lambda serves every dtype:
//   dispatch_dtype(x.dtype(), [&](auto tag) { using T = typename decltype(tag)::storage; ... });
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32:
      return f(DTypeTag<DType::Float32>{});
    case DType::Float16:
      return f(DTypeTag<DType::Float16>{});
    case DType::Int8:
      return f(DTypeTag<DType::Int8>{});
    case DType::UInt8:
      return f(DTypeTag<DType::UInt8>{});
    case DType::Int32:
      return f(DTypeTag<DType::Int32>{});
    case DType::Int64:
      return f(DTypeTag<DType::Int64>{});
    case DType::Bool:
      return f(DTypeTag<DType::Bool>{});
    case DType::Float64:
      return f(DTypeTag<DType::Float64>{});
    case DType::Int16:
      return f(DTypeTag<DType::Int16>{});
    case DType::UInt16:
      return f(DTypeTag<DType::UInt16>{});
    case DType::UInt32:
      return f(DTypeTag<DType::UInt32>{});
    case DType::UInt64:
      return f(DTypeTag<DType::UInt64>{});
    case DType::BFloat16:
      return f(DTypeTag<DType::BFloat16>{});
  }
  KILN_ASSERT(false, "unknown dtype in dispatch_dtype");
  return f(DTypeTag<DType::Float32>{});
}

// float16 data for kernels that compute in float32: `t` as a float32 tensor
// (a float32 one is returned as it is), and float32 results stored into a
// float16 tensor, each rounded to nearest even (as every float16 result).
inline Tensor float32_copy(const Tensor& t) {
  if (t.dtype() != DType::Float16) return t;
  Tensor f = Tensor::empty(t.shape(), DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = half_to_float(t.data<uint16_t>()[i]);
  return f;
}
inline void store_float16(const Tensor& from, Tensor& to) {
  for (int64_t i = 0; i < to.numel(); ++i) to.data<uint16_t>()[i] = float_to_half(from.data<float>()[i]);
}

// ---- axes -----------------------------------------------------------------

// Maps axis in [-rank, rank) to [0, rank). Throws
// "OP: attribute 'axis' = 3 is out of range for rank 2 (expected -2..1)".
inline int64_t normalize_axis(const std::string& op, int64_t axis, int64_t rank,
                              const std::string& what = "attribute 'axis'") {
  if (axis < -rank || axis >= rank)
    throw Error(op + ": " + what + " = " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank) + " (expected " + std::to_string(-rank) + ".." +
                std::to_string(rank - 1) + ")");
  return axis < 0 ? axis + rank : axis;
}

// Normalises a list of axes and returns them sorted. Repeated axes (also
// after normalisation, like 1 and -1 of rank 2) are an error.
inline std::vector<int64_t> normalize_axes(const std::string& op, const std::vector<int64_t>& axes,
                                           int64_t rank, const std::string& what = "attribute 'axis'") {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(normalize_axis(op, a, rank, what));
  std::sort(out.begin(), out.end());
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i] == out[i - 1]) throw Error(op + ": " + what + " repeats axis " + std::to_string(out[i]));
  return out;
}

// A shape seen as (outer, n, inner) around one axis: element (o, i, k) sits at
// (o * n + i) * inner + k. For softmax, concat, split, reductions over one axis.
struct AxisSplit {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};
inline AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis) s.outer *= shape[static_cast<size_t>(i)];
    if (i == axis) s.n = shape[static_cast<size_t>(i)];
    if (i > axis) s.inner *= shape[static_cast<size_t>(i)];
  }
  return s;
}

// ---- broadcasting ---------------------------------------------------------

// numpy broadcasting of two shapes; throws
// "OP: shapes (2, 3) and (4,) do not broadcast".
inline Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(op + ": shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Row-major element strides of a contiguous shape.
inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

// Element strides for reading a contiguous tensor of shape `in` as if it had
// the (broadcast) shape `out`: right-aligned, 0 where `in` has size 1 or no dim.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  KILN_ASSERT(in.size() <= out.size(), "broadcast_strides: input rank exceeds output rank");
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> cs = contiguous_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : cs[i];
  return s;
}

// Walks a (broadcast) output shape row by row. For each innermost run it
// calls row(out_offset, in_offsets, n, in_inner_strides), where in_offsets[k]
// is the element offset of operand k at the start of the run. Adjacent dims
// are merged first where every operand allows it, so same-shape operands give
// one long row and (N, C, H, W) + (1, C, 1, 1) gives rows of H * W.
template <size_t N, typename Row>
void for_each_row(const Shape& out_shape, std::array<std::vector<int64_t>, N> strides, Row&& row) {
  if (shape_numel(out_shape) == 0) return;
  // Merge dims (drop size-1 dims, fuse d-1 into d when all strides agree).
  Shape dims;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) continue;
    bool fuse = !dims.empty();
    for (size_t k = 0; k < N && fuse; ++k) fuse = st[k].back() == strides[k][d] * out_shape[d];
    if (fuse) {
      dims.back() *= out_shape[d];
      for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][d];
      continue;
    }
    dims.push_back(out_shape[d]);
    for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
  }
  if (dims.empty()) {  // a scalar or all ones
    dims.push_back(1);
    for (size_t k = 0; k < N; ++k) st[k].push_back(0);
  }
  size_t rank = dims.size();
  int64_t n = dims[rank - 1];
  std::array<int64_t, N> inner{};
  for (size_t k = 0; k < N; ++k) inner[k] = st[k][rank - 1];
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> offs{};
  int64_t rows = shape_numel(dims) / n;
  for (int64_t r = 0; r < rows; ++r) {
    row(r * n, offs, n, inner);
    // Odometer increment over the outer dims, updating offsets incrementally.
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) offs[k] += st[k][d];
      if (idx[d] < dims[d]) break;
      for (size_t k = 0; k < N; ++k) offs[k] -= st[k][d] * dims[d];
      idx[d] = 0;
    }
  }
}

// ---- rounding -------------------------------------------------------------

// Round half to even, independent of the current floating-point rounding mode.
inline double round_half_even(double x) {
  double r = std::round(x);  // half away from zero
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

// Round half away from zero (std::round), named for symmetry at call sites.
inline double round_half_away(double x) { return std::round(x); }

}  // namespace kiln
