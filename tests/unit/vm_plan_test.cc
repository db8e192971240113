// The VM numbers its host program's values once, when it is made: a module
// that cannot run (a constant or kernel it lacks) is refused then, naming
// what is missing, and each run reads and writes its values by slot. Runs
// reuse one arena, so outputs must own their storage: a later run leaves an
// earlier run's outputs as they were.
#include <gtest/gtest.h>

#include <string>

#include "driver/compile_model.h"
#include "ir/text.h"
#include "random_args.h"
#include "runtime/vm.h"

namespace kiln {
namespace {

// A constant of `n` values in [-0.4, 0.4], as the text format writes one.
std::string constant(const std::string& shape, int n) {
  std::string values;
  for (int i = 0; i < n; ++i) values += (i ? ", " : "") + std::to_string(((i * 37) % 17 - 8) * 0.05);
  return "const(Tensor[" + shape + ", float32], [" + values + "])";
}

// Compiled kernels (the convs and what fuses into them, the residual add),
// their intermediates in the arena.
std::string chain() {
  return "def @main(%x: Tensor[(1, 4, 10, 10), float32]) -> Tensor[(1, 8, 10, 10), float32] {\n"
         "  %c = nn.conv2d(%x, " +
         constant("(8, 4, 3, 3)", 288) +
         ", padding=[1, 1, 1, 1])\n"
         "  %r = nn.relu(%c)\n"
         "  %c2 = nn.conv2d(%r, " +
         constant("(8, 8, 1, 1)", 64) +
         ")\n"
         "  %s = sigmoid(%c2)\n"
         "  %y = add(%s, %r)\n"
         "  return %y\n"
         "}\n";
}

Executable compile_chain() {
  Module m = parse_module(chain(), "chain.kir");
  Executable exe = driver::compile_model(m, driver::CompileOptions{});
  EXPECT_FALSE(exe.host_code.empty());
  EXPECT_GT(exe.memory.arena_bytes, 0);
  return exe;
}

std::string load_error(Executable exe) {
  try {
    VirtualMachine vm(std::move(exe));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VmPlan, ModuleWithoutAConstantItsProgramReadsIsRefusedWhenLoaded) {
  Executable exe = compile_chain();
  ASSERT_FALSE(exe.host.constants.empty());
  const std::string name = exe.host.constants[0].name;
  exe.constants.erase(name);
  const std::string error = load_error(std::move(exe));
  EXPECT_NE(error.find("constant '" + name + "' is missing from the module"), std::string::npos) << error;
}

TEST(VmPlan, ModuleWithAConstantOfAnotherShapeIsRefusedWhenLoaded) {
  Executable exe = compile_chain();
  const std::string name = exe.host.constants[0].name;
  exe.constants[name] = Tensor::zeros({3}, DType::Float32);
  const std::string error = load_error(std::move(exe));
  EXPECT_NE(error.find("constant '" + name + "' must be"), std::string::npos) << error;
}

TEST(VmPlan, ProgramCallingAKernelTheHostCodeLacksIsRefusedWhenLoaded) {
  Executable exe = compile_chain();
  ASSERT_FALSE(exe.host.nodes.empty());
  exe.host.nodes[0].kernel = "kiln_no_such_kernel";
  const std::string error = load_error(std::move(exe));
  EXPECT_NE(error.find("calls kernel 'kiln_no_such_kernel', which its host code does not define"),
            std::string::npos)
      << error;
}

TEST(VmPlan, InputOfAnotherShapeIsAnErrorNamingIt) {
  const VirtualMachine vm(compile_chain());
  try {
    vm.run({Tensor::zeros({1, 4, 10, 11}, DType::Float32)});
    FAIL() << "a (1, 4, 10, 11) input ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' must be"), std::string::npos) << e.what();
  }
  EXPECT_THROW(vm.run({}), Error);
}

TEST(VmPlan, LaterRunsLeaveEarlierOutputsAsTheyWere) {
  Module m = parse_module(chain(), "chain.kir");
  const VirtualMachine vm(compile_chain());
  const std::vector<Tensor> a = testing::random_args(*m.find("main"), 1, -1.0, 1.0);
  const std::vector<Tensor> b = testing::random_args(*m.find("main"), 2, -1.0, 1.0);
  const Tensor first = vm.run(a)[0];
  const Tensor kept = first.clone();
  const Tensor second = vm.run(b)[0];
  EXPECT_TRUE(first.bitwise_equal(kept)) << "the second run wrote into the first run's output";
  EXPECT_FALSE(second.bitwise_equal(kept)) << "other inputs gave the same output";
  EXPECT_TRUE(vm.run(a)[0].bitwise_equal(kept)) << "the same inputs gave another output";
}

}  // namespace
}  // namespace kiln
