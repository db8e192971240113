// Register tiles (src/schedule/tile_schedule.cc) for AVX-512's and AVX2's
// registers, read off the lowered kernel: the tile's accumulator buffer.
// Values are checked with every lowering in tests/ops/lowering_test.cc.
#include <gtest/gtest.h>

#include <regex>

#include "lower/lower.h"
#include "tir/text.h"

namespace kiln {
namespace {

schedule::CpuTarget avx512() { return {64, 32}; }
schedule::CpuTarget avx2() { return {32, 16}; }

// The printed prim function of `op` on x and w, lowered for `cpu`.
std::string lowered_text(const std::string& op, const TensorDesc& x, const TensorDesc& w, const TensorDesc& y,
                         const Attrs& attrs, const schedule::CpuTarget& cpu) {
  std::string why;
  auto f = lower::lower_kernel(
      lower::single_op_kernel("k", op, {x, w}, {y}, normalize_attrs(*find_op(op), attrs)), &why, cpu);
  EXPECT_TRUE(f.has_value()) << why;
  return f ? tir::print_prim_func(**f) : std::string();
}

// The elements of the tile's accumulators for the op's output `name`: the
// local buffer %NAME_local (the op's result is the kernel's output).
int64_t tile_elements(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("allocate %" + name + "_local: Buffer\\[\\(([0-9, ]+)\\)")))
    return 0;
  int64_t n = 1;
  std::string dims = m[1];
  for (size_t at = 0; at < dims.size();) {
    size_t end = dims.find(',', at);
    n *= std::stoll(dims.substr(at, end - at));
    at = end == std::string::npos ? dims.size() : end + 1;
  }
  return n;
}

TEST(TileSchedule, AConvWithOneOutputChannelStillHasEightAccumulators) {
  // det's last transposed conv in small: 24 -> 1 channels, stride 2, rows
  // of 32 columns (two AVX2 vectors of 8 would be 2 accumulators, two
  // AVX-512 vectors of 16 also 2): output rows are blocked to reach 8.
  TensorDesc x{{1, 24, 8, 16}, DType::Float32}, w{{24, 1, 2, 2}, DType::Float32},
      y{{1, 1, 16, 32}, DType::Float32};
  const Attrs strides{{"strides", std::vector<int64_t>{2, 2}}};
  for (const auto& [what, cpu] : {std::pair{"AVX-512", avx512()}, std::pair{"AVX2", avx2()}}) {
    SCOPED_TRACE(what);
    const std::string text = lowered_text("nn.conv2d_transpose", x, w, y, strides, cpu);
    const int64_t lanes = cpu.float32_lanes();
    EXPECT_GE(tile_elements(text, "conv2d_transpose_0") / lanes, 8) << text;
  }
  // A 3x3 conv to one channel with 6 output rows, for AVX2: blocked by 6
  // (4 does not divide them), by 16 columns: 12 accumulators.
  TensorDesc x2{{1, 4, 6, 32}, DType::Float32}, w2{{1, 4, 3, 3}, DType::Float32},
      y2{{1, 1, 6, 32}, DType::Float32};
  const Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  const std::string text = lowered_text("nn.conv2d", x2, w2, y2, pad, avx2());
  EXPECT_EQ(tile_elements(text, "conv2d_0"), 6 * 16) << text;
}

TEST(TileSchedule, AnUpsamplingConvLeavesRegistersForItsSpreadInputAndWeights) {
  // det's 2x2 stride-2 transposed conv, 24 -> 24 channels at 80x80: each
  // reduction step spreads its input over two registers and broadcasts
  // every row's weight pairs, so its AVX-512 tile takes at most 10 rows of
  // two vectors, not the 12 a conv gets: 8 rows for 24 channels (12 would
  // divide them); AVX2's 6 rows already leave room.
  TensorDesc x{{1, 24, 80, 80}, DType::Float32}, w{{24, 24, 2, 2}, DType::Float32},
      y{{1, 24, 160, 160}, DType::Float32};
  const Attrs strides{{"strides", std::vector<int64_t>{2, 2}}};
  const std::string text = lowered_text("nn.conv2d_transpose", x, w, y, strides, avx512());
  EXPECT_EQ(tile_elements(text, "conv2d_transpose_0"), 8 * 32) << text;
  const std::string text2 = lowered_text("nn.conv2d_transpose", x, w, y, strides, avx2());
  EXPECT_EQ(tile_elements(text2, "conv2d_transpose_0"), 6 * 16) << text2;
}

TEST(TileSchedule, ADepthwiseTileUnrollsItsKernelRowsInsideItsColumns) {
  // NCHW depthwise 3x3, stride 1: tile rows are output rows, and kernel row
  // ry reads input row oh + ry, so ry runs unrolled inside rx (each loaded
  // input row serves the three tile rows that tap it). A strided conv's
  // rows share no input row that way and keep the loop.
  TensorDesc x{{1, 16, 12, 32}, DType::Float32}, w{{16, 1, 3, 3}, DType::Float32};
  Attrs attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t{16}}};
  for (const auto& [what, cpu] : {std::pair{"AVX-512", avx512()}, std::pair{"AVX2", avx2()}}) {
    SCOPED_TRACE(what);
    const std::string text = lowered_text("nn.conv2d", x, w, {{1, 16, 12, 32}, DType::Float32}, attrs, cpu);
    const size_t rx = text.find("for %rx from 0 extent 3"),
                 ry = text.find("for %ry from 0 extent 3 unrolled {");
    ASSERT_NE(ry, std::string::npos) << text;
    EXPECT_LT(rx, ry) << text;
  }
  attrs.set("strides", std::vector<int64_t>{2, 2});
  const std::string text = lowered_text("nn.conv2d", x, w, {{1, 16, 6, 16}, DType::Float32}, attrs, avx2());
  EXPECT_EQ(text.find("for %ry from 0 extent 3 unrolled"), std::string::npos) << text;
}

TEST(TileSchedule, ADepthwiseTileOfFewAccumulatorsUnrollsItsTaps) {
  // MobileNetV2's 3x3 / 2 depthwise in blocks of 8 channels, for AVX2:
  // tiles of 7 accumulators, whose loop over the kernel's columns (3 steps
  // of 7 multiply-adds) is unrolled, and the kernel's rows too (21 steps).
  Attrs attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}},
              {"strides", std::vector<int64_t>{2, 2}},
              {"groups", int64_t{16}}};
  TensorDesc x{{1, 2, 28, 28, 8}, DType::Float32}, w{{2, 1, 3, 3, 1, 8}, DType::Float32},
      y{{1, 2, 14, 14, 8}, DType::Float32};
  const std::string text = lowered_text("nn.conv2d_blocked", x, w, y, attrs, avx2());
  EXPECT_NE(text.find("for %rx from 0 extent 3 unrolled"), std::string::npos) << text;
  EXPECT_EQ(text.find("for %rx from 0 extent 3 {"), std::string::npos) << text;
  // A dense 3x3 conv's tile of the same 7 accumulators keeps its loops:
  // over input channels, unrolling ran slower.
  TensorDesc xd{{1, 2, 7, 7, 8}, DType::Float32}, wd{{2, 2, 3, 3, 8, 8}, DType::Float32},
      yd{{1, 2, 7, 7, 8}, DType::Float32};
  const Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  const std::string dense = lowered_text("nn.conv2d_blocked", xd, wd, yd, pad, avx2());
  EXPECT_NE(dense.find("for %ri from 0 extent 8 {"), std::string::npos) << dense;
}

TEST(TileSchedule, AStridedConvBuildsItsPhaseWindowOncePerBand) {
  // MobileNetV2's first conv in small, 3 -> 32 channels at stride 2: its
  // input's columns split by phase are built at the band of output rows,
  // and every tile of output channels runs inside the band (not the band
  // inside each channel tile, which built the window anew for each).
  TensorDesc x{{1, 3, 128, 128}, DType::Float32}, w{{32, 3, 3, 3}, DType::Float32},
      y{{1, 32, 64, 64}, DType::Float32};
  const Attrs attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}};
  for (const auto& [what, cpu] : {std::pair{"AVX-512", avx512()}, std::pair{"AVX2", avx2()}}) {
    SCOPED_TRACE(what);
    const std::string text = lowered_text("nn.conv2d", x, w, y, attrs, cpu);
    const size_t window = text.find("allocate %conv2d_0_phases"), channels = text.find("for %i1_outer");
    ASSERT_NE(window, std::string::npos) << text;
    ASSERT_NE(channels, std::string::npos) << text;
    EXPECT_LT(window, channels) << text;
  }
}

TEST(TileSchedule, ATileWithEnoughAccumulatorsIsLeftAsItWas) {
  // 24 output channels: AVX2 tiles of 6 channels by 2 vectors (12
  // accumulators), no rows blocked.
  TensorDesc x{{1, 16, 8, 16}, DType::Float32}, w{{24, 16, 1, 1}, DType::Float32},
      y{{1, 24, 8, 16}, DType::Float32};
  const std::string text = lowered_text("nn.conv2d", x, w, y, {}, avx2());
  EXPECT_EQ(tile_elements(text, "conv2d_0"), 6 * 16) << text;
}

}  // namespace
}  // namespace kiln
