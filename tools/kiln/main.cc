// The `kiln` command. Exit codes: 0 success, 1 a user error (bad model, bad
// input file, ...: printed as `error: ...`), 2 bad usage of the command line.
#include <iostream>

#include "commands.h"
#include "kiln/runtime/error.h"

int main(int argc, char** argv) {
  CLI::App app{"kiln: compile and run neural networks on accelerators and the host"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kiln 0.1.0");
  kiln::cli::add_run_command(app);
  kiln::cli::add_opt_command(app);
  kiln::cli::add_ops_command(app);
  kiln::cli::add_import_command(app);
  kiln::cli::add_onnx_conformance_command(app);
  kiln::cli::add_partition_command(app);
  kiln::cli::add_compile_command(app);
  kiln::cli::add_build_command(app);
  kiln::cli::add_inspect_command(app);
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
