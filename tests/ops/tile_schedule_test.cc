// The loops lowered convs and products get for a CPU (src/schedule/
// tile_schedule.cc, src/lower/): register tiles sized to the registers and
// L1 ways, panels to L2, channel blocks inside tile rows, transposed layout
// copies, padded inputs per band of output rows, Winograd's transformed
// input; each checked in the printed tensor IR and by values against the
// reference kernel, on AVX2 and AVX-512 schedules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/target.h"
#include "lower/lower.h"
#include "lowering_util.h"
#include "op_test_util.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::testing {
namespace {

// A left operand beyond half of L2 (1024 x 512 float32, 2 MiB): each packed
// panel of the right one spans several column tiles, as many as half of L2
// holds (AVX2: 8 tiles of 16 columns, AVX-512: 4 of 32; 256 KiB each), so a
// pass over the left operand serves them all; the values hold on both
// schedules.
TEST(Lowering, LargeProductPacksPanelsOfSeveralColumnTiles) {
  TensorDesc a = f32({1024, 512}), b = f32({512, 256}), y = f32({1024, 256});
  Lcg r(11);
  Tensor ta = random_input(a, {-1, 1}, r), tb = random_input(b, {-1, 1}, r);
  Tensor want = run1("matmul", {ta, tb});
  struct Cpu {
    schedule::CpuTarget cpu;
    const char* panel;  // the panel's workspace request
  };
  // A 256 KiB L2 (CpuTarget::l2_bytes) halves AVX2's panels: 4 tiles of 16
  // columns instead of 8.
  schedule::CpuTarget small_l2{32, 16};
  small_l2.l2_bytes = 256 << 10;
  for (const Cpu& c :
       {Cpu{{32, 16}, "uint64(262144)"}, Cpu{{64, 32}, "uint64(262144)"}, Cpu{small_l2, "uint64(131072)"}}) {
    lower::KernelSpec spec;
    spec.name = "matmul_" + std::to_string(c.cpu.vector_bytes) + "_" + std::to_string(c.cpu.l2_bytes >> 10);
    spec.params = {a, b};
    spec.ops.push_back(
        {"matmul", normalize_attrs(op_named("matmul"), {}), {a, b}, {y}, {{0, -1, 0}, {1, -1, 0}}});
    spec.outputs = {{0, 0}};
    auto f = lower::lower_kernel(spec, nullptr, c.cpu);
    ASSERT_TRUE(f.has_value());
    tir::PrimFunc built = tir::lower_for_build(*f);
    const std::string text = tir::print_prim_func(*built);
    EXPECT_NE(text.find(c.panel), std::string::npos) << text;
    auto jit = codegen::JitModule::create({built});
    Tensor got = Tensor::empty(want.shape(), want.dtype());
    jit->run(spec.name, {ta.raw(), tb.raw(), got.raw()});
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-3) << spec.name << " element " << i;
  }
}

// The rows of a register tile read one element of each row of the left
// operand per step: rows 4 KiB apart (K = 1024 float32) all fall into one
// L1 set, so AVX-512's 12-row tile is cut to the rows that leave two of the
// set's ways to the other operand: 6 on an 8-way L1, 10 on a 12-way one
// (CpuTarget::l1_ways; 96 rows in tiles of 10, the last one padded);
// K = 1000 spreads them over the sets and keeps 12. AVX2's 6 rows fit
// either way. The values hold on every schedule.
TEST(Lowering, RowTileFitsTheLeftOperandsRowsIntoL1Ways) {
  struct Case {
    int64_t k;
    schedule::CpuTarget cpu;
    const char* tile;  // the accumulators' buffer
  };
  schedule::CpuTarget twelve_ways{64, 32};
  twelve_ways.l1_bytes = 48 << 10;
  twelve_ways.l1_ways = 12;
  const Case cases[] = {
      {1024, {64, 32}, "_local: Buffer[(6, 32)"},
      {1000, {64, 32}, "_local: Buffer[(12, 32)"},
      {1024, {32, 16}, "_local: Buffer[(6, 16)"},
      {1024, twelve_ways, "_padded: Buffer[(10, 32)"},
  };
  for (const Case& c : cases) {
    TensorDesc a = f32({96, c.k}), b = f32({c.k, 64});
    Lcg r(7);
    Tensor ta = random_input(a, {-1, 1}, r), tb = random_input(b, {-1, 1}, r);
    const std::string name = "matmul_" + std::to_string(c.k) + "_" + std::to_string(c.cpu.vector_bytes) +
                             "_" + std::to_string(c.cpu.l1_ways);
    const Attrs attrs = normalize_attrs(op_named("matmul"), {});
    auto f = lower_op(name, "matmul", {a, b}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value());
    const std::string text = tir::print_prim_func(**f);
    EXPECT_NE(text.find(c.tile), std::string::npos) << name << "\n" << text;
    expect_matches_reference(*f, name, "matmul", {ta, tb}, attrs, 1e-3);
  }
}

// A product's columns are padded to whole pairs of vectors when the block
// that divides them would leave more lanes empty: 1023 columns (3 x 11 x 31)
// in blocks of 33 fill 33 of 48 AVX-512 lanes (11 of 16 with AVX2), padded
// to 1024 the tiles are 32 (16) wide; 40 columns keep blocks of 40 (40 of
// 48 lanes against 40 of 64 padded), 120 are padded to 128 (blocks of 40:
// 83% of the lanes, padded 94%), 360 keep blocks of 45 (94% either way).
// The values hold on every schedule.
TEST(Lowering, ProductColumnsArePaddedWhenTheirBlockLeavesLanesEmpty) {
  struct Case {
    int64_t n;
    schedule::CpuTarget cpu;
    int64_t columns, block;  // computed columns, the tile's columns
  };
  const Case cases[] = {
      {1023, {64, 32}, 1024, 32}, {1023, {32, 16}, 1024, 16}, {40, {64, 32}, 40, 40},
      {120, {64, 32}, 128, 32},   {360, {64, 32}, 360, 45},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(schedule::product_columns(c.cpu, c.n), c.columns) << c.n;
    EXPECT_EQ(schedule::product_column_block(c.cpu, c.n), c.block) << c.n;
    TensorDesc a = f32({20, 24}), b = f32({24, c.n});
    Lcg r(11);
    Tensor ta = random_input(a, {-1, 1}, r), tb = random_input(b, {-1, 1}, r);
    const std::string name = "matmul_n" + std::to_string(c.n) + "_" + std::to_string(c.cpu.vector_bytes);
    const Attrs attrs = normalize_attrs(op_named("matmul"), {});
    auto f = lower_op(name, "matmul", {a, b}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value());
    const std::string text = tir::print_prim_func(**f);
    // The tile's accumulators, and the right operand copied with its
    // columns padded only when they are.
    const size_t tile = text.find("%matmul_0_padded: Buffer[(");
    ASSERT_NE(tile, std::string::npos) << name << "\n" << text;
    EXPECT_EQ(text.substr(text.find(", ", tile), text.find(']', tile) - text.find(", ", tile)),
              ", " + std::to_string(c.block) + "), float32")
        << name << "\n"
        << text;
    EXPECT_EQ(text.find("%matmul_0_b_padded") != std::string::npos, c.columns != c.n) << name << "\n" << text;
    expect_matches_reference(*f, name, "matmul", {ta, tb}, attrs, 1e-3);
  }
}

// A channel-blocked conv's tile pairs blocks of output channels, each
// input broadcast feeding one multiply-add per block. The blocks' loop runs
// inside the tile's rows, so a row's broadcast is dead after its blocks and
// the registers hold the accumulators, the blocks' weight vectors and one
// broadcast: AVX2's 16 registers 4 rows of 3 blocks (12 accumulators, 7
// loads per 12 multiply-adds; the 10 x 1 tile loaded 11 per 10), AVX-512's
// 32 10 rows of 2.
TEST(Lowering, ChannelBlockedConvTileRunsItsBlocksInsideItsRows) {
  struct Case {
    int64_t block;
    schedule::CpuTarget cpu;
    const char* tile;        // the accumulators' buffer
    const char* row_loop;    // the tile's rows, unrolled
    const char* block_loop;  // its blocks, unrolled, inside the rows
  };
  const Case cases[] = {
      {8,
       {32, 16},
       "%conv2d_blocked_0_local: Buffer[(1, 3, 1, 4, 8)",
       "extent 4 unrolled",
       "extent 3 unrolled"},
      {16,
       {64, 32},
       "%conv2d_blocked_0_local: Buffer[(1, 2, 1, 10, 16)",
       "extent 10 unrolled",
       "extent 2 unrolled"},
  };
  for (const Case& c : cases) {
    const int64_t blocks = 192 / c.block;
    TensorDesc x = f32({1, blocks, 20, 20, c.block}), w = f32({blocks, blocks, 1, 1, c.block, c.block});
    const Attrs attrs = normalize_attrs(op_named("nn.conv2d_blocked"), {});
    const std::string name = "blocked_conv_" + std::to_string(c.block);
    auto f = lower_op(name, "nn.conv2d_blocked", {x, w}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value());
    const std::string text = tir::print_prim_func(**f);
    const size_t tile = text.find(c.tile);
    ASSERT_NE(tile, std::string::npos) << name << "\n" << text;
    const size_t rows = text.find(c.row_loop, tile), block_loop = text.find(c.block_loop, tile);
    ASSERT_NE(rows, std::string::npos) << text;
    EXPECT_LT(rows, block_loop) << "the blocks run inside the rows\n" << text;
    Lcg r(3);
    Tensor tx = random_input(x, {-1, 1}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d_blocked", {tx, tw}, attrs, 1e-4);
  }
}

// A pointwise blocked conv whose output columns tile poorly (AVX2, 7
// columns, 8 blocks of output channels: 7 x 1 or, padded, 4 x 2 blocks)
// runs on the image's positions as one axis, 49 computed as 54 in tiles of
// 6 x 2 blocks; 14 columns (2 x 4 blocks) and AVX-512's 7 (7 x 2) keep
// their columns. Values against the reference.
TEST(Lowering, PointwiseBlockedConvOnFewColumnsTilesTheImagesPositions) {
  struct Case {
    int64_t block, width;
    schedule::CpuTarget cpu;
    bool positions;
  };
  const Case cases[] = {{8, 7, {32, 16}, true}, {8, 14, {32, 16}, false}, {16, 7, {64, 32}, false}};
  for (const Case& c : cases) {
    const int64_t in_blocks = 96 / c.block, out_blocks = 64 / c.block;
    TensorDesc x = f32({1, in_blocks, c.width, c.width, c.block}),
               w = f32({out_blocks, in_blocks, 1, 1, c.block, c.block});
    const Attrs attrs = normalize_attrs(op_named("nn.conv2d_blocked"), {});
    const std::string name = "pointwise_" + std::to_string(c.block) + "_" + std::to_string(c.width);
    auto f = lower_op(name, "nn.conv2d_blocked", {x, w}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    EXPECT_EQ(text.find("_positions: Buffer[(1, 8, 1, 54, 8)") != std::string::npos, c.positions)
        << name << "\n"
        << text;
    EXPECT_EQ(text.find("_positions") != std::string::npos, c.positions) << name << "\n" << text;
    Lcg r(8);
    Tensor tx = random_input(x, {-1, 1}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d_blocked", {tx, tw}, attrs, 1e-4);
  }
}

// Layout copies between NCHW and channel blocks move lanes x lanes blocks:
// the columns (block_channels) or a block's channels (unblock_channels)
// run unrolled just outside a vector loop of `lanes` lanes, so codegen
// transposes each block in registers. The lanes are the target's or half
// of them that divide the block and the row (4 for AVX2's rows of 20); a
// row of 10 columns keeps the gather. Values match the reference kernel.
TEST(Lowering, ChannelLayoutCopiesMoveSquareBlocks) {
  struct Case {
    const char* op;
    Shape in;
    int64_t block;
    schedule::CpuTarget cpu;
    const char* unrolled;  // "" when the copy is not blocked
    const char* vector;
  };
  const Case cases[] = {
      {"nn.block_channels", {1, 16, 6, 16}, 8, {32, 16}, "extent 8 unrolled", "extent 8 vectorized"},
      {"nn.block_channels", {1, 16, 3, 20}, 8, {32, 16}, "extent 4 unrolled", "extent 4 vectorized"},
      {"nn.block_channels", {1, 32, 4, 32}, 16, {64, 32}, "extent 16 unrolled", "extent 16 vectorized"},
      {"nn.unblock_channels", {1, 2, 6, 16, 8}, 0, {32, 16}, "extent 8 unrolled", "extent 8 vectorized"},
      {"nn.unblock_channels", {1, 3, 5, 20, 8}, 0, {32, 16}, "extent 8 unrolled", "extent 4 vectorized"},
      {"nn.unblock_channels", {1, 2, 3, 40, 16}, 0, {64, 32}, "extent 16 unrolled", "extent 8 vectorized"},
      {"nn.unblock_channels", {1, 2, 3, 10, 8}, 0, {32, 16}, "", ""},
  };
  for (const Case& c : cases) {
    TensorDesc x = f32(c.in);
    Attrs attrs;
    if (c.block) attrs.set("block", c.block);
    attrs = normalize_attrs(op_named(c.op), attrs);
    const std::string name = std::string(c.op).substr(3) + "_" + std::to_string(c.in[3]) + "_" +
                             std::to_string(c.cpu.vector_bytes);
    auto f = lower_op(name, c.op, {x}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    if (*c.unrolled) {
      const size_t unrolled = text.find(c.unrolled);
      ASSERT_NE(unrolled, std::string::npos) << name << "\n" << text;
      EXPECT_NE(text.find(c.vector, unrolled), std::string::npos) << name << "\n" << text;
    } else {
      EXPECT_EQ(text.find("unrolled"), std::string::npos) << name << "\n" << text;
    }
    Lcg r(11);
    Tensor tx = random_input(x, {-1, 1}, r);
    expect_matches_reference(*f, name, c.op, {tx}, attrs, 0.0);
  }
}

// A padded conv input is computed per band of output rows, inside the
// parallel loop over them (its rows of the band only: R + 2 for R output
// rows of a 3x3 kernel), when there are at least 16 bands; with fewer, the
// whole padded image is computed first. A band holds up to 4 output rows,
// as many as keep 16 bands (counting the tiles of output channels when
// those are outer). The values hold either way, on AVX2 and AVX-512
// schedules.
TEST(Lowering, PaddedConvInputIsComputedPerBandOfOutputRows) {
  struct Case {
    int64_t height, width;
    schedule::CpuTarget cpu;
    const char* pad;  // the padded input's buffer
  };
  const Case cases[] = {
      {80, 64, {64, 32}, "%conv2d_0_pad: Buffer[(1, 8, 6, 66)"},  // 64 columns: 2 vectors, bands of 4
      {40, 64, {64, 32}, "%conv2d_0_pad: Buffer[(1, 8, 4, 66)"},  // 40 rows: bands of 2
      {40, 40, {32, 16}, "%conv2d_0_pad: Buffer[(1, 8, 6, 42)"},  // 1 vector: tiles of 2 rows, bands of 4
      {8, 64, {64, 32}, "%conv2d_0_pad: Buffer[(1, 8, 10, 66)"},  // 8 bands: the whole image
  };
  for (const Case& c : cases) {
    TensorDesc x = f32({1, 8, c.height, c.width}), w = f32({12, 8, 3, 3});
    Attrs conv = normalize_attrs(op_named("nn.conv2d"), Attrs{{"padding", std::vector<int64_t>{1, 1}}});
    const std::string name = "conv_" + std::to_string(c.height) + "_" + std::to_string(c.cpu.vector_bytes);
    auto f = lower_op(name, "nn.conv2d", {x, w}, conv, c.cpu);
    ASSERT_TRUE(f.has_value());
    const std::string text = tir::print_prim_func(**f);
    const size_t parallel = text.find("parallel"), pad = text.find(c.pad);
    ASSERT_NE(pad, std::string::npos) << text;
    if (c.height >= 16)
      EXPECT_LT(parallel, pad) << "the band's padded rows are computed inside the parallel loop\n" << text;
    else
      EXPECT_GT(parallel, pad) << "the padded image is allocated before any loop\n" << text;
    Lcg r(5);
    Tensor tx = random_input(x, {-2, 2}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d", {tx, tw}, conv, 1e-4);
  }
}

// A channel-blocked depthwise conv pads its input per band of output rows
// of one channel block, inside the parallel loop (not the whole padded
// image first, written to memory and read back: the conv itself moves
// little more than its input). A band's rows stay within three quarters of
// L1, since the tile reads each of them once per kernel tap: a stride-2
// 5x5 conv with AVX2 on rows of 160 pads 7 input rows for a pair of output
// rows, on rows of 56 11 for 4 (20.8 KiB), a 5x5 conv on rows of 20 pads 8
// for 4, a 3x3 conv on rows of 80 5 for its tile's 3 (12 rows make no
// bands of two tiles). Values against the reference.
TEST(Lowering, BlockedDepthwiseConvPadsBandsOfOneBlock) {
  struct Case {
    int64_t channels, height, width, kernel, stride;
    schedule::CpuTarget cpu;
    const char* pad;  // the padded input's buffer
  };
  const Case cases[] = {
      {32, 160, 160, 5, 2, {32, 16}, "%conv2d_blocked_0_pad: Buffer[(1, 1, 7, 163, 8)"},
      {144, 56, 56, 5, 2, {32, 16}, "%conv2d_blocked_0_pad: Buffer[(1, 1, 11, 59, 8)"},
      {192, 20, 20, 5, 1, {32, 16}, "%conv2d_blocked_0_pad: Buffer[(1, 1, 8, 24, 8)"},
      {240, 12, 80, 3, 1, {32, 16}, "%conv2d_blocked_0_pad: Buffer[(1, 1, 5, 82, 8)"},
      {64, 24, 24, 3, 1, {64, 32}, "%conv2d_blocked_0_pad: Buffer[(1, 1, 6, 26, 16)"},
  };
  for (const Case& c : cases) {
    const int64_t block = c.cpu.float32_lanes(), blocks = c.channels / block, pad = c.kernel / 2;
    TensorDesc x = f32({1, blocks, c.height, c.width, block}),
               w = f32({blocks, 1, c.kernel, c.kernel, 1, block});
    const Attrs attrs = normalize_attrs(op_named("nn.conv2d_blocked"),
                                        Attrs{{"padding", std::vector<int64_t>{pad, pad}},
                                              {"strides", std::vector<int64_t>{c.stride, c.stride}},
                                              {"groups", c.channels}});
    const std::string name = "blocked_depthwise_" + std::to_string(c.kernel) + "_" + std::to_string(c.width);
    auto f = lower_op(name, "nn.conv2d_blocked", {x, w}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const size_t parallel = text.find("parallel"), padded = text.find(c.pad);
    ASSERT_NE(padded, std::string::npos) << name << "\n" << text;
    EXPECT_LT(parallel, padded) << "the band's padded rows are computed inside the parallel loop\n" << text;
    Lcg r(7);
    Tensor tx = random_input(x, {-2, 2}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d_blocked", {tx, tw}, attrs, 1e-4);
  }
}

// A strided channel-blocked depthwise conv reads its input in place, each
// tap's weight zeroed where the tap falls in the padding (a window would
// copy every input vector for a few multiply-adds): no padded buffer, and
// simplify leaves the tests only on the tile's first and last rows and
// columns, so most of the tile's multiply-adds have none. 3x3/2 with AVX2
// and AVX-512, 5x5/2 with AVX-512 (AVX2 keeps the window for 5x5: see
// BlockedDepthwiseConvPadsBandsOfOneBlock), odd sizes whose last tile is
// partial and asymmetric padding; values against the reference.
TEST(Lowering, StridedBlockedDepthwiseConvReadsItsInputInPlace) {
  struct Case {
    int64_t channels, height, width, kernel;
    std::vector<int64_t> padding;
    schedule::CpuTarget cpu;
  };
  const Case cases[] = {
      {32, 160, 160, 3, {1, 1}, {32, 16}},    {96, 112, 112, 3, {1, 1}, {64, 32}},
      {144, 56, 56, 5, {2, 2}, {64, 32}},     {16, 15, 13, 3, {1, 1}, {32, 16}},
      {32, 17, 9, 5, {2, 1, 1, 2}, {64, 32}}, {16, 14, 14, 3, {0, 0, 1, 1}, {64, 32}},
  };
  for (const Case& c : cases) {
    const int64_t block = c.cpu.float32_lanes(), blocks = c.channels / block;
    TensorDesc x = f32({1, blocks, c.height, c.width, block}),
               w = f32({blocks, 1, c.kernel, c.kernel, 1, block});
    const Attrs attrs = normalize_attrs(
        op_named("nn.conv2d_blocked"),
        Attrs{{"padding", c.padding}, {"strides", std::vector<int64_t>{2, 2}}, {"groups", c.channels}});
    const std::string name = "strided_depthwise_" + std::to_string(c.kernel) + "_" + std::to_string(c.width) +
                             "_" + std::to_string(block);
    auto f = lower_op(name, "nn.conv2d_blocked", {x, w}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    EXPECT_EQ(text.find("_pad"), std::string::npos) << name << ": no padded window\n" << text;
    // After unrolling and simplification, the tile's multiply-adds (unrolled, each
    // reading a weight) test their taps with fewer distinct tests than
    // there are multiply-adds: simplify folds the tests of inner rows and
    // columns, and those left repeat along a row or column.
    tir::TirPassOptions passes;
    passes.vector_bytes = c.cpu.vector_bytes;
    tir::PrimFunc simplified = *f;
    for (const char* pass : {"flatten-buffers", "simplify", "vectorize-loops", "unroll-loops", "simplify"})
      simplified = tir::run_tir_pass(pass, simplified, passes);
    const std::string built = tir::print_prim_func(*simplified);
    int reads = 0;
    std::set<std::string> tests;
    for (size_t at = 0, end = 0; at < built.size(); at = end + 1) {
      end = std::min(built.find('\n', at), built.size());
      const std::string line = built.substr(at, end - at);
      if (line.find("%in1[") == std::string::npos) continue;
      ++reads;
      for (size_t s = line.find("select("); s != std::string::npos; s = line.find("select(", s + 1)) {
        int depth = 0;
        size_t e = s + 6;
        for (; e < line.size(); ++e)
          if (line[e] == '(')
            ++depth;
          else if (line[e] == ')' && --depth == 0)
            break;
        tests.insert(line.substr(s, e - s));
      }
    }
    EXPECT_GT(reads, 1) << built;
    EXPECT_LT(int(tests.size()), reads)
        << name << ": " << tests.size() << " tests for " << reads << " multiply-adds\n"
        << built;
    Lcg r(11);
    Tensor tx = random_input(x, {-2, 2}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d_blocked", {tx, tw}, attrs, 1e-4);
  }
}

// Convs whose extents nothing divides into tiles (37 or 53 output channels,
// 59 or 17 columns: primes) are computed on whole vectors of columns and
// full tiles of channels, the extra ones never stored, instead of tiles of
// one column or one channel: the anchor is a padded buffer, and the LLVM
// code loads no lanes one by one (no gather), whether the input is padded
// (widened for the extra columns), read in phases (stride 2) or read in
// place (a 1x1 conv: the column clamped, a contiguous run). Direct, 1x1,
// strided, depthwise, Winograd F(4, 3) and upsampling transposed convs, in
// NCHW and in channel blocks (whose tiles' rows are the output columns),
// AVX2 and AVX-512 tiles; values against the reference.
TEST(Lowering, ConvsOfPrimeExtentsComputeWholeVectorsAndTiles) {
  struct Case {
    const char* op;
    Shape x, w;
    int64_t stride, pad, groups;
    schedule::CpuTarget cpu;
  };
  const Case cases[] = {
      {"nn.conv2d", {1, 13, 17, 59}, {37, 13, 3, 3}, 1, 1, 1, {64, 32}},
      {"nn.conv2d", {1, 13, 17, 59}, {37, 13, 3, 3}, 1, 1, 1, {32, 16}},
      {"nn.conv2d", {1, 37, 5, 59}, {53, 37, 1, 1}, 1, 0, 1, {64, 32}},
      {"nn.conv2d", {1, 3, 23, 117}, {37, 3, 3, 3}, 2, 1, 1, {32, 16}},
      {"nn.conv2d", {1, 19, 11, 59}, {19, 1, 3, 3}, 1, 1, 19, {64, 32}},
      {"nn.conv2d_winograd", {1, 37, 18, 59}, {53, 37, 6, 3}, 1, 1, 1, {64, 32}},
      // Channel blocks: tiles of output columns (17) by blocks of channels.
      {"nn.conv2d_blocked", {1, 4, 9, 17, 16}, {6, 4, 1, 1, 16, 16}, 1, 0, 1, {64, 32}},
      {"nn.conv2d_blocked", {1, 4, 9, 17, 16}, {4, 1, 3, 3, 1, 16}, 1, 1, 64, {64, 32}},
      {"nn.conv2d_winograd", {1, 2, 12, 17, 16}, {4, 2, 6, 3, 16, 16}, 1, 1, 1, {64, 32}},
      // An upsampling 2x2 / 2 transposed conv: 122 columns (2 x 61), 13 channels.
      {"nn.conv2d_transpose", {1, 21, 9, 61}, {21, 13, 2, 2}, 2, 0, 1, {64, 32}},
      {"nn.conv2d_transpose", {1, 21, 9, 61}, {21, 13, 2, 2}, 2, 0, 1, {32, 16}},
  };
  for (const Case& c : cases) {
    const bool winograd = std::string(c.op) == "nn.conv2d_winograd";
    Attrs given{{"padding", std::vector<int64_t>{c.pad, c.pad}}};
    if (winograd) {
      given.set("tile_rows", int64_t{4});
    } else if (std::string(c.op) == "nn.conv2d_transpose") {
      given.set("strides", std::vector<int64_t>{c.stride, c.stride});
    } else {
      given.set("strides", std::vector<int64_t>{c.stride, c.stride});
      given.set("groups", c.groups);
    }
    const Attrs attrs = normalize_attrs(op_named(c.op), given);
    const std::string name = std::string(winograd ? "winograd" : "conv") + "_" + std::to_string(c.w[0]) +
                             "_" + std::to_string(c.w[2]) + "_" + std::to_string(c.stride) + "_" +
                             std::to_string(c.cpu.vector_bytes);
    auto f = lower_op(name, c.op, {f32(c.x), f32(c.w)}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const char* padded = !winograd         ? "_padded"
                         : c.x.size() == 4 ? "wino_products: Buffer[(1, 60, 5, 6, 64)"
                                           : "wino_products: Buffer[(1, 3, 4, 6, 18, 16)";
    EXPECT_NE(text.find(padded), std::string::npos) << name << ": computed on padded extents\n" << text;
    codegen::CodegenOptions options;
    if (c.cpu.vector_bytes == 32) options.target = codegen::parse_target("llvm -mcpu=x86-64-v3");
    tir::TirPassOptions passes = codegen::tir_pass_options(options.target);
    passes.vector_bytes = c.cpu.vector_bytes;
    const std::string ll =
        codegen::emit_text({tir::lower_for_build(*f, passes)}, codegen::EmitKind::LLVMIR, options);
    EXPECT_EQ(ll.find("masked.gather"), std::string::npos) << name << ": a load gathers lane by lane";
    Lcg r(13);
    Tensor tx = random_input(f32(c.x), {-2, 2}, r), tw = random_input(f32(c.w), {-1, 1}, r);
    expect_matches_reference(*f, name, c.op, {tx, tw}, attrs, 1e-3);
  }
}

// An NCHW depthwise conv's tiles are rows of one channel, which the tile
// reads once per kernel tap: its padded input is one channel's plane while
// that stays within half of L1 (32 KiB here), else the rows of one row tile
// of it, inside the parallel loop (det at 640x640 padded 415 KB planes that
// the taps read again from L2). Strided (its columns in phases, unrolled),
// stride 1, 5x5; values against the reference.
TEST(Lowering, DepthwiseConvPadsOneRowTileOfALargeChannelPlane) {
  struct Case {
    int64_t channels, height, kernel, stride;
    schedule::CpuTarget cpu;
    const char* pad;  // the padded input's buffer
  };
  const Case cases[] = {
      {32, 160, 3, 2, {64, 32}, "%conv2d_0_phases: Buffer[(1, 1, 21, 2, 81)"},  // 10 rows of 80
      {16, 160, 3, 1, {32, 16}, "%conv2d_0_pad: Buffer[(1, 1, 6, 162)"},        // 4 rows of 160
      {8, 96, 5, 1, {64, 32}, "%conv2d_0_pad: Buffer[(1, 1, 16, 100)"},         // 12 rows of 96
      {48, 40, 3, 1, {32, 16}, "%conv2d_0_pad: Buffer[(1, 1, 42, 42)"},         // 7 KiB: the plane
      {96, 40, 3, 2, {64, 32}, "%conv2d_0_phases: Buffer[(1, 1, 41, 2, 21)"},   // 7 KiB: the plane
  };
  for (const Case& c : cases) {
    const int64_t pad = c.kernel / 2;
    TensorDesc x = f32({1, c.channels, c.height, c.height}), w = f32({c.channels, 1, c.kernel, c.kernel});
    const Attrs attrs =
        normalize_attrs(op_named("nn.conv2d"), Attrs{{"padding", std::vector<int64_t>{pad, pad}},
                                                     {"strides", std::vector<int64_t>{c.stride, c.stride}},
                                                     {"groups", c.channels}});
    const std::string name = "depthwise_" + std::to_string(c.kernel) + "_" + std::to_string(c.height) + "_" +
                             std::to_string(c.stride) + "_" + std::to_string(c.cpu.vector_bytes);
    auto f = lower_op(name, "nn.conv2d", {x, w}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const size_t parallel = text.find("parallel"), padded = text.find(c.pad);
    ASSERT_NE(padded, std::string::npos) << name << "\n" << text;
    EXPECT_LT(parallel, padded) << "the padded rows are computed inside the parallel loop\n" << text;
    // A stride's phases are unrolled: each its own copy, whose column
    // bounds are then constants.
    if (c.stride > 1) {
      EXPECT_NE(text.find("extent 2 unrolled", padded), std::string::npos) << name << "\n" << text;
    }
    Lcg r(13);
    Tensor tx = random_input(x, {-2, 2}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d", {tx, tw}, attrs, 1e-4);
  }
}

// nn.conv2d_winograd of data `x` and transformed weight `u` by F(tile_rows,
// 3) lowered for `cpu` and printed, with what every schedule of it has
// checked: the transformed input allocated, its phases unrolled, and the
// output transform's tile rows unrolled (each row its own combination).
// `input`: where the input's allocation is in the text.
std::optional<tir::PrimFunc> lowered_winograd(const std::string& name, const TensorDesc& x,
                                              const TensorDesc& u, const Attrs& conv, int64_t tile_rows,
                                              const schedule::CpuTarget& cpu, std::string& text,
                                              size_t& input) {
  auto f = lower_op(name, "nn.conv2d_winograd", {x, u}, conv, cpu);
  if (!f) {
    ADD_FAILURE() << name << " does not lower";
    return f;
  }
  text = tir::print_prim_func(**f);
  input = text.find("allocate %conv2d_winograd_0_wino_input");
  EXPECT_NE(input, std::string::npos) << name << "\n" << text;
  if (input == std::string::npos) return std::nullopt;
  EXPECT_NE(text.find("unrolled", input), std::string::npos) << name << ": the phases are unrolled";
  EXPECT_NE(text.find("for %i2_inner from 0 extent " + std::to_string(tile_rows) + " unrolled"),
            std::string::npos)
      << name << "\n"
      << text;
  return f;
}

// nn.conv2d_winograd (a 3x3 stride-1 conv by Winograd's F(m, 3) along its
// output rows, its kernel transformed by nn.winograd_weight): the
// transformed input computed per band of row tiles inside the parallel
// loop, or whole first when there are fewer than 16 bands, its phases
// unrolled either way; the products register-tiled. Odd output rows,
// asymmetric, wider and no padding, two images, 4 to 24 channels, 2 to 64
// rows, F(2, 3) and F(4, 3), on AVX2 and AVX-512 schedules, against the
// reference kernel (which nn_conv_test checks against nn.conv2d's).
TEST(Lowering, WinogradRowsConvMatchesTheReference) {
  struct Case {
    int64_t images, in_channels, out_channels, height, width, tile_rows;
    std::vector<int64_t> padding;
  };
  const Case cases[] = {
      {1, 16, 16, 32, 32, 4, {1, 1}},
      {2, 24, 20, 33, 40, 4, {1, 1}},
      {1, 16, 32, 36, 34, 4, {0, 1, 2, 1}},
      {1, 17, 16, 34, 40, 4, {0, 0}},
      {1, 16, 24, 30, 30, 4, {2, 2}},
      {1, 16, 16, 10, 110, 2, {1, 1}},
      {1, 16, 16, 64, 64, 2, {1, 1}},
      // Few channels and rows (winograd-weights takes 4 channels and two rows).
      {1, 4, 4, 2, 40, 2, {1, 1}},
      {1, 8, 5, 3, 24, 2, {1, 1}},
      {1, 4, 12, 8, 8, 4, {1, 1}},
  };
  const schedule::CpuTarget cpus[] = {{32, 16}, {64, 32}};
  int banded = 0, whole = 0;
  for (const Case& c : cases) {
    for (const schedule::CpuTarget& cpu : cpus) {
      TensorDesc x = f32({c.images, c.in_channels, c.height, c.width}),
                 w = f32({c.out_channels, c.in_channels, 3, 3});
      Attrs wa = normalize_attrs(op_named("nn.winograd_weight"), Attrs{{"tile_rows", c.tile_rows}});
      Attrs conv = normalize_attrs(op_named("nn.conv2d_winograd"),
                                   Attrs{{"padding", c.padding}, {"tile_rows", c.tile_rows}});
      Lcg r(13);
      Tensor tx = random_input(x, {-2, 2}, r),
             tu = run1("nn.winograd_weight", {random_input(w, {-1, 1}, r)}, wa);
      const std::string name = "wino_" + std::to_string(c.in_channels) + "_" + std::to_string(c.height) +
                               "_" + std::to_string(c.padding[0]) + "_" + std::to_string(c.tile_rows) + "_" +
                               std::to_string(cpu.vector_bytes);
      std::string text;
      size_t input = 0;
      auto f = lowered_winograd(name, x, TensorDesc{tu.shape(), DType::Float32}, conv, c.tile_rows, cpu, text,
                                input);
      if (!f) continue;
      // A tile's phases: 4 for F(2, 3), 6 for F(4, 3).
      EXPECT_NE(text.find(", " + std::to_string(c.tile_rows + 2) + ", ", input), std::string::npos) << name;
      const size_t parallel = text.find("parallel");
      ++(parallel != std::string::npos && parallel < input ? banded : whole);
      expect_matches_reference(*f, name, "nn.conv2d_winograd", {tx, tu}, conv, 1e-4);
    }
  }
  EXPECT_GT(banded, 0) << "some convs transform their input per band";
  EXPECT_GT(whole, 0) << "some convs have too few bands and transform it whole";
}

// nn.conv2d_winograd in channel blocks (a block of the target's lanes):
// the products tiled as a blocked conv's, output columns by a block of
// output channels; the transformed input per band of row tiles inside the
// parallel loop when there are 8 row tiles or more (of all images) and
// the transformed weights fit in L2 (512 KiB here), else whole, and then
// each phase's images and row tiles run inside it (the loop over phases
// outside those over images and row tiles, so a phase's weights serve
// every tile in turn). Two images, odd rows, asymmetric padding, F(2, 3)
// and F(4, 3), AVX2 and AVX-512, against the reference kernel.
TEST(Lowering, BlockedWinogradConvMatchesTheReference) {
  struct Case {
    int64_t images, in_blocks, out_blocks, height, width, tile_rows;
    std::vector<int64_t> padding;
    bool banded;
  };
  const Case cases[] = {
      {1, 4, 4, 14, 14, 4, {1, 1}, false},     // 4 row tiles
      {2, 2, 3, 7, 9, 2, {0, 1, 2, 1}, true},  // 8 row tiles, weights of 18-72 KiB
      {1, 16, 8, 32, 4, 4, {1, 1}, false},     // 8 row tiles, weights of 0.6-2.4 MiB
      {2, 16, 8, 64, 4, 4, {1, 1}, false},     // 32 row tiles, the same weights
      {1, 2, 2, 64, 20, 4, {1, 1}, true},     {1, 3, 2, 66, 12, 4, {1, 1}, true},
  };
  const schedule::CpuTarget cpus[] = {{32, 16}, {64, 32}};
  for (const Case& c : cases) {
    for (const schedule::CpuTarget& cpu : cpus) {
      const int64_t block = cpu.float32_lanes();
      TensorDesc x = f32({c.images, c.in_blocks, c.height, c.width, block}),
                 u = f32({c.out_blocks, c.in_blocks, c.tile_rows + 2, 3, block, block});
      Attrs conv = normalize_attrs(op_named("nn.conv2d_winograd"),
                                   Attrs{{"padding", c.padding}, {"tile_rows", c.tile_rows}});
      Lcg r(17);
      Tensor tx = random_input(x, {-1, 1}, r), tu = random_input(u, {-0.05, 0.05}, r);
      const std::string name = "wino_blocked_" + std::to_string(c.height) + "x" + std::to_string(c.width) +
                               "_" + std::to_string(c.tile_rows) + "_" + std::to_string(cpu.vector_bytes);
      std::string text;
      size_t input = 0;
      auto f = lowered_winograd(name, x, u, conv, c.tile_rows, cpu, text, input);
      if (!f) continue;
      const size_t parallel = text.find("parallel");
      EXPECT_EQ(parallel != std::string::npos && parallel < input, c.banded) << name << "\n" << text;
      // Whole: the fused parallel loop names the phases (i3) before the images (i0) and row tiles (i1).
      if (!c.banded) {
        EXPECT_NE(text.find("_i3_fused_i0_fused_i1_fused"), std::string::npos) << name << "\n" << text;
      }
      expect_matches_reference(*f, name, "nn.conv2d_winograd", {tx, tu}, conv, 1e-4);
    }
  }
}

// Bands of output rows over every way a conv's rows can map to its input:
// strides 1 and 2 (rows and columns), dilation 2, kernels of 3 and 5 rows,
// heights that make bands of 1 to 4 rows (and one that bands nothing),
// output channels in one or several row tiles, AVX2 and AVX-512 tiles.
// Each compiled conv matches the reference kernel; the sweep must band
// some of them (a padded buffer of more input rows than one output row
// reads).
TEST(Lowering, BandedPaddedConvsMatchTheReference) {
  struct Case {
    int64_t height, kernel, stride_h, stride_w, dilation, pad, out_channels;
  };
  const Case cases[] = {
      {64, 3, 1, 1, 1, 1, 8}, {66, 3, 1, 1, 1, 1, 12}, {63, 3, 2, 2, 1, 1, 8}, {80, 5, 1, 1, 1, 2, 8},
      {70, 3, 1, 1, 2, 2, 8}, {80, 3, 2, 1, 1, 1, 24}, {34, 3, 1, 2, 1, 1, 8}, {17, 3, 1, 1, 1, 1, 8},
  };
  const schedule::CpuTarget cpus[] = {{32, 16}, {64, 32}};
  int banded = 0;
  for (const Case& c : cases) {
    for (const schedule::CpuTarget& cpu : cpus) {
      TensorDesc x = f32({1, 4, c.height, 24}), w = f32({c.out_channels, 4, c.kernel, c.kernel});
      Attrs conv = normalize_attrs(op_named("nn.conv2d"),
                                   Attrs{{"padding", std::vector<int64_t>{c.pad, c.pad}},
                                         {"strides", std::vector<int64_t>{c.stride_h, c.stride_w}},
                                         {"dilation", std::vector<int64_t>{c.dilation, c.dilation}}});
      const std::string name = "conv_" + std::to_string(c.height) + "_" + std::to_string(c.kernel) + "_" +
                               std::to_string(c.stride_h) + std::to_string(c.stride_w) + "_" +
                               std::to_string(c.dilation) + "_" + std::to_string(cpu.vector_bytes);
      auto f = lower_op(name, "nn.conv2d", {x, w}, conv, cpu);
      ASSERT_TRUE(f.has_value()) << name;
      // The padded input's rows: the third extent of its buffer.
      const std::string text = tir::print_prim_func(**f);
      const size_t at = text.find(", 4, ", text.find("allocate %conv2d_0_"));
      ASSERT_NE(at, std::string::npos) << text;
      const int64_t rows = std::stoll(text.substr(at + 5));
      if (rows > (c.kernel - 1) * c.dilation + 1 && rows < c.height) ++banded;
      Lcg r(11);
      Tensor tx = random_input(x, {-2, 2}, r), tw = random_input(w, {-1, 1}, r);
      expect_matches_reference(*f, name, "nn.conv2d", {tx, tw}, conv, 1e-4);
    }
  }
  EXPECT_GE(banded, 12) << "bands of several output rows";
}

// Few iterations outside a tile (a 1x1 conv at 3 x 80: its 3 output rows;
// 24 output channels on one row of 40) would leave the threads uneven
// static chunks (3 rows on two threads: 1.4x): the loops inside join the
// parallel loop, up to the tile loop, until it has at least 16 iterations
// (kParallelMinIterations) or holds every tile. Values against the reference.
TEST(Lowering, FewOuterIterationsTakeInnerLoopsIntoTheParallelLoop) {
  struct Case {
    int64_t in_channels, out_channels, height, width, kernel_width;
    schedule::CpuTarget cpu;
    int64_t iterations;
  };
  const Case cases[] = {
      {96, 96, 3, 80, 1, {32, 16}, 48},   // 3 rows x 16 row tiles of 6 channels
      {96, 96, 3, 80, 1, {64, 32}, 24},   // 3 rows x 8 row tiles of 12
      {128, 24, 1, 40, 3, {32, 16}, 10},  // 2 row tiles x 5 column tiles: every tile
  };
  for (const Case& c : cases) {
    TensorDesc x = f32({1, c.in_channels, c.height, c.width}),
               w = f32({c.out_channels, c.in_channels, 1, c.kernel_width});
    Attrs conv = normalize_attrs(op_named("nn.conv2d"),
                                 Attrs{{"padding", std::vector<int64_t>{0, (c.kernel_width - 1) / 2}}});
    const std::string name = "conv_" + std::to_string(c.out_channels) + "_" + std::to_string(c.height) + "_" +
                             std::to_string(c.cpu.vector_bytes);
    auto f = lower_op(name, "nn.conv2d", {x, w}, conv, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const size_t parallel = text.find(" parallel {");
    ASSERT_NE(parallel, std::string::npos) << text;
    const size_t extent = text.rfind("extent ", parallel);
    EXPECT_EQ(std::stoll(text.substr(extent + 7)), c.iterations) << text;
    Lcg r(3);
    Tensor tx = random_input(x, {-2, 2}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d", {tx, tw}, conv, 1e-4);
  }
}

// The first parallel loop's header in printed tensor IR ("for %i0_i2_fused
// from 0 extent 56"), its name listing the fused loops outermost first;
// empty when there is none.
std::string parallel_loop(const std::string& text) {
  const size_t parallel = text.find(" parallel {");
  if (parallel == std::string::npos) return "";
  const size_t line = text.rfind("for %", parallel);
  return text.substr(line, parallel - line);
}

// Channel-blocked convs whose weights stay in half of L2 run their output
// rows (a depthwise conv's bands of them) outside their channel blocks in
// the parallel loop, so the threads split consecutive convs by rows alike;
// larger weights (320 -> 480 channels, 600 KiB) keep the blocks outside.
// The parallel loop's name lists its loops outermost first (i1: blocks,
// i2: rows). Values against the reference.
TEST(Lowering, BlockedConvsSplitRowsAmongThreadsWhenTheirWeightsStayInL2) {
  struct Case {
    int64_t in_channels, out_channels, size, kernel;
    schedule::CpuTarget cpu;
    bool rows_first;
  };
  const Case cases[] = {
      {576, 96, 14, 1, {64, 32}, true},   // 216 KiB of weights
      {96, 96, 20, 1, {32, 16}, true},    // blocks of 8
      {144, 144, 28, 3, {64, 32}, true},  // depthwise, in bands
      {320, 480, 7, 1, {64, 32}, false},
  };
  for (const Case& c : cases) {
    const int64_t block = c.cpu.float32_lanes(), in_blocks = c.in_channels / block;
    const bool depthwise = c.kernel > 1;
    TensorDesc x = f32({1, in_blocks, c.size, c.size, block}),
               w = depthwise ? f32({in_blocks, 1, c.kernel, c.kernel, 1, block})
                             : f32({c.out_channels / block, in_blocks, 1, 1, block, block});
    Attrs given;
    if (depthwise) given = Attrs{{"padding", std::vector<int64_t>{1, 1}}, {"groups", c.in_channels}};
    const Attrs attrs = normalize_attrs(op_named("nn.conv2d_blocked"), given);
    const std::string name = "blocked_" + std::to_string(c.in_channels) + "_" +
                             std::to_string(c.out_channels) + "_" + std::to_string(c.kernel);
    auto f = lower_op(name, "nn.conv2d_blocked", {x, w}, attrs, c.cpu);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const std::string loop = parallel_loop(text);
    ASSERT_FALSE(loop.empty()) << text;
    const size_t rows = loop.find("_i2"), blocks = loop.find("_i1");
    ASSERT_NE(rows, std::string::npos) << loop;
    ASSERT_NE(blocks, std::string::npos) << loop;
    EXPECT_EQ(rows < blocks, c.rows_first) << name << ": " << loop;
    Lcg r(4);
    Tensor tx = random_input(x, {-1, 1}, r), tw = random_input(w, {-1, 1}, r);
    expect_matches_reference(*f, name, "nn.conv2d_blocked", {tx, tw}, attrs, 1e-4);
  }
}

// The copies into and out of channel blocks and elementwise ops on blocks
// (a 5-D tensor) split their rows among the threads too, as the blocked
// convs around them do: the parallel loop runs the rows (i2) outside the
// channels or blocks (i1), if it takes those in at all. Values against the
// reference.
TEST(Lowering, LayoutCopiesAndOpsOnBlocksSplitRowsAmongThreads) {
  struct Case {
    const char* op;
    std::vector<Shape> in;
    int64_t block;
  };
  const Case cases[] = {
      {"nn.block_channels", {{1, 64, 56, 56}}, 16},
      {"nn.unblock_channels", {{1, 4, 56, 56, 16}}, 0},
      {"sigmoid", {{1, 9, 56, 56, 16}}, 0},
      {"multiply", {{1, 9, 56, 56, 16}, {1, 9, 1, 1, 16}}, 0},
  };
  for (const Case& c : cases) {
    std::vector<TensorDesc> xs;
    for (const Shape& s : c.in) xs.push_back(f32(s));
    Attrs attrs;
    if (c.block) attrs.set("block", c.block);
    attrs = normalize_attrs(op_named(c.op), attrs);
    const std::string name = std::string(c.op) + "_rows";
    auto f = lower_op(name, c.op, xs, attrs, {64, 32});
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const std::string loop = parallel_loop(text);
    ASSERT_FALSE(loop.empty()) << text;
    const size_t rows = loop.find("_i2"), channels = loop.find("_i1");
    ASSERT_NE(rows, std::string::npos) << name << ": " << loop;
    EXPECT_TRUE(channels == std::string::npos || rows < channels) << name << ": " << loop;
    Lcg r(12);
    std::vector<Tensor> inputs;
    for (const TensorDesc& x : xs) inputs.push_back(random_input(x, {-1, 1}, r));
    expect_matches_reference(*f, name, c.op, inputs, attrs, 1e-6);
  }
}

// A product of fewer multiply-adds than waking the threads costs
// (kParallelMinMultiplyAdds: an LSTM step's state times R, 128 x 512) runs
// on one thread; four times as many rows share the threads.
TEST(Lowering, SmallProductsRunOnOneThread) {
  for (int64_t rows : {1, 4}) {
    TensorDesc x = f32({rows, 128}), w = f32({128, 512});
    const Attrs attrs = normalize_attrs(op_named("matmul"), {});
    const std::string name = "product_" + std::to_string(rows);
    auto f = lower_op(name, "matmul", {x, w}, attrs, {64, 32});
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    EXPECT_EQ(text.find("parallel") == std::string::npos, rows == 1) << name << "\n" << text;
    Lcg r(5);
    expect_matches_reference(*f, name, "matmul", {random_input(x, {-1, 1}, r), random_input(w, {-1, 1}, r)},
                             attrs, 1e-4);
  }
}

// A softmax over its last axis runs row by row (schedule::RowTile): one
// loop over the rows (parallel when the whole is enough work), each row
// computing its maximum, exponentials and sum into buffers of one row (a
// 40 x 6625 classifier: 26 KB, in L1), not one pass over the whole tensor
// per stage; log_softmax likewise. Over another axis, the default rules
// (whole-tensor maxima first). Values against the reference.
TEST(Lowering, SoftmaxOverTheLastAxisRunsRowByRow) {
  struct Case {
    const char* op;
    Shape shape;
    int64_t axis;
    const char* first_buffer;  // the first allocation
    bool parallel;
  };
  const Case cases[] = {
      {"nn.softmax", {1, 40, 6625}, -1, "%softmax_0_partial_max: Buffer[(1, 1, 16)", true},
      {"nn.softmax", {3, 5, 33}, 2, "%softmax_0_partial_max: Buffer[(1, 1, 8)", false},
      {"nn.softmax", {6, 20}, -1, "%softmax_0_max: Buffer[(1, 1)", false},
      {"nn.log_softmax", {4, 130}, -1, "%log_softmax_0_partial_max: Buffer[(1, 16)", false},
      {"nn.softmax", {2, 30, 5}, 1, "%softmax_0_max: Buffer[(2, 1, 5)", false},
  };
  for (const Case& c : cases) {
    TensorDesc x = f32(c.shape);
    const Attrs attrs = normalize_attrs(op_named(c.op), Attrs{{"axis", c.axis}});
    const std::string name = std::string(c.op).substr(3) + "_" + std::to_string(c.shape.back());
    auto f = lower_op(name, c.op, {x}, attrs, {32, 16});
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const size_t first = text.find("allocate "), parallel = text.find("parallel");
    ASSERT_NE(first, std::string::npos) << text;
    EXPECT_EQ(text.find(c.first_buffer), first + 9) << name << "\n" << text;
    if (c.parallel) {
      EXPECT_LT(parallel, first) << "the row's buffers are inside the loop over rows\n" << text;
      EXPECT_EQ(text.find("parallel", parallel + 1), std::string::npos) << "one parallel loop\n" << text;
    }
    Lcg r(17);
    Tensor tx = random_input(x, {-20, 20}, r);
    expect_matches_reference(*f, name, c.op, {tx}, attrs, 1e-5);
  }
}

// A product of one row (a classifier's matrix-vector product) has tiles
// of one vector with AVX2 (24 columns: three tiles of 8), so
// interleave-accumulators runs its reduction of 42 steps in 8 turns over
// copies of the accumulator, 8 chains in flight, summed after the loop
// (the last 2 steps left over); AVX-512's tile of 16 + 8 columns takes 4
// turns, and AVX2's tile of 4 rows by 2 vectors (8 accumulators) none.
// The values hold.
TEST(Lowering, AFewAccumulatorsReductionRunsInTurns) {
  struct Case {
    int64_t rows, columns;
    schedule::CpuTarget cpu;
    int turns;  // 1: none
  };
  const Case cases[] = {{1, 24, {32, 16}, 8}, {1, 24, {64, 32}, 4}, {4, 16, {32, 16}, 1}};
  for (const Case& c : cases) {
    TensorDesc a = f32({c.rows, 42}), b = f32({42, c.columns});
    const std::string name = "turns_" + std::to_string(c.rows) + "_" + std::to_string(c.cpu.vector_bytes);
    SCOPED_TRACE(name);
    auto f = lower_op(name, "matmul", {a, b}, {}, c.cpu);
    ASSERT_TRUE(f.has_value());
    tir::TirPassOptions options;
    options.vector_bytes = c.cpu.vector_bytes;
    options.vector_registers = c.cpu.vector_registers;
    tir::PrimFunc built = tir::lower_for_build(*f, options);
    const std::string text = tir::print_prim_func(*built);
    // Copies turn1 .. turn(turns - 1) of the accumulators.
    if (c.turns > 1) {
      EXPECT_NE(text.find("_turn" + std::to_string(c.turns - 1) + ":"), std::string::npos) << text;
    }
    EXPECT_EQ(text.find("_turn" + std::to_string(c.turns) + ":"), std::string::npos) << text;
    Lcg r(5);
    Tensor ta = random_input(a, {-1, 1}, r), tb = random_input(b, {-1, 1}, r);
    Tensor want = run1("matmul", {ta, tb});
    auto jit = codegen::JitModule::create({built});
    Tensor got = Tensor::empty(want.shape(), want.dtype());
    jit->run(name, {ta.raw(), tb.raw(), got.raw()});
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
  }
}

}  // namespace
}  // namespace kiln::testing
