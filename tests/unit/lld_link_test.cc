// lld linking in kiln's process (src/codegen/lld.cc): a link that fails is a
// kiln::Error carrying lld's message, not an exit of the process, and the
// process links again after one.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/lld.h"
#include "test_util.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::codegen {
namespace {

using testing::error_of;

std::string scratch(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() / ("kiln_lld_test_" + name)).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

const char* kAdd =
    R"(prim @add3(%A: Buffer[(3), float32], %B: Buffer[(3), float32], %C: Buffer[(3), float32]) {
  for %i from 0 extent 3 {
    %C[%i] = %A[%i] + %B[%i]
  }
  return 0
}
)";

TEST(InProcessLink, AFailedLinkIsAnErrorAndTheNextLinkWorks) {
  const std::string dir = scratch("fail_then_link");
  { std::ofstream(dir + "/junk.o") << "not an object file"; }
  std::string e = error_of([&] {
    link_with_lld({"-shared", "-o", dir + "/junk.so", dir + "/junk.o"}, "junk.so");
  });
  EXPECT_NE(e.find("linking junk.so failed"), std::string::npos) << e;
  EXPECT_NE(e.find("junk.o"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(dir + "/junk.so"));

  // An option lld does not know: another failure.
  std::vector<tir::PrimFunc> funcs = tir::parse_prim_functions(kAdd, "add.kir");
  for (auto& f : funcs) f = tir::lower_for_build(f);
  emit_to_file(funcs, EmitKind::Object, dir + "/add.o");
  e = error_of([&] { link_with_lld({"--no-such-option", "-o", dir + "/add.so", dir + "/add.o"}, "add"); });
  EXPECT_NE(e.find("linking add failed"), std::string::npos) << e;
  EXPECT_NE(e.find("--no-such-option"), std::string::npos) << e;

  // Then a shared library that loads and computes.
  link_with_lld({"-shared", "-o", dir + "/add.so", dir + "/add.o"}, "add.so");
  void* lib = dlopen((dir + "/add.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto packed = reinterpret_cast<int32_t (*)(void**)>(dlsym(lib, "add3__packed"));
  ASSERT_NE(packed, nullptr);
  std::vector<float> a = {1.5f, -2.0f, 3.25f}, b = {0.5f, 4.0f, -1.25f}, c(3, 0.0f);
  void* args[] = {a.data(), b.data(), c.data()};
  EXPECT_EQ(packed(args), 0);
  EXPECT_EQ(c, (std::vector<float>{2.0f, 2.0f, 2.0f}));
  dlclose(lib);
}

}  // namespace
}  // namespace kiln::codegen
