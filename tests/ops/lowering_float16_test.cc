// float16 tensors in compiled kernels: each op reads them as float32 and
// rounds its results back to float16, as the reference kernels compute
// them (src/op/kernel_util.h: float16 loads as float, stores rounded to
// nearest even). Ops across the families against their reference kernels:
// those that compute exactly in float32 (arithmetic on two float16 values,
// comparisons, casts, data movement, max pools) bit for bit; the others
// (transcendental functions, sums in another order) within a few float16
// units in the last place of the largest reference magnitude.
#include <gtest/gtest.h>

#include <cmath>

#include "lower/lower.h"
#include "lowering_util.h"
#include "op_test_util.h"

namespace kiln::testing {
namespace {

const DType kF16 = DType::Float16;

TensorDesc f16(Shape s) { return {std::move(s), kF16}; }
TensorDesc typed(Shape s, DType t) { return {std::move(s), t}; }

struct Case {
  Case(std::string op_, std::vector<TensorDesc> in_, Attrs attrs_,
       std::vector<std::pair<double, double>> ranges_ = {}, int ulps_ = 0)
      : op(std::move(op_)),
        in(std::move(in_)),
        attrs(std::move(attrs_)),
        ranges(std::move(ranges_)),
        ulps(ulps_) {}
  std::string op;
  std::vector<TensorDesc> in;
  Attrs attrs;
  std::vector<std::pair<double, double>> ranges;  // per input; default [-4, 4)
  int ulps = 0;  // float16 units (2^-10) of the largest reference magnitude; 0: bit for bit
};

std::vector<Case> cases() {
  const Attrs none;
  auto axis = [](std::vector<int64_t> a) { return Attrs{{"axis", a}}; };
  return {
      // Sums and products overflowing to infinity (65504 is the largest float16).
      {"add", {f16({3, 37}), f16({37})}, none, {{-4e4, 4e4}, {-4e4, 4e4}}},
      {"subtract", {f16({2, 3, 5}), f16({2, 3, 5})}, none},
      {"multiply", {f16({3, 37}), f16({3, 37})}, none, {{-400, 400}, {-400, 400}}},
      {"divide", {f16({3, 37}), f16({37})}, none, {{-4, 4}, {0.01, 3}}},
      {"maximum", {f16({4, 33}), f16({4, 33})}, none},
      {"minimum", {f16({4, 33}), f16({33})}, none},
      {"mod", {f16({3, 20}), f16({3, 20})}, none, {{-50, 50}, {0.5, 7}}},
      {"nn.relu", {f16({2, 70})}, none},
      {"clip", {f16({2, 70})}, Attrs{{"a_min", -1.5}, {"a_max", 2.25}}},
      {"abs", {f16({2, 70})}, none},
      {"exp", {f16({2, 70})}, none, {{-8, 8}}, 1},
      {"sigmoid", {f16({2, 70})}, none, {{-8, 8}}, 1},
      {"tanh", {f16({2, 70})}, none, {}, 1},
      {"nn.silu", {f16({2, 70})}, none, {}, 1},
      {"less", {f16({3, 17}), f16({17})}, none},
      {"where", {typed({3, 17}, DType::Bool), f16({3, 17}), f16({17})}, none, {{0, 1}, {-4, 4}, {-4, 4}}},
      // Casts from and to float16: rounded to nearest even, saturating
      // integers, integers past 65504 to infinity.
      {"astype", {f16({3, 40})}, Attrs{{"dtype", std::string("float32")}}},
      {"astype", {f16({3, 40})}, Attrs{{"dtype", std::string("int32")}}, {{-300, 300}}},
      {"astype", {f16({3, 40})}, Attrs{{"dtype", std::string("int8")}}, {{-300, 300}}},
      {"astype", {typed({3, 40}, DType::Float32)}, Attrs{{"dtype", std::string("float16")}}, {{-7e4, 7e4}}},
      {"astype", {typed({3, 40}, DType::Float64)}, Attrs{{"dtype", std::string("float16")}}, {{-3, 3}}},
      {"astype", {typed({3, 40}, DType::Int32)}, Attrs{{"dtype", std::string("float16")}}, {{-1e5, 1e5}}},
      {"sum", {f16({3, 70})}, axis({1}), {}, 2},
      {"mean", {f16({2, 3, 9, 11})}, axis({2, 3}), {}, 2},
      {"max", {f16({4, 5, 3})}, axis({1})},
      {"nn.softmax", {f16({3, 50})}, none, {{-6, 6}}, 2},
      {"matmul", {f16({5, 40}), f16({40, 19})}, none, {{-1, 1}, {-1, 1}}, 4},
      {"nn.dense", {f16({4, 33}), f16({17, 33})}, none, {{-1, 1}, {-1, 1}}, 4},
      {"nn.conv2d",
       {f16({1, 8, 12, 13}), f16({16, 8, 3, 3})},
       Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}},
       {{-1, 1}, {-1, 1}},
       4},
      {"nn.conv2d",
       {f16({1, 16, 9, 9}), f16({16, 1, 3, 3})},
       Attrs{{"groups", int64_t{16}}, {"strides", std::vector<int64_t>{2, 2}}},
       {{-1, 1}, {-1, 1}},
       4},
      {"nn.max_pool2d",
       {f16({1, 3, 10, 11})},
       Attrs{{"pool_size", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}}},
      {"nn.avg_pool2d", {f16({1, 3, 10, 11})}, Attrs{{"pool_size", std::vector<int64_t>{2, 2}}}, {}, 1},
      {"image.resize2d", {f16({1, 2, 5, 6})}, Attrs{{"size", std::vector<int64_t>{9, 4}}}},
      {"image.resize2d",
       {f16({1, 2, 5, 6})},
       Attrs{{"size", std::vector<int64_t>{9, 4}}, {"method", std::string("linear")}},
       {},
       1},
      {"image.grid_sample", {f16({1, 2, 5, 6}), f16({1, 4, 3, 2})}, {}, {{-4, 4}, {-1.2, 1.2}}, 2},
      {"cumsum", {f16({3, 40})}, Attrs{{"axis", int64_t{1}}}, {}, 2},
      {"nn.gelu", {f16({2, 70})}, none, {}, 1},
      {"permute_dims", {f16({2, 3, 9})}, Attrs{{"axes", std::vector<int64_t>{2, 0, 1}}}},
      {"concat", {f16({2, 3}), f16({2, 5})}, Attrs{{"axis", int64_t{1}}}},
      {"take", {f16({6, 5}), typed({4}, DType::Int64)}, Attrs{{"axis", int64_t{0}}}, {{-4, 4}, {-6, 5}}},
      {"topk", {f16({3, 40})}, Attrs{{"k", int64_t{5}}}},
  };
}

// Whether float16 a and b (as doubles) agree within `tol`, or are the same
// float16 value (infinities, NaN) when tol is 0.
bool agrees(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (tol == 0) return a == b;
  return a == b || std::fabs(a - b) <= tol;
}

TEST(LoweringFloat16, OpsComputeInFloat32AndRoundAsTheReference) {
  struct Instance {
    Case c;
    Attrs attrs;
    std::vector<TensorDesc> out;
    std::string symbol;
  };
  std::vector<Instance> instances;
  std::vector<tir::PrimFunc> funcs;
  for (const schedule::CpuTarget& cpu : schedule_targets()) {
    if (!cpu.float16_conversions) continue;  // NeedTheTargetsConversions checks these
    for (const Case& c : cases()) {
      const OpDef& def = op_named(c.op);
      const Attrs attrs = normalize_attrs(def, c.attrs);
      const std::vector<TensorDesc> out = infer_op(def, c.in, attrs);
      const std::string symbol = "half" + std::to_string(instances.size());
      std::string why;
      auto f = lower::lower_kernel(lower::single_op_kernel(symbol, c.op, c.in, out, attrs), &why, cpu);
      ASSERT_TRUE(f.has_value()) << c.op << " on " << desc_str(c.in[0]) << " was not lowered: " << why;
      funcs.push_back(built_for(*f, cpu));
      instances.push_back({c, attrs, out, symbol});
    }
  }
  if (instances.empty()) GTEST_SKIP() << "this CPU has no float16 conversions (F16C): nothing compiles";
  auto loaded = load_kernels(funcs, "float16 lowering test");
  int64_t infinities = 0;
  for (const Instance& in : instances) {
    Lcg r(29);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < in.c.in.size(); ++i)
      inputs.push_back(
          random_input(in.c.in[i], i < in.c.ranges.size() ? in.c.ranges[i] : std::pair{-4.0, 4.0}, r));
    const std::vector<Tensor> want = run_op(op_named(in.c.op), inputs, in.attrs);
    int32_t status = 0;
    std::vector<Tensor> got = run_kernel(*loaded, in.symbol, inputs, in.out, status);
    ASSERT_EQ(status, 0) << in.c.op;
    for (size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(got[o].dtype(), want[o].dtype());
      const double tol =
          is_float(want[o].dtype()) ? in.c.ulps * std::ldexp(largest_magnitude(want[o]), -10) : 0;
      int bad = 0;
      for (int64_t i = 0; i < want[o].numel() && bad < 3; ++i) {
        const double a = got[o].get_as_double(i), b = want[o].get_as_double(i);
        infinities += std::isinf(b) && want[o].dtype() == kF16;
        if (!agrees(a, b, tol)) {
          ++bad;
          ADD_FAILURE() << in.c.op << " (" << in.symbol << ", " << desc_str(in.c.in[0]) << ") output " << o
                        << " element " << i << ": compiled " << a << ", reference " << b;
        }
      }
    }
  }
  // The overflowing cases did overflow to infinities.
  EXPECT_GT(infinities, 0);
}

// Without float16 conversions (a target without F16C) float16 ops stay on
// their reference kernels, and say why.
TEST(LoweringFloat16, NeedTheTargetsConversions) {
  schedule::CpuTarget cpu = schedule::host_cpu_target();
  cpu.float16_conversions = false;
  const Attrs attrs = normalize_attrs(op_named("add"), {});
  std::string why;
  auto f = lower::lower_kernel(
      lower::single_op_kernel("add16", "add", {f16({2, 8}), f16({2, 8})}, {f16({2, 8})}, attrs), &why, cpu);
  EXPECT_FALSE(f.has_value());
  EXPECT_EQ(why, "float16 tensors need a target with float16 conversions (x86's F16C)");
  // float32 ops are unaffected.
  EXPECT_TRUE(lower::lower_kernel(
      lower::single_op_kernel("add32", "add", {f32({2, 8}), f32({2, 8})}, {f32({2, 8})}, attrs), &why, cpu));
}

// A float16 relu's compare stays a float32 vector compare on the widened
// values: LLVM would otherwise narrow it to a float16 compare, which x86
// without AVX-512 FP16 runs element by element (vucomiss per lane).
TEST(LoweringFloat16, ComparesOnWidenedValuesStayVectors) {
  schedule::CpuTarget cpu{32, 16};
  cpu.float16_conversions = true;
  const Attrs attrs = normalize_attrs(op_named("nn.relu"), {});
  auto f = lower::lower_kernel(
      lower::single_op_kernel("relu16", "nn.relu", {f16({4, 64})}, {f16({4, 64})}, attrs), nullptr, cpu);
  ASSERT_TRUE(f.has_value());
  codegen::CodegenOptions o;
  o.target = codegen::parse_target("llvm -mcpu=x86-64-v3");
  const std::string assembly = codegen::emit_text({built_for(*f, cpu)}, codegen::EmitKind::Assembly, o);
  EXPECT_NE(assembly.find("vcvtph2ps"), std::string::npos) << assembly;
  EXPECT_NE(assembly.find("vcvtps2ph"), std::string::npos) << assembly;
  EXPECT_EQ(assembly.find("ucomiss"), std::string::npos) << assembly;
}

}  // namespace
}  // namespace kiln::testing
