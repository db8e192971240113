#include "runtime/vtcm_pool.h"

#include <cstdlib>

#include "kiln/runtime/error.h"

namespace kiln {

namespace {

constexpr uint64_t kPoolBaseAlignment = 4096;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

thread_local VtcmPool* t_current_pool = nullptr;

// A message from one of the core's snprintf-like formatters.
template <typename T>
std::string core_message(size_t (*format)(const T*, char*, size_t), const T& value) {
  std::string s(format(&value, nullptr, 0), '\0');
  format(&value, s.data(), s.size() + 1);  // overwrites the string's own NUL with a NUL
  return s;
}

}  // namespace

double VtcmPoolStats::fragmentation() const {
  if (free_bytes == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free_block) / static_cast<double>(free_bytes);
}

std::string VtcmPoolStats::str() const {
  const kiln_vtcm_stats s{capacity,          used_bytes,         free_bytes,
                          high_water_bytes,  largest_free_block, live_allocations,
                          total_allocations, failed_allocations, free_blocks};
  return core_message(kiln_vtcm_stats_message, s);
}

std::string VtcmAllocFailure::message() const {
  const kiln_vtcm_failure f{requested, alignment, free_bytes, largest_free_block, capacity, max_blocks};
  return core_message(kiln_vtcm_failure_message, f);
}

VtcmPool::VtcmPool(uint64_t capacity, uint32_t max_blocks)
    : capacity_(capacity),
      memory_(static_cast<uint8_t*>(std::aligned_alloc(
                  kPoolBaseAlignment, align_up(capacity == 0 ? 1 : capacity, kPoolBaseAlignment))),
              std::free) {
  KILN_CHECK(memory_ != nullptr, "cannot reserve ", capacity, " bytes of host memory for the VTCM pool");
  // Every block holds at least one byte, so a pool never has more live (or
  // free) blocks than bytes: a larger table would never fill.
  if (capacity < max_blocks) max_blocks = static_cast<uint32_t>(capacity);
  blocks_.resize(2 * static_cast<size_t>(max_blocks));
  kiln_vtcm_pool_init(&core_, memory_.get(), capacity_, blocks_.data(), max_blocks);
}

void* VtcmPool::allocate(uint64_t nbytes, uint64_t alignment, VtcmAllocFailure* failure) {
  std::lock_guard<std::mutex> lock(mu_);
  kiln_vtcm_failure f;
  void* p = kiln_vtcm_pool_allocate(&core_, nbytes, alignment, &f);
  if (!p && failure)
    *failure = VtcmAllocFailure{f.requested,          f.alignment, f.free_bytes,
                                f.largest_free_block, f.capacity,  f.max_blocks};
  return p;
}

void* VtcmPool::allocate_or_throw(uint64_t nbytes, uint64_t alignment) {
  VtcmAllocFailure failure;
  void* p = allocate(nbytes, alignment, &failure);
  if (!p) throw Error(failure.message());
  return p;
}

bool VtcmPool::owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  return kiln_vtcm_pool_owns(&core_, ptr) != 0;
}

bool VtcmPool::free(void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  return kiln_vtcm_pool_free(&core_, ptr) != 0;
}

VtcmPoolStats VtcmPool::stats() const {
  kiln_vtcm_stats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kiln_vtcm_pool_stats(&core_, &s);
  }
  VtcmPoolStats out;
  out.capacity = s.capacity;
  out.used_bytes = s.used_bytes;
  out.free_bytes = s.free_bytes;
  out.high_water_bytes = s.high_water_bytes;
  out.largest_free_block = s.largest_free_block;
  out.live_allocations = s.live_allocations;
  out.total_allocations = s.total_allocations;
  out.failed_allocations = s.failed_allocations;
  out.free_blocks = s.free_blocks;
  return out;
}

VtcmPool& current_vtcm_pool() {
  if (t_current_pool) return *t_current_pool;
  static VtcmPool default_pool(kDefaultVtcmCapacity);
  return default_pool;
}

ScopedVtcmPool::ScopedVtcmPool(VtcmPool& pool) : previous_(t_current_pool) { t_current_pool = &pool; }
ScopedVtcmPool::~ScopedVtcmPool() { t_current_pool = previous_; }

}  // namespace kiln
