// A 3x3 stride-1 conv2d by Winograd's minimal filtering F(2, 3) along the
// output rows: each pair of output rows takes 4 products per input channel
// and kernel column instead of 6, so the multiply-adds drop by a third while
// the columns stay contiguous for the vector lanes (a 2-D F(2x2, 3x3) would
// interleave them).
//
// For output rows 2t and 2t + 1, the kernel's rows g0..g2 and the padded
// input rows d0..d3 from row 2t:
//
//   m0 = (d0 - d2) g0           m1 = (d1 + d2) (g0 + g1 + g2) / 2
//   m3 = (d1 - d3) g2           m2 = (d2 - d1) (g0 - g1 + g2) / 2
//   y[2t] = m0 + m1 + m2        y[2t + 1] = m1 - m2 - m3
//
// which is exact in real arithmetic. As tensor expressions:
//
//   u[k, c, a, rx]     = the kernel's transformed rows (the g factors above)
//   v[n, c, t, a, j]   = the transformed input rows (the d factors), zero
//                        outside the input
//   m[n, k, t, a, j]   = sum over c, rx of u[k, c, a, rx] * v[n, c, t, a, j + rx]
//   y[n, k, h, j]      = m0 + m1 + m2 (h even), m1 - m2 - m3 (h odd) at t = h / 2
//
// m is register-tiled like a direct conv (rows: output channels, columns:
// output columns), with v as its window, computed per band of row pairs.
#include "lower/lower.h"
#include "op/nn_internal.h"

namespace kiln::lower {

using tir::Expr;

namespace {

Expr half(const Expr& e) { return tir::mul(e, tir::float_imm(0.5, tir::DataType::float32())); }

// select(a == 0, e0, a == 1, e1, a == 2, e2, e3): with `a` unrolled the
// conditions are constants and simplify to one term.
Expr by_phase(const Expr& a, const Expr& e0, const Expr& e1, const Expr& e2, const Expr& e3) {
  auto is = [&](int64_t k) { return tir::eq(a, tir::int_imm(k)); };
  return tir::select(is(0), e0, tir::select(is(1), e1, tir::select(is(2), e2, e3)));
}

}  // namespace

bool winograd_rows_applies(const LowerContext& c, const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilation, int64_t groups) {
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape;
  return !c.cpu.scratchpad_bytes && groups == 1 && xs.size() == 4 && ws.size() == 4 && ws[2] == 3 &&
         ws[3] == 3 && strides == std::vector<int64_t>{1, 1} && dilation == std::vector<int64_t>{1, 1} &&
         c.in[0].dtype == DType::Float32 && c.in[1].dtype == DType::Float32 &&
         c.out[0].dtype == DType::Float32 && xs[1] >= kWinogradMinChannels && ws[0] >= kWinogradMinChannels &&
         c.out[0].shape[2] * c.out[0].shape[3] >= kWinogradMinPositions;
}

Lowered conv2d_winograd_rows(const LowerContext& c, const Pad2d& p) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape, &ys = c.out[0].shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0];
  const int64_t pairs = (ys[2] + 1) / 2, width = W + p.left + p.right;
  te::Tensor u = te::compute(
      {K, C, 4, 3},
      [&](const te::Axes& i) {
        Expr g0 = (*w)({i[0], i[1], tir::int_imm(0), i[3]}), g1 = (*w)({i[0], i[1], tir::int_imm(1), i[3]}),
             g2 = (*w)({i[0], i[1], tir::int_imm(2), i[3]});
        return by_phase(i[2], g0, half(tir::add(tir::add(g0, g1), g2)), half(tir::add(tir::sub(g0, g1), g2)),
                        g2);
      },
      c.name + "_wino_weight");
  te::Tensor v = te::compute(
      {N, C, pairs, 4, width},
      [&](const te::Axes& i) {
        const Expr col = tir::sub(i[4], tir::int_imm(p.left));
        auto d = [&](int64_t r) {
          Expr row =
              tir::sub(tir::add(tir::mul(i[2], tir::int_imm(2)), tir::int_imm(r)), tir::int_imm(p.top));
          Expr inside = tir::binary(
              tir::BinaryOp::And,
              tir::binary(tir::BinaryOp::And, tir::binary(tir::BinaryOp::GE, row, tir::int_imm(0)),
                          tir::lt(row, tir::int_imm(H))),
              tir::binary(tir::BinaryOp::And, tir::binary(tir::BinaryOp::GE, col, tir::int_imm(0)),
                          tir::lt(col, tir::int_imm(W))));
          return tir::select(inside, (*x)({i[0], i[1], clamp_index(row, H), clamp_index(col, W)}),
                             constant(0, x->dtype));
        };
        return by_phase(i[3], tir::sub(d(0), d(2)), tir::add(d(1), d(2)), tir::sub(d(2), d(1)),
                        tir::sub(d(1), d(3)));
      },
      c.name + "_wino_input");
  te::IterVar rc = te::reduce_axis(C, "rc"), rx = te::reduce_axis(3, "rx");
  te::Tensor m = te::compute(
      {N, K, pairs, 4, ys[3]},
      [&](const te::Axes& i) -> te::Reduction {
        return te::sum(tir::mul((*u)({i[1], rc.var, i[3], rx.var}),
                                (*v)({i[0], rc.var, i[2], i[3], tir::add(i[4], rx.var)})),
                       {rc, rx});
      },
      c.name + "_wino_products");
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        const Expr t = tir::div(i[2], tir::int_imm(2));
        auto mp = [&](int64_t a) { return (*m)({i[0], i[1], t, tir::int_imm(a), i[3]}); };
        const Expr even = tir::eq(tir::mod(i[2], tir::int_imm(2)), tir::int_imm(0));
        return tir::select(even, tir::add(tir::add(mp(0), mp(1)), mp(2)),
                           tir::sub(tir::sub(mp(1), mp(2)), mp(3)));
      },
      c.name);
  // Consecutive output channels' transformed weights are C * 12 floats apart.
  Lowered r = tiled(m, 1, 4, {u, v}, v, C * 12 * 4);
  r.outputs = {y};
  schedule::AnchorTile& tile = r.anchors.back();
  // Bands of row pairs, each computing the 4 phases of its input rows, with
  // the phase loop unrolled so each phase's expression is its own; a tile
  // of one vector of columns pairs row pairs, which share every weight.
  tile.window_row_axis = 2;
  tile.window_unroll_axis = 3;
  tile.pair_axis = 2;
  return r;
}

}  // namespace kiln::lower
