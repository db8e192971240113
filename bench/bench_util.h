// What the benchmarks against oneDNN share: its thread count, and the best
// time of repeated runs.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <chrono>

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
