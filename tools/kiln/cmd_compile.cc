// kiln compile MODEL [--backend NAME ...] -o model.kmod
//
// The model compile pipeline (src/driver/compile_model.h): graph
// optimizations, partitioning, backend codegen, host ops lowered, fused and
// compiled to native code, one artifact.
#include <iostream>

#include "byoc_flags.h"
#include "commands.h"
#include "frontend/load_model.h"
#include "runtime/module_file.h"

namespace kiln::cli {
namespace {

struct CompileOpts {
  std::string model;
  std::string out;
  std::string entry = "main";
  BackendFlags flags;
  CompileFlags compile;
};

void run(const CompileOpts& o) {
  Module m = load_model(o.model, o.flags.import_options());
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, o.compile.options(o.flags, o.entry), &summary);
  if (summary.offloaded) std::cout << offload_line(summary.report, !o.flags.no_merge) << "\n";
  std::cout << compile_line(summary) << "\n";
  uint64_t bytes = write_kmod(o.out, exe);
  std::string backends;
  for (const auto& b : exe.backends) backends += (backends.empty() ? "" : ", ") + b.backend;
  std::cout << "wrote " << o.out << " (" << bytes
            << " bytes; backends: " << (backends.empty() ? "none" : backends) << "; compiled in "
            << static_cast<int64_t>(summary.compile_ms) << " ms)\n";
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compile",
      "Optimize, partition, run each backend's codegen, compile the host ops and write one .kmod file");
  auto o = std::make_shared<CompileOpts>();
  cmd->add_option("model", o->model, "Model file (.kir or .onnx)")->required();
  cmd->add_option("--out,-o", o->out, "The .kmod file to write")->required();
  cmd->add_option("--entry", o->entry, "Entry function")->capture_default_str();
  o->flags.add_to(cmd);
  o->compile.add_to(cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace kiln::cli
