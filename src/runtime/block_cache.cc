#include "runtime/block_cache.h"

#include <cstdlib>

#include "runtime/file_io.h"

namespace kiln {

void* BlockCache::take(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  // The most recently kept block of the size: the likeliest still cached.
  auto [first, last] = by_size_.equal_range(bytes);
  if (first == last) {
    ++stats_.misses;
    return nullptr;
  }
  auto it = std::prev(last);
  void* p = it->second->p;
  order_.erase(it->second);
  by_size_.erase(it);
  stats_.cached_bytes -= bytes;
  ++stats_.hits;
  return p;
}

void BlockCache::keep(void* p, size_t bytes) {
  std::list<Block> evicted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes > limit_) {
      evicted.push_back({p, bytes});
    } else {
      while (stats_.cached_bytes + bytes > limit_) {
        forget(order_.begin());
        evicted.splice(evicted.end(), order_, order_.begin());
      }
      order_.push_back({p, bytes});
      by_size_.emplace(bytes, std::prev(order_.end()));
      stats_.cached_bytes += bytes;
    }
  }
  for (const Block& b : evicted) std::free(b.p);
}

void BlockCache::release() {
  std::list<Block> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(order_);
    by_size_.clear();
    stats_.cached_bytes = 0;
  }
  for (const Block& b : all) std::free(b.p);
}

BlockCacheStats BlockCache::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// Drops `block` from the size index and the kept bytes (not from order_).
void BlockCache::forget(std::list<Block>::iterator block) {
  stats_.cached_bytes -= block->bytes;
  auto [first, last] = by_size_.equal_range(block->bytes);
  for (auto it = first; it != last; ++it)
    if (it->second == block) {
      by_size_.erase(it);
      return;
    }
}

namespace {

constexpr size_t kPage = 4096;

// Never destroyed: tensors may be freed while the process exits.
BlockCache& process_cache() {
  static BlockCache* c =
      new BlockCache(byte_limit_from_env("KILN_BLOCK_CACHE_BYTES", uint64_t{256} << 20, /*allow_zero=*/true));
  return *c;
}

bool cacheable(size_t nbytes, size_t alignment) {
  return nbytes >= kBlockCacheMinBytes && alignment <= kPage;
}

size_t whole_pages(size_t nbytes) { return (nbytes + kPage - 1) / kPage * kPage; }

}  // namespace

void* cached_alloc(size_t nbytes, size_t alignment) {
  if (!cacheable(nbytes, alignment))
    return std::aligned_alloc(alignment, (nbytes + alignment - 1) / alignment * alignment);
  const size_t bytes = whole_pages(nbytes);
  if (void* p = process_cache().take(bytes)) return p;
  return std::aligned_alloc(kPage, bytes);
}

void cached_free(void* p, size_t nbytes, size_t alignment) {
  if (!p) return;
  if (!cacheable(nbytes, alignment)) return std::free(p);
  process_cache().keep(p, whole_pages(nbytes));
}

BlockCacheStats block_cache_stats() { return process_cache().stats(); }

void block_cache_release() { process_cache().release(); }

}  // namespace kiln
