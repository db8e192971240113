// Reductions (sum, mean, max, min, prod), the softmax family, argmax/argmin
// and cumsum.
//
// Semantics:
// - sum/mean/max/min/prod reduce over `axis` (a list of ints; empty = all axes;
//   negative axes count from the end; repeated or out-of-range axes are
//   errors) and keep reduced axes as size 1 when keepdims = 1.
// - dtypes: float32, float16, int32, int64 (max and min also int8, uint8).
//   Float sums accumulate in double and round once. Integer sums wrap in the
//   input dtype like numpy's sum(dtype=...). Integer mean divides the exact
//   sum and rounds half away from zero. prod multiplies like sum adds (double
//   for floats, wrapping for integers); the product of zero elements is 1.
//   Float mean of zero elements is NaN; max/min of zero elements, and integer
//   mean of zero elements, are errors (there is no identity value).
// - max/min propagate NaN (like numpy).
// - nn.softmax / nn.log_softmax over one `axis` (default -1), float only,
//   numerically stable: exp(x - max) summed in double.
// - argmax/argmin(axis=0, keepdims=0, select_last_index=0): the int64 index
//   of the largest/smallest element along one axis; ties give the first index
//   (the last with select_last_index=1). NaN wins like in numpy: the first
//   (or last) NaN's index. Any numeric dtype; an empty axis is an error.
// - cumsum(axis=0, exclusive=0, reverse=0): running sums along one axis;
//   exclusive leaves the current element out (the first output is 0),
//   reverse sums from the end. Floats accumulate in double and round each
//   output once; integers wrap. Any numeric dtype.
#include <cmath>
#include <limits>
#include <type_traits>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

const char* reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Mean:
      return "mean";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
    case ReduceKind::Prod:
      return "prod";
  }
  return "?";
}

// The reduced axes as a mask over the input's dims.
std::vector<bool> reduced_mask(const std::string& op, const Shape& shape, const Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(shape.size());
  const auto& axes = attrs.get_ints("axis");
  std::vector<bool> mask(shape.size(), axes.empty());
  for (int64_t a : normalize_axes(op, axes, rank)) mask[static_cast<size_t>(a)] = true;
  return mask;
}

Shape reduced_shape(const Shape& shape, const std::vector<bool>& mask, bool keepdims) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!mask[i])
      out.push_back(shape[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

template <ReduceKind K>
std::vector<TensorDesc> reduce_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  std::string op = reduce_name(K);
  const TensorDesc& x = in[0];
  if constexpr (K == ReduceKind::Max || K == ReduceKind::Min)
    require_dtype(op, "input x", x.dtype, kNumericDTypes);
  else
    require_dtype(op, "input x", x.dtype,
                  {DType::Float32, DType::Float16, DType::Float64, DType::BFloat16, DType::Int16,
                   DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64});
  int64_t keepdims = attrs.get_int("keepdims");
  if (keepdims != 0 && keepdims != 1)
    throw Error(op + ": attribute 'keepdims' must be 0 or 1, got " + std::to_string(keepdims));
  std::vector<bool> mask = reduced_mask(op, x.shape, attrs);
  // Whether a reduced axis is empty (not the product of the extents, which
  // may overflow on a bad shape).
  bool reduces_nothing = false;
  for (size_t i = 0; i < x.shape.size(); ++i) reduces_nothing |= mask[i] && x.shape[i] == 0;
  bool no_identity =
      K == ReduceKind::Max || K == ReduceKind::Min || (K == ReduceKind::Mean && is_integer(x.dtype));
  if (reduces_nothing && no_identity && shape_numel(reduced_shape(x.shape, mask, true)) > 0)
    throw Error(op + ": cannot reduce zero elements of " + desc_str(x) +
                " (the reduction has no identity value)");
  return {{reduced_shape(x.shape, mask, keepdims != 0), x.dtype}};
}

// Accumulator type: double for floats, the storage type for integers
// (wrapping through unsigned for sums and products; mean sums exactly in
// __int128).
template <ReduceKind K, typename Tag>
void reduce_typed(const Tensor& x, const std::vector<bool>& mask, Tensor& y) {
  using S = typename Tag::storage;
  using C = typename Tag::compute;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloat, double, std::conditional_t<K == ReduceKind::Mean, __int128, C>>;
  Shape keep = reduced_shape(x.shape(), mask, true);
  int64_t out_n = shape_numel(keep);
  int64_t count = out_n == 0 ? 0 : x.numel() / out_n;
  std::vector<Acc> acc(static_cast<size_t>(out_n), Acc{0});
  // Accumulator strides: contiguous over the kept dims, 0 over reduced dims.
  std::vector<int64_t> st = contiguous_strides(keep);
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) st[i] = 0;
  const S* px = x.data<S>();
  if constexpr (K == ReduceKind::Max || K == ReduceKind::Min) {
    // Start from the identity of max/min (-inf/+inf, or the integer limits);
    // inference guarantees at least one element per output.
    Acc init = K == ReduceKind::Max ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
    if constexpr (kFloat) init = K == ReduceKind::Max ? -INFINITY : INFINITY;
    std::fill(acc.begin(), acc.end(), init);
    for_each_row<1>(x.shape(), {st},
                    [&](int64_t in_off, std::array<int64_t, 1> off, int64_t n, std::array<int64_t, 1> inner) {
                      Acc* a = acc.data() + off[0];
                      const S* p = px + in_off;
                      for (int64_t i = 0; i < n; ++i) {
                        Acc v = static_cast<Acc>(Tag::load(p[i]));
                        Acc& cur = a[i * inner[0]];
                        if constexpr (kFloat) {
                          if (std::isnan(v)) cur = v;
                          if (std::isnan(cur)) continue;
                        }
                        if constexpr (K == ReduceKind::Max)
                          cur = v > cur ? v : cur;
                        else
                          cur = v < cur ? v : cur;
                      }
                    });
  } else if constexpr (K == ReduceKind::Prod) {
    std::fill(acc.begin(), acc.end(), Acc{1});
    for_each_row<1>(x.shape(), {st},
                    [&](int64_t in_off, std::array<int64_t, 1> off, int64_t n, std::array<int64_t, 1> inner) {
                      Acc* a = acc.data() + off[0];
                      const S* p = px + in_off;
                      if constexpr (kFloat) {
                        for (int64_t i = 0; i < n; ++i) a[i * inner[0]] *= static_cast<Acc>(Tag::load(p[i]));
                      } else {
                        using U = std::make_unsigned_t<C>;
                        for (int64_t i = 0; i < n; ++i)
                          a[i * inner[0]] = static_cast<C>(
                              static_cast<U>(static_cast<U>(a[i * inner[0]]) * static_cast<U>(p[i])));
                      }
                    });
  } else {
    for_each_row<1>(x.shape(), {st},
                    [&](int64_t in_off, std::array<int64_t, 1> off, int64_t n, std::array<int64_t, 1> inner) {
                      Acc* a = acc.data() + off[0];
                      const S* p = px + in_off;
                      if constexpr (kFloat || K == ReduceKind::Mean) {
                        for (int64_t i = 0; i < n; ++i) a[i * inner[0]] += static_cast<Acc>(Tag::load(p[i]));
                      } else {
                        using U = std::make_unsigned_t<C>;
                        for (int64_t i = 0; i < n; ++i)
                          a[i * inner[0]] = static_cast<C>(
                              static_cast<U>(static_cast<U>(a[i * inner[0]]) + static_cast<U>(p[i])));
                      }
                    });
  }
  S* py = y.data<S>();
  for (int64_t o = 0; o < out_n; ++o) {
    Acc a = acc[static_cast<size_t>(o)];
    if constexpr (K == ReduceKind::Mean) {
      if constexpr (kFloat) {
        py[o] = Tag::store(static_cast<C>(a / static_cast<double>(count)));
      } else {
        // Round half away from zero on the exact quotient.
        __int128 q = a / count, r = a % count;
        if (2 * (r < 0 ? -r : r) >= count) q += a < 0 ? -1 : 1;
        py[o] = static_cast<S>(q);
      }
    } else {
      py[o] = Tag::store(static_cast<C>(a));
    }
  }
}

template <ReduceKind K>
void reduce_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  std::vector<bool> mask = reduced_mask(reduce_name(K), x.shape(), attrs);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (std::is_same_v<typename Tag::compute, bool>)
      KILN_ASSERT(false, "reduction on bool passed inference");
    else
      reduce_typed<K, Tag>(x, mask, out[0]);
  });
}

template <ReduceKind K>
void add_reduce(OpRegistry& r, const char* summary) {
  OpDef d;
  d.name = reduce_name(K);
  d.summary = summary;
  d.attrs = {{"axis", AttrKind::Ints, AttrValue(std::vector<int64_t>{})},
             {"keepdims", AttrKind::Int, AttrValue(int64_t{0})}};
  d.infer = reduce_infer<K>;
  d.kernel = reduce_kernel<K>;
  r.add(std::move(d));
}

// ---- softmax ----------------------------------------------------------------

template <bool kLog>
std::vector<TensorDesc> softmax_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  std::string op = kLog ? "nn.log_softmax" : "nn.softmax";
  require_dtype(op, "input x", in[0].dtype, {DType::Float32, DType::Float16});
  if (in[0].shape.empty()) throw Error(op + ": input x must have rank >= 1, got a scalar");
  normalize_axis(op, attrs.get_int("axis"), static_cast<int64_t>(in[0].shape.size()));
  return {in[0]};
}

template <bool kLog, typename Tag>
void softmax_typed(const Tensor& x, int64_t axis, Tensor& y) {
  using S = typename Tag::storage;
  AxisSplit s = split_at_axis(x.shape(), axis);
  const S* px = x.data<S>();
  S* py = y.data<S>();
  // Per outer index, work on `inner` lanes at once so reads stay contiguous.
  std::vector<double> mx(static_cast<size_t>(s.inner)), sum(static_cast<size_t>(s.inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const S* xo = px + o * s.n * s.inner;
    S* yo = py + o * s.n * s.inner;
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t k = 0; k < s.inner; ++k) {
        double v = Tag::load(xo[i * s.inner + k]);
        // NaN must win so that a NaN row gives NaN, not a silent value.
        if (v > mx[k] || std::isnan(v)) mx[k] = std::isnan(mx[k]) ? mx[k] : v;
      }
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t k = 0; k < s.inner; ++k)
        sum[k] += std::exp(double(Tag::load(xo[i * s.inner + k])) - mx[k]);
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t k = 0; k < s.inner; ++k) {
        double d = double(Tag::load(xo[i * s.inner + k])) - mx[k];
        double r = kLog ? d - std::log(sum[k]) : std::exp(d) / sum[k];
        yo[i * s.inner + k] = Tag::store(static_cast<float>(r));
      }
  }
}

template <bool kLog>
void softmax_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  int64_t axis = normalize_axis("nn.softmax", attrs.get_int("axis"), x.ndim());
  if (x.dtype() == DType::Float32) return softmax_typed<kLog, DTypeTag<DType::Float32>>(x, axis, out[0]);
  KILN_ASSERT(x.dtype() == DType::Float16, "softmax dtype passed inference");
  softmax_typed<kLog, DTypeTag<DType::Float16>>(x, axis, out[0]);
}

template <bool kLog>
void add_softmax(OpRegistry& r) {
  OpDef d;
  d.name = kLog ? "nn.log_softmax" : "nn.softmax";
  d.summary = kLog ? "log of softmax along axis, computed stably as x - max - log(sum(exp(x - max)))"
                   : "exp(x - max) / sum(exp(x - max)) along axis";
  d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{-1})}};
  d.infer = softmax_infer<kLog>;
  d.kernel = softmax_kernel<kLog>;
  r.add(std::move(d));
}

// ---- argmax / argmin --------------------------------------------------------

constexpr std::initializer_list<DType> kNumeric = kNumericDTypes;

int64_t bool_attr(const std::string& op, const Attrs& attrs, const std::string& name) {
  int64_t v = attrs.get_int(name);
  if (v != 0 && v != 1)
    throw Error(op + ": attribute '" + name + "' must be 0 or 1, got " + std::to_string(v));
  return v;
}

template <bool kMax>
std::vector<TensorDesc> arg_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  std::string op = kMax ? "argmax" : "argmin";
  const TensorDesc& x = in[0];
  require_dtype(op, "input x", x.dtype, kNumeric);
  if (x.shape.empty()) throw Error(op + ": input x must have rank >= 1, got a scalar");
  bool keepdims = bool_attr(op, attrs, "keepdims") != 0;
  bool_attr(op, attrs, "select_last_index");
  int64_t axis = normalize_axis(op, attrs.get_int("axis"), static_cast<int64_t>(x.shape.size()));
  std::vector<bool> mask(x.shape.size(), false);
  mask[static_cast<size_t>(axis)] = true;
  Shape out = reduced_shape(x.shape, mask, keepdims);
  if (x.shape[static_cast<size_t>(axis)] == 0 && shape_numel(out) > 0)
    throw Error(op + ": axis " + std::to_string(axis) + " of " + desc_str(x) +
                " is empty (no element to pick)");
  return {{out, DType::Int64}};
}

template <bool kMax>
void arg_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  int64_t axis = normalize_axis(kMax ? "argmax" : "argmin", attrs.get_int("axis"), x.ndim());
  bool last = attrs.get_int("select_last_index") != 0;
  AxisSplit s = split_at_axis(x.shape(), axis);
  int64_t* py = out[0].data<int64_t>();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    const S* px = x.data<S>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t k = 0; k < s.inner; ++k) {
        const S* p = px + o * s.n * s.inner + k;
        C best = Tag::load(p[0]);
        int64_t at = 0;
        for (int64_t i = 1; i < s.n; ++i) {
          C v = Tag::load(p[i * s.inner]);
          bool take = false;
          if constexpr (std::is_floating_point_v<C>) {
            // A NaN beats every number; among NaNs the first (or last) wins.
            if (std::isnan(best))
              take = last && std::isnan(v);
            else if (std::isnan(v))
              take = true;
            else
              take = (kMax ? v > best : v < best) || (last && v == best);
          } else {
            take = (kMax ? v > best : v < best) || (last && v == best);
          }
          if (take) {
            best = v;
            at = i;
          }
        }
        py[o * s.inner + k] = at;
      }
  });
}

template <bool kMax>
void add_arg(OpRegistry& r) {
  OpDef d;
  d.name = kMax ? "argmax" : "argmin";
  d.summary = kMax ? "int64 index of the maximum along axis (first on ties; NaN wins)"
                   : "int64 index of the minimum along axis (first on ties; NaN wins)";
  d.attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{0})},
             {"keepdims", AttrKind::Int, AttrValue(int64_t{0})},
             {"select_last_index", AttrKind::Int, AttrValue(int64_t{0})}};
  d.infer = arg_infer<kMax>;
  d.kernel = arg_kernel<kMax>;
  r.add(std::move(d));
}

// ---- cumsum -------------------------------------------------------------------

std::vector<TensorDesc> cumsum_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "cumsum";
  require_dtype(op, "input x", in[0].dtype, kNumeric);
  if (in[0].shape.empty()) throw Error(op + ": input x must have rank >= 1, got a scalar");
  normalize_axis(op, attrs.get_int("axis"), static_cast<int64_t>(in[0].shape.size()));
  bool_attr(op, attrs, "exclusive");
  bool_attr(op, attrs, "reverse");
  return {in[0]};
}

void cumsum_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  AxisSplit s = split_at_axis(x.shape(), normalize_axis("cumsum", attrs.get_int("axis"), x.ndim()));
  bool exclusive = attrs.get_int("exclusive") != 0, reverse = attrs.get_int("reverse") != 0;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    if constexpr (std::is_same_v<C, bool>) {
      KILN_ASSERT(false, "cumsum on bool passed inference");
    } else {
      // Unsigned for integers so that sums wrap without undefined behaviour.
      using Acc = typename std::conditional_t<std::is_floating_point_v<C>, std::type_identity<double>,
                                              std::make_unsigned<C>>::type;
      const S* px = x.data<S>();
      S* py = out[0].data<S>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.inner; ++k) {
          Acc acc = 0;
          for (int64_t j = 0; j < s.n; ++j) {
            int64_t i = reverse ? s.n - 1 - j : j;
            int64_t at = (o * s.n + i) * s.inner + k;
            Acc v = static_cast<Acc>(Tag::load(px[at]));
            if (!exclusive) acc = static_cast<Acc>(acc + v);
            py[at] = Tag::store(static_cast<C>(acc));
            if (exclusive) acc = static_cast<Acc>(acc + v);
          }
        }
    }
  });
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  add_reduce<ReduceKind::Sum>(r, "sum over axes (empty = all); float accumulates in double");
  add_reduce<ReduceKind::Mean>(r, "mean over axes (empty = all); int rounds half away from zero");
  add_reduce<ReduceKind::Max>(r, "maximum over axes (empty = all); NaN propagates");
  add_reduce<ReduceKind::Min>(r, "minimum over axes (empty = all); NaN propagates");
  add_reduce<ReduceKind::Prod>(r, "product over axes (empty = all); float multiplies in double");
  add_softmax<false>(r);
  add_softmax<true>(r);
  add_arg<true>(r);
  add_arg<false>(r);
  r.add({"cumsum",
         "running sum along axis; exclusive leaves the element out, reverse sums from the end",
         1,
         1,
         {{"axis", AttrKind::Int, AttrValue(int64_t{0})},
          {"exclusive", AttrKind::Int, AttrValue(int64_t{0})},
          {"reverse", AttrKind::Int, AttrValue(int64_t{0})}},
         false,
         cumsum_infer,
         cumsum_kernel});
}

}  // namespace kiln
