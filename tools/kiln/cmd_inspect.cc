// kiln inspect FILE [--target llvm|hexagon-vNN] [--link-lib LIB ...]
//
// Lists the exports and imports of a module and, for each import, where it
// resolves: the runtime ABI, kiln's Hexagon runtime (for Hexagon code), a
// named library, or UNRESOLVED. FILE is a .kir module (its prim functions are
// lowered as `kiln build --target` would, so the scratchpad calls show), or an
// object file / shared library (its symbol table; a Hexagon object resolves
// against the Hexagon runtime). Exit code 1 when an import is unresolved.
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "commands.h"
#include "ir/text.h"
#include "runtime/file_io.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::cli {
namespace {

struct InspectOpts {
  std::string input;
  std::string target = "llvm";
  std::vector<std::string> link_libs;
};

// C library functions LLVM itself may call from generated code (block copies
// and fills, math); the dynamic linker takes them from libc/libm, which every
// process that loads a kernel has.
bool is_c_library_symbol(const std::string& s) {
  for (const char* c : {"memcpy", "memmove", "memset", "expf", "exp", "sqrtf", "sqrt", "fabsf", "fabs",
                        "fmaxf", "fminf"})
    if (s == c) return true;
  return false;
}

bool is_kir(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".kir") == 0;
}

int run_inspect(const InspectOpts& o) {
  std::vector<std::string> exports;
  std::vector<codegen::Import> imports;
  codegen::Target target = codegen::parse_target(o.target);
  bool hexagon = target.is_hexagon();
  if (is_kir(o.input)) {
    Module m = parse_module(read_file(o.input), o.input);
    std::vector<tir::PrimFunc> funcs;
    tir::TirPassOptions passes = codegen::tir_pass_options(target);
    for (const auto& f : m.prim_functions) funcs.push_back(tir::lower_for_build(f, passes));
    for (const auto& f : funcs) exports.push_back(f->name);
    imports = codegen::collect_imports(funcs);
  } else {
    codegen::ObjectSymbols syms = codegen::read_object_symbols(o.input);
    hexagon = syms.hexagon;
    exports = syms.exports;
    for (const auto& s : syms.imports) imports.push_back(codegen::Import{s, {}});
  }
  std::cout << "exports:\n";
  for (const auto& e : exports) std::cout << "  " << e << "\n";
  std::cout << "imports:\n";
  std::vector<std::string> unresolved;
  auto resolved = hexagon ? codegen::resolve_hexagon_imports(imports, o.link_libs)
                          : codegen::resolve_imports(imports, o.link_libs);
  for (const auto& r : resolved) {
    std::string where = codegen::import_source_name(r.source);
    if (!r.library.empty()) where += " " + r.library;
    bool libc = !hexagon && r.source == codegen::ImportSource::Unresolved && is_c_library_symbol(r.import.symbol);
    if (libc) where = "C library";
    std::cout << "  " << r.import.symbol << "  " << where;
    std::string callers;
    for (const auto& c : r.import.callers) callers += (callers.empty() ? "@" : ", @") + c;
    if (!callers.empty()) std::cout << "  (called by " << callers << ")";
    std::cout << "\n";
    if (r.source == codegen::ImportSource::Unresolved && !libc) unresolved.push_back(r.import.symbol);
  }
  std::cout.flush();
  if (!unresolved.empty()) {
    std::string names;
    for (const auto& u : unresolved) names += (names.empty() ? "'" : ", '") + u + "'";
    throw Error(o.input + ": " + std::to_string(unresolved.size()) + " import(s) UNRESOLVED: " + names + "; " +
                (hexagon ? "kiln's Hexagon runtime exports" : "the kiln runtime exports") +
                " only kiln/runtime/backend_api.h" + (hexagon ? " and the helpers of docs/hexagon.md" : "") +
                ", name a library that defines them with --link-lib (see docs/linking.md)");
  }
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOpts>();
  CLI::App* cmd = app.add_subcommand("inspect", "list a module's exports and imports and where each import resolves");
  cmd->add_option("file", opts->input, "a .kir module, an object file or a shared library")->required();
  cmd->add_option("--target", opts->target, "for .kir files: llvm (the host) or hexagon-v66|v68|v69|v73");
  cmd->add_option("--link-lib", opts->link_libs,
                  "a library that may provide imports: a shared library (host) or an object file (Hexagon)");
  cmd->callback([opts] {
    int rc = run_inspect(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace kiln::cli
