// LLVM host codegen: kernels are lowered, JIT-compiled, linked against the
// runtime ABI and RUN; results are checked against plain C++ loops here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>

#include "codegen/codegen.h"
#include "codegen/target.h"
#include "runtime/vtcm_pool.h"
#include "test_util.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::codegen {
namespace {

// The forum's program after scheduling (examples/vtcm/vtcm_add.kir, int8 there):
// A and B copied into VTCM, C = A_buf + B_buf, in the given element type.
std::string vtcm_add(const std::string& dtype) {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/examples/vtcm/vtcm_add.kir");
  std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t p = 0; (p = t.find("int8", p)) != std::string::npos; p += dtype.size()) t.replace(p, 4, dtype);
  return t;
}

std::vector<tir::PrimFunc> lowered(const std::string& text) {
  auto fs = tir::parse_prim_functions(text, "test.kir");
  for (auto& f : fs) f = tir::lower_for_build(f);
  return fs;
}

// Lowered with a vector width of `vector_bytes` (64: AVX-512's, 32:
// AVX2's), whatever this machine has (the vector forms under test do not
// depend on it; the code runs everywhere).
std::vector<tir::PrimFunc> lowered_for(const std::string& text, int vector_bytes) {
  tir::TirPassOptions options;
  options.vector_bytes = vector_bytes;
  auto fs = tir::parse_prim_functions(text, "test.kir");
  for (auto& f : fs) f = tir::lower_for_build(f, options);
  return fs;
}
std::vector<tir::PrimFunc> lowered_for_avx512(const std::string& text) { return lowered_for(text, 64); }

TEST(TirCodegen, ForumKernelRunsAndAddsInt8) {
  auto jit = JitModule::create(lowered(vtcm_add("int8")));
  std::vector<int8_t> a(2048), b(2048), c(2048, 0);
  for (int i = 0; i < 2048; ++i) {
    a[size_t(i)] = int8_t(i * 7 - 100);
    b[size_t(i)] = int8_t(i * 13 + 5);
  }
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    jit->run("alloc_vtcm", {a.data(), b.data(), c.data()});
  }
  for (size_t i = 0; i < 2048; ++i) ASSERT_EQ(c[i], int8_t(a[i] + b[i])) << i;  // wraps like int8
  VtcmPoolStats s = pool.stats();
  EXPECT_EQ(s.high_water_bytes, 2u * 2048u);
  EXPECT_EQ(s.live_allocations, 0u) << "both buffers freed";
  EXPECT_EQ(s.total_allocations, 2u);
}

// The JIT looks a function up once and keeps its address: each name still
// calls its own function, call after call and alternating, and a name the
// module lacks is an error every time, not a cached address.
TEST(TirCodegen, JitCallsEachFunctionByItsNameAfterTheFirstLookup) {
  auto jit =
      JitModule::create(lowered(R"(prim @add_one(%a: Buffer[(16), float32], %b: Buffer[(16), float32]) {
  for %i from 0 extent 16 {
    %b[%i] = %a[%i] + 1.0
  }
  return 0
}
prim @twice(%a: Buffer[(16), float32], %b: Buffer[(16), float32]) {
  for %i from 0 extent 16 {
    %b[%i] = %a[%i] * 2.0
  }
  return 0
}
)"));
  std::vector<float> a(16), b(16);
  for (int round = 0; round < 3; ++round)
    for (const std::string name : {"add_one", "twice"}) {
      for (size_t i = 0; i < 16; ++i) a[i] = float(i) + float(round);
      jit->run(name, {a.data(), b.data()});
      for (size_t i = 0; i < 16; ++i)
        ASSERT_EQ(b[i], name == "twice" ? 2 * a[i] : a[i] + 1)
            << name << " round " << round << " element " << i;
    }
  for (int round = 0; round < 2; ++round) {
    try {
      jit->run("thrice", {a.data(), b.data()});
      FAIL() << "an unknown function ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the module has no prim function @thrice"), std::string::npos)
          << e.what();
    }
  }
}

TEST(TirCodegen, Float32BuffersAllocateFourTimesTheBytes) {
  auto jit = JitModule::create(lowered(vtcm_add("float32")));
  std::vector<float> a(2048), b(2048), c(2048, 0);
  for (int i = 0; i < 2048; ++i) {
    a[size_t(i)] = 0.5f * float(i);
    b[size_t(i)] = 1.0f - float(i);
  }
  VtcmPool pool;
  {
    ScopedVtcmPool bind(pool);
    jit->run("alloc_vtcm", {a.data(), b.data(), c.data()});
  }
  for (size_t i = 0; i < 2048; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  EXPECT_EQ(pool.stats().high_water_bytes, 4u * 2u * 2048u);
  EXPECT_EQ(pool.stats().live_allocations, 0u);
}

TEST(TirCodegen, ExhaustedPoolIsAnErrorNotACrash) {
  auto jit = JitModule::create(lowered(vtcm_add("int8")));
  std::vector<int8_t> a(2048, 1), b(2048, 2), c(2048, 0);
  VtcmPool pool(3000);  // room for A_buf, not for B_buf
  ScopedVtcmPool bind(pool);
  try {
    jit->run("alloc_vtcm", {a.data(), b.data(), c.data()});
    FAIL() << "expected the allocation of B_buf to fail";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("@alloc_vtcm failed (code -1): buffer %B_buf (2048 bytes, scope local.vtcm): "
                     "VTCM pool cannot allocate 2048 bytes (alignment 128): 952 bytes free, largest "
                     "free block 952 bytes, capacity 3000 bytes"),
              std::string::npos)
        << m;
  }
  EXPECT_EQ(pool.stats().live_allocations, 0u) << "A_buf is freed on the failure path";
  EXPECT_EQ(c[0], 0) << "nothing ran after the failure";
}

const char* kCallsMissing = R"(prim @kernel(%A: Buffer[(4), float32]) {
  evaluate call_extern<int32>("my_missing_helper", %A_data)
  return 0
}
)";

TEST(TirCodegen, UnresolvedImportFailsAtBuildTime) {
  auto fs = lowered(kCallsMissing);
  auto imports = collect_imports(fs);
  ASSERT_EQ(imports.size(), 1u);
  EXPECT_EQ(imports[0].symbol, "my_missing_helper");
  EXPECT_EQ(imports[0].callers, std::vector<std::string>{"kernel"});
  try {
    emit_text(fs, EmitKind::LLVMIR);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "link check failed at build time:\n  unresolved symbol 'my_missing_helper' called by "
              "@kernel\nthe kiln runtime exports only the functions in kiln/runtime/backend_api.h; "
              "name a library that defines it with --link-lib (see docs/linking.md)");
  }
}

TEST(TirCodegen, UnresolvedImportFailsAtLoadTimeWhenForcedPastTheBuild) {
  CodegenOptions o;
  o.check_imports = false;
  try {
    JitModule::create(lowered(kCallsMissing), o);
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(
        m.find("link check failed at load time:\n  unresolved symbol 'my_missing_helper' called by @kernel"),
        std::string::npos)
        << m;
  }
}

TEST(TirCodegen, ImportsResolveToTheRuntimeAbiOrALibrary) {
  auto fs = lowered(vtcm_add("int8") + R"(prim @uses_libm(%X: Buffer[(1), float64]) {
  %X[0] = call_extern<float64>("cbrt", %X[0])
  return 0
}
)");
  auto r = resolve_imports(collect_imports(fs), {"libm.so.6"});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].import.symbol, "HexagonBackendAllocateVTCM");
  EXPECT_EQ(r[0].source, ImportSource::RuntimeAbi);
  EXPECT_EQ(r[3].import.symbol, "cbrt");
  EXPECT_EQ(r[3].source, ImportSource::Library);
  EXPECT_EQ(r[3].library, "libm.so.6");
  // And it runs against the named library.
  CodegenOptions o;
  o.link_libs = {"libm.so.6"};
  auto jit = JitModule::create(fs, o);
  double x = 27.0;
  jit->run("uses_libm", {&x});
  EXPECT_DOUBLE_EQ(x, 3.0);
}

TEST(TirCodegen, LlvmIrDeclaresTheRuntimeImports) {
  std::string ll = emit_text(lowered(vtcm_add("int8")), EmitKind::LLVMIR);
  // noalias: the pool returns fresh memory, like malloc.
  EXPECT_NE(ll.find("declare noalias ptr @HexagonBackendAllocateVTCM(i32, i32)"), std::string::npos) << ll;
  EXPECT_NE(ll.find("@HexagonBackendFreeVTCM(ptr"), std::string::npos);
  EXPECT_NE(ll.find("@alloc_vtcm__packed(ptr"), std::string::npos);
  EXPECT_NE(ll.find("define"), std::string::npos);
}

// A vectorized loop that vectorize-loops cannot rewrite (a dynamic extent)
// keeps its hint, and the host's LLVM pipeline vectorizes it: vector loads
// of the float elements in the LLVM IR, not a scalar loop.
TEST(TirCodegen, HostPipelineVectorizesLoopsLeftWithTheirHint) {
  const char* text = R"(
prim @kept(%a: Buffer[(4096), float32], %b: Buffer[(4096), float32], %n: int32) {
  for %i from 0 extent %n vectorized {
    %a[%i] = %a[%i] * 2.0 + %b[%i]
  }
  return 0
}
)";
  std::string ll = emit_text(lowered(text), EmitKind::LLVMIR);
  EXPECT_NE(ll.find("load <"), std::string::npos) << ll;
  EXPECT_NE(ll.find(" x float>"), std::string::npos) << ll;
}

// A vector load at offset + clamp(run, lo, hi) (a padded row read through
// clamp_index): runs wholly inside, across either end, and wholly outside
// the clamp read what a lane-by-lane clamp reads.
TEST(TirCodegen, ClampedRunLoadsMatchLaneByLaneClamp) {
  const char* text = R"(
prim @clamped(%src: Buffer[(64), float32], %dst: Buffer[(160), float32]) {
  for %b from 0 extent 10 {
    for %i from 0 extent 16 vectorized {
      %dst[%b * 16 + %i] = %src[10 + min(max(%b * 9 - 20 + %i, 0), 39)]
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_NE(ll.find("llvm.masked.load"), std::string::npos) << ll;
  EXPECT_EQ(ll.find("gather"), std::string::npos) << ll;
  std::vector<float> src(64), dst(160, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.5f + 1.0f;
  auto jit = JitModule::create(fs);
  jit->run("clamped", {src.data(), dst.data()});
  for (int b = 0; b < 10; ++b)
    for (int i = 0; i < 16; ++i)
      ASSERT_EQ(dst[size_t(b * 16 + i)], src[size_t(10 + std::clamp(b * 9 - 20 + i, 0, 39))])
          << "run " << b << " lane " << i;
}

// exp, sigmoid, tanh and erf of float32 vectors, inline: 2^k by AVX-512's
// vscalefps where the target has it, in the exponent bits otherwise; the
// divisions a reciprocal estimate and a Newton step where the target has
// one (AVX-512's vrcp14ps, AVX's rcpps), for this machine and for x86-64-v3
// (AVX2) code. Within 3 ulp (exp's 2 and the reciprocal's rounding; erf 4,
// its approximation's absolute 1.5e-7 near 1) or 1e-37 (the tails) of the
// double-precision function over [-100, 100], exact at the special values:
// NaN stays NaN, the infinities saturate, 0 gives 1 / 0.5 / 0 / 0; exp's
// overflow is infinite and its underflow zero.
TEST(TirCodegen, ExpSigmoidTanhAndErfVectorsMatchTheirFunctions) {
  const char* text = R"(
prim @fns(%x: Buffer[(4096), float32], %s: Buffer[(4096), float32], %t: Buffer[(4096), float32], %e: Buffer[(4096), float32], %p: Buffer[(4096), float32]) {
  for %i from 0 extent 4096 vectorized {
    %p[%i] = exp(%x[%i])
    %s[%i] = sigmoid(%x[%i])
    %t[%i] = tanh(%x[%i])
    %e[%i] = erf(%x[%i])
  }
  return 0
}
)";
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.0f, -0.0f, inf, -inf, nan, 1e-30f, -1e-30f, 17.0f, -87.0f, -88.0f, -90.0f, 89.0f};
  while (x.size() < 4096) x.push_back(-100.0f + 200.0f * float(x.size()) / 4096.0f);
  auto ulps = [](float got, double want) {
    if (std::isnan(want)) return std::isnan(got) ? 0.0 : 1e9;
    if (std::fabs(got - want) <= 1e-37) return 0.0;
    const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 1e-37)) - 23);
    return std::fabs(double(got) - want) / ulp;
  };
  for (const char* cpu : {"", "x86-64-v3"}) {
    SCOPED_TRACE(*cpu ? cpu : "this machine");
    CodegenOptions options;
    if (*cpu) options.target = parse_target(std::string("llvm -mcpu=") + cpu);
    auto fs = lowered_for(text, *cpu ? 32 : options.target.vector_bytes);
    std::vector<float> s(x.size()), t(x.size()), e(x.size()), p(x.size());
    JitModule::create(fs, options)->run("fns", {x.data(), s.data(), t.data(), e.data(), p.data()});
    double worst[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < x.size(); ++k) {
      const double v = x[k];
      worst[3] = std::max(worst[3], ulps(p[k], std::exp(v) > 3.4028234663852886e38 ? HUGE_VAL : std::exp(v)));
      worst[0] = std::max(worst[0], ulps(s[k], 1.0 / (1.0 + std::exp(-v))));
      worst[1] = std::max(worst[1], ulps(t[k], std::tanh(v)));
      worst[2] = std::max(worst[2], ulps(e[k], std::erf(v)));
    }
    std::printf("%s: exp %.2f, sigmoid %.2f, tanh %.2f, erf %.2f ulp at most\n", *cpu ? cpu : "this machine",
                worst[3], worst[0], worst[1], worst[2]);
    EXPECT_LE(worst[3], 2.0) << "exp";
    EXPECT_LE(worst[0], 3.0) << "sigmoid";
    EXPECT_LE(worst[1], 3.0) << "tanh";
    EXPECT_LE(worst[2], 4.0) << "erf";
    EXPECT_EQ(s[0], 0.5f);
    EXPECT_EQ(s[2], 1.0f);
    EXPECT_EQ(s[3], 0.0f);
    EXPECT_TRUE(std::isnan(s[4]) && std::isnan(t[4]) && std::isnan(e[4]) && std::isnan(p[4]));
    EXPECT_EQ(p[0], 1.0f);
    EXPECT_EQ(p[2], inf);
    EXPECT_EQ(p[3], 0.0f);
    EXPECT_EQ(p[11], inf);  // e^89
    EXPECT_EQ(t[2], 1.0f);
    EXPECT_EQ(t[3], -1.0f);
    EXPECT_EQ(e[2], 1.0f);
    EXPECT_EQ(e[3], -1.0f);
    EXPECT_EQ(t[0], 0.0f);
    EXPECT_EQ(e[0], 0.0f);
  }
}

// A reshape taken apart again by a transpose (a matmul's [128, 768] rows as
// 12 heads of 64, the heads outermost): the index of each head's 64 columns
// divides and takes the remainder by 768, which simplify folds since no lane
// crosses a multiple of 768, so the loads are whole vectors, not gathers. A
// run that crosses a multiple (32 lanes from a multiple of 16, mod 24)
// stays lane by lane. Both read what the scalar formula reads.
TEST(TirCodegen, ReshapedIndexTakenApartAgainReadsWholeVectors) {
  const char* text = R"(
prim @heads(%B: Buffer[(6144), float32], %C: Buffer[(768), float32], %D: Buffer[(6144), float32], %E: Buffer[(256), float32]) {
  for %i from 0 extent 8 {
    for %h from 0 extent 12 {
      for %d from 0 extent 64 vectorized {
        %D[%h * 512 + %i * 64 + %d] = %B[((%i * 12 + %h) * 64 + %d) / 768 * 768 + mod((%i * 12 + %h) * 64 + %d, 768)] + %C[mod((%i * 12 + %h) * 64 + %d, 768)]
      }
    }
    for %d from 0 extent 32 vectorized {
      %E[%i * 32 + %d] = %C[mod(%i * 16 + %d, 24)]
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_EQ(ll.find("gather.v64"), std::string::npos) << ll;
  std::vector<float> b(6144), c(768), d(6144, -1.0f), e(256, -1.0f);
  for (size_t k = 0; k < b.size(); ++k) b[k] = float(k) * 0.25f;
  for (size_t k = 0; k < c.size(); ++k) c[k] = 1000.0f + float(k);
  auto jit = JitModule::create(fs);
  jit->run("heads", {b.data(), c.data(), d.data(), e.data()});
  for (int i = 0; i < 8; ++i) {
    for (int h = 0; h < 12; ++h)
      for (int l = 0; l < 64; ++l) {
        const int x = (i * 12 + h) * 64 + l;
        ASSERT_EQ(d[size_t(h * 512 + i * 64 + l)], b[size_t(x / 768 * 768 + x % 768)] + c[size_t(x % 768)])
            << "row " << i << " head " << h << " lane " << l;
      }
    for (int l = 0; l < 32; ++l)
      ASSERT_EQ(e[size_t(i * 32 + l)], c[size_t((i * 16 + l) % 24)]) << "row " << i << " lane " << l;
  }
}

// The same with a stride (a strided conv's phases: every other column of a
// padded row, clamp_index of j * 2 + q - 1): a run inside the clamp is one
// load of its span (two whole vectors) and a shuffle, a run at an edge a
// masked load of the span, never a load per lane; every run, at the edges
// too, reads what a lane-by-lane clamp reads.
TEST(TirCodegen, StridedClampedRunLoadsMatchLaneByLaneClamp) {
  const char* text = R"(
prim @strided(%src: Buffer[(120), float32], %dst: Buffer[(320), float32]) {
  for %b from 0 extent 10 {
    for %q from 0 extent 2 {
      for %i from 0 extent 16 vectorized {
        %dst[%b * 32 + %q * 16 + %i] = %src[20 + min(max((%b * 5 - 12 + %i) * 2 + %q - 1, 0), 79)]
      }
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_NE(ll.find("load <32 x float>"), std::string::npos) << ll;
  EXPECT_NE(ll.find("masked.load.v32f32"), std::string::npos) << ll;
  // The two end elements are the only scalar loads.
  EXPECT_EQ(testing::count_of(ll, "load float,"), 2) << ll;
  std::vector<float> src(120), dst(320, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.5f + 1.0f;
  JitModule::create(fs)->run("strided", {src.data(), dst.data()});
  for (int b = 0; b < 10; ++b)
    for (int q = 0; q < 2; ++q)
      for (int i = 0; i < 16; ++i)
        ASSERT_EQ(dst[size_t(b * 32 + q * 16 + i)],
                  src[size_t(20 + std::clamp((b * 5 - 12 + i) * 2 + q - 1, 0, 79))])
            << "run " << b << " phase " << q << " lane " << i;
}

bool host_has_avx512() {
  const std::vector<std::string> host = target_cpu_features(host_target());
  return std::find(host.begin(), host.end(), "avx512f") != host.end();
}

// Code for x86-64-v3 (AVX2 and 16 registers) when `avx2`, else for this machine.
CodegenOptions avx2_or_host(bool avx2) {
  CodegenOptions o;
  if (avx2) o.target = parse_target("llvm -mcpu=x86-64-v3");
  return o;
}

// A padded window (3 rows of 40 padded to 5 rows of 48, one column on the
// left): a row test, the same for every lane, and a column test per lane,
// around a clamped load of the row. Without AVX-512's mask registers,
// codegen branches on the row test (the block select_lanes); with them it
// combines the masks. Either way rows and columns outside give 0, the rest
// the source, lane by lane.
TEST(TirCodegen, SelectOnARowAndAColumnTestMatchesLaneByLane) {
  const char* text = R"(
prim @window(%src: Buffer[(120), float32], %dst: Buffer[(240), float32]) {
  for %r from 0 extent 5 {
    for %b from 0 extent 3 {
      for %c from 0 extent 16 vectorized {
        %dst[%r * 48 + %b * 16 + %c] = select(and(and(%r >= 1, %r < 4), and(%b * 16 + %c >= 1, %b * 16 + %c <= 40)), %src[min(max(%r - 1, 0), 2) * 40 + min(max(%b * 16 + %c - 1, 0), 39)], 0.0)
      }
    }
  }
  return 0
}
)";
  const bool host_avx512 = host_has_avx512();
  // AVX2 code with 16 lanes (two registers: the costly masks), and this
  // machine's code with its own vector width.
  for (bool avx2 : {true, false}) {
    CodegenOptions codegen_options = avx2_or_host(avx2);
    tir::TirPassOptions options = tir_pass_options(codegen_options.target);
    if (avx2) options.vector_bytes = 64;
    std::vector<tir::PrimFunc> fs = tir::parse_prim_functions(text, "test.kir");
    for (auto& f : fs) f = tir::lower_for_build(f, options);
    std::string ll = emit_text(fs, EmitKind::LLVMIR, codegen_options);
    EXPECT_EQ(ll.find("select_lanes") != std::string::npos, avx2 || !host_avx512) << ll;
    std::vector<float> src(120), dst(240, -1.0f);
    for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) + 1.0f;
    JitModule::create(fs, codegen_options)->run("window", {src.data(), dst.data()});
    for (int r = 0; r < 5; ++r)
      for (int col = 0; col < 48; ++col) {
        const bool inside = r >= 1 && r < 4 && col >= 1 && col <= 40;
        ASSERT_EQ(dst[size_t(r * 48 + col)], inside ? src[size_t((r - 1) * 40 + col - 1)] : 0.0f)
            << "row " << r << " column " << col;
      }
  }
}

// A vector select on one scalar test inside arithmetic (a strided
// depthwise conv's weight, zeroed where its tap reads the padding): AVX2
// code selects on the scalar (select i1 ... <8 x float>), not on a splat of
// i1 lanes, which costs a broadcast, a widening and two shifts; AVX-512
// code keeps the splat (a mask register). The values either way: the
// product where the row is inside, 0 where it is not.
TEST(TirCodegen, AScalarTestSelectsAVectorOnTheScalarWithAvx2) {
  const char* text = R"(
prim @tap(%x: Buffer[(48), float32], %w: Buffer[(8), float32], %inside: Buffer[(6), int32], %y: Buffer[(48), float32]) {
  for %r from 0 extent 6 {
    for %c from 0 extent 8 vectorized {
      %y[%r * 8 + %c] = %x[%r * 8 + %c] * select(%inside[%r] > 0, %w[%c], 0.0)
    }
  }
  return 0
}
)";
  const bool host_avx512 = host_has_avx512();
  for (bool avx2 : {true, false}) {
    CodegenOptions codegen_options = avx2_or_host(avx2);
    tir::TirPassOptions options = tir_pass_options(codegen_options.target);
    options.vector_bytes = 32;
    std::vector<tir::PrimFunc> fs = tir::parse_prim_functions(text, "test.kir");
    for (auto& f : fs) f = tir::lower_for_build(f, options);
    codegen_options.opt_level = 0;
    std::string ll = emit_text(fs, EmitKind::LLVMIR, codegen_options);
    const bool on_scalar = ll.find("select i1") != std::string::npos;
    EXPECT_EQ(on_scalar, avx2 || !host_avx512) << ll;
    EXPECT_EQ(ll.find("select <8 x i1>") != std::string::npos, !on_scalar) << ll;
    codegen_options.opt_level = 2;
    std::vector<float> x(48), w(8), y(48, -1.0f);
    std::vector<int32_t> inside = {0, 1, 1, 0, 1, 0};
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) + 1.0f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f * float(i) - 1.0f;
    JitModule::create(fs, codegen_options)->run("tap", {x.data(), w.data(), inside.data(), y.data()});
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 8; ++c)
        ASSERT_EQ(y[size_t(r * 8 + c)], inside[size_t(r)] ? x[size_t(r * 8 + c)] * w[size_t(c)] : 0.0f)
            << "row " << r << " lane " << c;
  }
}

// Every other or every third element of a run, unclamped (a strided
// conv's interior columns): two loads of half of lanes * stride elements,
// the first from the first lane's element and the second up to the last
// lane's (the span, one element short of whole registers, made LLVM build
// the last register element by element), then one shuffle; never a load
// past the last lane's element, and the lanes right for every start.
TEST(TirCodegen, StridedLaneLoadsReadTwoWholeHalves) {
  const char* text = R"(
prim @every_other(%src: Buffer[(200), float32], %two: Buffer[(160), float32], %three: Buffer[(160), float32]) {
  for %b from 0 extent 10 {
    for %i from 0 extent 16 vectorized {
      %two[%b * 16 + %i] = %src[%b * 3 + %i * 2]
      %three[%b * 16 + %i] = %src[%b * 15 + %i * 3]
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_NE(ll.find("load <16 x float>"), std::string::npos) << ll;
  EXPECT_NE(ll.find("load <24 x float>"), std::string::npos) << ll;
  EXPECT_EQ(ll.find("load <31 x float>"), std::string::npos) << ll;
  std::vector<float> src(200), two(160), three(160);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) + 0.5f;
  JitModule::create(fs)->run("every_other", {src.data(), two.data(), three.data()});
  for (int b = 0; b < 10; ++b)
    for (int i = 0; i < 16; ++i) {
      ASSERT_EQ(two[size_t(b * 16 + i)], src[size_t(b * 3 + i * 2)]) << b << " " << i;
      ASSERT_EQ(three[size_t(b * 16 + i)], src[size_t(b * 15 + i * 3)]) << b << " " << i;
    }
}

// Lanes 8 elements apart whose column in their blocks of 8 is known (the
// unrolled channel of an unblocking copy) load the 8 blocks as rows and
// transpose them in registers: no lane is loaded alone. With the channel a
// loop variable the column is unknown and the lanes are gathered. Both are
// right.
TEST(TirCodegen, LanesAtAKnownColumnOfBlocksAreTransposedRows) {
  const char* text = R"(
prim @unblock(%src: Buffer[(512), float32], %known: Buffer[(512), float32], %unknown: Buffer[(512), float32]) {
  for %wo from 0 extent 8 {
    for %c from 0 extent 8 unrolled {
      for %wi from 0 extent 8 vectorized {
        %known[%c * 64 + %wo * 8 + %wi] = %src[(%wo * 8 + %wi) * 8 + %c]
      }
    }
    for %k from 0 extent 8 {
      for %wi from 0 extent 8 vectorized {
        %unknown[%k * 64 + %wo * 8 + %wi] = %src[(%wo * 8 + %wi) * 8 + %k]
      }
    }
  }
  return 0
}
)";
  auto fs = lowered_for(text, 32);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  // The known columns' 8 statements share one block of 8 rows and its 24
  // shuffles; the unknown column loads no rows.
  EXPECT_EQ(testing::count_of(ll, "load <8 x float>"), 8) << ll;
  EXPECT_EQ(testing::count_of(ll, "shufflevector <8 x float>"), 24) << ll;
  std::vector<float> src(512), known(512), unknown(512);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) + 0.25f;
  JitModule::create(fs)->run("unblock", {src.data(), known.data(), unknown.data()});
  for (int c = 0; c < 8; ++c)
    for (int w = 0; w < 64; ++w) {
      ASSERT_EQ(known[size_t(c * 64 + w)], src[size_t(w * 8 + c)]) << c << " " << w;
      ASSERT_EQ(unknown[size_t(c * 64 + w)], src[size_t(w * 8 + c)]) << c << " " << w;
    }
}

// A blocking copy (nn.block_channels: 16 channels of rows of 56 columns, the
// columns unrolled by 8) names each unrolled column w * 8 + k once for its
// load and its store (share-common-subexpressions), so the 8 statements of
// a block read the same 8 rows through 8 different index forms (x + k with
// the column k taken off again). They still share one load of each row and
// one transpose: 8 x 8 floats read once, not 8 times.
TEST(TirCodegen, UnrolledColumnsOfABlockingCopyShareTheirRows) {
  const char* text = R"(
prim @block(%src: Buffer[(1792), float32], %dst: Buffer[(1792), float32]) {
  for %h from 0 extent 2 {
    for %wo from 0 extent 7 {
      for %co from 0 extent 2 {
        for %w from 0 extent 8 unrolled {
          for %i from 0 extent 8 vectorized {
            %dst[%h * 896 + (%wo * 8 + %w) * 16 + %co * 8 + %i] = %src[((%co * 8 + %i) * 2 + %h) * 56 + (%wo * 8 + %w)]
          }
        }
      }
    }
  }
  return 0
}
)";
  auto fs = lowered_for(text, 32);
  EXPECT_NE(tir::print_prim_func(*fs[0]).find("let %cse2 = %wo * 8 + 1"), std::string::npos)
      << "the index forms this test is about: " << tir::print_prim_func(*fs[0]);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_EQ(testing::count_of(ll, "load <8 x float>"), 8) << ll;
  std::vector<float> src(1792), dst(1792);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) + 0.5f;
  JitModule::create(fs)->run("block", {src.data(), dst.data()});
  for (int c = 0; c < 16; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 56; ++w)
        ASSERT_EQ(dst[size_t(h * 896 + w * 16 + c)], src[size_t((c * 2 + h) * 56 + w)])
            << c << " " << h << " " << w;
}

// erf and tanh of float32 vectors are computed inline (no call per lane)
// and match the C library across their range: within 2e-7 of the value
// and 4e-7 of it relatively, near 0 (the Taylor series), at the switch to
// the exponential form (erf 1, tanh 0.5) and in the tails; +-0 keep their
// sign, +-inf give +-1 and NaN stays NaN.
TEST(TirCodegen, ErfAndTanhOfVectorsAreInlineAndMatchTheCLibrary) {
  const char* text = R"(
prim @erf_tanh(%x: Buffer[(4096), float32], %e: Buffer[(4096), float32], %t: Buffer[(4096), float32]) {
  for %i from 0 extent 4096 vectorized {
    %e[%i] = erf(%x[%i])
    %t[%i] = tanh(%x[%i])
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_EQ(ll.find("@erff"), std::string::npos) << ll;
  EXPECT_EQ(ll.find("@tanhf"), std::string::npos) << ll;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x(4096), e(4096), t(4096);
  for (size_t i = 0; i < 4000; ++i) x[i] = (float(i) - 2000.0f) / 400.0f;  // -5 to 5 in steps of 1/400
  const float special[] = {0.0f, -0.0f,   1e-30f, -1e-20f, 1e-4f,  0.4999f, 0.5f, 0.5001f, 0.9999f,
                           1.0f, 1.0001f, -3.9f,  9.0f,    -20.0f, 100.0f,  inf,  -inf,    nan};
  for (size_t i = 0; i < std::size(special); ++i) x[4000 + i] = special[i];
  JitModule::create(fs)->run("erf_tanh", {x.data(), e.data(), t.data()});
  for (size_t i = 0; i < 4000 + std::size(special); ++i) {
    const float want_e = std::erf(x[i]), want_t = std::tanh(x[i]);
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(e[i]) && std::isnan(t[i])) << e[i] << " " << t[i];
      continue;
    }
    EXPECT_LE(std::abs(e[i] - want_e), 2e-7f + 4e-7f * std::abs(want_e)) << "erf(" << x[i] << ") = " << e[i];
    EXPECT_LE(std::abs(t[i] - want_t), 2e-7f + 4e-7f * std::abs(want_t)) << "tanh(" << x[i] << ") = " << t[i];
    if (std::abs(x[i]) < 1e-3f) {
      EXPECT_LE(std::abs(e[i] - want_e), 4e-7f * std::abs(want_e)) << "erf(" << x[i] << ") = " << e[i];
      EXPECT_LE(std::abs(t[i] - want_t), 4e-7f * std::abs(want_t)) << "tanh(" << x[i] << ") = " << t[i];
      EXPECT_EQ(std::signbit(e[i]), std::signbit(x[i])) << x[i];
      EXPECT_EQ(std::signbit(t[i]), std::signbit(x[i])) << x[i];
    }
  }
}

// A NaN-keeping min against a constant, select(or(ne(x, x), x < 1.0), x,
// 1.0) (clip, hard_swish), is one unordered comparison (one vminps); against
// a value that may be NaN itself it stays two comparisons, since "x is NaN
// or x > y" must not hold for a NaN y. Both keep NaN as the reference does.
TEST(TirCodegen, NanKeepingMinAgainstAConstantIsOneUnorderedComparison) {
  const char* text = R"(
prim @nan_min(%src: Buffer[(64), float32], %lim: Buffer[(64), float32], %lo: Buffer[(64), float32], %hi: Buffer[(64), float32]) {
  for %i from 0 extent 64 vectorized {
    %lo[%i] = select(or(ne(%src[%i], %src[%i]), %src[%i] < 1.0), %src[%i], 1.0)
    %hi[%i] = select(or(ne(%src[%i], %src[%i]), %src[%i] > %lim[%i]), %src[%i], %lim[%i])
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  // One NaN test (an fcmp uno) is left, the second statement's.
  EXPECT_EQ(testing::count_of(ll, "fcmp uno"), 1) << ll;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> src(64), lim(64), lo(64), hi(64);
  for (size_t i = 0; i < 64; ++i) {
    src[i] = i % 7 == 0 ? nan : i % 11 == 0 ? -inf : float(int(i) - 32) * 0.1f;
    lim[i] = i % 5 == 0 ? nan : 0.5f;
  }
  JitModule::create(fs)->run("nan_min", {src.data(), lim.data(), lo.data(), hi.data()});
  for (size_t i = 0; i < 64; ++i) {
    const float x = src[i], want_lo = std::isnan(x) || x < 1.0f ? x : 1.0f;
    const float want_hi = std::isnan(x) || x > lim[i] ? x : lim[i];
    EXPECT_TRUE(std::isnan(want_lo) ? std::isnan(lo[i]) : lo[i] == want_lo) << i << ": " << lo[i];
    EXPECT_TRUE(std::isnan(want_hi) ? std::isnan(hi[i]) : hi[i] == want_hi) << i << ": " << hi[i];
  }
}

// A register tile's rows of a weight matrix, (t * 12 + j) * 30 + k for
// rows j, the tile t a parallel task's (so LLVM knows nothing of its
// range): the rows share one pointer, each at its constant offset (row 11
// at 1320 bytes), rather than holding a register each (12 rows of AVX2
// code spilled them). The sums are those of the formula.
TEST(TirCodegen, TileRowsShareOnePointer) {
  const char* text = R"(
prim @rows(%w: Buffer[(720), float32], %x: Buffer[(30), float32], %y: Buffer[(24), float32]) {
  for %t from 0 extent 2 parallel {
    for %k from 0 extent 30 {
      for %j from 0 extent 12 unrolled {
        %y[%t * 12 + %j] = %y[%t * 12 + %j] + %w[(%t * 12 + %j) * 30 + %k] * %x[%k]
      }
    }
  }
  return 0
}
)";
  CodegenOptions codegen_options;
  codegen_options.target = parse_target("llvm -mcpu=x86-64-v3");
  std::vector<tir::PrimFunc> fs = tir::parse_prim_functions(text, "test.kir");
  for (auto& f : fs) f = tir::lower_for_build(f, tir_pass_options(codegen_options.target));
  const std::string asm_text = emit_text(fs, EmitKind::Assembly, codegen_options);
  EXPECT_NE(asm_text.find("1320(%"), std::string::npos) << asm_text;
  std::vector<float> w(720), x(30), y(24, 0.0f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 5) - 2);
  JitModule::create(fs, codegen_options)->run("rows", {w.data(), x.data(), y.data()});
  for (int r = 0; r < 24; ++r) {
    float want = 0;
    for (int k = 0; k < 30; ++k) want += w[size_t(r * 30 + k)] * x[size_t(k)];
    EXPECT_EQ(y[size_t(r)], want) << "row " << r;
  }
}

// A vector load at ramp(s, 1, lanes) / c with s a non-negative multiple of
// c (a nearest upsampling's source column: vectorize-loops splits it into s
// / c and constant lanes) is one load of the span and a shuffle; the same
// with a base that is not such a multiple stays a lane-by-lane load. Both
// read what the scalar formula reads.
TEST(TirCodegen, DividedRampLoadsOneSpan) {
  const char* text = R"(
prim @upsample(%src: Buffer[(96), float32], %dst: Buffer[(160), float32], %odd: Buffer[(160), float32]) {
  for %b from 0 extent 10 {
    for %i from 0 extent 16 vectorized {
      %dst[%b * 16 + %i] = %src[(%b * 16 + %i) / 2] + %src[80 + mod(%b * 16 + %i, 4)]
    }
  }
  for %b from 0 extent 10 {
    for %i from 0 extent 16 vectorized {
      %odd[%b * 16 + %i] = %src[(%b * 16 + %i + 3) / 2]
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_NE(ll.find("shufflevector"), std::string::npos) << ll;
  std::vector<float> src(96), dst(160, -1.0f), odd(160, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.25f + 1.0f;
  auto jit = JitModule::create(fs);
  jit->run("upsample", {src.data(), dst.data(), odd.data()});
  for (size_t j = 0; j < 160; ++j) {
    ASSERT_EQ(dst[j], src[j / 2] + src[80 + j % 4]) << "column " << j;
    ASSERT_EQ(odd[j], src[(j + 3) / 2]) << "column " << j;
  }
}

// A run clamped on one side only (the simplifier drops max(i, 0) of an
// index it knows is non-negative: a product's right operand padded to
// whole tiles) is read as a run too, not lane by lane. (The loop is
// parallel: partition-loops would cut a serial one at the clamps and leave
// no run at an edge.)
TEST(TirCodegen, RunClampedOnOneSideLoadsAsARun) {
  const char* text = R"(
prim @one_side(%src: Buffer[(150), float32], %low: Buffer[(160), float32], %high: Buffer[(160), float32]) {
  for %b from 0 extent 10 parallel {
    for %i from 0 extent 16 vectorized {
      %low[%b * 16 + %i] = %src[min(%b * 16 + %i, 149)]
      %high[%b * 16 + %i] = %src[max(%b * 16 + %i - 10, 0)]
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_NE(ll.find("llvm.masked.load"), std::string::npos) << ll;
  std::vector<float> src(150), low(160, -1.0f), high(160, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.5f - 3.0f;
  auto jit = JitModule::create(fs);
  jit->run("one_side", {src.data(), low.data(), high.data()});
  for (int j = 0; j < 160; ++j) {
    ASSERT_EQ(low[size_t(j)], src[size_t(std::min(j, 149))]) << "column " << j;
    ASSERT_EQ(high[size_t(j)], src[size_t(std::max(j - 10, 0))]) << "column " << j;
  }
}

// The glue around a kernel (f__packed, which unpacks its arguments, and a
// parallel loop's task, which unpacks the loop's captures) is compiled
// without optimisation (optnone: far less of LLVM's time per function),
// the kernel and the loop's body with it; called through the glue, the
// kernel computes what it should.
TEST(TirCodegen, GlueFunctionsAreNotOptimisedAndWork) {
  const char* text = R"(
prim @scaled(%src: Buffer[(160), float32], %dst: Buffer[(160), float32], %k: float32) {
  for %b from 0 extent 10 parallel {
    for %i from 0 extent 16 vectorized {
      %dst[%b * 16 + %i] = %src[%b * 16 + %i] * %k
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  const std::string ll = emit_text(fs, EmitKind::LLVMIR);
  // The attribute group a function's definition names, by the function's name.
  auto attributes_of = [&](const std::string& name) -> std::string {
    const size_t def = ll.find("@" + name + "(");
    if (def == std::string::npos || ll.rfind("define", def) == std::string::npos) return "no definition";
    const size_t line_end = ll.find('\n', def);
    const size_t hash = ll.rfind('#', line_end);
    if (hash == std::string::npos || hash < def) return "";
    const std::string group = ll.substr(hash, ll.find(' ', hash) - hash);
    const size_t at = ll.find("attributes " + group + " = {");
    return at == std::string::npos ? "" : ll.substr(at, ll.find('}', at) - at);
  };
  EXPECT_NE(attributes_of("scaled__packed").find("optnone"), std::string::npos) << ll;
  EXPECT_NE(attributes_of("scaled__parallel_0").find("optnone"), std::string::npos) << ll;
  EXPECT_EQ(attributes_of("scaled").find("optnone"), std::string::npos) << ll;
  EXPECT_EQ(attributes_of("scaled__parallel_0_body").find("optnone"), std::string::npos) << ll;
  std::vector<float> src(160), dst(160, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.25f - 7.0f;
  float k = 1.5f;
  JitModule::create(fs)->run("scaled", {src.data(), dst.data(), &k});
  for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(dst[i], src[i] * 1.5f) << "element " << i;
}

// A clamped run that several loads read (two rows of a padded input, as
// Winograd's input transform combines) is named by a let
// (share-common-subexpressions); each load still reads it as a run, not
// lane by lane.
TEST(TirCodegen, ClampedRunBoundByALetLoadsAsARun) {
  const char* text = R"(
prim @shared_run(%src: Buffer[(128), float32], %dst: Buffer[(160), float32]) {
  for %b from 0 extent 10 parallel {
    for %i from 0 extent 16 vectorized {
      %dst[%b * 16 + %i] = %src[min(max(%b * 16 + %i - 5, 0), 63)] - %src[64 + min(max(%b * 16 + %i - 5, 0), 63)]
    }
  }
  return 0
}
)";
  auto fs = lowered_for_avx512(text);
  const std::string tir_text = tir::print_prim_func(*fs[0]);
  ASSERT_NE(tir_text.find("let %cse"), std::string::npos) << "the run is bound by a let\n" << tir_text;
  std::string ll = emit_text(fs, EmitKind::LLVMIR);
  EXPECT_NE(ll.find("llvm.masked.load"), std::string::npos) << ll;
  EXPECT_EQ(ll.find("gather"), std::string::npos) << ll;
  std::vector<float> src(128), dst(160, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i * i % 97) * 0.25f;
  auto jit = JitModule::create(fs);
  jit->run("shared_run", {src.data(), dst.data()});
  for (int j = 0; j < 160; ++j) {
    const size_t k = size_t(std::clamp(j - 5, 0, 63));
    ASSERT_EQ(dst[size_t(j)], src[k] - src[64 + k]) << "column " << j;
  }
}

}  // namespace
}  // namespace kiln::codegen
