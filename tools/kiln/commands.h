// Subcommands of the `kiln` tool. Each lives in its own cmd_NAME.cc and adds
// itself to the app; main.cc calls them in the order `kiln --help` lists them.
#pragma once

#include <CLI/CLI.hpp>

namespace kiln::cli {

void add_run_command(CLI::App& app);
void add_opt_command(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_onnx_conformance_command(CLI::App& app);
void add_partition_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_build_command(CLI::App& app);    // cmd_build.cc: prim functions -> ll/asm/obj/so
void add_inspect_command(CLI::App& app);  // cmd_inspect.cc: exports, imports, resolution

}  // namespace kiln::cli
