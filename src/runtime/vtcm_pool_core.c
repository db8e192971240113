/* The VTCM pool allocator (see vtcm_pool_core.h): freestanding C99.
 *
 * No libc at all, not even the memcpy/memmove a compiler may emit for a
 * struct copy or an array-shifting loop. Check after every change:
 *
 *   clang-19 --target=hexagon-unknown-none-elf -mcpu=hexagonv68 -ffreestanding -O2 \
 *     -c src/runtime/vtcm_pool_core.c -o /tmp/core.o && llvm-nm-19 -u /tmp/core.o
 *
 * The only undefined symbols allowed are __hexagon_udivdi3 / __hexagon_umoddi3
 * (64-bit division helpers the Hexagon runtime provides); the code divides
 * only by two, so today the list is empty.
 *
 * The header is included by a relative name so that the file also compiles
 * with no include path, as in the check above.
 */
#include "vtcm_pool_core.h"

#define KILN_NO_BLOCK UINT32_MAX

static int is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* Bytes from `address` up to the next multiple of `alignment` (a power of
 * two). Unlike align_up(address) - address it cannot overflow. */
static uint64_t padding_for(uint64_t address, uint64_t alignment) {
  return (alignment - (address & (alignment - 1))) & (alignment - 1);
}

static uint64_t address_of(const kiln_vtcm_pool* pool, uint64_t offset) {
  return (uint64_t)(uintptr_t)pool->base + offset;
}

/* The first index in list[0, count) whose offset is not below `offset`. */
static uint32_t lower_bound(const kiln_vtcm_block* list, uint32_t count, uint64_t offset) {
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (list[mid].offset < offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Field by field, so that no copy becomes a memcpy/memmove call. */
static void set_block(kiln_vtcm_block* b, uint64_t offset, uint64_t size) {
  b->offset = offset;
  b->size = size;
}

static void insert_at(kiln_vtcm_block* list, uint32_t* count, uint32_t i, uint64_t offset, uint64_t size) {
  uint32_t j;
  for (j = *count; j > i; --j) set_block(&list[j], list[j - 1].offset, list[j - 1].size);
  set_block(&list[i], offset, size);
  ++*count;
}

static void remove_at(kiln_vtcm_block* list, uint32_t* count, uint32_t i) {
  uint32_t j;
  for (j = i + 1; j < *count; ++j) set_block(&list[j - 1], list[j].offset, list[j].size);
  --*count;
}

static uint64_t largest_free_block(const kiln_vtcm_pool* pool) {
  uint64_t best = 0;
  uint32_t i;
  for (i = 0; i < pool->free_count; ++i)
    if (pool->free_list[i].size > best) best = pool->free_list[i].size;
  return best;
}

static uint64_t free_bytes(const kiln_vtcm_pool* pool) {
  return pool->used_bytes < pool->capacity ? pool->capacity - pool->used_bytes : 0;
}

void kiln_vtcm_pool_init(kiln_vtcm_pool* pool, void* base, uint64_t capacity, kiln_vtcm_block* storage,
                         uint32_t max_blocks) {
  if (!pool) return;
  if (!base || !storage || max_blocks == 0) capacity = 0;
  /* Keep base + capacity inside the address space, so offsets stay pointers. */
  if (base && capacity > (uint64_t)(UINTPTR_MAX - (uintptr_t)base))
    capacity = (uint64_t)(UINTPTR_MAX - (uintptr_t)base);
  pool->base = (uint8_t*)base;
  pool->capacity = capacity;
  pool->free_list = storage;
  pool->free_count = 0;
  pool->used_list = storage ? storage + max_blocks : 0;
  pool->used_count = 0;
  pool->max_blocks = storage ? max_blocks : 0;
  pool->used_bytes = 0;
  pool->high_water_bytes = 0;
  pool->total_allocations = 0;
  pool->failed_allocations = 0;
  if (capacity > 0) {
    set_block(&pool->free_list[0], 0, capacity);
    pool->free_count = 1;
  }
}

void* kiln_vtcm_pool_allocate(kiln_vtcm_pool* pool, uint64_t nbytes, uint64_t alignment,
                              kiln_vtcm_failure* failure) {
  uint32_t best = KILN_NO_BLOCK, i, new_free_count;
  uint64_t best_size = 0, best_pad = 0, pad, start, rest;
  int table_full = 0;
  if (nbytes == 0) nbytes = 1;
  if (!pool) {
    if (failure) {
      failure->requested = nbytes;
      failure->alignment = alignment;
      failure->free_bytes = 0;
      failure->largest_free_block = 0;
      failure->capacity = 0;
      failure->max_blocks = 0;
    }
    return 0;
  }
  /* Best fit: the smallest free block that holds the request after
   * alignment; scanning in address order with a strict < keeps the lowest
   * address on a tie. */
  if (is_power_of_two(alignment)) {
    for (i = 0; i < pool->free_count; ++i) {
      const kiln_vtcm_block* b = &pool->free_list[i];
      pad = padding_for(address_of(pool, b->offset), alignment);
      if (pad > b->size || nbytes > b->size - pad) continue;
      if (best == KILN_NO_BLOCK || b->size < best_size) {
        best = i;
        best_size = b->size;
        best_pad = pad;
      }
    }
  }
  /* Only a request that would fit can be refused for the block table: the
   * new live block needs a slot, and splitting the chosen free block into
   * padding and remainder may need one more free slot. Free blocks never
   * outnumber live ones + 1, so the free list fills only with the last slot. */
  if (best != KILN_NO_BLOCK) {
    rest = best_size - best_pad - nbytes;
    new_free_count = pool->free_count - 1 + (best_pad > 0) + (rest > 0);
    if (pool->used_count >= pool->max_blocks || new_free_count > pool->max_blocks) {
      table_full = 1;
      best = KILN_NO_BLOCK;
    }
  }
  if (best == KILN_NO_BLOCK) {
    ++pool->failed_allocations;
    if (failure) {
      failure->requested = nbytes;
      failure->alignment = alignment;
      failure->free_bytes = free_bytes(pool);
      failure->largest_free_block = largest_free_block(pool);
      failure->capacity = pool->capacity;
      failure->max_blocks = table_full ? pool->max_blocks : 0;
    }
    return 0;
  }
  start = pool->free_list[best].offset + best_pad;
  rest = best_size - best_pad - nbytes;
  /* The padding before and the remainder after stay free. */
  if (best_pad > 0) {
    pool->free_list[best].size = best_pad;
    if (rest > 0) insert_at(pool->free_list, &pool->free_count, best + 1, start + nbytes, rest);
  } else if (rest > 0) {
    set_block(&pool->free_list[best], start + nbytes, rest);
  } else {
    remove_at(pool->free_list, &pool->free_count, best);
  }
  insert_at(pool->used_list, &pool->used_count, lower_bound(pool->used_list, pool->used_count, start), start,
            nbytes);
  pool->used_bytes += nbytes;
  if (pool->used_bytes > pool->high_water_bytes) pool->high_water_bytes = pool->used_bytes;
  ++pool->total_allocations;
  return pool->base + start;
}

/* The index in the used list of the live block that starts at ptr, or
 * KILN_NO_BLOCK. */
static uint32_t find_live(const kiln_vtcm_pool* pool, const void* ptr) {
  uintptr_t p = (uintptr_t)ptr, base;
  uint64_t offset;
  uint32_t i;
  if (!pool || !ptr || !pool->base) return KILN_NO_BLOCK;
  base = (uintptr_t)pool->base;
  if (p < base) return KILN_NO_BLOCK;
  offset = (uint64_t)(p - base);
  if (offset >= pool->capacity) return KILN_NO_BLOCK;
  i = lower_bound(pool->used_list, pool->used_count, offset);
  if (i == pool->used_count || pool->used_list[i].offset != offset) return KILN_NO_BLOCK;
  return i;
}

int kiln_vtcm_pool_owns(const kiln_vtcm_pool* pool, const void* ptr) {
  return find_live(pool, ptr) != KILN_NO_BLOCK;
}

int kiln_vtcm_pool_free(kiln_vtcm_pool* pool, void* ptr) {
  uint32_t u = find_live(pool, ptr), i;
  uint64_t offset, size;
  int merge_prev, merge_next;
  kiln_vtcm_block* f;
  if (u == KILN_NO_BLOCK) return 0;
  offset = pool->used_list[u].offset;
  size = pool->used_list[u].size;
  f = pool->free_list;
  /* Coalesce with the free block that ends here and the one that starts after. */
  i = lower_bound(f, pool->free_count, offset);
  merge_prev = i > 0 && f[i - 1].offset + f[i - 1].size == offset;
  merge_next = i < pool->free_count && offset + size == f[i].offset;
  /* A block with no free neighbour has live or no blocks on both sides, so
   * the free list cannot be full here; refuse rather than overrun if the
   * pool was corrupted. */
  if (!merge_prev && !merge_next && pool->free_count >= pool->max_blocks) return 0;
  remove_at(pool->used_list, &pool->used_count, u);
  pool->used_bytes -= size;
  if (merge_prev && merge_next) {
    f[i - 1].size += size + f[i].size;
    remove_at(f, &pool->free_count, i);
  } else if (merge_prev) {
    f[i - 1].size += size;
  } else if (merge_next) {
    set_block(&f[i], offset, size + f[i].size);
  } else {
    insert_at(f, &pool->free_count, i, offset, size);
  }
  return 1;
}

void kiln_vtcm_pool_stats(const kiln_vtcm_pool* pool, kiln_vtcm_stats* out) {
  if (!out) return;
  out->capacity = pool ? pool->capacity : 0;
  out->used_bytes = pool ? pool->used_bytes : 0;
  out->free_bytes = pool ? free_bytes(pool) : 0;
  out->high_water_bytes = pool ? pool->high_water_bytes : 0;
  out->largest_free_block = pool ? largest_free_block(pool) : 0;
  out->live_allocations = pool ? pool->used_count : 0;
  out->total_allocations = pool ? pool->total_allocations : 0;
  out->failed_allocations = pool ? pool->failed_allocations : 0;
  out->free_blocks = pool ? pool->free_count : 0;
}

/* ---- messages: a bounded writer and a decimal formatter, no libc. */

typedef struct writer {
  char* buf;
  size_t size;
  size_t len; /* the length of the whole message so far, written or not */
} writer;

static void put_char(writer* w, char c) {
  if (w->len + 1 < w->size) w->buf[w->len] = c;
  ++w->len;
}

static void put_str(writer* w, const char* s) {
  while (*s) put_char(w, *s++);
}

/* Decimal digits by subtracting powers of ten: no division, so no 64-bit
 * division helper on Hexagon. */
static void put_u64(writer* w, uint64_t v) {
  static const uint64_t powers[20] = {UINT64_C(10000000000000000000),
                                      UINT64_C(1000000000000000000),
                                      UINT64_C(100000000000000000),
                                      UINT64_C(10000000000000000),
                                      UINT64_C(1000000000000000),
                                      UINT64_C(100000000000000),
                                      UINT64_C(10000000000000),
                                      UINT64_C(1000000000000),
                                      UINT64_C(100000000000),
                                      UINT64_C(10000000000),
                                      UINT64_C(1000000000),
                                      UINT64_C(100000000),
                                      UINT64_C(10000000),
                                      UINT64_C(1000000),
                                      UINT64_C(100000),
                                      UINT64_C(10000),
                                      UINT64_C(1000),
                                      UINT64_C(100),
                                      UINT64_C(10),
                                      UINT64_C(1)};
  int i, started = 0;
  for (i = 0; i < 20; ++i) {
    char digit = '0';
    while (v >= powers[i]) {
      v -= powers[i];
      ++digit;
    }
    if (digit != '0' || started || i == 19) {
      put_char(w, digit);
      started = 1;
    }
  }
}

static size_t finish(writer* w) {
  if (w->size > 0) w->buf[w->len < w->size ? w->len : w->size - 1] = '\0';
  return w->len;
}

static writer make_writer(char* buf, size_t size) {
  writer w;
  w.buf = buf;
  w.size = buf ? size : 0;
  w.len = 0;
  return w;
}

/* The fragmentation 1 - largest_free_block / free_bytes in thousandths,
 * rounded half up. Integer arithmetic, so the host and Hexagon print the same
 * figure: the long division of (free - largest) by free, three digits and a
 * rounding test, where each digit is floor(10 r / d) counted by adding r to
 * itself modulo d, which cannot overflow even near UINT64_MAX. */
static uint32_t fragmentation_thousandths(uint64_t free_bytes, uint64_t largest) {
  uint64_t d = free_bytes, r, t;
  uint32_t q = 0, k;
  int digit, i;
  if (free_bytes == 0 || largest >= free_bytes) return 0;
  r = free_bytes - largest; /* 0 < r < d */
  for (digit = 0; digit < 3; ++digit) {
    t = 0;
    k = 0;
    for (i = 0; i < 10; ++i) {
      if (t >= d - r) { /* t + r >= d */
        t -= d - r;
        ++k;
      } else {
        t += r;
      }
    }
    q = q * 10 + k;
    r = t;
  }
  if (r >= d - r) ++q; /* remainder / d >= 1/2 */
  return q;
}

/* q thousandths (at most 1000) as "I.FFF". */
static void put_thousandths(writer* w, uint32_t q) {
  uint32_t whole = q >= 1000 ? 1 : 0, frac = q - 1000 * whole;
  put_u64(w, whole);
  put_char(w, '.');
  if (frac < 100) put_char(w, '0');
  if (frac < 10) put_char(w, '0');
  put_u64(w, frac);
}

size_t kiln_vtcm_stats_message(const kiln_vtcm_stats* s, char* buf, size_t size) {
  writer w = make_writer(buf, size);
  static const kiln_vtcm_stats zero = {0, 0, 0, 0, 0, 0, 0, 0, 0}; /* static: no memset at -O0 */
  if (!s) s = &zero;
  put_str(&w, "capacity ");
  put_u64(&w, s->capacity);
  put_str(&w, " B, used ");
  put_u64(&w, s->used_bytes);
  put_str(&w, " B, high-water ");
  put_u64(&w, s->high_water_bytes);
  put_str(&w, " B, free ");
  put_u64(&w, s->free_bytes);
  put_str(&w, " B in ");
  put_u64(&w, s->free_blocks);
  put_str(&w, " block(s), largest free block ");
  put_u64(&w, s->largest_free_block);
  put_str(&w, " B, fragmentation ");
  put_thousandths(&w, fragmentation_thousandths(s->free_bytes, s->largest_free_block));
  put_str(&w, ", allocations ");
  put_u64(&w, s->total_allocations);
  put_str(&w, " (");
  put_u64(&w, s->failed_allocations);
  put_str(&w, " failed, ");
  put_u64(&w, s->live_allocations);
  put_str(&w, " live)");
  return finish(&w);
}

size_t kiln_vtcm_failure_message(const kiln_vtcm_failure* f, char* buf, size_t size) {
  writer w = make_writer(buf, size);
  static const kiln_vtcm_failure zero = {0, 0, 0, 0, 0, 0};
  if (!f) f = &zero;
  if (!is_power_of_two(f->alignment)) {
    put_str(&w, "VTCM allocation of ");
    put_u64(&w, f->requested);
    put_str(&w, " bytes has alignment ");
    put_u64(&w, f->alignment);
    put_str(&w, ", which is not a power of two");
    return finish(&w);
  }
  put_str(&w, "VTCM pool cannot allocate ");
  put_u64(&w, f->requested);
  put_str(&w, " bytes (alignment ");
  put_u64(&w, f->alignment);
  if (f->max_blocks != 0) {
    put_str(&w, "): its block table is full (at most ");
    put_u64(&w, f->max_blocks);
    put_str(&w, " live allocations and ");
    put_u64(&w, f->max_blocks);
    put_str(&w,
            " free blocks); free buffers earlier, merge small buffers, or give the pool a larger "
            "block table (max_blocks)");
    return finish(&w);
  }
  put_str(&w, "): ");
  put_u64(&w, f->free_bytes);
  put_str(&w, " bytes free, largest free block ");
  put_u64(&w, f->largest_free_block);
  put_str(&w, " bytes, capacity ");
  put_u64(&w, f->capacity);
  put_str(&w, " bytes; free buffers earlier, use smaller tiles, or raise the target's VTCM capacity");
  return finish(&w);
}
