// topk as an extern statement (te::extern_compute): the indices of each
// row's k best elements, kept sorted as the row is read, and the values
// gathered from them.
//
//   topk(x: (o, n, i), k, axis=1)  =>  for each row (o, i), for j in 0..n-1:
//                                        if fewer than k are kept, or x[j] ranks before the last kept:
//                                          insert j at its place, moving worse ones back (the last drops)
//                                      values[o, r, i] = x[o, indices[o, r, i], i]
//
// The order is the reference kernel's (src/op/sort.cc): the larger (or
// smaller) value first, NaN above every number, equal values by ascending
// index; an element read later never moves ahead of an equal one, so the
// insertion is stable. O(n k) per row: instances of more than
// kMaxComparisons stay on the reference kernel's partial sort.
#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

// Rows times positions times kept indices beyond which the insertion costs
// more than the reference kernel's partial sort is worth leaving.
constexpr int64_t kMaxComparisons = int64_t(1) << 26;

// Whether v (read later) ranks before w (kept already, a lower index).
Expr ranks_before(const Expr& v, const Expr& w, bool largest) {
  if (!v->dtype.is_float()) return largest ? tir::binary(tir::BinaryOp::GT, v, w) : tir::lt(v, w);
  const Expr nan_v = tir::binary(tir::BinaryOp::NE, v, v), nan_w = tir::binary(tir::BinaryOp::NE, w, w);
  if (largest)  // w is not NaN, and v is NaN or larger
    return tir::binary(tir::BinaryOp::And, tir::logical_not(nan_w),
                       tir::binary(tir::BinaryOp::Or, nan_v, tir::binary(tir::BinaryOp::GT, v, w)));
  // v is not NaN, and w is NaN or v smaller
  return tir::binary(tir::BinaryOp::And, tir::logical_not(nan_v),
                     tir::binary(tir::BinaryOp::Or, nan_w, tir::lt(v, w)));
}

Lowered topk(const LowerContext& c) {
  const Shape& xs = c.in[0].shape;
  const size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), xs.size()));
  const int64_t k = c.attrs.get_int("k"), n = xs[axis];
  const bool largest = c.attrs.get_int("largest") != 0;
  int64_t rows = 1;
  for (size_t d = 0; d < xs.size(); ++d) rows *= d == axis ? 1 : xs[d];
  if (k == 0) return unsupported("k = 0 (empty outputs)");
  if (rows * n * k > kMaxComparisons)
    return unsupported(
        "topk of " + std::to_string(k) + " in " + std::to_string(n) +
        " over many rows: the insertion's comparisons exceed the reference kernel's partial sort");
  const Shape outer(xs.begin(), xs.begin() + std::ptrdiff_t(axis));
  const Shape inner(xs.begin() + std::ptrdiff_t(axis) + 1, xs.end());
  const tir::DataType i32 = tir::DataType::int32(), i64 = tir::DataType::int64();
  const std::string name = c.name;
  auto body = [=](const std::vector<tir::Buffer>& in, const tir::Buffer& indices) {
    const tir::Buffer& x = in[0];
    // Kept so far in this row; whether the element being placed still moves.
    tir::Buffer kept = tir::make_buffer(name + "_kept", i32, {tir::int_imm(1)}, tir::MemoryScope::Local);
    tir::Buffer moving = tir::make_buffer(name + "_moving", i32, {tir::int_imm(1)}, tir::MemoryScope::Local);
    const Expr zero = tir::int_imm(0), one = tir::int_imm(1);
    tir::Stmt rows_loop = loop_nest(outer, "o", [&](const std::vector<Expr>& o) {
      return loop_nest(inner, "i", [&](const std::vector<Expr>& i) {
        // The row's element at `position` of the axis (x's, or a rank of indices).
        auto at = [&](const Expr& position) {
          std::vector<Expr> idx = o;
          idx.push_back(position);
          idx.insert(idx.end(), i.begin(), i.end());
          return idx;
        };
        auto index_at = [&](const Expr& rank) { return tir::load(indices, at(rank)); };
        auto value_at = [&](const Expr& rank) { return tir::load(x, at(tir::cast(i32, index_at(rank)))); };
        tir::Var j = tir::make_var("j"), q = tir::make_var("q"), start = tir::make_var("start"),
                 p = tir::make_var("p");
        const Expr v = tir::load(x, at(j));
        const Expr count = tir::load(kept, {zero});
        const Expr full = tir::binary(tir::BinaryOp::GE, count, tir::int_imm(k));
        const Expr still = tir::eq(tir::load(moving, {zero}), one);
        const Expr previous = tir::sub(p, one);
        // Walking back from `start` (the first free rank, or the last, whose
        // index drops out): rank p = start - q takes the index at p - 1
        // while v ranks before its value, else v's own.
        tir::Stmt step = tir::let_stmt(
            p, tir::sub(start, q),
            tir::if_then_else(
                tir::binary(tir::BinaryOp::And, still, ranks_before(v, value_at(previous), largest)),
                tir::store(indices, at(p), index_at(previous)),
                tir::if_then_else(still, tir::seq({tir::store(indices, at(p), tir::cast(i64, j)),
                                                   tir::store(moving, {zero}, zero)}))));
        tir::Stmt place = tir::let_stmt(
            start, tir::select(full, tir::int_imm(k - 1), count),
            tir::seq(
                {tir::store(moving, {zero}, one), tir::for_loop(q, zero, start, tir::ForKind::Serial, step),
                 // Still moving at rank 0: v ranks first.
                 tir::if_then_else(still, tir::store(indices, at(zero), tir::cast(i64, j))),
                 tir::if_then_else(tir::logical_not(full), tir::store(kept, {zero}, tir::add(count, one)))}));
        // It enters while fewer than k are kept, else when it ranks before
        // the last kept (read only then: the ranks past the count hold
        // nothing yet).
        tir::Stmt enters = tir::if_then_else(
            full,
            tir::store(moving, {zero},
                       tir::select(ranks_before(v, value_at(tir::int_imm(k - 1)), largest), one, zero)),
            tir::store(moving, {zero}, one));
        return tir::seq({tir::store(kept, {zero}, zero),
                         tir::for_loop(j, zero, tir::int_imm(n), tir::ForKind::Serial,
                                       tir::seq({enters, tir::if_then_else(still, place)}))});
      });
    });
    return tir::allocate(kept, tir::allocate(moving, rows_loop));
  };
  Shape out = xs;
  out[axis] = k;
  te::Tensor indices = te::extern_compute(out, i64, {c.inputs[0]}, body, c.name + "_indices");
  const te::Tensor& x = c.inputs[0];
  te::Tensor values = te::compute(
      out,
      [&](const te::Axes& a) {
        std::vector<Expr> from(a.begin(), a.end());
        from[axis] = tir::cast(a[axis]->dtype, (*indices)(a));
        return (*x)(from);
      },
      c.name + "_values");
  return lowered({values, indices});
}

}  // namespace

void register_sort_lowerings(LoweringTable& t) { t.add("topk", OpPattern::Opaque, topk); }

}  // namespace kiln::lower
