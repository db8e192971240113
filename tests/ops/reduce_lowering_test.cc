// Reductions lowered as kernels (src/lower/reduce.cc): the stages sums,
// means, maxima and minima take, checked in the printed tensor IR and by
// values against the reference kernels, NaN for NaN; argmax and argmin on
// the values where picking is delicate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "lowering_util.h"
#include "op_test_util.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::testing {
namespace {

// One reduce op over `axes` of a float32 x of `shape`, lowered for `cpu`:
// its attributes, the kernel's name (unique per op, shape, axes and
// keepdims; `suffix` appended) and the kernel.
struct ReduceKernel {
  TensorDesc x;
  Attrs attrs;
  std::string name;
  std::optional<tir::PrimFunc> f;
};
ReduceKernel lower_reduce(const char* op, const Shape& shape, const std::vector<int64_t>& axes,
                          int64_t keepdims, const schedule::CpuTarget& cpu = {64, 32},
                          const std::string& suffix = "") {
  ReduceKernel k;
  k.x = f32(shape);
  k.attrs = normalize_attrs(op_named(op), Attrs{{"axis", axes}, {"keepdims", keepdims}});
  k.name = std::string(op) + "_" + std::to_string(shape.back()) + "_" + std::to_string(axes.size()) + "_" +
           std::to_string(keepdims) + suffix;
  k.f = lower_op(k.name, op, {k.x}, k.attrs, cpu);
  return k;
}

// A sum, mean, max or min over the last axis alone, 32 elements or more,
// reduces into partials (16 from 64 elements, 8 from 32), each over every
// 16th (8th) element, in vectors, then reduces the partials: a 128 x 768
// mean ran one chain of 768 dependent float64 additions per row (59 us, one
// thread, Zen 5; 5 us with partials), a max two chains (126 -> 10 us).
// Lanes past the end add 0 or give -inf (45 = 6 x 8 - 3). Each output's
// partials are computed in the loop over outputs (a buffer of one row's).
// Shorter axes,
// several axes and other axes keep one reduction per output. Values against
// the reference, with and without keepdims; a NaN still wins, in a lane past
// the end of a step or not.
TEST(Lowering, ReductionsOverALongLastAxisUsePartials) {
  struct Case {
    const char* op;
    Shape shape;
    std::vector<int64_t> axes;
    int64_t keepdims;
    const char* partials;  // the partials' buffer, or null
  };
  const Case cases[] = {
      {"mean", {128, 768}, {-1}, 1, "%mean_0_partial_sum: Buffer[(1, 16), float64]"},
      {"sum", {3, 45}, {1}, 0, "%sum_0_partial_sum: Buffer[(1, 8), float64]"},
      {"sum", {2, 3, 100}, {-1}, 0, "%sum_0_partial_sum: Buffer[(1, 1, 16), float64]"},
      {"max", {128, 768}, {-1}, 1, "%max_0_partial_max: Buffer[(1, 16), float32]"},
      {"min", {3, 45}, {1}, 0, "%min_0_partial_max: Buffer[(1, 8), float32]"},
      {"mean", {6, 20}, {-1}, 0, nullptr},
      {"sum", {4, 40, 40}, {1, 2}, 1, nullptr},
      {"max", {2, 64, 3}, {1}, 1, nullptr},
  };
  for (const Case& c : cases) {
    const auto [x, attrs, name, f] = lower_reduce(c.op, c.shape, c.axes, c.keepdims);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    if (c.partials)
      EXPECT_NE(text.find(c.partials), std::string::npos) << name << "\n" << text;
    else
      EXPECT_EQ(text.find("_partial_"), std::string::npos) << name << "\n" << text;
    Lcg r(19);
    Tensor tx = random_input(x, {-20, 20}, r);
    expect_matches_reference(*f, name, c.op, {tx}, attrs, 1e-5);
    if (!c.partials || (std::string(c.op) != "max" && std::string(c.op) != "min")) continue;
    // NaNs in the first row's last element and the second row's first.
    const int64_t row = c.shape.back();
    tx.data<float>()[row - 1] = std::numeric_limits<float>::quiet_NaN();
    tx.data<float>()[row] = std::numeric_limits<float>::quiet_NaN();
    auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
    Tensor got = Tensor::empty(run1(c.op, {tx}, attrs).shape(), DType::Float32);
    jit->run(name, {tx.raw(), got.raw()});
    EXPECT_TRUE(std::isnan(got.data<float>()[0])) << name;
    EXPECT_TRUE(std::isnan(got.data<float>()[1])) << name;
    if (c.shape.size() == 2 && c.shape[0] > 2) {
      EXPECT_FALSE(std::isnan(got.data<float>()[2])) << name;
    }
  }
}

// A float sum or mean over the trailing axes (a spatial mean, NCHW over H
// and W) first sums rows into float64 columns, its inner loop along a row in
// vectors, then the columns: one chain of H x W dependent float64 additions
// per output ran at 1.5 G elements/s. Values against the reference, with
// and without keepdims; a reduction that leaves the last axis, or of a last
// axis shorter than 8, keeps one reduction per output.
TEST(Lowering, ReductionsOverTrailingAxesSumRowsIntoColumns) {
  struct Case {
    const char* op;
    Shape shape;
    std::vector<int64_t> axes;
    int64_t keepdims;
    bool columns;
  };
  const Case cases[] = {
      {"mean", {1, 13, 106, 122}, {2, 3}, 1, true},   {"sum", {2, 5, 9, 17}, {-2, -1}, 0, true},
      {"mean", {3, 4, 5, 6, 40}, {2, 3, 4}, 0, true}, {"sum", {4, 40, 40}, {1, 2}, 1, true},
      {"mean", {2, 3, 9, 7}, {2, 3}, 1, false},       {"sum", {4, 40, 40}, {0, 1}, 1, false},
      {"max", {2, 3, 10, 19}, {2, 3}, 1, true},       {"min", {3, 11, 33}, {1, 2}, 0, true},
  };
  for (const Case& c : cases) {
    const auto [x, attrs, name, f] = lower_reduce(c.op, c.shape, c.axes, c.keepdims);
    ASSERT_TRUE(f.has_value()) << name;
    const std::string text = tir::print_prim_func(**f);
    const bool minmax = c.op[1] == 'a' || c.op[1] == 'i';
    EXPECT_EQ(text.find(minmax ? "_column_max" : "_columns") != std::string::npos, c.columns) << name << "\n"
                                                                                              << text;
    if (c.columns) {
      // The loop that adds a row to the columns runs along the row in vectors.
      const size_t add = text.find(minmax ? "%in0[" : "+ cast<float64>(%in0[");
      ASSERT_NE(add, std::string::npos) << text;
      const size_t line = text.rfind('\n', text.rfind('\n', add) - 1);
      EXPECT_NE(text.substr(line, add - line).find("vectorized {"), std::string::npos) << name << "\n"
                                                                                       << text;
    }
    Lcg r(23);
    Tensor tx = random_input(x, {-20, 20}, r);
    expect_matches_reference(*f, name, c.op, {tx}, attrs, 1e-6);
    if (!minmax) continue;
    // A NaN in the first output's last column wins there and only there.
    const int64_t plane = c.shape.back() * c.shape[c.shape.size() - 2];
    tx.data<float>()[c.shape.back() - 1] = std::numeric_limits<float>::quiet_NaN();
    auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
    Tensor got = Tensor::empty(run1(c.op, {tx}, attrs).shape(), DType::Float32);
    jit->run(name, {tx.raw(), got.raw()});
    EXPECT_TRUE(std::isnan(got.data<float>()[0])) << name;
    EXPECT_FALSE(std::isnan(got.data<float>()[1])) << name << " (" << plane << " elements per output)";
  }
}

// A float max or min reads x once: a NaN maximum stays (te::nan_max) where
// a second pass counted NaNs. In each form (a long last axis in partials,
// trailing axes in columns, a middle axis, every axis), a NaN first, last
// or in the middle of one output's elements makes that output NaN and no
// other; -inf alone stays -inf. Bit for bit against the reference.
TEST(Lowering, MaxAndMinKeepNaNInOnePass) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    int64_t keepdims;
  };
  const Case cases[] = {
      {{3, 100}, {-1}, 0},          // partials of the last axis
      {{2, 3, 10, 19}, {2, 3}, 1},  // columns of the trailing axes
      {{4, 37, 5}, {1}, 0},         // a middle axis
      {{6, 7}, {}, 0},              // every axis
  };
  for (const schedule::CpuTarget& cpu : {schedule::CpuTarget{32, 16}, schedule::CpuTarget{64, 32}}) {
    for (const char* op : {"max", "min"}) {
      for (const Case& c : cases) {
        const auto [x, attrs, name, f] =
            lower_reduce(op, c.shape, c.axes, c.keepdims, cpu, "_nan_" + std::to_string(cpu.vector_bytes));
        ASSERT_TRUE(f.has_value()) << name;
        const std::string text = tir::print_prim_func(**f);
        EXPECT_EQ(text.find("nans"), std::string::npos) << name << "\n" << text;
        auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
        Lcg r(5);
        const Tensor base = random_input(x, {-50, 50}, r);
        // Positions of the first output's elements: x's flat indices where
        // every kept axis is 0.
        std::vector<int64_t> first;
        const Tensor probe = run1(op, {base}, attrs);
        for (int64_t i = 0; i < base.numel(); ++i) {
          int64_t rest = i;
          bool in_first = true;
          for (size_t k = c.shape.size(); k-- > 0;) {
            const int64_t index = rest % c.shape[k];
            rest /= c.shape[k];
            const bool reduced =
                c.axes.empty() ||
                std::find_if(c.axes.begin(), c.axes.end(), [&](int64_t a) {
                  return (a + int64_t(c.shape.size())) % int64_t(c.shape.size()) == int64_t(k);
                }) != c.axes.end();
            if (!reduced && index != 0) in_first = false;
          }
          if (in_first) first.push_back(i);
        }
        ASSERT_GT(first.size(), 2u) << name;
        struct Variant {
          const char* what;
          std::vector<std::pair<int64_t, float>> set;
          bool all_minus_inf = false;
        };
        const std::vector<Variant> variants = {
            {"no NaN", {}},
            {"NaN first", {{first.front(), nan}}},
            {"NaN last", {{first.back(), nan}}},
            {"NaN in the middle beside +inf", {{first[first.size() / 2], nan}, {first[1], inf}}},
            {"-inf everywhere", {}, true},
        };
        for (const Variant& v : variants) {
          Tensor in = Tensor::empty(base.shape(), base.dtype());
          std::memcpy(in.raw(), base.raw(), size_t(base.numel()) * sizeof(float));
          if (v.all_minus_inf)
            for (int64_t i = 0; i < in.numel(); ++i)
              in.data<float>()[i] = std::strcmp(op, "max") == 0 ? -inf : inf;
          for (auto [i, value] : v.set) in.data<float>()[i] = value;
          const Tensor want = run1(op, {in}, attrs);
          Tensor got = Tensor::empty(want.shape(), want.dtype());
          jit->run(name, {in.raw(), got.raw()});
          ASSERT_EQ(got.numel(), probe.numel());
          for (int64_t i = 0; i < want.numel(); ++i) {
            const float a = got.data<float>()[i], b = want.data<float>()[i];
            if (std::isnan(b)) {
              EXPECT_TRUE(std::isnan(a)) << name << " (" << v.what << ") output " << i << ": " << a;
            } else {
              EXPECT_EQ(a, b) << name << " (" << v.what << ") output " << i;
            }
          }
          if (!v.set.empty() && std::isnan(v.set.front().second)) {
            EXPECT_TRUE(std::isnan(got.data<float>()[0])) << name << " (" << v.what << ")";
            if (got.numel() > 1) {
              EXPECT_FALSE(std::isnan(got.data<float>()[1])) << name << " (" << v.what << ")";
            }
          }
        }
      }
    }
  }
}

// argmax and argmin over values where picking is delicate: NaNs (which
// win, the first or last of them), signed zeros (equal), infinities, and
// integers at their type's extremes (argmin's ~x must not overflow); the
// compiled positions equal the reference kernel's, and so do max and min.
TEST(ReduceLowering, ArgMaxAndArgMinPickAsTheReference) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  struct Values {
    DType dtype;
    std::vector<double> floats;
    std::vector<int64_t> ints;
  };
  const std::vector<Values> rows = {
      {DType::Float32, {1, nan, 3, nan, -inf, 2}, {}},
      {DType::Float32, {-0.0, 0.0, -0.0, -inf, inf, -inf}, {}},
      {DType::Float32, {2, 2, -1, -1, 0.5, 2}, {}},
      {DType::Int64, {}, {lo, hi, 0, hi, lo, -1}},
      {DType::Int8, {}, {-128, 127, -128, 5, 127, 0}},
      {DType::UInt8, {}, {255, 0, 255, 0, 7, 1}},
  };
  // The row of `v` as a (1, 6) tensor of its dtype.
  auto row = [](const Values& v) {
    if (v.floats.empty()) return Tensor::from_ints({1, 6}, v.ints, v.dtype);
    Tensor t = Tensor::empty({1, 6}, v.dtype);
    for (size_t i = 0; i < v.floats.size(); ++i) t.set_from_double(int64_t(i), v.floats[i]);
    return t;
  };
  for (const Values& v : rows) {
    const std::string at = std::to_string(&v - rows.data());
    for (const char* op : {"argmax", "argmin"})
      for (int64_t last : {0, 1}) {
        const Attrs attrs =
            normalize_attrs(op_named(op), Attrs{{"axis", int64_t{1}}, {"select_last_index", last}});
        const std::string name = std::string(op) + "_" + at + "_" + std::to_string(last);
        auto [got, want] = compiled_and_reference(name, op, {row(v)}, attrs);
        EXPECT_EQ(got.data<int64_t>()[0], want.data<int64_t>()[0]) << name;
      }
    // max and min of the same rows (min of integers is ~max(~x)).
    for (const char* op : {"max", "min"}) {
      const Attrs attrs = normalize_attrs(op_named(op), Attrs{{"axis", std::vector<int64_t>{1}}});
      const std::string name = std::string(op) + "_" + at;
      auto [got, want] = compiled_and_reference(name, op, {row(v)}, attrs);
      EXPECT_TRUE(got.bitwise_equal(want))
          << name << ": " << got.get_as_double(0) << " vs " << want.get_as_double(0);
    }
  }
}

// cumsum's running sums in float64, each rounded once, as the reference
// kernel: a float32 sum would lose the 1s next to 1e8 (the third sum would
// be 0, not 1), and with them every later one. Reversed, exclusive, along
// a middle axis (vectorized running sums) and the last.
TEST(ReduceLowering, CumsumAddsInFloat64AsTheReference) {
  const std::vector<double> values = {1e8, 1, -1e8, 1, 0.1, 3e7, -3e7, 0.2, 1e-3, -1, 1e8, -1e8};
  Tensor x = Tensor::empty({2, 6, 1}, DType::Float32);
  for (size_t i = 0; i < values.size(); ++i) x.set_from_double(int64_t(i), values[i]);
  for (int64_t axis : {1, 2})
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1}) {
        Tensor in = axis == 1 ? x
                              : Tensor::from_floats(
                                    {2, 1, 6}, std::vector<float>(x.data<float>(), x.data<float>() + 12));
        const Attrs attrs = normalize_attrs(
            op_named("cumsum"), Attrs{{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}});
        const std::string name =
            "cumsum_" + std::to_string(axis) + std::to_string(exclusive) + std::to_string(reverse);
        auto [got, want] = compiled_and_reference(name, "cumsum", {in}, attrs);
        EXPECT_TRUE(got.bitwise_equal(want)) << name;
        if (axis == 1 && !exclusive && !reverse) {
          EXPECT_EQ(got.data<float>()[2], 1.0f) << "1e8 + 1 - 1e8 (0 in float32)";
          EXPECT_EQ(got.data<float>()[3], 2.0f);
        }
      }
}

// topk where the order is delicate: NaNs (above every number: first with
// largest, last without; among themselves by index), ties (by index),
// signed zeros (equal), infinities; every k from 1 to all. Values and
// indices equal to the reference kernel's.
TEST(ReduceLowering, TopKOrdersNaNsAndTiesAsTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> row = {2.0f, nan, -inf, 2.0f, 0.0f, -0.0f, inf, nan, -1.0f, 2.0f, inf, 0.5f};
  const Tensor x = Tensor::from_floats({1, 12}, row);
  for (int64_t largest : {0, 1})
    for (int64_t k = 1; k <= 12; ++k) {
      const Attrs attrs = normalize_attrs(op_named("topk"), Attrs{{"k", k}, {"largest", largest}});
      const std::string name = "topk_" + std::to_string(largest) + "_" + std::to_string(k);
      std::vector<TensorDesc> out = infer_op(op_named("topk"), {{x.shape(), x.dtype()}}, attrs);
      auto f =
          lower::lower_kernel(lower::single_op_kernel(name, "topk", {{x.shape(), x.dtype()}}, out, attrs));
      ASSERT_TRUE(f.has_value()) << name;
      auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
      std::vector<Tensor> want;
      {
        std::vector<Tensor> outs = {Tensor::empty(out[0].shape, out[0].dtype),
                                    Tensor::empty(out[1].shape, out[1].dtype)};
        op_named("topk").kernel({x}, attrs, outs);
        want = outs;
      }
      Tensor values = Tensor::empty(out[0].shape, out[0].dtype),
             indices = Tensor::empty(out[1].shape, out[1].dtype);
      Tensor in = x;
      jit->run(name, {in.raw(), values.raw(), indices.raw()});
      EXPECT_TRUE(values.bitwise_equal(want[0])) << name;
      EXPECT_TRUE(indices.bitwise_equal(want[1])) << name;
    }
}

}  // namespace
}  // namespace kiln::testing
