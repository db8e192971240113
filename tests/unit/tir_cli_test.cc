// `kiln build` and `kiln inspect` end to end: every --emit kind, the link
// check at build time (naming symbol and caller), and inspect on .kir, object
// and shared-library files with where each import resolves.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::kiln_cmd;

const char* kVtcmKernel =
    R"(prim @alloc_vtcm(%A: Buffer[(2048), int8], %B: Buffer[(2048), int8], %C: Buffer[(2048), int8]) {
  allocate %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
  for %i0 from 0 extent 2048 {
    %A_buf[%i0] = %A[%i0]
  }
  for %i0 from 0 extent 2048 vectorized {
    %C[%i0] = %A_buf[%i0] + %B[%i0]
  }
  return 0
}
)";

const char* kExternKernel = R"(prim @uses_ext(%A: Buffer[(4), float32]) {
  %A[0] = call_extern<float32>("cosf", %A[0])
  evaluate call_extern<int32>("my_missing_fn", 1)
  return 0
}
)";

class TirCli : public testing::CliTest {
 protected:
  TirCli() : CliTest("tir-cli-test") {}
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST_F(TirCli, BuildEmitsEveryKind) {
  std::string kir = file("add.kir", kVtcmKernel);
  for (const char* kind : {"ll", "asm", "obj", "so"}) {
    Result r = kiln_cmd("build " + kir + " --target llvm --emit " + kind + " -o " +
                        path(std::string("add.") + kind));
    ASSERT_EQ(r.code, 0) << kind << "\n" << r.out;
  }
  std::string ll = read(path("add.ll"));
  EXPECT_TRUE(has(ll, "define")) << ll;
  EXPECT_TRUE(has(ll, "@alloc_vtcm(")) << ll;
  EXPECT_TRUE(has(ll, "declare noalias ptr @HexagonBackendAllocateVTCM(i32")) << ll;
  EXPECT_TRUE(has(ll, "@HexagonBackendAllocateVTCM(i32 2048, i32 128)")) << "size in bytes, then alignment\n"
                                                                         << ll;
  std::string asm_text = read(path("add.asm"));
  EXPECT_TRUE(has(asm_text, "alloc_vtcm:")) << asm_text;
  EXPECT_TRUE(has(asm_text, "HexagonBackendFreeVTCM")) << asm_text;
  EXPECT_EQ(read(path("add.obj")).substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(read(path("add.so")).substr(0, 4),
            "\x7f"
            "ELF");
}

TEST_F(TirCli, BuildPrintsLoweredTirAndAcceptsAModuleWithDefFunctions) {
  std::string text = std::string(
                         "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"
                         "  %y = nn.relu(%x)\n  return %y\n}\n\n") +
                     kVtcmKernel;
  Result r = kiln_cmd("build " + file("mixed.kir", text) + " --emit ll -o " + path("m.ll") + " --print-tir");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "call_extern<handle>(\"HexagonBackendAllocateVTCM\", uint32(2048), uint32(128))"))
      << r.out;
  EXPECT_TRUE(has(r.out, "isnull(%A_buf_data)")) << r.out;
  EXPECT_TRUE(has(r.out, "\"HexagonBackendFreeVTCM\", %A_buf_data")) << r.out;
}

TEST_F(TirCli, BuildWithTheStaticScratchpadPlan) {
  Result r = kiln_cmd("build " + file("add.kir", kVtcmKernel) + " --emit ll -o " + path("p.ll") +
                      " --static-scratchpad-plan --print-tir");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "the scratchpad plan of @alloc_vtcm (2048 bytes: %A_buf at 0)")) << r.out;
  EXPECT_TRUE(has(r.out, "address_offset(%vtcm_plan_data, int64(0))")) << r.out;
}

TEST_F(TirCli, BuildFailsOnAnUnresolvedImportNamingSymbolAndCaller) {
  std::string kir = file("ext.kir", kExternKernel);
  Result r = kiln_cmd("build " + kir + " --emit obj -o " + path("ext.o"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "error: link check failed at build time")) << r.out;
  EXPECT_TRUE(has(r.out, "unresolved symbol 'my_missing_fn' called by @uses_ext")) << r.out;
  EXPECT_TRUE(has(r.out, "unresolved symbol 'cosf'")) << r.out;
  EXPECT_FALSE(fs::exists(path("ext.o"))) << "no artifact from a failed link check";
}

TEST_F(TirCli, InspectKirShowsWhereEachImportResolves) {
  Result ok = kiln_cmd("inspect " + file("add.kir", kVtcmKernel));
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(has(ok.out, "exports:\n  alloc_vtcm\n")) << ok.out;
  EXPECT_TRUE(has(ok.out, "HexagonBackendAllocateVTCM  runtime ABI  (called by @alloc_vtcm)")) << ok.out;

  std::string ext = file("ext.kir", kExternKernel);
  Result bad = kiln_cmd("inspect " + ext + " --link-lib libm.so.6");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_TRUE(has(bad.out, "cosf  library libm.so.6  (called by @uses_ext)")) << bad.out;
  EXPECT_TRUE(has(bad.out, "my_missing_fn  UNRESOLVED  (called by @uses_ext)")) << bad.out;
  EXPECT_TRUE(has(bad.out, "error: ")) << bad.out;
  EXPECT_TRUE(has(bad.out, "1 import(s) UNRESOLVED: 'my_missing_fn'")) << bad.out;
}

TEST_F(TirCli, InspectObjectAndSharedLibrary) {
  std::string kir = file("add.kir", kVtcmKernel);
  for (const char* kind : {"obj", "so"}) {
    std::string out = path(std::string("add.") + kind);
    ASSERT_EQ(kiln_cmd("build " + kir + " --emit " + kind + " -o " + out).code, 0);
    Result r = kiln_cmd("inspect " + out);
    ASSERT_EQ(r.code, 0) << kind << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "  alloc_vtcm\n")) << r.out;
    EXPECT_TRUE(has(r.out, "  alloc_vtcm__packed\n")) << r.out;
    EXPECT_TRUE(has(r.out, "  HexagonBackendAllocateVTCM  runtime ABI\n")) << r.out;
    EXPECT_TRUE(has(r.out, "  HexagonBackendFreeVTCM  runtime ABI\n")) << r.out;
  }
}

TEST_F(TirCli, UserErrorsAreMessagesNotCrashes) {
  std::string kir = file("add.kir", kVtcmKernel);
  auto expect_error = [&](const std::string& args, const std::string& needle) {
    Result r = kiln_cmd(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "error: ")) << r.out;
    EXPECT_TRUE(has(r.out, needle)) << "expected '" << needle << "' in:\n" << r.out;
  };
  expect_error("build " + kir + " --target hexagon-v99 -o " + path("x"), "unknown --target 'hexagon-v99'");
  expect_error("build " + kir + " --emit exe -o " + path("x"), "exe");
  expect_error("build " + path("missing.kir") + " -o " + path("x"), "cannot open");
  expect_error("build " + kir + " --vtcm-capacity 1024 -o " + path("x"), "A_buf");
  expect_error(
      "build " +
          file("g.kir", "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n  return %x\n}\n") +
          " -o " + path("x"),
      "has no prim functions to build");
  expect_error("inspect " + file("junk.o", "not an object"), "cannot read");
  expect_error("inspect " + kir + " --link-lib " + path("nolib.so"), "cannot load library");
}

}  // namespace
}  // namespace kiln
