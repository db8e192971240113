// Graph optimizations against the reference interpreter: a graph with random
// weights computes the same values before and after fold-batch-norm,
// fold-scale-shift and canonicalize-activations, within float rounding;
// after the whole optimization list, conv2d + batch_norm + HardSwish (as
// ONNX spells it) and conv2d + bias + scale + shift + hard_swish are each
// one fused dispatch on the example NPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "runtime/vm.h"
#include "transform/partition.h"
#include "transform/pass.h"

namespace kiln {
namespace {

Type f32(Shape s) { return tensor_type(std::move(s), DType::Float32); }

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& e : v) e = dist(rng);
  return Tensor::from_floats(shape, v);
}

// Counts the calls of `op` in the module's functions.
int count_calls(const Module& m, const std::string& op) {
  int n = 0;
  for (const auto& f : m.functions)
    for (const auto& b : f->bindings)
      if (auto* c = as<CallNode>(b.value); c && c->is_op_call() && c->op->name == op) ++n;
  return n;
}

// Largest |a - b| relative to the largest |b|: outputs near zero come from
// cancelling sums, whose rounding error is that of the terms, not the result.
double max_relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    scale = std::max(scale, std::fabs(b.get_as_double(i)));
    worst = std::max(worst, std::fabs(a.get_as_double(i) - b.get_as_double(i)));
  }
  return scale == 0 ? worst : worst / scale;
}

void expect_same_values(const Module& before, const Module& after, const std::vector<Tensor>& args,
                        double tolerance) {
  std::vector<Tensor> want = interpret(before, "main", args);
  std::vector<Tensor> got = interpret(after, "main", args);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_LE(max_relative_error(got[i], want[i]), tolerance) << "output " << i;
}

// conv2d (optionally grouped) + bias add (the ONNX importer's form) +
// batch_norm + relu, random weights and statistics.
Module conv_bn_module(std::mt19937& rng, int64_t groups, bool bias) {
  const int64_t c_in = 4, c_out = 8;
  Var x = make_var("x", f32({1, c_in, 9, 9}));
  Tensor w = random_tensor({c_out, c_in / groups, 3, 3}, rng, -1, 1);
  std::vector<Binding> bs;
  Var conv = make_var("conv", f32({1, c_out, 5, 5}));
  bs.push_back({conv, make_op_call("nn.conv2d", {x, make_constant(w)},
                                   {{"strides", std::vector<int64_t>{2, 2}},
                                    {"padding", std::vector<int64_t>{1, 1, 1, 1}},
                                    {"groups", groups}})});
  Expr data = conv;
  if (bias) {
    Var b = make_var("bias", f32({1, c_out, 5, 5}));
    bs.push_back(
        {b, make_op_call("add", {conv, make_constant(random_tensor({1, c_out, 1, 1}, rng, -1, 1))})});
    data = b;
  }
  Var bn = make_var("bn", f32({1, c_out, 5, 5}));
  bs.push_back({bn, make_op_call("nn.batch_norm",
                                 {data, make_constant(random_tensor({c_out}, rng, 0.5, 2)),
                                  make_constant(random_tensor({c_out}, rng, -1, 1)),
                                  make_constant(random_tensor({c_out}, rng, -1, 1)),
                                  make_constant(random_tensor({c_out}, rng, 0.1, 3))},
                                 {{"epsilon", 1e-3}})});
  Var r = make_var("r", f32({1, c_out, 5, 5}));
  bs.push_back({r, make_op_call("nn.relu", {bn})});
  Module m;
  m.functions.push_back(make_function("main", {x}, bs, r));
  return m;
}

TEST(GraphOpt, FoldBatchNormIntoConvMatchesInterpreter) {
  std::mt19937 rng(7);
  for (int64_t groups : {int64_t{1}, int64_t{4}})
    for (bool bias : {false, true}) {
      SCOPED_TRACE("groups=" + std::to_string(groups) + " bias=" + std::to_string(bias));
      Module before = conv_bn_module(rng, groups, bias);
      Module after = run_passes(before, {"fold-batch-norm", "dead-code-elimination"});
      EXPECT_EQ(count_calls(after, "nn.batch_norm"), 0) << print_module(after);
      EXPECT_EQ(count_calls(after, "add"), 1);
      expect_same_values(before, after, {random_tensor({1, 4, 9, 9}, rng, -2, 2)}, 1e-5);
    }
}

TEST(GraphOpt, FoldBatchNormIntoDenseAndMatmulMatchesInterpreter) {
  std::mt19937 rng(11);
  for (const char* op : {"nn.dense", "matmul"}) {
    SCOPED_TRACE(op);
    const int64_t k = 16, n = 6;
    Var x = make_var("x", f32({3, k}));
    Shape w_shape = std::string(op) == "matmul" ? Shape{k, n} : Shape{n, k};
    Var y = make_var("y", f32({3, n}));
    Var bn = make_var("bn", f32({3, n}));
    std::vector<Binding> bs = {
        {y, make_op_call(op, {x, make_constant(random_tensor(w_shape, rng, -1, 1))})},
        {bn, make_op_call("nn.batch_norm", {y, make_constant(random_tensor({n}, rng, 0.5, 2)),
                                            make_constant(random_tensor({n}, rng, -1, 1)),
                                            make_constant(random_tensor({n}, rng, -1, 1)),
                                            make_constant(random_tensor({n}, rng, 0.1, 3))})}};
    Module before;
    before.functions.push_back(make_function("main", {x}, bs, bn));
    Module after = fold_batch_norm(before);
    EXPECT_EQ(count_calls(after, "nn.batch_norm"), 0) << print_module(after);
    expect_same_values(before, after, {random_tensor({3, k}, rng, -2, 2)}, 1e-5);
  }
}

// op(x, w) [+ bias] * s + t [* s2 + t2], PP-OCRv4's learnable scale and
// shift after a conv + bias, with random weights; `per_channel` picks (1, C,
// 1, 1) or (C,) constants over scalars, `scale_first` writes the multiplies
// constant-first as the ONNX importer does.
struct ScaleShiftCase {
  std::string op;  // nn.conv2d, nn.conv2d_transpose, nn.dense or matmul
  int64_t groups;
  bool bias;
  int steps;  // multiply [+ add] pairs after the op
  bool per_channel;
  bool scale_first;
  bool shift = true;  // each multiply followed by an add
};

Module scale_shift_module(std::mt19937& rng, const ScaleShiftCase& k, Shape& x_shape) {
  const int64_t c_in = 4, c_out = 8;
  bool conv = k.op == "nn.conv2d" || k.op == "nn.conv2d_transpose";
  Attrs attrs;
  Shape w_shape, out_shape, channel_shape;
  if (k.op == "nn.conv2d") {
    x_shape = {1, c_in, 9, 9};
    w_shape = {c_out, c_in / k.groups, 3, 3};
    attrs = {{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", k.groups}};
  } else if (k.op == "nn.conv2d_transpose") {
    x_shape = {1, c_in, 5, 5};
    w_shape = {c_in, c_out, 3, 3};
    attrs = {{"strides", std::vector<int64_t>{2, 2}}};
  } else {
    x_shape = {3, 16};
    w_shape = k.op == "matmul" ? Shape{16, c_out} : Shape{c_out, 16};
  }
  channel_shape = conv ? Shape{1, c_out, 1, 1} : Shape{c_out};
  Var x = make_var("x", f32(x_shape));
  Expr op = make_op_call(k.op, {x, make_constant(random_tensor(w_shape, rng, -1, 1))}, attrs);
  out_shape = op->type->tensor.shape;
  std::vector<Binding> bs;
  Var v = make_var("y", f32(out_shape));
  bs.push_back({v, op});
  auto step = [&](const std::string& name, const std::string& kind, const Shape& shape, float lo, float hi) {
    Expr c = make_constant(random_tensor(shape, rng, lo, hi));
    Var next = make_var(name, f32(out_shape));
    bool first = k.scale_first && kind == "multiply";
    bs.push_back({next, make_op_call(kind, first ? std::vector<Expr>{c, v} : std::vector<Expr>{v, c})});
    v = next;
  };
  if (k.bias) step("bias", "add", channel_shape, -1, 1);
  Shape s_shape = k.per_channel ? channel_shape : Shape{1};
  for (int i = 0; i < k.steps; ++i) {
    step("scale" + std::to_string(i), "multiply", s_shape, 0.25, 2);
    if (k.shift) step("shift" + std::to_string(i), "add", s_shape, -1, 1);
  }
  Var r = make_var("r", f32(out_shape));
  bs.push_back({r, make_op_call("nn.hard_swish", {v})});
  Module m;
  m.functions.push_back(make_function("main", {x}, bs, r));
  return m;
}

TEST(GraphOpt, FoldScaleShiftMatchesInterpreter) {
  std::mt19937 rng(5);
  std::vector<ScaleShiftCase> cases = {
      {"nn.conv2d", 1, true, 1, false, true},
      {"nn.conv2d", 1, true, 1, true, false},
      {"nn.conv2d", 4, true, 2, true, true},
      {"nn.conv2d", 4, false, 1, false, false},
      {"nn.conv2d_transpose", 1, true, 1, true, true},
      {"nn.dense", 1, false, 2, true, false},
      {"matmul", 1, true, 1, false, true},
      {"nn.conv2d", 1, false, 2, true, true, false},
      {"nn.dense", 1, false, 1, false, false, false},
  };
  for (const ScaleShiftCase& k : cases) {
    SCOPED_TRACE(k.op + " groups=" + std::to_string(k.groups) + " bias=" + std::to_string(k.bias) +
                 " steps=" + std::to_string(k.steps) + " per_channel=" + std::to_string(k.per_channel) +
                 " shift=" + std::to_string(k.shift));
    Shape x_shape;
    Module before = scale_shift_module(rng, k, x_shape);
    Module after = run_passes(before, {"fold-scale-shift"});
    EXPECT_EQ(count_calls(after, "multiply"), 0) << print_module(after);
    bool has_add = k.bias || k.shift;
    EXPECT_EQ(count_calls(after, "add"), has_add ? 1 : 0) << print_module(after);
    // The importer's conv + bias form: add(op, constant), the op first; with
    // only multiplies, the op alone.
    const auto& bs = after.functions[0]->bindings;
    ASSERT_EQ(bs.size(), has_add ? 3u : 2u) << print_module(after);
    if (has_add) {
      auto* add = as<CallNode>(bs[1].value);
      ASSERT_TRUE(add && add->op->name == "add");
      EXPECT_EQ(add->args[0].get(), bs[0].var.get());
      EXPECT_TRUE(as<ConstantNode>(add->args[1]));
    }
    // One run folds every chain: running again changes nothing.
    EXPECT_EQ(print_module(run_passes(after, {"fold-scale-shift"})), print_module(after));
    expect_same_values(before, after, {random_tensor(x_shape, rng, -2, 2)}, 1e-5);
  }
}

TEST(GraphOpt, ConvBiasScaleShiftHardSwishIsOneNpuDispatch) {
  std::mt19937 rng(9);
  Shape x_shape;
  Module before = scale_shift_module(rng, {"nn.conv2d", 1, true, 1, false, true}, x_shape);
  Module optimized = run_passes(before, graph_optimization_passes());
  PartitionOptions opts;
  opts.backends = {"example_npu"};
  PartitionReport report;
  Module parted = partition_module(optimized, opts, true, &report);
  EXPECT_EQ(report.offloaded_count(), static_cast<int64_t>(report.ops.size())) << report.explain();
  VirtualMachine vm(build_executable(parted, "main"));
  Tensor x = random_tensor(x_shape, rng, -2, 2);
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  RunResult run = vm.run({x}, ro);
  const std::vector<Tensor>& got = run.outputs;
  std::vector<std::string> ops;
  for (const auto& e : run.events) ops.push_back(e.op);
  EXPECT_EQ(ops, std::vector<std::string>{"nn.conv2d+add+nn.hard_swish"});
  std::vector<Tensor> want = interpret(before, "main", {x});
  EXPECT_LE(max_relative_error(got[0], want[0]), 1e-5);
}

TEST(GraphOpt, CanonicalActivationsMatchInterpreter) {
  Module before = parse_module(R"(
def @main(%x: Tensor[(64,), float32]) -> (Tensor[(64,), float32], Tensor[(64,), float32], Tensor[(64,), float32], Tensor[(64,), float32]) {
  %h = nn.hard_sigmoid(%x, alpha=0.1666666716337204, beta=0.5)
  %a = multiply(%x, %h)
  %p = add(%x, const(Tensor[(), float32], [3.0]))
  %r = clip(%p, a_min=0.0, a_max=6.0)
  %m = multiply(%x, %r)
  %b = divide(%m, const(Tensor[(), float32], [6.0]))
  %c = multiply(%r, const(Tensor[(), float32], [0.1666666716337204]))
  %d = divide(%x, const(Tensor[(), float32], [1.4142135381698608]))
  %e = erf(%d)
  %o = add(%e, const(Tensor[(), float32], [1.0]))
  %q = multiply(%o, const(Tensor[(), float32], [0.5]))
  %g = multiply(%x, %q)
  return (%a, %b, %c, %g)
}
)",
                               "activations.kir");
  Module after = run_passes(before, {"canonicalize-activations", "dead-code-elimination"});
  EXPECT_EQ(count_calls(after, "nn.hard_swish"), 2) << print_module(after);
  EXPECT_EQ(count_calls(after, "nn.hard_sigmoid"), 1);
  EXPECT_EQ(count_calls(after, "nn.gelu"), 1);
  EXPECT_EQ(count_calls(after, "multiply"), 0);
  std::vector<float> xs;
  for (int i = 0; i < 64; ++i) xs.push_back(-4.0f + 8.0f * static_cast<float>(i) / 63);
  expect_same_values(before, after, {Tensor::from_floats({64}, xs)}, 1e-5);
}

TEST(GraphOpt, ConvBatchNormHardSwishIsOneNpuDispatch) {
  std::mt19937 rng(3);
  Module onnx_form = conv_bn_module(rng, 1, true);
  // Replace the relu with ONNX HardSwish in pieces: x * HardSigmoid(x).
  auto f = std::make_shared<FunctionNode>(*onnx_form.functions[0]);
  Var bn = f->bindings[2].var;
  Var h = make_var("h", bn->type), y = make_var("y", bn->type);
  f->bindings.pop_back();
  f->bindings.push_back({h, make_op_call("nn.hard_sigmoid", {bn}, {{"alpha", 1.0 / 6}, {"beta", 0.5}})});
  f->bindings.push_back({y, make_op_call("multiply", {bn, h})});
  f->result = y;
  onnx_form.functions[0] = f;
  verify_module(onnx_form);

  Module optimized = run_passes(onnx_form, graph_optimization_passes());
  PartitionOptions opts;
  opts.backends = {"example_npu"};
  PartitionReport report;
  Module parted = partition_module(optimized, opts, true, &report);
  EXPECT_EQ(report.offloaded_count(), static_cast<int64_t>(report.ops.size())) << report.explain();
  VirtualMachine vm(build_executable(parted, "main"));
  Tensor x = random_tensor({1, 4, 9, 9}, rng, -2, 2);
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  RunResult run = vm.run({x}, ro);
  const std::vector<Tensor>& got = run.outputs;
  std::vector<std::string> ops;
  for (const auto& e : run.events) ops.push_back(e.op);
  EXPECT_EQ(ops, std::vector<std::string>{"nn.conv2d+add+nn.hard_swish"});
  std::vector<Tensor> want = interpret(onnx_form, "main", {x});
  EXPECT_LE(max_relative_error(got[0], want[0]), 1e-5);
}

TEST(GraphOpt, OptimizationPipelineIsRegistered) {
  for (const auto& name : graph_optimization_passes()) EXPECT_NE(find_graph_pass(name), nullptr) << name;
  EXPECT_EQ(graph_optimization_passes().back(), "dead-code-elimination");
}

}  // namespace
}  // namespace kiln
