// The VTCM pool, its C core (shared with the Hexagon runtime) and the
// runtime ABI table (backend_api.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <tuple>

#include "kiln/runtime/backend_api.h"
#include "kiln/runtime/error.h"
#include "runtime/runtime_abi.h"
#include "runtime/vtcm_pool.h"
#include "runtime/vtcm_pool_core.h"

namespace kiln {
namespace {

uint64_t offset(const VtcmPool& pool, void* base, void* p) {
  return static_cast<uint64_t>(static_cast<uint8_t*>(p) - static_cast<uint8_t*>(base));
}

TEST(TirVtcmPool, AlignsAndCountsBytes) {
  VtcmPool pool(1 << 16);
  void* a = pool.allocate(100, 128);
  void* b = pool.allocate(3, 2048);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 128, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 2048, 0u);
  std::memset(a, 1, 100);  // the memory is really there
  std::memset(b, 2, 3);
  VtcmPoolStats s = pool.stats();
  EXPECT_EQ(s.used_bytes, 103u);
  EXPECT_EQ(s.free_bytes, (1u << 16) - 103u);
  EXPECT_EQ(s.live_allocations, 2u);
  EXPECT_TRUE(pool.free(a));
  EXPECT_TRUE(pool.free(b));
  EXPECT_FALSE(pool.free(a)) << "double free is reported, not done";
  int x;
  EXPECT_FALSE(pool.free(&x));
  s = pool.stats();
  EXPECT_EQ(s.used_bytes, 0u);
  EXPECT_EQ(s.high_water_bytes, 103u);
  EXPECT_EQ(s.free_blocks, 1u) << "freeing everything coalesces back to one block";
  EXPECT_EQ(s.largest_free_block, 1u << 16);
  EXPECT_DOUBLE_EQ(s.fragmentation(), 0.0);
}

TEST(TirVtcmPool, BestFitPicksTheSmallestHole) {
  VtcmPool pool(4096);
  void* base = pool.allocate(1, 1);  // offset 0 (the pool base is page aligned)
  ASSERT_EQ(offset(pool, base, base), 0u);
  pool.free(base);
  // Carve: [0,1000) a, [1000,1100) b, [1100,1600) c, [1600,1700) d, rest free.
  void* a = pool.allocate(1000, 1);
  void* b = pool.allocate(100, 1);
  void* c = pool.allocate(500, 1);
  void* d = pool.allocate(100, 1);
  ASSERT_TRUE(a && b && c && d);
  pool.free(a);  // hole of 1000 at 0
  pool.free(c);  // hole of 500 at 1100
  // 400 bytes fit both holes and the tail (2396); best fit is the 500 hole.
  void* e = pool.allocate(400, 1);
  EXPECT_EQ(offset(pool, base, e), 1100u);
  // 900 fits only the 1000 hole and the tail; the hole is smaller.
  void* f = pool.allocate(900, 1);
  EXPECT_EQ(offset(pool, base, f), 0u);
  VtcmPoolStats s = pool.stats();
  // Free: [900,1000)=100, [1500,1600)=100, [1700,4096)=2396.
  EXPECT_EQ(s.free_blocks, 3u);
  EXPECT_EQ(s.largest_free_block, 2396u);
  EXPECT_NEAR(s.fragmentation(), 1.0 - 2396.0 / 2596.0, 1e-12);
  for (void* p : {b, d, e, f}) EXPECT_TRUE(pool.free(p));
  EXPECT_EQ(pool.stats().free_blocks, 1u);
}

TEST(TirVtcmPool, ExhaustionIsAStructuredError) {
  VtcmPool pool(8192);
  void* a = pool.allocate(3000, 128);
  void* b = pool.allocate(3000, 128);
  ASSERT_TRUE(a && b);
  pool.free(a);
  // 5192 bytes free in total, but the largest block is 3072 (after b's end).
  VtcmAllocFailure failure;
  EXPECT_EQ(pool.allocate(4000, 128, &failure), nullptr);
  EXPECT_EQ(failure.requested, 4000u);
  EXPECT_EQ(failure.free_bytes, 8192u - 3000u);
  EXPECT_LT(failure.largest_free_block, 4000u);
  EXPECT_EQ(failure.capacity, 8192u);
  try {
    pool.allocate_or_throw(4000, 128);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "VTCM pool cannot allocate 4000 bytes (alignment 128): 5192 bytes free, largest free "
              "block " +
                  std::to_string(failure.largest_free_block) +
                  " bytes, capacity 8192 bytes; free buffers earlier, use smaller tiles, or raise "
                  "the target's VTCM capacity");
  }
  EXPECT_EQ(pool.stats().failed_allocations, 2u);
  EXPECT_EQ(pool.allocate(16, 3, &failure), nullptr);
  EXPECT_NE(failure.message().find("not a power of two"), std::string::npos);
}

TEST(TirVtcmPool, RandomTrafficKeepsInvariants) {
  // Against a simple model: live blocks never overlap, bytes add up, and
  // everything freed coalesces to one block.
  VtcmPool pool(1 << 20);
  std::mt19937 rng(7);
  std::vector<std::pair<uint8_t*, uint64_t>> live;
  uint64_t used = 0;
  for (int step = 0; step < 4000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      uint64_t n = 1 + rng() % 20000;
      uint64_t align = uint64_t(1) << (rng() % 12);
      auto* p = static_cast<uint8_t*>(pool.allocate(n, align));
      if (!p) continue;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
      for (auto& [q, m] : live) ASSERT_TRUE(p + n <= q || q + m <= p) << "overlap at step " << step;
      live.push_back({p, n});
      used += n;
    } else {
      size_t i = rng() % live.size();
      ASSERT_TRUE(pool.free(live[i].first));
      used -= live[i].second;
      live.erase(live.begin() + long(i));
    }
    ASSERT_EQ(pool.stats().used_bytes, used);
  }
  for (auto& [p, n] : live) pool.free(p);
  EXPECT_EQ(pool.stats().free_blocks, 1u);
  EXPECT_GT(pool.stats().high_water_bytes, 500000u);
}

// ---- the C core, called directly as the Hexagon runtime does.

// A core pool over page-aligned host memory with a block table of max_blocks.
struct CorePool {
  CorePool(uint64_t capacity, uint32_t max_blocks)
      : memory(static_cast<uint8_t*>(std::aligned_alloc(4096, (capacity + 4095) / 4096 * 4096)), std::free),
        table(2 * size_t{max_blocks}) {
    kiln_vtcm_pool_init(&pool, memory.get(), capacity, table.data(), max_blocks);
  }
  void* allocate(uint64_t nbytes, uint64_t alignment, kiln_vtcm_failure* failure = nullptr) {
    return kiln_vtcm_pool_allocate(&pool, nbytes, alignment, failure);
  }
  uint64_t offset(const void* p) const {
    return static_cast<uint64_t>(static_cast<const uint8_t*>(p) - memory.get());
  }
  kiln_vtcm_stats stats() const {
    kiln_vtcm_stats s;
    kiln_vtcm_pool_stats(&pool, &s);
    return s;
  }

  std::unique_ptr<uint8_t, void (*)(void*)> memory;
  std::vector<kiln_vtcm_block> table;
  kiln_vtcm_pool pool;
};

std::string failure_message(const kiln_vtcm_failure& f) {
  char buf[512];
  size_t n = kiln_vtcm_failure_message(&f, buf, sizeof buf);
  EXPECT_LT(n, sizeof buf);
  return buf;
}

std::string stats_message(const kiln_vtcm_stats& s) {
  char buf[512];
  size_t n = kiln_vtcm_stats_message(&s, buf, sizeof buf);
  EXPECT_EQ(n, std::strlen(buf));
  return buf;
}

TEST(TirVtcmPoolCore, BlockTableFullIsAStructuredFailure) {
  CorePool c(4096, 4);
  for (int i = 0; i < 4; ++i) ASSERT_NE(c.allocate(16, 16), nullptr);
  kiln_vtcm_failure f;
  EXPECT_EQ(c.allocate(16, 16, &f), nullptr) << "a fifth live allocation needs a fifth table entry";
  EXPECT_EQ(f.max_blocks, 4u);
  EXPECT_EQ(f.requested, 16u);
  EXPECT_EQ(f.free_bytes, 4096u - 64u);
  EXPECT_EQ(f.largest_free_block, 4096u - 64u);
  EXPECT_EQ(f.capacity, 4096u);
  EXPECT_EQ(failure_message(f),
            "VTCM pool cannot allocate 16 bytes (alignment 16): its block table is full (at most 4 live "
            "allocations and 4 free blocks); free buffers earlier, merge small buffers, or give the pool a "
            "larger block table (max_blocks)");
  // A request that would not fit anyway is reported as a lack of space.
  EXPECT_EQ(c.allocate(5000, 16, &f), nullptr);
  EXPECT_EQ(f.max_blocks, 0u);
  EXPECT_EQ(c.stats().failed_allocations, 2u);
  EXPECT_EQ(c.stats().live_allocations, 4u);
  ASSERT_EQ(kiln_vtcm_pool_free(&c.pool, c.memory.get() + 16), 1);
  EXPECT_NE(c.allocate(16, 16, &f), nullptr) << "a freed entry is used again";

  // The free list fills too: splitting the tail into alignment padding and a
  // remainder would make a third free block in a table of two.
  CorePool d(4096, 2);
  void* a = d.allocate(1, 1);    // [0, 1)
  void* b = d.allocate(199, 1);  // [1, 200)
  ASSERT_TRUE(a && b);
  ASSERT_EQ(kiln_vtcm_pool_free(&d.pool, a), 1);  // free: [0, 1), [200, 4096)
  EXPECT_EQ(d.allocate(10, 64, &f), nullptr);
  EXPECT_EQ(f.max_blocks, 2u);
  void* e = d.allocate(10, 8);  // 200 is 8-aligned: no padding, still two free blocks
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(d.offset(e), 200u);
  EXPECT_EQ(d.stats().free_blocks, 2u);

  // The host pool takes the same limit and gives the same message.
  VtcmPool pool(4096, 1);
  ASSERT_NE(pool.allocate(8, 8), nullptr);
  try {
    pool.allocate_or_throw(8, 8);
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("block table is full (at most 1 live allocations"),
              std::string::npos)
        << err.what();
  }
}

TEST(TirVtcmPoolCore, FormatsFiguresLikeTheHostPool) {
  kiln_vtcm_stats s{4096, 1600, 2496, 2596, 2396, 4, 6, 1, 3};
  EXPECT_EQ(stats_message(s),
            "capacity 4096 B, used 1600 B, high-water 2596 B, free 2496 B in 3 block(s), largest free block "
            "2396 B, fragmentation 0.040, allocations 6 (1 failed, 4 live)");
  VtcmPoolStats host;
  host.capacity = 4096, host.used_bytes = 1600, host.free_bytes = 2496, host.high_water_bytes = 2596;
  host.largest_free_block = 2396, host.live_allocations = 4, host.total_allocations = 6;
  host.failed_allocations = 1, host.free_blocks = 3;
  EXPECT_EQ(host.str(), stats_message(s));

  // Decimal figures: 0, one digit, carries, and the largest uint64_t.
  const uint64_t max = UINT64_MAX;
  kiln_vtcm_stats big{max, 0, 9, 10, 1, 100, 999, 1000, 10000000000000000000ull};
  EXPECT_EQ(stats_message(big),
            "capacity 18446744073709551615 B, used 0 B, high-water 10 B, free 9 B in 10000000000000000000 "
            "block(s), largest free block 1 B, fragmentation 0.889, allocations 999 (1000 failed, 100 live)");

  // Fragmentation (free - largest) / free in thousandths, rounded half up, exactly.
  struct Case {
    uint64_t free_bytes, largest;
    const char* expected;
  };
  const uint64_t unit = uint64_t{1} << 50;  // 2000 * unit still fits in 64 bits
  for (const Case& c : std::vector<Case>{
           {0, 0, "0.000"},
           {2000, 2000, "0.000"},
           {3, 2, "0.333"},
           {3, 1, "0.667"},
           {2000, 1999, "0.001"},  // 0.0005: half up
           {2000, 1991, "0.005"},  // 0.0045: half up (printf's %.3f of the double says 0.004)
           {2000, 1, "1.000"},     // 0.9995
           {2001, 1, "1.000"},
           {max, 1, "1.000"},
           {max, max / 2, "0.500"},
           {2000 * unit, 1991 * unit, "0.005"},
           {2000 * unit, 1999 * unit + 1, "0.000"},  // just below 0.0005
           {max, max - max / 2000, "0.000"},         // just below 0.0005 near the top of the range
           {10, 20, "0.000"},                        // inconsistent figures stay harmless
       }) {
    kiln_vtcm_stats t{};
    t.free_bytes = c.free_bytes;
    t.largest_free_block = c.largest;
    std::string m = stats_message(t);
    size_t at = m.find("fragmentation ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(m.substr(at + 14, m.find(',', at) - at - 14), c.expected) << c.free_bytes << " " << c.largest;
  }

  // snprintf-like: the length it wanted, truncated and terminated.
  kiln_vtcm_failure f{4000, 3, 0, 0, 0, 0};
  const std::string full = "VTCM allocation of 4000 bytes has alignment 3, which is not a power of two";
  EXPECT_EQ(failure_message(f), full);
  EXPECT_EQ(kiln_vtcm_failure_message(&f, nullptr, 0), full.size());
  char small[11];
  std::memset(small, 'x', sizeof small);
  EXPECT_EQ(kiln_vtcm_failure_message(&f, small, 10), full.size());
  EXPECT_STREQ(small, "VTCM allo");
  EXPECT_EQ(small[10], 'x') << "nothing written past size";
  char one[1] = {'x'};
  EXPECT_EQ(kiln_vtcm_stats_message(&s, one, 1), stats_message(s).size());
  EXPECT_EQ(one[0], '\0');
  EXPECT_EQ(kiln_vtcm_failure_message(nullptr, nullptr, 0),
            std::string("VTCM allocation of 0 bytes has alignment 0, which is not a power of two").size());

  // The capacity message, character for character what snprintf would print.
  kiln_vtcm_failure g{4000, 128, 5192, 3072, 8192, 0};
  char expected[512];
  std::snprintf(
      expected, sizeof expected,
      "VTCM pool cannot allocate %d bytes (alignment %d): %d bytes free, largest free block %d bytes, "
      "capacity %d bytes; free buffers earlier, use smaller tiles, or raise the target's VTCM capacity",
      4000, 128, 5192, 3072, 8192);
  EXPECT_EQ(failure_message(g), expected);
}

TEST(TirVtcmPoolCore, RandomTrafficMatchesAModel) {
  // The model keeps only the live blocks; the free blocks are the gaps
  // between them, so coalescing is implied. Every step compares the core's
  // lists and figures with it, and predicts each placement and failure.
  const uint64_t capacity = 1 << 16;
  const uint32_t max_blocks = 40;
  CorePool c(capacity, max_blocks);
  const uint64_t base = reinterpret_cast<uintptr_t>(c.memory.get());
  std::map<uint64_t, uint64_t> live;  // offset -> size
  uint64_t used = 0, high_water = 0, total = 0, failed = 0;
  std::mt19937 rng(11);
  auto gaps = [&] {
    std::vector<kiln_vtcm_block> g;
    uint64_t at = 0;
    for (auto [off, size] : live) {
      if (off > at) g.push_back({at, off - at});
      at = off + size;
    }
    if (at < capacity) g.push_back({at, capacity - at});
    return g;
  };
  auto check_state = [&](int step) {
    std::vector<kiln_vtcm_block> g = gaps();
    ASSERT_EQ(c.pool.free_count, g.size()) << "step " << step;
    uint64_t largest = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      ASSERT_EQ(c.pool.free_list[i].offset, g[i].offset) << "step " << step;
      ASSERT_EQ(c.pool.free_list[i].size, g[i].size) << "step " << step;
      largest = std::max(largest, g[i].size);
    }
    ASSERT_EQ(c.pool.used_count, live.size()) << "step " << step;
    size_t i = 0;
    for (auto [off, size] : live) {
      ASSERT_EQ(c.pool.used_list[i].offset, off) << "step " << step;
      ASSERT_EQ(c.pool.used_list[i].size, size) << "step " << step;
      ++i;
    }
    kiln_vtcm_stats s = c.stats();
    ASSERT_EQ(s.used_bytes, used);
    ASSERT_EQ(s.free_bytes, capacity - used);
    ASSERT_EQ(s.high_water_bytes, high_water);
    ASSERT_EQ(s.largest_free_block, largest);
    ASSERT_EQ(s.total_allocations, total);
    ASSERT_EQ(s.failed_allocations, failed);
  };
  int table_full = 0, no_space = 0, bad_alignment = 0;
  for (int step = 0; step < 20000; ++step) {
    const unsigned r = rng() % 10;
    if (r < 6 || live.empty()) {
      // Phases of small requests (the block table fills) and large ones (the space runs out).
      const bool small_phase = (step / 2000) % 2 == 0;
      uint64_t n = rng() % 16 == 0 ? 0 : 1 + rng() % (small_phase ? 300 : 6000);
      uint64_t align = rng() % 32 == 0 ? 3 + 2 * (rng() % 50) : uint64_t{1} << (rng() % 13);
      // The model's best fit: the smallest gap that holds the request, lowest address on a tie.
      const uint64_t need = n == 0 ? 1 : n;
      std::vector<kiln_vtcm_block> g = gaps();
      int best = -1;
      uint64_t best_pad = 0;
      bool power_of_two = (align & (align - 1)) == 0;
      for (size_t i = 0; power_of_two && i < g.size(); ++i) {
        uint64_t pad = (align - ((base + g[i].offset) % align)) % align;
        if (pad + need > g[i].size) continue;
        if (best < 0 || g[i].size < g[size_t(best)].size) best = int(i), best_pad = pad;
      }
      bool full = false;
      if (best >= 0) {
        const kiln_vtcm_block& b = g[size_t(best)];
        size_t new_free = g.size() - 1 + (best_pad > 0) + (b.size - best_pad - need > 0);
        full = live.size() >= max_blocks || new_free > max_blocks;
      }
      kiln_vtcm_failure f;
      void* p = c.allocate(n, align, &f);
      if (best < 0 || full) {
        ASSERT_EQ(p, nullptr) << "step " << step;
        ++failed;
        EXPECT_EQ(f.requested, need);
        EXPECT_EQ(f.max_blocks, full ? max_blocks : 0u) << "step " << step;
        EXPECT_EQ(f.free_bytes, capacity - used);
        (!power_of_two ? bad_alignment : full ? table_full : no_space)++;
      } else {
        ASSERT_NE(p, nullptr) << "step " << step;
        uint64_t off = c.offset(p);
        ASSERT_EQ(off, g[size_t(best)].offset + best_pad) << "step " << step;
        ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
        live[off] = need;
        used += need;
        high_water = std::max(high_water, used);
        ++total;
      }
    } else if (r < 9) {
      auto it = live.begin();
      std::advance(it, long(rng() % live.size()));
      ASSERT_EQ(kiln_vtcm_pool_free(&c.pool, c.memory.get() + it->first), 1) << "step " << step;
      used -= it->second;
      live.erase(it);
    } else {
      // A pointer that is not a live block: refused, nothing changes.
      uint64_t off = rng() % (capacity + 64);
      bool is_live = live.count(off) != 0;
      void* p = reinterpret_cast<void*>(base + off);
      ASSERT_EQ(kiln_vtcm_pool_owns(&c.pool, p), is_live ? 1 : 0);
      if (is_live) continue;
      ASSERT_EQ(kiln_vtcm_pool_free(&c.pool, p), 0) << "step " << step;
    }
    check_state(step);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(table_full, 10) << "the traffic reaches the block table's limit";
  EXPECT_GT(no_space, 10) << "the traffic runs out of space";
  EXPECT_GT(bad_alignment, 10);
  for (auto [off, size] : live) ASSERT_EQ(kiln_vtcm_pool_free(&c.pool, c.memory.get() + off), 1);
  EXPECT_EQ(c.stats().free_blocks, 1u);
  EXPECT_EQ(c.stats().largest_free_block, capacity);
}

TEST(TirVtcmPoolCore, RefusesBadInputWithoutCrashing) {
  CorePool c(4096, 8);
  auto* p = static_cast<uint8_t*>(c.allocate(100, 64));
  ASSERT_NE(p, nullptr);
  int foreign = 0;
  const uintptr_t base = reinterpret_cast<uintptr_t>(c.memory.get());
  for (void* q : {static_cast<void*>(nullptr), static_cast<void*>(p + 1), static_cast<void*>(p + 100),
                  static_cast<void*>(&foreign), reinterpret_cast<void*>(base - 1),
                  reinterpret_cast<void*>(base + 4096), reinterpret_cast<void*>(base + 100000)}) {
    EXPECT_EQ(kiln_vtcm_pool_free(&c.pool, q), 0) << q;
    EXPECT_EQ(kiln_vtcm_pool_owns(&c.pool, q), 0) << q;
  }
  EXPECT_EQ(kiln_vtcm_pool_owns(&c.pool, p), 1);
  EXPECT_EQ(c.stats().used_bytes, 100u) << "refused frees change nothing";
  EXPECT_EQ(c.stats().live_allocations, 1u);

  // Hostile requests fail cleanly instead of wrapping around.
  kiln_vtcm_failure f;
  EXPECT_EQ(c.allocate(UINT64_MAX, 1, &f), nullptr);
  EXPECT_EQ(c.allocate(UINT64_MAX - 10, 64, &f), nullptr);
  EXPECT_EQ(c.allocate(16, uint64_t{1} << 63, &f), nullptr);
  EXPECT_EQ(f.max_blocks, 0u);
  EXPECT_EQ(c.allocate(16, 0, &f), nullptr);
  EXPECT_NE(failure_message(f).find("alignment 0, which is not a power of two"), std::string::npos);
  void* z = c.allocate(0, 1);
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(c.stats().used_bytes, 101u) << "a zero-byte request gets one byte";

  EXPECT_EQ(kiln_vtcm_pool_free(&c.pool, p), 1);
  EXPECT_EQ(kiln_vtcm_pool_free(&c.pool, p), 0) << "double free is refused";

  // A NULL pool, NULL outputs and NULL inputs.
  EXPECT_EQ(kiln_vtcm_pool_free(nullptr, z), 0);
  EXPECT_EQ(kiln_vtcm_pool_owns(nullptr, z), 0);
  EXPECT_EQ(kiln_vtcm_pool_allocate(nullptr, 8, 8, &f), nullptr);
  EXPECT_EQ(f.capacity, 0u);
  EXPECT_EQ(kiln_vtcm_pool_allocate(nullptr, 8, 8, nullptr), nullptr);
  kiln_vtcm_stats s;
  kiln_vtcm_pool_stats(nullptr, &s);
  EXPECT_EQ(s.capacity, 0u);
  kiln_vtcm_pool_stats(&c.pool, nullptr);
  kiln_vtcm_pool_init(nullptr, c.memory.get(), 4096, c.table.data(), 8);
  EXPECT_EQ(kiln_vtcm_stats_message(nullptr, nullptr, 0), stats_message(kiln_vtcm_stats{}).size());

  // No memory or no block table: a pool that holds nothing.
  kiln_vtcm_pool empty;
  kiln_vtcm_block table[2];
  for (auto [mem, blocks, max] : {std::tuple<void*, kiln_vtcm_block*, uint32_t>{nullptr, table, 1},
                                  {c.memory.get(), nullptr, 1},
                                  {c.memory.get(), table, 0}}) {
    kiln_vtcm_pool_init(&empty, mem, 4096, blocks, max);
    EXPECT_EQ(kiln_vtcm_pool_allocate(&empty, 1, 1, &f), nullptr);
    EXPECT_EQ(f.capacity, 0u);
    EXPECT_EQ(kiln_vtcm_pool_free(&empty, c.memory.get()), 0);
  }

  VtcmPool pool(4096);
  EXPECT_FALSE(pool.free(nullptr));
  EXPECT_FALSE(pool.owns(nullptr));
}

TEST(TirRuntimeAbi, TableComesFromTheHeader) {
  std::vector<std::string> names;
  for (const AbiSymbol& s : runtime_abi_symbols()) names.push_back(s.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "HexagonBackendAllocateVTCM", "HexagonBackendFreeVTCM", "KilnBackendAllocWorkspace",
                "KilnBackendFreeWorkspace", "KilnBackendSetLastError", "KilnBackendGetLastError",
                "KilnBackendPrependLastError", "KilnBackendIndexError", "KilnBackendCheckFailed",
                "KilnBackendGatherIndexError", "KilnBackendIndexValueError", "KilnBackendParallelFor"}));
  EXPECT_EQ(find_runtime_symbol("HexagonBackendFreeVTCM")->address,
            reinterpret_cast<void*>(&HexagonBackendFreeVTCM));
  EXPECT_EQ(find_runtime_symbol("HexagonBackendAllocateVtcm"), nullptr);
}

TEST(TirRuntimeAbi, CFunctionsUseTheCurrentPoolAndSetErrors) {
  VtcmPool pool(4096);
  ScopedVtcmPool bind(pool);
  void* p = HexagonBackendAllocateVTCM(1024, 128);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(pool.owns(p));
  EXPECT_EQ(HexagonBackendAllocateVTCM(8192, 128), nullptr);
  EXPECT_NE(std::string(KilnBackendGetLastError()).find("cannot allocate 8192 bytes"), std::string::npos);
  EXPECT_EQ(HexagonBackendFreeVTCM(p), 0);
  EXPECT_EQ(HexagonBackendFreeVTCM(p), -1);
  EXPECT_NE(std::string(KilnBackendGetLastError()).find("not allocated from the current VTCM pool"),
            std::string::npos);
  void* w = KilnBackendAllocWorkspace(100, 64);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 64, 0u);
  EXPECT_EQ(KilnBackendFreeWorkspace(w), 0);
  EXPECT_EQ(KilnBackendFreeWorkspace(w), -1);
  KilnBackendSetLastError("custom");
  EXPECT_STREQ(KilnBackendGetLastError(), "custom");
  EXPECT_EQ(KilnBackendPrependLastError("buffer %A"), -1);
  EXPECT_STREQ(KilnBackendGetLastError(), "buffer %A: custom");
}

}  // namespace
}  // namespace kiln
