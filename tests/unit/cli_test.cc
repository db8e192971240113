// The `kiln` command end to end: values of `kiln run` against independently
// computed results, and bad input (text, types, attributes, input files,
// usage) giving `error: ...` and exit code 1 (2 for bad usage), never a crash.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kiln/runtime/npy.h"

#include "cli_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::kiln_cmd;

class Cli : public testing::CliTest {
 protected:
  Cli() : CliTest("cli-test") {}
  std::string npy(const std::string& name, const Tensor& t) {
    fs::path p = dir_ / name;
    write_npy(p.string(), t);
    return p.string();
  }
  // Runs and expects a user error: exit 1, "error:" and `needle` in the output.
  void expect_error(const std::string& args, const std::string& needle) {
    Result r = kiln_cmd(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("error: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << "expected '" << needle << "' in:\n" << r.out;
  }
};

const char* kMatmulRelu =
    R"(def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 8), float32]) -> Tensor[(2, 8), float32] {
  %y = matmul(%x, %w)
  %z = nn.relu(%y)
  return %z
}
)";

TEST_F(Cli, RunMatmulReluMatchesHandComputation) {
  std::vector<float> x(8), w(32);
  for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(i) - 3.5f;
  for (int i = 0; i < 32; ++i) w[i] = static_cast<float>((i * 7) % 11) * 0.25f - 1.0f;
  std::string model = file("m.kir", kMatmulRelu);
  std::string xf = npy("x.npy", Tensor::from_floats({2, 4}, x));
  std::string wf = npy("w.npy", Tensor::from_floats({4, 8}, w));
  Result r = kiln_cmd("run " + model + " --input x=" + xf + " --input w=" + wf + " --out " +
                      (dir_ / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("output_0: (2, 8) float32"), std::string::npos) << r.out;
  Tensor got = read_npy((dir_ / "out" / "output_0.npy").string());
  ASSERT_EQ(got.shape(), (Shape{2, 8}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = 0;
      for (int k = 0; k < 4; ++k) acc += x[i * 4 + k] * w[k * 8 + j];
      EXPECT_FLOAT_EQ(got.data<float>()[i * 8 + j], acc > 0 ? acc : 0.0f) << i << "," << j;
    }
}

TEST_F(Cli, RandomInputsAreDeterministic) {
  std::string model = file("m.kir", kMatmulRelu);
  Result a = kiln_cmd("run " + model + " --random-inputs 7");
  Result b = kiln_cmd("run " + model + " --random-inputs 7");
  Result c = kiln_cmd("run " + model + " --random-inputs 8");
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST_F(Cli, TupleOutputsAreFlattenedInOrder) {
  std::string model = file(
      "t.kir", R"(def @main(%x: Tensor[(2,), float32]) -> (Tensor[(2,), float32], Tensor[(2,), float32]) {
  %a = nn.relu(%x)
  %b = negative(%x)
  return (%a, %b)
}
)");
  std::string xf = npy("x.npy", Tensor::from_floats({2}, {-1.0f, 2.0f}));
  Result r = kiln_cmd("run " + model + " --input x=" + xf + " --out " + (dir_ / "o").string());
  ASSERT_EQ(r.code, 0) << r.out;
  Tensor a = read_npy((dir_ / "o" / "output_0.npy").string());
  Tensor b = read_npy((dir_ / "o" / "output_1.npy").string());
  EXPECT_EQ(a.data<float>()[0], 0.0f);
  EXPECT_EQ(a.data<float>()[1], 2.0f);
  EXPECT_EQ(b.data<float>()[0], 1.0f);
  EXPECT_EQ(b.data<float>()[1], -2.0f);
}

TEST_F(Cli, OptPrintsFoldedModule) {
  std::string model = file("f.kir", R"(def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {
  %c = add(const(Tensor[(2,), float32], [1.0, 2.0]), const(Tensor[(2,), float32], [0.5, 0.5]))
  %d = add(%x, %c)
  return %d
}
)");
  Result r = kiln_cmd("opt " + model + " --passes fold-constants,dead-code-elimination");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[1.5, 2.5]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("%c ="), std::string::npos) << r.out;
}

TEST_F(Cli, HelpOnEverySubcommand) {
  for (const char* sub : {"", "run ", "opt ", "ops "}) {
    Result r = kiln_cmd(std::string(sub) + "--help");
    EXPECT_EQ(r.code, 0) << sub << r.out;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
  }
}

// ---- bad usage: exit 2
TEST_F(Cli, BadUsageExitsTwo) {
  EXPECT_EQ(kiln_cmd("").code, 2);
  EXPECT_EQ(kiln_cmd("frobnicate").code, 2);
  EXPECT_EQ(kiln_cmd("run").code, 2);
  EXPECT_EQ(kiln_cmd("run x.kir --no-such-flag").code, 2);
  EXPECT_EQ(kiln_cmd("run x.kir --random-inputs notanumber").code, 2);
  Result layout = kiln_cmd("compile x.kir -o x.kmod --layout nhwc");
  EXPECT_EQ(layout.code, 2);
  EXPECT_NE(layout.out.find("--layout: nhwc not in {blocked,nchw}"), std::string::npos) << layout.out;
  Result precision = kiln_cmd("compile x.kir -o x.kmod --float16-precision fast");
  EXPECT_EQ(precision.code, 2);
  EXPECT_NE(precision.out.find("--float16-precision: fast not in {per-op,excess}"), std::string::npos)
      << precision.out;
}

// ---- bad models: exit 1 with a located message
TEST_F(Cli, MissingModelFile) {
  expect_error("run " + (dir_ / "nope.kir").string() + " --random-inputs 0", "nope.kir");
}

TEST_F(Cli, SyntaxErrorHasLineAndCaret) {
  std::string m = file(
      "bad.kir",
      "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n  %y = nn.relu(%x\n  return %y\n}\n");
  Result r = kiln_cmd("run " + m + " --random-inputs 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("bad.kir:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("^"), std::string::npos) << r.out;
}

TEST_F(Cli, UnknownOp) {
  std::string m = file("u.kir",
                       "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n  %y = "
                       "nn.frobnicate(%x)\n  return %y\n}\n");
  expect_error("run " + m + " --random-inputs 0", "nn.frobnicate");
}

TEST_F(Cli, ShapeMismatchInModel) {
  std::string m = file("s.kir",
                       "def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 5), float32]) -> Tensor[(2, "
                       "5), float32] {\n  %z = matmul(%x, %y)\n  return %z\n}\n");
  expect_error("run " + m + " --random-inputs 0", "s.kir:2");
}

TEST_F(Cli, BadAttributeValue) {
  std::string m =
      file("a.kir",
           "def @main(%x: Tensor[(1, 1, 4, 4), float32], %w: Tensor[(1, 1, 3, 3), float32]) -> Tensor[(1, 1, "
           "2, 2), float32] {\n  %y = nn.conv2d(%x, %w, strides=\"wide\")\n  return %y\n}\n");
  expect_error("run " + m + " --random-inputs 0", "strides");
}

TEST_F(Cli, UnknownAttribute) {
  std::string m = file("a.kir",
                       "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n  %y = nn.relu(%x, "
                       "colour=3)\n  return %y\n}\n");
  expect_error("run " + m + " --random-inputs 0", "colour");
}

TEST_F(Cli, DeclaredReturnTypeMismatch) {
  std::string m = file("r.kir",
                       "def @main(%x: Tensor[(2,), float32]) -> Tensor[(3,), float32] {\n  %y = "
                       "nn.relu(%x)\n  return %y\n}\n");
  expect_error("run " + m + " --random-inputs 0", "return");
}

TEST_F(Cli, UndefinedVariable) {
  std::string m = file("v.kir",
                       "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n  %y = "
                       "nn.relu(%q)\n  return %y\n}\n");
  expect_error("run " + m + " --random-inputs 0", "%q");
}

TEST_F(Cli, MissingEntryFunction) {
  std::string m = file("e.kir", kMatmulRelu);
  expect_error("run " + m + " --random-inputs 0 --entry forward", "@forward");
}

TEST_F(Cli, UnknownPass) {
  std::string m = file("p.kir", kMatmulRelu);
  expect_error("opt " + m + " --passes fold-constants,make-it-fast", "make-it-fast");
}

// ---- bad input files
TEST_F(Cli, MissingInputValue) {
  std::string m = file("m.kir", kMatmulRelu);
  expect_error("run " + m, "--random-inputs");
}

TEST_F(Cli, InputForUnknownParameter) {
  std::string m = file("m.kir", kMatmulRelu);
  std::string xf = npy("x.npy", Tensor::zeros({2, 4}, DType::Float32));
  expect_error("run " + m + " --input nope=" + xf + " --random-inputs 0",
               "@main has no input of that name (inputs: %x, %w)");
}

TEST_F(Cli, InputWithWrongShape) {
  std::string m = file("m.kir", kMatmulRelu);
  std::string xf = npy("x.npy", Tensor::zeros({4, 2}, DType::Float32));
  expect_error("run " + m + " --input x=" + xf + " --random-inputs 0", "(4, 2)");
}

TEST_F(Cli, InputWithWrongDtype) {
  std::string m = file("m.kir", kMatmulRelu);
  std::string xf = npy("x.npy", Tensor::zeros({2, 4}, DType::Int32));
  expect_error("run " + m + " --input x=" + xf + " --random-inputs 0", "int32");
}

TEST_F(Cli, TruncatedNpy) {
  std::string m = file("m.kir", kMatmulRelu);
  std::string good = npy("x.npy", Tensor::zeros({2, 4}, DType::Float32));
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string bad = file("trunc.npy", bytes.substr(0, bytes.size() - 5));
  expect_error("run " + m + " --input x=" + bad + " --random-inputs 0", "trunc.npy");
}

TEST_F(Cli, NotAnNpyFile) {
  std::string m = file("m.kir", kMatmulRelu);
  std::string bad = file("junk.npy", "this is not numpy data at all");
  expect_error("run " + m + " --input x=" + bad + " --random-inputs 0", "junk.npy");
}

TEST_F(Cli, MalformedInputFlag) {
  std::string m = file("m.kir", kMatmulRelu);
  expect_error("run " + m + " --input x", "NAME=FILE");
}

TEST_F(Cli, MissingSideFile) {
  std::string m = file("w.kir",
                       "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n  %y = add(%x, "
                       "const(Tensor[(2,), float32], \"bias\"))\n  return %y\n}\n");
  expect_error("run " + m + " --random-inputs 0", "w.npz");
}

TEST_F(Cli, RandomBytesNeverCrash) {
  uint64_t s = 12345;
  for (int i = 0; i < 20; ++i) {
    std::string junk;
    for (int j = 0; j < 200; ++j) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      junk += static_cast<char>(s >> 56);
    }
    std::string m = file("junk" + std::to_string(i) + ".kir", junk);
    Result r = kiln_cmd("run " + m + " --random-inputs 0");
    EXPECT_EQ(r.code, 1) << r.out;
  }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

class CliCompile : public testing::CliTest {
 protected:
  CliCompile() : CliTest("cli-compile-test") {}
};

const char* kReluDiagonal = R"(def @main(%x: Tensor[(4, 4), float32]) -> Tensor[(4,), float32] {
  %e = nn.relu(%x)
  %a = einsum(%e, equation="ii->i")
  return %a
}
)";

TEST_F(CliCompile, RunCompilesAndNamesTheOpsLeftOnReferenceKernels) {
  std::string model = file("m.kir", kReluDiagonal);
  testing::CliResult r = testing::kiln_cmd("run " + model + " --random-inputs 1 --verify");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(
      r.out.find("compile: compiled 1 of 2 host ops into 1 kernel calls (1 distinct); 1 op on reference "
                 "kernels (einsum x1: "),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("verify: 1 of 1 host kernel calls match the reference kernels"), std::string::npos)
      << r.out;
  // The same values as the interpreter.
  testing::CliResult i = testing::kiln_cmd("run " + model + " --random-inputs 1 --interpret");
  ASSERT_EQ(i.code, 0) << i.out;
  EXPECT_NE(r.out.find(i.out.substr(i.out.find("output_0"))), std::string::npos) << r.out << "\n" << i.out;
}

TEST_F(CliCompile, StrictCompileFailsNamingTheOps) {
  std::string model = file("m.kir", kReluDiagonal);
  testing::CliResult r =
      testing::kiln_cmd("compile " + model + " --strict-compile -o " + (dir_ / "m.kmod").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: --strict-compile: ops would run on reference kernels"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("einsum x1"), std::string::npos) << r.out;
}

TEST_F(CliCompile, CompiledModuleRunsTimedAndPrintsEveryStage) {
  std::string model = file("m.kir", kMatmulRelu);
  std::string kmod = (dir_ / "m.kmod").string();
  testing::CliResult c =
      testing::kiln_cmd("compile " + model + " -o " + kmod + " --time-passes --print-after-all");
  ASSERT_EQ(c.code, 0) << c.out;
  for (const char* stage : {"# stage graph-optimizations", "# stage fuse", "# stage lower-and-schedule",
                            "# stage tir:flatten-buffers", "# stage llvm", "# stage plan-memory",
                            "# after tir:simplify", "prim @kiln_fused_matmul_relu("})
    EXPECT_NE(c.out.find(stage), std::string::npos) << stage << " missing in:\n" << c.out;
  // LLVM's timing reports for the host code after the llvm stage: the IR
  // pipeline's passes (SROA first), its analyses, the machine-code passes.
  const size_t llvm_stage = c.out.find("# stage llvm");
  const size_t reports = c.out.find("# LLVM's IR passes and analyses");
  ASSERT_NE(reports, std::string::npos) << c.out;
  EXPECT_LT(llvm_stage, reports);
  for (const char* line : {"SROAPass", "Analysis execution timing report", "DominatorTreeAnalysis",
                           "DAG->DAG Instruction Selection", "Greedy Register Allocator"})
    EXPECT_NE(c.out.find(line, reports), std::string::npos) << line << " missing in:\n" << c.out;
  // The same compile without --time-passes prints no timing.
  testing::CliResult quiet = testing::kiln_cmd("compile " + model + " -o " + kmod);
  ASSERT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("timing report"), std::string::npos) << quiet.out;
  testing::CliResult r = testing::kiln_cmd("run " + kmod + " --random-inputs 2 --repeat 5");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("latency: median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 5 runs"), std::string::npos) << r.out;
  testing::CliResult bad = testing::kiln_cmd("run " + kmod + " --random-inputs 2 --repeat -1");
  EXPECT_EQ(bad.code, 2) << bad.out;
  // Where the time goes, over 5 more runs: the one kernel's row (all of it).
  testing::CliResult p =
      testing::kiln_cmd("run " + kmod + " --random-inputs 2 --repeat 5 --profile-summary 10");
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("100.0% 100.0%"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("kiln_fused_matmul_relu (host)"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("1 dispatches per run over 5 runs"), std::string::npos) << p.out;
  testing::CliResult alone = testing::kiln_cmd("run " + kmod + " --random-inputs 2 --profile-summary 10");
  EXPECT_EQ(alone.code, 1) << alone.out;
  EXPECT_NE(alone.out.find("--profile-summary summarizes the runs of --repeat N"), std::string::npos)
      << alone.out;
}

// Host code for a named CPU: x86-64-v3 (AVX2 + FMA) and the baseline x86-64
// (no AVX) run here and match the reference kernels; the summary and the
// artifact record the CPU and its features; AVX-512 code is refused at load
// time on a machine without it; unknown CPUs and Hexagon are errors.
// Code for AMD's znver3 may use sse4a (LLVM lowers some shuffles to its
// extrq/insertq), which Intel CPUs lack: there it must be refused at load
// time, not die of an illegal instruction.
TEST_F(CliCompile, CodeForAnotherVendorsCpuIsRefusedWhereItCannotRun) {
  std::string model = file("m.kir", kMatmulRelu);
  std::string kmod = (dir_ / "znver3.kmod").string();
  testing::CliResult r =
      testing::kiln_cmd("compile " + model + " -o " + kmod + " --target 'llvm -mcpu=znver3'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("for znver3 (sse4.2 avx avx2 fma f16c popcnt bmi bmi2 sse4a"), std::string::npos)
      << r.out;
  testing::CliResult run = testing::kiln_cmd("run " + kmod + " --random-inputs 3 --verify");
  if (__builtin_cpu_supports("sse4a") && __builtin_cpu_supports("avx2")) {
    EXPECT_EQ(run.code, 0) << run.out;
  } else {
    EXPECT_EQ(run.code, 1) << run.out;
    EXPECT_NE(run.out.find("compiled for CPU znver3, which has "), std::string::npos) << run.out;
  }
}

TEST_F(CliCompile, TargetNamesTheCpuOfTheHostCode) {
  std::string model = file("m.kir", kMatmulRelu);
  struct Case {
    const char* cpu;
    const char* summary;
  };
  // A named CPU's caches are not known: its schedules assume a typical core's.
  for (Case c : {Case{"x86-64-v3",
                      "for x86-64-v3 (sse4.2 avx avx2 fma f16c popcnt bmi bmi2), L1d 32 KiB 8-way, L2 512 "
                      "KiB (typical)"},
                 Case{"x86-64", "for x86-64 (none of sse4.2 avx avx2 fma avx512f), L1d 32 KiB 8-way"}}) {
    std::string kmod = (dir_ / (std::string(c.cpu) + ".kmod")).string();
    testing::CliResult r =
        testing::kiln_cmd("compile " + model + " -o " + kmod + " --target 'llvm -mcpu=" + c.cpu + "'");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(c.summary), std::string::npos) << r.out;
    // Checked against the reference kernels (FMA rounds differently from
    // the interpreter in the last digit).
    testing::CliResult run = testing::kiln_cmd("run " + kmod + " --random-inputs 3 --verify");
    ASSERT_EQ(run.code, 0) << run.out;
    EXPECT_NE(run.out.find("verify: 1 of 1 host kernel calls match"), std::string::npos) << run.out;
  }
  // The machine's own caches, as the system reports them, when the target is the machine.
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), ways = sysconf(_SC_LEVEL1_DCACHE_ASSOC),
             l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const bool reported = l1 >= (8 << 10) && ways >= 2 && l2 >= (64 << 10) && l1 % (ways * 64) == 0;
  const std::string caches = reported
                                 ? "), L1d " + std::to_string(l1 >> 10) + " KiB " + std::to_string(ways) +
                                       "-way, L2 " + std::to_string(l2 >> 10) + " KiB\n"
                                 : " KiB (typical)\n";
  testing::CliResult host = testing::kiln_cmd("compile " + model + " -o " + (dir_ / "host.kmod").string());
  ASSERT_EQ(host.code, 0) << host.out;
  EXPECT_NE(host.out.find(caches), std::string::npos) << caches << "\n" << host.out;
  testing::CliResult avx512 =
      testing::kiln_cmd("run " + model + " --random-inputs 3 --verify --target 'llvm -mcpu=skylake-avx512'");
  EXPECT_NE(avx512.out.find("for skylake-avx512 (sse4.2 avx avx2 fma f16c popcnt bmi bmi2 avx512f"),
            std::string::npos)
      << avx512.out;
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(avx512.code, 0) << avx512.out;
    EXPECT_NE(avx512.out.find("verify: 1 of 1 host kernel calls match"), std::string::npos) << avx512.out;
  } else {
    EXPECT_EQ(avx512.code, 1) << avx512.out;
    EXPECT_NE(avx512.out.find("compiled for CPU skylake-avx512, which has avx512f"), std::string::npos)
        << avx512.out;
  }
  testing::CliResult bogus = testing::kiln_cmd("compile " + model + " -o " + (dir_ / "b.kmod").string() +
                                               " --target 'llvm -mcpu=bogus'");
  EXPECT_EQ(bogus.code, 1) << bogus.out;
  EXPECT_NE(bogus.out.find("LLVM does not know the CPU 'bogus'"), std::string::npos) << bogus.out;
  EXPECT_EQ(bogus.out.find("not a recognized processor"), std::string::npos) << bogus.out;
  testing::CliResult dsp = testing::kiln_cmd("run " + model + " --random-inputs 3 --target hexagon-v68");
  EXPECT_EQ(dsp.code, 1) << dsp.out;
  EXPECT_NE(dsp.out.find("a model's host code runs on this machine"), std::string::npos) << dsp.out;
}

TEST_F(CliCompile, OptRunsTensorIrPassesByName) {
  testing::CliResult r =
      testing::kiln_cmd(std::string("opt ") + KILN_SOURCE_DIR +
                        "/examples/vtcm/vtcm_add.kir --passes lower-scratchpad-alloc,simplify");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HexagonBackendAllocateVTCM"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("allocate %A_buf"), std::string::npos) << r.out;
}

// A tensor-IR pass that needs a target (its vector registers) rewrites for
// the one --target names, and leaves the IR as it is without one; a
// mistyped target is refused.
TEST_F(CliCompile, OptRunsTensorIrPassesForATarget) {
  const std::string kir = file("sum.kir",
                               "prim @f(%a: Buffer[(64), float32], %c: Buffer[(1), float32]) {\n"
                               "  allocate %s: Buffer[(1), float32, scope=\"local\"] {\n"
                               "    %s[0] = 0.0\n"
                               "    for %k from 0 extent 64 {\n"
                               "      %s[0] = %s[0] + %a[%k]\n"
                               "    }\n"
                               "    %c[0] = %s[0]\n"
                               "  }\n"
                               "  return 0\n"
                               "}\n");
  testing::CliResult with =
      testing::kiln_cmd("opt " + kir + " --passes interleave-accumulators --target \"llvm -mcpu=x86-64-v3\"");
  ASSERT_EQ(with.code, 0) << with.out;
  EXPECT_NE(with.out.find("%s_turn7"), std::string::npos) << with.out;
  testing::CliResult without = testing::kiln_cmd("opt " + kir + " --passes interleave-accumulators");
  ASSERT_EQ(without.code, 0) << without.out;
  EXPECT_EQ(without.out.find("_turn"), std::string::npos) << without.out;
  testing::CliResult bad =
      testing::kiln_cmd("opt " + kir + " --passes interleave-accumulators --target llvm-x86");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("unknown --target 'llvm-x86'"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace kiln
