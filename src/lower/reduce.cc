// Reductions as tensor expressions: sum, mean, max, min, prod over axes,
// nn.softmax / nn.log_softmax and argmax / argmin over one axis.
//
//   mean(x: (2, 3, 4), axis=[2])  =>  s[i, j] = sum over r of float64(x[i, j, r])
//                                     y[i, j] = float32(s[i, j] / 4)
//
// As in the reference kernels (src/op/reduce.cc): float sums accumulate in
// float64 and round once; max and min keep NaN; softmax subtracts the
// maximum before exp; integer means round half away from zero. Means of
// int64 and sums and products of 8-bit integers stay on the reference
// kernels.
#include <cmath>
#include <limits>

#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

// The reduced axes of `rank` dims (empty attribute: all).
std::vector<bool> reduced_axes(const Attrs& attrs, size_t rank) {
  std::vector<int64_t> axes = attrs.get_ints("axis");
  std::vector<bool> mask(rank, axes.empty());
  for (int64_t a : axes) mask[size_t(norm_axis(a, rank))] = true;
  return mask;
}

// The input index for output axes `i` and reduce variables `r` (in order of
// the reduced dims).
std::vector<Expr> input_index(const te::Axes& i, const std::vector<te::IterVar>& r,
                              const std::vector<bool>& mask, bool keepdims) {
  std::vector<Expr> idx;
  size_t oi = 0, ri = 0;
  for (size_t k = 0; k < mask.size(); ++k) {
    if (mask[k]) {
      idx.push_back(r[ri++].var);
      if (keepdims) ++oi;
    } else {
      idx.push_back(i[oi++]);
    }
  }
  return idx;
}

struct ReduceSetup {
  std::vector<bool> mask;
  bool keepdims;
  std::vector<te::IterVar> axes;
  int64_t count = 1;  // elements reduced per output
};

ReduceSetup setup(const LowerContext& c) {
  ReduceSetup s;
  const Shape& xs = c.in[0].shape;
  s.mask = reduced_axes(c.attrs, xs.size());
  s.keepdims = c.attrs.get_int("keepdims") != 0;
  for (size_t k = 0; k < xs.size(); ++k)
    if (s.mask[k]) {
      s.axes.push_back(te::reduce_axis(xs[k], "r" + std::to_string(k)));
      s.count *= xs[k];
    }
  return s;
}

// Partial results of a long last axis: 16 (two float32 AVX-512 vectors)
// from 64 elements, 8 from 32, each over every P-th element, so that the
// loop over the axis runs on vectors of partials (rec's attention over 40
// positions: one reduction loop of 5 vector steps instead of 40 scalar
// exps; a 128 x 768 mean: 16 float64 additions in flight instead of one
// chain of 768), then the partials are reduced.
int64_t last_axis_partials(int64_t length) { return length >= 64 ? 16 : length >= 32 ? 8 : 0; }

// The partials a float reduction over the last axis alone reduces into
// (last_axis_partials), else 0.
int64_t partials_of(const LowerContext& c, const ReduceSetup& s) {
  const Shape& xs = c.in[0].shape;
  if (!c.inputs[0]->dtype.is_float() || s.axes.size() != 1 || !s.mask.back()) return 0;
  return last_axis_partials(xs.back());
}

// Lane i.back() of a partial at `step`: term(the element at step * P +
// i.back() of the last axis, of length L, its index clamped), or `pad` past
// the end.
template <typename F>
Expr partial_lane(const te::Axes& i, const Expr& step, int64_t P, int64_t L, F&& term, const Expr& pad) {
  Expr at = tir::add(tir::mul(step, tir::int_imm(P)), i.back());
  std::vector<Expr> idx(i.begin(), i.end());
  idx.back() = clamp_index(at, L);
  return tir::select(tir::lt(at, tir::int_imm(L)), term(idx), pad);
}

// The partial `r` of output element i: the last axis's index (kept with
// keepdims) becomes r, or r is appended.
std::vector<Expr> partial_index(const te::Axes& i, const te::IterVar& r, bool keepdims) {
  std::vector<Expr> idx(i.begin(), i.end());
  if (keepdims)
    idx.back() = r.var;
  else
    idx.push_back(r.var);
  return idx;
}

// Whether a float reduction over several axes reduces the trailing ones of
// x, the last of 8 elements or more: then it first reduces rows into
// columns (one reduction per element of the last axis, its loop over the
// other reduced axes, so the inner loop runs along rows in vectors), then
// the columns. A mean over a 106 x 122 plane was one chain of 12,932
// dependent float64 additions per output (103 -> 7 us; a max 216 -> 13 us
// over 64 planes of 56 x 56).
bool reduces_trailing_rows(const LowerContext& c, const ReduceSetup& s) {
  const Shape& xs = c.in[0].shape;
  if (!c.inputs[0]->dtype.is_float() || s.axes.size() < 2 || xs.back() < 8) return false;
  const size_t lead = xs.size() - s.axes.size();
  for (size_t k = 0; k < xs.size(); ++k)
    if (s.mask[k] != (k >= lead)) return false;
  return true;
}

// The columns of x's trailing reduced axes: (lead dims..., last axis),
// element [l..., w] the reduction over the other reduced axes (s.axes but
// the last) at column w; `term` maps an element of x, `reduce` is te::sum
// or te::max.
template <typename F, typename R>
te::Tensor trailing_columns(const LowerContext& c, const ReduceSetup& s, F&& term, R&& reduce,
                            const std::string& name) {
  const Shape& xs = c.in[0].shape;
  const size_t lead = xs.size() - s.axes.size();
  Shape cs(xs.begin(), xs.begin() + std::ptrdiff_t(lead));
  cs.push_back(xs.back());
  std::vector<te::IterVar> rows(s.axes.begin(), s.axes.end() - 1);
  return te::compute(
      cs,
      [&](const te::Axes& i) -> te::Reduction {
        std::vector<Expr> idx(i.begin(), i.end() - 1);
        for (const te::IterVar& r : rows) idx.push_back(r.var);
        idx.push_back(i.back());
        return reduce(term(idx), rows);
      },
      name);
}

// Output element i's reduction of its row of a (lead dims..., L) operand
// whose element at idx is term(idx) (x over its last axis, or
// trailing_columns' columns): in P partials when the row is long
// (last_axis_partials, named `partial_name`), so that the loop over it runs
// on vectors of them rather than one chain of scalars (56 columns of 64
// channels: a third of a max over 64 x 56 x 56), then theirs; `reduce` is
// te::sum or te::max, `pad` its identity. The stages it makes are appended
// to `stages`.
template <typename F, typename R>
te::Tensor reduce_rows(const LowerContext& c, const Shape& operand, F&& term, R&& reduce, const Expr& pad,
                       const std::string& partial_name, const std::string& name,
                       std::vector<te::Tensor>& stages) {
  const int64_t L = operand.back();
  const size_t lead = operand.size() - 1;
  // With or without keepdims, an output's lead indices come first.
  auto row = [&](const te::Axes& i, const te::IterVar& r) {
    std::vector<Expr> idx(i.begin(), i.begin() + std::ptrdiff_t(lead));
    idx.push_back(r.var);
    return idx;
  };
  const int64_t P = last_axis_partials(L);
  if (P == 0) {
    te::IterVar rw = te::reduce_axis(L, "rw");
    stages.push_back(te::compute(
        c.out[0].shape, [&](const te::Axes& i) -> te::Reduction { return reduce(term(row(i, rw)), {rw}); },
        name));
    return stages.back();
  }
  Shape ps = operand;
  ps.back() = P;
  te::IterVar ro = te::reduce_axis((L + P - 1) / P, "ro"), rp = te::reduce_axis(P, "rp");
  te::Tensor partial = te::compute(
      ps,
      [&](const te::Axes& i) -> te::Reduction {
        return reduce(partial_lane(i, ro.var, P, L, term, pad), {ro});
      },
      partial_name);
  stages.push_back(partial);
  stages.push_back(te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction { return reduce((*partial)(row(i, rp)), {rp}); }, name));
  return stages.back();
}

// `r` with its output `y` computed row by row (schedule::RowTile) when
// `stages` reduce it in steps: each row's partials, columns and total
// stay in L1 and every step runs in the one parallel loop over rows,
// where the last steps ran serially, each its own loop over every row.
Lowered by_rows(Lowered r, const LowerContext& c, const te::Tensor& y, std::vector<te::Tensor> stages) {
  if (c.cpu.scratchpad_bytes || stages.empty() || c.out[0].shape.empty()) return r;
  r.rows.push_back(schedule::RowTile{y, std::move(stages), true});
  return r;
}

// The int64 quotient sum / count (count > 0) rounded half away from zero:
// the truncated quotient, one step away from zero when twice the
// remainder's magnitude reaches count.
Expr rounded_quotient(const Expr& sum, int64_t count) {
  const tir::DataType i64 = tir::DataType::int64();
  const Expr n = tir::int_imm(count, i64);
  Expr q = tir::div(sum, n), r = tir::mod(sum, n);
  Expr magnitude = tir::select(tir::lt(r, tir::int_imm(0, i64)), tir::sub(tir::int_imm(0, i64), r), r);
  Expr away = tir::select(tir::lt(sum, tir::int_imm(0, i64)), tir::int_imm(-1, i64), tir::int_imm(1, i64));
  return tir::select(tir::binary(tir::BinaryOp::GE, tir::mul(magnitude, tir::int_imm(2, i64)), n),
                     tir::add(q, away), q);
}

// sum (or mean) of x: floats in float64.
Lowered sum_or_mean(const LowerContext& c, bool mean) {
  const te::Tensor& x = c.inputs[0];
  tir::DataType t = x->dtype;
  // An integer mean sums exactly in int64 (int32 elements; the reference
  // sums int64 in 128 bits) and rounds half away from zero.
  const bool int_mean = mean && !t.is_float();
  if (int_mean && t.bits > 32) return unsupported("mean of " + tir::dtype_str(t) + " (sums beyond 64 bits)");
  if (!t.is_float() && t.bits < 32 && !int_mean) return unsupported("sum of " + tir::dtype_str(t));
  ReduceSetup s = setup(c);
  if (s.count == 0 && mean) return unsupported("mean of zero elements");
  tir::DataType acc = t.is_float() ? tir::DataType::float_(64) : int_mean ? tir::DataType::int64() : t;
  te::Tensor sum;
  std::vector<te::Tensor> stages;
  auto term = [&](const std::vector<Expr>& idx) { return tir::cast(acc, (*x)(idx)); };
  if (partials_of(c, s)) {
    // Over the last axis alone: partial sums (lanes past the end add 0),
    // then their sum.
    sum = reduce_rows(c, c.in[0].shape, term, te::sum, constant(0, acc), c.name + "_partial_sum",
                      c.name + "_acc", stages);
  } else if (reduces_trailing_rows(c, s)) {
    te::Tensor columns = trailing_columns(c, s, term, te::sum, c.name + "_columns");
    stages.push_back(columns);
    auto column = [&](const std::vector<Expr>& idx) { return (*columns)(idx); };
    sum = reduce_rows(c, columns->shape, column, te::sum, constant(0, acc), c.name + "_acc_partial",
                      c.name + "_acc", stages);
  } else {
    sum = te::compute(
        c.out[0].shape,
        [&](const te::Axes& i) -> te::Reduction {
          return te::sum(term(input_index(i, s.axes, s.mask, s.keepdims)), s.axes);
        },
        c.name + "_acc");
  }
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        Expr v = (*sum)(i);
        if (int_mean) return tir::cast(t, rounded_quotient(v, s.count));
        if (mean) v = tir::div(v, constant(double(s.count), acc));
        return tir::cast(t, v);
      },
      c.name);
  return by_rows(lowered({y}), c, y, stages);
}

Lowered sum(const LowerContext& c) { return sum_or_mean(c, false); }
Lowered mean(const LowerContext& c) { return sum_or_mean(c, true); }

// max (or min, as -max(-x) or ~max(~x)); NaN wins (te::nan_max: one pass
// over x, where a maximum and a count of NaNs were two).
Lowered max_or_min(const LowerContext& c, bool is_min) {
  const te::Tensor& x = c.inputs[0];
  tir::DataType t = x->dtype;
  ReduceSetup s = setup(c);
  if (s.count == 0) return unsupported("max or min of zero elements");
  auto reduce = [&](Expr v, std::vector<te::IterVar> axes) {
    return t.is_float() ? te::nan_max(std::move(v), std::move(axes)) : te::max(std::move(v), std::move(axes));
  };
  // min is -max(-x) for floats, ~max(~x) for integers (~x = -1 - x,
  // which reverses their order and never overflows).
  const Expr flip = constant(t.is_float() ? 0 : -1, t);
  auto element = [&](const std::vector<Expr>& idx) { return is_min ? tir::sub(flip, (*x)(idx)) : (*x)(idx); };
  // The partials' padding (float reductions only).
  const Expr minus_inf = t.is_float() ? constant(-std::numeric_limits<double>::infinity(), t) : Expr();
  te::Tensor m;
  std::vector<te::Tensor> stages;
  // Reduced in steps and computed by rows (by_rows), the maximum is a stage
  // too and the output a copy of it: a row's output has no reduce loops.
  const bool copied =
      !is_min && !c.cpu.scratchpad_bytes && (partials_of(c, s) || reduces_trailing_rows(c, s));
  const std::string name = is_min || copied ? c.name + "_max" : c.name;
  if (partials_of(c, s)) {
    // Over the last axis alone: partial maxima (lanes past the end give
    // -inf), then theirs.
    m = reduce_rows(c, c.in[0].shape, element, reduce, minus_inf, c.name + "_partial_max", name, stages);
  } else if (reduces_trailing_rows(c, s)) {
    // Columns of maxima, then theirs.
    te::Tensor cm = trailing_columns(c, s, element, reduce, c.name + "_column_max");
    stages.push_back(cm);
    auto column = [&](const std::vector<Expr>& idx) { return (*cm)(idx); };
    m = reduce_rows(c, cm->shape, column, reduce, minus_inf, name + "_partial", name, stages);
  } else {
    m = te::compute(
        c.out[0].shape,
        [&](const te::Axes& i) -> te::Reduction {
          return reduce(element(input_index(i, s.axes, s.mask, s.keepdims)), s.axes);
        },
        name);
  }
  if (!is_min && !copied) return lowered({m});
  if (copied) stages.push_back(m);
  te::Tensor y = te::compute(
      c.out[0].shape, [&](const te::Axes& i) { return is_min ? tir::sub(flip, (*m)(i)) : (*m)(i); }, c.name);
  return by_rows(lowered({y}), c, y, stages);
}

Lowered max(const LowerContext& c) { return max_or_min(c, false); }
Lowered min(const LowerContext& c) { return max_or_min(c, true); }

// prod: floats multiply in float64 and round once, integers of 32 and 64
// bits wrap in their type, as in the reference kernel.
Lowered prod(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const tir::DataType t = x->dtype;
  if (!t.is_float() && t.bits < 32) return unsupported("prod of " + tir::dtype_str(t));
  ReduceSetup s = setup(c);
  if (s.count == 0) return unsupported("product of zero elements");
  const tir::DataType acc = t.is_float() ? tir::DataType::float_(64) : t;
  te::Tensor p = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        return te::prod(tir::cast(acc, (*x)(input_index(i, s.axes, s.mask, s.keepdims))), s.axes);
      },
      acc == t ? c.name : c.name + "_acc");
  if (acc == t) return lowered({p});
  te::Tensor y = te::compute(
      c.out[0].shape, [&](const te::Axes& i) { return tir::cast(t, (*p)(i)); }, c.name);
  return lowered({y});
}

// ---------------------------------------------------------------- softmax

Lowered softmax_impl(const LowerContext& c, bool log) {
  const te::Tensor& x = c.inputs[0];
  tir::DataType t = x->dtype;
  if (!t.is_float()) return unsupported("softmax of integers");
  const Shape& xs = c.in[0].shape;
  size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), xs.size()));
  if (xs[axis] == 0) return unsupported("softmax over an empty axis");
  tir::DataType f64 = tir::DataType::float_(64);
  Shape rs = xs;
  rs[axis] = 1;
  te::IterVar ra = te::reduce_axis(xs[axis], "ra"), rb = te::reduce_axis(xs[axis], "rb");
  auto along = [&](const te::Axes& i, const Expr& r) {
    std::vector<Expr> idx(i.begin(), i.end());
    idx[axis] = r;
    return idx;
  };
  te::Tensor m, s, e, pm, psum;
  const int64_t L = xs[axis];
  if (axis + 1 == xs.size() && last_axis_partials(L) > 0) {
    // A long last axis (a classifier's 6625 classes): P partial maxima and
    // sums, each over every P-th element, so the loops over the axis run on
    // vectors of partials; then the partials are reduced. Lanes past the
    // end read a clamped index and contribute -inf to the maximum and 0 to
    // the sum.
    const int64_t P = last_axis_partials(L), steps = (L + P - 1) / P;
    Shape ps = rs;
    ps.back() = P;
    te::IterVar ro = te::reduce_axis(steps, "ro"), so = te::reduce_axis(steps, "so");
    te::IterVar rp = te::reduce_axis(P, "rp"), sp = te::reduce_axis(P, "sp");
    auto load = [&](const std::vector<Expr>& idx) { return (*x)(idx); };
    pm = te::compute(
        ps,
        [&](const te::Axes& i) -> te::Reduction {
          return te::max(
              partial_lane(i, ro.var, P, L, load, constant(-std::numeric_limits<double>::infinity(), t)),
              {ro});
        },
        c.name + "_partial_max");
    m = te::compute(
        rs,
        [&](const te::Axes& i) -> te::Reduction { return te::max((*pm)(partial_index(i, rp, true)), {rp}); },
        c.name + "_max");
    // softmax computes each exp once, into a buffer that the sum and the
    // output read (a second exp per element was a third of a 40 x 6625
    // softmax); log_softmax sums the exps without keeping them.
    if (!log)
      e = te::compute(
          xs,
          [&](const te::Axes& i) {
            std::vector<Expr> mi(i.begin(), i.end());
            mi.back() = tir::int_imm(0);
            return tir::call_intrinsic(tir::Intrinsic::Exp, {tir::sub((*x)(i), (*m)(mi))});
          },
          c.name + "_exp");
    psum = te::compute(
        ps,
        [&](const te::Axes& i) -> te::Reduction {
          std::vector<Expr> mi(i.begin(), i.end());
          mi.back() = tir::int_imm(0);
          auto term = [&](const std::vector<Expr>& idx) {
            if (e) return tir::cast(f64, (*e)(idx));
            Expr d = tir::sub((*x)(idx), (*m)(mi));
            return tir::cast(f64, tir::call_intrinsic(tir::Intrinsic::Exp, {d}));
          };
          return te::sum(partial_lane(i, so.var, P, L, term, constant(0, f64)), {so});
        },
        c.name + "_partial_sum");
    s = te::compute(
        rs,
        [&](const te::Axes& i) -> te::Reduction {
          return te::sum((*psum)(partial_index(i, sp, true)), {sp});
        },
        c.name + "_sum");
  } else {
    m = te::compute(
        rs, [&](const te::Axes& i) -> te::Reduction { return te::max((*x)(along(i, ra.var)), {ra}); },
        c.name + "_max");
    s = te::compute(
        rs,
        [&](const te::Axes& i) -> te::Reduction {
          Expr d = tir::sub((*x)(along(i, rb.var)), (*m)(i));
          return te::sum(tir::cast(f64, tir::call_intrinsic(tir::Intrinsic::Exp, {d})), {rb});
        },
        c.name + "_sum");
  }
  // softmax multiplies by the sum's reciprocal, computed once per row in
  // float64 and rounded: a float64 division per element (and the casts
  // around it) made a 40 x 6625 softmax 2.6x slower than oneDNN's. The
  // result is within two float32 ulps of the reference's rounded quotient.
  // A DSP (a scratchpad target: Hexagon) has no float64 division, and
  // kiln's Hexagon runtime no __hexagon_divdf3: there the sum is rounded to
  // float32 first and the reciprocal taken in float32 (within a few ulps).
  te::Tensor inv;
  if (!log)
    inv = te::compute(
        rs,
        [&](const te::Axes& i) {
          if (c.cpu.scratchpad_bytes) return tir::div(constant(1.0, t), tir::cast(t, (*s)(i)));
          return tir::cast(t, tir::div(constant(1.0, f64), (*s)(i)));
        },
        c.name + "_reciprocal");
  te::Tensor y = te::compute(
      xs,
      [&](const te::Axes& i) {
        std::vector<Expr> ri(i.begin(), i.end());
        ri[axis] = tir::int_imm(0);
        Expr d = tir::sub((*x)(i), (*m)(ri));
        if (log) return tir::sub(d, tir::cast(t, tir::call_intrinsic(tir::Intrinsic::Log, {(*s)(ri)})));
        return tir::mul(e ? (*e)(i) : tir::call_intrinsic(tir::Intrinsic::Exp, {d}), (*inv)(ri));
      },
      c.name);
  Lowered r = log ? lowered({y}) : e ? lowered({y}, {inv, e}) : lowered({y}, {inv});
  // Over the last axis, row by row (schedule::RowTile): a row's maximum,
  // exponentials and sum stay in L1 (40 x 6625: four passes over 1 MB, each
  // its own parallel loop, before).
  if (axis + 1 == xs.size() && !c.cpu.scratchpad_bytes) {
    schedule::RowTile row{y, {}};
    for (const te::Tensor& t : {pm, m, e, psum, s, inv})
      if (t) row.stages.push_back(t);
    r.rows.push_back(row);
  }
  return r;
}

Lowered softmax(const LowerContext& c) { return softmax_impl(c, false); }
Lowered log_softmax(const LowerContext& c) { return softmax_impl(c, true); }

// ---------------------------------------------------------------- argmax

// argmax (argmin) in two passes over the axis, as the reference picks:
// the maximum m (NaN wins; argmin maximizes -x or ~x), then the first (or, with
// select_last_index, the last) position holding it, a NaN matching a NaN
// maximum. The position is a maximum too: of -r (first) or r (last) where
// the element matches, else of -n or -1.
Lowered arg_max_or_min(const LowerContext& c, bool is_min) {
  const te::Tensor& x = c.inputs[0];
  const tir::DataType t = x->dtype, i64 = tir::DataType::int64();
  const Shape& xs = c.in[0].shape;
  const size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), xs.size()));
  const bool keepdims = c.attrs.get_int("keepdims") != 0, last = c.attrs.get_int("select_last_index") != 0;
  const int64_t n = xs[axis];
  if (n == 0) return unsupported("argmax or argmin over an empty axis");
  // argmin maximizes -x for floats, -1 - x (bitwise not: never overflows)
  // for integers.
  auto element = [&](std::vector<Expr> idx) {
    Expr e = (*x)(idx);
    return !is_min ? e : tir::sub(constant(t.is_float() ? 0 : -1, t), e);
  };
  auto along = [&](const te::Axes& i, const Expr& r) {
    std::vector<Expr> idx(i.begin(), i.end());
    if (keepdims)
      idx[axis] = r;
    else
      idx.insert(idx.begin() + std::ptrdiff_t(axis), r);
    return idx;
  };
  te::IterVar ra = te::reduce_axis(n, "ra"), rb = te::reduce_axis(n, "rb");
  te::Tensor m = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        Expr e = element(along(i, ra.var));
        return t.is_float() ? te::nan_max(e, {ra}) : te::max(e, {ra});
      },
      c.name + "_value");
  te::Tensor at = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        Expr e = element(along(i, rb.var));
        Expr match = tir::eq(e, (*m)(std::vector<Expr>(i.begin(), i.end())));
        if (t.is_float()) match = tir::binary(tir::BinaryOp::Or, match, tir::binary(tir::BinaryOp::NE, e, e));
        Expr r = tir::cast(i64, rb.var);
        Expr position = last ? r : tir::sub(tir::int_imm(0, i64), r);
        return te::max(tir::select(match, position, tir::int_imm(last ? -1 : -n, i64)), {rb});
      },
      c.name + (last ? "" : "_negated"));
  if (last) return lowered({at});
  te::Tensor y = te::compute(
      c.out[0].shape, [&](const te::Axes& i) { return tir::sub(tir::int_imm(0, i64), (*at)(i)); }, c.name);
  return lowered({y});
}

Lowered argmax(const LowerContext& c) { return arg_max_or_min(c, false); }
Lowered argmin(const LowerContext& c) { return arg_max_or_min(c, true); }

}  // namespace

void register_reduce_lowerings(LoweringTable& t) {
  t.add("sum", OpPattern::Reduction, sum, Dtypes::Any);
  t.add("mean", OpPattern::Reduction, mean, Dtypes::Any);
  t.add("max", OpPattern::Reduction, max, Dtypes::Any);
  t.add("min", OpPattern::Reduction, min, Dtypes::Any);
  t.add("prod", OpPattern::Reduction, prod, Dtypes::Any);
  t.add("nn.softmax", OpPattern::Reduction, softmax);
  t.add("nn.log_softmax", OpPattern::Reduction, log_softmax);
  t.add("argmax", OpPattern::Reduction, argmax);
  t.add("argmin", OpPattern::Reduction, argmin);
}

}  // namespace kiln::lower
