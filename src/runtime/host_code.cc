// Loading compiled host code: a shared object from memory (memfd), its import
// slots filled from the runtime ABI table.
#include "runtime/host_code.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <utility>

#include "runtime/runtime_abi.h"

namespace kiln {

// Every instruction-set extension LLVM may use in host code that some
// x86-64 CPUs lack (code for znver3 may use AMD's sse4a; for
// sapphirerapids, avx512bf16): a module needing one the machine lacks is
// refused at load time instead of dying of an illegal instruction. One list
// for the names recorded and the checks (__builtin_cpu_supports takes only
// literal names).
// clang-format off
#define KILN_CPU_FEATURES(X) \
  X("sse4.2") \
  X("avx") \
  X("avx2") \
  X("fma") \
  X("f16c") \
  X("popcnt") \
  X("bmi") \
  X("bmi2") \
  X("sse4a") \
  X("xop") \
  X("fma4") \
  X("avx512f") \
  X("avx512bw") \
  X("avx512dq") \
  X("avx512vl") \
  X("avx512cd") \
  X("avx512vbmi") \
  X("avx512ifma") \
  X("avx512vnni") \
  X("avxvnni") \
  X("avx512bf16") \
  X("avx512vbmi2") \
  X("avx512bitalg") \
  X("avx512vpopcntdq") \
  X("gfni") \
  X("vpclmulqdq")
// clang-format on

const std::vector<std::string>& recorded_cpu_features() {
#define KILN_FEATURE_NAME(f) f,
  static const std::vector<std::string> names = {KILN_CPU_FEATURES(KILN_FEATURE_NAME)};
#undef KILN_FEATURE_NAME
  return names;
}

namespace {

bool cpu_has(const std::string& f) {
#if defined(__x86_64__)
  static const std::vector<std::pair<std::string, bool>> present = [] {
    __builtin_cpu_init();
#define KILN_FEATURE_CHECK(f) {f, bool(__builtin_cpu_supports(f))},
    return std::vector<std::pair<std::string, bool>>{KILN_CPU_FEATURES(KILN_FEATURE_CHECK)};
#undef KILN_FEATURE_CHECK
  }();
  for (const auto& [name, has] : present)
    if (name == f) return has;
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
  loaded->fd_ = fd.fd;
  fd.fd = -1;
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
  if (fd_ >= 0) close(fd_);
}

LoadedHostCode::KernelFn LoadedHostCode::find(const std::string& symbol) const {
  for (const auto& [name, fn] : kernels_)
    if (name == symbol) return fn;
  return nullptr;
}

}  // namespace kiln
