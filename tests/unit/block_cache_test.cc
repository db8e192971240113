// The block cache (src/runtime/block_cache.h): kept blocks are handed out
// again for the same size, the limit evicts the oldest, and a compiled
// model's second run takes its output and workspaces from the cache and
// still matches the interpreter (a reused block holds the previous run's
// values, not zeros).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "cli_util.h"
#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "kiln/runtime/backend_api.h"
#include "random_args.h"
#include "runtime/block_cache.h"
#include "runtime/vm.h"

namespace kiln {
namespace {

void* block(size_t bytes) { return std::malloc(bytes); }

// Every element of `got` within 1e-4 of `want`'s (sums of 256 products).
void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i;
}

TEST(BlockCache, AKeptBlockServesTheSameSizeOnly) {
  BlockCache cache(1 << 20);
  void* a = block(8192);
  cache.keep(a, 8192);
  EXPECT_EQ(cache.stats().cached_bytes, 8192u);
  EXPECT_EQ(cache.take(4096), nullptr);
  EXPECT_EQ(cache.take(8192), a);
  EXPECT_EQ(cache.take(8192), nullptr);
  BlockCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.cached_bytes, 0u);
  std::free(a);
}

TEST(BlockCache, TheLimitEvictsTheOldestBlocks) {
  BlockCache cache(3 * 4096);
  void* first = block(4096);
  void* second = block(8192);
  void* third = block(8192);
  cache.keep(first, 4096);
  cache.keep(second, 8192);
  EXPECT_EQ(cache.stats().cached_bytes, 3u * 4096);
  cache.keep(third, 8192);  // frees `first`, then `second`
  EXPECT_EQ(cache.stats().cached_bytes, 8192u);
  EXPECT_EQ(cache.take(4096), nullptr);
  EXPECT_EQ(cache.take(8192), third);
  std::free(third);
}

TEST(BlockCache, ABlockOverTheLimitIsFreedAtOnce) {
  BlockCache cache(4096);
  cache.keep(block(8192), 8192);
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
  EXPECT_EQ(cache.take(8192), nullptr);
  BlockCache none(0);
  none.keep(block(4096), 4096);
  EXPECT_EQ(none.stats().cached_bytes, 0u);
}

TEST(BlockCache, BlocksOfEqualSizeAreAllKeptTheLastFirst) {
  BlockCache cache(1 << 20);
  void* a = block(4096);
  void* b = block(4096);
  cache.keep(a, 4096);
  cache.keep(b, 4096);
  EXPECT_EQ(cache.take(4096), b);
  EXPECT_EQ(cache.take(4096), a);
  std::free(a);
  std::free(b);
}

TEST(BlockCache, ALargeTensorsStorageIsReused) {
  void* first = nullptr;
  uint64_t hits = 0;
  {
    // Its storage may itself come from the cache (a block an earlier test
    // left there): the count starts after it.
    Tensor t = Tensor::empty({256, 1024}, DType::Float32);  // 1 MiB
    first = t.raw();
    hits = block_cache_stats().hits;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kTensorAlignment, 0u);
  }
  Tensor again = Tensor::empty({1024, 256}, DType::Float32);
  EXPECT_EQ(again.raw(), first);
  EXPECT_EQ(block_cache_stats().hits, hits + 1);
  // Small tensors go to the C heap.
  const BlockCacheStats before = block_cache_stats();
  { Tensor small = Tensor::empty({16}, DType::Float32); }
  Tensor small = Tensor::empty({16}, DType::Float32);
  EXPECT_EQ(block_cache_stats().hits, before.hits);
  EXPECT_EQ(block_cache_stats().misses, before.misses);
}

TEST(BlockCache, WorkspacesAreReusedAndStillChecked) {
  void* w = KilnBackendAllocWorkspace(1 << 20, 64);
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(KilnBackendFreeWorkspace(w), 0);
  void* again = KilnBackendAllocWorkspace(1 << 20, 64);
  EXPECT_EQ(again, w);
  // Past a page, an alignment is served uncached, and honoured.
  void* wide = KilnBackendAllocWorkspace(1 << 20, 1 << 16);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(wide) % (1 << 16), 0u);
  EXPECT_EQ(KilnBackendFreeWorkspace(wide), 0);
  EXPECT_EQ(KilnBackendFreeWorkspace(again), 0);
  // A block freed twice is still an error, not a second entry in the cache.
  EXPECT_EQ(KilnBackendFreeWorkspace(again), -1);
  EXPECT_NE(std::string(KilnBackendGetLastError()).find("not allocated as workspace"), std::string::npos);
}

TEST(BlockCache, AModelsSecondRunReusesItsOutputAndStillMatchesTheInterpreter) {
  // A 192 KiB output and packed matmul panels (the kernel's workspace).
  Module m = parse_module(R"(
def @main(%a: Tensor[(192, 256), float32], %b: Tensor[(256, 256), float32]) -> Tensor[(192, 256), float32] {
  %y = matmul(%a, %b)
  %r = nn.relu(%y)
  return %r
})",
                          "cache.kir");
  VirtualMachine vm(driver::compile_model(m, {}));
  std::vector<Tensor> first_args = testing::random_args(*m.find("main"), 1);
  std::vector<Tensor> second_args = testing::random_args(*m.find("main"), 2);
  const Tensor first_want = interpret(m, "main", first_args)[0];
  const Tensor second_want = interpret(m, "main", second_args)[0];
  expect_close(vm.run(first_args)[0], first_want);
  const BlockCacheStats before = block_cache_stats();
  Tensor y = vm.run(second_args)[0];
  EXPECT_GT(block_cache_stats().hits, before.hits);
  EXPECT_EQ(block_cache_stats().misses, before.misses);
  expect_close(y, second_want);
}

class BlockCacheCli : public testing::CliTest {
 protected:
  BlockCacheCli() : CliTest("block_cache_cli") {}
};

// The amount is read at the first large block; a malformed one is an error
// naming the variable, 0 turns the cache off.
TEST_F(BlockCacheCli, TheAmountIsCheckedAndZeroTurnsTheCacheOff) {
  std::string model = file("twice.kir", R"(
def @main(%x: Tensor[(128, 256), float32]) -> Tensor[(128, 256), float32] {
  %y = add(%x, %x)
  return %y
})");
  setenv("KILN_BLOCK_CACHE_BYTES", "lots", 1);
  testing::CliResult bad = testing::kiln_cmd("run " + model + " --random-inputs 1 --repeat 2");
  setenv("KILN_BLOCK_CACHE_BYTES", "0", 1);
  testing::CliResult off = testing::kiln_cmd("run " + model + " --random-inputs 1 --repeat 2");
  unsetenv("KILN_BLOCK_CACHE_BYTES");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("KILN_BLOCK_CACHE_BYTES='lots': expected a byte count"), std::string::npos)
      << bad.out;
  EXPECT_EQ(off.code, 0) << off.out;
}

}  // namespace
}  // namespace kiln
