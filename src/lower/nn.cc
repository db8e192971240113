// Neural-network ops as tensor expressions: nn.conv2d, nn.dense, matmul,
// the 2-D pools, nn.batch_norm and nn.pad.
//
//   nn.conv2d(x: (N, C, H, W), w: (O, C/g, KH, KW))  =>
//     xp[n, c, h, w] = select(inside, x[n, c, h - pad_top, w - pad_left], 0)   (inlined)
//     y[n, o, i, j]  = sum over rc, ry, rx of
//                      xp[n, (o / (O/g)) * C/g + rc, i*sh + ry*dh, j*sw + rx*dw] * w[o, rc, ry, rx]
//
// Semantics are those of the reference kernels (src/op/nn_conv.cc,
// nn_pool.cc, nn_matmul.cc, nn.cc): integer convolutions and products
// accumulate in int32; padding never wins a max; averages divide by the
// taps inside the input (or the padded input with count_include_pad).
// Padding loads use clamped indices, so a load never leaves its buffer.
#include <cmath>
#include <functional>
#include <limits>

#include "lower/lower.h"
#include "op/kernel_util.h"
#include "op/nn_internal.h"

namespace kiln::lower {
namespace {

using tir::Expr;

tir::DataType acc_type(const LowerContext& c) { return *lowered_dtype(c.out[0].dtype); }

Expr as_acc(const Expr& e, tir::DataType t) { return tir::cast(t, e); }

Expr in_range(const Expr& i, int64_t lo, int64_t hi) {
  return tir::binary(tir::BinaryOp::And, tir::binary(tir::BinaryOp::GE, i, tir::int_imm(lo)),
                     tir::lt(i, tir::int_imm(hi)));
}

Expr all(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::And, a, b); }

// ---------------------------------------------------------------- conv2d

// The attributes conv2d and conv2d_transpose share; nullopt when strides or
// dilation do not have two values.
struct ConvAttrs {
  std::vector<int64_t> strides, dilation;
  Pad2d pad;
  int64_t groups;
};

std::optional<ConvAttrs> conv_attrs(const LowerContext& c) {
  ConvAttrs a{c.attrs.get_ints("strides"), c.attrs.get_ints("dilation"), pad2d_attr(c.op, c.attrs),
              c.attrs.get_int("groups")};
  if (a.strides.size() != 2 || a.dilation.size() != 2) return std::nullopt;
  return a;
}

// Channel c = b * 4 + k of a conv's input: its block b and place k in it.
Expr channel_of_block(const Expr& b, const Expr& k) { return tir::add(tir::mul(b, tir::int_imm(4)), k); }

// An int8 conv weight (O, C, KH, KW) with its input channels in blocks of
// four, innermost: wb[o, cb, ky, kx, 4], zero past the last channel.
te::Tensor int8_weight_blocks(const te::Tensor& w, const std::string& name) {
  const Shape& ws = w->shape;
  const int64_t C = ws[1];
  return te::compute(
      {ws[0], (C + 3) / 4, ws[2], ws[3], 4},
      [&](const te::Axes& i) {
        Expr ch = channel_of_block(i[1], i[4]);
        return tir::select(tir::lt(ch, tir::int_imm(C)), (*w)({i[0], clamp_index(ch, C), i[2], i[3]}),
                           constant(0, w->dtype));
      },
      name + "_weights");
}

// Element (n, ch, row, col) of x (N, C, H, W) padded by `p`: zero past its
// edges and past its last channel (a block of four's padding channels).
Expr padded_channel_value(const te::Tensor& x, const Expr& n, const Expr& ch, const Expr& row,
                          const Expr& col, const Pad2d& p) {
  const Shape& xs = x->shape;
  const int64_t C = xs[1], H = xs[2], W = xs[3];
  Expr h = tir::sub(row, tir::int_imm(p.top)), v = tir::sub(col, tir::int_imm(p.left));
  Expr in = all(all(in_range(h, 0, H), in_range(v, 0, W)), tir::lt(ch, tir::int_imm(C)));
  return tir::select(in, (*x)({n, clamp_index(ch, C), clamp_index(h, H), clamp_index(v, W)}),
                     constant(0, x->dtype));
}

// An int8 conv for a DSP (a scratchpad target): input channels in blocks of
// four, innermost in both the padded window xb[n, cb, h, w, 4] and the
// weights wb[o, cb, ky, kx, 4] (zero past the last channel), so the four
// products of a block read four contiguous bytes of each. The reduction's
// innermost axis is that block (rk, extent 4): the form form-dot-products
// rewrites into dot_i8x4, one HVX vrmpy per 32 output columns.
Lowered conv2d_int8_blocked(const LowerContext& c, const ConvAttrs& conv) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape;
  const int64_t C = xs[1], H = xs[2], W = xs[3], blocks = (C + 3) / 4;
  const Pad2d& p = conv.pad;
  const tir::DataType i32 = tir::DataType::int32();
  te::Tensor xb = te::compute(
      {xs[0], blocks, H + p.top + p.bottom, W + p.left + p.right, 4},
      [&](const te::Axes& i) {
        return padded_channel_value(x, i[0], channel_of_block(i[1], i[4]), i[2], i[3], p);
      },
      c.name + "_window");
  const te::Tensor wb = int8_weight_blocks(w, c.name);
  te::IterVar rb = te::reduce_axis(blocks, "rb"), ry = te::reduce_axis(ws[2], "ry"),
              rx = te::reduce_axis(ws[3], "rx"), rk = te::reduce_axis(4, "rk");
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        Expr h = tir::add(tir::mul(i[2], tir::int_imm(conv.strides[0])), ry.var);
        Expr v = tir::add(tir::mul(i[3], tir::int_imm(conv.strides[1])), rx.var);
        Expr prod = tir::mul(as_acc((*xb)({i[0], rb.var, h, v, rk.var}), i32),
                             as_acc((*wb)({i[1], rb.var, ry.var, rx.var, rk.var}), i32));
        return te::sum(prod, {rb, ry, rx, rk});
      },
      c.name);
  return lowered({y}, {xb, wb});
}

// A uint8 by int8 conv (stride 1, one group) on a CPU with VNNI (CpuTarget::
// int8_dot_lanes): as conv2d_int8_blocked, the input channels in blocks of
// four innermost in the padded window xb[n, cb, h, w, 4] (computed per band
// of output rows) and the weights wb[o, cb, ky, kx, 4], so a block's four
// products read four contiguous bytes of each and form-dot-products turns
// them into one vpdpbusd per vector of output columns
// (AnchorTile::dot_of_four). On the output channels and columns its tiles
// want, as the float conv (conv_rows, conv_columns): the extra channels read
// the last one's weights, the extra columns zeros, and neither is stored.
Lowered conv2d_uint8_dot(const LowerContext& c, const ConvAttrs& conv) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape, &ys = c.out[0].shape;
  const int64_t H = xs[2], blocks = (xs[1] + 3) / 4;
  const Pad2d& p = conv.pad;
  const tir::DataType i32 = tir::DataType::int32();
  // Whole vectors of columns: form-dot-products leaves a tail scalar.
  const int64_t lanes = c.cpu.int8_dot_lanes;
  Shape padded = ys;
  padded[3] = (ys[3] + lanes - 1) / lanes * lanes;
  const int64_t weight_stride = blocks * ws[2] * ws[3] * 4;
  padded[1] = schedule::conv_rows(c.cpu, ys[1], padded[3], weight_stride);
  // The window's columns: every padded output's taps, in whole vectors.
  const int64_t width = (padded[3] + ws[3] - 1 + lanes - 1) / lanes * lanes;
  // Padded rows of each channel (contiguous columns, as a float conv pads
  // them), then the window interleaving four channels' rows: a copy the
  // codegen reads as four runs and one shuffle (load_interleaved_rows), where
  // one padded, interleaved copy gathered each byte on its own.
  te::Tensor xa = te::compute(
      {xs[0], blocks, H + p.top + p.bottom, 4, width},
      [&](const te::Axes& i) {
        return padded_channel_value(x, i[0], channel_of_block(i[1], i[3]), i[2], i[4], p);
      },
      c.name + "_rows");
  te::Tensor xb = te::compute(
      {xs[0], blocks, H + p.top + p.bottom, width, 4},
      [&](const te::Axes& i) {
        return (*xa)({i[0], i[1], i[2], i[4], i[3]});
      },
      c.name + "_window");
  const te::Tensor wb = int8_weight_blocks(w, c.name);
  te::IterVar rb = te::reduce_axis(blocks, "rb"), ry = te::reduce_axis(ws[2], "ry"),
              rx = te::reduce_axis(ws[3], "rx"), rk = te::reduce_axis(4, "rk");
  te::Tensor yp = te::compute(
      padded,
      [&](const te::Axes& i) -> te::Reduction {
        const Expr oc = padded[1] == ys[1] ? Expr(i[1]) : clamp_index(i[1], ys[1]);
        Expr prod = tir::mul(
            as_acc((*xb)({i[0], rb.var, tir::add(i[2], ry.var), tir::add(i[3], rx.var), rk.var}), i32),
            as_acc((*wb)({oc, rb.var, ry.var, rx.var, rk.var}), i32));
        return te::sum(prod, {rb, ry, rx, rk});
      },
      padded_name(c.name, padded, ys));
  Lowered r = tiled_prefix(yp, ys, c.name, 1, 3, {xa, xb, wb}, xb, weight_stride);
  if (r.anchors.empty()) return r;
  r.anchors.back().dot_of_four = true;
  r.anchors.back().window_input = xa;
  r.anchors.back().window_row_span = ws[2];
  return r;
}

// x zero-padded by `p`, its columns split by phase for a conv of column
// stride s: xq[n, c, h, q, j] = padded x[n, c, h, j * s + q] (0 past the
// padded width). A tap's columns ow * s + t (t = rx * dilation) are then
// the contiguous xq[n, c, h, t % s, ow + t / s]: one vector load per tap,
// where the padded rows themselves give a load of the strided span and a
// shuffle per tap and vector (det's strided depthwise convs).
te::Tensor pad_phases(const te::Tensor& x, const Pad2d& p, int64_t s, const std::string& name) {
  const Shape& xs = x->shape;
  const int64_t H = xs[2], W = xs[3], Wp = W + p.left + p.right;
  return te::compute(
      {xs[0], xs[1], H + p.top + p.bottom, s, (Wp + s - 1) / s},
      [&](const te::Axes& i) {
        Expr h = tir::sub(i[2], tir::int_imm(p.top));
        Expr v = tir::sub(tir::add(tir::mul(i[4], tir::int_imm(s)), i[3]), tir::int_imm(p.left));
        return tir::select(all(in_range(h, 0, H), in_range(v, 0, W)),
                           (*x)({i[0], i[1], clamp_index(h, H), clamp_index(v, W)}), constant(0, x->dtype));
      },
      name + "_phases");
}

Lowered conv2d(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape;
  auto conv = conv_attrs(c);
  if (!conv) return unsupported("strides and dilation must have 2 values");
  if (c.cpu.scratchpad_bytes && c.in[0].dtype == DType::Int8 && c.in[1].dtype == DType::Int8 &&
      c.out[0].dtype == DType::Int32 && conv->groups == 1 && conv->dilation == std::vector<int64_t>{1, 1})
    return conv2d_int8_blocked(c, *conv);
  if (c.cpu.int8_dot_lanes && !c.cpu.scratchpad_bytes && c.in[0].dtype == DType::UInt8 &&
      c.in[1].dtype == DType::Int8 && c.out[0].dtype == DType::Int32 && conv->groups == 1 &&
      conv->dilation == std::vector<int64_t>{1, 1} && conv->strides == std::vector<int64_t>{1, 1})
    return conv2d_uint8_dot(c, *conv);
  const std::vector<int64_t>&st = conv->strides, &dl = conv->dilation;
  const Pad2d pad = conv->pad;
  const int64_t groups = conv->groups;
  int64_t cg = xs[1] / groups, og = ws[0] / groups;
  tir::DataType acc = acc_type(c);
  te::IterVar rc = te::reduce_axis(cg, "rc"), ry = te::reduce_axis(ws[2], "ry"),
              rx = te::reduce_axis(ws[3], "rx");
  // Consecutive output channels' weights are cg * KH * KW elements apart.
  const int64_t weight_stride = cg * ws[2] * ws[3] * w->dtype.bytes();
  // Computed on the columns and output channels its register tiles want
  // (conv_columns; conv_rows for one group), never storing those beyond
  // the output: shapes whose extents nothing fills tiles of (59 columns,
  // 37 channels) get whole vectors and full tiles, not one lane or one row
  // at a time. The extra channels read the last one's weights (clamped);
  // the extra columns read zeros from a padded input widened for them, or
  // an unpadded input's last column (clamped), as contiguous runs.
  const Shape& ys = c.out[0].shape;
  Shape padded = ys;
  const bool depthwise = cg == 1 && og == 1;
  padded[3] = schedule::conv_columns(c.cpu, ys[3]);
  if (groups == 1) padded[1] = schedule::conv_rows(c.cpu, ys[1], padded[3], weight_stride);
  // A column stride reads the padded input in phases (pad_phases), whose
  // copy is unrolled by phase (AnchorTile::window_unroll_axis: each phase's
  // column bounds are then constants; det's 3x3/2 depthwise convs 0.111 ->
  // 0.090 ms); a DSP's scalar kernels gain nothing from it.
  const bool phases = st[1] > 1 && !c.cpu.scratchpad_bytes;
  Pad2d widened = pad;
  if (phases || pad.top || pad.left || pad.bottom || pad.right) widened.right += (padded[3] - ys[3]) * st[1];
  te::Tensor xp = phases ? pad_phases(x, widened, st[1], c.name) : pad_hw(x, widened, c.name);
  const int64_t xp_width = xp->shape.back();
  auto column = [&](const Expr& e) { return xp == x && padded[3] != ys[3] ? clamp_index(e, xp_width) : e; };
  te::Tensor yp = te::compute(
      padded,
      [&](const te::Axes& i) -> te::Reduction {
        const Expr oc = padded[1] == ys[1] ? Expr(i[1]) : clamp_index(i[1], ys[1]);
        Expr ch = tir::add(tir::mul(tir::div(oc, tir::int_imm(og)), tir::int_imm(cg)), rc.var);
        if (groups == 1) ch = rc.var;
        Expr h = tir::add(tir::mul(i[2], tir::int_imm(st[0])), tir::mul(ry.var, tir::int_imm(dl[0])));
        Expr tap = tir::mul(rx.var, tir::int_imm(dl[1]));
        Expr in = phases ? (*xp)({i[0], ch, h, tir::mod(tap, tir::int_imm(st[1])),
                                  tir::add(i[3], tir::div(tap, tir::int_imm(st[1])))})
                         : (*xp)({i[0], ch, h, column(tir::add(tir::mul(i[3], tir::int_imm(st[1])), tap))});
        Expr prod = tir::mul(as_acc(in, acc), as_acc((*w)({oc, rc.var, ry.var, rx.var}), acc));
        return te::sum(prod, {rc, ry, rx});
      },
      padded_name(c.name, padded, ys));
  auto tiled_conv = [&](int row, std::vector<te::Tensor> materialized, te::Tensor window, int64_t stride) {
    return tiled_prefix(yp, ys, c.name, row, 3, std::move(materialized), std::move(window), stride);
  };
  // The padded input is computed once into a buffer: inlined, its bounds
  // checks would sit in the innermost loop and break its contiguous loads.
  // A depthwise conv (one input channel per output channel) shares no
  // input between channels: its tiles are output rows by columns of one
  // channel instead, each step one weight broadcast for every row of the
  // tile rather than one per channel.
  if (depthwise) {
    Lowered r = xp != x ? tiled_conv(2, {xp}, xp, 0) : tiled_conv(2, {}, nullptr, 0);
    if (r.anchors.empty()) return r;
    schedule::AnchorTile& tile = r.anchors.back();
    tile.taps_only = true;
    if (st[0] == 1) tile.row_tap_axis = 1;
    if (xp != x) {
      tile.window_per_channel = true;
      tile.window_row_axis = 2;
      tile.window_row_step = st[0];
      tile.window_row_span = (ws[2] - 1) * dl[0] + 1;
      if (phases) tile.window_unroll_axis = 3;
    }
    return r;
  }
  if (xp == x) return tiled_conv(1, {}, nullptr, weight_stride);
  Lowered r = tiled_conv(1, {xp}, xp, weight_stride);
  r.anchors.back().window_row_step = st[0];
  r.anchors.back().window_row_span = (ws[2] - 1) * dl[0] + 1;
  if (phases) r.anchors.back().window_unroll_axis = 3;
  return r;
}

// nn.conv2d_transpose(x: (N, C, H, W), w: (C, O/g, KH, KW)): output (i, j)
// gathers the inputs that scatter to it, x[(i + pad - ky*d) / s] where that
// divides evenly and lies inside the input.
Lowered conv2d_transpose(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape;
  auto conv = conv_attrs(c);
  if (!conv) return unsupported("strides and dilation must have 2 values");
  const std::vector<int64_t>&st = conv->strides, &dl = conv->dilation;
  const Pad2d pad = conv->pad;
  const int64_t groups = conv->groups;
  int64_t cg = xs[1] / groups, og = ws[1];
  tir::DataType acc = acc_type(c);
  te::IterVar rc = te::reduce_axis(cg, "rc"), ry = te::reduce_axis(ws[2], "ry"),
              rx = te::reduce_axis(ws[3], "rx");
  // A kernel as large as its stride, unpadded: each output element has one
  // tap per input channel (the upsampling of segmentation heads).
  std::vector<int64_t> op = c.attrs.get_ints("output_padding");
  bool one_tap = ws[2] == st[0] && ws[3] == st[1] && dl[0] == 1 && dl[1] == 1 && pad.top == 0 &&
                 pad.left == 0 && pad.bottom == 0 && pad.right == 0 && op.size() == 2 && op[0] == 0 &&
                 op[1] == 0;
  if (one_tap) {
    te::IterVar r1 = te::reduce_axis(cg, "rc");
    // On the output channels and columns its tiles want (conv_rows,
    // conv_columns), as a direct conv: the extra ones read the last
    // channel's weights and zero columns of the input, padded into a
    // buffer for them (a quarter of the output's size for a 2x2 / 2 conv;
    // a clamped column would make each lane's read its own), and are never
    // stored.
    const Shape& ys = c.out[0].shape;
    Shape padded = ys;
    padded[3] = schedule::conv_columns(c.cpu, ys[3]);
    // Consecutive output channels' weights (w[c, oc, ky, kx]) are KH * KW elements apart.
    const int64_t weight_stride = ws[2] * ws[3] * w->dtype.bytes();
    if (groups == 1) padded[1] = schedule::conv_rows(c.cpu, ys[1], padded[3], weight_stride);
    Pad2d widen;
    widen.right = std::max<int64_t>(0, (padded[3] + st[1] - 1) / st[1] - xs[3]);
    const te::Tensor xw = pad_hw(x, widen, c.name);
    te::Tensor yp = te::compute(
        padded,
        [&](const te::Axes& i) -> te::Reduction {
          Expr ch = groups == 1
                        ? Expr(r1.var)
                        : tir::add(tir::mul(tir::div(i[1], tir::int_imm(og)), tir::int_imm(cg)), r1.var);
          Expr oc = groups == 1 ? Expr(i[1]) : tir::mod(i[1], tir::int_imm(og));
          if (padded[1] != ys[1]) oc = clamp_index(oc, ys[1]);
          Expr sh = tir::int_imm(st[0]), sw = tir::int_imm(st[1]);
          Expr xv = (*xw)({i[0], ch, tir::div(i[2], sh), tir::div(i[3], sw)});
          Expr wv = (*w)({ch, oc, tir::mod(i[2], sh), tir::mod(i[3], sw)});
          return te::sum(tir::mul(as_acc(xv, acc), as_acc(wv, acc)), {r1});
        },
        padded_name(c.name, padded, ys));
    // Each reduction step spreads its input vector over the tile's columns
    // (lanes j / s, two permutes for two registers) and broadcasts each
    // row's s weights: beyond what a 12-row tile of two registers leaves
    // free. At 12 rows LLVM kept the accumulators in registers only with its
    // loop strength reduction, which host code does without
    // (llvm_pipeline.cc): det's 2x2 / 2 upsampling conv 24 -> 24 at 80x80
    // took 0.26-0.58 ms; capped at 10 rows (8 for its 24 channels) 0.13-0.14
    // ms, with or without it.
    Lowered r = xw != x ? tiled_prefix(yp, ys, c.name, 1, 3, {xw}) : tiled_prefix(yp, ys, c.name, 1, 3);
    if (!r.anchors.empty()) r.anchors.back().max_rows = 10;
    return r;
  }
  auto source = [&](const Expr& o, const tir::Var& k, int64_t before, int64_t s, int64_t d, int64_t in,
                    Expr* index) {
    Expr num = tir::sub(tir::add(o, tir::int_imm(before)), tir::mul(k, tir::int_imm(d)));
    Expr q = tir::div(num, tir::int_imm(s));
    *index = clamp_index(q, in);
    Expr ok = all(tir::binary(tir::BinaryOp::GE, num, tir::int_imm(0)), tir::lt(q, tir::int_imm(in)));
    return s == 1 ? ok : all(ok, tir::eq(tir::mod(num, tir::int_imm(s)), tir::int_imm(0)));
  };
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        Expr ch = groups == 1
                      ? Expr(rc.var)
                      : tir::add(tir::mul(tir::div(i[1], tir::int_imm(og)), tir::int_imm(cg)), rc.var);
        Expr oc = groups == 1 ? Expr(i[1]) : tir::mod(i[1], tir::int_imm(og));
        Expr ih, iw;
        Expr ok = all(source(i[2], ry.var, pad.top, st[0], dl[0], xs[2], &ih),
                      source(i[3], rx.var, pad.left, st[1], dl[1], xs[3], &iw));
        Expr prod =
            tir::mul(as_acc((*x)({i[0], ch, ih, iw}), acc), as_acc((*w)({ch, oc, ry.var, rx.var}), acc));
        return te::sum(tir::select(ok, prod, constant(0, acc)), {rc, ry, rx});
      },
      c.name);
  return tiled(y, 1, 3);
}

// ---------------------------------------------------------------- dense and matmul

// Element k of the data row that output i reads in x @ W (dense and
// matmul_packed: x[..., k], its leading axes those of i but the last):
// with `m`, the row axis is read at m (the clamped row of a padded tile).
Expr data_row(const te::Tensor& x, const te::Axes& i, const Expr& m, const Expr& k) {
  std::vector<Expr> xi(i.begin(), i.end() - (m ? 2 : 1));
  if (m) xi.push_back(m);
  xi.push_back(k);
  return (*x)(xi);
}

// `t` with its last axis extended to `extent` by zeros.
// With `as`, the values converted to that type.
te::Tensor zero_padded_last_axis(const te::Tensor& t, int64_t extent, const std::string& name,
                                 std::optional<tir::DataType> as = std::nullopt) {
  const int64_t n = t->shape.back();
  const tir::DataType type = as.value_or(t->dtype);
  Shape padded = t->shape;
  padded.back() = extent;
  return te::compute(
      padded,
      [&](const te::Axes& i) {
        std::vector<Expr> idx(i.begin(), i.end());
        idx.back() = clamp_index(i.back(), n);
        Expr v = (*t)(idx);
        if (type != t->dtype) v = tir::cast(type, v);
        return tir::select(tir::lt(i.back(), tir::int_imm(n)), v, constant(0, type));
      },
      name);
}

// The product y[..., m, n] = sum over k of a(..., m, k) * b(k, n) on `cols`
// columns (>= N), with `b` already padded to them; the op's output is the
// first N columns. With `pad_rows` (`a` alone reads the row axis m) the
// product is computed on the rows its register tiles want (tile_rows), and
// `a` is given the row to read, clamped to M: the op's output is the first
// M rows. Without, `a` is given no row and reads the axes.
Lowered product(const LowerContext& c,
                const std::function<Expr(const te::Axes&, const Expr&, const Expr&)>& a,
                const std::function<Expr(const te::Axes&, const Expr&)>& b, int64_t K, int64_t cols,
                bool pad_rows, std::vector<te::Tensor> materialized, te::Tensor panel) {
  tir::DataType acc = acc_type(c);
  const Shape& ys = c.out[0].shape;
  if (ys.size() < 2) {
    te::IterVar k = te::reduce_axis(K, "k");
    te::Tensor y = te::compute(
        ys,
        [&](const te::Axes& i) -> te::Reduction {
          return te::sum(tir::mul(as_acc(a(i, nullptr, k.var), acc), as_acc(b(i, k.var), acc)), {k});
        },
        c.name);
    return lowered({y}, std::move(materialized));
  }
  const size_t row = ys.size() - 2;
  const int64_t M = ys[row];
  Shape padded = ys;
  padded.back() = cols;
  // The left operand's rows are K elements apart (x[..., m, k]).
  const int64_t row_stride_bytes = K * c.inputs[0]->dtype.bytes();
  if (pad_rows) padded[row] = schedule::tile_rows(c.cpu, M, cols, row_stride_bytes);
  te::IterVar k = te::reduce_axis(K, "k");
  te::Tensor yp = te::compute(
      padded,
      [&](const te::Axes& i) -> te::Reduction {
        Expr m;
        if (pad_rows) m = padded[row] == M ? Expr(i[row]) : clamp_index(i[row], M);
        return te::sum(tir::mul(as_acc(a(i, m, k.var), acc), as_acc(b(i, k.var), acc)), {k});
      },
      padded_name(c.name, padded, ys));
  Lowered r = tiled_prefix(yp, ys, c.name, int(row), -1, std::move(materialized), nullptr, row_stride_bytes);
  r.anchors.back().panel = panel;
  return r;
}

// w^T, computed once into a buffer (padded to the tile columns) so the
// product reads rows of it.
Lowered dense(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape& xs = c.in[0].shape;
  int64_t K = xs.back(), N = c.in[1].shape[0];
  int64_t cols = c.out[0].shape.size() >= 2 ? schedule::product_columns(c.cpu, N) : N;
  tir::DataType t = w->dtype;
  te::Tensor wt = te::compute(
      {K, cols},
      [&](const te::Axes& i) {
        Expr v = (*w)({clamp_index(i[1], N), i[0]});
        return cols == N ? v : tir::select(tir::lt(i[1], tir::int_imm(N)), v, constant(0, t));
      },
      c.name + "_wt");
  auto a = [&](const te::Axes& i, const Expr& m, const Expr& k) { return data_row(x, i, m, k); };
  auto b = [&](const te::Axes& i, const Expr& k) { return (*wt)({k, i.back()}); };
  return product(c, a, b, K, cols, true, {wt}, wt);
}

Lowered matmul(const LowerContext& c) {
  const te::Tensor &a = c.inputs[0], &b = c.inputs[1];
  Shape as = c.in[0].shape, bs = c.in[1].shape;
  const Shape& ys = c.out[0].shape;
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  int64_t K = as.back();
  // Output axes: batch..., [m], [n]; a 1-D operand has no m (or n) axis.
  size_t batch = ys.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  int64_t N = b_vec ? 1 : bs.back();
  int64_t cols = b_vec || ys.size() < 2 ? ys.back() : schedule::product_columns(c.cpu, N);
  std::vector<te::Tensor> materialized;
  te::Tensor bp = b;
  if (cols != ys.back()) {
    bp = zero_padded_last_axis(b, cols, c.name + "_b_padded");
    materialized.push_back(bp);
  }
  auto batch_of = [&](const te::Axes& i) { return te::Axes(i.begin(), i.begin() + std::ptrdiff_t(batch)); };
  auto lhs = [&](const te::Axes& i, const Expr& m, const Expr& k) {
    std::vector<Expr> ai;
    if (!a_vec) {
      ai = broadcast_index(batch_of(i), Shape(as.begin(), as.end() - 2));
      ai.push_back(m ? m : Expr(i[batch]));
    }
    ai.push_back(k);
    return (*a)(ai);
  };
  auto rhs = [&](const te::Axes& i, const Expr& k) {
    std::vector<Expr> bi;
    if (!b_vec) {
      Shape bb(bs.begin(), bs.end() - 2);
      bi = broadcast_index(batch_of(i), bb);
      bi.push_back(k);
      bi.push_back(i.back());
    } else {
      bi.push_back(k);
    }
    return (*bp)(bi);
  };
  return product(c, lhs, rhs, K, cols, !a_vec && !b_vec, materialized, b_vec ? te::Tensor() : bp);
}

// w (K, N), or (N, K) transposed, in panels of c columns:
// y[p, k, j] = w[k, p * c + j] (zero past N); int8 in groups of four rows,
// y[p, g, j, r] = w[g * 4 + r, p * c + j] (zero past K too). The pass
// pack-matmul-weights packs constants, which fold-constants computes.
Lowered pack_matmul_weight(const LowerContext& c) {
  const te::Tensor& w = c.inputs[0];
  const bool transpose = c.attrs.get_int("transpose") != 0;
  const Shape& ys = c.out[0].shape;
  const int64_t N = c.in[0].shape[transpose ? 0 : 1], K = c.in[0].shape[transpose ? 1 : 0];
  const bool fours = ys.size() == 4;  // groups of rows: four int8, two int16
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        Expr n = tir::add(tir::mul(i[0], tir::int_imm(ys[2])), i[2]);
        Expr k = fours ? tir::add(tir::mul(i[1], tir::int_imm(ys[3])), i[3]) : Expr(i[1]);
        Expr col = clamp_index(n, N), row = fours ? clamp_index(k, K) : k;
        Expr v = transpose ? (*w)({col, row}) : (*w)({row, col});
        Expr in = tir::lt(n, tir::int_imm(N));
        if (fours) in = all(in, tir::lt(k, tir::int_imm(K)));
        return tir::select(in, v, constant(0, w->dtype));
      },
      c.name);
  return lowered({y});
}

// x @ W, W packed at compile time (nn.pack_matmul_weight) into panels as
// wide as the product's register tile: column n of W is element
// [n / c, k, n % c], and each column tile reads its panel, contiguous and
// in place, with nothing copied per call.
//
// uint8 data by an int8 weight packed in groups of four rows ([n / c, k / 4,
// n % c, k % 4]): the group's four products innermost
// (AnchorTile::dot_of_four), under the tile's columns, so each vector of
// them is one dot_i8x4 of four bytes of a row of x, broadcast, by the
// panel's 4 x lanes weight bytes (form-dot-products: one vpdpbusd). Rows of
// x whose K is no multiple of 4 are copied, zero-padded, first. By an int16
// weight packed in pairs ([n / c, k / 2, n % c, k % 2]; a CPU without byte
// dot products), x is copied to int16 first, and each vector's two steps
// become one dot_i16x2 (vpmaddwd and an add).
Lowered matmul_packed_uint8(const LowerContext& c) {
  const te::Tensor& wp = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape, &ys = c.out[0].shape;
  const int64_t K = xs.back(), C = ws[2], g = ws[3];
  te::Tensor x = c.inputs[0];
  std::vector<te::Tensor> materialized;
  if (g == 2) {
    x = zero_padded_last_axis(x, ws[1] * 2, c.name + "_int16", tir::DataType::int_(16));
    materialized.push_back(x);
  } else if (K % g != 0) {
    x = zero_padded_last_axis(x, ws[1] * g, c.name + "_rows");
    materialized.push_back(x);
  }
  const tir::DataType i32 = tir::DataType::int32();
  te::IterVar rg = te::reduce_axis(ws[1], "rg"), rk = te::reduce_axis(g, "rk");
  auto dot = [&](const te::Axes& i, const Expr& m) {
    const Expr& n = i.back();
    Expr k = tir::add(tir::mul(rg.var, tir::int_imm(g)), rk.var);
    Expr w = (*wp)({tir::div(n, tir::int_imm(C)), rg.var, tir::mod(n, tir::int_imm(C)), rk.var});
    return te::sum(tir::mul(as_acc(data_row(x, i, m, k), i32), as_acc(w, i32)), {rg, rk});
  };
  if (ys.size() < 2) {
    te::Tensor y = te::compute(
        ys, [&](const te::Axes& i) -> te::Reduction { return dot(i, nullptr); }, c.name);
    return lowered({y}, std::move(materialized));
  }
  const size_t row = ys.size() - 2;
  const int64_t M = ys[row];
  const int64_t row_stride_bytes = x->shape.back() * x->dtype.bytes();
  Shape padded = ys;
  padded.back() = ws[0] * C;
  padded[row] = schedule::tile_rows(c.cpu, M, padded.back(), row_stride_bytes);
  te::Tensor yp = te::compute(
      padded,
      [&](const te::Axes& i) -> te::Reduction {
        return dot(i, padded[row] == M ? Expr(i[row]) : clamp_index(i[row], M));
      },
      padded_name(c.name, padded, ys));
  Lowered r = tiled_prefix(yp, ys, c.name, int(row), -1, std::move(materialized), nullptr, row_stride_bytes);
  r.anchors.back().prepacked = true;
  r.anchors.back().dot_of_four = true;
  return r;
}

Lowered matmul_packed(const LowerContext& c) {
  if (c.in[0].dtype == DType::UInt8) return matmul_packed_uint8(c);
  const te::Tensor &x = c.inputs[0], &wp = c.inputs[1];
  const Shape& ws = c.in[1].shape;
  const int64_t K = ws[1], C = ws[2];
  const bool matrix = c.out[0].shape.size() >= 2;
  auto a = [&](const te::Axes& i, const Expr& m, const Expr& k) { return data_row(x, i, m, k); };
  auto b = [&](const te::Axes& i, const Expr& k) {
    const Expr& n = i.back();
    return (*wp)({tir::div(n, tir::int_imm(C)), k, tir::mod(n, tir::int_imm(C))});
  };
  Lowered r = product(c, a, b, K, matrix ? ws[0] * C : c.out[0].shape.back(), matrix, {}, te::Tensor());
  for (schedule::AnchorTile& t : r.anchors) t.prepacked = true;
  return r;
}

// ---------------------------------------------------------------- pools

struct Window {
  int64_t k, s, d, pad_before, pad_after, in;
};

struct Windows {
  Window y, x;
};

std::optional<Windows> windows(const LowerContext& c, std::string* why) {
  std::vector<int64_t> k = c.attrs.get_ints("pool_size"), s = c.attrs.get_ints("strides"),
                       d = c.attrs.get_ints("dilation");
  if (k.size() != 2 || s.size() != 2 || d.size() != 2) {
    *why = "pool_size, strides and dilation must have 2 values";
    return std::nullopt;
  }
  Pad2d p = pad2d_attr(c.op, c.attrs);
  const Shape& xs = c.in[0].shape;
  Windows w{{k[0], s[0], d[0], p.top, p.bottom, xs[2]}, {k[1], s[1], d[1], p.left, p.right, xs[3]}};
  // A window of padding only (padding at least the window) is 0 in the
  // reference; such shapes stay there.
  if (p.top >= k[0] || p.bottom >= k[0] || p.left >= k[1] || p.right >= k[1]) {
    *why = "padding as large as the window";
    return std::nullopt;
  }
  return w;
}

// Position in the input of tap r of output o.
Expr tap(const Expr& o, const Expr& r, const Window& w) {
  return tir::add(tir::sub(tir::mul(o, tir::int_imm(w.s)), tir::int_imm(w.pad_before)),
                  tir::mul(r, tir::int_imm(w.d)));
}

Lowered max_pool2d(const LowerContext& c) {
  std::string why;
  auto w = windows(c, &why);
  if (!w) return unsupported(why);
  const te::Tensor& x = c.inputs[0];
  te::IterVar ry = te::reduce_axis(w->y.k, "ry"), rx = te::reduce_axis(w->x.k, "rx");
  tir::DataType t = x->dtype;
  Expr lowest = t.is_float()
                    ? tir::float_imm(-std::numeric_limits<double>::infinity(), t)
                    : tir::int_imm(t.is_uint() ? 0 : std::numeric_limits<int64_t>::min() >> (64 - t.bits), t);
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        Expr h = tap(i[2], ry.var, w->y), v = tap(i[3], rx.var, w->x);
        std::vector<Expr> at = {i[0], i[1], clamp_index(h, w->y.in), clamp_index(v, w->x.in)};
        if (c.in[0].shape.size() == 5) at.push_back(i[4]);  // channel blocks
        Expr val = (*x)(at);
        return te::max(tir::select(all(in_range(h, 0, w->y.in), in_range(v, 0, w->x.in)), val, lowest),
                       {ry, rx});
      },
      c.name);
  return lowered({y});
}

Lowered avg_pool2d(const LowerContext& c) {
  std::string why;
  auto w = windows(c, &why);
  if (!w) return unsupported(why);
  const te::Tensor& x = c.inputs[0];
  if (!x->dtype.is_float()) return unsupported("integer average pooling (rounds half away from zero)");
  bool include_pad = c.attrs.get_int("count_include_pad") != 0;
  const Shape& ys = c.out[0].shape;
  tir::DataType t = x->dtype;
  te::IterVar ry = te::reduce_axis(w->y.k, "ry"), rx = te::reduce_axis(w->x.k, "rx");
  te::Tensor sum = te::compute(
      ys,
      [&](const te::Axes& i) -> te::Reduction {
        Expr h = tap(i[2], ry.var, w->y), v = tap(i[3], rx.var, w->x);
        Expr val = (*x)({i[0], i[1], clamp_index(h, w->y.in), clamp_index(v, w->x.in)});
        return te::sum(
            tir::select(all(in_range(h, 0, w->y.in), in_range(v, 0, w->x.in)), val, constant(0, t)),
            {ry, rx});
      },
      c.name + "_sum");
  // The number of taps that count, per output position.
  te::IterVar cy = te::reduce_axis(w->y.k, "cy"), cx = te::reduce_axis(w->x.k, "cx");
  te::Tensor count = te::compute(
      {ys[2], ys[3]},
      [&](const te::Axes& i) -> te::Reduction {
        Expr h = tap(i[0], cy.var, w->y), v = tap(i[1], cx.var, w->x);
        Expr inside = include_pad ? all(in_range(h, -w->y.pad_before, w->y.in + w->y.pad_after),
                                        in_range(v, -w->x.pad_before, w->x.in + w->x.pad_after))
                                  : all(in_range(h, 0, w->y.in), in_range(v, 0, w->x.in));
        return te::sum(tir::select(inside, constant(1, t), constant(0, t)), {cy, cx});
      },
      c.name + "_count");
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        Expr n = (*count)({i[2], i[3]});
        return tir::select(tir::eq(n, constant(0, t)), constant(0, t), tir::div((*sum)(i), n));
      },
      c.name);
  return lowered({y});
}

Lowered adaptive_avg_pool2d(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  if (!x->dtype.is_float()) return unsupported("integer average pooling (rounds half away from zero)");
  const Shape &xs = c.in[0].shape, &ys = c.out[0].shape;
  tir::DataType t = x->dtype;
  // Bin o of an axis of size `in` with `out` bins covers [o*in/out, ceil((o+1)*in/out)).
  auto start = [](int64_t o, int64_t in, int64_t out) { return o * in / out; };
  auto end = [](int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; };
  auto widest = [&](int64_t in, int64_t out) {
    int64_t k = 0;
    for (int64_t o = 0; o < out; ++o) k = std::max(k, end(o, in, out) - start(o, in, out));
    return k;
  };
  int64_t H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  if (OH == 1 && OW == 1 && H > 0 && W > 0) {
    // Global pooling (squeeze-and-excitation blocks): the sums of columns
    // first, a reduction over rows whose inner loop runs along a row, so it
    // reads the image as contiguous vectors; then the sum of those.
    te::IterVar rh = te::reduce_axis(H, "rh"), rw = te::reduce_axis(W, "rw");
    te::Tensor columns = te::compute(
        {xs[0], xs[1], W},
        [&](const te::Axes& i) -> te::Reduction {
          return te::sum((*x)({i[0], i[1], rh.var, i[2]}), {rh});
        },
        c.name + "_columns");
    te::Tensor sum = te::compute(
        ys,
        [&](const te::Axes& i) -> te::Reduction {
          return te::sum((*columns)({i[0], i[1], rw.var}), {rw});
        },
        c.name + "_sum");
    te::Tensor y = te::compute(
        ys, [&](const te::Axes& i) { return tir::div((*sum)(i), constant(double(H * W), t)); }, c.name);
    return lowered({y});
  }
  te::IterVar ry = te::reduce_axis(widest(H, OH), "ry"), rx = te::reduce_axis(widest(W, OW), "rx");
  auto start_expr = [](const Expr& o, int64_t in, int64_t out) {
    return tir::div(tir::mul(o, tir::int_imm(in)), tir::int_imm(out));
  };
  auto end_expr = [](const Expr& o, int64_t in, int64_t out) {
    return tir::div(tir::add(tir::mul(tir::add(o, tir::int_imm(1)), tir::int_imm(in)), tir::int_imm(out - 1)),
                    tir::int_imm(out));
  };
  te::Tensor sum = te::compute(
      ys,
      [&](const te::Axes& i) -> te::Reduction {
        Expr h = tir::add(start_expr(i[2], H, OH), ry.var), v = tir::add(start_expr(i[3], W, OW), rx.var);
        Expr inside = all(tir::lt(h, end_expr(i[2], H, OH)), tir::lt(v, end_expr(i[3], W, OW)));
        Expr val = (*x)({i[0], i[1], clamp_index(h, H), clamp_index(v, W)});
        return te::sum(tir::select(inside, val, constant(0, t)), {ry, rx});
      },
      c.name + "_sum");
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        Expr n = tir::mul(tir::sub(end_expr(i[2], H, OH), start_expr(i[2], H, OH)),
                          tir::sub(end_expr(i[3], W, OW), start_expr(i[3], W, OW)));
        return tir::div((*sum)(i), tir::cast(t, n));
      },
      c.name);
  return lowered({y});
}

// ---------------------------------------------------------------- batch_norm and pad

Lowered batch_norm(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  if (!x->dtype.is_float()) return unsupported("batch_norm of integers");
  size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), c.in[0].shape.size()));
  double eps = c.attrs.get_float("epsilon");
  const auto& in = c.inputs;
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        Expr ch = i[axis];
        Expr inv =
            tir::call_intrinsic(tir::Intrinsic::Sqrt, {tir::add((*in[4])({ch}), constant(eps, x->dtype))});
        Expr norm = tir::div(tir::sub((*x)(i), (*in[3])({ch})), inv);
        return tir::add(tir::mul(norm, (*in[1])({ch})), (*in[2])({ch}));
      },
      c.name);
  return lowered({y});
}

Lowered pad(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const Shape& xs = c.in[0].shape;
  std::vector<int64_t> pw = c.attrs.get_ints("pad_width");
  const std::string& mode = c.attrs.get_string("mode");
  double value = c.attrs.get_float("pad_value");
  // An integer pad value the data's type holds exactly (a uint8 zero point
  // of 128, quantize-convs), so no conversion rule is in question.
  if (!x->dtype.is_float()) {
    const bool unsigned_ = x->dtype.is_uint() || x->dtype.is_bool();
    const int bits = std::min(53, int(x->dtype.bits) - (unsigned_ ? 0 : 1));
    const double hi = std::ldexp(1.0, bits) - 1, lo = unsigned_ ? 0 : -hi - 1;
    if (value != std::trunc(value) || value < lo || value > hi)
      return unsupported("an integer pad value that its type does not hold");
  }
  if (mode != "constant" && mode != "edge" && mode != "reflect") return unsupported("pad mode " + mode);
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        std::vector<Expr> src;
        Expr inside;
        for (size_t k = 0; k < xs.size(); ++k) {
          Expr r = tir::sub(i[k], tir::int_imm(pw[2 * k]));
          int64_t n = xs[k];
          if (mode == "reflect") {
            r = tir::call_intrinsic(tir::Intrinsic::Abs, {r});
            r = tir::select(tir::binary(tir::BinaryOp::GE, r, tir::int_imm(n)),
                            tir::sub(tir::int_imm(2 * (n - 1)), r), r);
          }
          if (mode == "constant") inside = inside ? all(inside, in_range(r, 0, n)) : in_range(r, 0, n);
          src.push_back(clamp_index(r, n));
        }
        Expr v = (*x)(src);
        return inside ? tir::select(inside, v, constant(value, x->dtype)) : v;
      },
      c.name);
  return lowered({y});
}

}  // namespace

void register_nn_lowerings(LoweringTable& t) {
  t.add("nn.conv2d", OpPattern::Anchor, conv2d);
  t.add("nn.conv2d_transpose", OpPattern::Anchor, conv2d_transpose);
  t.add("nn.dense", OpPattern::Anchor, dense);
  t.add("matmul", OpPattern::Anchor, matmul);
  t.add("nn.pack_matmul_weight", OpPattern::Opaque, pack_matmul_weight, Dtypes::Any);
  t.add("nn.matmul_packed", OpPattern::Anchor, matmul_packed, Dtypes::Any);
  t.add("nn.max_pool2d", OpPattern::Anchor, max_pool2d);
  t.add("nn.avg_pool2d", OpPattern::Anchor, avg_pool2d);
  t.add("nn.adaptive_avg_pool2d", OpPattern::Anchor, adaptive_avg_pool2d);
  t.add("nn.batch_norm", OpPattern::Injective, batch_norm);
  t.add("nn.pad", OpPattern::Injective, pad);
}

}  // namespace kiln::lower
