// compute_at and bound inference: schedules that compute a producer inside a
// consumer's loop are lowered (the printed function shows the producer's
// nest and its smaller allocation inside the loop), JIT-compiled and run;
// values are checked against plain loops written here.
#include <gtest/gtest.h>

#include "codegen/codegen.h"
#include "runtime/vtcm_pool.h"
#include "te_kernels.h"
#include "test_util.h"
#include "tir/te/bound.h"
#include "tir/te/te.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {
namespace {

std::unique_ptr<codegen::JitModule> jit(const PrimFunc& f) {
  return codegen::JitModule::create({lower_for_build(f)});
}

using testing::error_of;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<float> iota_values(size_t n, int modulus) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int(i % size_t(modulus)) - modulus / 2) * 0.5f;
  return v;
}

// T[i] = A[i] * 2 over 34 elements; B[i] = T[i] + T[i + 1] + T[i + 2] over 32.
struct Blur {
  te::Tensor A = te::placeholder({34}, DataType::float32(), "A");
  te::Tensor T = te::compute(
      {34}, [&](const te::Axes& i) { return mul((*A)(i), float_imm(2.0)); }, "T");
  te::Tensor B = te::compute(
      {32},
      [&](const te::Axes& i) {
        return add(add((*T)({i[0]}), (*T)({add(i[0], int_imm(1))})), (*T)({add(i[0], int_imm(2))}));
      },
      "B");

  static std::vector<float> expected(const std::vector<float>& a) {
    std::vector<float> b(32);
    for (size_t i = 0; i < 32; ++i) b[i] = 2 * a[i] + 2 * a[i + 1] + 2 * a[i + 2];
    return b;
  }
};

TEST(TirTeComputeAt, BlurProducerInsideSplitLoopHoldsFactorPlusTwo) {
  Blur g;
  te::Schedule s({g.B});
  auto [io, ii] = s[g.B].split(s[g.B].leaf(0), 8);
  s[g.T].compute_at(s[g.B], io);
  PrimFunc f = te::lower(s, {g.A, g.B}, "blur");
  EXPECT_EQ(print_prim_func(*f), R"(prim @blur(%A: Buffer[(34), float32], %B: Buffer[(32), float32]) {
  for %i0_outer from 0 extent 4 {
    allocate %T: Buffer[(10), float32]
    for %i0 from 0 extent 10 {
      %T[%i0] = %A[%i0_outer * 8 + %i0] * 2.0
    }
    for %i0_inner from 0 extent 8 {
      %B[%i0_outer * 8 + %i0_inner] = %T[%i0_inner] + %T[%i0_inner + 1] + %T[%i0_inner + 2]
    }
  }
  return 0
}
)");
  auto m = jit(f);
  std::vector<float> a = iota_values(34, 7), b(32, -1.0f);
  m->run("blur", {a.data(), b.data()});
  EXPECT_EQ(b, Blur::expected(a));
}

TEST(TirTeComputeAt, AtTheInnermostLoopTheRegionIsThreeElements) {
  Blur g;
  te::Schedule s({g.B});
  s[g.T].compute_at(s[g.B], s[g.B].leaf(0));
  PrimFunc f = te::lower(s, {g.A, g.B}, "blur");
  std::string text = print_prim_func(*f);
  EXPECT_TRUE(has(text, "allocate %T: Buffer[(3), float32]")) << text;
  auto m = jit(f);
  std::vector<float> a = iota_values(34, 5), b(32, -1.0f);
  m->run("blur", {a.data(), b.data()});
  EXPECT_EQ(b, Blur::expected(a));
}

TEST(TirTeComputeAt, ComputeRootUndoesIt) {
  Blur g;
  te::Schedule s({g.B});
  s[g.T].compute_at(s[g.B], s[g.B].leaf(0));
  s[g.T].compute_root();
  std::string text = print_prim_func(*te::lower(s, {g.A, g.B}, "blur"));
  EXPECT_TRUE(has(text, "  allocate %T: Buffer[(34), float32]\n  for %i0 from 0 extent 34 {")) << text;
}

// A split of the producer that does not divide its region runs a guarded
// last iteration: T's region under a tile of 8 is 10 elements, split by 4.
TEST(TirTeComputeAt, ProducerSplitThatDoesNotDivideTheRegionIsGuarded) {
  te::Tensor A = te::placeholder({36}, DataType::float32(), "A");
  te::Tensor T = te::compute(
      {36}, [&](const te::Axes& i) { return mul((*A)(i), float_imm(2.0)); }, "T");
  te::Tensor B = te::compute(
      {32}, [&](const te::Axes& i) { return sub((*T)({add(i[0], int_imm(2))}), (*T)(i)); }, "B");
  std::vector<float> a = iota_values(36, 9);
  auto check = [&](const PrimFunc& f) {
    auto m = jit(f);
    std::vector<float> b(32, -1.0f);
    m->run("diff", {a.data(), b.data()});
    for (size_t i = 0; i < 32; ++i) ASSERT_EQ(b[i], 2 * a[i + 2] - 2 * a[i]) << i;
  };
  te::Schedule s({B});
  auto [io, ii] = s[B].split(s[B].leaf(0), 8);
  s[T].compute_at(s[B], io);
  s[T].split(s[T].leaf(0), 4);
  PrimFunc f = te::lower(s, {A, B}, "diff");
  std::string text = print_prim_func(*f);
  EXPECT_TRUE(has(text, R"(    allocate %T: Buffer[(10), float32]
    for %i0_outer_1 from 0 extent 3 {
      for %i0_inner_1 from 0 extent 4 {
        if %i0_outer_1 * 4 + %i0_inner_1 < 10 {)"))
      << text;
  check(f);

  // A region smaller than the factor is one loop of the region's size.
  te::Schedule s2({B});
  auto [o2, i2] = s2[B].split(s2[B].leaf(0), 8);
  s2[T].compute_at(s2[B], o2);
  s2[T].split(s2[T].leaf(0), 12);
  f = te::lower(s2, {A, B}, "diff");
  text = print_prim_func(*f);
  EXPECT_TRUE(has(text, "for %i0_inner_1 from 0 extent 10")) << text;
  EXPECT_FALSE(has(text, "if ")) << text;
  check(f);
}

// T[i, j] = A[i, j] + 1 (16 x 16); D[i, j] = T[2i, j] + T[2i + 1, j] (8 x 16).
struct Downsample {
  te::Tensor A = te::placeholder({16, 16}, DataType::float32(), "A");
  te::Tensor T = te::compute(
      {16, 16}, [&](const te::Axes& i) { return add((*A)(i), float_imm(1.0)); }, "T");
  te::Tensor D = te::compute(
      {8, 16},
      [&](const te::Axes& i) {
        Expr row = mul(i[0], int_imm(2));
        return add((*T)({row, i[1]}), (*T)({add(row, int_imm(1)), i[1]}));
      },
      "D");

  void check(const PrimFunc& f) {
    auto m = jit(f);
    std::vector<float> a = iota_values(256, 11), d(128, -1.0f);
    m->run(f->name, {a.data(), d.data()});
    for (size_t i = 0; i < 8; ++i)
      for (size_t j = 0; j < 16; ++j)
        ASSERT_EQ(d[i * 16 + j], (a[2 * i * 16 + j] + 1) + (a[(2 * i + 1) * 16 + j] + 1)) << i << "," << j;
  }
};

TEST(TirTeComputeAt, StridedReadsUnderSplitAndReorderedConsumer) {
  Downsample g;
  te::Schedule s({g.D});
  te::Stage& d = s[g.D];
  auto [io, ii] = d.split(d.leaf(0), 2);
  auto [jo, ji] = d.split(d.leaf(2), 4);
  d.reorder({io, jo, ii, ji});
  s[g.T].compute_at(d, jo);
  PrimFunc f = te::lower(s, {g.A, g.D}, "down");
  std::string text = print_prim_func(*f);
  // Rows 4 io .. 4 io + 3 (2 (2 io + ii) + {0, 1}), columns 4 jo .. 4 jo + 3.
  EXPECT_TRUE(has(text, R"(    for %i1_outer from 0 extent 4 {
      allocate %T: Buffer[(4, 4), float32]
      for %i0 from 0 extent 4 {
        for %i1 from 0 extent 4 {
          %T[%i0, %i1] = %A[%i0_outer * 4 + %i0, %i1_outer * 4 + %i1] + 1.0)"))
      << text;
  g.check(f);
}

TEST(TirTeComputeAt, FusedAndSplitConsumerLoops) {
  Downsample g;
  te::Schedule s({g.D});
  te::Stage& d = s[g.D];
  Var fused = d.fuse(d.leaf(0), d.leaf(1));
  auto [fo, fi] = d.split(fused, 16);
  d.vectorize(fi);
  s[g.T].compute_at(d, fo);
  PrimFunc f = te::lower(s, {g.A, g.D}, "down_fused");
  std::string text = print_prim_func(*f);
  // One row of D per outer iteration: two rows of T.
  EXPECT_TRUE(has(text, "allocate %T: Buffer[(2, 16), float32]")) << text;
  g.check(f);

  // A tile of half a row: the fused index's rows stay one.
  te::Schedule s2({g.D});
  te::Stage& d2 = s2[g.D];
  Var fused2 = d2.fuse(d2.leaf(0), d2.leaf(1));
  auto [fo2, fi2] = d2.split(fused2, 8);
  s2[g.T].compute_at(d2, fo2);
  f = te::lower(s2, {g.A, g.D}, "down_half");
  text = print_prim_func(*f);
  EXPECT_TRUE(has(text, "allocate %T: Buffer[(2, 16), float32]")) << text;
  g.check(f);
}

// The consumer reads T through an inlined stage.
TEST(TirTeComputeAt, ReaderThroughAnInlinedStage) {
  Blur g;
  te::Tensor I = te::compute(
      {33}, [&](const te::Axes& i) { return add((*g.T)(i), (*g.T)({add(i[0], int_imm(1))})); }, "I");
  te::Tensor B = te::compute(
      {32}, [&](const te::Axes& i) { return mul((*I)(i), (*I)({add(i[0], int_imm(1))})); }, "B2");
  te::Schedule s({B});
  s[I].compute_inline();
  auto [io, ii] = s[B].split(s[B].leaf(0), 4);
  s[g.T].compute_at(s[B], io);
  PrimFunc f = te::lower(s, {g.A, B}, "through_inline");
  std::string text = print_prim_func(*f);
  EXPECT_TRUE(has(text, "allocate %T: Buffer[(6), float32]")) << text;
  auto m = jit(f);
  std::vector<float> a = iota_values(34, 7), b(32, -1.0f);
  m->run("through_inline", {a.data(), b.data()});
  for (size_t i = 0; i < 32; ++i) {
    auto iv = [&](size_t k) { return 2 * a[k] + 2 * a[k + 1]; };
    ASSERT_EQ(b[i], iv(i) * iv(i + 1)) << i;
  }
}

// A copy computed at a reduce loop: one row block of A per k block.
TEST(TirTeComputeAt, AtAReduceLoop) {
  const int64_t M = 8, N = 16, K = 32;
  auto [A, B, C, k] = testing::matmul_te(M, N, K);
  te::Schedule s({C});
  te::Tensor A_buf = s.cache_read(A, "local", {C});
  te::Stage& c = s[C];
  auto [io, ii] = c.split(c.leaf(0), 2);
  auto [ko, ki] = c.split(k.var, 8);
  c.reorder({io, ko, ii, c.leaf(2), ki});
  s[A_buf].compute_at(c, ko);
  PrimFunc f = te::lower(s, {A, B, C}, "mm");
  std::string text = print_prim_func(*f);
  EXPECT_TRUE(has(text, R"(  for %i0_outer from 0 extent 4 {
    for %i0_inner from 0 extent 2 {
      for %i1 from 0 extent 16 {
        %C[%i0_outer * 2 + %i0_inner, %i1] = 0.0
      }
    }
    for %k_outer from 0 extent 4 {
      allocate %A_buf: Buffer[(2, 8), float32, scope="local"])"))
      << text;
  auto m = jit(f);
  std::vector<float> a = iota_values(size_t(M * K), 7), b = iota_values(size_t(K * N), 5),
                     out(size_t(M * N), -1);
  m->run("mm", {a.data(), b.data(), out.data()});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = 0;
      for (int64_t q = 0; q < K; ++q) want += a[size_t(i * K + q)] * b[size_t(q * N + j)];
      ASSERT_FLOAT_EQ(out[size_t(i * N + j)], want) << i << "," << j;
    }
}

// Two stages, each computed inside the next one's loop.
TEST(TirTeComputeAt, ChainOfProducers) {
  te::Tensor A = te::placeholder({36}, DataType::int32(), "A");
  te::Tensor T1 = te::compute(
      {36}, [&](const te::Axes& i) { return mul((*A)(i), int_imm(3)); }, "T1");
  te::Tensor T2 = te::compute(
      {34}, [&](const te::Axes& i) { return add((*T1)(i), (*T1)({add(i[0], int_imm(2))})); }, "T2");
  te::Tensor Out = te::compute(
      {32}, [&](const te::Axes& i) { return sub((*T2)({add(i[0], int_imm(2))}), (*T2)(i)); }, "Out");
  te::Schedule s({Out});
  auto [oo, oi] = s[Out].split(s[Out].leaf(0), 4);
  s[T2].compute_at(s[Out], oo);
  s[T1].compute_at(s[T2], s[T2].leaf(0));
  PrimFunc f = te::lower(s, {A, Out}, "chain");
  std::string text = print_prim_func(*f);
  EXPECT_TRUE(has(text, "allocate %T2: Buffer[(6), int32]")) << text;
  EXPECT_TRUE(has(text, "allocate %T1: Buffer[(3), int32]")) << text;
  auto m = jit(f);
  std::vector<int32_t> a(36), out(32, -1);
  for (size_t i = 0; i < 36; ++i) a[i] = int32_t((i * 7) % 13);
  m->run("chain", {a.data(), out.data()});
  for (size_t i = 0; i < 32; ++i) {
    auto t2 = [&](size_t k) { return 3 * a[k] + 3 * a[k + 2]; };
    ASSERT_EQ(out[i], t2(i + 2) - t2(i)) << i;
  }
}

// Register tiling: the accumulator lives in a "local" tile computed at the
// consumer's tile loop; B is packed per k block inside the accumulator's nest.
TEST(TirTeComputeAt, MatmulWithLocalAccumulatorAndPackedB) {
  const int64_t M = 16, N = 32, K = 24;
  auto [A, B, C, k] = testing::matmul_te(M, N, K);
  te::Schedule s({C});
  te::Tensor CL = s.cache_write(C, "local");
  te::Tensor BP = s.cache_read(B, "local", {CL});
  te::Stage& c = s[C];
  auto [io, ii] = c.split(c.leaf(0), 4);
  auto [jo, ji] = c.split(c.leaf(2), 16);
  c.reorder({io, jo, ii, ji});
  s[CL].compute_at(c, jo);
  te::Stage& cl = s[CL];
  auto [ko, ki] = cl.split(k.var, 8);
  cl.reorder({ko, ki, cl.leaf(0), cl.leaf(1)});
  cl.unroll(cl.leaf(2));
  cl.vectorize(cl.leaf(3));
  s[BP].compute_at(cl, ko);
  PrimFunc f = te::lower(s, {A, B, C}, "mm");
  std::string text = print_prim_func(*f);
  EXPECT_TRUE(has(text, "allocate %C_local: Buffer[(4, 16), float32, scope=\"local\"]")) << text;
  EXPECT_TRUE(has(text, "allocate %B_buf: Buffer[(8, 16), float32, scope=\"local\"]")) << text;
  // The accumulator starts at zero inside the tile loop, before the k loop,
  // with the loop kinds of the accumulation.
  EXPECT_TRUE(has(text, R"(      allocate %C_local: Buffer[(4, 16), float32, scope="local"]
      for %i0 from 0 extent 4 unrolled {
        for %i1 from 0 extent 16 vectorized {
          %C_local[%i0, %i1] = 0.0
        }
      }
      for %k_outer from 0 extent 3 {)"))
      << text;
  std::vector<float> a = iota_values(size_t(M * K), 7), b = iota_values(size_t(K * N), 5);
  auto check = [&](const PrimFunc& fn) {
    auto m = jit(fn);
    std::vector<float> out(size_t(M * N), -1);
    m->run("mm", {a.data(), b.data(), out.data()});
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float want = 0;
        for (int64_t q = 0; q < K; ++q) want += a[size_t(i * K + q)] * b[size_t(q * N + j)];
        ASSERT_FLOAT_EQ(out[size_t(i * N + j)], want) << i << "," << j;
      }
  };
  check(f);

  // B packed once per column block, at C's outer loop, for all the row tiles
  // whose accumulators (computed at the inner loop) read it.
  te::Schedule s2({C});
  CL = s2.cache_write(C, "local");
  BP = s2.cache_read(B, "local", {CL});
  te::Stage& c2 = s2[C];
  auto [io2, ii2] = c2.split(c2.leaf(0), 4);
  auto [jo2, ji2] = c2.split(c2.leaf(2), 16);
  c2.reorder({jo2, io2, ii2, ji2});
  s2[BP].compute_at(c2, jo2);
  EXPECT_TRUE(
      has(error_of([&] {
            te::lower(s2, {A, B, C}, "mm");
          }),
          "lower @mm: tensor B_buf is computed at %i1_outer of C, but C does not read B_buf, and neither "
          "does any stage computed inside it"))
      << "its reader is computed at the top level";
  s2[CL].compute_at(c2, io2);
  f = te::lower(s2, {A, B, C}, "mm");
  text = print_prim_func(*f);
  EXPECT_TRUE(has(text, R"(  for %i1_outer from 0 extent 2 {
    allocate %B_buf: Buffer[(24, 16), float32, scope="local"])"))
      << text;
  check(f);
}

// cache_read into VTCM computed at the tile loop: the scratchpad holds one
// tile at a time, allocated and freed per tile.
TEST(TirTeComputeAt, VtcmTileAtOuterLoop) {
  const int64_t n = 4096, tile = 256;
  te::Tensor A = te::placeholder({n}, DataType::float32(), "A");
  te::Tensor C = te::compute(
      {n}, [&](const te::Axes& i) { return mul((*A)(i), float_imm(3.0)); }, "C");
  te::Schedule s({C});
  te::Tensor A_tile = s.cache_read(A, "global.vtcm", {C});
  auto [io, ii] = s[C].split(s[C].leaf(0), tile);
  s[C].vectorize(ii);
  s[A_tile].compute_at(s[C], io);
  PrimFunc f = te::lower(s, {A, C}, "scale");
  std::string text = print_prim_func(*f);
  EXPECT_TRUE(has(text, R"(  for %i0_outer from 0 extent 16 {
    allocate %A_buf: Buffer[(256), float32, scope="global.vtcm", align=128]
    for %i0 from 0 extent 256 {
      %A_buf[%i0] = %A[%i0_outer * 256 + %i0]
    })"))
      << text;
  PrimFunc lowered = lower_for_build(f);
  std::string lowered_text = print_prim_func(*lowered);
  EXPECT_TRUE(has(lowered_text, "\"HexagonBackendAllocateVTCM\", uint32(1024), uint32(128))"))
      << lowered_text;
  auto m = codegen::JitModule::create({lowered});
  std::vector<float> a = iota_values(size_t(n), 13), c(size_t(n), 0);
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    m->run("scale", {a.data(), c.data()});
  }
  for (size_t i = 0; i < size_t(n); ++i) ASSERT_EQ(c[i], 3.0f * a[i]) << i;
  EXPECT_EQ(pool.stats().high_water_bytes, uint64_t(tile * 4)) << "one tile, not the whole tensor";
  EXPECT_EQ(pool.stats().total_allocations, uint64_t(n / tile));
  EXPECT_EQ(pool.stats().live_allocations, 0u);
}

// set_scope on an intermediate computed at a loop: the tile is in VTCM.
TEST(TirTeComputeAt, SetScopeOfAnAttachedStage) {
  Blur g;
  te::Schedule s({g.B});
  auto [io, ii] = s[g.B].split(s[g.B].leaf(0), 8);
  s[g.T].compute_at(s[g.B], io);
  s[g.T].set_scope("local.vtcm");
  PrimFunc lowered = lower_for_build(te::lower(s, {g.A, g.B}, "blur"));
  std::string text = print_prim_func(*lowered);
  EXPECT_TRUE(has(text, "\"HexagonBackendAllocateVTCM\", uint32(40), uint32(128))")) << text;
  auto m = codegen::JitModule::create({lowered});
  std::vector<float> a = iota_values(34, 7), b(32, -1.0f);
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    m->run("blur", {a.data(), b.data()});
  }
  EXPECT_EQ(b, Blur::expected(a));
  EXPECT_EQ(pool.stats().high_water_bytes, 40u);
  EXPECT_EQ(pool.stats().total_allocations, 4u);
}

// A 2-D VTCM tile: rows of A for one tile of C's rows, across all of k.
TEST(TirTeComputeAt, VtcmTileOfMatmulRows) {
  const int64_t M = 32, N = 16, K = 64, rows = 8;
  auto [A, B, C, k] = testing::matmul_te(M, N, K);
  te::Schedule s({C});
  te::Tensor A_tile = s.cache_read(A, "global.vtcm", {C});
  auto [io, ii] = s[C].split(s[C].leaf(0), rows);
  s[A_tile].compute_at(s[C], io);
  PrimFunc lowered = lower_for_build(te::lower(s, {A, B, C}, "mm_vtcm"));
  std::string text = print_prim_func(*lowered);
  EXPECT_TRUE(has(text, "\"HexagonBackendAllocateVTCM\", uint32(2048), uint32(128))")) << text;
  auto m = codegen::JitModule::create({lowered});
  std::vector<float> a = iota_values(size_t(M * K), 9), b = iota_values(size_t(K * N), 7),
                     c(size_t(M * N), -1);
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    m->run("mm_vtcm", {a.data(), b.data(), c.data()});
  }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = 0;
      for (int64_t q = 0; q < K; ++q) want += a[size_t(i * K + q)] * b[size_t(q * N + j)];
      ASSERT_FLOAT_EQ(c[size_t(i * N + j)], want) << i << "," << j;
    }
  EXPECT_EQ(pool.stats().high_water_bytes, uint64_t(rows * K * 4));
  EXPECT_EQ(pool.stats().live_allocations, 0u);
}

TEST(TirTeComputeAt, ErrorsNameTheTensorsAndTheLoop) {
  Blur g;
  te::Schedule s({g.B});
  Var i0 = s[g.B].leaf(0);
  auto [io, ii] = s[g.B].split(i0, 8);
  EXPECT_TRUE(
      has(error_of([&] { s[g.T].compute_at(s[g.B], i0); }),
          "tensor T: compute_at %i0 of B: %i0 is not one of the loops of B (split and fuse replace the loops "
          "they take)"));
  EXPECT_TRUE(has(error_of([&] { s[g.B].compute_at(s[g.T], s[g.T].leaf(0)); }),
                  "tensor B: compute_at %i0 of T: B is an output of the schedule and is written whole"));
  EXPECT_TRUE(has(error_of([&] { s[g.A].compute_at(s[g.B], io); }), "tensor A is a placeholder"));
  EXPECT_TRUE(has(error_of([&] { s[g.T].compute_at(s[g.T], s[g.T].leaf(0)); }),
                  "a tensor cannot be computed inside its own loops"));

  // U reads A, not T: lowering finds no reader of T under U's loop.
  te::Tensor U = te::compute(
      {34}, [&](const te::Axes& i) { return (*g.A)(i); }, "U");
  te::Tensor V = te::compute(
      {32}, [&](const te::Axes& i) { return add((*g.B)(i), (*U)(i)); }, "V");
  te::Schedule s2({V});
  s2[g.T].compute_at(s2[U], s2[U].leaf(0));
  EXPECT_TRUE(
      has(error_of([&] {
            te::lower(s2, {g.A, V}, "f");
          }),
          "lower @f: tensor T is computed at %i0 of U, but U does not read T, and neither does any stage "
          "computed inside it"));
  // T computed inside B; then B inside T would be a cycle.
  s2[g.T].compute_at(s2[g.B], s2[g.B].leaf(0));
  EXPECT_TRUE(
      has(error_of([&] { s2[g.B].compute_at(s2[g.T], s2[g.T].leaf(0)); }),
          "tensor B: compute_at %i0 of T: T is itself computed inside B, so this would make a cycle"));
}

TEST(TirTeComputeAt, LoweringErrors) {
  {
    Blur g;
    te::Schedule s({g.B});
    s[g.T].compute_at(s[g.B], s[g.B].leaf(0));
    s[g.B].split(s[g.B].leaf(0), 8);
    EXPECT_TRUE(has(error_of([&] {
                      te::lower(s, {g.A, g.B}, "f");
                    }),
                    "lower @f: tensor T is computed at %i0 of B, which is no longer one of its loops"));
  }
  {
    Blur g;
    te::Schedule s({g.B});
    s[g.T].compute_at(s[g.B], s[g.B].leaf(0));
    EXPECT_TRUE(
        has(error_of([&] {
              te::lower(s, {g.A, g.T, g.B}, "f");
            }),
            "lower @f: tensor T is computed at %i0 of B, but it is an argument, and arguments are written "
            "whole"));
  }
  {
    // T is read by B and by W; computed inside B, W would read it outside.
    Blur g;
    te::Tensor W = te::compute(
        {34}, [&](const te::Axes& i) { return (*g.T)(i); }, "W");
    te::Schedule s({g.B, W});
    s[g.T].compute_at(s[g.B], s[g.B].leaf(0));
    EXPECT_TRUE(
        has(error_of([&] {
              te::lower(s, {g.A, g.B, W}, "f");
            }),
            "lower @f: tensor T is computed at %i0 of B, but W reads it outside that loop; compute it at a "
            "loop that encloses all its readers"));
  }
}

TEST(TirTeBound, IntervalsOfIndexExpressions) {
  Var io = make_var("io"), ii = make_var("ii"), f = make_var("f");
  te::RangingVars ranging{{ii.get(), 8}, {f.get(), 32}};
  auto text = [](const te::Interval& b) {
    return print_expr(b.lo.to_expr()) + " .. " + print_expr(b.hi.to_expr());
  };
  auto b = te::bound_of(add(add(mul(io, int_imm(8)), ii), int_imm(2)), ranging);
  ASSERT_TRUE(b);
  EXPECT_EQ(text(*b), "%io * 8 + 2 .. %io * 8 + 9");
  EXPECT_EQ(b->extent(), 8);
  b = te::bound_of(mul(add(mul(io, int_imm(8)), ii), int_imm(2)), ranging);
  EXPECT_EQ(text(*b), "%io * 16 .. %io * 16 + 14");
  b = te::bound_of(div(add(mul(io, int_imm(32)), f), int_imm(16)), ranging);
  EXPECT_EQ(text(*b), "%io * 2 .. %io * 2 + 1");
  b = te::bound_of(mod(f, int_imm(4)), ranging);
  EXPECT_EQ(text(*b), "0 .. 3");
  b = te::bound_of(div(add(io, ii), int_imm(4)), ranging);
  EXPECT_EQ(text(*b), "%io / 4 .. %io / 4 + 2") << "8 values starting anywhere touch 3 quotients";
  EXPECT_FALSE(te::bound_of(mul(ii, f), ranging)) << "a product of two running loops";
  EXPECT_EQ(print_expr(te::rebase_index(add(add(mul(io, int_imm(8)), ii), int_imm(1)), mul(io, int_imm(8)))),
            "%ii + 1");
}

}  // namespace
}  // namespace kiln::tir
