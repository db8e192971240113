// --check-bounds: generated code checks indices and integer divisors, on the
// host and on Hexagon (under qemu-hexagon-static), and reports kernel,
// buffer, index and extent as an error; constant faults and literals out of
// range are compile-time errors. The golden files tests/golden/tir/check_bounds*.kir
// show the checks the pass inserts.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cli_util.h"
#include "codegen/prim_runner.h"
#include "driver/compile_model.h"
#include "frontend/load_model.h"
#include "interp/interpreter.h"
#include "kiln/runtime/npy.h"
#include "random_args.h"
#include "runtime/vm.h"
#include "tir/text.h"

namespace kiln {
namespace {

// B[i] = A[A[i]] / n: A's values index A itself, n divides.
const char* kGather = R"(prim @gather(%A: Buffer[(4), int32], %B: Buffer[(4), int32], %n: int32) {
  for %i from 0 extent 4 {
    %B[%i] = %A[%A[%i]] / %n
  }
  return 0
}
)";

Tensor ints(std::vector<int32_t> v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::Int32);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(int32_t));
  return t;
}

Tensor scalar(int32_t v) {
  Tensor t = Tensor::empty({}, DType::Int32);
  *t.data<int32_t>() = v;
  return t;
}

std::string run_error(const std::string& target, std::vector<int32_t> a, int32_t n) {
  codegen::PrimRunOptions o;
  o.target = codegen::parse_target(target);
  o.check_bounds = true;
  try {
    codegen::run_prim_function(tir::parse_prim_functions(kGather, "gather.kir").at(0),
                               {{"A", ints(a)}, {"n", scalar(n)}}, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CheckBounds, HostKernelComputesWhenIndicesAreInside) {
  codegen::PrimRunOptions o;
  o.check_bounds = true;
  auto r = codegen::run_prim_function(tir::parse_prim_functions(kGather, "gather.kir").at(0),
                                      {{"A", ints({3, 0, 1, 2})}, {"n", scalar(2)}}, o);
  ASSERT_EQ(r.outputs.size(), 1u);
  const int32_t* b = r.outputs[0].second.data<int32_t>();
  // A[A] = {2, 3, 0, 1}, halved.
  EXPECT_EQ(std::vector<int32_t>(b, b + 4), (std::vector<int32_t>{1, 1, 0, 0}));
}

TEST(CheckBounds, HostKernelReportsTheIndexOutsideItsBuffer) {
  EXPECT_NE(run_error("llvm", {1, 2, 3, 400000000}, 1)
                .find("kernel @gather: index 400000000 of buffer %A (dimension 0) is outside [0, 4)"),
            std::string::npos);
  EXPECT_NE(run_error("llvm", {0, -1, 0, 0}, 1).find("index -1 of buffer %A"), std::string::npos);
}

TEST(CheckBounds, HostKernelReportsADivisionByZero) {
  EXPECT_NE(run_error("llvm", {0, 1, 2, 3}, 0)
                .find("kernel @gather: integer division by zero: %n is 0 in %A[%A[%i]] / %n"),
            std::string::npos);
}

TEST(CheckBounds, HexagonKernelReportsTheIndexAndTheDivision) {
  EXPECT_NE(run_error("hexagon-v68", {1, 2, 3, 400000000}, 1)
                .find("kernel @gather: index 400000000 of buffer %A (dimension 0) is outside [0, 4)"),
            std::string::npos);
  EXPECT_NE(run_error("hexagon-v68", {0, 1, 2, 3}, 0).find("integer division by zero: %n is 0"),
            std::string::npos);
}

TEST(CheckBounds, ConstantFaultsAreCompileTimeErrorsWithoutTheOption) {
  const char* text = R"(prim @f(%A: Buffer[(4), int32], %B: Buffer[(4), int32]) {
  for %i from 0 extent 4 {
    %B[%i] = %A[7]
  }
  return 0
}
)";
  codegen::PrimRunOptions o;  // no run-time checks
  try {
    codegen::run_prim_function(tir::parse_prim_functions(text, "f.kir").at(0), {{"A", ints({0, 1, 2, 3})}},
                               o);
    FAIL() << "a constant index outside its buffer compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("buffer %A is indexed at 7 in dimension 0, outside [0, 4)"),
              std::string::npos)
        << e.what();
  }
}

std::string parse_error(const std::string& text) {
  try {
    tir::parse_prim_functions(text, "f.kir");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CheckBounds, FloatLiteralsBeyondTheirTypeAreErrors) {
  const std::string head = "prim @f(%A: Buffer[(4), float32]) {\n  %A[0] = ";
  EXPECT_NE(parse_error(head + "1e39\n  return 0\n}\n").find("1e39 is outside the range of float32"),
            std::string::npos);
  EXPECT_NE(parse_error(head + "float32(-1e39)\n  return 0\n}\n").find("is outside the range of float32"),
            std::string::npos);
  EXPECT_EQ(parse_error(head + "3.4e38\n  return 0\n}\n"), "");
  EXPECT_EQ(parse_error(head + "inf\n  return 0\n}\n"), "");
}

TEST(CheckBounds, NegativeBufferDimensionsAreParseErrors) {
  EXPECT_NE(parse_error("prim @f(%A: Buffer[(4, -3), float32]) {\n  return 0\n}\n")
                .find("buffer %A has dimension 1 of -3; a dimension is a size, 0 or more"),
            std::string::npos);
}

// kiln's own lowerings under the checks: a compiled CNN (convs with padded
// windows, pools, dense, softmax) runs with no check failing and gives the
// interpreter's values.
TEST(CheckBounds, CompiledModelPassesItsChecksAndMatchesTheInterpreter) {
  Module m = load_model(std::string(KILN_SOURCE_DIR) + "/examples/small_cnn/small_cnn.kir");
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 11);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions o;
  o.check_bounds = true;
  driver::CompileSummary summary;
  VirtualMachine vm(driver::compile_model(m, o, &summary));
  EXPECT_EQ(summary.reference_ops.size(), 0u) << summary.str();
  std::vector<Tensor> got = vm.run(args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o2 = 0; o2 < got.size(); ++o2)
    for (int64_t i = 0; i < want[o2].numel(); ++i)
      ASSERT_NEAR(got[o2].get_as_double(i), want[o2].get_as_double(i), 1e-5) << "element " << i;
}

// The same on the DSP: small_cnn offloaded whole to hexagon with its
// kernels checked (--check-bounds sets hexagon.check_bounds=on), under QEMU.
TEST(CheckBounds, HexagonRegionsPassTheirChecksAndMatchTheInterpreter) {
  Module m = load_model(std::string(KILN_SOURCE_DIR) + "/examples/small_cnn/small_cnn.kir");
  std::vector<Tensor> args = testing::random_args(*m.find("main"), 12);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions o;
  o.partition.backends = {"hexagon"};
  o.codegen.backend["hexagon"]["check_bounds"] = "on";
  driver::CompileSummary summary;
  VirtualMachine vm(driver::compile_model(m, o, &summary));
  EXPECT_NE(summary.report.summary().find("11 of 11 ops offloaded"), std::string::npos)
      << summary.report.summary();
  std::vector<Tensor> got = vm.run(args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o2 = 0; o2 < got.size(); ++o2)
    for (int64_t i = 0; i < want[o2].numel(); ++i)
      ASSERT_NEAR(got[o2].get_as_double(i), want[o2].get_as_double(i), 1e-5) << "element " << i;
}

class CheckBoundsCli : public testing::CliTest {
 protected:
  CheckBoundsCli() : CliTest("check_bounds_cli") {}
};

TEST_F(CheckBoundsCli, RunFailsNamingKernelBufferIndexAndExtent) {
  const std::string kir = file("gather.kir", kGather);
  write_npy(path("a.npy"), ints({0, 1, 2, 9}));
  write_npy(path("n.npy"), scalar(1));
  const std::string args = "run " + kir + " --input A=" + path("a.npy") + " --input n=" + path("n.npy");
  testing::CliResult r = testing::kiln_cmd(args + " --check-bounds");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: @gather failed (code -1): kernel @gather: index 9 of buffer %A (dimension 0) "
                       "is outside [0, 4)"),
            std::string::npos)
      << r.out;
  write_npy(path("a.npy"), ints({3, 2, 1, 0}));
  r = testing::kiln_cmd(args + " --check-bounds");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[0, 1, 2, 3]"), std::string::npos) << r.out;
  for (const char* cmd : {"build", "compile"})
    EXPECT_NE(testing::kiln_cmd(std::string(cmd) + " --help").out.find("--check-bounds"), std::string::npos)
        << cmd;
}

}  // namespace
}  // namespace kiln
