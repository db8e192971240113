// The VTCM pool and the runtime ABI table (backend_api.h).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kiln/runtime/backend_api.h"
#include "kiln/runtime/error.h"
#include "runtime/runtime_abi.h"
#include "runtime/vtcm_pool.h"

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
              "block " + std::to_string(failure.largest_free_block) +
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

TEST(TirRuntimeAbi, TableComesFromTheHeader) {
  std::vector<std::string> names;
  for (const AbiSymbol& s : runtime_abi_symbols()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"HexagonBackendAllocateVTCM", "HexagonBackendFreeVTCM",
                                             "KilnBackendAllocWorkspace", "KilnBackendFreeWorkspace",
                                             "KilnBackendSetLastError", "KilnBackendGetLastError",
                                             "KilnBackendPrependLastError"}));
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
