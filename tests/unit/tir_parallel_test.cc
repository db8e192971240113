// Parallel loops: the runtime's KilnBackendParallelFor (chunks, threads,
// nesting, errors, the caller's VTCM pool) and `for ... parallel` compiled
// into tasks, JIT-compiled and RUN on 4 threads; values are checked against
// plain loops written here.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "codegen/codegen.h"
#include "codegen/prim_runner.h"
#include "kiln/runtime/backend_api.h"
#include "runtime/thread_pool.h"
#include "runtime/vtcm_pool.h"
#include "te_kernels.h"
#include "test_util.h"
#include "tir/te/te.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln {
namespace {

using testing::error_of;

constexpr int kThreads = 4;

// Every test runs with a pool of kThreads threads, whatever the machine has.
class ParallelRuntime : public ::testing::Test {
 protected:
  void SetUp() override { set_parallel_num_threads(kThreads); }
  void TearDown() override { set_parallel_num_threads(0); }
};

// ---------------------------------------------------------------- the runtime

struct Chunk {
  int64_t begin, end;
  std::thread::id thread;
};

struct Recorder {
  bool slow = false;
  std::mutex mu;
  std::vector<Chunk> chunks;
  std::vector<Chunk> sorted() {
    std::vector<Chunk> c = chunks;
    std::sort(c.begin(), c.end(), [](const Chunk& a, const Chunk& b) { return a.begin < b.begin; });
    return c;
  }
};

int32_t record_chunk(int64_t begin, int64_t end, void* env) {
  auto* r = static_cast<Recorder*>(env);
  // Long enough for every worker to claim a chunk: a thread that is late
  // loses its chunk to the others, the caller too.
  if (r->slow) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard<std::mutex> lock(r->mu);
  r->chunks.push_back({begin, end, std::this_thread::get_id()});
  return 0;
}

size_t distinct_threads(const std::vector<Chunk>& chunks) {
  std::vector<std::thread::id> ids;
  for (const Chunk& c : chunks)
    if (std::find(ids.begin(), ids.end(), c.thread) == ids.end()) ids.push_back(c.thread);
  return ids.size();
}

TEST_F(ParallelRuntime, RuntimeRunsOneContiguousChunkPerThread) {
  Recorder r;
  r.slow = true;
  ASSERT_EQ(KilnBackendParallelFor(10, record_chunk, &r), 0);
  std::vector<Chunk> c = r.sorted();
  ASSERT_EQ(c.size(), 4u);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const Chunk& x : c) ranges.push_back({x.begin, x.end});
  EXPECT_EQ(ranges, (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 6}, {6, 8}, {8, 10}}));
  EXPECT_EQ(distinct_threads(c), 4u);
  EXPECT_EQ(c[0].thread, std::this_thread::get_id()) << "the caller runs the first chunk";
  ParallelLaunchInfo info = last_parallel_launch();
  EXPECT_EQ(info.n, 10);
  EXPECT_EQ(info.chunks, 4);
  EXPECT_EQ(info.threads, 4);
  EXPECT_FALSE(info.nested);

  Recorder few;
  ASSERT_EQ(KilnBackendParallelFor(3, record_chunk, &few), 0);
  EXPECT_EQ(few.chunks.size(), 3u) << "no more chunks than iterations";
  Recorder none;
  ASSERT_EQ(KilnBackendParallelFor(0, record_chunk, &none), 0);
  EXPECT_TRUE(none.chunks.empty());
}

struct NestedEnv {
  std::atomic<int> inner_iterations{0};
  std::atomic<int> inline_launches{0};
};

int32_t nested_inner(int64_t begin, int64_t end, void* env) {
  static_cast<NestedEnv*>(env)->inner_iterations += int(end - begin);
  return 0;
}

int32_t nested_outer(int64_t begin, int64_t end, void* env) {
  auto* e = static_cast<NestedEnv*>(env);
  for (int64_t i = begin; i < end; ++i) {
    if (int32_t code = KilnBackendParallelFor(5, nested_inner, env)) return code;
    ParallelLaunchInfo info = last_parallel_launch();
    if (info.nested && info.chunks == 1 && info.threads == 1) ++e->inline_launches;
  }
  return 0;
}

TEST_F(ParallelRuntime, NestedLaunchRunsInlineInTheTask) {
  NestedEnv env;
  ASSERT_EQ(KilnBackendParallelFor(8, nested_outer, &env), 0);
  EXPECT_EQ(env.inner_iterations, 40);
  EXPECT_EQ(env.inline_launches, 8) << "every inner launch ran on its task's thread";
  EXPECT_EQ(last_parallel_launch().chunks, 4);
}

// Iterations from 5 on fail with code 10 + i and say which one failed.
int32_t fail_from_five(int64_t begin, int64_t end, void*) {
  for (int64_t i = begin; i < end; ++i) {
    if (i < 5) continue;
    std::string m = "iteration " + std::to_string(i) + " failed";
    KilnBackendSetLastError(m.c_str());
    return int32_t(10 + i);
  }
  return 0;
}

TEST_F(ParallelRuntime, FirstFailingChunkGivesTheCodeAndTheCallersLastError) {
  KilnBackendSetLastError("stale");
  // Chunks [0,3) [3,6) [6,9) [9,12): the second, third and fourth fail; the
  // second is reported, from a worker thread.
  EXPECT_EQ(KilnBackendParallelFor(12, fail_from_five, nullptr), 15);
  EXPECT_STREQ(KilnBackendGetLastError(), "iteration 5 failed");
}

int32_t throw_in_task(int64_t, int64_t, void*) { throw std::runtime_error("boom"); }

TEST_F(ParallelRuntime, ExceptionsStopAtTheTask) {
  EXPECT_EQ(KilnBackendParallelFor(8, throw_in_task, nullptr), -1);
  EXPECT_NE(std::string(KilnBackendGetLastError()).find("a parallel task threw an exception: boom"),
            std::string::npos)
      << KilnBackendGetLastError();
  EXPECT_EQ(KilnBackendParallelFor(8, nullptr, nullptr), -1);
  EXPECT_NE(std::string(KilnBackendGetLastError()).find("the task is NULL"), std::string::npos);
}

struct PoolEnv {
  VtcmPool* expected;
  std::atomic<int> from_callers_pool{0};
};

int32_t allocate_in_task(int64_t begin, int64_t end, void* env) {
  auto* e = static_cast<PoolEnv*>(env);
  for (int64_t i = begin; i < end; ++i) {
    void* p = HexagonBackendAllocateVTCM(100, 128);
    if (!p) return -1;
    if (e->expected->owns(p)) ++e->from_callers_pool;
    if (HexagonBackendFreeVTCM(p) != 0) return -1;
  }
  return 0;
}

TEST_F(ParallelRuntime, TasksAllocateFromTheCallersVtcmPool) {
  VtcmPool pool(1 << 16);
  ScopedVtcmPool bind(pool);
  PoolEnv env{&pool};
  ASSERT_EQ(KilnBackendParallelFor(20, allocate_in_task, &env), 0) << KilnBackendGetLastError();
  EXPECT_EQ(env.from_callers_pool, 20);
  EXPECT_EQ(pool.stats().total_allocations, 20u);
  EXPECT_EQ(pool.stats().live_allocations, 0u);
}

TEST_F(ParallelRuntime, ThreadCountComesFromKilnNumThreads) {
  const char* old = std::getenv("KILN_NUM_THREADS");
  std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("KILN_NUM_THREADS", "3", 1);
  set_parallel_num_threads(0);
  EXPECT_EQ(parallel_num_threads(), 3);
  setenv("KILN_NUM_THREADS", "lots", 1);
  EXPECT_NE(error_of([] {
              set_parallel_num_threads(0);
            }).find("KILN_NUM_THREADS=\"lots\" is not a thread count (an integer from 1 to 1024)"),
            std::string::npos);
  // A launch reports the same instead of running with a guess.
  Recorder r;
  EXPECT_EQ(KilnBackendParallelFor(4, record_chunk, &r), -1);
  EXPECT_NE(std::string(KilnBackendGetLastError()).find("KILN_NUM_THREADS=\"lots\""), std::string::npos);
  if (saved) {
    setenv("KILN_NUM_THREADS", saved->c_str(), 1);
  } else {
    unsetenv("KILN_NUM_THREADS");
  }
  // One thread: the caller runs everything.
  set_parallel_num_threads(1);
  ASSERT_EQ(KilnBackendParallelFor(4, record_chunk, &r), 0);
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].thread, std::this_thread::get_id());
  EXPECT_EQ(last_parallel_launch().threads, 1);
  EXPECT_NE(error_of([] { set_parallel_num_threads(-1); }).find("expected 1 to 1024, or 0 for the default"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln

// ---------------------------------------------------------------- compiled loops

namespace kiln::tir {
namespace {

using kiln::testing::error_of;

std::unique_ptr<codegen::JitModule> jit(const PrimFunc& f, const TirPassOptions& options = {}) {
  return codegen::JitModule::create({lower_for_build(f, options)});
}

PrimFunc parse_one(const std::string& text) { return parse_prim_functions(text, "parallel_test.kir").at(0); }

class ParallelLoops : public ::testing::Test {
 protected:
  void SetUp() override { set_parallel_num_threads(kiln::kThreads); }
  void TearDown() override { set_parallel_num_threads(0); }
};

// C = A B with the row-tile loop parallel.
PrimFunc parallel_matmul(int64_t M, int64_t N, int64_t K) {
  auto [A, B, C, k] = testing::matmul_te(M, N, K);
  te::Schedule s({C});
  te::Stage& st = s[C];
  auto [io, ii] = st.split(st.leaf(0), 4);
  st.parallel(io);
  return te::lower(s, {A, B, C}, "matmul");
}

TEST_F(ParallelLoops, RowTilesRunOnAllThreadsAndMatchPlainLoops) {
  const int64_t M = 24, N = 20, K = 9;
  PrimFunc f = parallel_matmul(M, N, K);
  std::string ir = codegen::emit_text({lower_for_build(f)}, codegen::EmitKind::LLVMIR);
  // The task: an internal function of (begin, end, env).
  size_t task = ir.find("@matmul__parallel_0(i64 %0, i64 %1, ptr");
  ASSERT_NE(task, std::string::npos) << ir;
  EXPECT_EQ(ir.compare(ir.rfind('\n', task) + 1, 15, "define internal"), 0) << ir;
  EXPECT_NE(ir.find("call i32 @KilnBackendParallelFor(i64 6"), std::string::npos) << ir;
  // The body is a function of its own whose buffer arguments keep the
  // kernel's noalias (LLVM inlines it into the task at -O3).
  codegen::CodegenOptions unoptimized;
  unoptimized.opt_level = 0;
  std::string ir0 = codegen::emit_text({lower_for_build(f)}, codegen::EmitKind::LLVMIR, unoptimized);
  size_t body = ir0.find("define internal i32 @matmul__parallel_0_body(i64 %0, i64 %1, i32 %2, ");
  ASSERT_NE(body, std::string::npos) << ir0;
  std::string signature = ir0.substr(body, ir0.find('\n', body) - body);
  for (const char* p : {"ptr noalias %A_data", "ptr noalias %B_data", "ptr noalias %C_data"})
    EXPECT_NE(signature.find(p), std::string::npos) << signature;
  auto m = jit(f);
  bool imports_launch = false;
  for (const codegen::Import& imp : m->imports()) imports_launch |= imp.symbol == "KilnBackendParallelFor";
  EXPECT_TRUE(imports_launch) << "the link check sees the runtime call codegen adds";
  std::vector<float> a(M * K), b(K * N), c(M * N, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 7) - 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2) * 0.5f;
  m->run("matmul", {a.data(), b.data(), c.data()});
  ParallelLaunchInfo info = last_parallel_launch();
  EXPECT_EQ(info.n, 6);
  EXPECT_EQ(info.chunks, 4);
  // Chunks go to whichever thread claims them first (all of them to the
  // caller when the workers are late).
  EXPECT_GE(info.threads, 1);
  EXPECT_LE(info.threads, 4);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = 0;
      for (int64_t q = 0; q < K; ++q) want += a[size_t(i * K + q)] * b[size_t(q * N + j)];
      ASSERT_FLOAT_EQ(c[size_t(i * N + j)], want) << i << "," << j;
    }
}

TEST_F(ParallelLoops, TasksSeeScalarsLetsAndOuterLoopVariables) {
  PrimFunc f = parse_one(
      R"(prim @affine(%A: Buffer[(6, 10), float32], %B: Buffer[(6, 10), float32], %s: float32, %k: int32) {
  for %i from 0 extent 6 {
    let %off = %i * 100 + %k
    for %j from 2 extent 8 parallel {
      %B[%i, %j] = %A[%i, %j] * %s + cast<float32>(%off + %j)
    }
  }
  return 0
}
)");
  auto m = jit(f);
  std::vector<float> a(60), b(60, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i) * 0.25f;
  float s = 3.0f;
  int32_t k = 7;
  m->run("affine", {a.data(), b.data(), &s, &k});
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 10; ++j) {
      float want = j < 2 ? -1.0f : a[size_t(i * 10 + j)] * s + float(i * 100 + k + j);
      ASSERT_FLOAT_EQ(b[size_t(i * 10 + j)], want) << i << "," << j;
    }
  EXPECT_EQ(last_parallel_launch().n, 8) << "the loop's extent, from its min";
}

TEST_F(ParallelLoops, NestedParallelLoopsRunInlineAndMatch) {
  te::Tensor A = te::placeholder({16, 40}, DataType::int32(), "A");
  te::Tensor B = te::compute(
      {16, 40}, [&](const te::Axes& i) { return add(mul((*A)(i), int_imm(3)), i[1]); }, "B");
  te::Schedule s({B});
  s[B].parallel(s[B].leaf(0));
  s[B].parallel(s[B].leaf(1));
  auto m = jit(te::lower(s, {A, B}, "nested"));
  std::vector<int32_t> a(16 * 40), b(16 * 40, 0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = int32_t(i * 7 % 23) - 11;
  m->run("nested", {a.data(), b.data()});
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(b[i], a[i] * 3 + int32_t(i % 40)) << i;
  EXPECT_EQ(last_parallel_launch().chunks, 4);
}

// B = A * 2 + 1 in tiles of 256, each tile of A copied into VTCM inside the
// parallel tile loop: one VTCM buffer per task.
PrimFunc tiles_in_vtcm() {
  te::Tensor A = te::placeholder({2048}, DataType::float32(), "A");
  te::Tensor B = te::compute(
      {2048}, [&](const te::Axes& i) { return add(mul((*A)(i), float_imm(2.0)), float_imm(1.0)); }, "B");
  te::Schedule s({B});
  te::Tensor tile = s.cache_read(A, "global.vtcm", {B});
  auto [io, ii] = s[B].split(s[B].leaf(0), 256);
  s[tile].compute_at(s[B], io);
  s[B].parallel(io);
  return te::lower(s, {A, B}, "tiles");
}

TEST_F(ParallelLoops, VtcmBufferInsideTheLoopIsOnePerTask) {
  auto m = jit(tiles_in_vtcm());
  std::vector<float> a(2048), b(2048, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 97) - 40);
  VtcmPool pool(1 << 20);
  {
    ScopedVtcmPool bind(pool);
    m->run("tiles", {a.data(), b.data()});
  }
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(b[i], a[i] * 2.0f + 1.0f) << i;
  VtcmPoolStats st = pool.stats();
  EXPECT_EQ(st.total_allocations, 8u) << "one 1 KiB tile per iteration";
  EXPECT_EQ(st.live_allocations, 0u);
  EXPECT_GE(st.high_water_bytes, 1024u);
  EXPECT_LE(st.high_water_bytes, uint64_t(kiln::kThreads) * 1024u) << "at most one tile per running task";
}

TEST_F(ParallelLoops, PoolTooSmallInATaskIsTheKernelsError) {
  auto m = jit(tiles_in_vtcm());
  std::vector<float> a(2048, 1.0f), b(2048, 0.0f);
  VtcmPool pool(512);
  ScopedVtcmPool bind(pool);
  std::string msg = error_of([&] { m->run("tiles", {a.data(), b.data()}); });
  EXPECT_NE(msg.find("@tiles failed (code -1): buffer %A_buf (1024 bytes, scope global.vtcm): "
                     "VTCM pool cannot allocate 1024 bytes"),
            std::string::npos)
      << msg;
  EXPECT_EQ(pool.stats().live_allocations, 0u);
  EXPECT_EQ(pool.stats().failed_allocations, 4u) << "each task failed at its first tile";
}

// C = A + B: B in VTCM for the whole function, A in VTCM per tile inside the
// parallel loop.
PrimFunc outer_and_inner_vtcm() {
  te::Tensor A = te::placeholder({2048}, DataType::float32(), "A");
  te::Tensor B = te::placeholder({2048}, DataType::float32(), "B");
  te::Tensor C = te::compute(
      {2048}, [&](const te::Axes& i) { return add((*A)(i), (*B)(i)); }, "C");
  te::Schedule s({C});
  te::Tensor a_tile = s.cache_read(A, "global.vtcm", {C});
  s.cache_read(B, "global.vtcm", {C});
  auto [io, ii] = s[C].split(s[C].leaf(0), 256);
  s[a_tile].compute_at(s[C], io);
  s[C].parallel(io);
  return te::lower(s, {A, B, C}, "add");
}

void run_outer_and_inner(bool static_plan) {
  TirPassOptions options;
  options.static_scratchpad_plan = static_plan;
  PrimFunc lowered = lower_for_build(outer_and_inner_vtcm(), options);
  std::string text = print_prim_func(*lowered);
  // The buffer outside the loop is released after the loop when a task
  // failed, not inside the tasks.
  const std::string outer = static_plan ? "%vtcm_plan_data" : "%B_buf_data";
  EXPECT_NE(
      text.find(
          "  if ne(parallel_status(), 0) {\n    evaluate call_extern<int32>(\"HexagonBackendFreeVTCM\", " +
          outer + ")\n    return parallel_status()\n  }"),
      std::string::npos)
      << text;
  auto m = codegen::JitModule::create({lowered});
  std::vector<float> a(2048), b(2048), c(2048, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = float(i % 31);
    b[i] = float(int(i % 11) - 5);
  }
  VtcmPool pool(1 << 20);
  {
    ScopedVtcmPool bind(pool);
    m->run("add", {a.data(), b.data(), c.data()});
  }
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  EXPECT_EQ(pool.stats().total_allocations, 9u) << "B (or the plan holding it) once, A's tile per iteration";
  EXPECT_EQ(pool.stats().live_allocations, 0u);

  // Room for B only: every task fails, B is freed once, after the tasks.
  VtcmPool small(8192 + 512);
  ScopedVtcmPool bind(small);
  std::string msg = error_of([&] { m->run("add", {a.data(), b.data(), c.data()}); });
  EXPECT_NE(msg.find("cannot allocate 1024 bytes"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("HexagonBackendFreeVTCM"), std::string::npos) << msg;
  VtcmPoolStats st = small.stats();
  EXPECT_EQ(st.live_allocations, 0u);
  EXPECT_EQ(st.total_allocations, 1u);
  EXPECT_EQ(st.used_bytes, 0u);
}

TEST_F(ParallelLoops, BufferOutsideTheLoopIsFreedOnceWhenATaskFails) { run_outer_and_inner(false); }

TEST_F(ParallelLoops, StaticPlanLeavesPerTaskBuffersOut) { run_outer_and_inner(true); }

const char* kGuarded = R"(prim @guarded(%A: Buffer[(100), int32], %B: Buffer[(100), int32]) {
  allocate %T: Buffer[(100), int32, scope="global.vtcm"]
  for %i from 0 extent 100 {
    %T[%i] = %A[%i] * 2
  }
  for %i2 from 0 extent 100 parallel {
    if %T[%i2] < 0 {
      evaluate call_extern<int32>("KilnBackendPrependLastError", "negative input")
      return 3
    }
    %B[%i2] = %T[%i2] + 1
  }
  return 0
}
)";

TEST_F(ParallelLoops, ReturnInsideTheBodyReturnsFromTheKernel) {
  auto m = jit(parse_one(kGuarded));
  std::vector<int32_t> a(100), b(100, 0);
  for (int i = 0; i < 100; ++i) a[size_t(i)] = i;
  VtcmPool pool(4096);
  ScopedVtcmPool bind(pool);
  m->run("guarded", {a.data(), b.data()});
  for (int i = 0; i < 100; ++i) ASSERT_EQ(b[size_t(i)], 2 * i + 1);
  a[10] = -1;
  a[70] = -2;
  EXPECT_NE(error_of([&] {
              m->run("guarded", {a.data(), b.data()});
            }).find("@guarded failed (code 3): negative input"),
            std::string::npos);
  EXPECT_EQ(pool.stats().live_allocations, 0u) << "%T freed once, after the tasks";
  EXPECT_EQ(pool.stats().total_allocations, 2u);
}

TEST_F(ParallelLoops, LoopOfOneIterationThatCanReturnStaysALoop) {
  PrimFunc f = parse_one(R"(prim @one(%A: Buffer[(4), int32]) {
  allocate %T: Buffer[(4), int32, scope="global.vtcm"]
  for %i from 0 extent 1 parallel {
    allocate %U: Buffer[(4), int32, scope="global.vtcm"]
    %U[%i] = 5
    %T[%i] = %U[%i]
  }
  %A[0] = %T[0]
  return 0
}
)");
  std::string text = print_prim_func(*lower_for_build(f));
  // Inlined, %U's failure return would leave without freeing %T.
  EXPECT_NE(text.find("for %i from 0 extent 1 parallel {"), std::string::npos) << text;
  auto m = jit(f);
  std::vector<int32_t> a(4, 0);
  m->run("one", {a.data()});
  EXPECT_EQ(a[0], 5);
}

}  // namespace
}  // namespace kiln::tir

// ---------------------------------------------------------------- Hexagon

namespace kiln::tir {
namespace {

// The same outlined tasks on Hexagon, where the runtime runs a loop as one task.
TEST(HexagonParallel, TilesInVtcmRunAsOneTask) {
  codegen::PrimRunOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  Tensor a = Tensor::empty({2048}, DType::Float32);
  for (int64_t i = 0; i < 2048; ++i) a.data<float>()[i] = float(i % 13) - 6.0f;
  codegen::PrimRunResult hx = codegen::run_prim_function(tiles_in_vtcm(), {{"A", a}}, o);
  const Tensor& b = hx.outputs.at(0).second;
  for (int64_t i = 0; i < 2048; ++i) ASSERT_EQ(b.data<float>()[i], a.data<float>()[i] * 2.0f + 1.0f) << i;
  EXPECT_NE(hx.vtcm_pool.find("high-water 1024 B"), std::string::npos) << hx.vtcm_pool;
  EXPECT_NE(hx.vtcm_pool.find("allocations 8 (0 failed, 0 live)"), std::string::npos) << hx.vtcm_pool;
}

}  // namespace
// Without KILN_NUM_THREADS the pool has a thread per CPU the process may run
// on: under `taskset -c 1` (or a container's cpuset) one, not one per CPU of
// the machine sharing that core.
TEST_F(ParallelRuntime, DefaultThreadsAreTheCpusTheProcessMayRunOn) {
  const char* old = std::getenv("KILN_NUM_THREADS");
  std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  unsetenv("KILN_NUM_THREADS");
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(available_cpus(), CPU_COUNT(&all));
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(available_cpus(), 1);
  set_parallel_num_threads(0);
  EXPECT_EQ(parallel_num_threads(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  set_parallel_num_threads(0);
  EXPECT_EQ(parallel_num_threads(), std::min(CPU_COUNT(&all), kMaxParallelThreads));
  if (saved) setenv("KILN_NUM_THREADS", saved->c_str(), 1);
}

}  // namespace kiln::tir
