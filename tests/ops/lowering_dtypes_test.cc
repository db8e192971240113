// The element types beyond the common ones (float64, int16, uint16, uint32,
// uint64), which only ops registered with lower::Dtypes::Any lower: every
// such op against its reference kernel on each of those types it takes, as
// lowering_test.cc does for the common ones (one host shared object for all
// cases; integers and bools exactly, float64 within 1e-12 of the largest
// reference magnitude: the reference computes in double too, sums in
// another order). An op registered for them without cases here fails
// EveryOpTakingEveryDtypeIsChecked; one not registered refuses them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "lowering_util.h"
#include "op_test_util.h"
#include "tir/transform/passes.h"

namespace kiln::testing {
namespace {

struct Case {
  std::vector<TensorDesc> in;
  Attrs attrs;
  std::vector<std::pair<double, double>> ranges;  // per input
};

const DType kF64 = DType::Float64, kI16 = DType::Int16, kU16 = DType::UInt16, kU32 = DType::UInt32,
            kU64 = DType::UInt64;
const std::vector<DType> kWide = {kF64, kI16, kU16, kU32, kU64};
const std::vector<DType> kWideInts = {kI16, kU16, kU32, kU64};

TensorDesc typed(Shape s, DType t) { return {std::move(s), t}; }

// Values a type's random inputs take: signed around 0, unsigned from 0.
std::pair<double, double> range_of(DType t) {
  if (t == kF64) return {-3, 3};
  if (t == kI16) return {-1000, 1000};
  return {0, 1000};
}

// Elementwise over `dtypes`: a shape of its own, a broadcast one, a scalar.
std::vector<Case> elementwise(const std::vector<DType>& dtypes, int inputs,
                              std::pair<double, double> second = {0, 0}) {
  std::vector<Case> cases;
  for (DType t : dtypes) {
    std::vector<std::pair<double, double>> ranges(size_t(inputs), range_of(t));
    if (inputs == 2 && second.second > second.first) ranges[1] = second;
    if (inputs == 1) {
      cases.push_back({{typed({2, 3, 5}, t)}, {}, ranges});
      continue;
    }
    cases.push_back({{typed({2, 3, 5}, t), typed({2, 3, 5}, t)}, {}, ranges});
    cases.push_back({{typed({2, 3, 5}, t), typed({5}, t)}, {}, ranges});
    cases.push_back({{typed({}, t), typed({4, 3}, t)}, {}, ranges});
  }
  return cases;
}

std::vector<Case> reduction(const std::vector<DType>& dtypes) {
  std::vector<Case> cases;
  for (DType t : dtypes) {
    cases.push_back({{typed({3, 70}, t)}, Attrs{{"axis", std::vector<int64_t>{1}}}, {range_of(t)}});
    cases.push_back({{typed({2, 3, 9, 11}, t)}, Attrs{{"axis", std::vector<int64_t>{2, 3}}}, {range_of(t)}});
    cases.push_back({{typed({4, 5, 3}, t)}, Attrs{{"axis", std::vector<int64_t>{1}}}, {range_of(t)}});
  }
  return cases;
}

std::vector<Case> shape_op(Attrs attrs, Shape shape) {
  std::vector<Case> cases;
  for (DType t : {kF64, kU16, kU64}) cases.push_back({{typed(shape, t)}, attrs, {range_of(t)}});
  return cases;
}

using Gen = std::function<std::vector<Case>()>;

const std::map<std::string, Gen>& generators() {
  static const std::map<std::string, Gen> g = {
      {"add", [] { return elementwise(kWide, 2); }},
      {"subtract", [] { return elementwise(kWide, 2); }},
      {"multiply", [] { return elementwise(kWide, 2); }},
      {"maximum", [] { return elementwise(kWide, 2); }},
      {"minimum", [] { return elementwise(kWide, 2); }},
      {"divide",
       [] {
         std::vector<Case> cases = elementwise({kF64}, 2, {0.5, 3});
         for (Case& c : elementwise(kWideInts, 2, {1, 50})) cases.push_back(c);
         return cases;
       }},
      {"power",
       [] {
         std::vector<Case> cases = elementwise({kF64}, 2, {-2, 2});
         // Exponents past every width: products wrap.
         for (const Case& c : elementwise(kWideInts, 2, {0, 70})) cases.push_back(c);
         return cases;
       }},
      // Divisors from 1 (the reference fails on 0); signed dividends of both signs.
      {"mod",
       [] {
         return elementwise(kWide, 2, {1, 50});
       }},
      {"fmod",
       [] {
         return elementwise(kWide, 2, {1, 50});
       }},
      // Amounts from 0 past the width (to 0) of each unsigned type.
      {"bitshift",
       [] {
         std::vector<Case> cases;
         for (const char* direction : {"left", "right"})
           for (DType t : {kU16, kU32, kU64}) {
             const double bits = 8.0 * double(dtype_bytes(t));
             const Attrs a{{"direction", std::string(direction)}};
             cases.push_back({{typed({3, 21}, t), typed({3, 21}, t)}, a, {{0, 60000}, {0, bits + 3}}});
             cases.push_back({{typed({3, 21}, t), typed({21}, t)}, a, {{0, 60000}, {0, bits + 3}}});
           }
         return cases;
       }},
      {"negative",
       [] {
         return elementwise({kF64, kI16}, 1);
       }},
      {"abs",
       [] {
         return elementwise({kF64, kI16, kU32}, 1);
       }},
      {"exp", [] { return elementwise({kF64}, 1); }},
      {"log",
       [] {
         return std::vector<Case>{{{typed({3, 7}, kF64)}, {}, {{0.01, 5}}}};
       }},
      {"sqrt",
       [] {
         return std::vector<Case>{{{typed({3, 7}, kF64)}, {}, {{0, 5}}}};
       }},
      {"equal",
       [] {
         return elementwise(kWide, 2, {0, 3});
       }},
      {"not_equal",
       [] {
         return elementwise(kWide, 2, {0, 3});
       }},
      {"less", [] { return elementwise(kWide, 2); }},
      {"less_equal", [] { return elementwise(kWide, 2); }},
      {"greater", [] { return elementwise(kWide, 2); }},
      {"greater_equal", [] { return elementwise(kWide, 2); }},
      {"where",
       [] {
         std::vector<Case> cases;
         for (DType t : kWide)
           cases.push_back({{typed({2, 5}, DType::Bool), typed({2, 5}, t), typed({5}, t)},
                            {},
                            {{0, 1}, range_of(t), range_of(t)}});
         return cases;
       }},
      {"astype",
       [] {
         std::vector<Case> cases;
         auto to = [](const char* name) { return Attrs{{"dtype", std::string(name)}}; };
         for (DType t : kWide)
           for (const char* name : {"float32", "float64", "int32", "int64"})
             cases.push_back({{typed({3, 6}, t)}, to(name), {range_of(t)}});
         // Narrowing, saturating float64 and wrapping integers.
         for (const char* name : {"int16", "uint16", "uint32"}) {
           cases.push_back({{typed({3, 6}, kF64)}, to(name), {{-1e10, 1e10}}});
           cases.push_back({{typed({3, 6}, DType::Int64)}, to(name), {{-1e12, 1e12}}});
         }
         cases.push_back({{typed({3, 6}, DType::Float32)}, to("float64"), {{-3, 3}}});
         return cases;
       }},
      {"sum",
       [] {
         return reduction({kF64, kU32, kU64});
       }},
      {"mean",
       [] {
         return reduction({kF64, kI16, kU16, kU32});
       }},
      {"max", [] { return reduction(kWide); }},
      {"min", [] { return reduction(kWide); }},
      {"prod",
       [] {
         return std::vector<Case>{
             {{typed({3, 6}, kF64)}, Attrs{{"axis", std::vector<int64_t>{1}}}, {{0.5, 1.5}}},
             {{typed({3, 6}, kU32)}, Attrs{{"axis", std::vector<int64_t>{1}}}, {{0, 100}}}};
       }},
      {"cumsum",
       [] {
         std::vector<Case> cases;
         for (DType t : {kF64, kU32, kU64})
           for (int64_t reverse : {0, 1})
             cases.push_back(
                 {{typed({3, 40}, t)}, Attrs{{"axis", int64_t{1}}, {"reverse", reverse}}, {range_of(t)}});
         return cases;
       }},
      {"reshape",
       [] {
         return shape_op(Attrs{{"newshape", std::vector<int64_t>{4, -1}}}, {2, 3, 4});
       }},
      {"flatten",
       [] {
         return shape_op(Attrs{{"axis", int64_t{2}}}, {2, 3, 4, 2});
       }},
      {"squeeze",
       [] {
         return shape_op({}, {1, 3, 1, 4});
       }},
      {"expand_dims",
       [] {
         return shape_op(Attrs{{"axis", int64_t{1}}}, {3, 4});
       }},
      {"permute_dims",
       [] {
         return shape_op(Attrs{{"axes", std::vector<int64_t>{2, 0, 1}}}, {2, 3, 9});
       }},
      {"strided_slice",
       [] {
         return shape_op(Attrs{{"begin", std::vector<int64_t>{1, -1}},
                               {"end", std::vector<int64_t>{4, -7}},
                               {"strides", std::vector<int64_t>{2, -2}}},
                         {5, 6});
       }},
      {"broadcast_to",
       [] {
         return shape_op(Attrs{{"shape", std::vector<int64_t>{2, 3, 4}}}, {3, 1});
       }},
      {"concat",
       [] {
         std::vector<Case> cases;
         for (DType t : {kF64, kU16, kU64})
           cases.push_back({{typed({2, 3}, t), typed({2, 1}, t), typed({2, 4}, t)},
                            Attrs{{"axis", int64_t{1}}},
                            {range_of(t), range_of(t), range_of(t)}});
         return cases;
       }},
      // int16 weights of a quantized product (vpmaddwd's pairs): packed, and
      // uint8 data by them.
      {"nn.pack_matmul_weight",
       [] {
         return std::vector<Case>{{{typed({7, 21}, kI16)}, Attrs{{"columns", int64_t{8}}}, {{-128, 127}}},
                                  {{typed({16, 9}, kI16)},
                                   Attrs{{"columns", int64_t{16}}, {"transpose", int64_t{1}}},
                                   {{-128, 127}}}};
       }},
      {"nn.matmul_packed",
       [] {
         return std::vector<Case>{{{typed({5, 7}, DType::UInt8), typed({3, 4, 8, 2}, kI16)},
                                   Attrs{{"units", int64_t{20}}},
                                   {{0, 255}, {-128, 127}}},
                                  {{typed({2, 40, 24}, DType::UInt8), typed({4, 12, 16, 2}, kI16)},
                                   Attrs{{"units", int64_t{60}}},
                                   {{0, 255}, {-128, 127}}}};
       }},
      // int16 weights of a quantized conv in blocks: pairs of input
      // channels, and uint8 data by them (padded, strided).
      {"nn.block_conv_weight",
       [] {
         return std::vector<Case>{{{typed({16, 8, 3, 3}, kI16)},
                                   Attrs{{"in_block", int64_t{8}}, {"out_block", int64_t{8}}},
                                   {{-128, 127}}},
                                  {{typed({8, 4, 1, 1}, kI16)},
                                   Attrs{{"in_block", int64_t{4}}, {"out_block", int64_t{8}}},
                                   {{-128, 127}}}};
       }},
      {"nn.conv2d_blocked",
       [] {
         return std::vector<Case>{
             {{typed({1, 2, 9, 11, 8}, DType::UInt8), typed({2, 2, 3, 3, 4, 8, 2}, kI16)},
              Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}},
              {{0, 255}, {-128, 127}}},
             {{typed({1, 1, 10, 13, 4}, DType::UInt8), typed({3, 1, 3, 3, 2, 8, 2}, kI16)},
              Attrs{{"strides", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{0, 1, 1, 0}}},
              {{0, 255}, {-128, 127}}},
             {{typed({1, 4, 7, 7, 8}, DType::UInt8), typed({2, 4, 1, 1, 4, 8, 2}, kI16)},
              Attrs{},
              {{0, 255}, {-128, 127}}}};
       }},
  };
  return g;
}

TEST(LoweringDtypes, EveryOpTakingEveryDtypeIsChecked) {
  for (const lower::OpLowering& l : lower::lowerings().all()) {
    const bool any = l.dtypes == lower::Dtypes::Any;
    EXPECT_EQ(generators().count(l.op) != 0, any)
        << l.op
        << (any ? " takes every dtype but has no cases here" : " has cases but takes the common dtypes");
  }
}

// An op registered for the common types refuses the others, naming them.
TEST(LoweringDtypes, OtherOpsLeaveThemToTheReferenceKernel) {
  const TensorDesc x{{2, 8}, kF64};
  std::string why;
  const Attrs attrs = normalize_attrs(op_named("nn.relu"), {});
  auto f = lower::lower_kernel(lower::single_op_kernel("relu64", "nn.relu", {x}, {x}, attrs), &why,
                               schedule::host_cpu_target());
  EXPECT_FALSE(f.has_value());
  EXPECT_EQ(why, "float64 tensors are not lowered yet for this op");
}

struct Instance {
  std::string op;
  Case c;
  Attrs attrs;
  std::vector<TensorDesc> out;
  std::string symbol;
};

TEST(LoweringDtypes, EveryCaseMatchesTheReferenceKernel) {
  std::vector<Instance> instances;
  std::vector<tir::PrimFunc> funcs;
  for (const auto& [op, gen] : generators())
    for (const schedule::CpuTarget& cpu : schedule_targets())
      for (const Case& c : gen()) {
        const OpDef& def = op_named(op);
        const Attrs attrs = normalize_attrs(def, c.attrs);
        const std::vector<TensorDesc> out = infer_op(def, c.in, attrs);
        const std::string symbol = "dtypes" + std::to_string(instances.size());
        std::string why;
        auto f = lower::lower_kernel(lower::single_op_kernel(symbol, op, c.in, out, attrs), &why, cpu);
        ASSERT_TRUE(f.has_value()) << op << " on " << desc_str(c.in[0]) << " was not lowered: " << why;
        funcs.push_back(built_for(*f, cpu));
        instances.push_back({op, c, attrs, out, symbol});
      }
  auto loaded = load_kernels(funcs, "lowering dtypes test");
  std::set<std::string> checked;
  for (const Instance& in : instances) {
    Lcg r(13);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < in.c.in.size(); ++i) inputs.push_back(random_input(in.c.in[i], in.c.ranges[i], r));
    const std::vector<Tensor> want = run_op(op_named(in.op), inputs, in.attrs);
    int32_t status = 0;
    std::vector<Tensor> got = run_kernel(*loaded, in.symbol, inputs, in.out, status);
    ASSERT_EQ(status, 0) << in.op;
    for (size_t o = 0; o < want.size(); ++o) {
      const double tol = is_float(want[o].dtype()) ? 1e-12 * largest_magnitude(want[o]) : 0;
      int bad = 0;
      for (int64_t i = 0; i < want[o].numel() && bad < 3; ++i) {
        // Integers compared by their bits (uint64 beyond 2^53 included).
        if (!is_float(want[o].dtype())) {
          if (std::memcmp(static_cast<const char*>(got[o].raw()) + i * dtype_bytes(want[o].dtype()),
                          static_cast<const char*>(want[o].raw()) + i * dtype_bytes(want[o].dtype()),
                          size_t(dtype_bytes(want[o].dtype()))) != 0) {
            ++bad;
            ADD_FAILURE() << in.op << " (" << in.symbol << ", " << desc_str(in.c.in[0]) << ") output " << o
                          << " element " << i << ": compiled " << got[o].get_as_double(i) << ", reference "
                          << want[o].get_as_double(i);
          }
          continue;
        }
        const double a = got[o].get_as_double(i), b = want[o].get_as_double(i);
        if (std::isnan(a) && std::isnan(b)) continue;
        if (!(std::fabs(a - b) <= tol)) {
          ++bad;
          ADD_FAILURE() << in.op << " (" << in.symbol << ", " << desc_str(in.c.in[0]) << ") output " << o
                        << " element " << i << ": compiled " << a << ", reference " << b;
        }
      }
    }
    checked.insert(in.op);
  }
  EXPECT_EQ(checked.size(), generators().size());
}

}  // namespace
}  // namespace kiln::testing
