// Products with a right operand packed at compile time: the ops'
// reference kernels against their definitions (src/op/nn_matmul.cc)
// computed here loop by loop and against matmul and nn.dense; their errors;
// the pass pack-matmul-weights' refusals; compiled models with constant
// weights against the reference interpreter, for AVX-512's and AVX2's tiles.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "compile_util.h"
#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "random_args.h"
#include "test_util.h"
#include "transform/pass.h"

namespace kiln {
namespace {

Tensor run1(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {}) {
  return run_op(*find_op(op), in, attrs)[0];
}

Attrs pack_attrs(int64_t columns, int64_t transpose) {
  return {{"columns", columns}, {"transpose", transpose}};
}

TEST(PackedMatmul, PackingFollowsItsDefinition) {
  // (K, N) = (3, 10) in panels of 4: 3 panels, the last with 2 columns of zeros.
  Tensor w = testing::random_floats({3, 10}, 1);
  Tensor p = run1("nn.pack_matmul_weight", {w}, pack_attrs(4, 0));
  ASSERT_EQ(p.shape(), (Shape{3, 3, 4}));
  for (int64_t panel = 0; panel < 3; ++panel)
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t j = 0; j < 4; ++j) {
        const int64_t n = panel * 4 + j;
        EXPECT_EQ(p.data<float>()[(panel * 3 + k) * 4 + j], n < 10 ? w.data<float>()[k * 10 + n] : 0.0f)
            << panel << " " << k << " " << j;
      }
  // Transposed: dense's (N, K) weight gives the same panels as its transpose.
  Tensor wt = Tensor::empty({10, 3}, DType::Float32);
  for (int64_t k = 0; k < 3; ++k)
    for (int64_t n = 0; n < 10; ++n) wt.data<float>()[n * 3 + k] = w.data<float>()[k * 10 + n];
  EXPECT_TRUE(run1("nn.pack_matmul_weight", {wt}, pack_attrs(4, 1)).bitwise_equal(p));
}

TEST(PackedMatmul, TheProductOfAPackedWeightIsMatmulsAndDenses) {
  struct Shapes {
    Shape x;
    int64_t n, columns;
  };
  // Panels that divide N and panels past it; a 1-D x (a row); batches.
  for (const Shapes& s : std::vector<Shapes>{
           {{5, 7}, 16, 8}, {{5, 7}, 13, 8}, {{7}, 20, 16}, {{2, 3, 4, 9}, 33, 32}, {{40, 24}, 200, 32}}) {
    SCOPED_TRACE(shape_str(s.x) + " N=" + std::to_string(s.n) + " columns=" + std::to_string(s.columns));
    const int64_t k = s.x.back();
    Tensor x = testing::random_floats(s.x, 2), b = testing::random_floats({k, s.n}, 3);
    Tensor packed = run1("nn.pack_matmul_weight", {b}, pack_attrs(s.columns, 0));
    Tensor got = run1("nn.matmul_packed", {x, packed}, {{"units", s.n}});
    Tensor want = run1("matmul", {x, b});
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(got.bitwise_equal(want));
    Tensor w = Tensor::empty({s.n, k}, DType::Float32);
    for (int64_t r = 0; r < k; ++r)
      for (int64_t n = 0; n < s.n; ++n) w.data<float>()[n * k + r] = b.data<float>()[r * s.n + n];
    Tensor dense = run1("nn.matmul_packed", {x, run1("nn.pack_matmul_weight", {w}, pack_attrs(s.columns, 1))},
                        {{"units", s.n}});
    EXPECT_TRUE(dense.bitwise_equal(run1("nn.dense", {x, w})));
  }
}

TEST(PackedMatmul, BadShapesAndAttributesAreErrorsNamingThem) {
  Tensor w = testing::random_floats({3, 10}, 4);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.pack_matmul_weight", {testing::random_floats({2, 3, 10}, 5)}, pack_attrs(4, 0));
            }).find("nn.pack_matmul_weight: weight must be 2-D, got shape (2, 3, 10)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.pack_matmul_weight", {w}, pack_attrs(0, 0));
            }).find("'columns' = 0 must be >= 1"),
            std::string::npos);
  // Panels of the widest columns: one panel, no overflow, and kiln's limit
  // on a dimension refuses the shape.
  const int64_t widest = std::numeric_limits<int64_t>::max();
  EXPECT_NE(testing::error_of([&] {
              infer_op(*find_op("nn.pack_matmul_weight"), {{{3, 10}, DType::Float32}}, pack_attrs(widest, 0));
            })
                .find("shape (1, 3, 9223372036854775807) has a dimension of 9223372036854775807, more than "
                      "kiln's limit"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.pack_matmul_weight", {w}, pack_attrs(4, 2));
            }).find("'transpose' = 2 must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.pack_matmul_weight", {Tensor::zeros({3, 10}, DType::Int32)}, pack_attrs(4, 0));
            }).find("weight must be float32, int8 or int16, got int32"),
            std::string::npos);
  Tensor packed = run1("nn.pack_matmul_weight", {w}, pack_attrs(4, 0));  // (3, 3, 4)
  Tensor x = testing::random_floats({2, 3}, 6);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.matmul_packed", {x, packed}, {{"units", int64_t{13}}});
            }).find("'units' = 13 does not fit packed weight (3, 3, 4)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.matmul_packed", {x, packed}, {{"units", int64_t{8}}});
            }).find("'units' = 8 does not fit packed weight (3, 3, 4)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.matmul_packed", {testing::random_floats({2, 5}, 7), packed}, {{"units", int64_t{10}}});
            }).find("has K=3 but data of shape (2, 5) has K=5"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.matmul_packed", {x, w}, {{"units", int64_t{10}}});
            }).find("packed weight must be 3-D (panels, K, columns), got shape (3, 10)"),
            std::string::npos);
}

TEST(PackedMatmul, Int8WeightsPackInGroupsOfFourRowsForUInt8Data) {
  // (K, N) = (6, 10) in panels of 4: 3 panels of 2 groups of four rows,
  // zeros past row 6 and column 10.
  Tensor w = testing::random_ints({6, 10}, DType::Int8, -128, 127, 1);
  // Element [panel, k / g, j, k % g] of a packing in groups of g rows is
  // w[k, panel * 4 + j], 0 past K and N.
  auto expect_groups_of = [&](const Tensor& packed, int64_t g) {
    const int64_t groups = packed.dim(1);
    for (int64_t panel = 0; panel < 3; ++panel)
      for (int64_t k = 0; k < groups * g; ++k)
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t n = panel * 4 + j;
          EXPECT_EQ(packed.get_as_double(((panel * groups + k / g) * 4 + j) * g + k % g),
                    n < 10 && k < 6 ? w.data<int8_t>()[k * 10 + n] : 0)
              << "groups of " << g << ": " << panel << " " << k << " " << j;
        }
  };
  Tensor p = run1("nn.pack_matmul_weight", {w}, pack_attrs(4, 0));
  ASSERT_EQ(p.shape(), (Shape{3, 2, 4, 4}));
  expect_groups_of(p, 4);
  // Transposed (dense's (N, K)): the same panels.
  Tensor wt = Tensor::empty({10, 6}, DType::Int8);
  for (int64_t k = 0; k < 6; ++k)
    for (int64_t n = 0; n < 10; ++n) wt.data<int8_t>()[n * 6 + k] = w.data<int8_t>()[k * 10 + n];
  EXPECT_TRUE(run1("nn.pack_matmul_weight", {wt}, pack_attrs(4, 1)).bitwise_equal(p));
  // The product of uint8 data by it: matmul's int32, for K of whole groups
  // and not, panels past N, batches.
  for (const Shape& xs : std::vector<Shape>{{5, 6}, {2, 3, 6}, {6}}) {
    Tensor x = testing::random_ints(xs, DType::UInt8, 0, 255, 2);
    Tensor got = run1("nn.matmul_packed", {x, p}, {{"units", int64_t{10}}});
    ASSERT_EQ(got.dtype(), DType::Int32);
    EXPECT_TRUE(got.bitwise_equal(run1("matmul", {x, w}))) << shape_str(xs);
  }
  // int16 weights pack in pairs of rows (AVX2's vpmaddwd): (3, 3, 4, 2),
  // and uint8 data by them is the same product.
  Tensor w16 = run1("astype", {w}, {{"dtype", std::string("int16")}});
  Tensor p16 = run1("nn.pack_matmul_weight", {w16}, pack_attrs(4, 0));
  ASSERT_EQ(p16.shape(), (Shape{3, 3, 4, 2}));
  expect_groups_of(p16, 2);
  Tensor x16 = testing::random_ints({2, 3, 6}, DType::UInt8, 0, 255, 6);
  EXPECT_TRUE(
      run1("nn.matmul_packed", {x16, p16}, {{"units", int64_t{10}}}).bitwise_equal(run1("matmul", {x16, w})));
  // What the byte product refuses.
  Tensor x = testing::random_ints({5, 6}, DType::UInt8, 0, 255, 3);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.matmul_packed",
                   {x, run1("nn.pack_matmul_weight", {testing::random_floats({6, 10}, 4)}, pack_attrs(4, 0))},
                   {{"units", int64_t{10}}});
            }).find("uint8 data needs an int8 or int16 packed weight, got float32"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.matmul_packed", {testing::random_ints({5, 9}, DType::UInt8, 0, 255, 5), p},
                   {{"units", int64_t{10}}});
            }).find("has K / 4=2 but data of shape (5, 9) has K=9"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run1("nn.matmul_packed", {x, Tensor::zeros({3, 2, 4}, DType::Int8)}, {{"units", int64_t{10}}});
            }).find("an int8 packed weight must be 4-D (panels, K / 4, columns, 4), got shape (3, 2, 4)"),
            std::string::npos);
}

TEST(PackedMatmul, ThePassRefusesAMissingOrBadLaneCount) {
  Module m = parse_module(
      "def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {\n"
      "  %r = nn.relu(%x)\n  return %r\n}\n",
      "t.kir");
  EXPECT_NE(testing::error_of([&] {
              run_passes(m, {"pack-matmul-weights"});
            }).find("option lanes must be an integer from 1 to 64"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { run_passes(m, {"pack-matmul-weights{lanes=8x}"}); }).find("got '8x'"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run_passes(m, {"pack-matmul-weights{block=8}"});
            }).find("unknown option 'block' (it takes lanes=N, dot=N)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              run_passes(m, {"pack-matmul-weights{lanes=8 dot=3}"});
            }).find("option dot must be 0, 2 or 4"),
            std::string::npos);
}

// rec's transformer in small: a product whose columns do not fill the
// tiles (53), a bias, a dense layer (a Gemm with transB) and a product of
// two activations, which stays unpacked.
Module net_with_weights() {
  const std::string text =
      "def @main(%x: Tensor[(1, 40, 24), float32]) -> (Tensor[(1, 40, 53), float32], Tensor[(1, 40, 40), "
      "float32]) {\n"
      "  %h = matmul(%x, " +
      testing::random_constant_text({24, 53}, 10) + ")\n  %b = add(%h, " +
      testing::random_constant_text({53}, 11) +
      ")\n"
      "  %d = nn.dense(%x, " +
      testing::random_constant_text({40, 24}, 12) +
      ")\n"
      "  %r = nn.relu(%d)\n"
      "  %t = permute_dims(%x, axes=[0, 2, 1])\n"
      "  %s = matmul(%r, %x)\n"
      "  %q = matmul(%s, %t)\n"
      "  return (%b, %q)\n"
      "}\n";
  return parse_module(text, "net.kir");
}

// The graph as pack-matmul-weights and fold-constants left it, from
// compile_printed's output; empty when the output lacks that stage.
std::string ir_after_packing(const std::string& printed) {
  const size_t after = printed.find("# after pack-matmul-weights");
  if (after == std::string::npos) return "";
  const std::string packed = printed.substr(0, after);
  const size_t folded = packed.rfind("# IR after fold-constants");
  return folded == std::string::npos ? "" : packed.substr(folded);
}

// `m` compiled for this machine's vector width and for AVX2 (x86-64-v3):
// `check` reads the graph after packing (ir_after_packing), and the
// compiled outputs match the interpreter's on random arguments (`seed`).
void for_each_vector_width(const Module& m, uint64_t seed,
                           const std::function<void(const std::string&)>& check) {
  std::vector<Tensor> args = testing::random_args(*m.find("main"), seed);
  std::vector<Tensor> want = interpret(m, "main", args);
  for (const char* cpu : {"", "x86-64-v3"}) {
    SCOPED_TRACE(std::string("cpu ") + cpu);
    std::string printed;
    Executable exe = testing::compile_printed(m, cpu, &printed);
    const std::string last = ir_after_packing(printed);
    ASSERT_FALSE(last.empty()) << printed;
    check(last);
    testing::expect_outputs_near(VirtualMachine(exe).run(args), want, 1e-4);
  }
}

TEST(PackedMatmul, CompiledNetMatchesTheInterpreterForEachVectorWidth) {
  // The two products with a constant weight are packed (and the packing
  // folded away); the two of activations are not.
  for_each_vector_width(net_with_weights(), 7, [](const std::string& last) {
    EXPECT_EQ(testing::count_calls(last, "nn.matmul_packed"), 2) << last;
    EXPECT_EQ(testing::count_calls(last, "nn.pack_matmul_weight"), 0) << last;
    EXPECT_EQ(testing::count_calls(last, "matmul"), 2) << last;
  });
}

// A squeeze-and-excite block: its 1x1 convs on the pooled 1x1 image are
// packed products (20 and 6 channels make no blocks, so neither vector
// width blocks them instead), and the compiled block matches the
// interpreter.
TEST(PackedMatmul, SqueezeAndExciteConvsAreProductsAndMatchTheInterpreter) {
  const std::string text =
      "def @main(%x: Tensor[(1, 20, 4, 6), float32]) -> Tensor[(1, 20, 4, 6), float32] {\n"
      "  %p = nn.adaptive_avg_pool2d(%x)\n"
      "  %s = nn.conv2d(%p, " +
      testing::random_constant_text({6, 20, 1, 1}, 21) + ")\n  %sb = add(%s, " +
      testing::random_constant_text({1, 6, 1, 1}, 22) +
      ")\n"
      "  %r = nn.relu(%sb)\n"
      "  %e = nn.conv2d(%r, " +
      testing::random_constant_text({20, 6, 1, 1}, 23) +
      ")\n"
      "  %g = nn.hard_sigmoid(%e)\n"
      "  %y = multiply(%x, %g)\n"
      "  return %y\n"
      "}\n";
  for_each_vector_width(parse_module(text, "se.kir"), 8, [](const std::string& last) {
    EXPECT_EQ(testing::count_calls(last, "nn.matmul_packed"), 2) << last;
    EXPECT_EQ(testing::count_calls(last, "nn.conv2d"), 0) << last;
  });
}

}  // namespace
}  // namespace kiln
