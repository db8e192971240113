// lower-workspace-alloc end to end: a temporary too large for the stack runs
// (on the host JIT and on Hexagon under QEMU) from the runtime's workspace,
// and a workspace that cannot be had is an error naming the buffer, from
// either runtime, never a crash.
#include <gtest/gtest.h>

#include "codegen/prim_runner.h"
#include "ir/text.h"
#include "test_util.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {
namespace {

PrimFunc prim_from_text(const std::string& text) {
  return parse_module(text, "workspace.kir").prim_functions.at(0);
}

// C = A * 2 + 1 through a temporary of the same size.
std::string twice_plus_one(int64_t n) {
  std::string s = std::to_string(n);
  return "prim @twice(%A: Buffer[(" + s + "), float32], %C: Buffer[(" + s + "), float32]) {\n" +
         "  allocate %T: Buffer[(" + s + "), float32]\n" + "  for %i from 0 extent " + s +
         " {\n    %T[%i] = %A[%i] * 2.0\n  }\n" + "  for %i from 0 extent " + s +
         " {\n    %C[%i] = %T[%i] + 1.0\n  }\n" + "  return 0\n}\n";
}

codegen::PrimRunResult run_on(const std::string& target, const PrimFunc& f,
                              const std::map<std::string, Tensor>& in) {
  codegen::PrimRunOptions o;
  o.target = codegen::parse_target(target);
  return codegen::run_prim_function(f, in, o);
}

using testing::error_of;

void expect_twice_plus_one(const Tensor& a, const Tensor& c) {
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] * 2.0f + 1.0f) << i;
}

Tensor ramp(int64_t n) {
  Tensor t = Tensor::empty({n}, DType::Float32);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = float(i % 1000) * 0.25f - 100.0f;
  return t;
}

TEST(TirWorkspace, SixteenMiBTemporaryRunsOnTheHost) {
  // 16 MiB: more than the main thread's whole stack.
  const int64_t n = 4 << 20;
  PrimFunc f = prim_from_text(twice_plus_one(n));
  std::string lowered = print_prim_func(*lower_for_build(f));
  EXPECT_NE(lowered.find("call_extern<handle>(\"KilnBackendAllocWorkspace\", uint64(16777216), uint32(64))"),
            std::string::npos)
      << lowered;
  Tensor a = ramp(n);
  expect_twice_plus_one(a, run_on("llvm", f, {{"A", a}}).outputs.at(0).second);
}

TEST(TirWorkspace, FourMiBTemporaryRunsOnHexagon) {
  const int64_t n = 1 << 20;
  PrimFunc f = prim_from_text(twice_plus_one(n));
  Tensor a = ramp(n);
  Tensor c = run_on("hexagon-v68", f, {{"A", a}}).outputs.at(0).second;
  expect_twice_plus_one(a, c);
}

const char* kHuge = R"(prim @huge(%A: Buffer[(4), int8], %C: Buffer[(4), int8]) {
  allocate %T: Buffer[(SIZE), int8]
  %T[0] = %A[0]
  %C[0] = %T[0]
  return 0
}
)";

// Extents past int32 are written int64(N) in the text.
std::string huge(int64_t bytes, const std::string& int_type = "") {
  std::string s = kHuge;
  std::string n = std::to_string(bytes);
  s.replace(s.find("SIZE"), 4, int_type.empty() ? n : int_type + "(" + n + ")");
  return s;
}

TEST(TirWorkspace, ExhaustedWorkspaceIsAnErrorOnHexagon) {
  // 80 MiB: more than the Hexagon runtime's 64 MiB workspace pool.
  PrimFunc f = prim_from_text(huge(80 << 20));
  std::string e = error_of([&] { run_on("hexagon-v68", f, {{"A", Tensor::zeros({4}, DType::Int8)}}); });
  EXPECT_NE(
      e.find("@huge failed (code -1): buffer %T (83886080 bytes, scope global): KilnBackendAllocWorkspace: "
             "out of memory for 83886080 bytes (workspace pool: 67108864 bytes free, largest free block "
             "67108864 bytes, capacity 67108864 bytes)"),
      std::string::npos)
      << e;
}

TEST(TirWorkspace, ImpossibleWorkspaceIsAnErrorOnTheHost) {
  // 16 TiB cannot be had: the allocation fails and the kernel says which buffer.
  PrimFunc f = prim_from_text(huge(int64_t(1) << 44, "int64"));
  std::string e = error_of([&] { run_on("llvm", f, {{"A", Tensor::zeros({4}, DType::Int8)}}); });
  EXPECT_NE(e.find("@huge failed (code -1): buffer %T (17592186044416 bytes, scope global): "
                   "KilnBackendAllocWorkspace: out of memory for 17592186044416 bytes"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace kiln::tir
