// Backend and partitioning flags shared by partition, compile and run.
#include "byoc_flags.h"

namespace kiln::cli {

void BackendFlags::add_to(CLI::App* cmd, bool with_merge_flag) {
  cmd->add_option("--backend,-b", backends,
                  "Offload to this backend (repeatable; `kiln partition --list` names them)");
  if (with_merge_flag) cmd->add_flag("--no-merge", no_merge, "Keep each pattern match as its own region");
  cmd->add_flag("--strict", strict, "Fail, listing the ops, when anything would fall back to the host");
  cmd->add_flag("--lift-constants", lift_constants, "Pass constants to offloaded functions as parameters");
  cmd->add_option("--min-region-size", min_region_size, "Regions with fewer ops stay on the host")
      ->capture_default_str();
  cmd->add_option("--option", options, "Codegen option backend.key=value (e.g. example_npu.l1=64K)");
  cmd->add_option("--input-shape", input_shapes,
                  "NAME=D0,D1,... static shape for an ONNX input with symbolic dimensions (repeatable)");
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
    std::string key = opt.substr(0, eq), value = opt.substr(eq + 1);
    size_t dot = key.find('.');
    if (dot == std::string::npos)
      o.global[key] = value;
    else
      o.backend[key.substr(0, dot)][key.substr(dot + 1)] = value;
  }
  return o;
}

ImportOptions BackendFlags::import_options() const {
  ImportOptions o;
  for (const auto& f : input_shapes) parse_input_shape_flag(f, o);
  return o;
}

std::string offload_line(const PartitionReport& report) { return "offload: " + report.summary(); }

}  // namespace kiln::cli
