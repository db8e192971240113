// nn.conv2d_winograd (src/op/nn_winograd.cc): a 3x3 stride-1 conv by
// Winograd's minimal filtering F(m, 3) along the output rows (op/winograd.h),
// its kernel already transformed (nn.winograd_weight, folded at compile
// time by the pass winograd-weights). A tile of m output rows takes m + 2
// products per input channel and kernel column instead of 3m, while the
// columns stay contiguous for the vector lanes (a 2-D F(m x m, 3 x 3) would
// interleave them). F(2, 3), for output rows 2t and 2t + 1, the kernel's
// rows g0..g2 and the padded input rows d0..d3 from row 2t:
//
//   m0 = (d0 - d2) g0           m1 = (d1 + d2) (g0 + g1 + g2) / 2
//   m3 = (d1 - d3) g2           m2 = (d2 - d1) (g0 - g1 + g2) / 2
//   y[2t] = m0 + m1 + m2        y[2t + 1] = m1 - m2 - m3
//
// F(4, 3) likewise with 6 phases. As tensor expressions, with a the phase
// and u[k, c, a, rx] the transformed kernel (the g factors):
//
//   v[n, c, t, a, j]   = the transformed input rows (the d factors), zero
//                        outside the input
//   m[n, k, t, a, j]   = sum over c, rx of u[k, c, a, rx] * v[n, c, t, a, j + rx]
//   y[n, k, h, j]      = the output transform of m[n, k, h / m, :, j], row h % m
//
// m is register-tiled like a direct conv (rows: output channels, columns:
// output columns), with v as its window, computed per band of row tiles.
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "lower/lower.h"
#include "op/nn_internal.h"
#include "op/winograd.h"

namespace kiln::lower {

using tir::Expr;

namespace {

// sum over k of coefficients[k] * terms(k), skipping zeros; 1 and -1 as an
// add or a subtract.
Expr combination(const std::vector<double>& coefficients, const std::function<Expr(int64_t)>& terms) {
  Expr sum;
  for (size_t k = 0; k < coefficients.size(); ++k) {
    const double a = coefficients[k];
    if (a == 0) continue;
    Expr term = terms(int64_t(k));
    const bool negate = a < 0 && sum;
    if (std::abs(a) != 1 || (a < 0 && !sum))
      term = tir::mul(term, tir::float_imm(negate ? -a : a, tir::DataType::float32()));
    sum = !sum ? term : negate ? tir::sub(sum, term) : tir::add(sum, term);
  }
  return sum;
}

// select(a == 0, e[0], a == 1, e[1], ..., e[last]): with `a` unrolled the
// conditions are constants and simplify to one term.
Expr by_phase(const Expr& a, const std::vector<Expr>& e) {
  Expr out = e.back();
  for (size_t k = e.size() - 1; k-- > 0;) out = tir::select(tir::eq(a, tir::int_imm(int64_t(k))), e[k], out);
  return out;
}

Lowered conv2d_winograd(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &u = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ys = c.out[0].shape;
  // Channel blocks (NCHWc): xs (N, C / cb, H, W, cb), u (K / kb, C / cb,
  // phases, 3, cb, kb); each index below gains the block's lane.
  const bool blocked = xs.size() == 5;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = c.in[1].shape[0];
  const int64_t cb = blocked ? xs[4] : 1;
  const WinogradRows* rows = winograd_rows(c.attrs.get_int("tile_rows"));
  if (!rows) return unsupported("tile_rows must be 2 or 4");
  const WinogradRows& f = *rows;
  const Pad2d p = pad2d_attr(c.op, c.attrs);
  // The columns the products are computed on (as a direct conv's, nn.cc,
  // or a blocked one's, layout.cc): those beyond the output read zeros
  // from the padded input, widened for them, and are never stored.
  const bool pair_blocks = K % 2 == 0 || K % 3 == 0;
  const int64_t cols = blocked
                           ? schedule::blocked_conv_rows(c.cpu, ys[3], K, pair_blocks, cb * x->dtype.bytes())
                           : schedule::conv_columns(c.cpu, ys[3]);
  const int64_t m = f.m, phases = f.phases(), tiles = (ys[2] + m - 1) / m;
  const int64_t width = W + p.left + p.right + cols - ys[3];
  auto each_phase = [&](const std::function<Expr(int64_t)>& phase) {
    std::vector<Expr> e;
    for (int64_t a = 0; a < phases; ++a) e.push_back(phase(a));
    return e;
  };
  auto with_lane = [&](std::vector<Expr> index, const Expr& lane) {
    if (blocked) index.push_back(lane);
    return index;
  };
  auto shape_with = [&](Shape s, int64_t lanes) {
    if (blocked) s.push_back(lanes);
    return s;
  };
  // The padded input, inlined into v (each phase's rows read through
  // clamped indices under the padding's select), with zero rows below for
  // a last tile that reaches past the output's rows.
  Pad2d tiled_pad = p;
  tiled_pad.bottom += std::max<int64_t>(0, tiles * m + 2 - (H + p.top + p.bottom));
  tiled_pad.right += cols - ys[3];
  const te::Tensor xp = pad_hw(x, tiled_pad, c.name);
  te::Tensor v = te::compute(
      shape_with({N, C, tiles, phases, width}, cb),
      [&](const te::Axes& i) {
        auto d = [&](int64_t r) {
          return (*xp)(
              with_lane({i[0], i[1], tir::add(tir::mul(i[2], tir::int_imm(m)), tir::int_imm(r)), i[4]},
                        blocked ? i[5] : Expr()));
        };
        return by_phase(i[3], each_phase([&](int64_t a) { return combination(f.bt[size_t(a)], d); }));
      },
      c.name + "_wino_input");
  te::IterVar rc = te::reduce_axis(C, "rc"), rx = te::reduce_axis(3, "rx"), ri = te::reduce_axis(cb, "ri");
  // Blocked, the products put the row tiles before the output channel
  // blocks, so that a band of row tiles (the window's rows) serves every block.
  te::Tensor prod;
  // Consecutive output channels' transformed weights are C * phases * 3 floats apart.
  const int64_t weight_stride = C * phases * 3 * u->dtype.bytes();
  if (!blocked) {
    // On the output channels the register tiles want, as a direct conv's
    // (nn.cc): those beyond the output read the last one's weights.
    const int64_t channels = schedule::conv_rows(c.cpu, K, cols, weight_stride);
    prod = te::compute(
        {N, channels, tiles, phases, cols},
        [&](const te::Axes& i) -> te::Reduction {
          const Expr k = channels == K ? Expr(i[1]) : clamp_index(i[1], K);
          return te::sum(tir::mul((*u)({k, rc.var, i[3], rx.var}),
                                  (*v)({i[0], rc.var, i[2], i[3], tir::add(i[4], rx.var)})),
                         {rc, rx});
        },
        c.name + "_wino_products");
  } else {
    prod = te::compute(
        {N, tiles, K, phases, cols, ys[4]},
        [&](const te::Axes& i) -> te::Reduction {
          return te::sum(tir::mul((*v)({i[0], rc.var, i[1], i[3], tir::add(i[4], rx.var), ri.var}),
                                  (*u)({i[2], rc.var, i[3], rx.var, ri.var, i[5]})),
                         {rc, rx, ri});
        },
        c.name + "_wino_products");
  }
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        const Expr t = tir::div(i[2], tir::int_imm(m)), row = tir::mod(i[2], tir::int_imm(m));
        std::vector<Expr> rows;
        for (int64_t r = 0; r < m; ++r)
          rows.push_back(combination(f.at[size_t(r)], [&](int64_t a) {
            if (blocked) return (*prod)({i[0], t, i[1], tir::int_imm(a), i[3], i[4]});
            return (*prod)({i[0], i[1], t, tir::int_imm(a), i[3]});
          }));
        return by_phase(row, rows);
      },
      c.name);
  if (blocked) {
    // Tiles as a blocked conv's (layout.cc): output columns by the lanes of
    // a block of output channels, the window computed per band of row
    // tiles with its phases unrolled, pairs of output blocks sharing each
    // broadcast of v.
    Lowered r = tiled(prod, 4, 5, {v}, v, cb * x->dtype.bytes());
    r.outputs = {y};
    schedule::AnchorTile& tile = r.anchors.back();
    tile.window_row_axis = 1;
    tile.window_unroll_axis = 3;
    tile.phase_axis = 3;
    tile.band_weight_bytes = u->dtype.bytes() * K * C * phases * 3 * cb * ys[4];
    tile.output_period_axis = 2;
    tile.output_period = m;
    tile.pair_axis = pair_blocks ? 2 : -1;
    return r;
  }
  Lowered r = tiled(prod, 1, 4, {v}, v, weight_stride);
  r.outputs = {y};
  schedule::AnchorTile& tile = r.anchors.back();
  // Bands of row tiles, each computing the phases of its input rows, with
  // the phase loop unrolled so each phase's expression is its own; a tile
  // of one vector of columns pairs row tiles, which share every weight.
  tile.window_row_axis = 2;
  tile.window_unroll_axis = 3;
  tile.pair_axis = 2;
  tile.band_weight_bytes = u->dtype.bytes() * K * C * phases * 3;
  tile.output_period_axis = 2;
  tile.output_period = m;
  return r;
}

}  // namespace

void register_winograd_lowerings(LoweringTable& t) {
  t.add("nn.conv2d_winograd", OpPattern::Anchor, conv2d_winograd);
}

}  // namespace kiln::lower
