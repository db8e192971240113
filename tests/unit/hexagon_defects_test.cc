// Defects found by trying the Hexagon target as a new user would (issue 12,
// part 6), each with the case that showed it:
//
// - the static scratchpad plan gave no reuse to buffers allocated inside a
//   loop, and its pool was never checked against the target's VTCM (v66
//   built, then QEMU said "cannot allocate 409600 ... capacity 262144");
//   per-task buffers of a parallel loop counted once, not once per thread;
// - `kiln inspect --target hexagon-vNN` called resolved what LLVM adds later
//   (__hexagon_divdf3), and the link failed;
// - a --link-lib for the wrong machine was found out by the linker (Hexagon)
//   or reported as "No such file" (host);
// - int16 and float64 parameters of a kernel run.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "codegen/prim_runner.h"
#include "ir/text.h"
#include "runtime/thread_pool.h"
#include "test_util.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {
namespace {

using testing::error_of;

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

PrimFunc prim_from_text(const std::string& text) {
  return parse_module(text, "hexagon_defects_test.kir").prim_functions.at(0);
}

// Two 200 KiB tiles per iteration, one after the other: 200 KiB at a time,
// which fits v66's 256 KiB.
const char* kLoopTiles = R"(prim @loop_tiles(%X: Buffer[(1024), int32], %Y: Buffer[(1024), int32]) {
  for %t from 0 extent 4 {
    allocate %P: Buffer[(51200), int32, scope="global.vtcm", align=128] {
      for %i from 0 extent 256 {
        %P[%i] = %X[%t * 256 + %i] + 1
      }
      for %i from 0 extent 256 {
        %Y[%t * 256 + %i] = %P[%i]
      }
    }
    allocate %Q: Buffer[(51200), int32, scope="global.vtcm", align=128]
    for %i from 0 extent 256 {
      %Q[%i] = %Y[%t * 256 + %i] * 3
    }
    for %i from 0 extent 256 {
      %Y[%t * 256 + %i] = %Q[%i]
    }
  }
  return 0
}
)";

TEST(HexagonDefects, StaticPlanSharesBytesOfBuffersAllocatedInALoop) {
  PrimFunc f = prim_from_text(kLoopTiles);
  ScratchpadPlan plan = plan_scratchpad(*f);
  ASSERT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.bytes, 204800) << "each iteration allocates %P and %Q afresh, one after the other";
  EXPECT_EQ(plan.placements[0].offset, 0);
  EXPECT_EQ(plan.placements[1].offset, 0);
  EXPECT_EQ(scratchpad_peak_bytes(*f), 204800u);

  Tensor x = Tensor::empty({1024}, DType::Int32);
  for (int i = 0; i < 1024; ++i) x.data<int32_t>()[i] = i - 300;
  codegen::PrimRunOptions o;
  o.target = codegen::parse_target("hexagon-v66");
  o.static_scratchpad_plan = true;
  codegen::PrimRunResult r = codegen::run_prim_function(f, {{"X", x}}, o);
  const Tensor& y = r.outputs.at(0).second;
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(y.data<int32_t>()[i], (i - 300 + 1) * 3) << i;
  EXPECT_TRUE(has(r.vtcm_pool, "high-water 204800 B")) << r.vtcm_pool;
}

// Largest first, %D (80 KiB) goes at 0, %A (64 KiB, live throughout) after
// it, %B at 0 beside %A, and %C, live with %A and %B, only fits above %A:
// the plan needs 192 KiB where the allocations one by one peak at 176 KiB.
const char* kFragmented = R"(prim @fragmented(%X: Buffer[(4), int8], %Y: Buffer[(4), int8]) {
  allocate %A: Buffer[(65536), int8, scope="global.vtcm", align=128]
  %A[0] = %X[0]
  allocate %B: Buffer[(65536), int8, scope="global.vtcm", align=128] {
    %B[0] = %X[1]
    allocate %C: Buffer[(49152), int8, scope="global.vtcm", align=128] {
      %C[0] = %X[2]
      %Y[2] = %C[0]
    }
    %Y[1] = %B[0]
  }
  allocate %D: Buffer[(81920), int8, scope="global.vtcm", align=128] {
    %D[0] = %X[3]
    %Y[3] = %D[0]
  }
  %Y[0] = %A[0]
  return 0
}
)";

TEST(HexagonDefects, TheCapacityCheckChecksThePlanThatWillRun) {
  PrimFunc f = prim_from_text(kFragmented);
  EXPECT_EQ(plan_scratchpad(*f).bytes, 196608);
  EXPECT_EQ(scratchpad_peak_bytes(*f), 180224u);
  TirPassOptions o;
  o.scratchpad_capacity = 188416;
  EXPECT_NO_THROW(verify_scratchpad_capacity(*f, o)) << "one by one, 176 KiB fit";
  o.static_scratchpad_plan = true;
  std::string e = error_of([&] { lower_for_build(f, o); });
  EXPECT_TRUE(has(e,
                  "@fragmented needs 196608 bytes of scratchpad (VTCM) with its static scratchpad plan but "
                  "the target has 188416 bytes:\n  the plan's pool: 196608 bytes (buffers not live together "
                  "share bytes)\n"
                  "    at 0 %D: 81920 bytes (int8, scope global.vtcm, align 128)"))
      << e;
  EXPECT_TRUE(has(e, "at 147456 %C: 49152 bytes")) << e;

  // The same through `kiln run`'s path: refused before anything runs.
  codegen::PrimRunOptions run;
  run.target = codegen::parse_target("hexagon-v66");
  run.vtcm_capacity = 188416;
  run.static_scratchpad_plan = true;
  Tensor x = Tensor::zeros({4}, DType::Int8);
  e = error_of([&] { codegen::run_prim_function(f, {{"X", x}}, run); });
  EXPECT_TRUE(has(e, "with its static scratchpad plan")) << e;
  run.static_scratchpad_plan = false;
  EXPECT_NO_THROW(codegen::run_prim_function(f, {{"X", x}}, run));
}

// 8 KiB for the whole function and a 4 KiB tile in each task.
const char* kPerTask = R"(prim @per_task(%X: Buffer[(1024), int32], %Y: Buffer[(1024), int32]) {
  allocate %W: Buffer[(2048), int32, scope="global.vtcm", align=128]
  for %i from 0 extent 2048 {
    %W[%i] = 2
  }
  for %o from 0 extent 8 parallel {
    allocate %T: Buffer[(1024), int32, scope="local.vtcm", align=128]
    for %j from 0 extent 128 {
      %T[%j] = %X[%o * 128 + %j] * %W[%j]
    }
    for %j from 0 extent 128 {
      %Y[%o * 128 + %j] = %T[%j]
    }
  }
  return 0
}
)";

class ThreadCount : public ::testing::Test {
 protected:
  void TearDown() override { set_parallel_num_threads(0); }
};

TEST_F(ThreadCount, PerTaskBuffersOfAParallelLoopCountOncePerThread) {
  PrimFunc f = prim_from_text(kPerTask);
  EXPECT_EQ(scratchpad_peak_bytes(*f), 12288u) << "one task's peak";
  TirPassOptions o;
  o.scratchpad_capacity = 16384;
  set_parallel_num_threads(4);
  std::string e = error_of([&] { verify_scratchpad_capacity(*f, o); });
  EXPECT_EQ(
      e,
      "@per_task needs 24576 bytes of scratchpad (VTCM) at its peak but the target has 16384 bytes; live "
      "at the peak:\n"
      "  %W: 8192 bytes (int32, scope global.vtcm, align 128)\n"
      "  in each of 4 tasks of the parallel loop over %o (the host runtime's threads: KILN_NUM_THREADS, "
      "else the machine's):\n"
      "    %T: 4096 bytes (int32, scope local.vtcm, align 128)\n"
      "use smaller tiles, free buffers earlier, or target a chip with more VTCM");
  o.static_scratchpad_plan = true;
  e = error_of([&] { verify_scratchpad_capacity(*f, o); });
  EXPECT_TRUE(has(e, "@per_task needs 24576 bytes of scratchpad (VTCM) with its static scratchpad plan"))
      << e;
  EXPECT_TRUE(has(e, "the plan's pool: 8192 bytes")) << e;
  EXPECT_TRUE(has(e, "in each of 4 tasks")) << e;
  o.static_scratchpad_plan = false;

  // Two threads: 8 + 2 * 4 KiB fit. One task at a time (kiln's Hexagon
  // runtime): 12 KiB.
  set_parallel_num_threads(2);
  EXPECT_NO_THROW(verify_scratchpad_capacity(*f, o));
  set_parallel_num_threads(4);
  o.parallel_tasks = 1;
  EXPECT_NO_THROW(verify_scratchpad_capacity(*f, o));
  // No more tasks than iterations.
  o.parallel_tasks = 0;
  o.scratchpad_capacity = 8192 + 8 * 4096;
  set_parallel_num_threads(16);
  EXPECT_NO_THROW(verify_scratchpad_capacity(*f, o));
  o.scratchpad_capacity = 8192 + 8 * 4096 - 1;
  EXPECT_TRUE(has(error_of([&] { verify_scratchpad_capacity(*f, o); }), "in each of 8 tasks")) << e;

  // And it runs in what the check allowed, with 4 threads at once.
  set_parallel_num_threads(4);
  codegen::PrimRunOptions run;
  run.target = codegen::parse_target("llvm");
  run.vtcm_capacity = 8192 + 4 * 4096;
  Tensor x = Tensor::empty({1024}, DType::Int32);
  for (int i = 0; i < 1024; ++i) x.data<int32_t>()[i] = i;
  codegen::PrimRunResult r = codegen::run_prim_function(f, {{"X", x}}, run);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(r.outputs.at(0).second.data<int32_t>()[i], 2 * i) << i;
  run.vtcm_capacity = 8192 + 4 * 4096 - 128;
  EXPECT_TRUE(has(error_of([&] { codegen::run_prim_function(f, {{"X", x}}, run); }), "in each of 4 tasks"));
}

// ---- what the link sees, and link inputs for the wrong machine

const char* kDivideDoubles =
    R"(prim @divides(%A: Buffer[(8), float64], %B: Buffer[(8), float64], %C: Buffer[(8), float64]) {
  for %i from 0 extent 8 {
    %C[%i] = %A[%i] / %B[%i]
  }
  return 0
}
)";

const char* kCopy = R"(prim @copy(%A: Buffer[(64), int32], %C: Buffer[(64), int32]) {
  for %i from 0 extent 64 {
    %C[%i] = %A[%i]
  }
  return 0
}
)";

class HexagonDefectsCli : public testing::CliTest {
 protected:
  HexagonDefectsCli() : CliTest("hexagon-defects-test") {}
};

TEST_F(HexagonDefectsCli, InspectReportsTheSymbolsLlvmAdds) {
  std::string kir = file("div.kir", kDivideDoubles);
  auto r = testing::kiln_cmd("inspect " + kir + " --target hexagon-v68");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "__hexagon_divdf3  UNRESOLVED  (LLVM calls it for float64 division in @divides)"))
      << r.out;
  EXPECT_TRUE(has(r.out,
                  "1 import(s) UNRESOLVED: '__hexagon_divdf3'; LLVM's Hexagon code generator calls "
                  "__hexagon_divdf3 (float64 division), which kiln's Hexagon runtime "
                  "(src/runtime/hexagon/builtins.c) does not define, so the link would fail"))
      << r.out;
  // What inspect says is what the build finds, by name, before ld.lld runs.
  auto b = testing::kiln_cmd("build " + kir + " --target hexagon-v68 --emit exe -o " + path("div.elf"));
  EXPECT_EQ(b.code, 1) << b.out;
  EXPECT_TRUE(has(b.out,
                  "unresolved symbol '__hexagon_divdf3' needed by the generated code of @divides: LLVM's "
                  "Hexagon code generator calls it for float64 division, and kiln's Hexagon runtime "
                  "(src/runtime/hexagon/builtins.c) does not define it"))
      << b.out;
  EXPECT_FALSE(has(b.out, "ld.lld")) << b.out;
  EXPECT_FALSE(std::filesystem::exists(path("div.elf")));

  // Helpers the runtime has are listed as resolved, with what they are for.
  std::string idiv =
      file("idiv.kir", R"(prim @idiv(%A: Buffer[(8), int32], %B: Buffer[(8), int32], %C: Buffer[(8), int32]) {
  for %i from 0 extent 8 {
    %C[%i] = %A[%i] / %B[%i]
  }
  return 0
}
)");
  auto ok = testing::kiln_cmd("inspect " + idiv + " --target hexagon-v68");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(has(ok.out, "__hexagon_divsi3  Hexagon runtime  (LLVM calls it for int32 division in @idiv)"))
      << ok.out;
}

TEST_F(HexagonDefectsCli, LinkInputsForAnotherMachineAreNamedWithTheirArchitecture) {
  std::string kir = file("copy.kir", kCopy);
  ASSERT_EQ(testing::kiln_cmd("build " + kir + " --target llvm --emit obj -o " + path("x86.o")).code, 0);
  ASSERT_EQ(testing::kiln_cmd("build " + kir + " --target llvm --emit so -o " + path("x86.so")).code, 0);
  // A library with a function of its own, for Hexagon.
  std::string lib = file("lib.kir", R"(prim @lib_fill(%A: Buffer[(4), int32]) {
  %A[0] = 1
  return 0
}
)");
  ASSERT_EQ(testing::kiln_cmd("build " + lib + " --target hexagon-v68 --emit obj -o " + path("hx.o")).code,
            0);

  auto hx = testing::kiln_cmd("build " + kir + " --target hexagon-v68 --emit exe -o " + path("k.elf") +
                              " --link-lib " + path("x86.o"));
  EXPECT_EQ(hx.code, 1) << hx.out;
  EXPECT_TRUE(
      has(hx.out, "--link-lib " + path("x86.o") +
                      " is an object file for x86-64 (ELF e_machine 62); a Hexagon build links Hexagon "
                      "object files (ELF e_machine 164, EM_HEXAGON, type ET_REL): compile it with "
                      "clang-19 --target=hexagon-unknown-none-elf"))
      << hx.out;
  EXPECT_FALSE(has(hx.out, "ld.lld")) << hx.out;
  auto hx_so = testing::kiln_cmd("run " + kir + " --target hexagon-v68 --random-inputs 1 --link-lib " +
                                 path("x86.so"));
  EXPECT_EQ(hx_so.code, 1) << hx_so.out;
  EXPECT_TRUE(has(hx_so.out, "is a shared library for x86-64 (ELF e_machine 62)")) << hx_so.out;

  auto host = testing::kiln_cmd("build " + kir + " --target llvm --emit so -o " + path("k.so") +
                                " --link-lib " + path("hx.o"));
  EXPECT_EQ(host.code, 1) << host.out;
  EXPECT_TRUE(
      has(host.out, "--link-lib " + path("hx.o") +
                        " is an object file for Hexagon (ELF e_machine 164); a host build loads shared "
                        "libraries for x86-64 (ELF e_machine 62, type ET_DYN); pass Hexagon objects "
                        "to a Hexagon build"))
      << host.out;
  EXPECT_FALSE(has(host.out, "No such file")) << host.out;
  auto host_obj = testing::kiln_cmd("run " + kir + " --random-inputs 1 --link-lib " + path("x86.o"));
  EXPECT_EQ(host_obj.code, 1) << host_obj.out;
  EXPECT_TRUE(has(host_obj.out,
                  "is an object file for x86-64 (ELF e_machine 62); a host build loads shared "
                  "libraries for x86-64"))
      << host_obj.out;
  EXPECT_TRUE(has(host_obj.out, "cc -shared -fPIC")) << host_obj.out;
  std::string text = file("notes.txt", "not a library");
  auto junk = testing::kiln_cmd("run " + kir + " --random-inputs 1 --link-lib " + text);
  EXPECT_TRUE(has(junk.out, "--link-lib " + text + " is not an ELF file")) << junk.out;

  // The right files still work: the host library by a relative name, from its folder.
  auto good = testing::kiln_cmd("run " + kir + " --random-inputs 1 --link-lib " + path("x86.so"));
  EXPECT_EQ(good.code, 0) << good.out;
  std::error_code ec;
  auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  std::string rel = error_of([] { codegen::check_imports({}, {"x86.so"}); });
  std::string rel_hx = error_of([] { codegen::check_imports({}, {"hx.o"}); });
  std::filesystem::current_path(cwd, ec);
  EXPECT_EQ(rel, "no error");
  EXPECT_TRUE(has(rel_hx, "--link-lib hx.o is an object file for Hexagon (ELF e_machine 164)")) << rel_hx;
  auto hx_good = testing::kiln_cmd("build " + kir + " --target hexagon-v68 --emit exe -o " + path("k.elf") +
                                   " --link-lib " + path("hx.o"));
  EXPECT_EQ(hx_good.code, 0) << hx_good.out;
}

// ---- int16 and float64 parameters

TEST(HexagonDefects, Int16AndFloat64ParametersOfAKernelRunAreTensors) {
  PrimFunc add16 = prim_from_text(
      R"(prim @add16(%A: Buffer[(64), int16], %B: Buffer[(64), int16], %C: Buffer[(64), int16]) {
  for %i from 0 extent 64 {
    %C[%i] = %A[%i] + %B[%i]
  }
  return 0
}
)");
  auto info = codegen::prim_param_info(*add16);
  ASSERT_EQ(info.size(), 3u);
  EXPECT_EQ(info[0].dtype, DType::Int16);
  PrimFunc f64 = prim_from_text(kDivideDoubles);
  auto info64 = codegen::prim_param_info(*f64);
  ASSERT_FALSE(info64.empty());
  EXPECT_EQ(info64[0].dtype, DType::Float64);
}

// A .npy file of `descr` ("<i2", "<f8") and shape (n,), written by hand:
// kiln's tensors cannot hold these types.
void write_raw_npy(const std::string& path, const std::string& descr, int64_t n, const void* data,
                   size_t bytes) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  while ((10 + dict.size() + 1) % 64) dict += ' ';
  dict += '\n';
  std::string head = std::string("\x93NUMPY\x01\x00", 8);
  head += char(dict.size() & 0xff);
  head += char(dict.size() >> 8);
  std::ofstream out(path, std::ios::binary);
  out << head << dict;
  out.write(static_cast<const char*>(data), std::streamsize(bytes));
}

// The data of a .npy file the harness wrote, after checking its descr.
std::string raw_npy_data(const std::string& path, const std::string& descr) {
  std::string s = testing::read_text(path);
  EXPECT_TRUE(has(s, "'descr': '" + descr + "'")) << s.substr(0, 80);
  size_t len = size_t(uint8_t(s[8])) | size_t(uint8_t(s[9])) << 8;
  return s.substr(10 + len);
}

TEST(HexagonDefects, TheHexagonExecutableReadsAndWritesInt16AndFloat64) {
  PrimFunc f = prim_from_text(
      R"(prim @mixed(%A: Buffer[(64), int16], %B: Buffer[(64), float64], %C: Buffer[(64), int16], %D: Buffer[(64), float64]) {
  for %i from 0 extent 64 {
    %C[%i] = %A[%i] + %A[%i]
    %D[%i] = %B[%i] + %B[%i]
  }
  return 0
}
)");
  auto dir = std::filesystem::path(KILN_BINARY_DIR) / "hexagon-defects-test" / "npy16";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  codegen::CodegenOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  TirPassOptions p = codegen::tir_pass_options(o.target);
  std::string exe = (dir / "mixed.elf").string();
  codegen::emit_to_file({lower_for_build(f, p)}, codegen::EmitKind::Executable, exe, o);
  int16_t a[64];
  double b[64];
  for (int i = 0; i < 64; ++i) {
    a[i] = int16_t(i * 500 - 16000);
    b[i] = i * 0.1 - 3.0;
  }
  write_raw_npy((dir / "a.npy").string(), "<i2", 64, a, sizeof a);
  write_raw_npy((dir / "b.npy").string(), "<f8", 64, b, sizeof b);
  codegen::ProcessResult r = codegen::run_hexagon_executable(
      exe, {"mixed", (dir / "a.npy").string(), "-", (dir / "b.npy").string(), "-", "-",
            (dir / "c.npy").string(), "-", (dir / "d.npy").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string c = raw_npy_data((dir / "c.npy").string(), "<i2");
  std::string d = raw_npy_data((dir / "d.npy").string(), "<f8");
  ASSERT_EQ(c.size(), sizeof a);
  ASSERT_EQ(d.size(), sizeof b);
  for (int i = 0; i < 64; ++i) {
    int16_t ci;
    double di;
    std::memcpy(&ci, c.data() + 2 * i, 2);
    std::memcpy(&di, d.data() + 8 * i, 8);
    EXPECT_EQ(ci, int16_t(2 * a[i])) << i;
    EXPECT_EQ(di, 2 * b[i]) << i;
  }
}

}  // namespace
}  // namespace kiln::tir
