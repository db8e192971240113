// kiln opt MODEL --passes a,b,... [--print-after-all] [--time-passes]
#include <iostream>

#include "commands.h"
#include "ir/text.h"
#include "transform/pass.h"

namespace kiln::cli {

void add_opt_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("opt", "Run graph passes by name and print the module");
  struct Opts {
    std::string model;
    std::vector<std::string> passes;
    bool print_after_all = false;
    bool time_passes = false;
    bool list = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("model", o->model, "Model file (.kir)");
  cmd->add_option("--passes", o->passes, "Comma-separated pass names, run in order")->delimiter(',');
  cmd->add_flag("--print-after-all", o->print_after_all, "Print the module after each pass that changed it");
  cmd->add_flag("--time-passes", o->time_passes, "Print the time each pass took");
  cmd->add_flag("--list-passes", o->list, "List the graph passes and exit");
  cmd->callback([o] {
    if (o->list) {
      for (const auto& p : graph_passes()) std::cout << p.name << "\t" << p.description << "\n";
      return;
    }
    if (o->model.empty()) throw CLI::RequiredError("model");
    Module m = load_module(o->model);
    PipelineOptions popts;
    popts.print_after_all = o->print_after_all;
    popts.time_passes = o->time_passes;
    Module out = run_passes(m, o->passes, popts);
    std::cout << print_module(out);
  });
}

}  // namespace kiln::cli
