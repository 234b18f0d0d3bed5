// Cache mode on the CPU backend (docs/EVICTION.md): under every evicting
// policy memory stays at or below the limit under sustained writes and
// every write succeeds; volatile policies evict only keys with an expire-at
// and refuse writes (kCapacityExhausted) once none is left; noeviction
// refuses; LRU evicts the least recently used, LFU keeps frequently read
// keys; SetMemoryLimit evicts down at once; KeyAccess reports idle time and
// LFU frequency without touching the key.
//
// The clock is injected (Config::clock), so idle times are exact.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kvcg/store.h"

namespace kvcg {
namespace {

std::atomic<uint64_t> g_now{0};
uint64_t FakeClock() { return g_now.load(std::memory_order_relaxed); }
constexpr uint64_t kStart = 1'700'000'000'000;
constexpr uint64_t kFarFuture = kStart + 1'000'000'000;

// CpuStore::kEntryOverhead (96) + 8-byte keys + 100-byte values.
constexpr uint64_t kEntryBytes = 96 + 8 + 100;

std::string Key(uint64_t i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "k%07llu", static_cast<unsigned long long>(i));
  return buf;
}
const std::string kValue(100, 'v');

std::unique_ptr<Store> Open(uint64_t limit, EvictionPolicy policy) {
  g_now = kStart;
  Config c;
  c.backend = Backend::kCpu;
  c.clock = &FakeClock;
  c.active_expiry_hz = 0;
  c.cpu_shards = 16;
  c.max_memory_bytes = limit;
  c.eviction = policy;
  std::unique_ptr<Store> s;
  EXPECT_TRUE(Store::Open(c, &s).ok());
  return s;
}

Code PutTtl(Store& s, const std::string& k, uint64_t expire_at) {
  Batch b;
  b.Put(k, kValue, expire_at);
  return s.Execute(std::move(b))[0].code;
}

struct PolicyCase {
  EvictionPolicy policy;
  bool volatile_keys;  // write keys with an expire-at (volatile policies need them)
};

class EveryPolicy : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(EveryPolicy, MemoryStaysUnderLimitUnderSustainedWrites) {
  const uint64_t limit = 500 * kEntryBytes;
  auto s = Open(limit, GetParam().policy);
  const uint64_t at = GetParam().volatile_keys ? kFarFuture : kNoExpiry;
  for (uint64_t i = 0; i < 5000; ++i) {
    g_now += 1;
    const Code c = PutTtl(*s, Key(i), at == kNoExpiry ? kNoExpiry : at + i);
    ASSERT_TRUE(c == Code::kNotFound || c == Code::kOk) << "write " << i << ": " << CodeName(c);
    ASSERT_LE(s->MemoryBytes(), limit) << "after write " << i;
    if (i % 3 == 0) s->Get(Key(i / 2));  // some reads too
  }
  EXPECT_GE(s->Size(), 450u);  // the store stays (nearly) full
  EXPECT_LE(s->Size(), 500u);
  const KeyspaceStats ks = s->Keyspace();
  EXPECT_EQ(ks.evicted_keys, 5000 - s->Size());
  EXPECT_EQ(ks.expired_keys, 0u);
  EXPECT_TRUE(s->Get(Key(4999)).code == Code::kOk);  // the last write is there
}

TEST_P(EveryPolicy, ConcurrentWritersStayUnderLimit) {
  const uint64_t limit = 2000 * kEntryBytes;
  auto s = Open(limit, GetParam().policy);
  g_now = kStart + 10;
  const uint64_t at = GetParam().volatile_keys ? kFarFuture : kNoExpiry;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 2000; ++i) {
        Batch b;
        for (int j = 0; j < 4; ++j) b.Put(Key(t * 1000000 + i * 4 + j), kValue, at);
        b.Get(Key(t * 1000000 + i));
        Results r = s->Execute(std::move(b));
        for (int j = 0; j < 4; ++j) {
          if (r[j].code != Code::kNotFound && r[j].code != Code::kOk) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(s->MemoryBytes(), limit);
  EXPECT_EQ(s->MemoryBytes(), s->Size() * kEntryBytes);
  EXPECT_EQ(s->Keyspace().evicted_keys, 4u * 2000 * 4 - s->Size());
}

INSTANTIATE_TEST_SUITE_P(Policies, EveryPolicy,
                         ::testing::Values(PolicyCase{EvictionPolicy::kAllKeysLru, false},
                                           PolicyCase{EvictionPolicy::kAllKeysLfu, false},
                                           PolicyCase{EvictionPolicy::kAllKeysRandom, false},
                                           PolicyCase{EvictionPolicy::kVolatileLru, true},
                                           PolicyCase{EvictionPolicy::kVolatileLfu, true},
                                           PolicyCase{EvictionPolicy::kVolatileRandom, true},
                                           PolicyCase{EvictionPolicy::kVolatileTtl, true}),
                         [](const auto& info) {
                           std::string n = EvictionPolicyName(info.param.policy);
                           for (char& ch : n) if (ch == '-') ch = '_';
                           return n;
                         });

class VolatilePolicy : public ::testing::TestWithParam<EvictionPolicy> {};

TEST_P(VolatilePolicy, EvictsOnlyVolatileKeysThenRefuses) {
  const uint64_t limit = 300 * kEntryBytes;
  auto s = Open(limit, GetParam());
  for (uint64_t i = 0; i < 200; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kNoExpiry), Code::kNotFound);
  for (uint64_t i = 200; i < 300; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kFarFuture + i), Code::kNotFound);
  // Full. Each new volatile key evicts an older volatile one.
  for (uint64_t i = 300; i < 350; ++i) {
    g_now += 1;
    ASSERT_EQ(PutTtl(*s, Key(i), kFarFuture + i), Code::kNotFound) << i;
  }
  EXPECT_EQ(s->Keyspace().evicted_keys, 50u);
  for (uint64_t i = 0; i < 200; ++i) EXPECT_EQ(s->Get(Key(i)).code, Code::kOk) << "persistent key " << i;
  // Persistent writes evict the volatile keys until none is left, then OOM.
  uint64_t i = 1000;
  for (; i < 1200; ++i) {
    if (PutTtl(*s, Key(i), kNoExpiry) == Code::kCapacityExhausted) break;
  }
  EXPECT_EQ(i, 1100u);  // exactly the 100 volatile keys made room
  EXPECT_EQ(s->Keyspace().volatile_keys, 0u);
  EXPECT_EQ(s->Keyspace().evicted_keys, 150u);
  EXPECT_EQ(s->Size(), 300u);
  for (uint64_t k = 0; k < 200; ++k) EXPECT_EQ(s->Get(Key(k)).code, Code::kOk) << "persistent key " << k;
  EXPECT_LE(s->MemoryBytes(), limit);
}

INSTANTIATE_TEST_SUITE_P(Volatile, VolatilePolicy,
                         ::testing::Values(EvictionPolicy::kVolatileLru, EvictionPolicy::kVolatileLfu,
                                           EvictionPolicy::kVolatileRandom, EvictionPolicy::kVolatileTtl),
                         [](const auto& info) {
                           std::string n = EvictionPolicyName(info.param);
                           for (char& ch : n) if (ch == '-') ch = '_';
                           return n;
                         });

TEST(Eviction, NoEvictionRefusesAndKeepsEverything) {
  const uint64_t limit = 100 * kEntryBytes;
  auto s = Open(limit, EvictionPolicy::kNoEviction);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kNoExpiry), Code::kNotFound);
  EXPECT_EQ(PutTtl(*s, Key(100), kNoExpiry), Code::kCapacityExhausted);
  EXPECT_EQ(s->Put(Key(0), std::string(200, 'x')).code, Code::kCapacityExhausted);  // growing a value
  EXPECT_EQ(s->Put(Key(0), "short").code, Code::kOk);  // shrinking one is fine
  EXPECT_EQ(s->Size(), 100u);
  EXPECT_EQ(s->Keyspace().evicted_keys, 0u);
}

TEST(Eviction, VolatileTtlEvictsNearestExpiryFirst) {
  auto s = Open(2000 * kEntryBytes, EvictionPolicy::kVolatileTtl);
  // Expire-ats in reverse order of insertion: key 1999 expires first.
  for (uint64_t i = 0; i < 2000; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kFarFuture - i * 1000), Code::kNotFound);
  for (uint64_t i = 5000; i < 5400; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kFarFuture), Code::kNotFound);
  // Approximate (the best of a shard's pool, like Redis's sampled pool): of
  // the 400 evicted, far more are among the 600 nearest than the 120 a
  // random choice would give, and few among the 1000 farthest.
  int nearest_gone = 0, farthest_gone = 0;
  for (uint64_t i = 1400; i < 2000; ++i) nearest_gone += s->Get(Key(i)).code == Code::kNotFound;
  for (uint64_t i = 0; i < 1000; ++i) farthest_gone += s->Get(Key(i)).code == Code::kNotFound;
  EXPECT_GE(nearest_gone, 280);
  EXPECT_LE(farthest_gone, 20);
}

TEST(Eviction, LruEvictsTheLeastRecentlyUsed) {
  auto s = Open(1000 * kEntryBytes, EvictionPolicy::kAllKeysLru);
  for (uint64_t i = 0; i < 4000; ++i) {
    g_now += 1;
    ASSERT_EQ(PutTtl(*s, Key(i), kNoExpiry), Code::kNotFound);
  }
  int newest = 0, oldest = 0;
  for (uint64_t i = 3500; i < 4000; ++i) newest += s->Get(Key(i)).code == Code::kOk;
  for (uint64_t i = 0; i < 2000; ++i) oldest += s->Get(Key(i)).code == Code::kOk;
  EXPECT_GE(newest, 490);  // nearly all of the 500 newest survive
  EXPECT_LE(oldest, 20);   // nearly none of the 2000 oldest
}

TEST(Eviction, LfuKeepsHotKeysThatLruWouldNot) {
  for (EvictionPolicy p : {EvictionPolicy::kAllKeysLfu, EvictionPolicy::kAllKeysLru}) {
    auto s = Open(1000 * kEntryBytes, p);
    for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kNoExpiry), Code::kNotFound);
    for (int round = 0; round < 50; ++round) {
      g_now += 1;
      for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(s->Get(Key(i)).code, Code::kOk);
    }
    // A scan of 3000 cold keys, each written once and read once.
    for (uint64_t i = 1000; i < 4000; ++i) {
      g_now += 1;
      ASSERT_EQ(PutTtl(*s, Key(i), kNoExpiry), Code::kNotFound);
      s->Get(Key(i));
    }
    int hot = 0;
    for (uint64_t i = 0; i < 100; ++i) hot += s->Get(Key(i)).code == Code::kOk;
    if (p == EvictionPolicy::kAllKeysLfu) {
      EXPECT_GE(hot, 95) << "LFU keeps the hot keys";
    } else {
      EXPECT_LE(hot, 5) << "LRU evicts them after a long enough scan";
    }
  }
}

TEST(Eviction, SetMemoryLimitEvictsDownAtOnce) {
  auto s = Open(0, EvictionPolicy::kNoEviction);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kNoExpiry), Code::kNotFound);
  ASSERT_TRUE(s->SetMemoryLimit(400 * kEntryBytes, EvictionPolicy::kAllKeysRandom).ok());
  EXPECT_EQ(s->Size(), 400u);
  EXPECT_EQ(s->MemoryBytes(), 400 * kEntryBytes);
  EXPECT_EQ(s->Keyspace().evicted_keys, 600u);
  // Now noeviction at that limit: a new key is refused; lifting it accepts.
  ASSERT_TRUE(s->SetMemoryLimit(400 * kEntryBytes, EvictionPolicy::kNoEviction).ok());
  EXPECT_EQ(PutTtl(*s, Key(5000), kNoExpiry), Code::kCapacityExhausted);
  ASSERT_TRUE(s->SetMemoryLimit(0, EvictionPolicy::kNoEviction).ok());
  EXPECT_EQ(PutTtl(*s, Key(5000), kNoExpiry), Code::kNotFound);
  // A limit set again later counts what is stored (accounting stayed on).
  ASSERT_TRUE(s->SetMemoryLimit(100 * kEntryBytes, EvictionPolicy::kAllKeysLru).ok());
  EXPECT_EQ(s->Size(), 100u);
}

TEST(Eviction, ValueLargerThanTheLimitIsRefusedWithoutEvicting) {
  auto s = Open(100 * kEntryBytes, EvictionPolicy::kAllKeysLru);
  for (uint64_t i = 0; i < 50; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kNoExpiry), Code::kNotFound);
  EXPECT_EQ(s->Put("big", std::string(200 * kEntryBytes, 'b')).code, Code::kCapacityExhausted);
  EXPECT_EQ(s->Size(), 50u);
  EXPECT_EQ(s->Keyspace().evicted_keys, 0u);
}

TEST(Eviction, ExpiredCandidatesCountAsExpiredNotEvicted) {
  auto s = Open(100 * kEntryBytes, EvictionPolicy::kVolatileTtl);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kStart + 10), Code::kNotFound);
  g_now = kStart + 20;  // all expired, none reclaimed yet
  for (uint64_t i = 100; i < 150; ++i) ASSERT_EQ(PutTtl(*s, Key(i), kFarFuture), Code::kNotFound);
  // Each write removed one key; expired candidates rank first (volatile-ttl)
  // and count as expired. A shard whose expired keys are all gone evicts
  // among its own live ones (eviction is per shard), so a few may be evicted.
  const KeyspaceStats ks = s->Keyspace();
  EXPECT_EQ(ks.evicted_keys + ks.expired_keys, 50u);
  EXPECT_GE(ks.expired_keys, 40u);
  EXPECT_EQ(s->Size(), 100u);
  EXPECT_EQ(s->MemoryBytes(), 100 * kEntryBytes);
}

TEST(KeyAccess, IdleTimeUnderLru) {
  auto s = Open(0, EvictionPolicy::kNoEviction);  // idle time is tracked under noeviction too (Redis)
  ASSERT_EQ(PutTtl(*s, "a", kNoExpiry), Code::kNotFound);
  g_now += 5000;
  KeyAccessInfo info;
  ASSERT_TRUE(s->KeyAccess("a", &info).ok());
  EXPECT_FALSE(info.lfu);
  EXPECT_EQ(info.idle_ms, 5000u);
  ASSERT_TRUE(s->KeyAccess("a", &info).ok());  // KeyAccess itself does not touch
  EXPECT_EQ(info.idle_ms, 5000u);
  s->Get("a");
  g_now += 7;
  ASSERT_TRUE(s->KeyAccess("a", &info).ok());
  EXPECT_EQ(info.idle_ms, 7u);
  EXPECT_EQ(s->KeyAccess("missing", &info).code(), Code::kNotFound);
  Batch b;
  b.Put("ttl", "x", g_now + 10);
  s->Execute(std::move(b));
  g_now += 10;
  EXPECT_EQ(s->KeyAccess("ttl", &info).code(), Code::kNotFound);  // expired
}

TEST(KeyAccess, FrequencyUnderLfu) {
  auto s = Open(0, EvictionPolicy::kAllKeysLfu);
  ASSERT_EQ(PutTtl(*s, "a", kNoExpiry), Code::kNotFound);
  KeyAccessInfo info;
  ASSERT_TRUE(s->KeyAccess("a", &info).ok());
  EXPECT_TRUE(info.lfu);
  EXPECT_EQ(info.frequency, 5u);  // LFU_INIT_VAL
  for (int i = 0; i < 1000; ++i) s->Get("a");
  ASSERT_TRUE(s->KeyAccess("a", &info).ok());
  // Redis's log counter: ~1000 hits with factor 10 land near 10-20.
  EXPECT_GT(info.frequency, 8u);
  EXPECT_LT(info.frequency, 30u);
  const uint32_t before = info.frequency;
  g_now += 3 * 60000;  // three idle minutes: three decrements
  ASSERT_TRUE(s->KeyAccess("a", &info).ok());
  EXPECT_EQ(info.frequency, before - 3);
}

}  // namespace
}  // namespace kvcg
