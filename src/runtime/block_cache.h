// Large host blocks (tensors, kernel workspaces) are kept when freed and
// handed out again, so a model's second run touches no fresh memory.
//
// Every model run allocates its outputs and its kernels' workspaces (packed
// weight panels) anew. From glibc, a block of a few hundred KiB or more is
// often memory it has just unmapped or trimmed, and writing it costs a page
// fault per 4 KiB page: about 5 us each on a virtual machine, 6 ms for a
// 4 MB output, half again a 1024^3 matmul's time. Blocks of
// kBlockCacheMinBytes or more are therefore rounded up to whole pages and,
// when freed, kept for the next request of the same size, up to
// KILN_BLOCK_CACHE_BYTES of free blocks (default 256 MiB; 0 keeps none).
// Smaller blocks go straight to the C heap, which reuses them well.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>

namespace kiln {

inline constexpr size_t kBlockCacheMinBytes = size_t{64} << 10;

struct BlockCacheStats {
  uint64_t hits = 0;          // requests served from a kept block
  uint64_t misses = 0;        // requests no kept block matched
  uint64_t cached_bytes = 0;  // free blocks kept now
};

// Free blocks (from the C heap) by size, at most `limit` bytes of them; the
// oldest are freed first to stay within it. Thread-safe.
class BlockCache {
 public:
  explicit BlockCache(uint64_t limit) : limit_(limit) {}
  ~BlockCache() { release(); }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // The most recently kept block of exactly `bytes`, or nullptr.
  void* take(size_t bytes);
  // Keeps `p` (freed with std::free when it is evicted) unless it alone is
  // over the limit, in which case it is freed now.
  void keep(void* p, size_t bytes);
  // Frees every kept block.
  void release();
  BlockCacheStats stats();

 private:
  struct Block {
    void* p;
    size_t bytes;
  };
  void forget(std::list<Block>::iterator block);

  const uint64_t limit_;
  std::mutex mu_;
  std::list<Block> order_;  // oldest first
  std::multimap<size_t, std::list<Block>::iterator> by_size_;
  BlockCacheStats stats_;
};

// `nbytes` bytes aligned to `alignment` (a power of two), or nullptr when
// out of memory. Alignments above a page are served by the C heap, uncached.
void* cached_alloc(size_t nbytes, size_t alignment);

// Returns a block from cached_alloc with the same `nbytes` and `alignment`.
void cached_free(void* p, size_t nbytes, size_t alignment);

// The process's cache, behind cached_alloc and cached_free.
BlockCacheStats block_cache_stats();

// Gives every kept block back to the C heap.
void block_cache_release();

}  // namespace kiln
