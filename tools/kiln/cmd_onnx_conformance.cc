// kiln onnx-conformance: runs the ONNX backend node tests of Debian's
// libonnx-testdata on the reference interpreter (or, with --compiled,
// compiled and run on the VM) and prints the table.
//
//   kiln onnx-conformance                 # every test, a line each, totals
//   kiln onnx-conformance --compiled      # through compile_model + the VM
//   kiln onnx-conformance --filter conv   # tests whose name contains "conv"
//   kiln onnx-conformance --passing-list  # just the names of passing tests
//   kiln onnx-conformance --report        # per operator, Markdown (docs/onnx_conformance.md)
#include <iostream>

#include "commands.h"
#include "frontend/onnx/conformance.h"

namespace kiln::cli {

namespace {
struct ConformanceArgs {
  std::string dir = kOnnxNodeTestDir;
  ConformanceOptions opts;
  bool passing_list = false;
  bool failures_only = false;
  bool report = false;
};
}  // namespace

void add_onnx_conformance_command(CLI::App& app) {
  auto args = std::make_shared<ConformanceArgs>();
  auto* cmd = app.add_subcommand(
      "onnx-conformance", "Run the ONNX operator conformance tests on the reference interpreter or compiled");
  cmd->add_option("--dir", args->dir, "Folder of ONNX node tests")->capture_default_str();
  cmd->add_option("--filter", args->opts.filter, "Only tests whose name contains this");
  cmd->add_option("--rtol", args->opts.rtol, "Relative tolerance for float outputs")->capture_default_str();
  cmd->add_option("--atol", args->opts.atol, "Absolute tolerance for float outputs")->capture_default_str();
  cmd->add_flag("--compiled", args->opts.compiled,
                "Compile each model (no backends) and run it on the VM instead of the interpreter");
  cmd->add_flag("--passing-list", args->passing_list, "Print only the names of the passing tests");
  cmd->add_flag("--failures-only", args->failures_only, "Leave passing tests out of the table");
  cmd->add_flag("--report", args->report,
                "Print the per-operator report (Markdown) from an interpreted and a compiled run");
  cmd->callback([args] {
    if (args->report) {
      ConformanceOptions opts = args->opts;
      opts.compiled = false;
      auto interpreted = run_conformance(args->dir, opts);
      opts.compiled = true;
      std::cout << conformance_report(interpreted, run_conformance(args->dir, opts));
      return;
    }
    auto results = run_conformance(args->dir, args->opts);
    if (args->passing_list) {
      for (const auto& r : results)
        if (r.status == ConformanceResult::Status::Passed) std::cout << r.name << "\n";
      return;
    }
    std::cout << conformance_table(results, !args->failures_only);
  });
}

}  // namespace kiln::cli
