// What the benchmarks against oneDNN share: its thread count, aligned
// buffers, and the best time of repeated runs.
#pragma once

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "kiln/runtime/error.h"

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
