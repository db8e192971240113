#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "kiln/runtime/error.h"
#include "runtime/vtcm_pool.h"

namespace kiln {

namespace {

thread_local ParallelLaunchInfo t_last_launch;

// After a launch, workers (and the launching thread, for the workers'
// chunks) poll for this long before sleeping on a condition variable: a
// model runs its kernels back to back, and waking a sleeping thread costs
// tens of microseconds, more than many kernels take.
constexpr std::chrono::microseconds kSpinBeforeSleep{200};

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `done` until it holds or the spin time is over; true when it held.
template <typename F>
bool spin_until(F&& done) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 255) == 255 && std::chrono::steady_clock::now() - start > kSpinBeforeSleep) return false;
  }
}
// Set while this thread runs a task: a launch from here runs inline.
thread_local bool t_in_task = false;

// The threads KILN_NUM_THREADS asks for, else the CPUs the process may run
// on; throws for a value that is not a thread count.
int default_threads() {
  const char* env = std::getenv("KILN_NUM_THREADS");
  if (env && *env) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 1 || v > kMaxParallelThreads)
      throw Error("KILN_NUM_THREADS=\"" + std::string(env) +
                  "\" is not a thread count (an integer from 1 to " + std::to_string(kMaxParallelThreads) +
                  ")");
    return int(v);
  }
  return std::min(available_cpus(), kMaxParallelThreads);
}

// Chunk c of k over [0, n): sizes differ by at most one, larger chunks first.
std::pair<int64_t, int64_t> chunk_range(int64_t n, int k, int c) {
  int64_t q = n / k, rem = n % k;
  int64_t begin = c * q + std::min<int64_t>(c, rem);
  return {begin, begin + q + (c < rem ? 1 : 0)};
}

struct ChunkResult {
  int32_t code = 0;
  std::string error;  // the task's last error when it failed
  std::thread::id thread;
};

// Runs one chunk as a task on the calling thread with the launcher's VTCM pool.
void run_chunk(KilnBackendParallelTask task, void* env, int64_t begin, int64_t end, VtcmPool& vtcm,
               ChunkResult& out) {
  out.thread = std::this_thread::get_id();
  ScopedVtcmPool bind(vtcm);
  bool was_in_task = t_in_task;
  t_in_task = true;
  // A message left by an earlier launch must not pass for this task's.
  KilnBackendSetLastError("");
  try {
    out.code = task(begin, end, env);
    if (out.code != 0) out.error = KilnBackendGetLastError();
  } catch (const std::exception& e) {
    out.code = -1;
    out.error = std::string("a parallel task threw an exception: ") + e.what();
  } catch (...) {
    out.code = -1;
    out.error = "a parallel task threw an exception";
  }
  t_in_task = was_in_task;
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) {
      try {
        workers_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
        break;  // fewer threads than asked for still run every launch
      }
    }
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      stop_flag_.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }

  // One launch at a time (the caller holds the launch lock). The caller
  // runs chunk 0; the other chunks go to whichever thread claims them first,
  // the caller too once its own is done, so a worker that the OS has not
  // scheduled yet (another process on the core) does not hold up the launch.
  int32_t run(int64_t n, KilnBackendParallelTask task, void* env, ParallelLaunchInfo& info) {
    const int k = int(std::min<int64_t>(threads(), n));
    VtcmPool& vtcm = current_vtcm_pool();
    std::vector<ChunkResult> results(static_cast<size_t>(k));
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = task;
      env_ = env;
      n_ = n;
      chunks_ = k;
      vtcm_ = &vtcm;
      results_ = results.data();
      pending_.store(k, std::memory_order_relaxed);
      generation = generation_.load(std::memory_order_relaxed) + 1;
      claims_.store((generation & 0xffffffffu) << 32 | 1, std::memory_order_relaxed);
      generation_.store(generation, std::memory_order_release);
    }
    if (k > 1) wake_.notify_all();
    for (int c = 0; c >= 0; c = claim(generation, k)) {
      auto [begin, end] = chunk_range(n, k, c);
      run_chunk(task, env, begin, end, vtcm, results[size_t(c)]);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
      results_ = nullptr;
    }
    std::vector<std::thread::id> ids;
    for (const ChunkResult& r : results)
      if (std::find(ids.begin(), ids.end(), r.thread) == ids.end()) ids.push_back(r.thread);
    info = ParallelLaunchInfo{n, k, int(ids.size()), false};
    for (const ChunkResult& r : results) {
      if (r.code == 0) continue;
      KilnBackendSetLastError(r.error.empty()
                                  ? ("a parallel task failed with code " + std::to_string(r.code)).c_str()
                                  : r.error.c_str());
      return r.code;
    }
    return 0;
  }

 private:
  // The next unclaimed chunk of launch `generation` (of `chunks`), or -1
  // when all are taken or a later launch has started.
  int claim(uint64_t generation, int chunks) {
    uint64_t v = claims_.load(std::memory_order_acquire);
    for (;;) {
      if (v >> 32 != (generation & 0xffffffffu) || int(v & 0xffffffffu) >= chunks) return -1;
      if (claims_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) return int(v & 0xffffffffu);
    }
  }

  // A worker claims chunks of every launch until none is left.
  void work() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      lock.unlock();
      spin_until([&] {
        return stop_flag_.load(std::memory_order_acquire) ||
               generation_.load(std::memory_order_acquire) != seen;
      });
      lock.lock();
      wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_acquire);
      const int64_t n = n_;
      const int chunks = chunks_;
      KilnBackendParallelTask task = task_;
      void* env = env_;
      VtcmPool* vtcm = vtcm_;
      ChunkResult* results = results_;
      lock.unlock();
      for (int c = claim(seen, chunks); c >= 0; c = claim(seen, chunks)) {
        auto [begin, end] = chunk_range(n, chunks, c);
        run_chunk(task, env, begin, end, *vtcm, results[c]);
        // Under the lock, so the launcher cannot miss the last notification.
        std::lock_guard<std::mutex> done(mu_);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
      }
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;         // a new launch, or stop
  std::condition_variable done_;         // pending_ reached 0
  std::atomic<uint64_t> generation_{0};  // launches so far
  bool stop_ = false;
  std::atomic<bool> stop_flag_{false};  // stop_, for the spinning workers
  // The current launch, guarded by mu_.
  KilnBackendParallelTask task_ = nullptr;
  void* env_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 0;
  VtcmPool* vtcm_ = nullptr;
  ChunkResult* results_ = nullptr;
  std::atomic<int> pending_{0};  // chunks not yet finished
  // The current launch's generation (high 32 bits) and its next unclaimed
  // chunk (low 32 bits).
  std::atomic<uint64_t> claims_{0};
  std::vector<std::thread> workers_;
};

// The pool, created at the first launch; the lock serialises launches from
// different threads and resizes.
struct PoolHolder {
  std::mutex launch_mu;
  std::unique_ptr<ThreadPool> pool;
};

PoolHolder& holder() {
  static PoolHolder h;
  return h;
}

ThreadPool& pool_locked(PoolHolder& h) {
  if (!h.pool) h.pool = std::make_unique<ThreadPool>(default_threads());
  return *h.pool;
}

}  // namespace

int available_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

ParallelLaunchInfo last_parallel_launch() { return t_last_launch; }

int parallel_num_threads() {
  PoolHolder& h = holder();
  std::lock_guard<std::mutex> lock(h.launch_mu);
  return pool_locked(h).threads();
}

void set_parallel_num_threads(int threads) {
  KILN_CHECK(threads >= 0 && threads <= kMaxParallelThreads, "set_parallel_num_threads: ", threads,
             " threads (expected 1 to ", kMaxParallelThreads, ", or 0 for the default)");
  KILN_CHECK(!t_in_task, "set_parallel_num_threads cannot be called from inside a parallel task");
  PoolHolder& h = holder();
  std::lock_guard<std::mutex> lock(h.launch_mu);
  h.pool.reset();
  h.pool = std::make_unique<ThreadPool>(threads == 0 ? default_threads() : threads);
}

int32_t parallel_for(int64_t n, KilnBackendParallelTask task, void* env) {
  try {
    if (!task) {
      KilnBackendSetLastError("KilnBackendParallelFor: the task is NULL");
      return -1;
    }
    if (n <= 0) {
      t_last_launch = ParallelLaunchInfo{n, 0, 0, t_in_task};
      return 0;
    }
    if (t_in_task) {
      // Nested: this thread runs the whole range, as the serial loop would.
      t_last_launch = ParallelLaunchInfo{n, 1, 1, true};
      return task(0, n, env);
    }
    PoolHolder& h = holder();
    std::lock_guard<std::mutex> lock(h.launch_mu);
    ParallelLaunchInfo info;
    int32_t code = pool_locked(h).run(n, task, env, info);
    t_last_launch = info;
    return code;
  } catch (const std::exception& e) {
    KilnBackendSetLastError((std::string("KilnBackendParallelFor: ") + e.what()).c_str());
    return -1;
  } catch (...) {
    KilnBackendSetLastError("KilnBackendParallelFor: unknown exception");
    return -1;
  }
}

}  // namespace kiln

extern "C" int32_t KilnBackendParallelFor(int64_t n, KilnBackendParallelTask task, void* env) {
  return kiln::parallel_for(n, task, env);
}
