// Channel-blocked layouts (src/op/nn_blocked.cc) as tensor expressions:
//
//   nn.block_channels(x) {block=c}  =>  y[n, b, h, w, i] = x[n, b * c + i, h, w]
//   nn.unblock_channels(x)          =>  y[n, ch, h, w]   = x[n, ch / c, h, w, ch % c]
//   nn.conv2d_blocked(x, w)         =>
//     xp[n, b, h, w, i] = select(inside, x[n, b, h - pad_top, w - pad_left, i], 0)
//     y[n, p, oh, ow, o] = sum over rb, ry, rx, ri of
//                          xp[n, rb, oh*sh + ry*dh, ow*sw + rx*dw, ri] * w[p, rb, ry, rx, ri, o]
//     (depthwise: sum over ry, rx of xp[n, p, ..., o] * w[p, 0, ry, rx, 0, o];
//      strided depthwise, reads_input_directly: of x at the clamped position
//      times select(inside, w[p, 0, ry, rx, 0, o], 0), no xp)
//
// A blocked conv is tiled with its output columns as the tile's rows and
// the channels of a block (one vector) as its columns: each step of the
// reduction loads c weights once and multiply-adds them into every column
// of the tile. The layout changes are kernels of their own (opaque): an
// anchor's epilogue that changed the layout would leave the conv untiled.
#include <algorithm>

#include "lower/lower.h"
#include "op/nn_internal.h"

namespace kiln::lower {
namespace {

using tir::Expr;

// The lanes of a transposed copy between a blocked layout of `block`
// channels and rows of `width` columns (TransposeTile): the widest vector
// of the target's lanes (at most 16, at least 4) that divides both; 0: none
// (a row of 10 columns), the copy is gathered lane by lane. With AVX2, det's
// unblock of 192 channels at 20x20 in 4 x 4 transposes: 20 -> 8 us, its
// block of 96 channels at 40x40 in 8 x 8: 48 -> 26 us; with AVX-512, 48
// channels at 80x80 in 16 x 16: 105 -> 76 us, and 4 x 4 transposes of
// 16-channel blocks (det's unblocks at 20x20) 27 -> 9 us and 13 -> 6 us.
// float32 and bytes (a quantized model's uint8 values; 64 channels at
// 56x56 unblocked in 8 x 8 byte transposes: 71 -> 15 us); not float16.
int64_t transpose_lanes(const LowerContext& c, int64_t block, int64_t width) {
  const int64_t widest = std::min<int64_t>(16, c.cpu.float32_lanes());
  for (int64_t lanes = widest; lanes >= 4; lanes /= 2)
    if (block % lanes == 0 && width % lanes == 0) return lanes;
  return 0;
}

// Whether a padded depthwise conv in blocks reads its input where it lies
// instead of padding it into a window first: when its stride exceeds 1.
// Then each input vector the window copies (a load, a store) feeds only
// KH x KW / (sh x sw) multiply-adds, and the copy costs as much as the
// conv: reading in place, with each tap's weight zeroed where its input
// falls in the padding (a test of the row and column, which simplify
// folds for all but a tile's first and last rows and columns), 3x3/2 on
// 96 channels at 112x112 takes 0.075 ms instead of 0.140 with AVX-512
// (oneDNN 0.086; one thread, Zen 5), 0.107-0.117 instead of 0.122 with
// AVX2 code; 5x5/2 on 144 at 56x56 0.055 instead of 0.067 with AVX-512. Not a
// 5x5 kernel with AVX2's 16 registers: its tiles of 8 accumulators, each
// step's tests for two rows and a column around them, ran 0.159 ms
// against 0.092 from the window. Nor stride 1, whose window rows serve
// KH x KW multiply-adds each (3x3 on 240 channels at 12x80: 0.036 ms from
// the window, 0.041 in place).
bool reads_input_directly(const LowerContext& c, const std::vector<int64_t>& strides, int64_t kernel_rows) {
  if (strides[0] == 1 && strides[1] == 1) return false;
  return kernel_rows <= 3 || c.cpu.vector_registers >= 32;
}

// The image's positions (h * W + w, padded to whole tiles) a pointwise
// conv in blocks (1 x 1, stride 1, no padding) is computed on instead of
// its output columns, or 0 to keep the columns: positions when the columns
// make tiles of fewer than kMinAccumulators useful accumulators and under
// 4/5 of those the positions make. AVX2's 7 columns (7 x 7 images) made
// tiles of 7 x 1 blocks, where two blocks take 17 of its 16 registers; the
// 49 positions make 6 x 2 (on 54), as a product's rows would: 960 -> 160
// channels 0.81x -> 0.95x oneDNN. (14 columns make 2 x 4 blocks, 8; the
// positions' 4 x 3 ran 0.93x -> 0.88x.)
int64_t pointwise_positions(const LowerContext& c, const std::vector<int64_t>& strides, const Pad2d& pad,
                            bool pair_blocks, int64_t row_stride) {
  const Shape &ws = c.in[1].shape, &ys = c.out[0].shape;
  if (ws[2] != 1 || ws[3] != 1 || strides[0] != 1 || strides[1] != 1 || c.cpu.scratchpad_bytes) return 0;
  if (pad.top || pad.left || pad.bottom || pad.right || ys[2] < 2) return 0;
  const double by_columns =
      schedule::blocked_conv_tile(c.cpu, ys[3], pair_blocks ? ys[1] : ys[2], pair_blocks, row_stride)
          .accumulators;
  const schedule::BlockedConvTile by_positions =
      schedule::blocked_conv_tile(c.cpu, ys[2] * ys[3], pair_blocks ? ys[1] : 1, pair_blocks, row_stride);
  if (by_columns >= double(schedule::kMinAccumulators) || by_positions.accumulators < 1.25 * by_columns)
    return 0;
  return by_positions.rows;
}

Lowered block_channels(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const int64_t block = c.out[0].shape[4];
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        return (*x)({i[0], tir::add(tir::mul(i[1], tir::int_imm(block)), i[4]), i[2], i[3]});
      },
      c.name);
  Lowered r = lowered({y});
  // Blocks of `lanes` columns of `lanes` channels (y's columns read x contiguously).
  if (const int64_t lanes = transpose_lanes(c, block, c.out[0].shape[3]);
      lanes && (x->dtype.bytes() == 4 || x->dtype.bytes() == 1))
    r.transposes.push_back({y, 3, lanes, lanes});
  return r;
}

Lowered unblock_channels(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const Expr block = tir::int_imm(c.in[0].shape[4]);
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) {
        return (*x)({i[0], tir::div(i[1], block), i[2], i[3], tir::mod(i[1], block)});
      },
      c.name);
  Lowered r = lowered({y});
  // Whole blocks of channels (y's channels read x contiguously) by `lanes` columns.
  const int64_t b = c.in[0].shape[4];
  if (const int64_t lanes = transpose_lanes(c, b, c.out[0].shape[3]);
      lanes && (x->dtype.bytes() == 4 || x->dtype.bytes() == 1))
    r.transposes.push_back({y, 1, b, lanes});
  return r;
}

// (O / ob, I / ib, KH, KW, ib, ob), or an integer weight's groups of g
// input channels (O / ob, I / ib, KH, KW, ib / g, ob, g).
Lowered block_conv_weight(const LowerContext& c) {
  const te::Tensor& w = c.inputs[0];
  const Shape& ys = c.out[0].shape;
  const bool groups = ys.size() == 7;
  const Expr ob = tir::int_imm(ys[5]);
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) {
        Expr in = groups ? tir::add(tir::mul(i[4], tir::int_imm(ys[6])), i[6]) : Expr(i[4]);
        const int64_t ib = groups ? ys[4] * ys[6] : ys[4];
        return (*w)(
            {tir::add(tir::mul(i[0], ob), i[5]), tir::add(tir::mul(i[1], tir::int_imm(ib)), in), i[2], i[3]});
      },
      c.name);
  return lowered({y});
}

// A uint8 by int8 conv in blocks (nn.block_conv_weight's int8 layout):
//   y[n, p, oh, ow, o] = sum over rb, ry, rx, rg, rk of
//     xp[n, rb, oh*sh + ry*dh, ow*sw + rx*dw, rg*4 + rk] * w[p, rb, ry, rx, rg, o, rk]
// in int32, tiled as the float32 conv in blocks is (the tile's rows output
// columns, its vector a block of output channels, blocks paired), with the
// group's four channels rk innermost (AnchorTile::dot_of_four): each
// vector's four steps become one dot_i8x4 of four bytes of the input,
// broadcast, by the block's 4 x c weight bytes (form-dot-products: one
// vpdpbusd). The lanes are output channels, so narrow maps and strides
// fill them as wide ones do, where NCHW's lanes of output columns
// (conv2d_uint8_dot) idle on a 7x7 map and scatter with a stride.
//
// By an int16 weight in pairs of channels (a CPU without byte dot
// products) the data is copied to int16 as it is padded, and each
// vector's two steps become one dot_i16x2 (vpmaddwd and an add) of two
// int16 channels of the input, broadcast, by the block's 2 x c weights.
Lowered conv2d_blocked_uint8(const LowerContext& c, const std::vector<int64_t>& st,
                             const std::vector<int64_t>& dl, const Pad2d& p) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape& ys = c.out[0].shape;
  const int64_t group = c.in[1].shape[6];
  const te::Tensor xp =
      group == 2 ? widened_pad_hw(x, p, tir::DataType::int_(16), c.name) : pad_hw(x, p, c.name);
  const bool pair_blocks = ys[1] % 2 == 0 || ys[1] % 3 == 0;
  const int64_t row_stride = st[1] * c.in[0].shape[4];
  Shape padded = ys;
  padded[3] = schedule::blocked_conv_rows(c.cpu, ys[3], pair_blocks ? ys[1] : ys[2], pair_blocks, row_stride);
  const int64_t read_width = xp->shape[3];
  const tir::DataType i32 = tir::DataType::int32();
  te::IterVar rb = te::reduce_axis(c.in[1].shape[1], "rb"), ry = te::reduce_axis(c.in[1].shape[2], "ry"),
              rx = te::reduce_axis(c.in[1].shape[3], "rx"), rg = te::reduce_axis(c.in[1].shape[4], "rg"),
              rk = te::reduce_axis(group, "rk");
  auto tap = [&](const Expr& o, const tir::Var& k, size_t axis) {
    return tir::add(tir::mul(o, tir::int_imm(st[axis])), tir::mul(k, tir::int_imm(dl[axis])));
  };
  te::Tensor yp = te::compute(
      padded,
      [&](const te::Axes& i) -> te::Reduction {
        Expr v = tap(i[3], rx.var, 1);
        if (padded != ys) v = clamp_index(v, read_width);
        Expr channel = tir::add(tir::mul(rg.var, tir::int_imm(group)), rk.var);
        Expr prod = tir::mul(tir::cast(i32, (*xp)({i[0], rb.var, tap(i[2], ry.var, 0), v, channel})),
                             tir::cast(i32, (*w)({i[1], rb.var, ry.var, rx.var, rg.var, i[4], rk.var})));
        return te::sum(prod, {rb, ry, rx, rg, rk});
      },
      padded_name(c.name, padded, ys));
  Lowered r = xp != x ? tiled_prefix(yp, ys, c.name, 3, 4, {xp}, nullptr, row_stride)
                      : tiled_prefix(yp, ys, c.name, 3, 4, {}, nullptr, row_stride);
  if (r.anchors.empty()) return r;
  r.anchors[0].pair_axis = pair_blocks ? 1 : 2;
  r.anchors[0].block_axis = 1;
  r.anchors[0].block_weight_bytes = shape_numel(c.in[1].shape);
  r.anchors[0].dot_of_four = true;
  return r;
}

Lowered conv2d_blocked(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &w = c.inputs[1];
  const Shape &xs = c.in[0].shape, &ws = c.in[1].shape;
  const std::vector<int64_t> st = c.attrs.get_ints("strides"), dl = c.attrs.get_ints("dilation");
  if (st.size() != 2 || dl.size() != 2) return unsupported("strides and dilation must have 2 values");
  const Pad2d p = pad2d_attr(c.op, c.attrs);
  if (c.in[0].dtype == DType::UInt8) return conv2d_blocked_uint8(c, st, dl, p);
  const bool depthwise = c.attrs.get_int("groups") > 1;
  // NCHW data is read as blocks of one channel.
  const bool nchw = xs.size() == 4;
  const int64_t block = nchw ? 1 : xs[4];
  auto at = [&](const te::Tensor& t, Expr n, Expr b, Expr h, Expr v, Expr i) {
    if (nchw) return (*t)({std::move(n), std::move(b), std::move(h), std::move(v)});
    return (*t)({std::move(n), std::move(b), std::move(h), std::move(v), std::move(i)});
  };
  const te::Tensor xp = pad_hw(x, p, c.name);
  const bool direct = depthwise && !nchw && xp != x && reads_input_directly(c, st, ws[2]);
  te::IterVar ry = te::reduce_axis(ws[2], "ry"), rx = te::reduce_axis(ws[3], "rx");
  te::IterVar rb = te::reduce_axis(ws[1], "rb"), ri = te::reduce_axis(ws[4], "ri");
  auto row = [&](const Expr& o, const tir::Var& k, size_t axis) {
    return tir::add(tir::mul(o, tir::int_imm(st[axis])), tir::mul(k, tir::int_imm(dl[axis])));
  };
  // The tile's rows are output columns, ow * sw * c floats apart in the
  // input. Two or three blocks of output channels share each input
  // broadcast; a depthwise conv, whose blocks share nothing, pairs output
  // rows instead, which share each weight vector (AnchorTile::pair_axis).
  // It is computed on the output columns those tiles want
  // (blocked_conv_rows: 17 columns make tiles of one), the extra ones
  // reading the last column of the input they read (clamped, one address
  // per tile row) and never stored.
  const Shape& ys = c.out[0].shape;
  const int64_t row_stride = st[1] * block * x->dtype.bytes(), out_blocks = ys[1];
  const bool pair_blocks = !depthwise && (out_blocks % 2 == 0 || out_blocks % 3 == 0);
  const int64_t computed = depthwise || nchw ? 0 : pointwise_positions(c, st, p, pair_blocks, row_stride);
  if (computed) {
    // The image's positions as one axis (the last tile's extra ones reading
    // the last position), tiled like output columns; the output is their
    // rows.
    const int64_t width = ys[3], positions = ys[2] * width;
    te::Tensor flat = te::compute(
        {ys[0], ys[1], 1, computed, ys[4]},
        [&](const te::Axes& i) -> te::Reduction {
          const Expr at = computed == positions ? Expr(i[3]) : clamp_index(i[3], positions);
          const Expr h = tir::div(at, tir::int_imm(width)), v = tir::mod(at, tir::int_imm(width));
          return te::sum(tir::mul((*x)({i[0], rb.var, h, v, ri.var}),
                                  (*w)({i[1], rb.var, tir::int_imm(0), tir::int_imm(0), ri.var, i[4]})),
                         {rb, ri});
        },
        c.name + "_positions");
    te::Tensor y = te::compute(
        ys,
        [&](const te::Axes& i) {
          return (*flat)(
              {i[0], i[1], tir::int_imm(0), tir::add(tir::mul(i[2], tir::int_imm(width)), i[3]), i[4]});
        },
        c.name);
    Lowered r = lowered({y});
    r.anchors.push_back({flat, 3, 4, nullptr, nullptr, row_stride});
    r.anchors[0].pair_axis = pair_blocks ? 1 : 2;
    return r;
  }
  Shape padded = ys;
  padded[3] =
      schedule::blocked_conv_rows(c.cpu, ys[3], pair_blocks ? out_blocks : ys[2], pair_blocks, row_stride);
  const bool exact = padded == ys;
  const bool windowed = xp != x && !direct;
  const int64_t read_width = (windowed ? xp : x)->shape[3];
  auto column = [&](const Expr& v) { return exact ? v : clamp_index(v, read_width); };
  te::Tensor yp = te::compute(
      padded,
      [&](const te::Axes& i) -> te::Reduction {
        Expr h = row(i[2], ry.var, 0), v = row(i[3], rx.var, 1);
        if (direct) {
          // The tap's input at the clamped position, times its weight where
          // the position is inside the image and 0 in the padding.
          const Expr hi = tir::sub(h, tir::int_imm(p.top)), vi = tir::sub(v, tir::int_imm(p.left));
          const Expr inside =
              tir::binary(tir::BinaryOp::And, index_within(hi, xs[2]), index_within(vi, xs[3]));
          const Expr weight = (*w)({i[1], tir::int_imm(0), ry.var, rx.var, tir::int_imm(0), i[4]});
          return te::sum(tir::mul((*x)({i[0], i[1], clamp_index(hi, xs[2]), clamp_index(vi, xs[3]), i[4]}),
                                  tir::select(inside, weight, constant(0, w->dtype))),
                         {ry, rx});
        }
        if (depthwise)
          return te::sum(tir::mul(at(xp, i[0], i[1], h, column(v), i[4]),
                                  (*w)({i[1], tir::int_imm(0), ry.var, rx.var, tir::int_imm(0), i[4]})),
                         {ry, rx});
        return te::sum(tir::mul(at(xp, i[0], rb.var, h, column(v), ri.var),
                                (*w)({i[1], rb.var, ry.var, rx.var, ri.var, i[4]})),
                       {rb, ry, rx, ri});
      },
      padded_name(c.name, padded, ys));
  // The padded input is computed whole, once: a band of output rows here
  // is one row of a few tiles, too little work to pad its window anew.
  const te::Tensor window = depthwise && windowed ? xp : nullptr;
  Lowered r = windowed ? tiled_prefix(yp, ys, c.name, 3, 4, {xp}, window, row_stride)
                       : tiled_prefix(yp, ys, c.name, 3, 4, {}, nullptr, row_stride);
  if (window) {
    r.anchors[0].window_row_step = st[0];
    r.anchors[0].window_row_span = (ws[2] - 1) * dl[0] + 1;
    r.anchors[0].window_per_channel = true;
  }
  r.anchors[0].taps_only = depthwise;
  r.anchors[0].pair_axis = pair_blocks ? 1 : 2;
  r.anchors[0].block_axis = 1;
  r.anchors[0].block_weight_bytes = w->dtype.bytes() * shape_numel(ws);
  return r;
}

}  // namespace

void register_layout_lowerings(LoweringTable& t) {
  t.add("nn.block_channels", OpPattern::Opaque, block_channels);
  t.add("nn.unblock_channels", OpPattern::Opaque, unblock_channels);
  // int16 weights: uint8 convs in vpmaddwd's pairs (lowering_dtypes_test).
  t.add("nn.block_conv_weight", OpPattern::Opaque, block_conv_weight, Dtypes::Any);
  t.add("nn.conv2d_blocked", OpPattern::Anchor, conv2d_blocked, Dtypes::Any);
}

}  // namespace kiln::lower
