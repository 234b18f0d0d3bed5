// The CPU backend's memory budget (src/store/cpu/cpu_budget.cc): shards
// charge writes to per-shard credits borrowed from a pool. These tests use
// limits large enough that shards keep credits (a hoard of at least 4 KiB),
// spread them with concurrent writers, and check what the design promises:
// memory never passes the limit; under noeviction a write is refused only
// when not even one more entry fits (credits are gathered first); an
// evicting cache stays within 1/64 of the limit (plus one entry per shard)
// of full; lowering the limit, or setting one on a store that had none or
// only a key limit, accounts for every credit handed out before.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kvcg/store.h"

namespace kvcg {
namespace {

constexpr uint32_t kShards = 64;
// CpuStore::kEntryOverhead (96) + 8-byte keys + 100-byte values.
constexpr uint64_t kEntryBytes = 96 + 8 + 100;
// limit / (shards * 64) = 4 KiB of hoard per shard, the least that keeps one.
constexpr uint64_t kLimit = uint64_t{16} << 20;
const std::string kValue(100, 'v');

std::string Key(uint64_t i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "k%07llu", static_cast<unsigned long long>(i));
  return buf;
}

std::unique_ptr<Store> Open(uint64_t limit, EvictionPolicy policy, uint64_t max_keys = 0) {
  Config c;
  c.backend = Backend::kCpu;
  c.active_expiry_hz = 0;
  c.cpu_shards = kShards;
  c.max_memory_bytes = limit;
  c.max_keys = max_keys;
  c.eviction = policy;
  std::unique_ptr<Store> s;
  EXPECT_TRUE(Store::Open(c, &s).ok());
  return s;
}

// `threads` writers each put `per_thread` new keys (ids from `first`);
// returns how many writes did not succeed (kCapacityExhausted).
uint64_t WriteConcurrently(Store& s, int threads, uint64_t per_thread, uint64_t first = 0) {
  std::atomic<uint64_t> refused{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (uint64_t i = 0; i < per_thread; i += 8) {
        Batch b;
        for (uint64_t j = i; j < i + 8 && j < per_thread; ++j) b.Put(Key(first + t * per_thread + j), kValue);
        Results r = s.Execute(std::move(b));
        for (size_t j = 0; j < r.size(); ++j) {
          if (r[j].code == Code::kCapacityExhausted) refused.fetch_add(1);
          else EXPECT_EQ(r[j].code, Code::kNotFound);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return refused.load();
}

// Puts new keys one at a time until one is refused; returns how many fit.
uint64_t FillUntilRefused(Store& s, uint64_t first) {
  for (uint64_t i = first;; ++i) {
    const Code c = s.Put(Key(i), kValue).code;
    if (c == Code::kCapacityExhausted) return i - first;
    EXPECT_EQ(c, Code::kNotFound);
    if (i - first > kLimit) return i - first;  // cannot happen: every entry costs bytes
  }
}

TEST(CpuBudget, NoEvictionRefusesOnlyWhenTheWholeLimitIsUsed) {
  auto s = Open(kLimit, EvictionPolicy::kNoEviction);
  // Half the limit from four threads: shards borrow refills and keep credits.
  WriteConcurrently(*s, 4, kLimit / 2 / kEntryBytes / 4);
  EXPECT_EQ(FillUntilRefused(*s, 1'000'000) > 0, true);
  EXPECT_LE(s->MemoryBytes(), kLimit);
  EXPECT_GT(s->MemoryBytes() + kEntryBytes, kLimit) << "refused while a whole entry's room was unused";
  EXPECT_EQ(s->MemoryBytes(), s->Size() * kEntryBytes);
  // A delete makes room for exactly one new key, whichever shard it lands in.
  ASSERT_EQ(s->Delete(Key(0)).code, Code::kOk);
  EXPECT_EQ(s->Put(Key(2'000'000), kValue).code, Code::kNotFound);
  EXPECT_EQ(s->Put(Key(2'000'001), kValue).code, Code::kCapacityExhausted);
}

TEST(CpuBudget, AnEvictingCacheStaysFullWithinItsHoards) {
  auto s = Open(kLimit, EvictionPolicy::kAllKeysLru);
  // Twice the limit's worth of new keys from four threads.
  EXPECT_EQ(WriteConcurrently(*s, 4, 2 * kLimit / kEntryBytes / 4), 0u);
  EXPECT_LE(s->MemoryBytes(), kLimit);
  EXPECT_GE(s->MemoryBytes(), kLimit - kLimit / 64 - kShards * kEntryBytes);
  EXPECT_EQ(s->MemoryBytes(), s->Size() * kEntryBytes);
  EXPECT_EQ(s->Keyspace().evicted_keys, 2 * kLimit / kEntryBytes / 4 * 4 - s->Size());
}

TEST(CpuBudget, LoweringTheLimitCountsEveryCredit) {
  auto s = Open(kLimit, EvictionPolicy::kAllKeysLru);
  WriteConcurrently(*s, 4, kLimit / 2 / kEntryBytes / 4);  // credits handed out
  const uint64_t lower = kLimit / 4;
  ASSERT_TRUE(s->SetMemoryLimit(lower, EvictionPolicy::kAllKeysLru).ok());
  EXPECT_LE(s->MemoryBytes(), lower) << "evicted down at once";
  EXPECT_EQ(WriteConcurrently(*s, 4, 2000, 5'000'000), 0u);
  EXPECT_LE(s->MemoryBytes(), lower);
  EXPECT_GE(s->MemoryBytes(), lower - lower / 64 - kShards * kEntryBytes);
  // Raised again under noeviction: all of it is usable.
  ASSERT_TRUE(s->SetMemoryLimit(kLimit, EvictionPolicy::kNoEviction).ok());
  FillUntilRefused(*s, 6'000'000);
  EXPECT_LE(s->MemoryBytes(), kLimit);
  EXPECT_GT(s->MemoryBytes() + kEntryBytes, kLimit);
}

TEST(CpuBudget, ALimitSetLaterCountsWhatWasWrittenBefore) {
  for (const uint64_t max_keys : {uint64_t{0}, uint64_t{1'000'000}}) {
    SCOPED_TRACE(max_keys == 0 ? "no limit before" : "only a key limit before");
    // With a key limit the store counts from the start, against no byte
    // limit: shards then hold large credits, which the new limit must undo.
    auto s = Open(0, EvictionPolicy::kNoEviction, max_keys);
    EXPECT_EQ(WriteConcurrently(*s, 4, 1000), 0u);
    ASSERT_TRUE(s->SetMemoryLimit(kLimit, EvictionPolicy::kNoEviction).ok());
    FillUntilRefused(*s, 1'000'000);
    EXPECT_LE(s->MemoryBytes(), kLimit);
    EXPECT_GT(s->MemoryBytes() + kEntryBytes, kLimit);
    // Lifted: anything fits again.
    ASSERT_TRUE(s->SetMemoryLimit(0, EvictionPolicy::kNoEviction).ok());
    EXPECT_EQ(s->Put(Key(9'000'000), kValue).code, Code::kNotFound);
  }
}

}  // namespace
}  // namespace kvcg
