// The host emulation of the Hexagon scratchpad (VTCM): a fixed-capacity pool.
//
// Generated code reaches the pool through HexagonBackendAllocateVTCM /
// HexagonBackendFreeVTCM (kiln/runtime/backend_api.h), which use the calling
// thread's current pool (a default 4 MiB pool unless a ScopedVtcmPool binds
// another). Allocation is best fit over a free list kept sorted by address;
// freeing coalesces with both neighbours, so a pool whose blocks are all
// freed is one block again. A request that cannot be met is a structured
// error (requested bytes, free bytes, largest free block), never a crash.
//
// The allocator and its messages are the C core (runtime/vtcm_pool_core.h),
// which kiln's Hexagon runtime runs on the real scratchpad; this class adds
// the lock, the host memory, the block table and std::string messages.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/vtcm_pool_core.h"

namespace kiln {

inline constexpr uint64_t kDefaultVtcmCapacity = 4ull << 20;  // Hexagon v68: 4 MiB
// Live allocations (and free blocks) a host pool tracks at most.
inline constexpr uint32_t kDefaultVtcmMaxBlocks = 1u << 16;

struct VtcmPoolStats {
  uint64_t capacity = 0;
  uint64_t used_bytes = 0;        // sum of live allocations
  uint64_t free_bytes = 0;        // capacity - used_bytes
  uint64_t high_water_bytes = 0;  // the most used_bytes ever reached
  uint64_t largest_free_block = 0;
  uint64_t live_allocations = 0;
  uint64_t total_allocations = 0;  // successful allocate calls
  uint64_t failed_allocations = 0;
  uint64_t free_blocks = 0;
  // 1 - largest_free_block / free_bytes: 0 when the free space is one block.
  double fragmentation() const;
  // One line for logs and examples (fragmentation rounded half up to 3 decimals).
  std::string str() const;
};

// Why a request failed.
struct VtcmAllocFailure {
  uint64_t requested = 0;
  uint64_t alignment = 0;
  uint64_t free_bytes = 0;
  uint64_t largest_free_block = 0;
  uint64_t capacity = 0;
  uint32_t max_blocks = 0;  // non-zero: the block table (this many blocks) is full
  std::string message() const;
};

class VtcmPool {
 public:
  explicit VtcmPool(uint64_t capacity = kDefaultVtcmCapacity, uint32_t max_blocks = kDefaultVtcmMaxBlocks);
  VtcmPool(const VtcmPool&) = delete;
  VtcmPool& operator=(const VtcmPool&) = delete;

  // nullptr and *failure filled in when the request cannot be met (also for
  // an alignment that is not a power of two). A zero-byte request gets one byte.
  void* allocate(uint64_t nbytes, uint64_t alignment, VtcmAllocFailure* failure = nullptr);
  // Throws kiln::Error with failure.message().
  void* allocate_or_throw(uint64_t nbytes, uint64_t alignment);
  // false for a pointer this pool did not hand out (or already freed).
  bool free(void* ptr);
  bool owns(const void* ptr) const;

  VtcmPoolStats stats() const;
  uint64_t capacity() const { return capacity_; }

 private:
  uint64_t capacity_;
  std::unique_ptr<uint8_t, void (*)(void*)> memory_;
  std::vector<kiln_vtcm_block> blocks_;  // the core's free list, then its used list
  kiln_vtcm_pool core_;                  // guarded by mu_
  mutable std::mutex mu_;
};

// The pool the calling thread's generated code allocates from.
VtcmPool& current_vtcm_pool();

// Binds `pool` as the calling thread's current pool for this object's lifetime.
class ScopedVtcmPool {
 public:
  explicit ScopedVtcmPool(VtcmPool& pool);
  ~ScopedVtcmPool();
  ScopedVtcmPool(const ScopedVtcmPool&) = delete;
  ScopedVtcmPool& operator=(const ScopedVtcmPool&) = delete;

 private:
  VtcmPool* previous_;
};

}  // namespace kiln
