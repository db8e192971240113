// Checked linking: the imports of compiled prim functions and where each one
// resolves. Plain C++ and dlopen; no LLVM here.
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "runtime/runtime_abi.h"
#include "tir/mutator.h"

namespace kiln::codegen {

namespace {

class ExternCalls : public tir::Visitor {
 public:
  std::vector<std::string> symbols;

 protected:
  void visit_Call(const tir::CallNode& n) override {
    if (n.call_kind == tir::CallKind::Extern &&
        std::find(symbols.begin(), symbols.end(), n.name) == symbols.end())
      symbols.push_back(n.name);
    tir::Visitor::visit_Call(n);
  }
  // Codegen calls the runtime to run a parallel loop's tasks.
  void visit_For(const tir::ForNode& n) override {
    if (n.for_kind == tir::ForKind::Parallel &&
        std::find(symbols.begin(), symbols.end(), "KilnBackendParallelFor") == symbols.end())
      symbols.push_back("KilnBackendParallelFor");
    tir::Visitor::visit_For(n);
  }
};

}  // namespace

std::vector<Import> collect_imports(const std::vector<tir::PrimFunc>& funcs) {
  std::map<std::string, Import> by_symbol;
  for (const tir::PrimFunc& f : funcs) {
    ExternCalls calls;
    calls.visit(f->body);
    for (const std::string& s : calls.symbols) {
      Import& imp = by_symbol[s];
      imp.symbol = s;
      imp.callers.push_back(f->name);
    }
  }
  std::vector<Import> out;
  for (auto& [s, imp] : by_symbol) out.push_back(std::move(imp));
  return out;
}

const char* import_source_name(ImportSource s) {
  switch (s) {
    case ImportSource::RuntimeAbi:
      return "runtime ABI";
    case ImportSource::TargetRuntime:
      return "Hexagon runtime";
    case ImportSource::Library:
      return "library";
    case ImportSource::Unresolved:
      return "UNRESOLVED";
  }
  return "?";
}

namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = kElfMachineX86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = kElfMachineAArch64;
#else
#error "kiln's host target is x86-64 (or AArch64)"
#endif

// What dlopen is given for a --link-lib: a file that exists is checked and
// loaded by its path (dlopen would search the library path for a name
// without a slash, and report a file for another machine as missing or as
// a bad ELF header); anything else is a library name for dlopen to find.
std::string host_library_path(const std::string& lib) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(lib, ec)) return lib;
  const std::string expected = "a host build loads shared libraries for " + elf_machine_name(kHostMachine) +
                               " (ELF e_machine " + std::to_string(kHostMachine) + ", type ET_DYN)";
  std::optional<ElfHeader> h = read_elf_header(lib);
  if (!h) throw Error("--link-lib " + lib + " is not an ELF file; " + expected);
  if (h->machine != kHostMachine)
    throw Error("--link-lib " + lib + " is " + describe_elf(*h) + "; " + expected +
                (h->machine == kElfMachineHexagon
                     ? "; pass Hexagon objects to a Hexagon build (--target hexagon-v68)"
                     : ""));
  if (h->type == kElfRelocatable)
    throw Error("--link-lib " + lib + " is " + describe_elf(*h) + "; " + expected +
                ": link it into one with `cc -shared -fPIC -o lib" +
                std::filesystem::path(lib).stem().string() + ".so " + lib + "`");
  if (lib.find('/') == std::string::npos) return "./" + lib;
  return lib;
}

}  // namespace

std::vector<ResolvedImport> resolve_imports(const std::vector<Import>& imports,
                                            const std::vector<std::string>& link_libs) {
  // Handles stay open for the life of the process: resolved addresses may be called later.
  std::vector<std::pair<std::string, void*>> libs;
  for (const std::string& lib : link_libs) {
    void* h = dlopen(host_library_path(lib).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      throw Error("cannot load library '" + lib + "' named by --link-lib: " + (why ? why : "unknown reason"));
    }
    libs.push_back({lib, h});
  }
  std::vector<ResolvedImport> out;
  for (const Import& imp : imports) {
    ResolvedImport r;
    r.import = imp;
    if (const AbiSymbol* s = find_runtime_symbol(imp.symbol)) {
      r.source = ImportSource::RuntimeAbi;
      r.address = s->address;
    } else {
      for (auto& [name, h] : libs) {
        if (void* p = dlsym(h, imp.symbol.c_str())) {
          r.source = ImportSource::Library;
          r.library = name;
          r.address = p;
          break;
        }
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

void throw_unresolved_imports(const std::vector<Import>& unresolved,
                              const std::vector<std::string>& link_libs, const std::string& when,
                              const std::string& runtime) {
  std::string msg;
  for (const Import& imp : unresolved) {
    std::string callers;
    for (const std::string& c : imp.callers) callers += (callers.empty() ? "@" : ", @") + c;
    msg += "\n  unresolved symbol '" + imp.symbol + "' " +
           (callers.empty() ? std::string("needed by the generated code") : "called by " + callers);
  }
  std::string libs;
  for (const std::string& l : link_libs) libs += (libs.empty() ? "" : ", ") + l;
  throw Error("link check failed at " + when + " time:" + msg + "\n" + runtime +
              " exports only the functions in kiln/runtime/backend_api.h" +
              (libs.empty() ? std::string("; name a library that defines it with --link-lib")
                            : "; the named libraries (" + libs + ") do not define it either") +
              " (see docs/linking.md)");
}

void check_imports(const std::vector<Import>& imports, const std::vector<std::string>& link_libs,
                   const std::string& when) {
  std::vector<Import> unresolved;
  for (const ResolvedImport& r : resolve_imports(imports, link_libs))
    if (r.source == ImportSource::Unresolved) unresolved.push_back(r.import);
  if (!unresolved.empty()) throw_unresolved_imports(unresolved, link_libs, when, "the kiln runtime");
}

EmitKind parse_emit_kind(const std::string& name) {
  if (name == "ll") return EmitKind::LLVMIR;
  if (name == "asm") return EmitKind::Assembly;
  if (name == "obj") return EmitKind::Object;
  if (name == "so") return EmitKind::SharedLibrary;
  if (name == "exe") return EmitKind::Executable;
  throw Error("unknown --emit kind '" + name + "' (known: ll, asm, obj, so, exe)");
}

// The link check before codegen, by target.
void check_target_imports(const std::vector<tir::PrimFunc>& funcs, const CodegenOptions& options) {
  if (!options.check_imports) return;
  if (options.target.is_hexagon()) return check_hexagon_imports(collect_imports(funcs), options.link_libs);
  check_imports(collect_imports(funcs), options.link_libs);
}

}  // namespace kiln::codegen
