// kiln ops: lists the registered ops with their attributes.
#include <iostream>

#include "commands.h"
#include "op/op.h"

namespace kiln::cli {

void add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the ops kiln knows, with their attributes and defaults");
  cmd->callback([] {
    for (const OpDef* op : all_ops()) {
      std::cout << op->name;
      std::string attrs;
      for (const auto& a : op->attrs) {
        attrs += (attrs.empty() ? "" : ", ") + a.name;
        attrs += a.default_value ? "=" + attr_value_str(*a.default_value) : " (required)";
      }
      if (!attrs.empty()) std::cout << "(" << attrs << ")";
      std::cout << "\n    " << op->summary << "\n";
    }
  });
}

}  // namespace kiln::cli
