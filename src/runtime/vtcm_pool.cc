#include "runtime/vtcm_pool.h"

#include <cstdlib>

#include "kiln/runtime/error.h"

namespace kiln {

namespace {

constexpr uint64_t kPoolBaseAlignment = 4096;

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

thread_local VtcmPool* t_current_pool = nullptr;

}  // namespace

double VtcmPoolStats::fragmentation() const {
  if (free_bytes == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free_block) / static_cast<double>(free_bytes);
}

std::string VtcmPoolStats::str() const {
  char frag[32];
  std::snprintf(frag, sizeof frag, "%.3f", fragmentation());
  return "capacity " + std::to_string(capacity) + " B, used " + std::to_string(used_bytes) +
         " B, high-water " + std::to_string(high_water_bytes) + " B, free " +
         std::to_string(free_bytes) + " B in " + std::to_string(free_blocks) +
         " block(s), largest free block " + std::to_string(largest_free_block) +
         " B, fragmentation " + frag + ", allocations " + std::to_string(total_allocations) +
         " (" + std::to_string(failed_allocations) + " failed, " +
         std::to_string(live_allocations) + " live)";
}

std::string VtcmAllocFailure::message() const {
  if (!is_power_of_two(alignment))
    return "VTCM allocation of " + std::to_string(requested) + " bytes has alignment " +
           std::to_string(alignment) + ", which is not a power of two";
  return "VTCM pool cannot allocate " + std::to_string(requested) + " bytes (alignment " +
         std::to_string(alignment) + "): " + std::to_string(free_bytes) + " bytes free, largest free block " +
         std::to_string(largest_free_block) + " bytes, capacity " + std::to_string(capacity) +
         " bytes; free buffers earlier, use smaller tiles, or raise the target's VTCM capacity";
}

VtcmPool::VtcmPool(uint64_t capacity)
    : capacity_(capacity),
      memory_(static_cast<uint8_t*>(std::aligned_alloc(
                  kPoolBaseAlignment, align_up(capacity == 0 ? 1 : capacity, kPoolBaseAlignment))),
              std::free) {
  KILN_CHECK(memory_ != nullptr, "cannot reserve ", capacity, " bytes of host memory for the VTCM pool");
  if (capacity_ > 0) free_[0] = capacity_;
}

uint64_t VtcmPool::largest_free_locked() const {
  uint64_t best = 0;
  for (const auto& [off, size] : free_) best = std::max(best, size);
  return best;
}

void* VtcmPool::allocate(uint64_t nbytes, uint64_t alignment, VtcmAllocFailure* failure) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nbytes == 0) nbytes = 1;
  const uint64_t base = reinterpret_cast<uintptr_t>(memory_.get());
  // Best fit: the smallest free block that holds the request after alignment.
  auto best = free_.end();
  uint64_t best_size = 0;
  if (is_power_of_two(alignment)) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      uint64_t start = align_up(base + it->first, alignment) - base;
      uint64_t end = it->first + it->second;
      if (start + nbytes > end) continue;
      if (best == free_.end() || it->second < best_size) {
        best = it;
        best_size = it->second;
      }
    }
  }
  if (best == free_.end()) {
    ++failed_allocations_;
    if (failure)
      *failure = VtcmAllocFailure{nbytes, alignment, capacity_ - used_bytes_, largest_free_locked(),
                                  capacity_};
    return nullptr;
  }
  const uint64_t off = best->first, size = best->second;
  const uint64_t start = align_up(base + off, alignment) - base;
  free_.erase(best);
  // The padding before and the remainder after stay free.
  if (start > off) free_[off] = start - off;
  if (start + nbytes < off + size) free_[start + nbytes] = off + size - (start + nbytes);
  used_[start] = Used{nbytes};
  used_bytes_ += nbytes;
  high_water_ = std::max(high_water_, used_bytes_);
  ++total_allocations_;
  return memory_.get() + start;
}

void* VtcmPool::allocate_or_throw(uint64_t nbytes, uint64_t alignment) {
  VtcmAllocFailure failure;
  void* p = allocate(nbytes, alignment, &failure);
  if (!p) throw Error(failure.message());
  return p;
}

bool VtcmPool::owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = static_cast<const uint8_t*>(ptr);
  if (p < memory_.get() || p >= memory_.get() + capacity_) return false;
  return used_.count(static_cast<uint64_t>(p - memory_.get())) != 0;
}

bool VtcmPool::free(void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = static_cast<uint8_t*>(ptr);
  if (p < memory_.get() || p >= memory_.get() + capacity_) return false;
  uint64_t off = static_cast<uint64_t>(p - memory_.get());
  auto it = used_.find(off);
  if (it == used_.end()) return false;
  uint64_t size = it->second.size;
  used_.erase(it);
  used_bytes_ -= size;
  // Coalesce with the free block that ends here and the one that starts after.
  auto next = free_.lower_bound(off);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && off + size == next->first) {
    size += next->second;
    free_.erase(next);
  }
  free_[off] = size;
  return true;
}

VtcmPoolStats VtcmPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  VtcmPoolStats s;
  s.capacity = capacity_;
  s.used_bytes = used_bytes_;
  s.free_bytes = capacity_ - used_bytes_;
  s.high_water_bytes = high_water_;
  s.largest_free_block = largest_free_locked();
  s.live_allocations = used_.size();
  s.total_allocations = total_allocations_;
  s.failed_allocations = failed_allocations_;
  s.free_blocks = free_.size();
  return s;
}

VtcmPool& current_vtcm_pool() {
  if (t_current_pool) return *t_current_pool;
  static VtcmPool default_pool(kDefaultVtcmCapacity);
  return default_pool;
}

ScopedVtcmPool::ScopedVtcmPool(VtcmPool& pool) : previous_(t_current_pool) { t_current_pool = &pool; }
ScopedVtcmPool::~ScopedVtcmPool() { t_current_pool = previous_; }

}  // namespace kiln
