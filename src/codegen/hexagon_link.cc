#include <algorithm>
#include <filesystem>
#include <set>

#include "codegen/hexagon.h"
#include "codegen/lld.h"
#include "runtime/runtime_abi.h"

namespace kiln::codegen {

namespace {

const char* kInstallHint = "run scripts/setup.sh, which installs qemu-user-static";

// A --link-lib input of a Hexagon build must be a Hexagon object file:
// ld.lld links the executable statically, and would otherwise be the first
// to notice a file for another machine.
void check_link_object(const std::string& path) {
  const std::string expected = "a Hexagon build links Hexagon object files (ELF e_machine " +
                               std::to_string(kElfMachineHexagon) + ", EM_HEXAGON, type ET_REL)";
  const std::string how = "compile it with clang-19 --target=hexagon-unknown-none-elf -mcpu=hexagonv68 -c";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("--link-lib " + path + ": no such file; " + expected);
  std::optional<ElfHeader> h = read_elf_header(path);
  if (!h) throw Error("--link-lib " + path + " is not an ELF file; " + expected + ": " + how);
  if (h->machine != kElfMachineHexagon)
    throw Error("--link-lib " + path + " is " + describe_elf(*h) + "; " + expected + ": " + how + " (the " +
                elf_machine_name(h->machine) + " file is for a host build)");
  if (h->type != kElfRelocatable)
    throw Error("--link-lib " + path + " is " + describe_elf(*h) + "; " + expected +
                ": the executable is linked statically, so give the object files it was built from");
}

std::set<std::string> exports_of(const std::string& object) {
  check_link_object(object);
  ObjectSymbols s = read_object_symbols(object);
  return std::set<std::string>(s.exports.begin(), s.exports.end());
}

struct LlvmHelper {
  const char* symbol;
  const char* purpose;
};

// The helpers LLVM 19's Hexagon code generator calls (HexagonISelLowering),
// apart from the memory functions.
constexpr LlvmHelper kLlvmHelpers[] = {
    {"__hexagon_adddf3", "float64 addition"},
    {"__hexagon_fast_adddf3", "float64 addition"},
    {"__hexagon_subdf3", "float64 subtraction"},
    {"__hexagon_fast_subdf3", "float64 subtraction"},
    {"__hexagon_muldf3", "float64 multiplication"},
    {"__hexagon_fast_muldf3", "float64 multiplication"},
    {"__hexagon_divdf3", "float64 division"},
    {"__hexagon_fast_divdf3", "float64 division"},
    {"__hexagon_fast2_sqrtdf2", "float64 square root"},
    {"__hexagon_divsf3", "float32 division"},
    {"__hexagon_fast_divsf3", "float32 division"},
    {"__hexagon_sqrtf", "float32 square root"},
    {"__hexagon_fast2_sqrtf", "float32 square root"},
    {"__hexagon_divsi3", "int32 division"},
    {"__hexagon_udivsi3", "uint32 division"},
    {"__hexagon_modsi3", "int32 remainder"},
    {"__hexagon_umodsi3", "uint32 remainder"},
    {"__hexagon_divdi3", "int64 division"},
    {"__hexagon_udivdi3", "uint64 division"},
    {"__hexagon_moddi3", "int64 remainder"},
    {"__hexagon_umoddi3", "uint64 remainder"},
    {"__hexagon_fixdfti", "float64 to int128 conversion"},
    {"__hexagon_fixsfti", "float32 to int128 conversion"},
    {"__hexagon_fixunsdfti", "float64 to uint128 conversion"},
    {"__hexagon_fixunssfti", "float32 to uint128 conversion"},
    {"__hexagon_floattidf", "int128 to float64 conversion"},
    {"__hexagon_floattisf", "int128 to float32 conversion"},
    {"__hexagon_memcpy_likely_aligned_min32bytes_mult8bytes", "aligned block copies"},
};

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
  for (const std::string& o : link_objects) libs.push_back({o, exports_of(o)});
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

std::string callers_of(const Import& imp) {
  std::string callers;
  for (const std::string& c : imp.callers) callers += (callers.empty() ? "@" : ", @") + c;
  return callers;
}

// The link check's error. Symbols LLVM added are named with what they are
// for; the rest as the host's check names them.
[[noreturn]] void throw_unresolved(const std::vector<Import>& unresolved,
                                   const std::vector<std::string>& link_objects, const std::string& when,
                                   const std::string& runtime) {
  std::vector<Import> helpers;
  for (const Import& imp : unresolved)
    if (!hexagon_llvm_helper_purpose(imp.symbol).empty()) helpers.push_back(imp);
  if (helpers.empty()) throw_unresolved_imports(unresolved, link_objects, when, runtime);
  std::string msg = "link check failed at " + when + " time:";
  for (const Import& imp : unresolved) {
    std::string callers = callers_of(imp);
    std::string purpose = hexagon_llvm_helper_purpose(imp.symbol);
    msg += "\n  unresolved symbol '" + imp.symbol + "' ";
    if (purpose.empty()) {
      msg += callers.empty() ? "needed by the generated code" : "called by " + callers;
      continue;
    }
    msg += "needed by the generated code" + (callers.empty() ? "" : " of " + callers) +
           ": LLVM's Hexagon code generator calls it for " + purpose +
           ", and kiln's Hexagon runtime (src/runtime/hexagon/builtins.c) does not define it";
  }
  std::string libs;
  for (const std::string& l : link_objects) libs += (libs.empty() ? "" : ", ") + l;
  msg += "\n" + runtime +
         " has no helper for these operations; change the kernel to avoid them (float32 "
         "instead of float64) or name an object that defines them with --link-lib" +
         (libs.empty() ? "" : " (" + libs + " do not)") + " (see docs/hexagon.md)";
  throw Error(msg);
}

}  // namespace

std::string hexagon_llvm_helper_purpose(const std::string& symbol) {
  for (const LlvmHelper& h : kLlvmHelpers)
    if (symbol == h.symbol) return h.purpose;
  return "";
}

std::vector<Import> hexagon_object_imports(const std::string& kernel_object,
                                           const std::vector<Import>& extern_calls) {
  std::map<std::string, std::vector<std::string>> users = undefined_symbol_users(kernel_object);
  std::vector<Import> out;
  for (const std::string& s : read_object_symbols(kernel_object).imports) {
    Import imp{s, {}};
    auto call = std::find_if(extern_calls.begin(), extern_calls.end(),
                             [&](const Import& c) { return c.symbol == s; });
    if (call != extern_calls.end()) {
      imp.callers = call->callers;
    } else {
      // A packed entry that inlined its function stands for the function.
      for (std::string f : users[s]) {
        const std::string packed = "__packed";
        if (f.size() > packed.size() && f.compare(f.size() - packed.size(), packed.size(), packed) == 0)
          f.resize(f.size() - packed.size());
        if (std::find(imp.callers.begin(), imp.callers.end(), f) == imp.callers.end())
          imp.callers.push_back(f);
      }
    }
    out.push_back(std::move(imp));
  }
  return out;
}

void check_hexagon_imports(const std::vector<Import>& imports, const std::vector<std::string>& link_objects) {
  std::vector<Import> unresolved = unresolved_imports(imports, link_objects);
  if (!unresolved.empty()) throw_unresolved(unresolved, link_objects, "build", "kiln's Hexagon runtime");
}

void link_hexagon_executable(const std::string& kernel_object, const std::string& output,
                             const std::vector<std::string>& link_objects) {
  // The kernels' undefined symbols (the harness defines the table the
  // runtime reads) must resolve like their extern calls did.
  std::vector<Import> unresolved = unresolved_imports(hexagon_object_imports(kernel_object), link_objects);
  std::string runtime = hexagon_runtime_object();
  if (!unresolved.empty())
    throw_unresolved(unresolved, link_objects, "link", "kiln's Hexagon runtime (" + runtime + ")");

  std::vector<std::string> inputs = link_objects;
  inputs.push_back(runtime);
  std::vector<std::string> args = {"-static", "-e", "_start", "-o", output, kernel_object};
  args.insert(args.end(), inputs.begin(), inputs.end());
  link_with_lld(args, output);
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
