// kiln compile MODEL [--backend NAME ...] -o model.kmod
//
// The model compile pipeline (src/driver/compile_model.h): graph
// optimizations, partitioning, backend codegen, host ops lowered, fused and
// compiled to native code, one artifact.
#include <iostream>

#include "byoc_flags.h"
#include "commands.h"
#include "frontend/load_model.h"
#include "runtime/file_io.h"
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
  // With -o - the .kmod goes to standard output, so the summary goes to stderr.
  std::ostream& info = o.out == "-" ? std::cerr : std::cout;
  if (summary.offloaded) info << offload_line(summary.report, !o.flags.no_merge) << "\n";
  info << compile_line(summary) << "\n";
  std::string bytes = encode_kmod(exe);
  write_output(o.out, bytes);
  std::string backends;
  for (const auto& b : exe.backends) backends += (backends.empty() ? "" : ", ") + b.backend;
  info << "wrote " << (o.out == "-" ? "standard output" : o.out) << " (" << bytes.size()
       << " bytes; backends: " << (backends.empty() ? "none" : backends) << "; compiled in "
       << static_cast<int64_t>(summary.compile_ms) << " ms)\n";
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compile",
      "Optimize, partition, run each backend's codegen, compile the host ops and write one .kmod file");
  auto o = std::make_shared<CompileOpts>();
  cmd->add_option("model", o->model, "Model file (.kir or .onnx; - reads it from standard input)")
      ->required();
  cmd->add_option("-o,--output,--out", o->out, "The .kmod file to write (- for standard output)")->required();
  cmd->add_option("--entry", o->entry, "Entry function")->capture_default_str();
  o->flags.add_to(cmd);
  o->compile.add_to(cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace kiln::cli
