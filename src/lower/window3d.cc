// 3-D windows on NCDHW data as tensor expressions: nn.conv3d,
// nn.conv3d_transpose, nn.max_pool3d and nn.avg_pool3d (reference kernels:
// src/op/nn_conv3d.cc, nn_pool3d.cc).
//
//   nn.conv3d(x: (N, C, D, H, W), w: (O, C/g, KD, KH, KW))  =>
//     xp[n, c, z, h, v] = x zero-padded on D, H and W (a buffer)
//     y[n, o, z, i, j]  = sum over rc, rz, ry, rx of
//                         xp[n, (o / (O/g)) * C/g + rc, z*sd + rz*dd, i*sh + ry*dh, j*sw + rx*dw]
//                         * w[o, rc, rz, ry, rx]
//   nn.max_pool3d / nn.avg_pool3d: the 2-D pools' windows with a third axis
//   (padding never wins a max; averages divide by the taps inside the
//   input, or inside the padded input with count_include_pad).
//
// A conv3d is tiled as an NCHW conv is: output channels by output columns
// in registers, its epilogue applied as the tile is stored; its planes and
// rows run outside the tile. Integer convs accumulate in int32 as conv2d's.
#include <array>
#include <limits>
#include <optional>

#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

// An ints attribute with one value per spatial axis (`n` of them), `fallback`
// when absent; empty when it has another count.
std::vector<int64_t> per_axis(const Attrs& attrs, const std::string& name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = attrs.get_ints(name);
  if (v.empty()) v.assign(n, fallback);
  return v.size() == n ? v : std::vector<int64_t>{};
}

// Padding of `n` spatial axes as [begin..., end...] (n values: symmetric);
// empty when malformed.
std::vector<int64_t> padding_of(const Attrs& attrs, size_t n) {
  std::vector<int64_t> p = attrs.get_ints("padding");
  if (p.empty()) p.assign(2 * n, 0);
  if (p.size() == n) p.insert(p.end(), p.begin(), p.end());
  return p.size() == 2 * n ? p : std::vector<int64_t>{};
}

Expr all(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::And, a, b); }

// x zero-padded on its axes 2, 3 and 4 (`pad`: 6 values).
te::Tensor pad_dhw(const te::Tensor& x, const std::vector<int64_t>& pad, const std::string& name) {
  bool any = false;
  for (int64_t p : pad) any = any || p != 0;
  if (!any) return x;
  Shape padded = x->shape;
  for (size_t a = 0; a < 3; ++a) padded[2 + a] += pad[a] + pad[3 + a];
  return te::compute(
      padded,
      [&](const te::Axes& i) {
        std::vector<Expr> idx(i.begin(), i.end());
        Expr inside;
        for (size_t a = 0; a < 3; ++a) {
          const int64_t extent = x->shape[2 + a];
          const Expr at = tir::sub(i[2 + a], tir::int_imm(pad[a]));
          idx[2 + a] = clamp_index(at, extent);
          inside = inside ? all(inside, index_within(at, extent)) : index_within(at, extent);
        }
        return tir::select(inside, (*x)(idx), constant(0, x->dtype));
      },
      name + "_pad");
}

Lowered conv3d(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape, &ys = c.out[0].shape;
  const std::vector<int64_t> st = per_axis(c.attrs, "strides", 3, 1),
                             dl = per_axis(c.attrs, "dilation", 3, 1);
  std::vector<int64_t> pad = padding_of(c.attrs, 3);
  if (st.empty() || dl.empty() || pad.empty())
    return unsupported("strides, dilation or padding of another length");
  const int64_t groups = c.attrs.get_int("groups"), cg = xs[1] / groups, og = ws[0] / groups;
  const tir::DataType acc = *lowered_dtype(c.out[0].dtype);
  // Consecutive output channels' weights are cg * KD * KH * KW elements apart.
  const int64_t weight_stride = cg * ws[2] * ws[3] * ws[4] * w->dtype.bytes();
  // Computed on the columns and output channels whole tiles want, as an
  // NCHW conv is (conv2d in nn.cc): the extra channels read the last one's
  // weights, the extra columns zeros from the padded input widened for them
  // (or an unpadded input's last column); neither is stored.
  Shape padded = ys;
  padded[4] = schedule::conv_columns(c.cpu, ys[4]);
  if (groups == 1) padded[1] = schedule::conv_rows(c.cpu, ys[1], padded[4], weight_stride);
  bool any_pad = false;
  for (int64_t p : pad) any_pad = any_pad || p != 0;
  if (any_pad) pad[5] += (padded[4] - ys[4]) * st[2];
  const te::Tensor xp = pad_dhw(x, pad, c.name);
  const int64_t xp_width = xp->shape[4];
  te::IterVar rc = te::reduce_axis(cg, "rc"), rz = te::reduce_axis(ws[2], "rz"),
              ry = te::reduce_axis(ws[3], "ry"), rx = te::reduce_axis(ws[4], "rx");
  auto at = [&](const tir::Var& o, const tir::Var& k, size_t axis) -> Expr {
    return tir::add(tir::mul(o, tir::int_imm(st[axis])), tir::mul(k, tir::int_imm(dl[axis])));
  };
  te::Tensor yp = te::compute(
      padded,
      [&](const te::Axes& i) -> te::Reduction {
        const Expr oc = padded[1] == ys[1] ? Expr(i[1]) : clamp_index(i[1], ys[1]);
        const Expr ch = groups == 1
                            ? Expr(rc.var)
                            : tir::add(tir::mul(tir::div(oc, tir::int_imm(og)), tir::int_imm(cg)), rc.var);
        Expr column = at(i[4], rx.var, 2);
        if (xp == x && padded[4] != ys[4]) column = clamp_index(column, xp_width);
        const Expr in = (*xp)({i[0], ch, at(i[2], rz.var, 0), at(i[3], ry.var, 1), column});
        const Expr weight = (*w)({oc, rc.var, rz.var, ry.var, rx.var});
        return te::sum(tir::mul(tir::cast(acc, in), tir::cast(acc, weight)), {rc, rz, ry, rx});
      },
      padded_name(c.name, padded, ys));
  if (xp == x) return tiled_prefix(yp, ys, c.name, 1, 4, {}, nullptr, weight_stride);
  return tiled_prefix(yp, ys, c.name, 1, 4, {xp}, nullptr, weight_stride);
}

// nn.conv3d_transpose(x: (N, C, D, H, W), w: (C, O/g, KD, KH, KW)): output
// (z, i, j) gathers the inputs that scatter to it, x[(z + pad - kz*d) / s]
// (per axis) where that divides evenly and lies inside the input; tiled as
// conv3d.
Lowered conv3d_transpose(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape;
  const std::vector<int64_t> st = per_axis(c.attrs, "strides", 3, 1),
                             dl = per_axis(c.attrs, "dilation", 3, 1), pad = padding_of(c.attrs, 3);
  if (st.empty() || dl.empty() || pad.empty())
    return unsupported("strides, dilation or padding of another length");
  const int64_t groups = c.attrs.get_int("groups"), cg = xs[1] / groups, og = ws[1];
  const tir::DataType acc = *lowered_dtype(c.out[0].dtype);
  te::IterVar rc = te::reduce_axis(cg, "rc"), rz = te::reduce_axis(ws[2], "rz"),
              ry = te::reduce_axis(ws[3], "ry"), rx = te::reduce_axis(ws[4], "rx");
  // The input channel of output channel o's group at step rc.
  auto channel = [&](const Expr& o) {
    return groups == 1 ? Expr(rc.var)
                       : tir::add(tir::mul(tir::div(o, tir::int_imm(og)), tir::int_imm(cg)), rc.var);
  };
  // A kernel as large as its stride, unpadded (a 3-D U-Net's upsampling):
  // each output element has one tap per input channel, x[z / s] * w[z % s]
  // per axis, not KD x KH x KW taps tested one by one.
  bool one_tap = true;
  for (size_t a = 0; a < 3; ++a)
    one_tap = one_tap && ws[2 + a] == st[a] && dl[a] == 1 && pad[a] == 0 && pad[3 + a] == 0;
  for (int64_t p : c.attrs.get_ints("output_padding")) one_tap = one_tap && p == 0;
  if (one_tap) {
    te::Tensor y = te::compute(
        c.out[0].shape,
        [&](const te::Axes& i) -> te::Reduction {
          const Expr oc = groups == 1 ? Expr(i[1]) : tir::mod(i[1], tir::int_imm(og));
          std::vector<Expr> xi = {i[0], channel(i[1])}, wi = {channel(i[1]), oc};
          for (size_t a = 0; a < 3; ++a) {
            xi.push_back(tir::div(i[2 + a], tir::int_imm(st[a])));
            wi.push_back(tir::mod(i[2 + a], tir::int_imm(st[a])));
          }
          return te::sum(tir::mul(tir::cast(acc, (*x)(xi)), tir::cast(acc, (*w)(wi))), {rc});
        },
        c.name);
    return tiled(y, 1, 4);
  }
  // Whether output position o takes tap k along `axis`, and the input index then (clamped).
  auto source = [&](const Expr& o, const tir::Var& k, size_t axis, Expr* index) {
    const Expr num = tir::sub(tir::add(o, tir::int_imm(pad[axis])), tir::mul(k, tir::int_imm(dl[axis])));
    const Expr q = tir::div(num, tir::int_imm(st[axis]));
    *index = clamp_index(q, xs[2 + axis]);
    const Expr ok =
        all(tir::binary(tir::BinaryOp::GE, num, tir::int_imm(0)), tir::lt(q, tir::int_imm(xs[2 + axis])));
    return st[axis] == 1 ? ok : all(ok, tir::eq(tir::mod(num, tir::int_imm(st[axis])), tir::int_imm(0)));
  };
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        const Expr ch = channel(i[1]), oc = groups == 1 ? Expr(i[1]) : tir::mod(i[1], tir::int_imm(og));
        Expr iz, ih, iw;
        const Expr ok = all(all(source(i[2], rz.var, 0, &iz), source(i[3], ry.var, 1, &ih)),
                            source(i[4], rx.var, 2, &iw));
        const Expr prod = tir::mul(tir::cast(acc, (*x)({i[0], ch, iz, ih, iw})),
                                   tir::cast(acc, (*w)({ch, oc, rz.var, ry.var, rx.var})));
        return te::sum(tir::select(ok, prod, constant(0, acc)), {rc, rz, ry, rx});
      },
      c.name);
  return tiled(y, 1, 4);
}

// One spatial axis of a pool: output o's tap r reads input o*s - pad + r*d.
struct Axis {
  int64_t k, s, d, pad_before, pad_after, in;
  Expr position(const Expr& o, const Expr& r) const {
    return tir::add(tir::sub(tir::mul(o, tir::int_imm(s)), tir::int_imm(pad_before)),
                    tir::mul(r, tir::int_imm(d)));
  }
};

// The pool's three axes (2-D data: a unit depth axis first), or nullopt
// with `why` set for shapes that stay on the reference kernel.
std::optional<std::array<Axis, 3>> pool_axes(const LowerContext& c, std::string* why) {
  const Shape& xs = c.in[0].shape;
  const size_t n = xs.size() - 2;
  const std::vector<int64_t> k = per_axis(c.attrs, "pool_size", n, 0), s = per_axis(c.attrs, "strides", n, 1),
                             d = per_axis(c.attrs, "dilation", n, 1);
  const std::vector<int64_t> pad = padding_of(c.attrs, n);
  if (k.empty() || s.empty() || d.empty() || pad.empty() || (n != 2 && n != 3)) {
    *why = "pool_size, strides, dilation or padding of another length";
    return std::nullopt;
  }
  std::array<Axis, 3> axes;
  axes[0] = {1, 1, 1, 0, 0, 1};
  for (size_t a = 0; a < n; ++a) {
    axes[3 - n + a] = {k[a], s[a], d[a], pad[a], pad[n + a], xs[2 + a]};
    // A window of padding only is 0 in the reference (as for the 2-D pools).
    if (pad[a] >= k[a] || pad[n + a] >= k[a]) {
      *why = "padding as large as the window";
      return std::nullopt;
    }
  }
  return axes;
}

// Whether the taps at `pos` (one position per axis) lie within [lo, hi) of
// every axis: the input (lo 0, hi in) or the padded input.
Expr inside(const std::array<Expr, 3>& pos, const std::array<Axis, 3>& w, bool padded) {
  Expr all_in;
  for (size_t a = 0; a < 3; ++a) {
    const int64_t lo = padded ? -w[a].pad_before : 0, hi = padded ? w[a].in + w[a].pad_after : w[a].in;
    const Expr in =
        all(tir::binary(tir::BinaryOp::GE, pos[a], tir::int_imm(lo)), tir::lt(pos[a], tir::int_imm(hi)));
    all_in = all_in ? all(all_in, in) : in;
  }
  return all_in;
}

// An output's spatial indices as (z, y, x): axes 2-4, or z 0 for 2-D data.
std::array<Expr, 3> spatial(const te::Axes& i) {
  if (i.size() == 5) return {i[2], i[3], i[4]};
  return {tir::int_imm(0), i[2], i[3]};
}

// The input positions (z, y, x) of output `o`'s tap (rz, ry, rx).
std::array<Expr, 3> taps(const std::array<Axis, 3>& w, const std::array<Expr, 3>& o, const tir::Var& rz,
                         const tir::Var& ry, const tir::Var& rx) {
  return {w[0].position(o[0], rz), w[1].position(o[1], ry), w[2].position(o[2], rx)};
}

// x (2-D or 3-D data) at output `i`'s batch and channel and the positions
// `pos`, clamped into the input.
Expr read(const te::Tensor& x, const te::Axes& i, const std::array<Expr, 3>& pos,
          const std::array<Axis, 3>& w) {
  std::vector<Expr> at = {i[0], i[1]};
  for (size_t a = x->shape.size() == 5 ? 0 : 1; a < 3; ++a) at.push_back(clamp_index(pos[a], w[a].in));
  return (*x)(at);
}

Lowered max_pool3d(const LowerContext& c) {
  std::string why;
  const auto w = pool_axes(c, &why);
  if (!w) return unsupported(why);
  const te::Tensor& x = c.inputs[0];
  const tir::DataType t = x->dtype;
  te::IterVar rz = te::reduce_axis((*w)[0].k, "rz"), ry = te::reduce_axis((*w)[1].k, "ry"),
              rx = te::reduce_axis((*w)[2].k, "rx");
  const Expr lowest =
      t.is_float() ? tir::float_imm(-std::numeric_limits<double>::infinity(), t)
                   : tir::int_imm(t.is_uint() ? 0 : std::numeric_limits<int64_t>::min() >> (64 - t.bits), t);
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        const std::array<Expr, 3> pos = taps(*w, spatial(i), rz.var, ry.var, rx.var);
        return te::max(tir::select(inside(pos, *w, false), read(x, i, pos, *w), lowest), {rz, ry, rx});
      },
      c.name);
  return lowered({y});
}

Lowered avg_pool3d(const LowerContext& c) {
  std::string why;
  const auto w = pool_axes(c, &why);
  if (!w) return unsupported(why);
  const te::Tensor& x = c.inputs[0];
  if (!x->dtype.is_float()) return unsupported("integer average pooling (rounds half away from zero)");
  const bool include_pad = c.attrs.get_int("count_include_pad") != 0;
  const Shape& ys = c.out[0].shape;
  const tir::DataType t = x->dtype;
  te::IterVar rz = te::reduce_axis((*w)[0].k, "rz"), ry = te::reduce_axis((*w)[1].k, "ry"),
              rx = te::reduce_axis((*w)[2].k, "rx");
  te::Tensor sum = te::compute(
      ys,
      [&](const te::Axes& i) -> te::Reduction {
        const std::array<Expr, 3> pos = taps(*w, spatial(i), rz.var, ry.var, rx.var);
        return te::sum(tir::select(inside(pos, *w, false), read(x, i, pos, *w), constant(0, t)),
                       {rz, ry, rx});
      },
      c.name + "_sum");
  // The taps that count, per output position.
  te::IterVar cz = te::reduce_axis((*w)[0].k, "cz"), cy = te::reduce_axis((*w)[1].k, "cy"),
              cx = te::reduce_axis((*w)[2].k, "cx");
  te::Tensor count = te::compute(
      {ys[2], ys[3], ys[4]},
      [&](const te::Axes& i) -> te::Reduction {
        const std::array<Expr, 3> pos = taps(*w, {i[0], i[1], i[2]}, cz.var, cy.var, cx.var);
        return te::sum(tir::select(inside(pos, *w, include_pad), constant(1, t), constant(0, t)),
                       {cz, cy, cx});
      },
      c.name + "_count");
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        const Expr n = (*count)({i[2], i[3], i[4]});
        return tir::select(tir::eq(n, constant(0, t)), constant(0, t), tir::div((*sum)(i), n));
      },
      c.name);
  return lowered({y});
}

// nn.max_pool_with_indices (2-D or 3-D data): the reference keeps the first
// tap inside the input, then any strictly greater one, and gives its flat
// position. So the value is the largest tap (te::max, where a NaN never
// wins), or a NaN first tap itself; its index is the first tap in the
// window's row-major order that equals it (or the first, for a NaN), as a
// row-major position in the input, then in the storage order asked for.
Lowered max_pool_with_indices(const LowerContext& c) {
  std::string why;
  const auto w = pool_axes(c, &why);
  if (!w) return unsupported(why);
  const te::Tensor& x = c.inputs[0];
  const tir::DataType t = x->dtype, i64 = tir::DataType::int_(64);
  if (!t.is_float()) return unsupported("integer max pooling with indices");
  const Shape& xs = c.in[0].shape;
  const bool three_d = xs.size() == 5;
  const int64_t depth = three_d ? xs[2] : 1, height = xs[xs.size() - 2], width = xs.back();
  te::IterVar rz = te::reduce_axis((*w)[0].k, "rz"), ry = te::reduce_axis((*w)[1].k, "ry"),
              rx = te::reduce_axis((*w)[2].k, "rx");
  const Shape& ys = c.out[0].shape;
  te::Tensor largest = te::compute(
      ys,
      [&](const te::Axes& i) -> te::Reduction {
        const std::array<Expr, 3> pos = taps(*w, spatial(i), rz.var, ry.var, rx.var);
        return te::max(tir::select(inside(pos, *w, false), read(x, i, pos, *w),
                                   tir::float_imm(-std::numeric_limits<double>::infinity(), t)),
                       {rz, ry, rx});
      },
      c.name + "_largest");
  // The first tap inside the input along an axis: past the taps in the
  // leading padding.
  auto first = [&](const Expr& o, const Axis& a) {
    const Expr start = tir::sub(tir::mul(o, tir::int_imm(a.s)), tir::int_imm(a.pad_before));
    const Expr skipped =
        tir::div(tir::add(tir::sub(tir::int_imm(0), start), tir::int_imm(a.d - 1)), tir::int_imm(a.d));
    return tir::add(start, tir::mul(tir::select(tir::lt(start, tir::int_imm(0)), skipped, tir::int_imm(0)),
                                    tir::int_imm(a.d)));
  };
  te::Tensor values = te::compute(
      ys,
      [&](const te::Axes& i) {
        const std::array<Expr, 3> o = spatial(i);
        const Expr head = read(x, i, {first(o[0], (*w)[0]), first(o[1], (*w)[1]), first(o[2], (*w)[2])}, *w);
        return tir::select(tir::binary(tir::BinaryOp::NE, head, head), head, (*largest)(i));
      },
      c.name);
  const int64_t plane = depth * height * width;
  te::IterVar qz = te::reduce_axis((*w)[0].k, "qz"), qy = te::reduce_axis((*w)[1].k, "qy"),
              qx = te::reduce_axis((*w)[2].k, "qx");
  te::Tensor position = te::compute(
      ys,
      [&](const te::Axes& i) -> te::Reduction {
        const std::array<Expr, 3> pos = taps(*w, spatial(i), qz.var, qy.var, qx.var);
        const Expr v = (*values)(i), tap = read(x, i, pos, *w);
        const Expr hit = all(inside(pos, *w, false), tir::binary(tir::BinaryOp::Or, tir::eq(tap, v),
                                                                 tir::binary(tir::BinaryOp::NE, v, v)));
        Expr local = tir::int_imm(0);
        const int64_t sizes[3] = {depth, height, width};
        for (size_t a = 0; a < 3; ++a) local = tir::add(tir::mul(local, tir::int_imm(sizes[a])), pos[a]);
        // The least hit as the largest of their negations (no te::min).
        return te::max(tir::select(hit, tir::sub(tir::int_imm(0, i64), tir::cast(i64, local)),
                                   tir::int_imm(-std::numeric_limits<int64_t>::max(), i64)),
                       {qz, qy, qx});
      },
      c.name + "_position");
  const bool column_major = c.attrs.get_int("storage_order") == 1;
  te::Tensor indices = te::compute(
      ys,
      [&](const te::Axes& i) {
        const Expr local = tir::sub(tir::int_imm(0, i64), (*position)(i));
        Expr in_plane = local;
        if (column_major) {
          const Expr z = tir::div(local, tir::int_imm(height * width, i64));
          const Expr y = tir::mod(tir::div(local, tir::int_imm(width, i64)), tir::int_imm(height, i64));
          const Expr v = tir::mod(local, tir::int_imm(width, i64));
          in_plane = tir::add(
              z, tir::mul(tir::int_imm(depth, i64), tir::add(y, tir::mul(tir::int_imm(height, i64), v))));
        }
        const Expr base = tir::mul(tir::cast(i64, tir::add(tir::mul(i[0], tir::int_imm(xs[1])), i[1])),
                                   tir::int_imm(plane, i64));
        return tir::add(base, in_plane);
      },
      c.name + "_indices");
  return lowered({values, indices});
}

}  // namespace

void register_window3d_lowerings(LoweringTable& t) {
  t.add("nn.conv3d", OpPattern::Anchor, conv3d);
  t.add("nn.conv3d_transpose", OpPattern::Anchor, conv3d_transpose);
  t.add("nn.max_pool3d", OpPattern::Anchor, max_pool3d);
  t.add("nn.avg_pool3d", OpPattern::Anchor, avg_pool3d);
  t.add("nn.max_pool_with_indices", OpPattern::Opaque, max_pool_with_indices);
}

}  // namespace kiln::lower
