// Codegen for prim functions (LLVM 19) and checked linking against the
// runtime ABI. Targets (codegen/target.h): the host CPU (x86-64 with the
// machine's vector features) and Hexagon v66-v73 with HVX (codegen/hexagon.h
// links and runs those).
//
// LLVM headers stay inside src/codegen/*.cc; this header is plain C++.
//
// Every compiled module records its imports: the extern C symbols its
// functions call, with the callers of each. An import resolves to the runtime
// ABI (kiln/runtime/backend_api.h), to a library the user names, or to
// nothing, which is an error naming the symbol and the function that calls it:
// at build time (check_imports, emit_to_file) and again when a module is
// loaded (JitModule::create), before anything runs.
//
// Calling convention: a prim function @f becomes the C symbol `f` with one
// parameter per prim parameter (a buffer's data pointer, or the scalar) and
// an int32 result (0 or a failure code after setting the runtime's last
// error). Each also gets `f__packed(void** args)`, where args[i] is a buffer's
// data pointer or the address of a scalar, for callers that only know the
// signature at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "tir/tir.h"

namespace kiln::codegen {

struct Import {
  std::string symbol;
  std::vector<std::string> callers;  // prim function names, in order
};

// The extern symbols `funcs` call, sorted by symbol.
std::vector<Import> collect_imports(const std::vector<tir::PrimFunc>& funcs);

// TargetRuntime: what a target's own runtime adds beyond the ABI (kiln's
// Hexagon runtime: memcpy, the division helpers, sqrtf, expf).
enum class ImportSource { RuntimeAbi, TargetRuntime, Library, Unresolved };
// "runtime ABI", "Hexagon runtime", "library", "UNRESOLVED"
const char* import_source_name(ImportSource s);

struct ResolvedImport {
  Import import;
  ImportSource source = ImportSource::Unresolved;
  std::string library;  // for ImportSource::Library
  void* address = nullptr;
};

// The runtime ABI first, then each library in order (loaded with dlopen; a
// library that cannot be loaded is an error naming it and why).
std::vector<ResolvedImport> resolve_imports(const std::vector<Import>& imports,
                                            const std::vector<std::string>& link_libs);
// Throws kiln::Error naming every unresolved symbol and its callers.
void check_imports(const std::vector<Import>& imports, const std::vector<std::string>& link_libs,
                   const std::string& when = "build");
// The error both checks (host and Hexagon) give: every symbol, its callers,
// and what to do. `runtime` names the runtime that was searched.
[[noreturn]] void throw_unresolved_imports(const std::vector<Import>& unresolved,
                                           const std::vector<std::string>& link_libs, const std::string& when,
                                           const std::string& runtime);

// The defined functions and the undefined symbols of an object file or shared
// library (for `kiln inspect`); throws kiln::Error naming the file when it is
// neither.
struct ObjectSymbols {
  std::vector<std::string> exports;  // sorted
  std::vector<std::string> imports;  // sorted
  bool hexagon = false;              // an ELF file for Hexagon (else the host's)
};
ObjectSymbols read_object_symbols(const std::string& path);

// exe: a static Hexagon executable (kernels, generated harness, Hexagon runtime).
enum class EmitKind { LLVMIR, Assembly, Object, SharedLibrary, Executable };
// "ll", "asm", "obj", "so", "exe"; parse_emit_kind throws on an unknown name.
EmitKind parse_emit_kind(const std::string& name);

struct CodegenOptions {
  Target target;  // the host unless set
  // 2: on the host, kiln's short LLVM pipeline for code whose vectors are
  // already explicit (llvm_pipeline.cc, kHostPipeline); on Hexagon, LLVM's
  // O2. 3: LLVM's O3 (its further loop transformations add compile time and
  // no speed: PP-OCR det compiled in 5.4 s instead of 3.1 on one core, and
  // matmul 1024^3 ran 0.74x oneDNN instead of 0.83x on an AMD EPYC).
  int opt_level = 2;
  // --link-lib: libraries that may provide imports (host: shared libraries;
  // Hexagon: object files linked into the executable)
  std::vector<std::string> link_libs;
  bool check_imports = true;  // false only to test the load-time check
  // LLVM's loop vectorizer. The hexagon backend turns it off for model
  // regions: on scalar float loops and the strided int8 loops of a conv it
  // makes gathers, and took 11 s of a 0.8 s compile of a small int8 CNN.
  bool loop_vectorize = true;
  // When set, LLVM's pass timing reports (the IR pipeline, the analyses it
  // ran, machine code) are appended here, and the host code compiles in one
  // part (LLVM's timers are not shared between threads). LLVM keys the
  // machine-code timers by the pass object's address: after another timed
  // compile in the same process, a line can carry that run's pass name.
  std::string* llvm_pass_times = nullptr;
};

// The link check before codegen, by target: every import of `funcs`
// resolved (check_imports, or Hexagon's), when options.check_imports.
void check_target_imports(const std::vector<tir::PrimFunc>& funcs, const CodegenOptions& options);

// The functions must be lowered (tir::lower_for_build): flat buffers, no
// scratchpad allocations left.
std::string emit_text(const std::vector<tir::PrimFunc>& funcs, EmitKind kind,
                      const CodegenOptions& options = {});
void emit_to_file(const std::vector<tir::PrimFunc>& funcs, EmitKind kind, const std::string& path,
                  const CodegenOptions& options = {});

// A model's host kernels as one position-independent shared object for the
// host CPU, calling the runtime through import slots (runtime/host_code.h):
// the ELF bytes, the CPU and recorded features it was compiled for, and the
// runtime-ABI symbols it imports. Imports are checked first (check_imports).
struct HostObject {
  std::string bytes;
  std::string cpu;
  std::vector<std::string> cpu_features;
  std::vector<std::string> imports;
};
HostObject emit_host_shared_object(const std::vector<tir::PrimFunc>& funcs,
                                   const CodegenOptions& options = {});

// "znver3: avx2 fma (no avx512f)", the host CPU as LLVM detects it, for
// benchmarks and summaries.
std::string host_cpu_summary();

// An in-process JIT module (ORC) for tests and `kiln run`; host target only.
class JitModule {
 public:
  static std::unique_ptr<JitModule> create(const std::vector<tir::PrimFunc>& funcs,
                                           const CodegenOptions& options = {});
  ~JitModule();

  // Calls @name through its packed entry. Returns the function's code.
  int32_t call(const std::string& name, const std::vector<void*>& args);
  // call(), and a non-zero code becomes kiln::Error with the runtime's last error.
  void run(const std::string& name, const std::vector<void*>& args);
  const std::vector<Import>& imports() const;

  struct Impl;

 private:
  explicit JitModule(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::codegen
