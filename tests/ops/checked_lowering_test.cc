// Compiled ops on the inputs where they must fail or where one value
// decides (src/lower/shape.cc, scatter.cc, elementwise.cc, quant.cc,
// loss.cc, grid_sample.cc): gathers, scatters and loss targets given an
// index out of range and integer divides and remainders given a zero
// divisor fail the kernel with the reference kernel's message before
// touching the output (IndexCheck, DivisorCheck); quantize, the clamping
// activations and grid_sample's odd positions give the reference's values
// bit for bit; a fused chain computes what its ops do one by one. Random
// cases of the same ops: lowering_test.cc.
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
#include "tir/transform/passes.h"

namespace kiln::testing {
namespace {

// A compiled take, gather_elements, gather_nd, scatter_elements or
// scatter_nd checks every index before it reads or writes anything: one
// outside [-size, size) fails the kernel with the reference kernel's
// message, and the output is left as it was.
TEST(CheckedLowering, GathersAndScattersFailOnAnIndexOutOfRangeAsTheReference) {
  struct Case {
    const char* op;
    Shape indices, out;
    Shape updates;  // scatters: updates' shape (the output is data's)
  };
  const TensorDesc x = f32({2, 5, 3});
  for (const Case& c :
       {Case{"take", {2, 2}, {2, 2, 2, 3}, {}}, Case{"gather_elements", {2, 2, 1}, {2, 2, 1}, {}},
        Case{"gather_nd", {2, 2}, {2, 3}, {}}, Case{"scatter_elements", {2, 2, 1}, {2, 5, 3}, {2, 2, 1}},
        Case{"scatter_nd", {2, 2}, {2, 5, 3}, {2, 3}}}) {
    const TensorDesc indices{c.indices, DType::Int64};
    // Tuples (index 2 selects along axis 0) or elements along axis 1.
    const bool nd = std::string(c.op).find("_nd") != std::string::npos;
    const Attrs attrs = normalize_attrs(op_named(c.op), nd ? Attrs{} : Attrs{{"axis", int64_t{1}}});
    std::vector<TensorDesc> in = {x, indices};
    if (!c.updates.empty()) in.push_back(f32(c.updates));
    for (const schedule::CpuTarget& cpu : schedule_targets()) {
      const std::string name = std::string(c.op) + "_checked_" + std::to_string(cpu.vector_bytes);
      auto f = lower_op(name, c.op, in, attrs, cpu);
      ASSERT_TRUE(f.has_value()) << c.op;
      auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
      for (int64_t bad : {int64_t{5}, int64_t{-6}, int64_t{1} << 40}) {
        Lcg r(3);
        std::vector<Tensor> inputs = {random_input(x, {-2, 2}, r),
                                      Tensor::from_ints(indices.shape, {0, -5, bad, 4})};
        if (in.size() > 2) inputs.push_back(random_input(in[2], {-2, 2}, r));
        std::string want;
        try {
          run1(c.op, inputs, attrs);
        } catch (const Error& e) {
          want = e.message();
        }
        ASSERT_NE(
            want.find(std::string(c.op) + ": index " + std::to_string(bad) + " (at position 2 of indices)"),
            std::string::npos)
            << want;
        Tensor got = Tensor::empty(c.out, DType::Float32);
        for (int64_t i = 0; i < got.numel(); ++i) got.set_from_double(i, 77);
        std::vector<void*> args;
        for (Tensor& t : inputs) args.push_back(t.raw());
        args.push_back(got.raw());
        try {
          jit->run(name, args);
          ADD_FAILURE() << c.op << ": index " << bad << " was accepted";
        } catch (const Error& e) {
          EXPECT_EQ(e.message(), "@" + name + " failed (code -1): " + want);
        }
        for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.get_as_double(i), 77) << "element " << i;
      }
    }
  }
}

// A compiled nn.nll_loss checks its targets first: one outside [0, C) that
// is not the ignore_index (-1 here, in or out of range alike) fails the
// kernel with the reference kernel's message and leaves the output alone;
// -1 itself is accepted and counts for nothing.
TEST(CheckedLowering, LossTargetsOutOfRangeFailAsTheReference) {
  const TensorDesc x = f32({4, 3}), targets{{4}, DType::Int64};
  const Attrs attrs = normalize_attrs(
      op_named("nn.nll_loss"), Attrs{{"reduction", std::string("sum")}, {"ignore_index", int64_t{-1}}});
  for (const schedule::CpuTarget& cpu : schedule_targets()) {
    const std::string name = "nll_checked_" + std::to_string(cpu.vector_bytes);
    auto f = lower_op(name, "nn.nll_loss", {x, targets}, attrs, cpu);
    ASSERT_TRUE(f.has_value());
    auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
    Lcg r(5);
    Tensor tx = random_input(x, {-2, 0}, r);
    for (int64_t bad : {int64_t{3}, int64_t{-2}, int64_t{1} << 40, int64_t{-1}}) {
      Tensor tt = Tensor::from_ints(targets.shape, {0, 2, bad, 1});
      std::string want;
      double expected = 0;
      try {
        expected = run1("nn.nll_loss", {tx, tt}, attrs).get_as_double(0);
      } catch (const Error& e) {
        want = e.message();
      }
      Tensor got = Tensor::empty({}, DType::Float32);
      got.set_from_double(0, 77);
      try {
        jit->run(name, {tx.raw(), tt.raw(), got.raw()});
        EXPECT_TRUE(want.empty()) << "target " << bad << " was accepted";
        EXPECT_EQ(got.get_as_double(0), expected) << "target " << bad;
      } catch (const Error& e) {
        ASSERT_FALSE(want.empty()) << e.message();
        EXPECT_EQ(e.message(), "@" + name + " failed (code -1): " + want);
        EXPECT_NE(want.find("target value " + std::to_string(bad) + " at flat index 2"), std::string::npos)
            << want;
        EXPECT_EQ(got.get_as_double(0), 77);
      }
    }
  }
}

// A compiled grid_sample reads nothing outside the image whatever its grid
// holds: NaN, infinities and coordinates far beyond int32 give what the
// reference gives (0 where the position is outside, the border's pixel
// when clamped), bit for bit, in every mode and padding.
TEST(CheckedLowering, GridSampleOfAnyPositionMatchesTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const TensorDesc x = f32({1, 2, 4, 5}), grid = f32({1, 2, 6, 2});
  Lcg r(11);
  Tensor tx = random_input(x, {-2, 2}, r), tg = random_input(grid, {-1, 1}, r);
  const float odd[] = {nan, inf, -inf, 1e30f, -1e30f, 3e9f, -3e9f, 1.0f, -1.0f, 0.999999f, nan, 2.5f};
  for (int k = 0; k < 12; ++k) tg.data<float>()[2 * k + (k % 2)] = odd[k];
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"}) {
      const Attrs attrs =
          normalize_attrs(op_named("image.grid_sample"),
                          Attrs{{"mode", std::string(mode)}, {"padding_mode", std::string(padding)}});
      const std::string name = std::string("grid_sample_") + mode + "_" + padding;
      auto f = lower_op(name, "image.grid_sample", {x, grid}, attrs, schedule::CpuTarget{32, 16});
      ASSERT_TRUE(f.has_value()) << name;
      Tensor want = run1("image.grid_sample", {tx, tg}, attrs);
      Tensor got = Tensor::empty(want.shape(), DType::Float32);
      auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
      jit->run(name, {tx.raw(), tg.raw(), got.raw()});
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float a = want.data<float>()[i], b = got.data<float>()[i];
        EXPECT_TRUE(std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)))
            << name << " element " << i << ": " << b << ", the reference " << a;
      }
    }
}

// A compiled roi_align checks its regions' batch indices first: one outside
// [0, N) fails the kernel with the reference kernel's message and leaves
// the output alone; an adaptive grid (sampling_ratio 0) is not lowered.
TEST(CheckedLowering, RegionBatchIndicesOutOfRangeFailAsTheReference) {
  const TensorDesc x = f32({2, 3, 6, 6}), rois = f32({3, 4}), batch{{3}, DType::Int64};
  const Attrs attrs = normalize_attrs(op_named("image.roi_align"), Attrs{{"sampling_ratio", int64_t{2}}});
  auto f = lower_op("roi_checked", "image.roi_align", {x, rois, batch}, attrs, schedule::host_cpu_target());
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(lower_op("roi_adaptive", "image.roi_align", {x, rois, batch},
                        normalize_attrs(op_named("image.roi_align"), {}), schedule::host_cpu_target())
                   .has_value());
  auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
  Lcg r(2);
  Tensor tx = random_input(x, {-2, 2}, r), tr = random_input(rois, {0, 5}, r);
  for (int64_t bad : {int64_t{2}, int64_t{-1}, int64_t{1} << 40}) {
    Tensor tb = Tensor::from_ints({3}, {1, bad, 0});
    std::string want;
    try {
      run1("image.roi_align", {tx, tr, tb}, attrs);
    } catch (const Error& e) {
      want = e.message();
    }
    EXPECT_EQ(want, "image.roi_align: batch_indices[1] = " + std::to_string(bad) +
                        " is outside the batch of 2 images");
    Tensor got = Tensor::empty({3, 3, 1, 1}, DType::Float32);
    for (int64_t i = 0; i < got.numel(); ++i) got.set_from_double(i, 77);
    try {
      jit->run("roi_checked", {tx.raw(), tr.raw(), tb.raw(), got.raw()});
      ADD_FAILURE() << "batch index " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.message(), "@roi_checked failed (code -1): " + want);
    }
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.get_as_double(i), 77) << i;
  }
}

// A compiled max_unpool checks its indices first: one outside [0, size)
// (negative ones too, which it does not wrap) fails the kernel with the
// reference kernel's message and leaves the output alone.
TEST(CheckedLowering, UnpoolIndicesOutOfRangeFailAsTheReference) {
  const TensorDesc x = f32({1, 1, 2, 2}), idx{{1, 1, 2, 2}, DType::Int64};
  const Attrs attrs =
      normalize_attrs(op_named("nn.max_unpool"), Attrs{{"output_shape", std::vector<int64_t>{1, 1, 4, 4}}});
  auto f = lower_op("unpool_checked", "nn.max_unpool", {x, idx}, attrs, schedule::host_cpu_target());
  ASSERT_TRUE(f.has_value());
  auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
  Tensor tx = Tensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4});
  for (int64_t bad : {int64_t{16}, int64_t{-1}, int64_t{1} << 40}) {
    Tensor ti = Tensor::from_ints({1, 1, 2, 2}, {0, 5, bad, 15});
    std::string want;
    try {
      run1("nn.max_unpool", {tx, ti}, attrs);
    } catch (const Error& e) {
      want = e.message();
    }
    EXPECT_EQ(want, "nn.max_unpool: index " + std::to_string(bad) +
                        " at flat position 2 is outside the output (1, 1, 4, 4) (valid: 0 to 15)");
    Tensor got = Tensor::empty({1, 1, 4, 4}, DType::Float32);
    for (int64_t i = 0; i < got.numel(); ++i) got.set_from_double(i, 77);
    try {
      jit->run("unpool_checked", {tx.raw(), ti.raw(), got.raw()});
      ADD_FAILURE() << "index " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.message(), "@unpool_checked failed (code -1): " + want);
    }
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.get_as_double(i), 77) << i;
  }
}

// Integer 0 to a negative power fails the kernel as the reference does,
// before anything is written; 1, -1 and other bases to negative powers, and
// powers that wrap, are the reference's values.
TEST(CheckedLowering, IntegerPowerOfZeroToANegativeExponentFailsAsTheReference) {
  const TensorDesc x{{2, 4}, DType::Int32};
  const Attrs attrs = normalize_attrs(op_named("power"), {});
  auto f = lower_op("power_checked", "power", {x, x}, attrs, schedule::host_cpu_target());
  ASSERT_TRUE(f.has_value());
  auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
  Tensor base = Tensor::from_ints({2, 4}, {1, -1, -1, 2, 3, 0, 7, 0}, DType::Int32);
  Tensor good = Tensor::from_ints({2, 4}, {-5, -3, -4, -1, 40, 0, 31, 3}, DType::Int32);
  Tensor got = Tensor::empty({2, 4}, DType::Int32);
  jit->run("power_checked", {base.raw(), good.raw(), got.raw()});
  const Tensor want = run1("power", {base, good}, attrs);
  EXPECT_TRUE(got.bitwise_equal(want));
  // 1, -1, 1, 0 | 3^40 wrapped, 1, 7^31 wrapped, 0.
  for (int64_t i : {0, 1, 2, 3, 5, 7})
    EXPECT_EQ(got.get_as_double(i), (std::vector<double>{1, -1, 1, 0, 0, 1, 0, 0})[size_t(i)]);
  Tensor bad = Tensor::from_ints({2, 4}, {1, 1, 1, 1, 1, -2, 1, 1}, DType::Int32);
  std::string message;
  try {
    run1("power", {base, bad}, attrs);
  } catch (const Error& e) {
    message = e.message();
  }
  EXPECT_EQ(message, "power: integer 0 raised to a negative power (division by zero)");
  for (int64_t i = 0; i < got.numel(); ++i) got.set_from_double(i, 77);
  try {
    jit->run("power_checked", {base.raw(), bad.raw(), got.raw()});
    ADD_FAILURE() << "0 to the power -2 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "@power_checked failed (code -1): " + message);
  }
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.get_as_double(i), 77) << i;
}

// A kernel whose outputs are all empty computes nothing: it is compiled
// (so a compiled model has no reference kernel for it) as a function that
// returns, whatever its inputs. An empty input of a non-empty output stays
// on the reference kernel, saying why.
TEST(CheckedLowering, KernelsOfEmptyOutputsDoNothing) {
  const TensorDesc x{{0, 3}, DType::Float32};
  const Attrs attrs = normalize_attrs(op_named("reshape"), Attrs{{"newshape", std::vector<int64_t>{3, 0}}});
  auto f = lower_op("empty_reshape", "reshape", {x}, attrs, schedule::host_cpu_target());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ((*f)->body->kind, tir::StmtKind::Return);
  auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
  jit->run("empty_reshape", {nullptr, nullptr});
  const TensorDesc y = f32({2, 3});
  const Attrs concat = normalize_attrs(op_named("concat"), Attrs{{"axis", int64_t{0}}});
  std::string why;
  EXPECT_FALSE(lower::lower_kernel(lower::single_op_kernel("empty_concat", "concat", {x, y}, {y}, concat),
                                   &why, schedule::host_cpu_target())
                   .has_value());
  EXPECT_EQ(why, "empty tensors (a dimension of 0) are left to the reference kernel");
}

// A compiled max pool takes NaN as its reference kernel does: an element
// wins only when greater, so NaN never does, and a window of NaN and -inf
// gives -inf; padding never wins. Bit for bit, AVX2 and AVX-512 schedules,
// 3x3 windows of stride 1 and 2 with padding, 2-D and 3-D (the same
// planes as one depth slice, a window of one plane).
TEST(CheckedLowering, MaxPoolIgnoresNaNAsTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const bool three_d : {false, true}) {
    const TensorDesc x = three_d ? f32({1, 2, 1, 6, 7}) : f32({1, 2, 6, 7});
    const std::string op = three_d ? "nn.max_pool3d" : "nn.max_pool2d";
    Lcg r(4);
    Tensor tx = random_input(x, {-2, 2}, r);
    float* v = tx.data<float>();
    for (int64_t i = 0; i < 42; i += 3) v[i] = nan;               // the first plane: a third NaN
    for (int64_t i = 42; i < 84; ++i) v[i] = i % 2 ? nan : -inf;  // the second: NaN and -inf only
    v[50] = 1.5f;
    for (int64_t stride : {1, 2})
      for (const schedule::CpuTarget& cpu : {schedule::CpuTarget{32, 16}, schedule::CpuTarget{64, 32}}) {
        auto spatial = [&](int64_t value, int64_t depth) {
          return three_d ? std::vector<int64_t>{depth, value, value} : std::vector<int64_t>{value, value};
        };
        const Attrs attrs = normalize_attrs(
            op_named(op),
            Attrs{{"pool_size", spatial(3, 1)}, {"strides", spatial(stride, 1)}, {"padding", spatial(1, 0)}});
        const std::string name = "max_pool_nan_" + std::to_string(three_d) + "_" + std::to_string(stride) +
                                 "_" + std::to_string(cpu.vector_bytes);
        auto f = lower_op(name, op, {x}, attrs, cpu);
        ASSERT_TRUE(f.has_value()) << name;
        auto [got, want] = compiled_and_reference(*f, name, op, {tx}, attrs);
        for (int64_t i = 0; i < want.numel(); ++i) {
          const float a = got.data<float>()[i], b = want.data<float>()[i];
          EXPECT_TRUE(std::memcmp(&a, &b, sizeof a) == 0)
              << name << " element " << i << ": " << a << ", reference " << b;
          EXPECT_FALSE(std::isnan(b)) << name << " " << i;
        }
      }
  }
}

// A compiled max pool with indices picks as its reference kernel: the
// first tap, then any strictly greater, so of tied maxima the first in the
// window's row-major order, a NaN first tap itself (a later NaN never),
// a window of -inf its first tap; indices in both storage orders. Values
// from a few integers (many ties), NaN and -inf; 2-D and 3-D, with
// padding, on AVX2 and AVX-512 schedules; values bit for bit, indices
// exactly.
TEST(CheckedLowering, MaxPoolIndicesMatchTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const bool three_d : {false, true})
    for (const int64_t order : {0, 1}) {
      const TensorDesc x = three_d ? f32({1, 2, 3, 7, 8}) : f32({2, 2, 7, 8});
      Lcg r(9);
      Tensor tx = random_input(x, {0, 2}, r);
      float* v = tx.data<float>();
      for (int64_t i = 0; i < tx.numel(); ++i) v[i] = std::floor(v[i]);
      for (int64_t i = 0; i < tx.numel(); i += 7) v[i] = nan;
      for (int64_t i = 3; i < tx.numel(); i += 11) v[i] = -inf;
      std::vector<int64_t> k = {3, 3}, st = {2, 2}, pad = {1, 0, 1, 1};
      if (three_d) k = {2, 3, 3}, st = {1, 2, 2}, pad = {0, 1, 0, 0, 1, 1};
      const Attrs attrs = normalize_attrs(
          op_named("nn.max_pool_with_indices"),
          Attrs{{"pool_size", k}, {"strides", st}, {"padding", pad}, {"storage_order", order}});
      std::vector<Tensor> want = run_op(op_named("nn.max_pool_with_indices"), {tx}, attrs);
      for (const schedule::CpuTarget& cpu : {schedule::CpuTarget{32, 16}, schedule::CpuTarget{64, 32}}) {
        const std::string name = "pool_indices_" + std::to_string(three_d) + "_" + std::to_string(order) +
                                 "_" + std::to_string(cpu.vector_bytes);
        auto f = lower_op(name, "nn.max_pool_with_indices", {x}, attrs, cpu);
        ASSERT_TRUE(f.has_value()) << name;
        auto code = load_kernels({built_for(*f, cpu)}, name);
        std::vector<Tensor> inputs = {tx};
        int32_t status = 0;
        std::vector<Tensor> got =
            run_kernel(*code, name, inputs,
                       {{want[0].shape(), want[0].dtype()}, {want[1].shape(), want[1].dtype()}}, status);
        ASSERT_EQ(status, 0) << name;
        for (int64_t i = 0; i < want[0].numel(); ++i) {
          const float a = got[0].data<float>()[i], b = want[0].data<float>()[i];
          EXPECT_TRUE(std::memcmp(&a, &b, sizeof a) == 0)
              << name << " value " << i << ": " << a << ", reference " << b;
          EXPECT_EQ(got[1].data<int64_t>()[i], want[1].data<int64_t>()[i]) << name << " index " << i;
        }
      }
    }
}

// Integer remainders check their divisors first: a 0 fails the kernel with
// the reference kernel's message and leaves the output alone; a divisor of
// -1 gives 0, INT_MIN's included (whose x86 remainder would trap).
TEST(CheckedLowering, RemaindersFailOnAZeroDivisorAsTheReference) {
  const TensorDesc a{{6}, DType::Int32};
  const int64_t int_min = std::numeric_limits<int32_t>::min();
  for (const char* op : {"mod", "fmod", "divide"}) {
    const Attrs attrs = normalize_attrs(op_named(op), {});
    const std::string name = std::string(op) + "_checked";
    auto f = lower_op(name, op, {a, a}, attrs, schedule::host_cpu_target());
    ASSERT_TRUE(f.has_value()) << op;
    auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
    Tensor x = Tensor::from_ints({6}, {int_min, -7, 7, -7, 7, int_min}, DType::Int32);
    Tensor y = Tensor::from_ints({6}, {-1, 2, -2, -2, 3, 7}, DType::Int32);
    Tensor got = Tensor::empty({6}, DType::Int32);
    jit->run(name, {x.raw(), y.raw(), got.raw()});
    EXPECT_TRUE(got.bitwise_equal(run1(op, {x, y}, attrs))) << op;
    Tensor zero = Tensor::from_ints({6}, {1, 2, 0, 4, 5, 6}, DType::Int32);
    std::string want;
    try {
      run1(op, {x, zero}, attrs);
    } catch (const Error& e) {
      want = e.message();
    }
    EXPECT_EQ(want, std::string(op) + ": integer division by zero");
    for (int64_t i = 0; i < 6; ++i) got.data<int32_t>()[i] = 77;
    try {
      jit->run(name, {x.raw(), zero.raw(), got.raw()});
      ADD_FAILURE() << op << ": a zero divisor was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.message(), "@" + name + " failed (code -1): " + want);
    }
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(got.data<int32_t>()[i], 77) << i;
  }
}

// quantize on the values where rounding and clamping decide: quotients
// exactly halfway (ties to even), NaN (the zero point), infinities and
// values past the range (clamped); equal to the reference kernel's.
TEST(CheckedLowering, QuantizeRoundsTiesToEvenAndClampsAsTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {0.25f,  0.75f,   -0.25f, -0.75f, 1.25f,  nan,    inf,    -inf,
                                     63.75f, -64.25f, 1e30f,  -0.0f,  127.7f, 62.25f, -1.25f, 2.75f};
  const TensorDesc x = f32({16});
  for (const char* out : {"int8", "uint8"})
    for (int64_t zp : {int64_t{0}, int64_t{100}}) {
      const Attrs attrs = normalize_attrs(
          op_named("quantize"), Attrs{{"scale", 0.5}, {"zero_point", zp}, {"out_dtype", std::string(out)}});
      const std::string name = std::string("quantize_") + out + "_" + std::to_string(zp);
      auto [got, want] =
          compiled_and_reference(name, "quantize", {Tensor::from_floats(x.shape, values)}, attrs);
      for (int64_t i = 0; i < 16; ++i)
        EXPECT_EQ(got.get_as_double(i), want.get_as_double(i)) << name << " of " << values[size_t(i)];
    }
}

// Float remainders through the C library's fmod equal the reference's bit
// for bit: signs of zero, infinite dividends and zero divisors (NaN),
// infinite divisors (the dividend, or the divisor for mod's other sign).
TEST(CheckedLowering, FloatRemaindersEqualTheReferenceBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a = {5.5f, -5.5f, 5.5f,  -5.5f, 0.0f, -0.0f, inf,   3.0f,
                                3.0f, -3.0f, 1e30f, 7.0f,  nan,  2.0f,  -4.0f, 0.25f};
  const std::vector<float> b = {2.0f, 2.0f, -2.0f, -2.0f, 3.0f, 3.0f, 2.0f, 0.0f,
                                inf,  inf,  3.0f,  -inf,  1.0f, nan,  2.0f, -0.1f};
  for (const char* op : {"mod", "fmod"})
    for (const schedule::CpuTarget& cpu : schedule_targets()) {
      const std::string name = std::string(op) + "_float_" + std::to_string(cpu.vector_bytes);
      auto [got, want] =
          compiled_and_reference(name, op, {Tensor::from_floats({16}, a), Tensor::from_floats({16}, b)},
                                 normalize_attrs(op_named(op), {}), cpu);
      for (int64_t i = 0; i < 16; ++i) {
        const float g = got.data<float>()[i], w = want.data<float>()[i];
        EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : std::memcmp(&g, &w, sizeof g) == 0)
            << name << " of " << a[size_t(i)] << ", " << b[size_t(i)] << ": compiled " << g << ", reference "
            << w;
      }
    }
}

// The trigonometric and hyperbolic functions without vector forms call
// the C library's double function per lane and round once, as the
// reference kernels compute them: equal bit for bit, on the edges of their
// domains (NaN outside, infinities at atanh(+-1)) and signed zeros too.
TEST(CheckedLowering, LibraryFunctionsEqualTheReferenceBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f,  -0.999f, 1.0001f,    2.0f,
                                     nan,  inf,   -inf, 1e-8f, 88.0f, -20.5f,  1.5707964f, 3.0f};
  for (const char* op : {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"})
    for (const schedule::CpuTarget& cpu : schedule_targets()) {
      const std::string name = std::string(op) + "_" + std::to_string(cpu.vector_bytes);
      auto [got, want] = compiled_and_reference(name, op, {Tensor::from_floats({16}, values)}, {}, cpu);
      for (int64_t i = 0; i < 16; ++i) {
        const float a = got.data<float>()[i], b = want.data<float>()[i];
        EXPECT_TRUE(std::isnan(b) ? std::isnan(a) : std::memcmp(&a, &b, sizeof a) == 0)
            << name << " of " << values[size_t(i)] << ": compiled " << a << ", reference " << b;
      }
    }
}

// Clamping activations compiled as the reference computes them: a NaN input
// stays NaN, and -0 stays -0 where the reference's std::max / std::min
// keep it (x86's maxps b, x for max against a number b); maximum and minimum
// of two tensors give NaN when either is. Compared bit for bit with the
// reference kernels, NaN for NaN (the hard activations within float
// rounding: the reference computes them in double).
TEST(Lowering, ClampingActivationsKeepNaNAndSignedZerosAsTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {nan,  -0.0f, 0.0f, -inf,   inf,   -3.0f, -2.9f, 0.5f,
                                     1.0f, 3.0f,  6.5f, -1e30f, 1e30f, -nan,  2.0f,  -0.25f};
  const std::vector<float> others = {1.0f, nan,  -0.0f, 0.0f, nan,  -4.0f, -2.9f, 0.25f,
                                     nan,  5.0f, 6.5f,  0.0f, -inf, 2.0f,  -0.0f, -0.5f};
  TensorDesc x = f32({1, 2, 1, 8});
  struct Case {
    const char* op;
    Attrs attrs;
    bool binary;
    bool exact = true;
  };
  const Case cases[] = {
      {"nn.relu", {}, false},
      {"clip", {{"a_min", 0.0}, {"a_max", 6.0}}, false},
      {"clip", {{"a_min", -0.5}, {"a_max", 0.0}}, false},
      {"nn.hard_sigmoid", {}, false, false},
      {"nn.hard_swish", {}, false, false},
      {"maximum", {}, true},
      {"minimum", {}, true},
  };
  for (const schedule::CpuTarget& cpu : {schedule::CpuTarget{32, 16}, schedule::CpuTarget{64, 32}}) {
    for (const Case& c : cases) {
      const Attrs attrs = normalize_attrs(op_named(c.op), c.attrs);
      std::vector<TensorDesc> in = {x};
      std::vector<Tensor> inputs = {Tensor::from_floats(x.shape, values)};
      if (c.binary) {
        in.push_back(x);
        inputs.push_back(Tensor::from_floats(x.shape, others));
      }
      const std::string name =
          std::string("clamp_") + std::to_string(&c - cases) + "_" + std::to_string(cpu.vector_bytes);
      auto f = lower_op(name, c.op, in, attrs, cpu);
      ASSERT_TRUE(f.has_value()) << c.op;
      auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
      Tensor want = run1(c.op, inputs, attrs);
      Tensor got = Tensor::empty(want.shape(), want.dtype());
      std::vector<void*> args;
      for (Tensor& t : inputs) args.push_back(t.raw());
      args.push_back(got.raw());
      jit->run(name, args);
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float a = got.data<float>()[i], b = want.data<float>()[i];
        if (std::isnan(b)) {
          EXPECT_TRUE(std::isnan(a)) << c.op << " of " << values[size_t(i)] << ": " << a << ", not NaN";
          continue;
        }
        const bool close = a == b || (!c.exact && std::fabs(a - b) <= 1e-6f * std::max(1.0f, std::fabs(b)));
        EXPECT_TRUE(close && (b != 0 || std::signbit(a) == std::signbit(b)))
            << c.op << " (" << name << ") element " << i << " of " << values[size_t(i)] << ": compiled " << a
            << ", reference " << b;
      }
    }
  }
}

// Fused chains: a kernel of several ops computes what the ops do one by one.
TEST(Lowering, FusedChainMatchesTheOpsOneByOne) {
  // conv2d -> add(bias) -> hard_swish, the epilogue inlined into the conv's output stage.
  TensorDesc x = f32({1, 3, 8, 8}), w = f32({4, 3, 3, 3}), b = f32({4, 1, 1});
  Attrs conv = normalize_attrs(op_named("nn.conv2d"), Attrs{{"padding", std::vector<int64_t>{1, 1}}});
  std::vector<TensorDesc> y = infer_op(op_named("nn.conv2d"), {x, w}, conv);
  lower::KernelSpec spec;
  spec.name = "fused_conv2d_add_hard_swish";
  spec.params = {x, w, b};
  spec.ops.push_back({"nn.conv2d", conv, {x, w}, y, {{0, -1, 0}, {1, -1, 0}}});
  spec.ops.push_back({"add", {}, {y[0], b}, y, {{-1, 0, 0}, {2, -1, 0}}});
  spec.ops.push_back({"nn.hard_swish", {}, y, y, {{-1, 1, 0}}});
  spec.outputs = {{2, 0}};
  auto f = lower::lower_kernel(spec);
  ASSERT_TRUE(f.has_value());
  auto jit = codegen::JitModule::create({tir::lower_for_build(*f)});
  Lcg r(3);
  Tensor tx = random_input(x, {-2, 2}, r), tw = random_input(w, {-1, 1}, r), tb = random_input(b, {-1, 1}, r);
  Tensor want = run1("nn.hard_swish", {run1("add", {run1("nn.conv2d", {tx, tw}, conv), tb})});
  Tensor got = Tensor::empty(want.shape(), want.dtype());
  jit->run(spec.name, {tx.raw(), tw.raw(), tb.raw(), got.raw()});
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i;
}

}  // namespace
}  // namespace kiln::testing
