// Flags shared by `kiln partition`, `kiln compile` and `kiln run` for
// choosing backends and partitioning options, and for importing ONNX models
// with symbolic dimensions (--input-shape).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "backends/registry.h"  // registered_backends()
#include "driver/compile_model.h"
#include "frontend/onnx/importer.h"
#include "transform/partition.h"

namespace kiln::cli {

struct BackendFlags {
  std::vector<std::string> backends;
  bool no_merge = false;
  bool strict = false;
  bool lift_constants = false;
  int64_t min_region_size = 1;
  std::vector<std::string> options;       // backend.key=value or key=value
  std::vector<std::string> input_shapes;  // NAME=D0,D1,... for ONNX inputs
  std::vector<std::string> input_values;  // NAME=V0,V1,... or NAME=FILE.npy: inputs folded as constants

  void add_to(CLI::App* cmd);
  PartitionOptions partition_options() const;
  RunCodegenOptions codegen_options() const;
  ImportOptions import_options() const;
};

// Flags of the model compile pipeline (`kiln compile`, `kiln run`).
struct CompileFlags {
  bool strict_compile = false;
  std::string layout = "blocked";
  std::string float16_precision = "per-op";
  bool print_after_all = false;
  bool time_passes = false;
  bool check_bounds = false;
  std::string target;  // "" (the machine's CPU) or "llvm -mcpu=NAME"

  // With `with_target`, also --target (`kiln run` has its own, shared with
  // prim functions, and sets `target` itself).
  void add_to(CLI::App* cmd, bool with_target = true);
  // The pipeline's options for these flags and the backend flags.
  driver::CompileOptions options(const BackendFlags& backend, const std::string& entry) const;
};

// "compile: compiled 412 of 412 host ops into 130 kernel calls (95 distinct); 0 ops on reference kernels"
std::string compile_line(const driver::CompileSummary& s);

// The one-line offload summary printed whenever a backend is used, with the
// merge setting (merged by default; --no-merge):
// "offload: 2 of 3 ops offloaded in 1 region (example_npu: 2); 1 on the host; regions merged"
std::string offload_line(const PartitionReport& report, bool merged);

}  // namespace kiln::cli
