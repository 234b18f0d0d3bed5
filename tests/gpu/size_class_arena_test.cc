// SizeClassArena (device_heaps.h), the allocator under the general layout's
// value and key-record heaps, over ordinary host memory: it needs no GPU, so
// these run everywhere. What they pin down: memory is handed out once until
// it comes back; frees are takeable only after Flush; a Take without growth
// never allocates a chunk and comes back short instead; the spare chunk
// lets such Takes go on; blocks are aligned to their class up to a cache
// line; and many threads taking at once get distinct
// memory (the submitting threads of write_plan.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <set>
#include <thread>
#include <vector>

#include "store/gpu/device_heaps.h"

namespace kvcg {
namespace {

using store::gpu::SizeClassArena;

struct Source {
  int allocated = 0, released = 0;
  SizeClassArena::ChunkSource Make() {
    return {[this](uint64_t bytes) -> uint64_t {
              ++allocated;
              return reinterpret_cast<uint64_t>(std::aligned_alloc(64, bytes));
            },
            [this](uint64_t base, uint64_t) {
              ++released;
              std::free(reinterpret_cast<void*>(base));
            }};
  }
};

constexpr uint32_t kClass = 7;  // 128-byte blocks

TEST(SizeClassArena, ClassOfIsTheSmallestPowerOfTwoAtLeastSixteen) {
  EXPECT_EQ(SizeClassArena::ClassOf(1), 4u);
  EXPECT_EQ(SizeClassArena::ClassOf(16), 4u);
  EXPECT_EQ(SizeClassArena::ClassOf(17), 5u);
  EXPECT_EQ(SizeClassArena::ClassOf(72), 7u);
  EXPECT_EQ(SizeClassArena::ClassOf(128), 7u);
  EXPECT_EQ(SizeClassArena::ClassOf(129), 8u);
}

TEST(SizeClassArena, WithoutGrowthNothingIsAllocated) {
  Source src;
  SizeClassArena a(src.Make(), 4096, 1 << 20);
  uint64_t out[4];
  EXPECT_EQ(a.Take(kClass, 4, out, /*may_grow=*/false), 0u);
  EXPECT_EQ(src.allocated, 0);
  EXPECT_EQ(a.Take(kClass, 4, out, /*may_grow=*/true), 4u);
  EXPECT_EQ(src.allocated, 1);
}

TEST(SizeClassArena, BlocksAreDistinctAndReusedOnlyAfterFlush) {
  Source src;
  SizeClassArena a(src.Make(), 4096, 1 << 20);
  std::vector<uint64_t> got(40);
  ASSERT_EQ(a.Take(kClass, got.size(), got.data(), true), got.size());
  std::set<uint64_t> seen(got.begin(), got.end());
  EXPECT_EQ(seen.size(), got.size());
  for (uint64_t p : got) EXPECT_EQ(p % 64, 0u);

  a.Free(got[3], kClass);
  a.Free(got[5], kClass);
  uint64_t next[2];
  ASSERT_EQ(a.Take(kClass, 2, next, true), 2u);
  EXPECT_EQ(seen.count(next[0]) + seen.count(next[1]), 0u) << "a queued free was taken before Flush";
  a.Flush();
  ASSERT_EQ(a.Take(kClass, 2, next, false), 2u);
  EXPECT_EQ(std::set<uint64_t>(next, next + 2), (std::set<uint64_t>{got[3], got[5]}));
}

// Blocks of 64 bytes or more start a cache line whatever was carved before
// them (a 64-byte value is then one line for its readers), smaller ones their
// own size's boundary.
TEST(SizeClassArena, BlocksAreAlignedToTheirClassUpToACacheLine) {
  Source src;
  SizeClassArena a(src.Make(), 4096, 1 << 20);
  uint64_t small = 0, line = 0, mid = 0, big = 0;
  ASSERT_EQ(a.Take(4, 1, &small, true), 1u);  // 16 bytes
  ASSERT_EQ(a.Take(6, 1, &line, true), 1u);   // 64 bytes, after the 16
  EXPECT_EQ(line % 64, 0u);
  EXPECT_EQ(line - small, 64u) << "the gap is more than the alignment needs";
  ASSERT_EQ(a.Take(4, 1, &small, true), 1u);
  ASSERT_EQ(a.Take(5, 1, &mid, true), 1u);    // 32 bytes, after a 16
  EXPECT_EQ(mid % 32, 0u);
  ASSERT_EQ(a.Take(4, 1, &small, true), 1u);
  ASSERT_EQ(a.Take(8, 1, &big, true), 1u);    // 256 bytes: a line is enough
  EXPECT_EQ(big % 64, 0u);
  EXPECT_EQ(big - small, 64u);
}

// ValueHeap::Fill (streaming stores from 64 bytes on, the last piece
// padded): every size lands whole, and nothing past the value's 16-byte
// round-up is written (a blob's block ends there at the earliest).
TEST(ValueHeapFill, WritesTheValueAndStaysInsideItsPaddedSize) {
  for (size_t size : {0, 1, 15, 16, 63, 64, 65, 72, 100, 127, 128, 129, 1000}) {
    std::vector<char> value(size);
    for (size_t i = 0; i < size; ++i) value[i] = char('a' + (i * 7 + size) % 26);
    alignas(64) char buf[1088];
    std::memset(buf, 0x5a, sizeof(buf));
    store::gpu::ValueHeap::Fill(reinterpret_cast<uint64_t*>(buf),
                                std::string_view(value.data(), size));
    store::gpu::ValueHeap::FillFence();
    EXPECT_EQ(std::string_view(buf, size), std::string_view(value.data(), size)) << size;
    const size_t padded = (size + 15) & ~size_t(15);
    for (size_t i = padded; i < sizeof(buf); ++i) {
      ASSERT_EQ(buf[i], 0x5a) << "byte " << i << " written for a value of " << size;
    }
  }
}

TEST(SizeClassArena, ReturnedBlocksComeBackWithoutFlush) {
  Source src;
  SizeClassArena a(src.Make(), 4096, 1 << 20);
  uint64_t got[3];
  ASSERT_EQ(a.Take(kClass, 3, got, true), 3u);
  a.Return(kClass, got, 3);
  uint64_t again[3];
  ASSERT_EQ(a.Take(kClass, 3, again, false), 3u);
  EXPECT_EQ(std::set<uint64_t>(again, again + 3), std::set<uint64_t>(got, got + 3));
}

TEST(SizeClassArena, SpareChunkServesTakesThatMayNotGrow) {
  Source src;
  SizeClassArena a(src.Make(), 4096, 1 << 20);  // 32 blocks of 128 per first chunk
  std::vector<uint64_t> got(20);
  ASSERT_EQ(a.Take(kClass, 20, got.data(), true), 20u);
  ASSERT_EQ(src.allocated, 1);
  a.Prepare();  // more than half used: a spare
  EXPECT_EQ(src.allocated, 2);
  a.Prepare();  // one spare at a time
  EXPECT_EQ(src.allocated, 2);
  std::vector<uint64_t> more(40);  // 12 left in the chunk, then the spare's
  EXPECT_EQ(a.Take(kClass, more.size(), more.data(), false), more.size());
  EXPECT_EQ(src.allocated, 2);
  std::set<uint64_t> all(got.begin(), got.end());
  all.insert(more.begin(), more.end());
  EXPECT_EQ(all.size(), got.size() + more.size());
}

TEST(SizeClassArena, ResetReleasesEveryChunk) {
  Source src;
  {
    SizeClassArena a(src.Make(), 4096, 1 << 20);
    std::vector<uint64_t> got(1000);
    ASSERT_EQ(a.Take(kClass, got.size(), got.data(), true), got.size());
    a.Reset();
    EXPECT_EQ(src.released, src.allocated);
    ASSERT_EQ(a.Take(kClass, 10, got.data(), true), 10u);
  }
  EXPECT_EQ(src.released, src.allocated) << "the destructor keeps a chunk";
}

TEST(SizeClassArena, ConcurrentTakesGetDistinctBlocks) {
  Source src;
  SizeClassArena a(src.Make(), 4 << 20, 4 << 20);  // 32,768 blocks of 128
  constexpr int kThreads = 8, kRounds = 200, kPer = 16;
  // Half of what the threads take comes from the free list, the rest is
  // carved from the bump range, with no chunk allocated meanwhile.
  std::vector<uint64_t> seed(kThreads * kRounds * kPer / 2);
  ASSERT_EQ(a.Take(kClass, seed.size(), seed.data(), true), seed.size());
  a.Return(kClass, seed.data(), seed.size());
  ASSERT_EQ(src.allocated, 1);
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t buf[kPer];
      for (int r = 0; r < kRounds; ++r) {
        size_t n = 0;
        while (n == 0) n = a.Take(kClass, kPer, buf, false);
        got[t].insert(got[t].end(), buf, buf + n);
      }
    });
  }
  // The owner frees and flushes meanwhile (memory nobody else holds).
  std::vector<uint64_t> own(64);
  ASSERT_EQ(a.Take(4, own.size(), own.data(), true), own.size());
  for (int r = 0; r < 100; ++r) {
    for (uint64_t p : own) a.Free(p, 4);
    a.Flush();
    ASSERT_EQ(a.Take(4, own.size(), own.data(), true), own.size());
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(src.allocated, 1);
  std::set<uint64_t> all;
  size_t total = 0;
  for (const auto& v : got) {
    all.insert(v.begin(), v.end());
    total += v.size();
  }
  EXPECT_EQ(all.size(), total) << "a block was handed to two threads";
}

}  // namespace
}  // namespace kvcg
