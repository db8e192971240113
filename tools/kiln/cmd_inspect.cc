// kiln inspect FILE [--target llvm|hexagon-vNN] [--link-lib LIB ...]
//
// Lists the exports and imports of a module and, for each import, where it
// resolves: the runtime ABI, kiln's Hexagon runtime (for Hexagon code), a
// named library, or UNRESOLVED. FILE is a .kir module (its prim functions are
// lowered as `kiln build --target` would, so the scratchpad calls show; for
// Hexagon they are compiled to an object, and its undefined symbols are the
// imports, with those LLVM adds such as __hexagon_divdf3: what the link will
// see), or an object file / shared library (its symbol table; a Hexagon object
// resolves against the Hexagon runtime). Exit code 1 when an import is
// unresolved.
// For an .onnx model, a .kir module and a compiled .kmod it first lists the
// model's input and output names (runtime/model_names.h): the ONNX name of
// each input with its kiln parameter, and of each output with the file
// `kiln run --out` writes it to. For a .kmod it then shows the module: what
// was offloaded, each backend (version, options) with its functions and the
// ops of each, the host program node by node (a compiled kernel, a call of an
// offloaded function, or an op on its reference kernel), the CPU the host
// code was compiled for and the arena; its exports are its host kernels and
// its imports the runtime ABI symbols they call.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "commands.h"
#include "frontend/onnx/importer.h"
#include "ir/model_names.h"
#include "ir/text.h"
#include "runtime/file_io.h"
#include "runtime/graph.h"
#include "runtime/module_file.h"
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
  for (const char* c :
       {"memcpy", "memmove", "memset", "expf", "exp", "sqrtf", "sqrt", "fabsf", "fabs", "fmaxf", "fminf"})
    if (s == c) return true;
  return false;
}

bool is_kir(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".kir") == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What the link of `funcs` for Hexagon will see: the undefined symbols of
// their object (compiled in a scratch folder), the prim functions' extern
// calls with their callers among them.
std::vector<codegen::Import> hexagon_link_imports(const std::vector<tir::PrimFunc>& funcs,
                                                  const codegen::Target& target) {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  std::string dir = ((ec ? std::filesystem::path(".") : tmp) / "kiln-inspect-XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw Error("cannot create a scratch folder for " + dir);
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } remove{dir};
  codegen::CodegenOptions cg;
  cg.target = target;
  cg.check_imports = false;  // reported below, with the symbols LLVM adds
  std::string obj = dir + "/kernels.o";
  codegen::emit_to_file(funcs, codegen::EmitKind::Object, obj, cg);
  return codegen::hexagon_object_imports(obj, codegen::collect_imports(funcs));
}

void print_model_names(const ModelNames& names) {
  if (names.empty()) return;
  std::cout << "inputs (model name -> kiln parameter):\n";
  for (const auto& [param, name] : names.inputs)
    std::cout << "  " << quote_string(name) << " -> %" << param << "\n";
  std::cout << "outputs (index -> model name -> file of `kiln run --out`):\n";
  std::vector<OutputFiles> files = output_files(names, names.outputs.size());
  for (size_t i = 0; i < names.outputs.size(); ++i)
    std::cout << "  " << i << " -> " << quote_string(names.outputs[i]) << " -> "
              << (files[i].named_file.empty() ? files[i].index_file : files[i].named_file) << "\n";
}

// "nn.conv2d+add+nn.relu, nn.max_pool2d, ..." for a function's graph.
std::string graph_ops(const Graph& g) {
  std::string ops;
  for (const auto& n : g.nodes) ops += (ops.empty() ? "" : ", ") + (n.op.empty() ? "@" + n.callee : n.op);
  return ops;
}

void print_module(const Executable& exe) {
  std::cout << "module:\n";
  if (!exe.offload_summary.empty()) std::cout << "  offload: " << exe.offload_summary << "\n";
  for (const auto& part : exe.backends) {
    std::cout << "  backend " << part.backend << (part.version.empty() ? "" : " " + part.version);
    for (const auto& [k, v] : part.options) std::cout << " " << k << "=" << v;
    std::cout << "\n";
    for (const auto& f : part.functions) {
      Graph g =
          graph_from_json(f.graph.empty() ? f.artifact : f.graph, part.backend + " function " + f.symbol);
      std::cout << "    @" << f.symbol << ": " << g.nodes.size() << " op" << (g.nodes.size() == 1 ? "" : "s")
                << " (" << graph_ops(g) << "), artifact " << f.artifact.size() << " bytes\n";
    }
    for (const auto& c : part.constants)
      std::cout << "    constant " << c << ": " << exe.constants.at(c).nbytes() << " bytes\n";
  }
  std::cout << "  host program (" << exe.host.nodes.size() << " nodes):\n";
  for (const auto& n : exe.host.nodes) {
    std::cout << "    " << n.name << " = ";
    if (!n.kernel.empty())
      std::cout << "kernel " << n.kernel;
    else if (!n.callee.empty())
      std::cout << "call @" << n.callee;
    else
      std::cout << n.op << " (reference kernel)";
    std::cout << "\n";
  }
  if (!exe.host_code.empty()) {
    std::cout << "  host code: " << exe.host_code.kernels.size() << " kernels for " << exe.host_code.cpu
              << " (";
    for (size_t i = 0; i < exe.host_code.cpu_features.size(); ++i)
      std::cout << (i ? " " : "") << exe.host_code.cpu_features[i];
    std::cout << ")\n";
  }
  if (exe.memory.arena_bytes > 0) std::cout << "  arena: " << exe.memory.arena_bytes << " bytes\n";
}

int run_inspect(const InspectOpts& o) {
  std::vector<std::string> exports;
  std::vector<codegen::Import> imports;
  codegen::Target target = codegen::parse_target(o.target);
  bool hexagon = target.is_hexagon();
  if (ends_with(o.input, ".onnx")) {
    print_model_names(onnx_model_names(o.input));
    return 0;
  }
  if (is_kmod_file(o.input)) {
    Executable exe = read_kmod(o.input);
    print_model_names(exe.names);
    print_module(exe);
    for (const auto& k : exe.host_code.kernels) exports.push_back(k.symbol);
    for (const auto& s : exe.host_code.imports) imports.push_back(codegen::Import{s, {}});
  } else if (is_kir(o.input)) {
    Module m = parse_module(read_file(o.input), o.input);
    print_model_names(model_names(m));
    std::vector<tir::PrimFunc> funcs;
    tir::TirPassOptions passes = codegen::tir_pass_options(target);
    if (hexagon) passes.parallel_tasks = 1;  // kiln's Hexagon runtime runs a parallel loop as one task
    for (const auto& f : m.prim_functions) funcs.push_back(tir::lower_for_build(f, passes));
    for (const auto& f : funcs) exports.push_back(f->name);
    imports = hexagon ? hexagon_link_imports(funcs, target) : codegen::collect_imports(funcs);
  } else {
    codegen::ObjectSymbols syms = codegen::read_object_symbols(o.input);
    hexagon = syms.hexagon;
    exports = syms.exports;
    for (const auto& s : syms.imports) imports.push_back(codegen::Import{s, {}});
  }
  std::cout << "exports:\n";
  for (const auto& e : exports) std::cout << "  " << e << "\n";
  std::cout << "imports:\n";
  std::vector<std::string> unresolved, missing_helpers;
  auto resolved = hexagon ? codegen::resolve_hexagon_imports(imports, o.link_libs)
                          : codegen::resolve_imports(imports, o.link_libs);
  for (const auto& r : resolved) {
    std::string where = codegen::import_source_name(r.source);
    if (!r.library.empty()) where += " " + r.library;
    bool libc =
        !hexagon && r.source == codegen::ImportSource::Unresolved && is_c_library_symbol(r.import.symbol);
    if (libc) where = "C library";
    std::cout << "  " << r.import.symbol << "  " << where;
    std::string callers;
    for (const auto& c : r.import.callers) callers += (callers.empty() ? "@" : ", @") + c;
    std::string helper = hexagon ? codegen::hexagon_llvm_helper_purpose(r.import.symbol) : "";
    if (!helper.empty()) {
      std::cout << "  (LLVM calls it for " << helper << (callers.empty() ? "" : " in " + callers) << ")";
    } else if (!callers.empty()) {
      std::cout << "  (called by " << callers << ")";
    }
    std::cout << "\n";
    if (r.source != codegen::ImportSource::Unresolved || libc) continue;
    unresolved.push_back(r.import.symbol);
    if (!helper.empty()) missing_helpers.push_back(r.import.symbol + " (" + helper + ")");
  }
  std::cout.flush();
  if (!unresolved.empty()) {
    std::string names;
    for (const auto& u : unresolved) names += (names.empty() ? "'" : ", '") + u + "'";
    std::string helpers;
    for (const auto& h : missing_helpers) helpers += (helpers.empty() ? "" : ", ") + h;
    if (!helpers.empty())
      throw Error(
          o.input + ": " + std::to_string(unresolved.size()) + " import(s) UNRESOLVED: " + names +
          "; LLVM's Hexagon code generator calls " + helpers +
          ", which kiln's Hexagon runtime (src/runtime/hexagon/builtins.c) does not define, so the "
          "link would fail: avoid those operations in the kernel (float32 instead of float64) or name "
          "an object that defines them with --link-lib");
    throw Error(o.input + ": " + std::to_string(unresolved.size()) + " import(s) UNRESOLVED: " + names +
                "; " + (hexagon ? "kiln's Hexagon runtime exports" : "the kiln runtime exports") +
                " only kiln/runtime/backend_api.h" + (hexagon ? " and the helpers of docs/hexagon.md" : "") +
                ", name a library that defines them with --link-lib (see docs/linking.md)");
  }
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOpts>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "list a module's exports and imports and where each import resolves");
  cmd->add_option("file", opts->input,
                  "an .onnx model, a .kir module, a compiled .kmod, an object file or a shared library")
      ->required();
  cmd->add_option("--target", opts->target, "for .kir files: llvm (the host) or hexagon-v66|v68|v69|v73");
  cmd->add_option("--link-lib", opts->link_libs,
                  "a library that may provide imports: a shared library (host) or an object file (Hexagon)");
  cmd->callback([opts] {
    int rc = run_inspect(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace kiln::cli
