// What the benchmarks against oneDNN share: its thread count, aligned
// buffers, and the best time of repeated runs.
#pragma once

#include <dlfcn.h>
#include <malloc.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "kiln/runtime/error.h"
#include "lower/lower.h"

namespace kiln::bench {

// oneDNN's thread count, through the OpenMP runtime it was built with
// (found at run time, so the benches do not link OpenMP themselves).
inline void set_dnnl_threads(int threads) {
  using SetThreads = void (*)(int);
  auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (!set)
    throw Error("oneDNN's OpenMP runtime (omp_set_num_threads) is not loaded; cannot set its threads");
  set(threads);
}

// float32 elements, 64-byte aligned as the runtime allocates tensors (an
// unaligned vector access crosses two cache lines), zero-filled.
class Floats {
 public:
  explicit Floats(size_t n)
      : p_(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))), n_(n) {
    if (!p_) throw Error("out of memory for " + std::to_string(n) + " floats");
    std::fill(p_.get(), p_.get() + n, 0.0f);
  }
  float* data() { return p_.get(); }
  const float* data() const { return p_.get(); }
  size_t size() const { return n_; }
  float& operator[](size_t i) { return p_[i]; }
  float operator[](size_t i) const { return p_[i]; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> p_;
  size_t n_;
};

// oneDNN allocates its packing buffers with malloc on every call. glibc
// serves a large one from memory it has just unmapped or trimmed about half
// of the time, and writing that memory faults in every page again (about
// 5 us a page on a virtual machine: a 1024^3 sgemm then takes 16 ms instead
// of 11). kiln keeps its own large blocks (src/runtime/block_cache.h), so
// the benches keep glibc's too, for oneDNN: nothing is unmapped or trimmed.
// (32 MiB is the largest mmap threshold glibc accepts.)
inline void keep_heap_memory() {
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 1 << 30) != 1)
    throw Error("mallopt refused to keep the heap's memory");
}

// The target of a bench's code. `--cpu NAME`: kiln's code for that CPU
// (as `--target "llvm -mcpu=NAME"`), and oneDNN limited to AVX2 when that
// CPU has no AVX-512; on an AVX-512 machine this measures the code an
// AVX2-only machine gets against the oneDNN such a machine runs (same
// cores, so not a substitute for running there). Without it, this
// machine's CPU. The option is taken out of the command line, so that
// Google Benchmark's own flags can follow.
inline codegen::Target take_bench_target(int& argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cpu") != 0) continue;
    if (i + 1 >= argc) throw Error("--cpu needs a CPU name (as for kiln's --target \"llvm -mcpu=NAME\")");
    codegen::Target t = codegen::parse_target(std::string("llvm -mcpu=") + argv[i + 1]);
    const std::vector<std::string> features = codegen::target_cpu_features(t);
    if (std::find(features.begin(), features.end(), "avx512f") == features.end() &&
        dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2) != dnnl_success)
      throw Error("oneDNN refused to limit itself to AVX2 (dnnl_set_max_cpu_isa)");
    for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
    argc -= 2;
    return t;
  }
  return codegen::host_target();
}

// take_bench_target for a bench that takes no other arguments: anything
// else on the command line is an error.
inline codegen::Target bench_target(int argc, char** argv, const char* program) {
  codegen::Target t = take_bench_target(argc, argv);
  if (argc != 1)
    throw Error(std::string("usage: ") + program +
                " [--cpu NAME] (NAME as for kiln's --target \"llvm -mcpu=NAME\")");
  return t;
}

// `op` on `inputs` (the kernel's parameters, in order) as a kernel of its
// own, lowered and scheduled for `target`, as a compiled model's would be.
inline tir::PrimFunc lowered_op(const std::string& op, const Attrs& attrs,
                                const std::vector<TensorDesc>& inputs, const TensorDesc& output,
                                const std::string& name, const codegen::Target& target) {
  std::string why;
  auto f = lower::lower_kernel(
      lower::single_op_kernel(name, op, inputs, {output}, normalize_attrs(*find_op(op), attrs)), &why,
      codegen::schedule_target(target));
  if (!f) throw Error(op + " is not lowered for kernel " + name + ": " + why);
  return *f;
}

inline std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// What a bench prints under "CPU:" when its code is for another CPU.
inline void print_named_cpu(const codegen::Target& target) {
  if (target.cpu.empty()) return;
  std::printf("kiln's code is for %s (%s); oneDNN's ISA: %s\n", codegen::target_cpu_name(target).c_str(),
              joined(codegen::target_cpu_features(target)).c_str(),
              dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx2 ? "limited to AVX2" : "its own choice");
}

// The fastest of `reps` runs of f, in seconds.
template <typename F>
double best_seconds(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace kiln::bench
