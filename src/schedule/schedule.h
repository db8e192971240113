// Default schedules: how a lowered kernel's loops run, chosen from the
// stages' shapes without search.
//
// Today one rule set serves every op family (default_schedule.cc): the
// outer spatial loops of each stage are fused until there is enough work
// to split across threads and run in parallel; a reduction's loops are
// ordered spatial, reduce, then the innermost spatial loop, so the inner
// loop walks contiguous memory and vectorizes (conv: n, oc, oh | ic, ky, kx
// | ow; matmul: i | k | j); the innermost loop carries the vectorize hint.
#pragma once

#include "tir/te/te.h"

namespace kiln::schedule {

// The CPU a schedule is for: the width and number of its vector registers
// (AVX-512: 64 bytes, 32 registers; AVX2: 32, 16; SSE: 16, 16). The
// compile pipeline takes it from its target (codegen::Target).
//
// A DSP with a scratchpad (Hexagon: scratchpad_bytes = its VTCM) gets the
// scratchpad schedule instead (scratchpad_schedule.cc): one thread, the
// working set tiled into the scratchpad, float kernels scalar.
struct CpuTarget {
  int vector_bytes = 32;
  int vector_registers = 16;
  uint64_t scratchpad_bytes = 0;
  // Scratchpad targets: vector hints on compute stages too, not only on the
  // copies into and out of the scratchpad (Hexagon: --option hexagon.hvx=on).
  bool vector_compute = false;
  // The data caches tiles, panels and bands are sized for: the machine's
  // when the target is the host and it reports them (host_cpu_target),
  // else a typical x86-64 core's (32 KiB 8-way L1, 512 KiB L2).
  int64_t l1_bytes = 32 << 10;
  int64_t l1_ways = 8;
  int64_t l2_bytes = 512 << 10;
  bool caches_reported = false;  // the sizes are the machine's
  // float16 <-> float32 conversions in vector instructions (x86's F16C):
  // kernels on float16 tensors load them as float32 and store them rounded
  // back; without them float16 ops stay on their reference kernels.
  bool float16_conversions = false;
  // Dot products of four unsigned by four signed bytes into each int32 lane
  // (x86's VNNI vpdpbusd): the int32 lanes of the vectors they run on (16
  // with AVX-512 VNNI, 8 with AVX-VNNI), 0 without. Quantized convs then run
  // on integers (the graph pass quantize-convs).
  int int8_dot_lanes = 0;
  // Dot products of two int16 by two int16 into each int32 lane (x86's
  // vpmaddwd, one add after it): the int32 lanes (8 with AVX2, 16 with
  // AVX-512BW), 0 without. A quantized model's products run on them where
  // there are no byte dot products (quantize-matmuls).
  int int16_dot_lanes = 0;
  int64_t float32_lanes() const { return vector_bytes / 4; }
};
// Below this much work (output elements times the reduction's extent: a
// few tens of microseconds) a stage runs on one thread, since waking the
// pool would cost more. Not higher: a serial kernel reads what the other
// threads wrote in the last parallel one from their cores' caches (det
// 320x320 on two threads, Zen 5: 4.42-4.60 ms with 1 << 18, 4.28-4.44 ms
// with 1 << 15 and 1 << 12; one thread unchanged).
constexpr int64_t kParallelMinWork = 1 << 15;
// The same for a register-tiled product or conv, counted in multiply-adds:
// vector multiply-adds run 32 or more a cycle, so 1 << 15 of them are a
// microsecond, less than waking the pool (an unrolled LSTM's steps, 128 x
// 512 each, took 1.8 us on one thread and 6.2 on two).
constexpr int64_t kParallelMinMultiplyAdds = 1 << 18;
// A parallel loop fuses the loops inside it until it has at least this many
// iterations, so that static chunks of whole iterations stay within a few
// percent of each other on 2 to 8 threads.
constexpr int64_t kParallelMinIterations = 16;

// The machine's own: its vector width and, where the system reports them,
// its L1 data cache and L2.
CpuTarget host_cpu_target();
// The caches as the compile summary prints them: "L1d 48 KiB 12-way, L2
// 1024 KiB", and " (typical)" after them when they are not the machine's.
std::string describe_caches(const CpuTarget& cpu);

// A reduction whose output is computed in register tiles: `row_axis` (conv:
// output channels, matmul: rows) and `col_axis` (conv: output columns,
// matmul: columns, contiguous in memory) are split into a small block each
// (rows as the registers allow, by two vectors: 16 columns with AVX2, 32
// with AVX-512);
// the block of accumulators is a local buffer computed at the tile loop of
// the kernel's output (tile_schedule.cc), with its row loop unrolled and its
// column loop vectorized, so LLVM keeps it in registers across the reduction.
struct AnchorTile {
  tir::te::Tensor tensor;
  int row_axis = -1;
  int col_axis = -1;
  // The right operand of a product ([..., K, N], read at the tile's
  // columns): copied per column tile into a contiguous panel that every row
  // tile reads, when there is more than one row tile. A placeholder is
  // copied (cache_read); a computed tensor (dense's transposed weight) is
  // computed per panel instead of whole.
  tir::te::Tensor panel;
  // A conv's zero-padded input (materialized, not inlined): computed per
  // band of output rows, at the parallel loop over them, so the band's
  // input rows are padded into a buffer that stays in L2 instead of the
  // whole padded image being written to memory and read back.
  tir::te::Tensor window;
  // Bytes between consecutive rows of the tile's left operand (matmul: A's
  // rows, conv: the weights of consecutive output channels); 0 if unknown.
  // The row block is capped so those rows share no L1 set beyond its ways.
  int64_t row_stride_bytes = 0;
  // With one vector of columns, the axis whose iterations are blocked by
  // two in the tile (each operand loaded once per reduction step feeds
  // both; by three when two does not divide it); -1: the axis before the
  // columns (a conv's output rows in NCHW), by two only.
  int pair_axis = -1;
  // The right operand was packed into panels of the tile's columns at
  // compile time (nn.matmul_packed): the loops run as they would with
  // `panel` (column tiles outer, each panel read by every row tile), with
  // no copy.
  bool prepacked = false;
  // The reduce axis (its index among the reduction's axes) that offsets
  // the row axis: a depthwise conv's kernel rows ry, read at output row
  // oh + ry. It runs unrolled inside the other reduce axes, so each input
  // row a step loads serves every tile row that taps it (R + KH - 1 loads
  // for R x KH multiply-adds instead of R x KH); -1: none.
  int row_tap_axis = -1;
  // The input rows a band of R output rows reads from the window: (R - 1) *
  // window_row_step + window_row_span (a conv's row stride and its dilated
  // kernel height). When the span exceeds the step, consecutive output rows
  // share input rows, and a band of several output rows pads each shared
  // row once instead of once per output row.
  int64_t window_row_step = 1;
  int64_t window_row_span = 1;
  // The tile reads one channel (or block of channels) of the window, its
  // axis 1 (a depthwise conv): a band pads only that channel's rows, which
  // the tile reads once per kernel tap, so bands are sized to stay in L1.
  bool window_per_channel = false;
  // The reduction runs over the kernel's taps only (a depthwise conv, its
  // input read in place or from a window): few multiply-adds per step, so
  // tile_anchor unrolls its innermost reduction loops (unroll_reduction).
  bool taps_only = false;
  // Products of bytes summed by fours (a uint8 by int8 conv or product on
  // a CPU with VNNI), or of int16 by pairs (a product on AVX2): the
  // reduction's last axis (extent 4 or 2, a group of input channels or
  // rows) runs innermost, under the tile's columns, which stay a loop that
  // form-dot-products turns into one dot_i8x4 (or dot_i16x2) per vector.
  bool dot_of_four = false;
  // A materialized stage the window reads (the padded rows a uint8 conv's
  // window interleaves): computed where the window is, before it.
  tir::te::Tensor window_input = nullptr;
  // The axis of the output whose rows a band of the window covers; -1: the
  // axis before the columns, or before the tile's rows when those are a
  // channel-blocked layout's columns (its output rows either way). The
  // tile's own row axis (an NCHW depthwise conv, with window_per_channel):
  // a band is one channel's whole plane when that fits in half of L1, else
  // the rows of one row tile of it.
  int window_row_axis = -1;
  // An axis of the window unrolled where a band computes it (Winograd's
  // input phases, each a different combination of rows; a strided conv's
  // column phases, each with constant column bounds); -1: none.
  int window_unroll_axis = -1;
  // The output's phase axis (Winograd's; -1: none), after the band axis:
  // when the window is computed whole (too few bands, or weights beyond L2,
  // band_weight_bytes), the images and the band axis run inside it, so one
  // phase's weights serve every image and band from cache before the next
  // phase's are read (not once per band and image from memory; four 7x7
  // images at 512 channels: 6.8-7.2 -> 3.7-3.9 ms).
  int phase_axis = -1;
  // Bytes of the weights that every band of the window reads whole
  // (Winograd's transformed kernel); 0: unknown. When they fit in L2, 8
  // bands or more band the window (not 16): each band reads them from L2,
  // and its transformed rows stay in L2 too instead of the whole
  // transformed input going through memory (64 -> 64 at 56x56 in blocks,
  // 14 bands: two threads 510 -> 365 us, one thread the same). With a
  // phase axis, weights beyond L2 keep the window whole however many bands.
  int64_t band_weight_bytes = 0;
  // The kernel's output axis whose index modulo `output_period` picks its
  // expression (Winograd's output transform: an output row's combination
  // of phases by its row in the tile), when the output is a stage of its
  // own: split by the period, the inner loop unrolled just outside the
  // vectorized one, so each statement's row is a constant and its select
  // folds to one combination; -1: none.
  int output_period_axis = -1;
  int64_t output_period = 0;
  // The output's axis of channel blocks (a channel-blocked conv's n |
  // blocks | rows | columns | lanes; -1: none) and the bytes of the weights
  // all its blocks read. When those weights stay in half of L2, the
  // parallel loop runs the output rows (their bands) outside the blocks, so
  // the threads split every such conv by rows alike and each reads the
  // rows the convs before it wrote on its own core (not half of every
  // input from the other one, as a split by blocks reads after one by
  // rows). Larger weights keep the blocks outside: each thread's blocks'
  // weights then stay in its L2 for all rows instead of all the weights
  // passing through it once per row.
  int block_axis = -1;
  int64_t block_weight_bytes = 0;
  // At most this many rows of accumulators (0: as the registers allow),
  // for a tile whose reduction step holds more operands in registers than
  // one input vector per column register and two broadcasts.
  int64_t max_rows = 0;
};

// A copy that transposes blocks (nn.block_channels, nn.unblock_channels):
// the output's innermost axis reads the input some multiple of `lanes`
// elements apart, its axis `contiguous_axis` reads it contiguously. The
// innermost axis is split by `lanes` (vectorized), the contiguous one by
// `contiguous_block` (unrolled just outside the vector loop, a multiple of
// `lanes`), so each group of statements reads lanes x lanes blocks of the
// input, which codegen loads as rows and transposes in registers.
struct TransposeTile {
  tir::te::Tensor tensor;
  int contiguous_axis = -1;
  int64_t contiguous_block = 0;
  int64_t lanes = 0;
};

// A reduction over each row of its output's last axis that takes several
// stages (softmax: a maximum, the exponentials, their sum, its reciprocal):
// the output's rows (every axis but the last) run in parallel and each of
// `stages` is computed per row, at that loop, so a row's intermediates stay
// in L1 instead of each stage passing over the whole tensor. With an
// elementwise epilogue of the output's shape, the kernel's output's rows.
// With `each_element`, every element of the output is one row (a sum, mean
// or max reduced in steps: partials, columns, then their total), so the
// loop runs over all of its axes.
struct RowTile {
  tir::te::Tensor output;
  std::vector<tir::te::Tensor> stages;
  bool each_element = false;
};

// The columns a product of an N-column right operand is computed on: N
// itself when it is small or a block of 8 to 16 columns divides it (and its
// column block fills its vectors' lanes at least as well as padding would),
// else N rounded up to two of the target's vectors (the extra columns are
// zeros and never stored).
int64_t product_columns(const CpuTarget& cpu, int64_t n);
// The output columns a conv's register tiles are best computed on: `n`
// when a column block that divides it fills its vectors' lanes at least as
// well as padding would, else `n` rounded up to whole vectors (59 columns:
// no block but 1 divides them, one lane of each vector; computed on 64,
// the last 5 read a clamped column and are never stored).
int64_t conv_columns(const CpuTarget& cpu, int64_t n);
// The output channels a conv's register tiles (of `cols` columns) are
// computed on: `rows` when a block of them that divides it keeps enough
// multiply-adds in flight (a tile of 8 rows of 32 channels is as fast as
// 12 and wastes none), else tile_rows' (37 or 53 channels: rows of one,
// each weight broadcast feeding one vector; computed on 48 or 60).
int64_t conv_rows(const CpuTarget& cpu, int64_t rows, int64_t cols, int64_t row_stride_bytes);
// The output columns a channel-blocked conv's tiles (rows: output columns,
// one vector of channels, blocked by a factor of 1 to 4 along an axis of
// `pair_extent`: output channel blocks when `paired_blocks`, else output
// rows) are computed on: `rows` unless no divisor of it makes a tile of
// kMinAccumulators and padding makes one with half as many useful
// accumulators again (17 columns by 6 blocks with AVX-512: 1 x 3
// accumulators; on 18, 9 x 3).
int64_t blocked_conv_rows(const CpuTarget& cpu, int64_t rows, int64_t pair_extent, bool paired_blocks,
                          int64_t row_stride_bytes);
// Independent accumulators a tile needs to keep two multiply-add units of
// four cycles' latency busy.
constexpr int64_t kMinAccumulators = 8;
// The rows blocked_conv_rows picks and the useful accumulators of its tile
// (multiply-adds per weight or broadcast step that land in the output).
struct BlockedConvTile {
  int64_t rows = 0;
  double accumulators = 0;
};
BlockedConvTile blocked_conv_tile(const CpuTarget& cpu, int64_t rows, int64_t pair_extent, bool paired_blocks,
                                  int64_t row_stride_bytes);
// The columns of such a product's register tile: the width of the panels
// nn.pack_matmul_weight packs a constant right operand into, so that each
// column tile reads one panel.
int64_t product_column_block(const CpuTarget& cpu, int64_t n);

// The rows a register-tiled product of `cols` columns is best computed on:
// `rows` when a block of rows that fills the registers divides it, else
// `rows` rounded up to whole such blocks (1024 rows with AVX2: 1026, in
// tiles of 6 rows by 16 columns rather than 4; the extra rows read a
// clamped index and are never stored).
// A scratchpad target (no register tiles) keeps `rows`.
// `row_stride_bytes`: as AnchorTile's.
int64_t tile_rows(const CpuTarget& cpu, int64_t rows, int64_t cols, int64_t row_stride_bytes = 0);

// Register-tiles `a` when the schedule's only output is `a` or an
// elementwise epilogue of its shape (or of a prefix of its rows and columns,
// when `a` is computed on them padded to whole tiles); false (schedule unchanged) otherwise.
// The tiled stages are marked done in `done`.
bool tile_anchor(tir::te::Schedule& s, const AnchorTile& a, const CpuTarget& cpu,
                 std::vector<const tir::te::Stage*>& done);

// A DSP's schedule (scratchpad_schedule.cc): the kernel's output computed
// tile by tile, each tile's inputs copied into the scratchpad (cache_read
// at the tile loop) and its result computed there (cache_write). `level`
// picks the tile size, 0 the whole output, each level about half the last;
// false when the tiles cannot get smaller. The caller lowers the levels in
// order and keeps the first whose scratchpad peak fits. A schedule with an
// extern stage is left as it is (level 0 only).
bool apply_scratchpad_schedule(tir::te::Schedule& s, const CpuTarget& cpu, int level);

// Schedules every computed (not inlined) stage of `s`: anchors in register
// tiles where they can be, everything else by the rules above (extern
// stages have no loops to schedule).
void apply_default_schedule(tir::te::Schedule& s, const std::vector<AnchorTile>& anchors,
                            const std::vector<TransposeTile>& transposes, const std::vector<RowTile>& rows,
                            const CpuTarget& cpu);

}  // namespace kiln::schedule
