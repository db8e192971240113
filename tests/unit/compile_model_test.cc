// The model compile pipeline (src/driver/): fusion rules, one case each;
// the memory plan; the compiled model against the reference interpreter;
// the summary, --strict-compile and the artifact's load-time checks.
#include <gtest/gtest.h>

#include <limits>

#include <cstring>

#include "driver/build.h"
#include "driver/compile_model.h"
#include "driver/kernels.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "random_args.h"
#include "runtime/module_file.h"
#include "test_util.h"
#include "tir/text.h"

namespace kiln {
namespace {

Module parse(const std::string& text) { return parse_module(text, "test.kir"); }

// The kernels plan_kernels makes for the host program of `text`, as
// "name:node,node" strings in order.
std::vector<std::string> kernels_of(const std::string& text) {
  Executable exe = build_executable(parse(text));
  driver::KernelPlan plan = driver::plan_kernels(exe.host);
  std::vector<std::string> out;
  for (const auto& k : plan.kernels) {
    std::string s = k.spec.name + ":";
    for (size_t i = 0; i < k.nodes.size(); ++i) s += (i ? "," : "") + exe.host.nodes[k.nodes[i]].name;
    out.push_back(s);
  }
  return out;
}

using Kernels = std::vector<std::string>;

TEST(Fusion, InjectiveChainIsOneKernel) {
  EXPECT_EQ(kernels_of(R"(
def @main(%x: Tensor[(4, 8), float32], %b: Tensor[(8), float32]) -> Tensor[(32), float32] {
  %a = add(%x, %b)
  %r = nn.relu(%a)
  %y = reshape(%r, newshape=[32])
  return %y
})"),
            (Kernels{"fused_add_relu_reshape:a,r,y"}));
}

TEST(Fusion, EpilogueJoinsTheConv) {
  EXPECT_EQ(kernels_of(R"(
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(1, 4, 1, 1), float32]) -> Tensor[(1, 4, 6, 6), float32] {
  %c = nn.conv2d(%x, %w)
  %a = add(%c, %b)
  %h = nn.hard_swish(%a)
  return %h
})"),
            (Kernels{"fused_conv2d_add_hard_swish:c,a,h"}));
}

TEST(Fusion, PrologueJoinsTheReduction) {
  EXPECT_EQ(kernels_of(R"(
def @main(%x: Tensor[(4, 8), float32]) -> Tensor[(4), float32] {
  %e = exp(%x)
  %s = sum(%e, axis=[1])
  %m = multiply(%s, %s)
  return %m
})"),
            (Kernels{"fused_exp_sum_multiply:e,s,m"}));
}

TEST(Fusion, NoPrologueIntoAnAnchorAndNoSecondAnchor) {
  // The relu before the conv stays apart (the conv would recompute it per
  // tap); the second conv starts a kernel of its own.
  EXPECT_EQ(kernels_of(R"(
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32]) -> Tensor[(1, 3, 8, 8), float32] {
  %r = nn.relu(%x)
  %c = nn.conv2d(%r, %w)
  %d = nn.conv2d(%c, %w)
  return %d
})"),
            (Kernels{"relu:r", "conv2d:c", "conv2d:d"}));
}

// a has two readers and c is a program output: neither is fused into its
// readers; b's one reader takes it.
TEST(Fusion, AValueWithTwoUsersOrAProgramOutputEndsItsKernel) {
  EXPECT_EQ(kernels_of(R"(
def @main(%x: Tensor[(4, 8), float32]) -> (Tensor[(4, 8), float32], Tensor[(4, 8), float32]) {
  %a = exp(%x)
  %b = nn.relu(%a)
  %c = add(%a, %b)
  %d = negative(%c)
  return (%c, %d)
})"),
            (Kernels{"exp:a", "fused_relu_add:b,c", "negative:d"}));
}

// An elementwise op whose inputs end two groups, each read by it alone:
// it joins one and takes in the other when that one holds injective ops
// only (the upsampled image is then never stored). The group with an
// anchor is the one joined (its tile's epilogue computes the upsampling);
// a second group with an anchor or a reduction stays a kernel of its own.
TEST(Fusion, InjectiveGroupsFeedingOneElementwiseOpMerge) {
  EXPECT_EQ(kernels_of(R"(
def @main(%x: Tensor[(1, 4, 8, 8), float32], %s: Tensor[(1, 4, 1, 1), float32], %z: Tensor[(1, 4, 4, 4), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %m = multiply(%x, %s)
  %a = add(%m, %x)
  %u = image.resize2d(%z, size=[8, 8])
  %y = add(%a, %u)
  return %y
})"),
            (Kernels{"fused_multiply_add_resize2d_add:m,a,u,y"}));
  EXPECT_EQ(kernels_of(R"(
def @main(%z: Tensor[(1, 4, 4, 4), float32], %x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 1, 1), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %u = image.resize2d(%z, size=[8, 8])
  %r = nn.relu(%u)
  %c = nn.conv2d(%x, %w)
  %y = add(%r, %c)
  return %y
})"),
            (Kernels{"fused_resize2d_relu_conv2d_add:u,r,c,y"}));
  EXPECT_EQ(kernels_of(R"(
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 1, 1), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %c = nn.conv2d(%x, %w)
  %d = nn.conv2d(%x, %w)
  %e = exp(%d)
  %y = add(%c, %e)
  return %y
})"),
            (Kernels{"fused_conv2d_add:c,y", "fused_conv2d_exp:d,e"}));
}

const char* kSmallNet = R"(
def @main(%x: Tensor[(1, 3, 12, 12), float32], %w: Tensor[(8, 3, 3, 3), float32], %b: Tensor[(1, 8, 1, 1), float32], %v: Tensor[(10, 8), float32]) -> Tensor[(1, 10), float32] {
  %c = nn.conv2d(%x, %w, padding=[1, 1])
  %a = add(%c, %b)
  %r = nn.relu(%a)
  %p = nn.max_pool2d(%r, pool_size=[2, 2], strides=[2, 2])
  %g = nn.adaptive_avg_pool2d(%p)
  %f = reshape(%g, newshape=[1, 8])
  %d = nn.dense(%f, %v)
  %s = nn.softmax(%d)
  return %s
})";

using testing::random_args;

// Compiles `m` and runs it on the VM: its one output against the
// interpreter's, within `tolerance`, on random arguments from `seed`.
void expect_compiled_matches_interpreter(const Module& m, uint64_t seed, double tolerance,
                                         driver::CompileSummary* summary = nullptr) {
  std::vector<Tensor> args = random_args(*m.find("main"), seed);
  std::vector<Tensor> want = interpret(m, "main", args);
  Executable exe = driver::compile_model(m, {}, summary);
  VirtualMachine vm(exe);
  std::vector<Tensor> got = vm.run(args);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < want[0].numel(); ++i)
    EXPECT_NEAR(got[0].get_as_double(i), want[0].get_as_double(i), tolerance) << i;
}

TEST(CompileModel, CompiledNetMatchesTheInterpreterAndTheArtifactRoundTrips) {
  Module m = parse(kSmallNet);
  std::vector<Tensor> args = random_args(*m.find("main"), 5);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, {}, &summary);
  EXPECT_EQ(summary.lowered_ops, summary.host_ops);
  EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
  EXPECT_LT(summary.kernels, summary.host_ops);  // something fused
  EXPECT_FALSE(exe.host_code.empty());
  // The CPU and the features the code may use, in the summary and the artifact.
  EXPECT_FALSE(summary.cpu.empty());
  EXPECT_EQ(exe.host_code.cpu_features, summary.cpu_features);
  EXPECT_NE(summary.str().find("; for " + summary.cpu + " ("), std::string::npos) << summary.str();
  for (const auto& n : exe.host.nodes) EXPECT_FALSE(n.kernel.empty()) << n.name << " is not a kernel call";
  // Through the .kmod bytes: loaded by the runtime alone.
  Executable loaded = decode_kmod(encode_kmod(exe), "test.kmod");
  for (Executable* e : {&exe, &loaded}) {
    VirtualMachine vm(*e);
    std::vector<Tensor> got = vm.run(args);
    ASSERT_EQ(got.size(), want.size());
    for (int64_t i = 0; i < want[0].numel(); ++i)
      EXPECT_NEAR(got[0].get_as_double(i), want[0].get_as_double(i), 1e-5) << i;
    // A second run reuses the arena and gives the same values.
    std::vector<Tensor> again = vm.run(args);
    EXPECT_TRUE(again[0].bitwise_equal(got[0]));
  }
}

// Merged groups (an upsampling and an elementwise chain into one add; an
// upsampling into a conv's epilogue) compute what the interpreter does.
TEST(CompileModel, MergedInjectiveGroupsMatchTheInterpreter) {
  Module m = parse(R"(
def @main(%x: Tensor[(1, 8, 16, 16), float32], %s: Tensor[(1, 8, 1, 1), float32], %z: Tensor[(1, 8, 8, 8), float32], %w: Tensor[(8, 8, 1, 1), float32]) -> Tensor[(1, 8, 16, 16), float32] {
  %m = multiply(%x, %s)
  %a = add(%m, %x)
  %u = image.resize2d(%z, size=[16, 16])
  %y = add(%a, %u)
  %c = nn.conv2d(%y, %w)
  %v = image.resize2d(%z, size=[16, 16], method="linear")
  %o = add(%c, %v)
  return %o
})");
  driver::CompileSummary summary;
  expect_compiled_matches_interpreter(m, 7, 1e-4, &summary);
  EXPECT_EQ(summary.kernels, 2) << summary.str();
}

// A softmax with an elementwise epilogue in its kernel still runs row by
// row (schedule::RowTile over the kernel's output): one parallel loop over
// the rows, one row's exponentials at a time; values as the interpreter's.
TEST(CompileModel, SoftmaxWithAnEpilogueRunsRowByRow) {
  Module m = parse(R"(
def @main(%x: Tensor[(16, 3000), float32], %b: Tensor[(16, 3000), float32]) -> Tensor[(16, 3000), float32] {
  %s = nn.softmax(%x)
  %y = add(%s, %b)
  %z = multiply(%y, %y)
  return %z
})");
  Executable built = build_executable(m);
  driver::KernelPlan plan = driver::plan_kernels(built.host);
  ASSERT_EQ(plan.kernels.size(), 1u);
  driver::LoweredKernels lowered = driver::lower_planned_kernels(built.host, plan, {32, 16});
  ASSERT_EQ(lowered.funcs.size(), 1u);
  const std::string ir = tir::print_prim_func(*lowered.funcs[0]);
  EXPECT_NE(ir.find("%softmax_0_exp: Buffer[(1, 3000)"), std::string::npos) << ir;
  EXPECT_LT(ir.find("parallel"), ir.find("allocate")) << ir;
  expect_compiled_matches_interpreter(m, 9, 1e-5);
}

TEST(CompileModel, VerifyChecksEveryKernelAndTheProfileHasOneEventEach) {
  Module m = parse(kSmallNet);
  Executable exe = driver::compile_model(m, {});
  size_t calls = exe.host.nodes.size();
  VirtualMachine vm(exe);
  VirtualMachine::RunOptions ro;
  ro.verify = true;
  ro.record_events = true;
  RunResult run = vm.run(random_args(*m.find("main"), 9), ro);
  ASSERT_EQ(run.checks.size(), calls);
  for (const auto& c : run.checks) EXPECT_TRUE(c.ok && c.host_kernel) << c.str();
  size_t host_events = 0;
  for (const auto& e : run.events) host_events += e.backend == "host";
  EXPECT_EQ(host_events, calls);
}

TEST(CompileModel, ArenaHoldsEveryIntermediateWithoutOverlapWhileLive) {
  Module m = parse(kSmallNet);
  Executable exe = driver::compile_model(m, {});
  const MemoryPlan& plan = exe.memory;
  ASSERT_GT(plan.arena_bytes, 0);
  EXPECT_LE(plan.arena_bytes, plan.intermediate_bytes);
  // Every value the plan places is written by one node and read until its
  // last reader; two values live at once never share a byte.
  std::map<std::string, std::pair<size_t, size_t>> live;
  std::map<std::string, int64_t> bytes;
  for (size_t i = 0; i < exe.host.nodes.size(); ++i) {
    for (const auto& in : exe.host.nodes[i].inputs)
      if (live.count(in)) live[in].second = i;
    for (const auto& o : exe.host.nodes[i].outputs) {
      live[o.name] = {i, i};
      bytes[o.name] = shape_numel(o.desc.shape) * dtype_bytes(o.desc.dtype);
    }
  }
  for (const auto& [a, oa] : plan.offsets)
    for (const auto& [b, ob] : plan.offsets) {
      if (a >= b) continue;
      bool together = live[a].first <= live[b].second && live[b].first <= live[a].second;
      bool overlap = oa < ob + bytes[b] && ob < oa + bytes[a];
      EXPECT_FALSE(together && overlap) << a << " and " << b << " share memory while both are live";
    }
}

TEST(CompileModel, OpsWithoutALoweringAreNamedAndStrictCompileRefusesThem) {
  Module m = parse(R"(
def @main(%x: Tensor[(4, 4), float32]) -> Tensor[(4,), float32] {
  %e = nn.relu(%x)
  %a = einsum(%e, equation="ii->i")
  return %a
})");
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, {}, &summary);
  ASSERT_EQ(summary.reference_ops.count("einsum"), 1u);
  EXPECT_EQ(summary.reference_ops.at("einsum").first, 1);
  EXPECT_NE(summary.str().find("1 op on reference kernels (einsum x1: "), std::string::npos) << summary.str();
  std::vector<Tensor> args = random_args(*m.find("main"), 3);
  VirtualMachine vm(exe);
  EXPECT_TRUE(vm.run(args)[0].bitwise_equal(interpret(m, "main", args)[0]));
  driver::CompileOptions strict;
  strict.strict_compile = true;
  std::string err = testing::error_of([&] { driver::compile_model(m, strict); });
  EXPECT_NE(err.find("--strict-compile"), std::string::npos) << err;
  EXPECT_NE(err.find("einsum x1"), std::string::npos) << err;
}

// `m` compiled with no op on a reference kernel; on random arguments (from
// `seed`) with indices `good` as argument 1 the VM gives the interpreter's
// values bit for bit, and with `bad` both fail naming `message`.
void expect_compiled_and_checked_as_the_interpreter(const Module& m, uint64_t seed, Tensor good, Tensor bad,
                                                    const std::string& message) {
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, {}, &summary);
  EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
  std::vector<Tensor> args = random_args(*m.find("main"), seed);
  args[1] = std::move(good);
  VirtualMachine vm(exe);
  EXPECT_TRUE(vm.run(args)[0].bitwise_equal(interpret(m, "main", args)[0]));
  args[1] = std::move(bad);
  std::string want = testing::error_of([&] { interpret(m, "main", args); });
  std::string got = testing::error_of([&] { vm.run(args); });
  EXPECT_NE(want.find(message), std::string::npos) << want;
  EXPECT_NE(got.find(message), std::string::npos) << got;
}

// An embedding lookup: take is compiled as its own kernel (opaque, so its
// indices are a kernel input), checks every index first and fails the run
// with the reference kernel's message for one out of range.
TEST(CompileModel, TakeIsCompiledAndChecksItsIndicesAsTheInterpreter) {
  const std::string text = R"(
def @main(%table: Tensor[(50, 8), float32], %ids: Tensor[(2, 3), int64], %pos: Tensor[(3, 8), float32]) -> Tensor[(2, 3, 8), float32] {
  %e = take(%table, %ids)
  %a = add(%e, %pos)
  %y = nn.relu(%a)
  return %y
})";
  EXPECT_EQ(kernels_of(text), (Kernels{"take:e", "fused_add_relu:a,y"}));
  Module m = parse(text);
  expect_compiled_and_checked_as_the_interpreter(
      m, 9, Tensor::from_ints({2, 3}, {0, 49, -1, -50, 7, 7}),
      Tensor::from_ints({2, 3}, {0, 49, -1, -51, 7, 7}),
      "take: index -51 (at position 3 of indices) is out of range for "
      "axis 0 of size 50 (expected -50..49)");
}

// An integer divide by a computed divisor is its own kernel (opaque, so
// its divisor is a kernel input it checks first): a zero fails the run with
// the interpreter's message, and -1 negates (INT_MIN wraps).
TEST(CompileModel, IntegerDivideIsCompiledAndChecksItsDivisorAsTheInterpreter) {
  const std::string text = R"(
def @main(%x: Tensor[(2, 4), int32], %d: Tensor[(2, 4), int32]) -> Tensor[(2, 4), int32] {
  %e = subtract(%d, %x)
  %q = divide(%x, %e)
  %y = add(%q, %x)
  return %y
})";
  EXPECT_EQ(kernels_of(text), (Kernels{"subtract:e", "divide:q", "add:y"}));
  Module m = parse(text);
  // e = d - x: 9, -1 (x = INT_MIN + 0 there: d wraps), -3, 2, ...; then 0.
  const int64_t int_min = std::numeric_limits<int32_t>::min();
  Tensor x = Tensor::from_ints({2, 4}, {7, int_min, 5, -8, 100, -100, 3, 1}, DType::Int32);
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, {}, &summary);
  EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
  VirtualMachine vm(exe);
  Tensor good =
      Tensor::from_ints({2, 4}, {16, int_min - 1 + (int64_t(1) << 32), 2, -6, 103, -107, 9, 5}, DType::Int32);
  std::vector<Tensor> args = {x, good};
  EXPECT_TRUE(vm.run(args)[0].bitwise_equal(interpret(m, "main", args)[0]));
  args[1] = Tensor::from_ints({2, 4}, {16, 0, 2, -6, 103, -107, 3, 5}, DType::Int32);
  const std::string want = testing::error_of([&] { interpret(m, "main", args); });
  const std::string got = testing::error_of([&] { vm.run(args); });
  EXPECT_NE(want.find("divide: integer division by zero"), std::string::npos) << want;
  EXPECT_NE(got.find("divide: integer division by zero"), std::string::npos) << got;
}

// A cache update and a running sum: scatter_nd and cumsum are compiled
// (extern statements), the scatter checking its row indices first as the
// reference kernel does.
TEST(CompileModel, ScatterAndCumsumAreCompiledAsTheInterpreterRunsThem) {
  const std::string text = R"(
def @main(%cache: Tensor[(4, 8), float32], %rows: Tensor[(2, 1), int64], %new: Tensor[(2, 8), float32]) -> Tensor[(4, 8), float32] {
  %u = scatter_nd(%cache, %rows, %new)
  %s = cumsum(%u, axis=0, reverse=1)
  %y = nn.relu(%s)
  return %y
})";
  EXPECT_EQ(kernels_of(text), (Kernels{"scatter_nd:u", "cumsum:s", "relu:y"}));
  Module m = parse(text);
  expect_compiled_and_checked_as_the_interpreter(
      m, 5, Tensor::from_ints({2, 1}, {-1, 1}), Tensor::from_ints({2, 1}, {2, 4}),
      "scatter_nd: index 4 (at position 1 of indices) is out of range for "
      "axis 0 of size 4 (expected -4..3)");
}

// Attention written with einsums, as PyTorch exports some: decompose-einsum
// makes them matmuls, transposes, reshapes and sums, all compiled, with the
// interpreter's values (which run the einsums on their reference kernel).
TEST(CompileModel, EinsumsAreCompiledAsProducts) {
  Module m = parse(R"(
def @main(%q: Tensor[(2, 3, 5, 8), float32], %k: Tensor[(2, 3, 7, 8), float32], %v: Tensor[(2, 3, 7, 8), float32], %w: Tensor[(8, 6), float32], %u: Tensor[(6, 4), float32]) -> Tensor[(3, 4, 5), float32] {
  %s = einsum(%q, %k, equation="bhqd,bhkd->bhqk")
  %p = nn.softmax(%s)
  %o = einsum(%p, %v, equation="bhqk,bhkd->bhqd")
  %y = einsum(%o, %w, %u, equation="bhqd,dj,jc->hcq")
  return %y
})");
  driver::CompileSummary summary;
  expect_compiled_matches_interpreter(m, 13, 1e-4, &summary);
  EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
}

// Recurrent layers unrolled by decompose-recurrent: a bidirectional LSTM
// with peepholes, initial states, clipping and sequence lengths below the
// steps (masked steps; the reverse direction starting at each entry's last
// one), GRUs with and without linear_before_reset, and an RNN of Relu;
// every output within float32 rounding of the reference kernels', no op
// left on them.
TEST(CompileModel, RecurrentLayersAreCompiledAsTheirSteps) {
  const char* text = R"(
def @main(%x: Tensor[(5, 3, 6), float32], %w: Tensor[(2, 16, 6), float32], %r: Tensor[(2, 16, 4), float32], %b: Tensor[(2, 32), float32], %lens: Tensor[(3,), int32], %h0: Tensor[(2, 3, 4), float32], %c0: Tensor[(2, 3, 4), float32], %p: Tensor[(2, 12), float32], %gw: Tensor[(1, 12, 6), float32], %gr: Tensor[(1, 12, 4), float32], %gb: Tensor[(1, 24), float32], %rw: Tensor[(2, 4, 6), float32], %rr: Tensor[(2, 4, 4), float32]) -> (Tensor[(5, 2, 3, 4), float32], Tensor[(2, 3, 4), float32], Tensor[(2, 3, 4), float32], Tensor[(5, 1, 3, 4), float32], Tensor[(1, 3, 4), float32], Tensor[(5, 1, 3, 4), float32], Tensor[(5, 2, 3, 4), float32], Tensor[(2, 3, 4), float32]) {
  %l = nn.lstm(%x, %w, %r, %b, %lens, %h0, %c0, %p, hidden_size=4, direction="bidirectional", clip=2.5)
  %g1 = nn.gru(%x, %gw, %gr, %gb, hidden_size=4, linear_before_reset=1)
  %g2 = nn.gru(%x, %gw, %gr, %gb, hidden_size=4, direction="reverse")
  %n = nn.rnn(%x, %rw, %rr, hidden_size=4, direction="bidirectional", activations="Relu")
  return (%l.0, %l.1, %l.2, %g1.0, %g1.1, %g2.0, %n.0, %n.1)
})";
  Module m = parse(text);
  std::vector<Tensor> args = random_args(*m.find("main"), 21);
  args[4] = Tensor::from_ints({3}, {5, 2, 0}, DType::Int32);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, {}, &summary);
  EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
  std::vector<Tensor> got = VirtualMachine(exe).run(args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o)
    for (int64_t i = 0; i < want[o].numel(); ++i)
      ASSERT_NEAR(got[o].get_as_double(i), want[o].get_as_double(i), 2e-5)
          << "output " << o << " element " << i;
}

// Equations of every shape decompose-einsum meets: an inner product to a
// scalar, an outer product, a sum of everything, a transpose, batches,
// "..." axes, implicit output, an elementwise product (no reduced axis),
// three operands; and a diagonal it leaves to the reference kernel.
TEST(CompileModel, EinsumEquationsCompileToTheInterpretersValues) {
  struct Case {
    const char* equation;
    const char* inputs;
    const char* output;
  };
  const Case cases[] = {
      {"i,i->", "%a: Tensor[(7,), float32], %b: Tensor[(7,), float32]", "Tensor[(), float32]"},
      {"i,j->ij", "%a: Tensor[(3,), float32], %b: Tensor[(5,), float32]", "Tensor[(3, 5), float32]"},
      {"ij->", "%a: Tensor[(3, 4), float32]", "Tensor[(), float32]"},
      {"ij->ji", "%a: Tensor[(3, 4), float32]", "Tensor[(4, 3), float32]"},
      {"bij,bjk->bik", "%a: Tensor[(2, 3, 4), float32], %b: Tensor[(2, 4, 5), float32]",
       "Tensor[(2, 3, 5), float32]"},
      {"...ij,...jk->...ik", "%a: Tensor[(2, 2, 3, 4), float32], %b: Tensor[(2, 2, 4, 5), float32]",
       "Tensor[(2, 2, 3, 5), float32]"},
      {"ij,jk", "%a: Tensor[(3, 4), float32], %b: Tensor[(4, 5), float32]", "Tensor[(3, 5), float32]"},
      {"ij,ij->ij", "%a: Tensor[(3, 4), float32], %b: Tensor[(3, 4), float32]", "Tensor[(3, 4), float32]"},
      {"abc,cd,de->eba",
       "%a: Tensor[(2, 3, 4), float32], %b: Tensor[(4, 5), float32], %c: Tensor[(5, 6), float32]",
       "Tensor[(6, 3, 2), float32]"},
      {"ii->i", "%a: Tensor[(4, 4), float32]", "Tensor[(4,), float32]"},
  };
  for (const Case& c : cases) {
    std::string args = "%a";
    if (std::string(c.inputs).find("%b") != std::string::npos) args += ", %b";
    if (std::string(c.inputs).find("%c") != std::string::npos) args += ", %c";
    Module m = parse(std::string("def @main(") + c.inputs + ") -> " + c.output + " {\n  %y = einsum(" + args +
                     ", equation=\"" + c.equation + "\")\n  return %y\n}\n");
    driver::CompileSummary summary;
    SCOPED_TRACE(c.equation);
    expect_compiled_matches_interpreter(m, 3, 1e-5, &summary);
    EXPECT_EQ(summary.reference_ops.empty(), std::string(c.equation) != "ii->i") << summary.str();
  }
}

TEST(CompileModel, HostCodeForMissingCpuFeaturesIsRefusedAtLoad) {
  Executable exe = driver::compile_model(parse(kSmallNet), {});
  exe.host_code.cpu_features.push_back("avx512-imaginary");
  std::string err = testing::error_of([&] { VirtualMachine vm(exe); });
  EXPECT_NE(err.find("avx512-imaginary"), std::string::npos) << err;
  EXPECT_NE(err.find("Recompile"), std::string::npos) << err;
}

// Two modules loaded at once, each with a kernel named kiln_add: each runs
// its own code. (The host code is loaded from /proc/self/fd/N, and the
// dynamic loader hands back an object already loaded from the same path:
// N stays open while a module is loaded, so the second one cannot get it.)
TEST(CompileModel, TwoModulesLoadedAtOnceRunTheirOwnKernels) {
  const char* twice =
      "def @main(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] {\n"
      "  %y = add(%x, %x)\n  return %y\n}\n";
  const char* plus_one =
      "def @main(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] {\n"
      "  %y = add(%x, const(Tensor[(4,), float32], [1.0, 1.0, 1.0, 1.0]))\n  return %y\n}\n";
  std::vector<std::unique_ptr<VirtualMachine>> vms;
  for (int round = 0; round < 3; ++round)
    for (const char* text : {twice, plus_one})
      vms.push_back(std::make_unique<VirtualMachine>(driver::compile_model(parse(text), {})));
  Tensor x = Tensor::from_floats({4}, {1, 2, 3, 4});
  for (size_t i = 0; i < vms.size(); ++i) {
    Tensor y = vms[i]->run({x})[0];
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(y.data<float>()[k], i % 2 == 0 ? 2.0f * float(k + 1) : float(k + 2)) << "module " << i;
  }
}

TEST(CompileModel, AnImportTheRuntimeLacksIsRefusedAtLoad) {
  Executable exe = driver::compile_model(parse(kSmallNet), {});
  exe.host_code.imports.push_back("KilnBackendNoSuchFunction");
  std::string err = testing::error_of([&] { VirtualMachine vm(exe); });
  EXPECT_NE(err.find("KilnBackendNoSuchFunction"), std::string::npos) << err;
}

TEST(CompileModel, AModuleOfTheFirstFormatIsRefusedWithAVersionError) {
  Executable exe = driver::compile_model(parse(kSmallNet), {});
  std::string bytes = encode_kmod(exe);
  uint32_t old_version = 1;
  std::memcpy(bytes.data() + 8, &old_version, sizeof old_version);
  std::string err = testing::error_of([&] { decode_kmod(bytes, "old.kmod"); });
  EXPECT_NE(err.find("format version 1 is not supported"), std::string::npos) << err;
  EXPECT_NE(err.find("recompile"), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln
