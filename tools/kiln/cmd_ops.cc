// kiln ops: lists the registered ops with their attributes; [dynamic] marks
// the ops that accept a bounded dynamic leading axis (TensorDesc::bounded_outer).
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
      // Ops that accept inputs with a bounded dynamic leading axis.
      if (op->dynamic_inputs != DynamicInputs::Reject) std::cout << " [dynamic]";
      std::cout << "\n    " << op->summary << "\n";
    }
  });
}

}  // namespace kiln::cli
