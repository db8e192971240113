/* The VTCM pool allocator: one implementation for the host and for Hexagon.
 *
 * The host runtime's kiln::VtcmPool (runtime/vtcm_pool.h) wraps this core
 * with a mutex, owned memory and std::string messages; kiln's freestanding
 * Hexagon runtime calls it directly on the real scratchpad. Both therefore
 * place blocks, count bytes and word their messages identically.
 *
 * The algorithm: best fit over a free list kept sorted by offset (the
 * smallest free block that holds the request after alignment; on a tie the
 * lowest address), the alignment padding before and the remainder after the
 * block stay free, and freeing coalesces with both neighbours, so a pool
 * whose blocks are all freed is one block again. Alignment is relative to the
 * absolute address (base + offset). A zero-byte request gets one byte.
 *
 * The caller owns every byte: the pool memory and the block table, which
 * holds at most max_blocks free and max_blocks live blocks. No call
 * allocates, locks or calls libc; a request that cannot be met returns NULL
 * and describes why in a kiln_vtcm_failure, bad input returns 0 or NULL.
 *
 *   static uint8_t vtcm[1 << 20] __attribute__((aligned(4096)));
 *   static kiln_vtcm_block table[2 * 256];
 *   kiln_vtcm_pool pool;
 *   kiln_vtcm_pool_init(&pool, vtcm, sizeof vtcm, table, 256);
 *   kiln_vtcm_failure why;
 *   void* p = kiln_vtcm_pool_allocate(&pool, 3000, 128, &why);
 *   if (!p) { char msg[256]; kiln_vtcm_failure_message(&why, msg, sizeof msg); ... }
 *   kiln_vtcm_pool_free(&pool, p);
 *
 * C99, freestanding: only <stdint.h> and <stddef.h>.
 */
#ifndef KILN_RUNTIME_VTCM_POOL_CORE_H_
#define KILN_RUNTIME_VTCM_POOL_CORE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vtcm_block {
  uint64_t offset;
  uint64_t size;
} kiln_vtcm_block;

typedef struct kiln_vtcm_pool {
  uint8_t* base;
  uint64_t capacity;
  kiln_vtcm_block* free_list; /* sorted by offset, never adjacent */
  uint32_t free_count;
  kiln_vtcm_block* used_list; /* sorted by offset */
  uint32_t used_count;
  uint32_t max_blocks; /* capacity of each list */
  uint64_t used_bytes, high_water_bytes, total_allocations, failed_allocations;
} kiln_vtcm_pool;

typedef struct kiln_vtcm_stats {
  uint64_t capacity;
  uint64_t used_bytes;       /* sum of live allocations */
  uint64_t free_bytes;       /* capacity - used_bytes */
  uint64_t high_water_bytes; /* the most used_bytes ever reached */
  uint64_t largest_free_block;
  uint64_t live_allocations;
  uint64_t total_allocations; /* successful allocate calls */
  uint64_t failed_allocations;
  uint64_t free_blocks;
} kiln_vtcm_stats;

/* Why a request failed. */
typedef struct kiln_vtcm_failure {
  uint64_t requested; /* after a zero-byte request became one byte */
  uint64_t alignment;
  uint64_t free_bytes;
  uint64_t largest_free_block;
  uint64_t capacity;
  uint32_t max_blocks; /* non-zero when the failure is "too many live allocations" (block table full) */
} kiln_vtcm_failure;

/* storage: 2 * max_blocks blocks (free list then used list), owned by the
 * caller. A NULL base or storage makes a pool that holds nothing. */
void kiln_vtcm_pool_init(kiln_vtcm_pool* pool, void* base, uint64_t capacity, kiln_vtcm_block* storage,
                         uint32_t max_blocks);
/* NULL, and *failure filled in when failure is not NULL, when the request
 * cannot be met: alignment not a power of two, no free block large enough,
 * or the block table full. */
void* kiln_vtcm_pool_allocate(kiln_vtcm_pool* pool, uint64_t nbytes, uint64_t alignment,
                              kiln_vtcm_failure* failure /* may be NULL */);
/* 1 freed, 0 not a live block of this pool (NULL, foreign, interior, freed already). */
int kiln_vtcm_pool_free(kiln_vtcm_pool* pool, void* ptr);
/* 1 when ptr is the start of a live block of this pool. */
int kiln_vtcm_pool_owns(const kiln_vtcm_pool* pool, const void* ptr);
void kiln_vtcm_pool_stats(const kiln_vtcm_pool* pool, kiln_vtcm_stats* out);

/* snprintf-like: write at most size - 1 characters and a NUL (when size > 0)
 * and return the length of the whole message. One line, no newline. */
size_t kiln_vtcm_failure_message(const kiln_vtcm_failure* f, char* buf, size_t size);
size_t kiln_vtcm_stats_message(const kiln_vtcm_stats* s, char* buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_VTCM_POOL_CORE_H_ */
