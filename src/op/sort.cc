// Ops that order elements: topk.
//
// topk(x; k, axis=-1, largest=1): the k largest (or smallest) elements along
//   one axis, as a tuple (values of x's dtype, int64 indices), both of x's
//   shape with that axis cut to k. The result is always sorted: largest
//   first (or smallest first), and equal values by ascending index, so the
//   result is deterministic (ONNX TopK's rule for ties). NaN orders above
//   every number (as in numpy's sort, where NaN goes last): it comes first
//   with largest=1 and last with largest=0. Any numeric dtype; 0 <= k <= the
//   axis size.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kNumeric = kNumericDTypes;

std::vector<TensorDesc> topk_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "topk";
  const TensorDesc& x = in[0];
  require_dtype(op, "input x", x.dtype, kNumeric);
  if (x.shape.empty()) throw Error(op + ": input x must have rank >= 1, got a scalar");
  int64_t axis = normalize_axis(op, attrs.get_int("axis"), static_cast<int64_t>(x.shape.size()));
  int64_t k = attrs.get_int("k");
  int64_t size = x.shape[static_cast<size_t>(axis)];
  if (k < 0 || k > size)
    throw Error(op + ": attribute 'k' = " + std::to_string(k) + " is out of range for axis " +
                std::to_string(axis) + " of size " + std::to_string(size) + " (expected 0.." +
                std::to_string(size) + ")");
  int64_t largest = attrs.get_int("largest");
  if (largest != 0 && largest != 1)
    throw Error(op + ": attribute 'largest' must be 0 or 1, got " + std::to_string(largest));
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = k;
  return {{out, x.dtype}, {out, DType::Int64}};
}

// a before b: the larger (or smaller) value, NaN counting as the largest;
// ties by index. A strict weak order, so partial_sort is deterministic.
template <typename C>
bool ranks_before(C a, int64_t ia, C b, int64_t ib, bool largest) {
  if constexpr (std::is_floating_point_v<C>) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) {
      if (na && nb) return ia < ib;
      return largest ? na : nb;
    }
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

void topk_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const int64_t axis = normalize_axis("topk", attrs.get_int("axis"), x.ndim());
  const int64_t k = attrs.get_int("k");
  const bool largest = attrs.get_int("largest") != 0;
  AxisSplit s = split_at_axis(x.shape(), axis);
  int64_t* pi = out[1].data<int64_t>();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    const S* px = x.data<S>();
    S* pv = out[0].data<S>();
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    std::vector<C> lane(static_cast<size_t>(s.n));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t j = 0; j < s.inner; ++j) {
        for (int64_t i = 0; i < s.n; ++i)
          lane[static_cast<size_t>(i)] = Tag::load(px[(o * s.n + i) * s.inner + j]);
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          return ranks_before<C>(lane[static_cast<size_t>(a)], a, lane[static_cast<size_t>(b)], b, largest);
        });
        for (int64_t r = 0; r < k; ++r) {
          int64_t src = order[static_cast<size_t>(r)];
          int64_t dst = (o * k + r) * s.inner + j;
          pv[dst] = px[(o * s.n + src) * s.inner + j];
          pi[dst] = src;
        }
      }
  });
}

}  // namespace

void register_sort_ops(OpRegistry& r) {
  r.add({"topk",
         "the k largest (or smallest) elements along axis and their int64 indices, sorted; ties by index",
         1,
         1,
         {{"k", AttrKind::Int, std::nullopt},
          {"axis", AttrKind::Int, AttrValue(int64_t{-1})},
          {"largest", AttrKind::Int, AttrValue(int64_t{1})}},
         true,
         topk_infer,
         topk_kernel});
}

}  // namespace kiln
