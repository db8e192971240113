// kiln compile MODEL --backend NAME -o model.kmod
#include <filesystem>
#include <iostream>

#include "backends/build.h"
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
};

void run(const CompileOpts& o) {
  Module m = load_model(o.model, o.flags.import_options());
  PartitionReport report;
  Module parted = partition_module(m, o.flags.partition_options(), !o.flags.no_merge, &report);
  Executable exe = build_executable(parted, o.entry, o.flags.codegen_options());
  if (!o.flags.backends.empty()) {
    exe.offload_summary = report.summary();
    std::cout << offload_line(report) << "\n";
  }
  write_kmod(o.out, exe);
  std::string backends;
  for (const auto& b : exe.backends) backends += (backends.empty() ? "" : ", ") + b.backend;
  std::cout << "wrote " << o.out << " (" << std::filesystem::file_size(o.out)
            << " bytes; backends: " << (backends.empty() ? "none" : backends) << ")\n";
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Partition, run each backend's codegen and write one .kmod file");
  auto o = std::make_shared<CompileOpts>();
  cmd->add_option("model", o->model, "Model file (.kir or .onnx)")->required();
  cmd->add_option("--out,-o", o->out, "The .kmod file to write")->required();
  cmd->add_option("--entry", o->entry, "Entry function")->capture_default_str();
  o->flags.add_to(cmd, true);
  cmd->callback([o] { run(*o); });
}

}  // namespace kiln::cli
