// The `kiln` command. Exit codes: 0 success, 1 a user error (bad model, bad
// input file, ...: printed as `error: ...`), 2 bad usage of the command line.
#include <iostream>
#include <string>

#include "commands.h"
#include "kiln/runtime/error.h"
#include "plugins.h"

namespace {

// The first argument that is not a flag: the command (kiln's own flags,
// --help and --version, take no values).
const char* command_arg(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return nullptr;
}

std::string command_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* c : app.get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + c->get_name();
  return names;
}

}  // namespace

// Compiling a model allocates ~100 MB in small pieces (LLVM's IR, DAGs and
// machine code). In 4 KiB pages each first touch is a page fault and the TLB
// covers little of it; jemalloc (the process's allocator, see CMakeLists.txt)
// reads this before its first allocation and takes its memory in transparent
// 2 MiB pages where the kernel gives them: PP-OCR det compiles in about 1.15 s
// instead of 1.35 on one core, with a third of the page faults.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:always";
}

int main(int argc, char** argv) {
  // Backend plugins first (--plugin anywhere on the line, KILN_PLUGIN_PATH),
  // so their backends are known to every command.
  std::vector<char*> args;
  try {
    args = kiln::cli::load_plugins(argc, argv);
  } catch (const kiln::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();
  CLI::App app{"kiln: compile and run neural networks on accelerators and the host"};
  // Usage errors read like every other error: "error: ...".
  app.failure_message(
      [](const CLI::App* a, const CLI::Error& e) { return "error: " + CLI::FailureMessage::simple(a, e); });
  app.require_subcommand(1);
  app.set_version_flag("--version", "kiln 0.1.0");
  // Taken out by load_plugins before parsing; listed for --help.
  std::vector<std::string> plugin_help;
  app.add_option(
      "--plugin", plugin_help,
      "Load a backend plugin (a shared library, <kiln/backend_plugin.h>); repeatable, anywhere on the "
      "line; KILN_PLUGIN_PATH=a.so:b.so too");
  kiln::cli::add_run_command(app);
  kiln::cli::add_opt_command(app);
  kiln::cli::add_ops_command(app);
  kiln::cli::add_import_command(app);
  kiln::cli::add_onnx_conformance_command(app);
  kiln::cli::add_partition_command(app);
  kiln::cli::add_compile_command(app);
  kiln::cli::add_build_command(app);
  kiln::cli::add_inspect_command(app);
  // CLI11 reports an unknown command as "A subcommand is required".
  if (const char* cmd = command_arg(argc, argv);
      cmd && app.get_subcommands([&](CLI::App* c) { return c->check_name(cmd); }).empty()) {
    std::cerr << "error: unknown command '" << cmd << "' (commands: " << command_names(app) << ")\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const kiln::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
