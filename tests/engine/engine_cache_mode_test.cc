// The engine under a memory limit with an evicting policy (cache mode,
// kvcg_engine_keyspace.cc): the housekeeper's reconcile touches hot keys in
// the canonical store (so its LRU sees their reads and KeyAccess, which the
// engine forwards, reports them), drops the hot-cache entries of keys the
// canonical store evicted (so they stop being served), and charges the hot
// cache's copies against the limit. Hot-only mode makes every key hot; the
// canonical store is the CPU backend, whose eviction is tested on its own in
// tests/store/eviction_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "engine_test_util.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"

namespace kvcg::testing {
namespace {

constexpr uint64_t kT = 1'700'000'000'000;
std::atomic<uint64_t> g_now{kT};
uint64_t FakeClock() { return g_now.load(); }

Config CacheModeConfig(uint64_t limit, EvictionPolicy policy) {
  Config c = EngineConfig(Mode::kHotOnly);  // every key hot
  c.expected_keys = 4096;
  c.clock = &FakeClock;
  c.max_memory_bytes = limit;
  c.eviction = policy;
  c.router.switch_period_ms = 20;  // the reconcile period
  return c;
}

// Waits up to 10 s for pred().
template <class Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string Key(int i) {
  char k[16];
  std::snprintf(k, sizeof(k), "k%05d", i);
  return k;
}

TEST(EngineCacheMode, HotReadsReachTheCanonicalStoresAccessTracking) {
  g_now = kT;
  auto e = OpenEngine(CacheModeConfig(1 << 20, EvictionPolicy::kAllKeysLru));
  ASSERT_TRUE(e->Put("h", "v").succeeded());
  KeyAccessInfo info;
  ASSERT_TRUE(e->KeyAccess("h", &info).ok()) << "the engine forwards KeyAccess";
  EXPECT_FALSE(info.lfu);
  EXPECT_EQ(e->KeyAccess("absent", &info).code(), Code::kNotFound);

  g_now += 60'000;
  EXPECT_EQ(e->Get("h").value, "v");  // a hit: answered by the hot cache alone
  // The reconcile's touch brings the read to the canonical store: its idle
  // time drops from a minute to the touch's (the fake clock stands still).
  EXPECT_TRUE(Eventually([&] { return e->KeyAccess("h", &info).ok() && info.idle_ms == 0; }))
      << "idle " << info.idle_ms << " ms";
}

TEST(EngineCacheMode, EvictedKeysStopBeingServedAndTheCacheIsCharged) {
  g_now = kT;
  const std::string value(16, 'x');
  // Learn what one entry costs the canonical store.
  uint64_t entry = 0;
  {
    auto probe = OpenEngine(CacheModeConfig(0, EvictionPolicy::kNoEviction));
    ASSERT_TRUE(probe->Put(Key(0), value).succeeded());
    entry = probe->canonical()->MemoryBytes();
  }
  ASSERT_GT(entry, 0u);
  const uint64_t limit = 200 * entry;
  auto e = OpenEngine(CacheModeConfig(limit, EvictionPolicy::kAllKeysLru));
  const int kKeys = 2000;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(e->Put(Key(i), value).succeeded()) << i;
  // Every key went to the hot cache, and the canonical store evicted all but
  // at most 200 of them. After a reconcile the cache holds none it evicted.
  Store* canonical = e->canonical();
  EXPECT_LE(canonical->Size(), 200u);
  ASSERT_TRUE(Eventually([&] { return e->Stats().hot_cache_entries <= canonical->Size(); }))
      << e->Stats().hot_cache_entries << " hot entries, " << canonical->Size() << " in the canonical store";
  int found = 0;
  for (int i = 0; i < kKeys; ++i) found += e->Get(Key(i)).found();
  EXPECT_LE(found, 200) << "evicted keys are no longer served from the hot cache";
  EXPECT_GT(found, 0);
  // The cache's copies count: the engine reports more than the canonical
  // store holds, and the two together come within the limit once the
  // canonical store was given the limit less the cache's bytes.
  ASSERT_TRUE(Eventually([&] { return e->MemoryBytes() <= limit; }))
      << e->MemoryBytes() << " > " << limit;
  EXPECT_GT(e->MemoryBytes(), canonical->MemoryBytes());
  EXPECT_LT(canonical->MemoryBytes(), limit);
  // No limit: the cache's bytes are not counted any more.
  ASSERT_TRUE(e->SetMemoryLimit(0, EvictionPolicy::kNoEviction).ok());
  EXPECT_EQ(e->MemoryBytes(), canonical->MemoryBytes());
}

TEST(EngineCacheMode, ALimitSetAtRunTimeStartsTheReconcile) {
  g_now = kT;
  auto e = OpenEngine(CacheModeConfig(0, EvictionPolicy::kNoEviction));
  ASSERT_TRUE(e->Put("h", "v").succeeded());
  ASSERT_TRUE(e->SetMemoryLimit(1 << 20, EvictionPolicy::kAllKeysLru).ok());
  g_now += 30'000;
  EXPECT_EQ(e->Get("h").value, "v");
  KeyAccessInfo info;
  EXPECT_TRUE(Eventually([&] { return e->KeyAccess("h", &info).ok() && info.idle_ms == 0; }))
      << "idle " << info.idle_ms << " ms";
  EXPECT_GT(e->MemoryBytes(), e->canonical()->MemoryBytes());
  // FLUSHALL: nothing is left to charge (at most one reconcile that was
  // collecting meanwhile stores its count; the next one clears it).
  e->Clear();
  EXPECT_TRUE(Eventually([&] { return e->MemoryBytes() == 0; })) << e->MemoryBytes();
}

}  // namespace
}  // namespace kvcg::testing
