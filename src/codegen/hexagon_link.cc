#include <filesystem>
#include <set>

#include "codegen/hexagon.h"
#include "runtime/runtime_abi.h"

namespace kiln::codegen {

namespace {

const char* kInstallHint = "run scripts/setup.sh, which installs lld-19 and qemu-user-static";

std::set<std::string> exports_of(const std::vector<std::string>& objects) {
  std::set<std::string> out;
  for (const std::string& o : objects) {
    ObjectSymbols s = read_object_symbols(o);
    out.insert(s.exports.begin(), s.exports.end());
  }
  return out;
}

}  // namespace

std::string hexagon_runtime_object() {
  const char* env = std::getenv("KILN_HEXAGON_RUNTIME");
  std::string path = env && *env ? env : KILN_HEXAGON_RUNTIME_PATH;
  if (!std::filesystem::exists(path))
    throw Error("kiln's Hexagon runtime is not at " + path +
                "; build it with `cmake --build build --target kiln_hexagon_runtime` (needs clang-19 and "
                "ld.lld-19) or point KILN_HEXAGON_RUNTIME at kiln_hexagon_rt.o");
  return path;
}

std::vector<ResolvedImport> resolve_hexagon_imports(const std::vector<Import>& imports,
                                                    const std::vector<std::string>& link_objects) {
  ObjectSymbols runtime = read_object_symbols(hexagon_runtime_object());
  std::set<std::string> from_runtime(runtime.exports.begin(), runtime.exports.end());
  std::vector<std::pair<std::string, std::set<std::string>>> libs;
  for (const std::string& o : link_objects) libs.push_back({o, exports_of({o})});
  std::vector<ResolvedImport> out;
  for (const Import& imp : imports) {
    ResolvedImport r;
    r.import = imp;
    if (find_runtime_symbol(imp.symbol)) {
      r.source = ImportSource::RuntimeAbi;
    } else if (from_runtime.count(imp.symbol)) {
      r.source = ImportSource::TargetRuntime;
    } else {
      for (const auto& [name, symbols] : libs)
        if (symbols.count(imp.symbol)) {
          r.source = ImportSource::Library;
          r.library = name;
          break;
        }
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

std::vector<Import> unresolved_imports(const std::vector<Import>& imports,
                                       const std::vector<std::string>& link_objects) {
  std::vector<Import> unresolved;
  for (const ResolvedImport& r : resolve_hexagon_imports(imports, link_objects))
    if (r.source == ImportSource::Unresolved) unresolved.push_back(r.import);
  return unresolved;
}

}  // namespace

void check_hexagon_imports(const std::vector<Import>& imports, const std::vector<std::string>& link_objects) {
  std::vector<Import> unresolved = unresolved_imports(imports, link_objects);
  if (!unresolved.empty())
    throw_unresolved_imports(unresolved, link_objects, "build", "kiln's Hexagon runtime");
}

void link_hexagon_executable(const std::string& kernel_object, const std::string& output,
                             const std::vector<std::string>& link_objects) {
  // The kernels' undefined symbols (the harness defines the table the
  // runtime reads) must resolve like their extern calls did.
  std::vector<Import> needed;
  for (const std::string& s : read_object_symbols(kernel_object).imports) needed.push_back(Import{s, {}});
  std::vector<Import> unresolved = unresolved_imports(needed, link_objects);
  std::string runtime = hexagon_runtime_object();
  if (!unresolved.empty())
    throw_unresolved_imports(unresolved, link_objects, "link", "kiln's Hexagon runtime (" + runtime + ")");

  std::vector<std::string> inputs = link_objects;
  inputs.push_back(runtime);
  std::vector<std::string> argv = {"ld.lld-19", "-static", "-e", "_start", "-o", output, kernel_object};
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  ProcessResult r = run_process(argv, 120, kInstallHint);
  if (r.exit_code != 0) throw Error("linking " + output + " with ld.lld-19 failed:\n" + r.err + r.out);
}

ProcessResult run_hexagon_executable(const std::string& exe, const std::vector<std::string>& args,
                                     int timeout_seconds) {
  std::vector<std::string> argv = {"qemu-hexagon-static", "-cpu", "v67", exe};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, timeout_seconds, kInstallHint);
  if (r.timed_out)
    throw Error(exe + " did not finish within " + std::to_string(timeout_seconds) +
                " s under qemu-hexagon-static and was stopped");
  return r;
}

}  // namespace kiln::codegen
