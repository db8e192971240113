// What the hexagon backend claims: the ops kiln's shared lowering compiles
// for the DSP, in float32 (scalar: this QEMU cannot run HVX floating point)
// and in int8 with int32 accumulation.
//
// One pattern per op; `kiln partition` merges adjacent claims into regions.
// Priorities sit at the example NPU's single-op level (conv and products 10,
// the rest 5, layout ops 3), so with `--backend example_npu,hexagon` the
// first backend listed wins a tie. Every check says why it refuses.
#include <optional>
#include <string>

#include "backends/hexagon/codegen.h"
#include "lower/lower.h"
#include "pattern/registry.h"

namespace kiln {
namespace {

bool dtype_ok(DType d) { return d == DType::Float32 || d == DType::Int8 || d == DType::Int32; }

std::optional<std::string> check_dtypes(const CallNode& c) {
  for (const auto& arg : c.args)
    for (const auto& d : flatten_type(arg->type))
      if (!dtype_ok(d.dtype))
        return c.op->name + ": dtype " + std::string(dtype_name(d.dtype)) +
               " is not supported on Hexagon (float32, int8, int32)";
  for (const auto& d : flatten_type(c.type))
    if (!dtype_ok(d.dtype))
      return c.op->name + ": result dtype " + std::string(dtype_name(d.dtype)) +
             " is not supported on Hexagon (float32, int8, int32)";
  return std::nullopt;
}

// The shared lowering must compile the instance, scheduled for the DSP the
// options name: the reason otherwise (an attribute it does not handle, or
// tiles that cannot fit the target's VTCM).
std::optional<std::string> check_lowered(const CallNode& c, const BackendOptions& options) {
  std::vector<TensorDesc> in, out = flatten_type(c.type);
  for (const auto& a : c.args)
    for (const auto& d : flatten_type(a->type)) in.push_back(d);
  const OpDef* def = find_op(c.op->name);
  if (!def) return c.op->name + ": unknown op";
  codegen::Target target = hexagon::target_from_options(options);
  if (auto why = lower::why_not_lowered(c.op->name, in, out, normalize_attrs(*def, c.attrs),
                                        codegen::schedule_target(target)))
    return c.op->name + ": " + *why + " (for " + target.name + ")";
  return std::nullopt;
}

PatternCheck op_check() {
  return [](const Match& m, const BackendOptions& options) -> std::optional<std::string> {
    for (const CallNode* c : m.calls()) {
      if (auto r = check_dtypes(*c)) return r;
      if (auto r = check_lowered(*c, options)) return r;
    }
    return std::nullopt;
  };
}

void add(PatternRegistry& r, const std::string& op, int arity, int priority, const std::string& what) {
  std::vector<Pattern> args;
  for (int i = 0; i < arity; ++i) args.push_back(annotate("input", wildcard()));
  std::string name = op.substr(op.find('.') + 1);
  r.add(PatternEntry{"hexagon." + name, annotate("root", is_op(op, std::move(args))), op_check(), priority,
                     op + " " + what});
}

void add_patterns(PatternRegistry& r) {
  for (const char* op : {"nn.conv2d", "nn.dense", "matmul"})
    add(r, op, 2, 10, "compiled for the DSP, tiled into VTCM");
  for (const char* op : {"nn.max_pool2d", "nn.avg_pool2d", "nn.adaptive_avg_pool2d"})
    add(r, op, 1, 5, "compiled for the DSP, tiled into VTCM");
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"})
    add(r, op, 2, 5, "compiled for the DSP");
  for (const char* op :
       {"nn.relu", "clip", "sigmoid", "nn.silu", "nn.hard_swish", "nn.hard_sigmoid", "nn.leaky_relu",
        "negative", "abs", "exp", "sqrt", "round", "floor", "ceil", "astype"})
    add(r, op, 1, 5, "compiled for the DSP");
  add(r, "nn.batch_norm", 5, 5, "(inference) compiled for the DSP");
  add(r, "nn.softmax", 1, 5, "compiled for the DSP (the reciprocal of the sum in float32)");
  for (const char* op : {"reshape", "flatten", "squeeze", "expand_dims", "permute_dims"})
    add(r, op, 1, 3, "compiled for the DSP (a copy)");
}

}  // namespace

// The backend as the registry takes it (listed in backends/builtin.h).
namespace hexagon {
Backend backend() {
  PatternRegistry patterns;
  add_patterns(patterns);
  std::vector<BackendOption> options = {
      {"target", OptionType::String, "hexagon-v68",
       "the DSP: hexagon-v66|v68|v69|v73 (kiln --target sets it)"},
      {"hvx", OptionType::Choice, "off", "integer loops as HVX vectors", {"on", "off"}},
      {"check_bounds",
       OptionType::Choice,
       "off",
       "check indices and integer divisors in the kernels (kiln --check-bounds sets it)",
       {"on", "off"}},
      {"timeout", OptionType::Int, "300", "seconds the runtime waits for the DSP emulator"},
      {"asm", OptionType::File, "", "a file to write the regions' kernels to as Hexagon assembly"},
  };
  return Backend{"hexagon",
                 "",
                 "kernels compiled for a Hexagon DSP, run under qemu-hexagon-static",
                 patterns.entries(),
                 std::move(options),
                 hexagon::codegen,
                 {},
                 // The DSP named by target (and the values hexagon's codegen reads).
                 [](const CodegenOptions& o) { hexagon::target_from_options(o); }};
}

}  // namespace hexagon

}  // namespace kiln
