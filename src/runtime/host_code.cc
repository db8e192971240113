// Loading compiled host code: a shared object from memory (memfd), its import
// slots filled from the runtime ABI table.
#include "runtime/host_code.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/runtime_abi.h"

namespace kiln {

const std::vector<std::string>& recorded_cpu_features() {
  static const std::vector<std::string> names = {"sse4.2",  "avx",      "avx2",     "fma",     "f16c",
                                                 "avx512f", "avx512bw", "avx512dq", "avx512vl"};
  return names;
}

namespace {

bool cpu_has(const std::string& f) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (f == "sse4.2") return __builtin_cpu_supports("sse4.2");
  if (f == "avx") return __builtin_cpu_supports("avx");
  if (f == "avx2") return __builtin_cpu_supports("avx2");
  if (f == "fma") return __builtin_cpu_supports("fma");
  if (f == "f16c") return __builtin_cpu_supports("f16c");
  if (f == "avx512f") return __builtin_cpu_supports("avx512f");
  if (f == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (f == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (f == "avx512vl") return __builtin_cpu_supports("avx512vl");
#endif
  return false;
}

// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

std::vector<std::string> cpu_features_missing(const std::vector<std::string>& needed) {
  std::vector<std::string> missing;
  for (const auto& f : needed)
    if (!cpu_has(f)) missing.push_back(f);
  return missing;
}

std::unique_ptr<LoadedHostCode> LoadedHostCode::load(const HostCode& code, const std::string& what) {
  if (code.target != "llvm")
    throw Error(what + ": host code for target '" + code.target + "' cannot run on this host");
  std::vector<std::string> missing = cpu_features_missing(code.cpu_features);
  if (!missing.empty()) {
    std::string list;
    for (const auto& f : missing) list += (list.empty() ? "" : ", ") + f;
    throw Error(what + ": compiled for CPU " + code.cpu + ", which has " + list +
                "; this CPU does not. Recompile the model on this machine (kiln compile), or for an older "
                "CPU");
  }
  for (const auto& sym : code.imports)
    if (!find_runtime_symbol(sym))
      throw Error(what + ": host code imports '" + sym +
                  "', which this runtime does not export; rebuild the module with this kiln");
  Fd fd{memfd_create("kiln-host-code", MFD_CLOEXEC)};
  if (fd.fd < 0) throw Error(what + ": cannot create an in-memory file for the host code");
  size_t done = 0;
  while (done < code.shared_object.size()) {
    ssize_t n = write(fd.fd, code.shared_object.data() + done, code.shared_object.size() - done);
    if (n <= 0) throw Error(what + ": cannot write the host code to memory");
    done += size_t(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd.fd);
  std::unique_ptr<LoadedHostCode> loaded(new LoadedHostCode());
  loaded->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!loaded->handle_) {
    const char* err = dlerror();
    throw Error(what + ": cannot load the host code: " + std::string(err ? err : "unknown error"));
  }
  for (const auto& sym : code.imports) {
    auto* slot = static_cast<void**>(dlsym(loaded->handle_, ("kiln_import_" + sym).c_str()));
    if (!slot)
      throw Error(what + ": host code has no import slot for '" + sym + "'; the module is corrupted");
    *slot = find_runtime_symbol(sym)->address;
  }
  for (const auto& k : code.kernels) {
    void* f = dlsym(loaded->handle_, (k.symbol + "__packed").c_str());
    if (!f) throw Error(what + ": host code lacks kernel '" + k.symbol + "'; the module is corrupted");
    loaded->kernels_.push_back({k.symbol, reinterpret_cast<KernelFn>(f)});
  }
  return loaded;
}

LoadedHostCode::~LoadedHostCode() {
  if (handle_) dlclose(handle_);
}

LoadedHostCode::KernelFn LoadedHostCode::find(const std::string& symbol) const {
  for (const auto& [name, fn] : kernels_)
    if (name == symbol) return fn;
  return nullptr;
}

}  // namespace kiln
