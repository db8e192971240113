// kiln inspect FILE.kir [--link-lib LIB ...]
//
// Lists the exports (prim functions) and imports of a module and, for each
// import, where it resolves: the runtime ABI, a named library, or UNRESOLVED.
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/codegen.h"
#include "commands.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::cli {
namespace {

struct InspectOpts {
  std::string input;
  std::vector<std::string> link_libs;
};

int run_inspect(const InspectOpts& o) {
  std::ifstream in(o.input);
  KILN_CHECK(in.good(), "cannot read ", o.input);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto funcs = tir::parse_prim_functions(text, o.input);
  for (auto& f : funcs) f = tir::lower_for_build(f);
  std::cout << "exports:\n";
  for (const auto& f : funcs) std::cout << "  " << f->name << "\n";
  std::cout << "imports:\n";
  bool unresolved = false;
  for (const auto& r : codegen::resolve_imports(codegen::collect_imports(funcs), o.link_libs)) {
    std::string callers;
    for (const auto& c : r.import.callers) callers += (callers.empty() ? "@" : ", @") + c;
    std::cout << "  " << r.import.symbol << "  " << codegen::import_source_name(r.source)
              << (r.library.empty() ? "" : " " + r.library) << "  (called by " << callers << ")\n";
    unresolved |= r.source == codegen::ImportSource::Unresolved;
  }
  return unresolved ? 1 : 0;
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOpts>();
  CLI::App* cmd = app.add_subcommand("inspect", "list a module's exports and imports and where each import resolves");
  cmd->add_option("file", opts->input, "a .kir file of prim functions")->required();
  cmd->add_option("--link-lib", opts->link_libs, "a shared library that may provide imports (repeatable)");
  cmd->callback([opts] {
    int rc = run_inspect(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace kiln::cli
