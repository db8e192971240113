// The host emulation of the Hexagon scratchpad (VTCM): a fixed-capacity pool.
//
// Generated code reaches the pool through HexagonBackendAllocateVTCM /
// HexagonBackendFreeVTCM (kiln/runtime/backend_api.h), which use the calling
// thread's current pool (a default 4 MiB pool unless a ScopedVtcmPool binds
// another). Allocation is best fit over a free list kept sorted by address;
// freeing coalesces with both neighbours, so a pool whose blocks are all
// freed is one block again. A request that cannot be met is a structured
// error (requested bytes, free bytes, largest free block), never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace kiln {

inline constexpr uint64_t kDefaultVtcmCapacity = 4ull << 20;  // Hexagon v68: 4 MiB

struct VtcmPoolStats {
  uint64_t capacity = 0;
  uint64_t used_bytes = 0;          // sum of live allocations
  uint64_t free_bytes = 0;          // capacity - used_bytes
  uint64_t high_water_bytes = 0;    // the most used_bytes ever reached
  uint64_t largest_free_block = 0;
  uint64_t live_allocations = 0;
  uint64_t total_allocations = 0;   // successful allocate calls
  uint64_t failed_allocations = 0;
  uint64_t free_blocks = 0;
  // 1 - largest_free_block / free_bytes: 0 when the free space is one block.
  double fragmentation() const;
  std::string str() const;  // one line for logs and examples
};

// Why a request failed.
struct VtcmAllocFailure {
  uint64_t requested = 0;
  uint64_t alignment = 0;
  uint64_t free_bytes = 0;
  uint64_t largest_free_block = 0;
  uint64_t capacity = 0;
  std::string message() const;
};

class VtcmPool {
 public:
  explicit VtcmPool(uint64_t capacity = kDefaultVtcmCapacity);
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
  struct Used {
    uint64_t size;
  };
  uint64_t largest_free_locked() const;

  uint64_t capacity_;
  std::unique_ptr<uint8_t, void (*)(void*)> memory_;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, never adjacent
  std::map<uint64_t, Used> used_;      // offset -> block
  uint64_t used_bytes_ = 0;
  uint64_t high_water_ = 0;
  uint64_t total_allocations_ = 0;
  uint64_t failed_allocations_ = 0;
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
