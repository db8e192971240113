// kiln opt MODEL --passes a,b,... [--target T] [--print-after-all] [--time-passes]
//
// Graph passes (transform/pipeline.cc) and tensor-IR passes
// (tir/transform/pipeline.cc) by name, in the order given; a tensor-IR pass
// rewrites every prim function of the module, for --target's vector width,
// registers and scratchpad as a build for it would (without it, the passes
// that need a target, vectorize-loops and interleave-accumulators, leave
// the IR as it is).
#include <algorithm>
#include <chrono>
#include <iostream>

#include "codegen/target.h"
#include "commands.h"
#include "ir/text.h"
#include "module_output.h"
#include "runtime/file_io.h"
#include "tir/transform/passes.h"
#include "transform/pass.h"

namespace kiln::cli {

void add_opt_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("opt", "Run graph and tensor-IR passes by name and print the module");
  struct Opts {
    std::string model;
    std::vector<std::string> passes;
    bool print_after_all = false;
    bool time_passes = false;
    bool list = false;
    std::string output;
    std::string target;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("model", o->model, "Model file (.kir; - reads it from standard input)");
  cmd->add_option("-o,--output,--out", o->output,
                  "Write the module to FILE.kir (-: to standard output, every constant inline)");
  cmd->add_option("--passes", o->passes, "Comma-separated pass names, run in order")->delimiter(',');
  cmd->add_option("--target", o->target,
                  "The target tensor-IR passes rewrite for, as kiln build's: llvm (this machine), llvm "
                  "-mcpu=NAME, hexagon-v66|v68|v69|v73 (none: passes that need one change nothing)");
  cmd->add_flag("--print-after-all", o->print_after_all, "Print the module after each pass that changed it");
  cmd->add_flag("--time-passes", o->time_passes, "Print the time each pass took");
  cmd->add_flag("--list-passes", o->list, "List the graph passes and exit");
  cmd->callback([o] {
    if (o->list) {
      for (const auto& p : graph_passes()) std::cout << p.name << "\t" << p.description << "\n";
      for (const auto& p : tir::tir_pass_names()) std::cout << p << "\t(tensor IR: every prim function)\n";
      return;
    }
    if (o->model.empty()) throw CLI::RequiredError("model");
    Module m =
        o->model == "-" ? parse_module(read_input("-", "model"), "standard input") : load_module(o->model);
    tir::TirPassOptions tir_options;
    if (!o->target.empty()) tir_options = codegen::tir_pass_options(codegen::parse_target(o->target));
    PipelineOptions popts;
    popts.print_after_all = o->print_after_all;
    popts.time_passes = o->time_passes;
    // Consecutive graph passes run as one pipeline; a tensor-IR pass runs on
    // every prim function of the module, in order with the graph passes.
    std::vector<std::string> graph_run;
    auto flush = [&] {
      if (graph_run.empty()) return;
      m = run_passes(m, graph_run, popts);
      graph_run.clear();
    };
    for (const auto& spec : o->passes) {
      const auto& tir_names = tir::tir_pass_names();
      if (std::find(tir_names.begin(), tir_names.end(), spec) == tir_names.end()) {
        graph_run.push_back(spec);
        continue;
      }
      flush();
      auto start = std::chrono::steady_clock::now();
      for (auto& f : m.prim_functions) f = tir::run_tir_pass(spec, f, tir_options);
      auto us =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
      if (o->time_passes) std::cerr << "# pass " << spec << " (tensor IR): " << us.count() << " us\n";
      if (o->print_after_all) std::cerr << "# IR after " << spec << "\n" << print_module(m) << "\n";
    }
    flush();
    write_module_output(m, o->output);
  });
}

}  // namespace kiln::cli
