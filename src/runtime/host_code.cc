// Loading compiled host code: a shared object from memory (memfd), its import
// slots filled from the runtime ABI table.
#include "runtime/host_code.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/runtime_abi.h"

namespace kiln {

const std::vector<std::string>& recorded_cpu_features() {
  // Every instruction-set extension LLVM may use in host code that some
  // x86-64 CPUs lack (code for znver3 may use AMD's sse4a; for
  // sapphirerapids, avx512bf16): a module needing one the machine lacks is
  // refused at load time instead of dying of an illegal instruction.
  static const std::vector<std::string> names = {"sse4.2",
                                                 "avx",
                                                 "avx2",
                                                 "fma",
                                                 "f16c",
                                                 "popcnt",
                                                 "bmi",
                                                 "bmi2",
                                                 "sse4a",
                                                 "xop",
                                                 "fma4",
                                                 "avx512f",
                                                 "avx512bw",
                                                 "avx512dq",
                                                 "avx512vl",
                                                 "avx512cd",
                                                 "avx512vbmi",
                                                 "avx512ifma",
                                                 "avx512vnni",
                                                 "avx512bf16",
                                                 "avx512vbmi2",
                                                 "avx512bitalg",
                                                 "avx512vpopcntdq",
                                                 "gfni",
                                                 "vpclmulqdq"};
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
  if (f == "popcnt") return __builtin_cpu_supports("popcnt");
  if (f == "bmi") return __builtin_cpu_supports("bmi");
  if (f == "bmi2") return __builtin_cpu_supports("bmi2");
  if (f == "sse4a") return __builtin_cpu_supports("sse4a");
  if (f == "xop") return __builtin_cpu_supports("xop");
  if (f == "fma4") return __builtin_cpu_supports("fma4");
  if (f == "avx512cd") return __builtin_cpu_supports("avx512cd");
  if (f == "avx512vbmi") return __builtin_cpu_supports("avx512vbmi");
  if (f == "avx512ifma") return __builtin_cpu_supports("avx512ifma");
  if (f == "avx512vnni") return __builtin_cpu_supports("avx512vnni");
  if (f == "avx512bf16") return __builtin_cpu_supports("avx512bf16");
  if (f == "avx512vbmi2") return __builtin_cpu_supports("avx512vbmi2");
  if (f == "avx512bitalg") return __builtin_cpu_supports("avx512bitalg");
  if (f == "avx512vpopcntdq") return __builtin_cpu_supports("avx512vpopcntdq");
  if (f == "gfni") return __builtin_cpu_supports("gfni");
  if (f == "vpclmulqdq") return __builtin_cpu_supports("vpclmulqdq");
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
