// Backend and partitioning flags shared by partition, compile and run.
#include "byoc_flags.h"

#include <algorithm>
#include <sstream>

#include "backends/registry.h"
#include "kiln/runtime/npy.h"
#include "pattern/registry.h"
#include "validators.h"

namespace kiln::cli {

void BackendFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--backend,-b", backends,
                  "Offload to these backends: repeatable or comma-separated, the first listed winning ties "
                  "(`kiln partition --list` names them)")
      ->delimiter(',');
  cmd->add_flag("--no-merge", no_merge,
                "Keep each pattern match as its own region (default: merge adjacent matches of one backend, "
                "never into a cycle)");
  cmd->add_flag("--strict", strict, "Fail, listing the ops, when anything would fall back to the host");
  cmd->add_flag("--lift-constants", lift_constants, "Pass constants to offloaded functions as parameters");
  cmd->add_option("--min-region-size", min_region_size, "Regions with fewer ops stay on the host")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--option", options, "Codegen option backend.key=value (e.g. example_npu.l1=64K)");
  cmd->add_option("--input-shape", input_shapes,
                  "NAME=D0,D1,... static shape for an ONNX input with symbolic dimensions, by its ONNX name "
                  "(or kiln's %NAME; repeatable)");
  cmd->add_option(
      "--input-value", input_values,
      "NAME=V0,V1,... (int64, or float32 when one has a '.' or an exponent) or NAME=FILE.npy: the "
      "value of an ONNX input that holds a shape, axes or a threshold (Reshape's shape, Expand's, "
      "NonMaxSuppression's, ...), folded into the model as a constant (repeatable)");
}

PartitionOptions BackendFlags::partition_options() const {
  PartitionOptions o;
  o.backends = backends;
  o.strict = strict;
  o.bind_constants = !lift_constants;
  o.min_region_size = min_region_size;
  o.backend_options = codegen_options();
  return o;
}

RunCodegenOptions BackendFlags::codegen_options() const {
  RunCodegenOptions o;
  for (const auto& opt : options) {
    size_t eq = opt.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--option expects backend.key=value, got '" + opt + "'");
    add_codegen_option(o, opt.substr(0, eq), opt.substr(eq + 1), backends, "--option " + opt,
                       "is not used (add --backend " + opt.substr(0, opt.find('.')) + ")");
  }
  if (!options.empty()) check_codegen_options(o, backends);
  return o;
}

// "NAME=1,3,4" (a 1-D int64 tensor) or "NAME=FILE.npy" into
// opts.constant_inputs; the last '=' splits, so a name may contain '='.
static void parse_input_value_flag(const std::string& flag, ImportOptions& opts) {
  auto eq = flag.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size())
    throw Error("--input-value '" + flag + "': expected NAME=V0,V1,... or NAME=FILE.npy (e.g. shape=1,3,4)");
  const std::string name = flag.substr(0, eq);
  const std::string value = flag.substr(eq + 1);
  if (value.size() > 4 && value.compare(value.size() - 4, 4, ".npy") == 0) {
    opts.constant_inputs[name] = read_npy(value);
    return;
  }
  // Integers make an int64 tensor; any number with a '.' or an exponent
  // (a threshold such as 0.5) makes the list float32.
  std::vector<int64_t> ints;
  std::vector<float> floats;
  bool all_ints = true;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (!item.empty() && used == item.size()) {
      ints.push_back(v);
      floats.push_back(static_cast<float>(v));
      continue;
    }
    double d = 0;
    try {
      d = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw Error("--input-value '" + flag + "': '" + item +
                  "' is not a number (give integers, floats or a .npy file)");
    all_ints = false;
    floats.push_back(static_cast<float>(d));
  }
  const Shape shape{static_cast<int64_t>(floats.size())};
  opts.constant_inputs[name] = all_ints ? Tensor::from_ints(shape, ints) : Tensor::from_floats(shape, floats);
}

ImportOptions BackendFlags::import_options() const {
  ImportOptions o;
  for (const auto& f : input_shapes) parse_input_shape_flag(f, o);
  for (const auto& f : input_values) parse_input_value_flag(f, o);
  return o;
}

void CompileFlags::add_to(CLI::App* cmd, bool with_target) {
  if (with_target)
    cmd->add_option(
        "--target", target,
        "The CPU of the host code: llvm (this machine's, the default) or llvm -mcpu=NAME "
        "(x86-64-v3, skylake-avx512, znver3, ...); with --backend hexagon, hexagon-v66|v68|v69|v73 "
        "names the DSP");
  cmd->add_flag("--strict-compile", strict_compile,
                "Fail, naming them, when host ops would run on reference kernels instead of compiled code");
  cmd->add_option("--layout", layout,
                  "Host convs' data layout: blocked (channels in blocks of the vector width, NCHWc; the "
                  "default) or nchw")
      ->check(CLI::IsMember({"blocked", "nchw"}));
  cmd->add_option("--float16-precision", float16_precision,
                  "float16 ops compiled for the host: per-op (each op's result rounded to float16, as the "
                  "reference kernels; the default) or excess (values kept in float32 between ops, rounded "
                  "where a float16 tensor is stored: faster, closer to the exact result)")
      ->check(CLI::IsMember({"per-op", "excess"}));
  cmd->add_flag("--print-after-all", print_after_all,
                "Print the IR after each compile stage and pass (graph passes, host program, tensor IR)");
  cmd->add_flag(
      "--time-passes", time_passes,
      "Print the time of each compile stage and pass, and LLVM's pass timing reports for the host code "
      "(which then compiles in one part)");
  cmd->add_flag("--check-bounds", check_bounds,
                "Generated code checks every index and integer divisor it cannot prove safe, and fails "
                "naming kernel, buffer, index and extent (host kernels, prim functions and hexagon regions)");
}

driver::CompileOptions CompileFlags::options(const BackendFlags& backend, const std::string& entry) const {
  driver::CompileOptions o;
  o.entry = entry;
  o.partition = backend.partition_options();
  o.merge = !backend.no_merge;
  o.codegen = backend.codegen_options();
  o.strict_compile = strict_compile;
  o.blocked_layout = layout == "blocked";
  o.float16_excess_precision = float16_precision == "excess";
  o.print_after_all = print_after_all;
  o.time_passes = time_passes;
  o.check_bounds = check_bounds;
  if (check_bounds) {
    const auto& b = backend.backends;
    if (std::find(b.begin(), b.end(), "hexagon") != b.end()) {
      auto& given = o.codegen.backend["hexagon"];
      if (given.count("check_bounds") && given["check_bounds"] != "on")
        throw Error("--check-bounds and --option hexagon.check_bounds=" + given["check_bounds"] +
                    " disagree");
      given["check_bounds"] = "on";
    }
  }
  if (!target.empty()) {
    codegen::Target t = codegen::parse_target(target);
    if (!t.is_hexagon()) {
      o.target = t;
      return o;
    }
    // A DSP names the hexagon backend's target; the host code stays on this machine.
    const auto& b = backend.backends;
    if (std::find(b.begin(), b.end(), "hexagon") == b.end())
      throw Error("--target " + target +
                  ": a model's host code runs on this machine (llvm or llvm -mcpu=NAME); "
                  "offload regions to the DSP with --backend hexagon --target " +
                  target);
    auto& given = o.codegen.backend["hexagon"];
    if (given.count("target") && given["target"] != target && "hexagon-" + given["target"] != target)
      throw Error("--target " + target + " and --option hexagon.target=" + given["target"] + " disagree");
    given["target"] = target;
    o.partition.backend_options.backend["hexagon"]["target"] = target;
  }
  return o;
}

std::string compile_line(const driver::CompileSummary& s) {
  std::string line = "compile: " + s.str();
  for (const auto& n : s.backend_notes) line += "\n  " + n;
  return line;
}

std::string offload_line(const PartitionReport& report, bool merged) {
  return "offload: " + report.summary() +
         (merged ? "; regions merged" : "; one region per match (--no-merge)");
}

}  // namespace kiln::cli
