// Winograd convs (F(m, 3) along output rows): the pass winograd-weights'
// choices (which convs, which m) and compiled models against the
// reference interpreter for AVX-512's and AVX2's tiles. The ops' reference
// kernels are checked against nn.conv2d in tests/ops/nn_conv_test.cc, the
// lowering against them in tests/ops/lowering_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "compile_util.h"
#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "random_args.h"
#include "test_util.h"
#include "transform/pass.h"

namespace kiln {
namespace {

std::string conv_line(const std::string& name, const std::string& input, const Shape& w, uint32_t seed,
                      const std::string& attrs) {
  return "  %" + name + " = nn.conv2d(" + input + ", " + testing::random_constant_text(w, seed) + attrs +
         ")\n";
}

// 3x3 stride-1 convs of one group with a constant weight, 4 or more
// channels in and out and two output rows or more become
// nn.conv2d_winograd: F(4, 3) where 4 divides the rows or there are 16 or
// more, else F(2, 3). The rest stay: 3 input channels, stride 2,
// dilation 2, two groups, a weight that is a parameter, one output row, a
// 5x5 kernel.
TEST(Winograd, ThePassRewritesLargeThreeByThreeConvs) {
  const std::string pad = ", padding=[1, 1, 1, 1]";
  const std::string text =
      "def @main(%x: Tensor[(1, 16, 32, 32), float32], %r: Tensor[(1, 16, 10, 110), float32], %e: "
      "Tensor[(1, 3, 32, 32), float32], %s: Tensor[(1, 16, 1, 40), float32], %w: Tensor[(16, 16, 3, 3), "
      "float32]) -> (Tensor[(1, 16, 32, 32), float32], Tensor[(1, 16, 10, 110), float32], Tensor[(1, 16, 32, "
      "32), float32], Tensor[(1, 16, 1, 40), float32], Tensor[(1, 16, 30, 30), float32], Tensor[(1, 16, 32, "
      "32), float32], Tensor[(1, 16, 32, 32), float32], Tensor[(1, 16, 16, 16), float32], Tensor[(1, 16, 32, "
      "32), float32]) {\n" +
      conv_line("f4", "%x", {16, 16, 3, 3}, 1, pad) + conv_line("f2", "%r", {16, 16, 3, 3}, 2, pad) +
      conv_line("few", "%e", {16, 3, 3, 3}, 3, pad) +
      conv_line("strided", "%x", {16, 16, 3, 3}, 4, pad + ", strides=[2, 2]") +
      conv_line("dilated", "%x", {16, 16, 3, 3}, 5, pad + ", dilation=[2, 2]") +
      conv_line("grouped", "%x", {16, 8, 3, 3}, 6, pad + ", groups=2") + "  %param = nn.conv2d(%x, %w" + pad +
      ")\n" + conv_line("small", "%s", {16, 16, 3, 3}, 7, pad) +
      conv_line("five", "%x", {16, 16, 5, 5}, 8, ", padding=[2, 2, 2, 2]") +
      "  return (%f4, %f2, %few, %small, %dilated, %grouped, %param, %strided, %five)\n}\n";
  Module m = parse_module(text, "convs.kir");
  const std::string out = print_module(run_passes(m, {"winograd-weights"}));
  EXPECT_EQ(testing::count_calls(out, "nn.conv2d_winograd"), 2) << out;
  EXPECT_EQ(testing::count_calls(out, "nn.winograd_weight"), 2) << out;
  EXPECT_EQ(testing::count_calls(out, "nn.conv2d"), 7) << out;
  const size_t f4 = out.find("%f4 = nn.conv2d_winograd"), f2 = out.find("%f2 = nn.conv2d_winograd");
  ASSERT_NE(f4, std::string::npos) << out;
  ASSERT_NE(f2, std::string::npos) << out;
  EXPECT_NE(out.substr(f4, out.find('\n', f4) - f4).find("tile_rows=4), padding=[1, 1, 1, 1], tile_rows=4"),
            std::string::npos)
      << out;
  EXPECT_NE(out.substr(f2, out.find('\n', f2) - f2).find("tile_rows=2), padding=[1, 1, 1, 1], tile_rows=2"),
            std::string::npos)
      << out;
}

// A channel-blocked conv takes the F(m, 3) of fewer phase rows (tiles x
// (m + 2); F(2, 3) on a tie) among those whose transformed weights each
// serve 48 multiply-adds or more (images x row tiles x columns), else none.
TEST(Winograd, BlockedConvsTakeTheFewerPhaseRowsWhereEachWeightServesEnough) {
  EXPECT_EQ(blocked_winograd_tile_rows(1, 28, 28), 4);
  EXPECT_EQ(blocked_winograd_tile_rows(1, 14, 14), 4);   // 4 tiles: 56
  EXPECT_EQ(blocked_winograd_tile_rows(1, 7, 7), 0);     // F(2, 3): 28, F(4, 3): 14
  EXPECT_EQ(blocked_winograd_tile_rows(4, 7, 7), 4);     // 56, 12 phase rows against 16
  EXPECT_EQ(blocked_winograd_tile_rows(1, 10, 10), 2);   // F(4, 3): 30, F(2, 3): 50
  EXPECT_EQ(blocked_winograd_tile_rows(1, 6, 100), 2);   // 12 phase rows either way
  EXPECT_EQ(blocked_winograd_tile_rows(1, 1, 1000), 0);  // one row
}

// A block of two 3x3 convs with bias and relu, 34 rows (F(4, 3) with a
// last tile of two rows) and asymmetric padding, compiled for this
// machine's vector width and for AVX2: the kernels are transformed at
// compile time (no nn.winograd_weight is left), and the outputs match the
// reference interpreter, which runs nn.conv2d.
TEST(Winograd, CompiledConvsMatchTheInterpreter) {
  const std::string text =
      "def @main(%x: Tensor[(1, 16, 34, 40), float32]) -> Tensor[(1, 24, 35, 40), float32] {\n" +
      conv_line("a", "%x", {24, 16, 3, 3}, 11, ", padding=[1, 1, 1, 1]") + "  %b = add(%a, " +
      testing::random_constant_text({1, 24, 1, 1}, 12) + ")\n  %r = nn.relu(%b)\n" +
      conv_line("y", "%r", {24, 24, 3, 3}, 13, ", padding=[1, 1, 2, 1]") + "  return %y\n}\n";
  Module m = parse_module(text, "block.kir");
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 14);
  std::vector<Tensor> want = interpret(m, "main", args);
  for (const char* cpu : {"", "x86-64-v3"}) {
    SCOPED_TRACE(std::string("cpu ") + cpu);
    std::string printed;
    Executable exe = testing::compile_printed(m, cpu, &printed);
    const size_t after = printed.find("# after winograd-weights");
    ASSERT_NE(after, std::string::npos) << printed;
    const std::string graph = printed.substr(0, after).substr(printed.substr(0, after).rfind("# IR after"));
    EXPECT_EQ(testing::count_calls(graph, "nn.conv2d_winograd"), 2) << graph;
    EXPECT_EQ(testing::count_calls(graph, "nn.winograd_weight"), 0) << graph;
    testing::expect_outputs_near(VirtualMachine(exe).run(args), want, 1e-4);
  }
}

}  // namespace
}  // namespace kiln
