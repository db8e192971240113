// Compiled host code in an artifact: a shared object of host kernels and
// what the loader checks before any of it runs.
//
// The compiler links the kernels of a model into one position-independent
// shared object. It calls the runtime through import slots, not through
// undefined symbols: for each runtime-ABI function a kernel calls, the object
// exports a pointer `kiln_import_<symbol>`, which the loader fills from the
// runtime's own table (runtime_abi.h). So the object loads into any program
// linked with kiln_runtime, however that program was linked, and an import
// the runtime does not export is an error naming it at load time.
//
// The manifest records the CPU features the code was compiled for; loading
// on a CPU without one of them is an error naming the features.
//
// Kernel calling convention: `<symbol>__packed(void** args)` with the data
// pointers of the inputs, then of the outputs; returns 0, or a failure code
// after setting the runtime's last error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace kiln {

struct HostKernel {
  std::string symbol;
  Graph ops;  // the graph ops the kernel computes (for --verify and the profile)
};

struct HostCode {
  std::string target = "llvm";
  std::string cpu;                        // the CPU LLVM compiled for
  std::vector<std::string> cpu_features;  // features the code needs (x86 names: avx2, fma, ...)
  std::vector<std::string> imports;       // runtime ABI symbols the kernels call
  std::vector<HostKernel> kernels;
  std::string shared_object;  // ELF bytes

  bool empty() const { return kernels.empty(); }
};

// The features of the running CPU among the ones kiln records (names as
// LLVM spells them); features_missing() lists those `needed` lacks here.
std::vector<std::string> cpu_features_missing(const std::vector<std::string>& needed);
// The x86 features kiln records in a manifest (the ones that change code).
const std::vector<std::string>& recorded_cpu_features();

class LoadedHostCode {
 public:
  using KernelFn = int32_t (*)(void**);
  // Loads the shared object and fills its import slots. Throws kiln::Error
  // naming the missing CPU features, an import the runtime does not export,
  // a kernel the object lacks, or the dynamic loader's message.
  static std::unique_ptr<LoadedHostCode> load(const HostCode& code, const std::string& what);
  ~LoadedHostCode();
  KernelFn find(const std::string& symbol) const;  // nullptr when absent

 private:
  LoadedHostCode() = default;
  void* handle_ = nullptr;
  // The in-memory file the object was loaded from, open while it is loaded:
  // the dynamic loader takes a second load of the same path
  // (/proc/self/fd/N) for the object already loaded, so N must not be
  // reused for another module's code until this one is unloaded.
  int fd_ = -1;
  std::vector<std::pair<std::string, KernelFn>> kernels_;
};

}  // namespace kiln
