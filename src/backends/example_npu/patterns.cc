// What the example NPU claims: its patterns, their priorities and checks.
//
// Priorities: fused patterns (20: conv2d or matmul, a bias add, an
// activation) claim before conv2d + bias alone (18), the depthwise
// convolution (15), single MATRIX/CONV ops (10) and elementwise ops (5), so
// a conv2d followed by its bias and relu becomes one fused region rather
// than three.
// Every check states why it refuses, for `kiln partition --explain`.
#include <optional>
#include <string>

#include "backends/example_npu/codegen.h"
#include "backends/example_npu/runtime/device.h"
#include "backends/registry.h"
#include "pattern/registry.h"

namespace kiln {
namespace {

using example_npu::DeviceDesc;

std::optional<std::string> check_dtypes(const Match& m, const BackendOptions&) {
  for (const CallNode* c : m.calls()) {
    for (const auto& arg : c->args)
      for (const auto& d : flatten_type(arg->type))
        if (!example_npu::dtype_supported(d.dtype))
          return c->op->name + ": dtype " + std::string(dtype_name(d.dtype)) +
                 " is not supported (int8, float32)";
    for (const auto& d : flatten_type(c->type))
      if (!example_npu::output_dtype_supported(d.dtype))
        return c->op->name + ": result dtype " + std::string(dtype_name(d.dtype)) +
               " is not supported (int8, int32, float32)";
  }
  return std::nullopt;
}

int64_t bytes_of(const Expr& e) {
  int64_t n = 0;
  for (const auto& d : flatten_type(e->type)) n += shape_numel(d.shape) * dtype_bytes(d.dtype);
  return n;
}

// Against the device the options describe (--option example_npu.l2=...), the
// same one the codegen and the emulator use.
std::optional<std::string> check_weight_fits(const CallNode& c, const BackendOptions& options) {
  DeviceDesc dev = example_npu::device_from_options(options);
  int64_t bytes = bytes_of(c.args[1]);
  if (bytes > dev.l2_bytes())
    return c.op->name + ": weight of " + std::to_string(bytes) + " bytes cannot be tiled into L2 (" +
           std::to_string(dev.l2_bytes()) + " bytes); weights stay resident on chip";
  return std::nullopt;
}

bool is_depthwise(const CallNode& c) {
  const Shape& x = c.args[0]->type->tensor.shape;
  const Shape& w = c.args[1]->type->tensor.shape;
  int64_t groups = c.attrs.get_int("groups");
  return groups > 1 && groups == x[1] && w[0] == groups;
}

std::optional<std::string> check_conv(const CallNode& c, bool want_depthwise, const BackendOptions& options) {
  if (c.attrs.get_ints("dilation") != std::vector<int64_t>{1, 1})
    return "nn.conv2d: dilation " + attr_value_str(c.attrs.get_ints("dilation")) +
           " is not supported (1 only)";
  int64_t groups = c.attrs.get_int("groups");
  if (want_depthwise && !is_depthwise(c))
    return "nn.conv2d: not depthwise (groups=" + std::to_string(groups) + ")";
  if (!want_depthwise && groups != 1)
    return "nn.conv2d: grouped convolution (groups=" + std::to_string(groups) +
           ") is not supported (1 or depthwise)";
  const std::string& out = c.attrs.get_string("out_dtype");
  if (!out.empty() && out != "int32" && out != "float32")
    return "nn.conv2d: out_dtype " + out + " is not supported";
  return check_weight_fits(c, options);
}

std::optional<std::string> check_matrix(const CallNode& c, const BackendOptions& options) {
  int64_t ra = c.args[0]->type->tensor.shape.size(), rb = c.args[1]->type->tensor.shape.size();
  if (ra != 2 || rb != 2)
    return c.op->name + ": operands of rank " + std::to_string(ra) + " and " + std::to_string(rb) +
           " are not supported (2-D only)";
  return check_weight_fits(c, options);
}

// Runs the checks in order; the first reason wins.
PatternCheck all_of(std::vector<PatternCheck> checks) {
  return [checks](const Match& m, const BackendOptions& options) -> std::optional<std::string> {
    for (const auto& c : checks)
      if (auto r = c(m, options)) return r;
    return std::nullopt;
  };
}

// A fused bias must broadcast onto the conv2d's result without changing it.
std::optional<std::string> check_bias(const Match& m, const BackendOptions&) {
  const CallNode* add = m.find_call("add");
  const CallNode* conv = m.find_call("nn.conv2d");
  if (!add || type_equal(add->type, conv->type)) return std::nullopt;
  return "add: the bias of type " + type_str(add->args[1]->type) + " would change the conv2d result " +
         type_str(conv->type) + " to " + type_str(add->type);
}

PatternCheck conv_check(bool depthwise) {
  return all_of({check_dtypes, check_bias, [depthwise](const Match& m, const BackendOptions& options) {
                   return check_conv(*m.find_call("nn.conv2d"), depthwise, options);
                 }});
}

// Plain or depthwise, whichever the conv2d is.
PatternCheck any_conv_check() {
  return all_of({check_dtypes, check_bias, [](const Match& m, const BackendOptions& options) {
                   const CallNode* c = m.find_call("nn.conv2d");
                   return check_conv(*c, is_depthwise(*c), options);
                 }});
}

PatternCheck matrix_check() {
  return all_of(
      {check_dtypes, [](const Match& m, const BackendOptions& options) -> std::optional<std::string> {
         const CallNode* c = m.find_call("matmul");
         return check_matrix(c ? *c : *m.find_call("nn.dense"), options);
       }});
}

Pattern conv2d() {
  return is_op("nn.conv2d", {annotate("input", wildcard()), annotate("weight", wildcard())});
}

// conv2d, optionally then the add of a bias (ONNX Conv with a bias, and what
// fold-batch-norm leaves).
Pattern conv2d_bias() { return optional_op(is_op("add", {conv2d(), annotate("bias", wildcard())})); }

// The activations the CONV engine applies to its tiles, but relu (which has
// its own pattern, conv2d_relu_fused), of `p`.
Pattern activation_of(const Pattern& p) {
  std::vector<Pattern> acts;
  for (const char* op : {"clip", "sigmoid", "tanh", "nn.gelu", "nn.hard_swish", "nn.hard_sigmoid", "nn.silu"})
    acts.push_back(is_op(op, {p}));
  return alternatives(std::move(acts));
}

Pattern matrix() {
  return alternatives({is_op("matmul", {annotate("input", wildcard()), annotate("weight", wildcard())}),
                       is_op("nn.dense", {annotate("input", wildcard()), annotate("weight", wildcard())})});
}

void add(PatternRegistry& r, const std::string& name, Pattern p, PatternCheck check, int priority,
         const std::string& description) {
  r.add(PatternEntry{"example_npu." + name, annotate("root", std::move(p)), std::move(check), priority,
                     description});
}

void add_unary(PatternRegistry& r, const std::string& name, const std::string& op, Attrs attrs = {}) {
  add(r, name, is_op(op, {annotate("input", wildcard())}, std::move(attrs)), check_dtypes, 5,
      op + " on the ACTIVATION engine");
}

void add_patterns(PatternRegistry& r) {
  add(r, "conv2d_relu_fused", is_op("nn.relu", {conv2d_bias()}), conv_check(false), 20,
      "nn.conv2d (+ bias add) then nn.relu, fused on the CONV engine (no intermediate in DRAM)");
  add(r, "conv2d_activation_fused", activation_of(conv2d_bias()), conv_check(false), 20,
      "nn.conv2d (+ bias add) then clip/sigmoid/tanh/gelu/hard_swish/hard_sigmoid/silu, fused on the CONV "
      "engine");
  add(r, "depthwise_conv2d_activation_fused",
      alternatives({is_op("nn.relu", {conv2d_bias()}), activation_of(conv2d_bias())}), conv_check(true), 20,
      "depthwise nn.conv2d (+ bias add) then an activation, fused on the VECTOR engine");
  add(r, "conv2d_bias", is_op("add", {conv2d(), annotate("bias", wildcard())}), any_conv_check(), 18,
      "nn.conv2d (plain or depthwise) then a bias add, fused");
  add(r, "matmul_relu_fused", is_op("nn.relu", {matrix()}), matrix_check(), 20,
      "matmul or nn.dense then nn.relu, fused on the MATRIX engine");
  add(r, "depthwise_conv2d", conv2d(), conv_check(true), 15, "depthwise nn.conv2d on the VECTOR engine");
  add(r, "conv2d", conv2d(), conv_check(false), 10, "nn.conv2d on the CONV engine (1x1: MATRIX)");
  add(r, "matmul", matrix(), matrix_check(), 10, "matmul or nn.dense on the 16x16 MATRIX engine");
  for (const char* op : {"add", "subtract", "multiply", "divide"})
    add(r, op, is_op(op, {annotate("input", wildcard()), annotate("input", wildcard())}), check_dtypes, 5,
        std::string(op) + " on the VECTOR engine");
  add_unary(r, "relu6", "clip", Attrs{{"a_min", 0.0}, {"a_max", 6.0}});
  add_unary(r, "relu", "nn.relu");
  add_unary(r, "clip", "clip");
  add_unary(r, "sigmoid", "sigmoid");
  add_unary(r, "tanh", "tanh");
  add_unary(r, "gelu", "nn.gelu");
  add_unary(r, "hard_swish", "nn.hard_swish");
  add_unary(r, "hard_sigmoid", "nn.hard_sigmoid");
  add_unary(r, "silu", "nn.silu");
  add(r, "softmax", is_op("nn.softmax", {annotate("input", wildcard())}),
      all_of({check_dtypes,
              [](const Match& m, const BackendOptions&) -> std::optional<std::string> {
                const CallNode* c = m.find_call("nn.softmax");
                int64_t rank = c->args[0]->type->tensor.shape.size();
                int64_t axis = c->attrs.get_int("axis");
                if (axis != -1 && axis != rank - 1)
                  return "nn.softmax: axis " + std::to_string(axis) + " is not supported (last axis only)";
                return std::nullopt;
              }}),
      5, "nn.softmax over the last axis on the VECTOR engine");
  add(r, "batch_norm",
      is_op("nn.batch_norm", {annotate("input", wildcard()), wildcard(), wildcard(), wildcard(), wildcard()}),
      check_dtypes, 5, "inference nn.batch_norm on the VECTOR engine");
  add(r, "max_pool2d", is_op("nn.max_pool2d", {annotate("input", wildcard())}), check_dtypes, 5,
      "nn.max_pool2d on the POOLING engine");
  add(r, "avg_pool2d", is_op("nn.avg_pool2d", {annotate("input", wildcard())}), check_dtypes, 5,
      "nn.avg_pool2d on the POOLING engine");
  add(r, "quantize", is_op("quantize", {annotate("input", wildcard())}),
      all_of({check_dtypes,
              [](const Match& m, const BackendOptions&) -> std::optional<std::string> {
                if (m.find_call("quantize")->attrs.get_string("out_dtype") != "int8")
                  return "quantize: only int8 results are supported";
                return std::nullopt;
              }}),
      5, "quantize float32 to int8 on the VECTOR engine");
  add(r, "dequantize", is_op("dequantize", {annotate("input", wildcard())}), check_dtypes, 5,
      "dequantize int8 to float32 on the VECTOR engine");
}

}  // namespace

// The backend as the registry takes it (listed in backends/builtin.h).
namespace example_npu {
Backend backend() {
  PatternRegistry patterns;
  add_patterns(patterns);
  std::vector<BackendOption> options = {
      {"l0", OptionType::Size, "4K", "L0 (register file) capacity in bytes"},
      {"l1", OptionType::Size, "256K", "L1 scratchpad capacity in bytes"},
      {"l2", OptionType::Size, "512K", "L2 buffer capacity in bytes (weights stay resident here)"},
      {"systolic", OptionType::Size, "16", "the MATRIX engine's systolic array side"},
      {"precision", OptionType::Choice, "fp32", "the arithmetic of every dispatch", {"fp32", "fp16", "bf16"}},
  };
  return Backend{"example_npu",
                 "",
                 "kiln.graph JSON for the example NPU emulator",
                 patterns.entries(),
                 std::move(options),
                 example_npu_codegen,
                 {},
                 // Relations between options (l0 <= l1 <= l2), as codegen and runtime see them.
                 [](const CodegenOptions& o) { example_npu::device_from_options(o); }};
}

}  // namespace example_npu

}  // namespace kiln
