// kiln partition MODEL --backend NAME [--no-merge] [--explain] [--report FILE.json] [--dot FILE.dot]
#include <iostream>

#include "byoc_flags.h"
#include "commands.h"
#include "frontend/load_model.h"
#include "ir/text.h"
#include "module_output.h"
#include "pattern/registry.h"
#include "runtime/file_io.h"
#include "runtime/profile.h"

namespace kiln::cli {
namespace {

struct PartitionOpts {
  std::string model;
  BackendFlags flags;
  bool explain = false;
  bool list = false;
  std::string report_path, dot_path, out_path;
};

void list_patterns() {
  for (const auto& backend : pattern_registry().backends()) {
    std::cout << backend << ":\n";
    for (const PatternEntry* e : pattern_registry().for_backend(backend)) {
      std::cout << "  " << e->name << "  priority " << e->priority << (e->check ? ", checked" : "")
                << "\n    " << pattern_str(e->pattern) << "\n";
      if (!e->description.empty()) std::cout << "    " << e->description << "\n";
    }
  }
}

void run(const PartitionOpts& o) {
  if (o.list) return list_patterns();
  if (o.model.empty()) throw Error("kiln partition: give a MODEL (or --list to see the registered patterns)");
  if (o.flags.backends.empty())
    throw Error("kiln partition: name at least one --backend (registered: " + registered_backends() +
                "; --list shows their patterns)");
  Module m = load_model(o.model, o.flags.import_options());
  PartitionReport report;
  Module parted = partition_module(m, o.flags.partition_options(), !o.flags.no_merge, &report);
  // With -o - standard output holds the module alone (it parses back); the
  // rest goes to stderr.
  bool to_stdout = o.out_path == "-";
  std::ostream& info = to_stdout ? std::cerr : std::cout;
  // Weights go to the output's .npz (out.kir -> out.npz), not the input's.
  write_module_output(parted, o.out_path);
  if (o.explain) info << "\n" << report.explain();
  if (!o.report_path.empty()) write_output(o.report_path, report.to_json());
  if (!o.dot_path.empty()) write_output(o.dot_path, report.to_dot(m));
  info << offload_line(report, !o.flags.no_merge) << "\n";
}

}  // namespace

void add_partition_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("partition", "Split a model between backends and the host, and explain why");
  auto o = std::make_shared<PartitionOpts>();
  cmd->add_option("model", o->model, "Model file (.kir or .onnx; - reads it from standard input)");
  o->flags.add_to(cmd);
  cmd->add_flag("--explain", o->explain, "One line per op: which backend and pattern took it, or why not");
  cmd->add_option("--report", o->report_path,
                  "Write the decisions and a summary as JSON (- for standard output)");
  cmd->add_option("--dot", o->dot_path,
                  "Write the graph in Graphviz DOT, regions coloured by backend (- for standard output)");
  cmd->add_option(
      "-o,--output,--out", o->out_path,
      "Write the partitioned module to FILE.kir (its weights to FILE.npz) instead of printing it");
  cmd->add_flag("--list", o->list, "List every registered pattern by backend and priority");
  cmd->callback([o] { run(*o); });
}

}  // namespace kiln::cli
