// Tensor expressions and schedules: lowered to prim functions, JIT-compiled
// and RUN; values are checked against plain loops written here.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "codegen/codegen.h"
#include "runtime/vtcm_pool.h"
#include "te_kernels.h"
#include "test_util.h"
#include "tir/te/te.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {
namespace {

std::unique_ptr<codegen::JitModule> jit(const PrimFunc& f) {
  return codegen::JitModule::create({lower_for_build(f)});
}

using testing::error_of;

PrimFunc vtcm_add(DataType t) { return testing::forum_vtcm_add(t); }

TEST(TirTe, ForumProgramLowersToVtcmAllocations) {
  PrimFunc f = vtcm_add(DataType::int_(8));
  EXPECT_EQ(
      print_prim_func(*f),
      R"(prim @alloc_vtcm(%A: Buffer[(2048), int8], %B: Buffer[(2048), int8], %C: Buffer[(2048), int8]) {
  allocate %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
  allocate %B_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
  for %i0 from 0 extent 2048 {
    %A_buf[%i0] = %A[%i0]
  }
  for %i0 from 0 extent 2048 {
    %B_buf[%i0] = %B[%i0]
  }
  for %i0 from 0 extent 2048 vectorized {
    %C[%i0] = %A_buf[%i0] + %B_buf[%i0]
  }
  return 0
}
)");
  std::string lowered = print_prim_func(*lower_for_build(f));
  EXPECT_NE(lowered.find("\"HexagonBackendAllocateVTCM\", uint32(2048), uint32(128))"), std::string::npos)
      << lowered;
  EXPECT_NE(lowered.find("HexagonBackendFreeVTCM"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("isnull"), std::string::npos) << lowered;
}

template <typename T>
void run_forum(DataType t, uint64_t expected_high_water) {
  auto m = jit(vtcm_add(t));
  std::vector<T> a(2048), b(2048), c(2048, T(0));
  for (int i = 0; i < 2048; ++i) {
    a[size_t(i)] = T(i % 100 - 50);
    b[size_t(i)] = T((i * 3) % 70);
  }
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    m->run("alloc_vtcm", {a.data(), b.data(), c.data()});
  }
  for (size_t i = 0; i < 2048; ++i) ASSERT_EQ(c[i], T(a[i] + b[i])) << i;
  EXPECT_EQ(pool.stats().high_water_bytes, expected_high_water);
  EXPECT_EQ(pool.stats().live_allocations, 0u);
}

TEST(TirTe, ForumProgramRunsInt8) { run_forum<int8_t>(DataType::int_(8), 2 * 2048); }

TEST(TirTe, Float32VariantAllocatesFourTimesTheBytes) { run_forum<float>(DataType::float32(), 4 * 2 * 2048); }

TEST(TirTe, ScheduledMatmulWithSumReduction) {
  const int64_t M = 8, N = 32, K = 16;
  auto [A, B, C, k] = testing::matmul_te(M, N, K);
  te::Schedule s({C});
  te::Stage& st = s[C];
  auto [jo, ji] = st.split(st.leaf(1), 8);
  auto [ko, ki] = st.split(k.var, 4);
  st.reorder({st.leaf(0), jo, ko, ki, ji});
  st.vectorize(ji);
  st.unroll(ki);
  auto m = jit(te::lower(s, {A, B, C}, "matmul"));
  std::vector<float> a(M * K), b(K * N), c(M * N, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 7) - 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2) * 0.5f;
  m->run("matmul", {a.data(), b.data(), c.data()});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = 0;
      for (int64_t q = 0; q < K; ++q) want += a[size_t(i * K + q)] * b[size_t(q * N + j)];
      ASSERT_FLOAT_EQ(c[size_t(i * N + j)], want) << i << "," << j;
    }
}

TEST(TirTe, RowMaxFusedParallelAndInlined) {
  te::Tensor X = te::placeholder({4, 6, 5}, DataType::int32(), "X");
  te::Tensor Y = te::compute(
      {4, 6, 5}, [&](const te::Axes& i) { return mul((*X)(i), int_imm(3)); }, "Y");
  te::IterVar r = te::reduce_axis(5, "r");
  te::Tensor Z = te::compute(
      {4, 6},
      [&](const te::Axes& i) -> te::Reduction {
        return te::max((*Y)({i[0], i[1], r.var}), {r});
      },
      "Z");
  te::Schedule s({Z});
  s[Y].compute_inline();
  te::Stage& st = s[Z];
  Var fused = st.fuse(st.leaf(0), st.leaf(1));
  st.parallel(fused);
  PrimFunc f = te::lower(s, {X, Z}, "rowmax");
  EXPECT_EQ(print_prim_func(*f).find("allocate"), std::string::npos) << "Y is inlined";
  auto m = jit(f);
  std::vector<int32_t> x(4 * 6 * 5), z(4 * 6, 0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t((i * 37) % 41) - 20;
  m->run("rowmax", {x.data(), z.data()});
  for (size_t i = 0; i < 24; ++i) {
    int32_t want = INT32_MIN;
    for (size_t q = 0; q < 5; ++q) want = std::max(want, 3 * x[i * 5 + q]);
    ASSERT_EQ(z[i], want) << i;
  }
}

TEST(TirTe, CacheWriteComputesInScratchpadThenCopies) {
  te::Tensor A = te::placeholder({64}, DataType::float32(), "A");
  te::Tensor B = te::compute(
      {64}, [&](const te::Axes& i) { return mul((*A)(i), float_imm(2.0)); }, "B");
  te::Schedule s({B});
  te::Tensor cache = s.cache_write(B, "global.vtcm");
  EXPECT_EQ(cache->name, "B_global_vtcm");
  auto m = jit(te::lower(s, {A, B}, "twice"));
  std::vector<float> a(64), b(64, 0);
  for (size_t i = 0; i < 64; ++i) a[i] = float(i) - 10.5f;
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    m->run("twice", {a.data(), b.data()});
  }
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(b[i], 2.0f * a[i]);
  EXPECT_EQ(pool.stats().high_water_bytes, 256u);
}

TEST(TirTe, ScheduleErrorsNameTheTensor) {
  te::Tensor A = te::placeholder({10}, DataType::float32(), "A");
  te::Tensor B = te::compute(
      {10}, [&](const te::Axes& i) { return (*A)(i); }, "B");
  te::Schedule s({B});
  EXPECT_NE(error_of([&] {
              s[B].split(s[B].leaf(0), 3);
            }).find("tensor B: split factor 3 does not divide the extent 10"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s[B].set_scope("vtcm"); }).find("unknown memory scope \"vtcm\" (known: global"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.cache_read(A, "shared", {B}); }).find("tensor A: unknown memory scope"),
            std::string::npos);
  EXPECT_NE(error_of([&] { te::lower(s, {B}, "f"); }).find("placeholder A is not among the arguments"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (*A)({int_imm(0), int_imm(1)});
            }).find("tensor A has 1 dimensions but is indexed with 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s[A].compute_inline(); }).find("placeholder and cannot be inlined"),
            std::string::npos);
}

// A running maximum: each element reads the one before it in the output,
// which an extern statement says and an expression per element cannot.
te::Tensor running_max(const te::Tensor& X) {
  return te::extern_compute(
      X->shape, X->dtype, {X},
      [](const std::vector<Buffer>& in, const Buffer& out) {
        Var i = make_var("i");
        Stmt first = store(out, {int_imm(0)}, load(in[0], {int_imm(0)}));
        Stmt rest = store(out, {i}, max(load(out, {sub(i, int_imm(1))}), load(in[0], {i})));
        return seq({first, for_loop(i, int_imm(1), int_imm(7), ForKind::Serial, rest)});
      },
      "M");
}

// A -> X = A * -2 -> M = running_max(X) -> Y = M + 1: {A, X, M, Y}.
std::array<te::Tensor, 4> running_max_between_computes() {
  te::Tensor A = te::placeholder({8}, DataType::int32(), "A");
  te::Tensor X = te::compute(
      {8}, [&](const te::Axes& i) { return mul((*A)(i), int_imm(-2)); }, "X");
  te::Tensor M = running_max(X);
  te::Tensor Y = te::compute(
      {8}, [&](const te::Axes& i) { return add((*M)(i), int_imm(1)); }, "Y");
  return {A, X, M, Y};
}

// An extern stage reads its inputs from buffers: a compute before it is
// computed whole (not inlined), and one after it reads its buffer.
TEST(TirTe, ExternStatementWritesItsTensorBetweenComputes) {
  auto [A, X, M, Y] = running_max_between_computes();
  te::Schedule s({Y});
  PrimFunc f = te::lower(s, {A, Y}, "running_max");
  EXPECT_EQ(print_prim_func(*f), R"(prim @running_max(%A: Buffer[(8), int32], %Y: Buffer[(8), int32]) {
  allocate %X: Buffer[(8), int32]
  allocate %M: Buffer[(8), int32]
  for %i0 from 0 extent 8 {
    %X[%i0] = %A[%i0] * -2
  }
  %M[0] = %X[0]
  for %i from 1 extent 7 {
    %M[%i] = max(%M[%i - 1], %X[%i])
  }
  for %i0 from 0 extent 8 {
    %Y[%i0] = %M[%i0] + 1
  }
  return 0
}
)");
  auto m = jit(f);
  std::vector<int32_t> a = {3, -1, 4, -5, 0, -9, 2, -6}, y(8, 0);
  m->run("running_max", {a.data(), y.data()});
  EXPECT_EQ(y, (std::vector<int32_t>{-5, 3, 3, 11, 11, 19, 19, 19}));
}

TEST(TirTe, ExternStatementsCannotBeInlinedOrMovedIntoLoops) {
  auto [A, X, M, Y] = running_max_between_computes();
  te::Schedule s({Y});
  EXPECT_NE(
      error_of([&] { s[M].compute_inline(); }).find("tensor M is an extern statement and cannot be inlined"),
      std::string::npos);
  EXPECT_NE(error_of([&] { s[M].compute_at(s[Y], s[Y].leaf(0)); }).find("M is an extern statement"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.cache_write(M, "global.vtcm"); }).find("tensor M is an extern statement"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.cache_read(X, "global.vtcm", {M}); }).find("cache_read cannot redirect"),
            std::string::npos);
  s[X].compute_inline();
  EXPECT_NE(error_of([&] {
              te::lower(s, {A, Y}, "f");
            }).find("tensor X is inlined, but the extern tensor M reads its buffer"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::tir

namespace kiln::tir {
namespace {

TEST(TirTe, StaticScratchpadPlanMakesOneAllocationAndRuns) {
  TirPassOptions options;
  options.static_scratchpad_plan = true;
  PrimFunc lowered = lower_for_build(vtcm_add(DataType::int_(8)), options);
  std::string text = print_prim_func(*lowered);
  EXPECT_NE(text.find("\"HexagonBackendAllocateVTCM\", uint32(4096), uint32(128))"), std::string::npos)
      << text;
  EXPECT_NE(text.find("address_offset(%vtcm_plan_data, int64(2048))"), std::string::npos) << text;
  auto m = codegen::JitModule::create({lowered});
  std::vector<int8_t> a(2048), b(2048), c(2048, 0);
  for (int i = 0; i < 2048; ++i) {
    a[size_t(i)] = int8_t(i * 3);
    b[size_t(i)] = int8_t(100 - i);
  }
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    m->run("alloc_vtcm", {a.data(), b.data(), c.data()});
  }
  for (size_t i = 0; i < 2048; ++i) ASSERT_EQ(c[i], int8_t(a[i] + b[i])) << i;
  EXPECT_EQ(pool.stats().total_allocations, 1u) << "one allocate call for both buffers";
  EXPECT_EQ(pool.stats().high_water_bytes, 4096u);
  EXPECT_EQ(pool.stats().live_allocations, 0u);

  // An exhausted pool is the structured error, naming the plan, not a crash.
  VtcmPool small(1000);
  ScopedVtcmPool bind(small);
  try {
    m->run("alloc_vtcm", {a.data(), b.data(), c.data()});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("the scratchpad plan of @alloc_vtcm (4096 bytes: %A_buf at 0, %B_buf at 2048)"),
              std::string::npos)
        << msg;
  }
}

}  // namespace
}  // namespace kiln::tir
