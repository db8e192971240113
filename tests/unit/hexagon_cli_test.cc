// `kiln build --target hexagon-vNN` and `kiln run FILE.kir --target ...` end
// to end: the forum's kernel built for v68 (assembly, object, executable),
// run under qemu-hexagon-static and on the host, outputs compared file by
// file; and the errors a user can cause, each naming what is wrong.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli_util.h"
#include "kiln/runtime/npy.h"

namespace kiln {
namespace {

using testing::kiln_cmd;
using testing::read_text;

// The forum's kernel as tensor IR, as users meet it in the example.
std::string forum_kernel() { return std::string(KILN_SOURCE_DIR) + "/examples/vtcm/vtcm_add.kir"; }

// 300 KiB of VTCM: more than v66 has.
const char* kBigKernel = R"(prim @big(%A: Buffer[(307200), int8], %C: Buffer[(307200), int8]) {
  allocate %A_buf: Buffer[(307200), int8, scope="global.vtcm", align=128]
  for %i from 0 extent 307200 {
    %A_buf[%i] = %A[%i]
  }
  for %i from 0 extent 307200 {
    %C[%i] = %A_buf[%i]
  }
  return 0
}
)";

class HexagonCli : public testing::CliTest {
 protected:
  HexagonCli() : CliTest("hexagon-cli-test") {}
};

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

Tensor ramp(int mul, int add) {
  Tensor t = Tensor::empty({2048}, DType::Int8);
  for (int64_t i = 0; i < 2048; ++i) t.data<int8_t>()[i] = int8_t((i * mul + add) % 256 - 128);
  return t;
}

TEST_F(HexagonCli, RunOnHexagonMatchesTheHost) {
  std::string kir = forum_kernel();
  write_npy(path("a.npy"), ramp(3, 1));
  write_npy(path("b.npy"), ramp(5, 77));
  std::string inputs = " --input A=" + path("a.npy") + " --input B=" + path("b.npy");
  auto hx = kiln_cmd("run " + kir + " --target hexagon-v68" + inputs + " --out " + path("hx"));
  ASSERT_EQ(hx.code, 0) << hx.out;
  EXPECT_TRUE(has(hx.out, "@alloc_vtcm on hexagon-v68")) << hx.out;
  EXPECT_TRUE(has(hx.out, "VTCM pool (Hexagon runtime): capacity 4194304 B, used 0 B, high-water 4096 B"))
      << hx.out;
  auto host = kiln_cmd("run " + kir + " --target llvm" + inputs + " --out " + path("host"));
  ASSERT_EQ(host.code, 0) << host.out;
  Tensor c = read_npy(path("hx/C.npy"));
  EXPECT_TRUE(c.bitwise_equal(read_npy(path("host/C.npy"))));
  Tensor a = read_npy(path("a.npy")), b = read_npy(path("b.npy"));
  for (int64_t i = 0; i < 2048; ++i)
    ASSERT_EQ(c.data<int8_t>()[i], int8_t(a.data<int8_t>()[i] + b.data<int8_t>()[i])) << i;
}

TEST_F(HexagonCli, BuildEmitsAsmObjectAndExecutable) {
  std::string kir = forum_kernel();
  ASSERT_EQ(kiln_cmd("build " + kir + " --target hexagon-v68 --emit asm -o " + path("k.s")).code, 0);
  std::string s = read_text(path("k.s"));
  EXPECT_TRUE(has(s, "call HexagonBackendAllocateVTCM")) << s;
  EXPECT_TRUE(has(s, ".b = vadd(v")) << s;
  auto obj = kiln_cmd("build " + kir + " --target hexagon-v69 --emit obj -o " + path("k.o"));
  ASSERT_EQ(obj.code, 0) << obj.out;
  auto inspect = kiln_cmd("inspect " + path("k.o"));
  EXPECT_EQ(inspect.code, 0) << inspect.out;
  EXPECT_TRUE(has(inspect.out, "HexagonBackendAllocateVTCM  runtime ABI")) << inspect.out;
  auto exe = kiln_cmd("build " + kir + " --target hexagon-v73 --emit exe -o " + path("k.elf"));
  ASSERT_EQ(exe.code, 0) << exe.out;
  std::string elf = read_text(path("k.elf"));
  ASSERT_GT(elf.size(), 20u);
  EXPECT_EQ(elf.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(uint8_t(elf[18]), 164) << "e_machine is Hexagon (EM_HEXAGON = 164)";
}

TEST_F(HexagonCli, UserObjectsProvideExternFunctions) {
  // A function of the user's own, compiled for Hexagon, given with --link-lib.
  std::string kir = file("triple.kir", R"(prim @apply(%A: Buffer[(64), int32], %C: Buffer[(64), int32]) {
  for %i from 0 extent 64 {
    %C[%i] = call_extern<int32>("triple_plus_one", %A[%i])
  }
  return 0
}
)");
  std::string c = file("triple.c", "int triple_plus_one(int x) { return 3 * x + 1; }\n");
  std::string obj = path("triple.o");
  std::string cc =
      "clang-19 --target=hexagon-unknown-none-elf -mcpu=hexagonv68 -ffreestanding -fno-pic -O2 -c " + c +
      " -o " + obj;
  ASSERT_EQ(std::system(cc.c_str()), 0) << cc;
  Tensor a = Tensor::empty({64}, DType::Int32);
  for (int64_t i = 0; i < 64; ++i) a.data<int32_t>()[i] = int32_t(i * 11 - 300);
  write_npy(path("a.npy"), a);
  auto missing = kiln_cmd("run " + kir + " --target hexagon-v68 --input A=" + path("a.npy"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(has(missing.out, "unresolved symbol 'triple_plus_one' called by @apply")) << missing.out;
  auto r = kiln_cmd("run " + kir + " --target hexagon-v68 --link-lib " + obj + " --input A=" + path("a.npy") +
                    " --out " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  Tensor out = read_npy(path("out/C.npy"));
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(out.data<int32_t>()[i], 3 * a.data<int32_t>()[i] + 1) << i;
}

TEST_F(HexagonCli, InspectResolvesHexagonObjectsAgainstTheHexagonRuntime) {
  // Integer division is a call to a helper only kiln's Hexagon runtime has.
  std::string kir = file(
      "div.kir", R"(prim @divide(%A: Buffer[(64), int32], %B: Buffer[(64), int32], %C: Buffer[(64), int32]) {
  for %i from 0 extent 64 {
    %C[%i] = %A[%i] / %B[%i]
  }
  evaluate call_extern<int32>("not_anywhere", 1)
  return 0
}
)");
  auto build = kiln_cmd("build " + kir + " --target hexagon-v68 --emit obj -o " + path("div.o"));
  EXPECT_EQ(build.code, 1) << build.out;
  EXPECT_TRUE(has(build.out, "unresolved symbol 'not_anywhere' called by @divide")) << build.out;
  std::string ok = file(
      "ok.kir", R"(prim @divide(%A: Buffer[(64), int32], %B: Buffer[(64), int32], %C: Buffer[(64), int32]) {
  for %i from 0 extent 64 {
    %C[%i] = %A[%i] / %B[%i]
  }
  return 0
}
)");
  ASSERT_EQ(kiln_cmd("build " + ok + " --target hexagon-v68 --emit obj -o " + path("div.o")).code, 0);
  auto r = kiln_cmd("inspect " + path("div.o"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "__hexagon_divsi3  Hexagon runtime")) << r.out;
  auto kir_view = kiln_cmd("inspect " + kir + " --target hexagon-v68");
  EXPECT_EQ(kir_view.code, 1) << kir_view.out;
  EXPECT_TRUE(has(kir_view.out, "not_anywhere  UNRESOLVED  (called by @divide)")) << kir_view.out;
  EXPECT_TRUE(has(kir_view.out, "kiln's Hexagon runtime exports only")) << kir_view.out;
}

TEST_F(HexagonCli, Errors) {
  std::string kir = forum_kernel();
  auto expect_error = [&](const std::string& args, const std::string& message) {
    auto r = kiln_cmd(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, message)) << args << "\n" << r.out;
  };
  // The capacity check uses the target's VTCM: 300 KiB fits v68, not v66.
  std::string big = file("big.kir", kBigKernel);
  EXPECT_EQ(kiln_cmd("build " + big + " --target hexagon-v68 --emit obj -o " + path("big.o")).code, 0);
  expect_error("build " + big + " --target hexagon-v66 --emit obj -o " + path("big66.o"), "262144");
  expect_error("build " + big + " --target hexagon-v66 --emit obj -o " + path("big66.o"), "A_buf");
  expect_error("build " + kir + " --target hexagon-v68 --emit so -o " + path("k.so"),
               "--emit so is for the host");
  expect_error("build " + kir + " --target llvm --emit exe -o " + path("k"),
               "--emit exe builds a static Hexagon");
  expect_error("build " + kir + " --target hexagon-v5 -o " + path("k"),
               "known: llvm, hexagon-v66, hexagon-v68");
  expect_error("run " + kir + " --target hexagon-v68 --input A=" + path("none.npy"), "none.npy");
  write_npy(path("a.npy"), ramp(1, 0));
  expect_error("run " + kir + " --target hexagon-v68 --input A=" + path("a.npy"),
               "parameter %B of @alloc_vtcm is read by the kernel; give it with --input B=FILE.npy");
  write_npy(path("f.npy"), Tensor::zeros({2048}, DType::Float32));
  expect_error(
      "run " + kir + " --target hexagon-v68 --input A=" + path("a.npy") + " --input B=" + path("f.npy"),
      "input %B of @alloc_vtcm is float32(2048,); the parameter is int8(2048,)");
  expect_error("run " + kir + " --target hexagon-v68 --random-inputs 1 --input Z=" + path("a.npy"),
               "@alloc_vtcm has no parameter %Z");
  expect_error(
      "run " +
          file("g.kir", "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n  return %x\n}\n") +
          " --target hexagon-v68",
      "a model's host code runs on this machine (llvm or llvm -mcpu=NAME); offload regions to the DSP with "
      "--backend hexagon --target hexagon-v68");
}

}  // namespace
}  // namespace kiln
