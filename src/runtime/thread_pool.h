// The host runtime's thread pool: it runs the tasks of parallel loops
// (KilnBackendParallelFor in kiln/runtime/backend_api.h).
//
// A launch over [0, n) makes k = min(threads, n) contiguous chunks of nearly
// equal size; the launching thread runs chunk 0, and each other chunk goes
// to the first thread that claims it, the launching thread included once
// its own is done. The chunks never depend on timing; which thread runs
// them does: a worker the OS has not scheduled yet (another process on its
// core) loses its chunk instead of holding up the launch. The pool has
// KILN_NUM_THREADS threads, the caller included, else available_cpus();
// with one thread a launch runs inline.
//
// What a task inherits from the launching thread, since both are
// thread-local: its current VTCM pool (bound in the worker for the task, so
// per-task scratchpad buffers come from the caller's pool, which is locked),
// and, when it fails, its last error, which becomes the caller's. A launch
// from inside a task runs inline, serially, on that thread: a nested loop
// never waits for workers that are busy running its parent. Launches from
// different threads take turns. Exceptions never leave a task or a launch.
#pragma once

#include <cstdint>

#include "kiln/runtime/backend_api.h"

namespace kiln {

struct ParallelLaunchInfo {
  int64_t n = 0;        // iterations
  int chunks = 0;       // tasks the iterations were split into
  int threads = 0;      // distinct threads that ran those tasks
  bool nested = false;  // launched from inside a task, so it ran inline
};

// The calling thread's most recent launch (for tests and benchmarks).
ParallelLaunchInfo last_parallel_launch();

// Threads a launch uses, the caller included. Throws kiln::Error when
// KILN_NUM_THREADS is set but is not a number from 1 to kMaxParallelThreads.
int parallel_num_threads();

inline constexpr int kMaxParallelThreads = 1024;

// The CPUs this process may run on: its affinity mask's (taskset, a
// container's cpuset) where the system reports one, else the hardware's
// threads; at least 1. More threads than that would share cores and spin
// against each other.
int available_cpus();

// Restarts the pool with `threads` threads (1..kMaxParallelThreads), or with
// the default for 0. Waits for a running launch to finish; throws kiln::Error
// for a count out of range or when called from inside a task.
void set_parallel_num_threads(int threads);

// KilnBackendParallelFor. Never throws: a failure is a non-zero code and the
// calling thread's last error.
int32_t parallel_for(int64_t n, KilnBackendParallelTask task, void* env);

}  // namespace kiln
