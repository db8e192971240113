// kiln import: an ONNX model to kiln IR text (.kir plus the .npz side file
// for large constants).
//
//   kiln import model.onnx -o model.kir --input-shape x=1,3,320,320
#include <iostream>

#include "commands.h"
#include "frontend/load_model.h"
#include "frontend/onnx/importer.h"
#include "ir/text.h"
#include "module_output.h"
#include "runtime/file_io.h"

namespace kiln::cli {

namespace {
struct ImportArgs {
  std::string model;
  std::string output;
  std::vector<std::string> input_shapes;
  int64_t inline_limit = 16;
  bool list_ops = false;
};
}  // namespace

void add_import_command(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  auto* cmd = app.add_subcommand("import", "Import an ONNX model into kiln IR text (.kir + .npz weights)");
  cmd->add_option("model", args->model, "ONNX model (.onnx; - reads it from standard input)");
  cmd->add_option("-o,--output,--out", args->output,
                  "Output .kir file, weights beside it in a .npz (default: print the IR; -: print it with "
                  "every constant inline, to parse back)");
  cmd->add_option("--input-shape", args->input_shapes,
                  "Bind an input's symbolic dimensions: NAME=D0,D1,... by its ONNX name (repeatable)");
  cmd->add_option("--inline-limit", args->inline_limit,
                  "Constants with more elements than this go to the side file")
      ->capture_default_str();
  cmd->add_flag("--list-ops", args->list_ops, "List the ONNX operators kiln imports and exit");
  cmd->callback([args] {
    if (args->list_ops) {
      for (const auto& op : supported_onnx_ops()) std::cout << op << "\n";
      return;
    }
    if (args->model.empty())
      throw Error("kiln import: give an ONNX model file (kiln import model.onnx -o model.kir)");
    ImportOptions opts;
    opts.inline_limit = args->inline_limit;
    for (const auto& f : args->input_shapes) parse_input_shape_flag(f, opts);
    Module m = is_stream_path(args->model)
                   ? import_onnx_bytes(read_input(args->model, "ONNX model"),
                                       args->model == "-" ? "standard input" : args->model, opts, ".")
                   : import_onnx(args->model, opts);
    write_module_output(m, args->output, args->inline_limit);
    if (!args->output.empty() && args->output != "-") std::cerr << "wrote " << args->output << "\n";
  });
}

}  // namespace kiln::cli
