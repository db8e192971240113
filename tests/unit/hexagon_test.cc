// The Hexagon target, end to end: kernels compiled for hexagon-v68 with HVX,
// linked with kiln's Hexagon runtime and RUN under qemu-hexagon-static
// (installed by scripts/setup.sh; these tests fail, not skip, without it),
// compared with the host build of the same kernel and with values computed
// here. Also the target's capacity check, the link check before the linker,
// and the runtime's structured errors coming back from the Hexagon side.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "codegen/prim_runner.h"
#include "codegen/target.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"
#include "te_kernels.h"
#include "test_util.h"
#include "tir/te/te.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {
namespace {

using codegen::PrimRunOptions;
using codegen::PrimRunResult;

using testing::error_of;

std::string scratch_dir(const std::string& name) {
  auto dir = std::filesystem::path(KILN_BINARY_DIR) / "hexagon-test" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

PrimRunResult run_on(const std::string& target, const PrimFunc& f,
                     const std::map<std::string, Tensor>& inputs) {
  PrimRunOptions o;
  o.target = codegen::parse_target(target);
  return codegen::run_prim_function(f, inputs, o);
}

PrimFunc vtcm_add(DataType t) { return testing::forum_vtcm_add(t); }

Tensor int8_ramp(int64_t n, int mul, int add) {
  Tensor t = Tensor::empty({n}, DType::Int8);
  for (int64_t i = 0; i < n; ++i) t.data<int8_t>()[i] = int8_t((i * mul + add) % 256 - 128);
  return t;
}

std::string hexagon_asm(const PrimFunc& f, const std::string& target = "hexagon-v68") {
  codegen::CodegenOptions o;
  o.target = codegen::parse_target(target);
  TirPassOptions p;
  p.scratchpad_capacity = o.target.vtcm_capacity;
  return codegen::emit_text({lower_for_build(f, p)}, codegen::EmitKind::Assembly, o);
}

TEST(Hexagon, TargetsCarryTheirVtcmCapacity) {
  EXPECT_EQ(codegen::parse_target("hexagon-v66").vtcm_capacity, 256u << 10);
  EXPECT_EQ(codegen::parse_target("hexagon-v68").vtcm_capacity, 4u << 20);
  EXPECT_EQ(codegen::parse_target("hexagon-v69").vtcm_capacity, 8u << 20);
  EXPECT_EQ(codegen::parse_target("hexagon-v73").vtcm_capacity, 8u << 20);
  EXPECT_EQ(codegen::parse_target("hexagon-v73").cpu, "hexagonv73");
  EXPECT_NE(error_of([] { codegen::parse_target("hexagon-v60"); }).find("known: llvm, hexagon-v66"),
            std::string::npos);
}

// LLVM's loop strength reduction runs for Hexagon code and not for host
// code (llvm_pipeline.cc, use_loop_strength_reduction: a process-wide
// option each codegen entry point sets), whichever compiled before: read
// off LLVM's pass timing reports. Each timed compile runs in a child
// process of its own, since LLVM keys its pass timers by the pass object's
// address, and a later report in the same process can carry the name of an
// earlier run's pass that had the same address.
TEST(Hexagon, LoopStrengthReductionIsForHexagonCodeOnly) {
  // A loop too long for LLVM to unroll away, so loop passes have a loop.
  const char* text = R"(
prim @sum(%A: Buffer[(1048576), int8], %B: Buffer[(1048576), int8], %C: Buffer[(1048576), int8]) {
  for %i from 0 extent 1048576 {
    %C[%i] = %A[%i] + %B[%i]
  }
  return 0
}
)";
  auto compile = [&](const std::string& target, std::string* times) {
    codegen::CodegenOptions o;
    o.target = codegen::parse_target(target);
    o.llvm_pass_times = times;
    PrimFunc f =
        lower_for_build(parse_prim_functions(text, "sum.kir")[0], codegen::tir_pass_options(o.target));
    codegen::emit_text({f}, codegen::EmitKind::Assembly, o);
  };
  const std::string report = std::filesystem::temp_directory_path() / "kiln_lsr_test_report.txt";
  // `before` compiled untimed here, then `target` timed in a child.
  auto timed_after = [&](const std::string& before, const std::string& target) {
    compile(before, nullptr);
    std::filesystem::remove(report);
    const pid_t child = fork();
    if (child == 0) {
      std::string times;
      compile(target, &times);
      std::ofstream(report) << times;
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::ifstream in(report);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string hexagon = timed_after("llvm", "hexagon-v68");
  const std::string host = timed_after("hexagon-v68", "llvm");
  EXPECT_NE(hexagon.find("Loop Strength Reduction"), std::string::npos) << hexagon;
  EXPECT_NE(host.find("X86 DAG->DAG Instruction Selection"), std::string::npos) << host;
  EXPECT_EQ(host.find("Loop Strength Reduction"), std::string::npos) << host;
}

TEST(Hexagon, Int8AddCompilesToHvx) {
  std::string s = hexagon_asm(vtcm_add(DataType::int_(8)));
  // 128-byte vector loads and a byte-lane vector add, not a scalar loop.
  EXPECT_NE(s.find("= vmem("), std::string::npos) << s;
  EXPECT_NE(s.find(".b = vadd(v"), std::string::npos) << s;
  EXPECT_NE(s.find("vmem(r"), std::string::npos) << s;
  // The scratchpad calls are made from the Hexagon code itself.
  EXPECT_NE(s.find("call HexagonBackendAllocateVTCM"), std::string::npos) << s;
  EXPECT_NE(s.find("call HexagonBackendFreeVTCM"), std::string::npos) << s;
}

TEST(Hexagon, Int8AddRunsAndMatchesHost) {
  PrimFunc f = vtcm_add(DataType::int_(8));
  std::map<std::string, Tensor> in = {{"A", int8_ramp(2048, 7, 3)}, {"B", int8_ramp(2048, 13, 100)}};
  PrimRunResult hx = run_on("hexagon-v68", f, in);
  PrimRunResult host = run_on("llvm", f, in);
  ASSERT_EQ(hx.outputs.size(), 1u);
  ASSERT_EQ(hx.outputs[0].first, "C");
  const Tensor& c = hx.outputs[0].second;
  for (int64_t i = 0; i < 2048; ++i)
    ASSERT_EQ(c.data<int8_t>()[i], int8_t(in["A"].data<int8_t>()[i] + in["B"].data<int8_t>()[i])) << i;
  EXPECT_TRUE(c.bitwise_equal(host.outputs[0].second));
  // The VTCM figures come from the Hexagon runtime's pool: two 2048-byte buffers.
  EXPECT_NE(hx.vtcm_pool.find("capacity 4194304 B"), std::string::npos) << hx.vtcm_pool;
  EXPECT_NE(hx.vtcm_pool.find("high-water 4096 B"), std::string::npos) << hx.vtcm_pool;
  EXPECT_NE(hx.vtcm_pool.find("allocations 2 (0 failed, 0 live)"), std::string::npos) << hx.vtcm_pool;
  EXPECT_EQ(hx.vtcm_pool, host.vtcm_pool) << "the same pool code on both sides";
}

// Row sums of an int32 matrix, the rows vectorized: 32 int32 lanes per HVX register.
PrimFunc int32_row_sum() {
  te::Tensor A = te::placeholder({96, 128}, DataType::int32(), "A");
  te::IterVar k = te::reduce_axis(96, "k");
  te::Tensor S = te::compute(
      {128},
      [&](const te::Axes& i) -> te::Reduction {
        return te::sum((*A)({k.var, i[0]}), {k});
      },
      "S");
  te::Schedule s({S});
  s[S].reorder({k.var, s[S].leaf(0)});
  s[S].vectorize(s[S].leaf(1));
  return te::lower(s, {A, S}, "column_sum");
}

TEST(Hexagon, Int32ReductionUsesHvxAndMatchesHost) {
  PrimFunc f = int32_row_sum();
  std::string s = hexagon_asm(f);
  EXPECT_NE(s.find(".w = vadd(v"), std::string::npos) << s;
  Tensor a = Tensor::empty({96, 128}, DType::Int32);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.data<int32_t>()[i] = int32_t((i * 2654435761u) % 2000001) - 1000000;
  PrimRunResult hx = run_on("hexagon-v68", f, {{"A", a}});
  PrimRunResult host = run_on("llvm", f, {{"A", a}});
  const Tensor& got = hx.outputs.at(0).second;
  for (int64_t j = 0; j < 128; ++j) {
    int64_t want = 0;
    for (int64_t r = 0; r < 96; ++r) want += a.data<int32_t>()[r * 128 + j];
    ASSERT_EQ(got.data<int32_t>()[j], int32_t(want)) << j;
  }
  EXPECT_TRUE(got.bitwise_equal(host.outputs.at(0).second));
}

// A whole-array int32 sum and an int16 add, written as tensor IR.
PrimFunc prim_from_text(const std::string& text) {
  Module m = parse_module(text, "hexagon_test.kir");
  return m.prim_functions.at(0);
}

const char* kTotal = R"(prim @total(%A: Buffer[(4096), int32], %S: Buffer[(1), int32]) {
  %S[0] = 0
  for %k from 0 extent 4096 vectorized {
    %S[0] = %S[0] + %A[%k]
  }
  return 0
}
)";

TEST(Hexagon, WholeArrayInt32SumUsesHvxAndIsRight) {
  PrimFunc f = prim_from_text(kTotal);
  std::string s = hexagon_asm(f);
  EXPECT_NE(s.find(".w = vadd(v"), std::string::npos) << s;
  Tensor a = Tensor::empty({4096}, DType::Int32);
  int64_t want = 0;
  for (int64_t i = 0; i < 4096; ++i) {
    a.data<int32_t>()[i] = int32_t((i * 7919) % 100003) - 50000;
    want += a.data<int32_t>()[i];
  }
  PrimRunResult hx = run_on("hexagon-v68", f, {{"A", a}});
  EXPECT_EQ(hx.outputs.at(0).second.data<int32_t>()[0], int32_t(want));
  EXPECT_TRUE(hx.outputs.at(0).second.bitwise_equal(run_on("llvm", f, {{"A", a}}).outputs.at(0).second));
}

TEST(Hexagon, Int16AddCompilesToHvx) {
  // kiln's tensors have no int16, so this one is checked in the assembly only.
  PrimFunc f = prim_from_text(
      R"(prim @add16(%A: Buffer[(1024), int16], %B: Buffer[(1024), int16], %C: Buffer[(1024), int16]) {
  for %i from 0 extent 1024 vectorized {
    %C[%i] = %A[%i] + %B[%i]
  }
  return 0
}
)");
  std::string s = hexagon_asm(f);
  EXPECT_NE(s.find(".h = vadd(v"), std::string::npos) << s;
  EXPECT_NE(s.find("vmem("), std::string::npos) << s;
}

// A scalar float32 kernel (QEMU has no HVX floating point; kiln emits none):
// multiply-add, a division, a square root and a max, against the host.
PrimFunc float32_scalar() {
  te::Tensor A = te::placeholder({256}, DataType::float32(), "A");
  te::Tensor B = te::placeholder({256}, DataType::float32(), "B");
  te::Tensor C = te::compute(
      {256},
      [&](const te::Axes& i) {
        Expr a = (*A)(i), b = (*B)(i);
        Expr num = add(mul(a, b), float_imm(0.5f, DataType::float32()));
        Expr den = add(call_intrinsic(Intrinsic::Abs, {b}), float_imm(1.0f, DataType::float32()));
        return tir::max(div(num, den),
                        call_intrinsic(Intrinsic::Sqrt, {call_intrinsic(Intrinsic::Abs, {a})}));
      },
      "C");
  te::Schedule s({C});
  return te::lower(s, {A, B, C}, "scalar_f32");
}

TEST(Hexagon, ScalarFloat32MatchesHost) {
  PrimFunc f = float32_scalar();
  std::string s = hexagon_asm(f);
  EXPECT_EQ(s.find(".qf32"), std::string::npos) << "no HVX floating point";
  EXPECT_EQ(s.find(".sf = v"), std::string::npos) << "no HVX floating point";
  Tensor a = Tensor::empty({256}, DType::Float32), b = Tensor::empty({256}, DType::Float32);
  for (int64_t i = 0; i < 256; ++i) {
    a.data<float>()[i] = float(std::sin(double(i)) * 37.0);
    b.data<float>()[i] = float(std::cos(double(i) * 0.7) * 3.0);
  }
  PrimRunResult hx = run_on("hexagon-v68", f, {{"A", a}, {"B", b}});
  PrimRunResult host = run_on("llvm", f, {{"A", a}, {"B", b}});
  const float* got = hx.outputs.at(0).second.data<float>();
  const float* ref = host.outputs.at(0).second.data<float>();
  for (int64_t i = 0; i < 256; ++i) {
    float x = a.data<float>()[i], y = b.data<float>()[i];
    float want = std::max((x * y + 0.5f) / (std::fabs(y) + 1.0f), std::sqrt(std::fabs(x)));
    EXPECT_EQ(ref[i], want) << i;
    // IEEE single on both sides; one ulp of slack for Hexagon's division sequence.
    EXPECT_NEAR(got[i], ref[i], std::fabs(ref[i]) * 1.2e-7f) << i;
  }
}

// 512 KiB of VTCM: fits v68 (4 MiB), not v66 (256 KiB).
PrimFunc big_vtcm_copy() {
  te::Tensor A = te::placeholder({512 * 1024}, DataType::int_(8), "A");
  te::Tensor C = te::compute(
      {512 * 1024}, [&](const te::Axes& i) { return (*A)(i); }, "C");
  te::Schedule s({C});
  s.cache_read(A, "global.vtcm", {C});
  return te::lower(s, {A, C}, "big_copy");
}

TEST(Hexagon, V66CapacityErrorOnAKernelThatFitsV68) {
  PrimFunc f = big_vtcm_copy();
  EXPECT_NO_THROW(hexagon_asm(f, "hexagon-v68"));
  std::string e = error_of([&] { hexagon_asm(f, "hexagon-v66"); });
  EXPECT_NE(e.find("262144"), std::string::npos) << e;
  EXPECT_NE(e.find("A_buf"), std::string::npos) << e;
  EXPECT_NE(e.find("524288"), std::string::npos) << e;
}

PrimFunc calls_missing_extern() {
  Buffer a = make_buffer("A", DataType::float32(), {int_imm(4)});
  Stmt body = seq(
      {evaluate(call_extern(DataType::int32(), "my_missing_kernel", {a->data})), return_stmt(int_imm(0))});
  return make_prim_func("uses_missing", {buffer_param(a)}, body);
}

TEST(Hexagon, UnresolvedSymbolIsReportedBeforeTheLinker) {
  std::string dir = scratch_dir("unresolved");
  codegen::CodegenOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  std::string exe = dir + "/k.elf";
  std::string e = error_of([&] {
    codegen::emit_to_file({lower_for_build(calls_missing_extern())}, codegen::EmitKind::Executable, exe, o);
  });
  EXPECT_NE(e.find("unresolved symbol 'my_missing_kernel' called by @uses_missing"), std::string::npos) << e;
  EXPECT_NE(e.find("kiln's Hexagon runtime"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(exe));
  EXPECT_FALSE(std::filesystem::exists(exe + ".o")) << "nothing was compiled or linked";
}

TEST(Hexagon, SymbolsLlvmIntroducesAreCheckedToo) {
  // A float64 division becomes a call to __hexagon_divdf3, which kiln's
  // Hexagon runtime does not provide: the object's undefined symbols are
  // checked before ld.lld runs.
  te::Tensor A = te::placeholder({8}, DataType::float_(64), "A");
  te::Tensor C = te::compute(
      {8},
      [&](const te::Axes& i) { return div((*A)(i), add((*A)(i), float_imm(3.0, DataType::float_(64)))); },
      "C");
  te::Schedule s({C});
  PrimFunc f = te::lower(s, {A, C}, "divides_doubles");
  std::string dir = scratch_dir("llvm_symbols");
  codegen::CodegenOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  std::string e = error_of(
      [&] { codegen::emit_to_file({lower_for_build(f)}, codegen::EmitKind::Executable, dir + "/k.elf", o); });
  EXPECT_NE(e.find("link check failed at link time"), std::string::npos) << e;
  EXPECT_NE(e.find("unresolved symbol '__hexagon_divdf3' needed by the generated code"), std::string::npos)
      << e;
  EXPECT_FALSE(std::filesystem::exists(dir + "/k.elf"));
}

TEST(Hexagon, ExpMatchesTheHost) {
  // exp() is a call to the runtime's expf on Hexagon and to the C library's
  // on the host.
  te::Tensor A = te::placeholder({512}, DataType::float32(), "A");
  te::Tensor C = te::compute(
      {512}, [&](const te::Axes& i) { return call_intrinsic(Intrinsic::Exp, {(*A)(i)}); }, "C");
  te::Schedule s({C});
  PrimFunc f = te::lower(s, {A, C}, "exp_f32");
  Tensor a = Tensor::empty({512}, DType::Float32);
  for (int64_t i = 0; i < 500; ++i) a.data<float>()[i] = float(i - 250) * 0.17f + 0.013f;
  const float edges[12] = {0.0f,  -0.0f,  1.0f,    -1.0f,   88.0f, 88.7f,
                           89.0f, -87.0f, -100.0f, -104.0f, 1e-8f, -1e-8f};
  for (int64_t i = 0; i < 12; ++i) a.data<float>()[500 + i] = edges[i];
  Tensor hx = run_on("hexagon-v68", f, {{"A", a}}).outputs.at(0).second;
  const float* got = hx.data<float>();
  Tensor host = run_on("llvm", f, {{"A", a}}).outputs.at(0).second;
  for (int64_t i = 0; i < 512; ++i) {
    float want = host.data<float>()[i];
    if (std::isinf(want) || want == 0.0f) {
      EXPECT_EQ(got[i], want) << "exp(" << a.data<float>()[i] << ")";
      continue;
    }
    // Two ulps (subnormal results: an absolute bound instead).
    EXPECT_NEAR(got[i], want, std::max(std::fabs(want) * 2.4e-7f, 2e-45f))
        << "exp(" << a.data<float>()[i] << ")";
  }
}

TEST(Hexagon, ExhaustedPoolIsAStructuredErrorFromTheHexagonSide) {
  // Compiled against 4 MiB, linked with a 4 KiB pool: the run-time pool, not
  // the compile-time check, refuses the 8 KiB buffer.
  te::Tensor A = te::placeholder({8192}, DataType::int_(8), "A");
  te::Tensor C = te::compute(
      {8192}, [&](const te::Axes& i) { return (*A)(i); }, "C");
  te::Schedule s({C});
  s.cache_read(A, "local.vtcm", {C});
  PrimFunc f = lower_for_build(te::lower(s, {A, C}, "too_big"));
  std::string dir = scratch_dir("exhausted");
  codegen::CodegenOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  o.target.vtcm_capacity = 4096;
  codegen::emit_to_file({f}, codegen::EmitKind::Executable, dir + "/k.elf", o);
  write_npy(dir + "/a.npy", Tensor::zeros({8192}, DType::Int8));
  codegen::ProcessResult r =
      codegen::run_hexagon_executable(dir + "/k.elf", {"too_big", dir + "/a.npy", "-", "-", dir + "/c.npy"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("@too_big failed (code -1): buffer %A_buf (8192 bytes, scope local.vtcm): VTCM pool "
                       "cannot allocate 8192 bytes (alignment 128): 4096 bytes free, largest free block 4096 "
                       "bytes, capacity 4096 bytes"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("allocations 0 (1 failed, 0 live)"), std::string::npos) << r.out;
}

TEST(Hexagon, HarnessRejectsBadInputFiles) {
  std::string dir = scratch_dir("bad_inputs");
  codegen::CodegenOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  codegen::emit_to_file({lower_for_build(vtcm_add(DataType::int_(8)))}, codegen::EmitKind::Executable,
                        dir + "/k.elf", o);
  write_npy(dir + "/f32.npy", Tensor::zeros({2048}, DType::Float32));
  write_npy(dir + "/short.npy", Tensor::zeros({1024}, DType::Int8));
  write_npy(dir + "/ok.npy", Tensor::zeros({2048}, DType::Int8));
  std::ofstream(dir + "/junk.npy") << "this is not a numpy file at all";
  std::ofstream(dir + "/cut.npy") << std::string("\x93NUMPY\x01\x00\x76\x00{'descr': '|i1',", 26);
  auto run = [&](const std::vector<std::string>& args) {
    return codegen::run_hexagon_executable(dir + "/k.elf", args);
  };
  auto expect = [&](const std::vector<std::string>& args, const std::string& message) {
    codegen::ProcessResult r = run(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  std::string ok = dir + "/ok.npy";
  expect({"alloc_vtcm", dir + "/f32.npy", "-", ok, "-", "-", "-"},
         "(parameter %A): element type <f4 does not match the parameter's |i1");
  expect({"alloc_vtcm", dir + "/short.npy", "-", ok, "-", "-", "-"},
         "(parameter %A): shape (1024) does not match the parameter's (2048)");
  expect({"alloc_vtcm", dir + "/junk.npy", "-", ok, "-", "-", "-"}, "(parameter %A): not a .npy file");
  expect({"alloc_vtcm", dir + "/missing.npy", "-", ok, "-", "-", "-"},
         "(parameter %A): cannot open the file");
  expect({"alloc_vtcm", dir + "/cut.npy", "-", ok, "-", "-", "-"}, "(parameter %A): the file is truncated");
  expect({"alloc_vtcm", ok, "-"}, "wrong number of arguments for @alloc_vtcm");
  expect({"nope"}, "no prim function @nope");
  codegen::ProcessResult good = run({"alloc_vtcm", ok, "-", ok, "-", "-", dir + "/c.npy"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_TRUE(read_npy(dir + "/c.npy").bitwise_equal(Tensor::zeros({2048}, DType::Int8)));
}

TEST(Hexagon, SharedLibrariesAreForTheHost) {
  codegen::CodegenOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  std::string e = error_of([&] {
    codegen::emit_to_file({lower_for_build(vtcm_add(DataType::int_(8)))}, codegen::EmitKind::SharedLibrary,
                          scratch_dir("so") + "/k.so", o);
  });
  EXPECT_NE(e.find("--emit so is for the host target"), std::string::npos) << e;
  EXPECT_NE(error_of([&] {
              codegen::JitModule::create({lower_for_build(vtcm_add(DataType::int_(8)))}, o);
            }).find("the JIT runs host code only"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::tir
