// Register tiles for reductions that produce a matrix-like output (conv2d,
// dense, matmul): see AnchorTile in schedule.h.
//
// For conv2d y[n, oc, oh, ow] with an epilogue stage out (bias, activation),
// output channels outermost (the input re-read per row tile):
//
//   out:  n | oc_o | oh  (fused, parallel) | ow_o | oc_i (unrolled) | ow_i (vectorized)
//   y:    computed at ow_o: a local buffer of (1, RB, 1, CB) accumulators,
//         loops rc | ry | rx | oc_i (unrolled) | ow_i (vectorized)
//
// or innermost (n | oh | ow_o fused and parallel, then oc_o, the tile at
// oc_o; the weights re-read per column tile), whichever moves fewer bytes
// from beyond L2. Per reduction step the tile reads CB consecutive inputs
// and RB weights and does RB x CB multiply-adds into registers; the output
// is written once, with the epilogue applied. RB is the largest divisor of
// the rows that the target's registers hold, CB whole vectors where they
// divide the columns (else up to three vectors, the last partial), so every
// shape tiles without a remainder loop.
#include <algorithm>
#include <tuple>
#include <vector>

#include "schedule/schedule.h"

namespace kiln::schedule {
namespace {

namespace te = tir::te;

// Rows of accumulators: as many as the registers hold beside the operands
// (one input vector per column register and two broadcasts), up to 12:
// 6 rows of two vectors with AVX2 (12 of 16 registers), 12 with AVX-512
// (24 of 32; 14 rows, 28 registers, measured no faster).
//
// Each step of the reduction reads one element of every row of the tile's
// left operand (a matmul's A, a conv's weights), so those rows' cache lines
// must stay in L1 together. An x86 L1D has 64 sets of 64-byte lines and 8
// or more ways (32 KiB 8-way, 48 KiB 12-way; CpuTarget's l1_bytes and
// l1_ways): rows whose stride is a multiple of 4 KiB all fall into one set,
// and more rows than ways evict each other on every step (1024 x 1024
// float32 with 12 rows: about 0.9x of the 8-row tile on an 8-way L1). The
// rows are capped so that no set holds more of them than its ways less
// kL1WaysLeftFree: the right operand's lines and the prefetcher's pass
// through the same sets, and a set whose every way holds a row evicts one
// whenever they do (1024 x 1024 float32, 12 rows on a 12-way L1: 0.79x to
// 1.0x of oneDNN from run to run, Zen 5; 10 rows: 0.94x to 1.02x).
constexpr int64_t kL1Line = 64;
constexpr int64_t kL1WaysLeftFree = 2;

int64_t rows_in_one_l1_set(const CpuTarget& cpu, int64_t row_stride_bytes, int64_t rows) {
  const int64_t sets = std::max<int64_t>(1, cpu.l1_bytes / (kL1Line * cpu.l1_ways));
  std::vector<int64_t> count(size_t(sets), 0);
  int64_t most = 0;
  for (int64_t j = 0; j < rows; ++j)
    most = std::max(most, ++count[size_t((j * row_stride_bytes / kL1Line) % sets)]);
  return most;
}

// `paired_blocks`: each row's broadcast feeds one accumulator per block of
// the paired axis (a channel-blocked conv's `accumulator_rows_per_row`
// output-channel blocks), whose weight vectors stay in registers beside
// them and one broadcast.
int64_t row_block_limit(const CpuTarget& cpu, int64_t col_vectors, int64_t row_stride_bytes,
                        int64_t accumulator_rows_per_row = 1, bool paired_blocks = false) {
  const int64_t per_row = accumulator_rows_per_row;
  int64_t limit = std::min<int64_t>(
      12, paired_blocks ? (cpu.vector_registers - per_row - 1) / per_row
                        : (cpu.vector_registers - col_vectors - 2) / (col_vectors * per_row));
  if (row_stride_bytes > 0)
    while (limit > 1 && rows_in_one_l1_set(cpu, row_stride_bytes, limit) > cpu.l1_ways - kL1WaysLeftFree)
      --limit;
  return limit;
}
// A padded conv input is computed per band of output rows when there are at
// least this many bands to share among threads.
constexpr int64_t kMinBands = 16;
// Fewer bands, down to this many, still band the window when the weights
// every band reads whole fit in L2 (AnchorTile::band_weight_bytes).
constexpr int64_t kMinL2Bands = 8;
// Output rows a band pads its input for at most: a 3x3 conv pads 3 input
// rows per output row alone, 1.5 in bands of 4 (det's 3x3 96 -> 24 convs at
// 80x80 with AVX2 code: the padding was a fifth of their time).
constexpr int64_t kMaxBandRows = 4;
constexpr int64_t kColumnRuns = 16;

int64_t largest_divisor_up_to(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// A column block of one or two whole vectors when one divides the extent;
// else more than one vector's columns and up to three vectors, the last
// partial, when such a block divides it (40 columns with AVX-512: 16 + 16
// + 8, twice as fast as blocks of 8, half a register each); else a
// multiple of 8, else the largest divisor up to three vectors.
int64_t column_block(const CpuTarget& cpu, int64_t n) {
  const int64_t lanes = cpu.float32_lanes(), limit = 2 * lanes;
  for (int64_t d = limit; d >= lanes; d -= lanes)
    if (n % d == 0) return d;
  if (const int64_t d = largest_divisor_up_to(n, 3 * lanes); d > lanes) return d;
  for (int64_t d = limit; d >= 8; d -= 8)
    if (n % d == 0) return d;
  // No whole vectors divide it (a row of 20 or 10): up to three vectors,
  // the last one partial (vectorize-loops splits it into whole registers
  // and a shorter one).
  return largest_divisor_up_to(n, 3 * lanes);
}

// The output covers the anchor, or a prefix of its rows and columns (an
// anchor computed on rows or columns padded to whole tiles).
bool fits_in(const std::vector<int64_t>& out, const std::vector<int64_t>& anchor, size_t row, size_t col) {
  if (out.size() != anchor.size()) return false;
  for (size_t k = 0; k < out.size(); ++k)
    if (k == col || k == row ? out[k] > anchor[k] : out[k] != anchor[k]) return false;
  return true;
}

te::Stage* find_stage(te::Schedule& s, const te::Tensor& t) {
  for (const auto& st : s.stages())
    if (st->tensor() == t) return st.get();
  return nullptr;
}

int64_t column_vectors(const CpuTarget& cpu, int64_t cb) {
  return (cb + cpu.float32_lanes() - 1) / cpu.float32_lanes();
}

// Column tiles per packed panel: 1 while the left operand (rows x
// reduction) fits in half of the target's L2 (each row tile then reads its
// rows from L2 once per tile); else the most tiles whose panel stays within
// that half, dividing the tiles and leaving at least two panels to run in
// parallel.
int64_t panel_tiles(const CpuTarget& cpu, int64_t tiles, int64_t cb, int64_t rows, int64_t reduction) {
  const int64_t half_l2 = cpu.l2_bytes / 2;
  if (rows * reduction * 4 <= half_l2) return 1;
  for (int64_t t = std::min<int64_t>(tiles / 2, 8); t > 1; --t)
    if (tiles % t == 0 && t * cb * reduction * 4 <= half_l2) return t;
  return 1;
}

// Bands of several output rows for a conv's padded input (AnchorTile::
// window), when their padded rows overlap: `rows_loop` (the output rows, in
// steps of `rows_per_step`) split by as many steps as divide it, up to
// kMaxBandRows output rows, keeping kMinBands of the `bands` and a band's
// padded rows within half of L2; within three quarters of L1 when a band
// pads one channel (AnchorTile::window_per_channel), whose rows the tile
// reads again for every kernel tap, beside little else (a few weight
// vectors and its accumulators): AVX2's 5x5/2 depthwise on 144 channels at
// 56x56 padded 7 input rows per 2 output rows, within half, and 11 per 4
// within three quarters (20.8 of 32 KiB), 0.75x -> 0.80x oneDNN. Returns
// the inner loop (a band's rows), or null when bands of one step are best.
tir::Var split_bands(const CpuTarget& cpu, te::Stage& out, const AnchorTile& a, const tir::Var& rows_loop,
                     int64_t rows_per_step, int64_t bands) {
  if (a.window_row_span <= a.window_row_step) return tir::Var();
  int64_t steps = 0;
  for (const te::Leaf& l : out.leaves())
    if (l.var == rows_loop) steps = l.extent;
  // One padded row of every channel (or of one) and phase of one image.
  const std::vector<int64_t>& ws = a.window->shape;
  int64_t row_bytes = a.window->dtype.bytes();
  for (size_t k = a.window_per_channel ? 3 : 1; k < ws.size(); ++k)
    if (k != 2) row_bytes *= ws[k];
  const int64_t budget = a.window_per_channel ? cpu.l1_bytes * 3 / 4 : cpu.l2_bytes / 2;
  // A window of four channels a column (dot_of_four), built once per band
  // for every row tile, costs more per padded row: bands of up to twice the
  // rows, down to kMinL2Bands of them (64 -> 64 uint8 3x3 at 56x56: 2
  // output rows a band padded 4 rows, 8 pad 10).
  const int64_t max_rows = a.dot_of_four ? 2 * kMaxBandRows : kMaxBandRows;
  const int64_t min_bands = a.dot_of_four ? kMinL2Bands : kMinBands;
  int64_t band = 1;
  for (int64_t b = 2; b * rows_per_step <= max_rows && b <= steps; ++b) {
    const int64_t input_rows = (b * rows_per_step - 1) * a.window_row_step + a.window_row_span;
    if (steps % b == 0 && bands / b >= min_bands && input_rows * row_bytes <= budget) band = b;
  }
  if (band == 1) return tir::Var();
  return out.split(rows_loop, band).second;
}

// AnchorTile::output_period: the output's period axis split by the
// period, the inner loop unrolled just outside the innermost one.
void unroll_period(te::Stage& output, const AnchorTile& a) {
  const size_t rank = output.tensor()->shape.size();
  if (a.output_period_axis < 0 || size_t(a.output_period_axis) + 1 >= rank || a.output_period < 2 ||
      output.leaves().size() != rank)
    return;
  const tir::Var inner =
      output.split_with_tail(output.leaf(size_t(a.output_period_axis)), a.output_period).second;
  std::vector<tir::Var> order;
  for (const te::Leaf& l : output.leaves())
    if (l.var != inner) order.push_back(l.var);
  order.insert(order.end() - 1, inner);
  output.reorder(order);
  output.unroll(inner);
}

// Moves `loops` (in their order) to just inside `after`, which follows them.
void move_inside(te::Stage& stage, const std::vector<tir::Var>& loops, const tir::Var& after) {
  std::vector<tir::Var> order;
  for (const te::Leaf& l : stage.leaves()) {
    if (std::find(loops.begin(), loops.end(), l.var) != loops.end()) continue;
    order.push_back(l.var);
    if (l.var == after) order.insert(order.end(), loops.begin(), loops.end());
  }
  stage.reorder(order);
}

// Multiply-adds one pass of a register tile's reduction loop should issue.
constexpr int64_t kUnrolledMultiplyAdds = 48;

// Unrolls the tile's innermost reduction loops, inside out, while one
// pass of the loop body issues fewer than kUnrolledMultiplyAdds
// multiply-adds and a whole loop stays within twice that: a depthwise
// tile's loop over the kernel's columns (3 steps of 7 multiply-adds with
// AVX2 code) spends as many instructions on its counter, its addresses
// and, at stride 2, its phase arithmetic as on the arithmetic. A longer
// loop stays a loop: split and partly unrolled, its indices were
// recomputed at each step (an NCHW 1x1 conv over 32 channels ran 3%
// slower unrolled by 8).
void unroll_reduction(te::Stage& tile, int64_t accumulators) {
  std::vector<te::Leaf> reduces;
  for (const te::Leaf& l : tile.leaves())
    if (l.reduce) reduces.push_back(l);
  int64_t steps = 1;
  const int64_t wanted = (kUnrolledMultiplyAdds + accumulators - 1) / accumulators;
  for (size_t k = reduces.size(); k-- > 0 && steps < wanted;) {
    if (steps * reduces[k].extent > 2 * wanted) break;
    tile.unroll(reduces[k].var);
    steps *= reduces[k].extent;
  }
}

}  // namespace

// Two vectors: with one, a tile's every row broadcast feeds one multiply-add
// (rec's head, 6625 columns, ran at half the speed of 6656 as 32-wide tiles
// with AVX-512). An extent with a block of 8 to 16 columns keeps it, unless
// its column block leaves more of its vectors' lanes empty than the padding
// would: 1023 = 3 x 11 x 31 columns in blocks of 33 compute three vectors for
// 33 columns (69% of the lanes), 1024 in blocks of 32 (99.9%): 1023^3 ran
// at 139 GFLOP/s against 185 for 1025 (one thread, AVX-512, Zen 5).
int64_t product_columns(const CpuTarget& cpu, int64_t n) {
  const int64_t block = std::max<int64_t>(16, 2 * cpu.float32_lanes());
  const int64_t padded = n <= 16 ? n : (n + block - 1) / block * block;
  for (int64_t d = 8; d <= 16; ++d)
    if (n % d == 0) {
      const int64_t cb = column_block(cpu, n), lanes = column_vectors(cpu, cb) * cpu.float32_lanes();
      // Used lanes per computed lane: cb / lanes unpadded, n / padded padded.
      return n * lanes > cb * padded ? padded : n;
    }
  return padded;
}

int64_t conv_columns(const CpuTarget& cpu, int64_t n) {
  const int64_t lanes = cpu.float32_lanes();
  if (cpu.scratchpad_bytes || n <= lanes) return n;
  const int64_t cb = column_block(cpu, n), computed = column_vectors(cpu, cb) * lanes;
  const int64_t padded = (n + lanes - 1) / lanes * lanes;
  // Used lanes per computed lane: cb / computed unpadded, n / padded padded.
  return n * computed > cb * padded ? padded : n;
}

int64_t conv_rows(const CpuTarget& cpu, int64_t rows, int64_t cols, int64_t row_stride_bytes) {
  if (cpu.scratchpad_bytes) return rows;
  const int64_t cv = column_vectors(cpu, column_block(cpu, cols));
  const int64_t limit = row_block_limit(cpu, cv, row_stride_bytes);
  if (largest_divisor_up_to(rows, limit) * cv >= kMinAccumulators || rows <= limit) return rows;
  return tile_rows(cpu, rows, cols, row_stride_bytes);
}

BlockedConvTile blocked_conv_tile(const CpuTarget& cpu, int64_t rows, int64_t pair_extent, bool paired_blocks,
                                  int64_t row_stride_bytes) {
  // The most accumulators a divisor of the rows gives, and the most useful
  // ones (rows / computed rows of each) padding does, over the factors.
  double divided = 0, padded_useful = 0;
  int64_t padded = rows;
  for (int64_t factor = 1; factor <= 4; ++factor) {
    if (pair_extent % factor != 0) continue;
    const int64_t limit = factor == 1 ? row_block_limit(cpu, 1, row_stride_bytes)
                                      : row_block_limit(cpu, 1, row_stride_bytes, factor, paired_blocks);
    divided = std::max(divided, double(factor * largest_divisor_up_to(rows, limit)));
    const int64_t tiles = (rows + limit - 1) / limit, rb = (rows + tiles - 1) / tiles;
    const double useful = double(factor * rb) * double(rows) / double(tiles * rb);
    if (useful > padded_useful) padded_useful = useful, padded = tiles * rb;
  }
  if (divided < double(kMinAccumulators) && padded_useful >= 1.5 * divided) return {padded, padded_useful};
  return {rows, divided};
}

int64_t blocked_conv_rows(const CpuTarget& cpu, int64_t rows, int64_t pair_extent, bool paired_blocks,
                          int64_t row_stride_bytes) {
  if (cpu.scratchpad_bytes) return rows;
  return blocked_conv_tile(cpu, rows, pair_extent, paired_blocks, row_stride_bytes).rows;
}

int64_t product_column_block(const CpuTarget& cpu, int64_t n) {
  return column_block(cpu, product_columns(cpu, n));
}

int64_t tile_rows(const CpuTarget& cpu, int64_t rows, int64_t cols, int64_t row_stride_bytes) {
  if (cpu.scratchpad_bytes) return rows;
  const int64_t limit = row_block_limit(cpu, column_vectors(cpu, column_block(cpu, cols)), row_stride_bytes);
  if (rows <= limit) return rows;
  // Useful rows per tile: whole blocks of `limit` (the last one partly
  // padding) against the largest block that divides the rows.
  const int64_t tiles = (rows + limit - 1) / limit;
  return double(rows) / double(tiles) > double(largest_divisor_up_to(rows, limit)) ? tiles * limit : rows;
}

bool tile_anchor(te::Schedule& s, const AnchorTile& a, const CpuTarget& cpu,
                 std::vector<const te::Stage*>& done) {
  te::Stage* anchor = find_stage(s, a.tensor);
  if (!anchor || anchor->inlined() || a.tensor->reduction.kind == te::ReduceKind::None) return false;
  size_t rank = a.tensor->shape.size();
  if (a.row_axis < 0 || a.col_axis < 0 || size_t(a.row_axis) >= rank || size_t(a.col_axis) >= rank ||
      a.row_axis >= a.col_axis)
    return false;
  // The stage that writes the kernel's output: the anchor's cache copy when
  // the anchor is the output, else its epilogue of the same shape. An
  // epilogue that moves elements (rec's attention projections: a matmul,
  // a bias, then a reshape and a transpose) cannot be computed per tile:
  // then the anchor is tiled into its own buffer, which the epilogue reads
  // afterwards (40 x 120 x 360: 125 -> 46 us).
  std::vector<te::Stage*> outputs;
  for (const auto& st : s.stages())
    if (st->is_output()) outputs.push_back(st.get());
  // Byte dot products run on whole vectors of columns: a tile cut to the
  // output's columns would run its last columns a byte at a time, so a
  // padded anchor is tiled whole into its own buffer.
  const bool whole_columns =
      a.dot_of_four && outputs.size() == 1 &&
      outputs[0]->tensor()->shape[size_t(a.col_axis)] != a.tensor->shape[size_t(a.col_axis)];
  const bool epilogue_fits =
      outputs.size() == 1 && !whole_columns &&
      fits_in(outputs[0]->tensor()->shape, a.tensor->shape, size_t(a.row_axis), size_t(a.col_axis));
  te::Tensor tile_tensor = a.tensor;
  te::Stage* out = epilogue_fits ? outputs[0] : anchor;
  if (out == anchor) {
    tile_tensor = s.cache_write(a.tensor, "local");
    out = find_stage(s, a.tensor);
    if (outputs.size() == 1) unroll_period(*outputs[0], a);
  }
  te::Stage& tile = *find_stage(s, tile_tensor);
  const auto& shape = a.tensor->shape;
  const int64_t rows_extent = shape[size_t(a.row_axis)];
  int64_t cb = column_block(cpu, shape[size_t(a.col_axis)]);
  const int64_t cv = column_vectors(cpu, cb);
  int64_t row_limit = row_block_limit(cpu, cv, a.row_stride_bytes);
  if (a.max_rows > 0) row_limit = std::min(row_limit, a.max_rows);
  // Kernel rows unrolled in the tile (row_tap_axis) hold their weights'
  // broadcasts beside the accumulators and one input row: up to three of
  // them (AVX2's 3x3 depthwise on 240 channels at 12x80: 6 rows -> 4, 0.66x
  // -> 0.76x oneDNN; counting all five of a 5x5 kernel's left 2 rows of
  // 20, 0.072 -> 0.124 ms, so the count stops at three).
  if (a.row_tap_axis >= 0 && size_t(a.row_tap_axis) < a.tensor->reduction.axes.size()) {
    const int64_t taps = a.tensor->reduction.axes[size_t(a.row_tap_axis)].extent;
    row_limit = std::max<int64_t>(
        1, std::min(row_limit, (cpu.vector_registers - 2 * cv - std::min<int64_t>(taps, 3)) / cv));
  }
  int64_t rb = largest_divisor_up_to(rows_extent, row_limit);
  // With one vector of columns, a conv tile also blocks the axis outside the
  // columns (its output rows) by two, when that holds at least as many
  // accumulators: each weight broadcast then feeds two multiply-adds (a
  // 12 x 16 tile of AVX-512 is bound by its 13 loads per 12 multiply-adds;
  // 12 x 2 x 16 does 24 per 14; AVX2's 12 x 8 becomes 6 x 2 x 8).
  // A channel-blocked conv names the axis (AnchorTile::pair_axis), which
  // may be blocked by three where two does not divide it (15 blocks of
  // output channels).
  size_t h_axis = rank;
  int64_t hb = 1;
  const int h_candidate = a.pair_axis >= 0 ? a.pair_axis : a.col_axis - 1;
  // The named axis is not the one before the rows (a channel-blocked conv's
  // blocks of output channels, not its output rows): each row's input
  // broadcast feeds one accumulator per block.
  const bool paired_blocks = a.pair_axis >= 0 && a.pair_axis < a.row_axis - 1;
  if (!a.panel && !a.prepacked && cv == 1 && h_candidate >= 0 && h_candidate != a.row_axis) {
    const int64_t extent = shape[size_t(h_candidate)];
    // Blocks of 2 (and of 3 or 4 for a named axis): the one that holds the
    // most accumulators, the smaller on a tie.
    for (int64_t factor = 2; factor <= (a.pair_axis >= 0 ? 4 : 2); ++factor) {
      if (extent % factor != 0) continue;
      const int64_t rbf = largest_divisor_up_to(
          rows_extent, row_block_limit(cpu, 1, a.row_stride_bytes, factor, paired_blocks));
      if (factor * rbf >= rb * hb && (h_axis == rank || factor * rbf > rb * hb)) {
        rb = rbf;
        h_axis = size_t(h_candidate);
        hb = factor;
      }
    }
  }
  // Fewer accumulators than multiply-adds in flight (two units of four
  // cycles' latency: 8) leave the tile waiting on its own chains, as in a
  // conv with one or two output channels (det's last transposed conv, 24 ->
  // 1 channels: one row of two vectors). Then the axis before the columns
  // (output rows) is blocked too, by the smallest factor that reaches 8
  // and that the registers hold beside the column vectors and a broadcast.
  if (!a.panel && !a.prepacked && h_axis == rank && rb * cv < kMinAccumulators && h_candidate >= 0 &&
      h_candidate != a.row_axis && a.pair_axis < 0) {
    const int64_t extent = shape[size_t(h_candidate)];
    for (int64_t factor = 2; factor <= kMinAccumulators; ++factor) {
      if (extent % factor != 0 || rb * cv * factor + cv + 1 > cpu.vector_registers) continue;
      if (rb * cv * factor >= kMinAccumulators) {
        h_axis = size_t(h_candidate);
        hb = factor;
        break;
      }
    }
  }
  std::vector<tir::Var> axes;
  for (size_t k = 0; k < rank; ++k) axes.push_back(out->leaf(k));
  // Rows and columns beyond the output (padding) are computed in the last
  // tile and never stored.
  auto [ro, ri] = out->split_with_tail(axes[size_t(a.row_axis)], rb);
  auto [co, ci] = out->split_with_tail(axes[size_t(a.col_axis)], cb);
  tir::Var ho, hi;
  if (h_axis < rank) std::tie(ho, hi) = out->split(axes[h_axis], hb);
  // With a right operand to pack (matmul, dense), column tiles are outer:
  // each tile of columns of it is copied once into a contiguous panel and
  // read by every row tile. Otherwise (conv) row tiles are outer.
  int64_t reduction = 1;
  for (const te::IterVar& r : a.tensor->reduction.axes) reduction *= r.extent;
  // A right operand read in place (a placeholder, contiguous along the
  // columns) whose column tile fits in half of L1 is read from memory once
  // per column tile and from L1 by every row tile after the first (row
  // tiles inner): copying it into a panel first only adds a pass over it
  // (rec's 40-row products with 120 input columns).
  const bool tile_fits_l1 = reduction * cb * a.tensor->dtype.bytes() <= cpu.l1_bytes / 2;
  bool pack = a.panel && rb < shape[size_t(a.row_axis)] && !(a.panel->is_placeholder() && tile_fits_l1);
  // A right operand packed at compile time is read in the same order,
  // uncopied.
  const bool panel_order = pack || (a.prepacked && rb < shape[size_t(a.row_axis)]);
  // When the left operand is larger than half of L2, each panel spans
  // several column tiles (panel_tiles), split off as the loop `panels`:
  // every pass over the left operand then serves that many tiles, a row
  // tile's rows read from L1 for all but the first.
  tir::Var panels;
  if (panel_order) {
    const int64_t tiles = (shape[size_t(a.col_axis)] + cb - 1) / cb;
    const int64_t per_panel = panel_tiles(cpu, tiles, cb, shape[size_t(a.row_axis)], reduction);
    if (per_panel > 1) std::tie(panels, co) = out->split(co, per_panel);
  }
  // Without packing (conv), the loop order that moves fewer bytes from
  // beyond L2: row tiles innermost re-read the weights (rows x reduction)
  // once per column tile; row tiles outermost re-read the input (columns x
  // the first reduce axis: positions x input channels) once per row tile.
  // Bytes that stay in L2 (up to half of the target's) count a
  // quarter.
  int64_t rows = shape[size_t(a.row_axis)], columns = 1;
  for (size_t k = 0; k < rank; ++k)
    if (k != size_t(a.row_axis)) columns *= shape[k];
  const int64_t first_reduce = a.tensor->reduction.axes.empty() ? 1 : a.tensor->reduction.axes[0].extent;
  auto traffic = [&](int64_t passes, int64_t elements) {
    double bytes = double(elements) * 4;
    return double(passes) * bytes * (bytes <= double(cpu.l2_bytes / 2) ? 0.25 : 1.0);
  };
  // A strided conv's phase window (its input's columns split by stride
  // phase, built at the band) is built again for every row tile when row
  // tiles are outer: the first convs of MobileNetV2, EfficientNet-B0,
  // ResNet-18 and PP-OCR (3 input channels, stride 2) spent as long on
  // it as on the products. Their row tiles run inside the band when the
  // weights they then re-read per column tile stay in half of L2.
  const bool phase_window = a.window && !a.window_per_channel && a.window_row_step > 1 &&
                            a.window_unroll_axis >= 0 &&
                            rows * reduction * a.tensor->dtype.bytes() <= cpu.l2_bytes / 2;
  // A window of four channels a column (AnchorTile::dot_of_four) costs a
  // copy and an interleave of every input channel's rows: built once per
  // band for all its row tiles, not again for each (64 -> 64 uint8 3x3 at
  // 56x56 built it 8 times).
  const bool rows_inner = !panel_order && (phase_window || (a.dot_of_four && a.window) ||
                                           traffic(columns / (cb * hb), rows * reduction) <
                                               traffic(rows / rb, columns * first_reduce));
  // With row tiles inner and no padded window (a pointwise conv), runs of
  // column tiles: each row tile computes a run before the next row tile
  // starts, so every channel plane it reads and writes is visited in
  // stretches of several tiles rather than one, which keeps many planes'
  // streams flowing (det's 1x1 convs at 320x320 touch 80 planes per tile).
  if (!panel_order && rows_inner && !a.window) {
    const int64_t tiles = (shape[size_t(a.col_axis)] + cb - 1) / cb;
    const int64_t run = largest_divisor_up_to(tiles, kColumnRuns);
    if (run > 1) std::tie(panels, co) = out->split(co, run);
  }
  std::vector<tir::Var> order;
  for (size_t k = 0; k < rank; ++k) {
    if (k == size_t(a.row_axis)) {
      if (!rows_inner) order.push_back(panel_order ? (panels ? panels : co) : ro);
    } else if (k == size_t(a.col_axis)) {
      if (panels && !panel_order) {
        order.insert(order.end(), {panels, ro, co});
        continue;
      }
      order.push_back(panel_order ? ro : co);
      if (rows_inner) order.push_back(ro);
      if (panels) order.push_back(co);
    } else {
      order.push_back(k == h_axis ? ho : axes[k]);
    }
  }
  order.push_back(ri);
  if (h_axis < rank) order.push_back(hi);
  order.push_back(ci);
  out->reorder(order);
  out->unroll(ri);
  if (h_axis < rank) out->unroll(hi);
  out->vectorize(ci);
  const tir::Var tile_loop = panels ? co : panel_order || rows_inner ? ro : co;
  // The loops outside the tile loop run in parallel, fused into one; with
  // packing, the panel loop among them (each task packs its own panels).
  int64_t work = 1;
  for (int64_t d : shape) work *= d;
  for (const te::IterVar& r : a.tensor->reduction.axes) work *= r.extent;
  tir::Var outer = out->leaf(0);
  // A conv's padded input per band of output rows: the loops outside the
  // column tiles (images, output rows, and row tiles when they are outer)
  // become the parallel loop, when they give the threads enough iterations.
  te::Stage* window = a.window && !panel_order ? find_stage(s, a.window) : nullptr;
  tir::Var band_rows;        // the rows of a band, inside the parallel loop
  tir::Var after_band = co;  // the first loop inside a band of one step
  if (window && window->inlined()) window = nullptr;
  // The window's phase loop is unrolled whether a band or the whole
  // image computes it (below: too few bands leave it to the default rules).
  if (window && a.window_unroll_axis >= 0) window->unroll(window->leaf(size_t(a.window_unroll_axis)));
  if (window) {
    // The output rows (AnchorTile::window_row_axis): by default the axis
    // before the columns, or before the tile's rows when those are the
    // columns of a channel-blocked layout.
    const int band_axis = a.window_row_axis >= 0         ? a.window_row_axis
                          : a.col_axis - 1 == a.row_axis ? a.row_axis - 1
                                                         : a.col_axis - 1;
    tir::Var band_loop;
    int64_t band_step = band_axis >= 0 && size_t(band_axis) == h_axis ? hb : 1;
    bool whole_channel = false;  // bands of one channel's whole plane, not split into rows
    if (band_axis >= 0 && band_axis != a.row_axis)
      band_loop = size_t(band_axis) == h_axis ? ho : axes[size_t(band_axis)];
    // Output rows that are the tile's rows (an NCHW depthwise conv, tiles of
    // one channel's rows): the window pads one channel per band, the whole
    // channel when its padded plane stays in half of L1, else each row tile's
    // rows of it (det 640x640's depthwise convs at 320x320 padded 415 KB per
    // channel, which the tile read again from L2 for each kernel tap).
    if (band_axis == a.row_axis && a.window_per_channel && a.row_axis >= 1) {
      int64_t plane_bytes = a.window->dtype.bytes();
      for (size_t k = 2; k < a.window->shape.size(); ++k) plane_bytes *= a.window->shape[k];
      if (plane_bytes > cpu.l1_bytes / 2 && !rows_inner) {
        band_loop = ro;
        band_step = rb;
      } else {
        band_loop = axes[size_t(a.row_axis - 1)];
        whole_channel = true;
      }
    }
    const std::vector<te::Leaf>& leaves = out->leaves();
    for (size_t k = 0; band_loop && k + 1 < leaves.size(); ++k)
      if (leaves[k].var == band_loop) after_band = leaves[k + 1].var;
    int64_t bands = 1;
    for (const te::Leaf& l : leaves) {
      if (l.var == after_band) break;
      bands *= l.extent;
    }
    // Too few bands: the whole window first, by the default rules
    // (parallel outer loops, vectorized columns). With phases, also when
    // the weights exceed L2, however many bands: each band would read them
    // whole from memory. The images and row tiles then run inside the
    // phases, so one phase's weights serve them all in turn.
    const bool weights_in_l2 = a.band_weight_bytes > 0 && a.band_weight_bytes <= cpu.l2_bytes;
    const bool phases = a.phase_axis >= 0 && band_loop;
    if (bands < (weights_in_l2 ? kMinL2Bands : kMinBands) || (phases && !weights_in_l2)) {
      window = nullptr;
      if (phases) {
        std::vector<tir::Var> images_and_bands;
        for (const te::Leaf& l : out->leaves()) {
          if (l.var == after_band) break;
          images_and_bands.push_back(l.var);
        }
        move_inside(*out, images_and_bands, axes[size_t(a.phase_axis)]);
        outer = out->leaf(0);
      }
    } else if (band_loop && !whole_channel)
      band_rows = split_bands(cpu, *out, a, band_loop, band_step, bands);
  }
  // Output rows before channel blocks (AnchorTile::block_axis): the block
  // loop moves to just inside the rows' loop (a band's outer loop).
  const int rows_axis = a.row_axis - 1;
  if (a.block_axis >= 0 && a.block_axis < rows_axis && !panel_order &&
      a.block_weight_bytes <= cpu.l2_bytes / 2) {
    const tir::Var blocks = size_t(a.block_axis) == h_axis ? ho : axes[size_t(a.block_axis)];
    tir::Var rows_loop = size_t(rows_axis) == h_axis ? ho : axes[size_t(rows_axis)];
    const std::vector<te::Leaf>& leaves = out->leaves();
    for (size_t k = 1; band_rows && k < leaves.size(); ++k)
      if (leaves[k].var == band_rows) rows_loop = leaves[k - 1].var;
    size_t at_blocks = leaves.size(), at_rows = leaves.size();
    for (size_t k = 0; k < leaves.size(); ++k) {
      if (leaves[k].var == blocks) at_blocks = k;
      if (leaves[k].var == rows_loop) at_rows = k;
    }
    if (at_blocks < at_rows && at_rows < leaves.size()) move_inside(*out, {blocks}, rows_loop);
  }
  const tir::Var stop = panels ? ro : window ? (band_rows ? band_rows : after_band) : tile_loop;
  while (out->leaves().size() > 1 && out->leaves()[1].var != stop)
    outer = out->fuse(outer, out->leaves()[1].var);
  // Too few iterations to share evenly among the threads (rec's 1x1 convs
  // at 3x80 ran their 3 output rows on two threads, 1.4x faster than on
  // one): the loops inside join the parallel loop, up to the tile loop,
  // until it has kParallelMinIterations. Not past a panel packed or an
  // input padded at the parallel loop, which each iteration would redo.
  tir::Var tile_at = tile_loop;
  if (work >= kParallelMinMultiplyAdds && !pack && !window) {
    while (out->leaves()[0].extent < kParallelMinIterations && out->leaves().size() > 1 && tile_at != outer) {
      const tir::Var next = out->leaves()[1].var;
      outer = out->fuse(outer, next);
      if (next == tile_loop) tile_at = outer;
    }
  }
  if (work >= kParallelMinMultiplyAdds && outer != stop && out->leaves()[0].extent > 1) out->parallel(outer);
  tile.compute_at(*out, tile_at);
  if (window && a.window_input) {
    te::Stage* rows = find_stage(s, a.window_input);
    rows->compute_at(*out, outer);
    rows->vectorize(rows->leaves().back().var);
    done.push_back(rows);
  }
  if (window) {
    window->compute_at(*out, outer);
    if (a.dot_of_four) {
      // A window of four channels a column ([..., columns, 4]) from NCHW:
      // vectors of the dot's lanes of columns, each with its four channels,
      // which the codegen reads as four runs of columns interleaved.
      const size_t n = window->leaves().size();
      window->vectorize(window->fuse(window->leaves()[n - 2].var, window->leaves()[n - 1].var));
    } else {
      window->vectorize(window->leaves().back().var);
    }
    done.push_back(window);
  }
  if (pack) {
    te::Stage* panel = find_stage(s, a.panel);
    te::Tensor packed = a.panel;
    if (!panel || a.panel->is_placeholder()) packed = s.cache_read(a.panel, "global", {tile_tensor});
    te::Stage& p = *find_stage(s, packed);
    // At the panel loop, or at the loop it was fused into.
    const tir::Var panel_loop = panels ? panels : co;
    p.compute_at(*out, outer != panel_loop ? outer : panel_loop);
    p.vectorize(p.leaves().back().var);
    done.push_back(&p);
  }
  // In the tile: reduce loops outermost, then the accumulators.
  std::vector<tir::Var> tile_order;
  tir::Var row_taps, four;
  int reduce_index = 0;
  for (const te::Leaf& l : tile.leaves()) {
    if (!l.reduce) continue;
    if (reduce_index++ == a.row_tap_axis)
      row_taps = l.var;
    else
      tile_order.push_back(l.var);
  }
  if (a.dot_of_four) {
    four = tile_order.back();
    tile_order.pop_back();
  }
  if (row_taps) tile_order.push_back(row_taps);
  // Paired blocks of output channels run inside the tile's rows: a row's
  // input broadcast is dead once its blocks' multiply-adds are issued, so
  // one broadcast register serves the tile (blocks outside the rows reuse
  // every row's broadcast across the blocks, holding all of them: AVX2's
  // 1x1 convs got 10 x 1 tiles, 11 loads per 10 multiply-adds, instead of
  // 4 x 3, 7 per 12; kiln_bench_conv's blocked column 0.85-0.91x -> 0.92-1.09x
  // oneDNN).
  std::vector<tir::Var> acc;
  for (const te::Leaf& l : tile.leaves())
    if (!l.reduce) acc.push_back(l.var);
  const tir::Var tile_rows = acc[size_t(a.row_axis)];
  const tir::Var tile_h = h_axis < rank ? acc[h_axis] : tir::Var();
  if (h_axis < size_t(a.row_axis) && paired_blocks) {
    acc.erase(acc.begin() + std::ptrdiff_t(h_axis));
    acc.insert(acc.begin() + a.row_axis, tile_h);
  }
  tile_order.insert(tile_order.end(), acc.begin(), acc.end());
  if (four) tile_order.push_back(four);
  tile.reorder(tile_order);
  if (row_taps) tile.unroll(row_taps);
  // A depthwise conv's tiles (AnchorTile::taps_only) unroll their
  // reduction (MobileNetV2 with AVX2 code on Zen 5: its blocked depthwise
  // kernels 4-38% faster, the 3x3/2 on 96 channels at 112x112 0.82-0.87x
  // -> 1.17-1.31x oneDNN-AVX2; with AVX-512 7-26%), unless:
  // - their kernel rows are unrolled already (row_taps: an NCHW one at
  //   stride 1 ran 98 -> 111 us with its columns unrolled too, AVX-512);
  // - they hold fewer than kMinAccumulators / 2 accumulators: each
  //   multiply-add waits on the last one's result however many steps the
  //   body holds (odd shapes' 5x5 depthwise on 15 columns, two vectors:
  //   10% slower unrolled);
  // - or more than half the registers: LLVM keeps the input vectors that
  //   successive kernel columns share in registers and spills (AVX-512's
  //   tiles of 7 x 4: 90 -> 105 us).
  // A reduction over input channels ran slower unrolled (AVX2 code on Zen
  // 5: ResNet-18's Winograd products, strided and 1x1 convs 4-7%).
  const int64_t accumulators = rb * hb * cv;
  if (a.taps_only && !row_taps && 2 * accumulators >= kMinAccumulators &&
      2 * accumulators <= cpu.vector_registers)
    unroll_reduction(tile, accumulators);
  tile.unroll(tile_rows);
  if (tile_h) tile.unroll(tile_h);
  // With a block of four innermost, the columns outside it carry the hint:
  // form-dot-products has replaced their products by then, and the tile's
  // initial zeros and its stores vectorize over them.
  tile.vectorize(tile.leaves()[tile.leaves().size() - (four ? 2 : 1)].var);
  done.push_back(out);
  done.push_back(&tile);
  return true;
}

}  // namespace kiln::schedule
