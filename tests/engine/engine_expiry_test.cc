// The engine's expiry (kvcg_engine.h, kvcg_engine_keyspace.cc) beyond the
// conformance suite: a hot key updated only in the hot cache (dirty) expires
// there by the store's clock; Keyspace and ReclaimExpired write the cache
// back first, so they count what only the cache knew; the engine's sweeper
// drops expired hot entries without access; SetMemoryLimit forwards and
// switches the cache to write-through (no dirty entries while a limit is
// set) and back.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "forwarding_store.h"
#include "engine_test_util.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"

namespace kvcg::testing {
namespace {

constexpr uint64_t kT = 1'700'000'000'000;
std::atomic<uint64_t> g_now{kT};
uint64_t FakeClock() { return g_now.load(); }

Config ExpiryConfig(uint32_t hz = 0) {
  Config c = EngineConfig(Mode::kHotOnly);  // every key hot
  c.expected_keys = 1024;
  c.clock = &FakeClock;
  c.active_expiry_hz = hz;
  return c;
}

OpResult PutAt(Store* s, const std::string& k, const std::string& v, uint64_t at) {
  Batch b = s->NewBatch();
  b.Put(k, v, at);
  return s->Execute(std::move(b))[0].ToOwned();
}

// A canonical store that accepts SetMemoryLimit (the CPU backend's own
// support is the eviction part of issue 13) and records the call.
class LimitRecorder final : public testing::ForwardingStore {
 public:
  explicit LimitRecorder(std::unique_ptr<Store> inner) : ForwardingStore(std::move(inner)) {}
  Status SetMemoryLimit(uint64_t bytes, EvictionPolicy policy) override {
    limit = bytes;
    this->policy = policy;
    // Every write the engine acknowledged is here before the limit applies.
    size_at_call = inner().Size();
    return Status::Ok();
  }
  std::atomic<uint64_t> limit{~uint64_t(0)};
  EvictionPolicy policy = EvictionPolicy::kNoEviction;
  uint64_t size_at_call = 0;
};

TEST(EngineExpiry, ADirtyHotKeyExpiresByTheStoreClock) {
  g_now = kT;
  auto e = OpenEngine(ExpiryConfig());
  ASSERT_TRUE(e->Put("k", "v").code == Code::kNotFound);  // a miss: the canonical store has it
  EXPECT_TRUE(PutAt(e.get(), "k", "w", kT + 50).found());   // a hit: only the cache has this
  EXPECT_GE(e->Stats().hot_cache_dirty, 1u);
  OpResult r = e->Get("k");
  EXPECT_EQ(r.value, "w");
  EXPECT_EQ(r.expire_at, kT + 50);
  g_now = kT + 50;
  EXPECT_EQ(e->Get("k").code, Code::kNotFound);
  EXPECT_EQ(e->Size(), 0u);
  // The write-back deletes the canonical store's persistent "v".
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_EQ(e->canonical()->Size(), 0u);
  EXPECT_EQ(e->canonical()->Get("k").code, Code::kNotFound);
}

TEST(EngineExpiry, KeyspaceAndReclaimCountWhatOnlyTheHotCacheKnew) {
  g_now = kT;
  auto e = OpenEngine(ExpiryConfig());
  for (int i = 0; i < 10; ++i) e->Put("k" + std::to_string(i), "v");  // misses: persistent
  for (int i = 0; i < 10; ++i) PutAt(e.get(), "k" + std::to_string(i), "w", kT + 100);  // hits
  EXPECT_EQ(e->canonical()->Keyspace().volatile_keys, 0u);  // not written back yet
  KeyspaceStats ks = e->Keyspace();
  EXPECT_EQ(ks.keys, 10u);
  EXPECT_EQ(ks.volatile_keys, 10u);
  for (int i = 0; i < 5; ++i) PutAt(e.get(), "k" + std::to_string(i), "x", kT + 100);  // dirty again
  g_now = kT + 100;
  EXPECT_EQ(e->ReclaimExpired(), 10u);
  EXPECT_EQ(e->Size(), 0u);
  EXPECT_EQ(e->Keyspace().keys, 0u);
  EXPECT_EQ(e->Keyspace().volatile_keys, 0u);
}

TEST(EngineExpiry, TheSweeperDropsExpiredHotEntriesWithoutAccess) {
  g_now = kT;
  auto e = OpenEngine(ExpiryConfig(/*hz=*/100));
  for (int i = 0; i < 50; ++i) PutAt(e.get(), "k" + std::to_string(i), "v", i % 2 ? kT + 10 : kNoExpiry);
  EXPECT_EQ(e->Stats().hot_cache_entries, 50u);
  g_now = kT + 10;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  // Two sweepers, each at its own pace: the engine's drops the hot entries,
  // the canonical store's reclaims its copies (Size counts those).
  while ((e->Stats().hot_cache_entries != 25 || e->Size() != 25) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(e->Stats().hot_cache_entries, 25u);
  EXPECT_EQ(e->Size(), 25u);
}

TEST(EngineExpiry, SetMemoryLimitWritesBackAndSwitchesToWriteThrough) {
  g_now = kT;
  Config c = ExpiryConfig();
  Config canonical_config = c;
  canonical_config.mode = Mode::kCanonical;
  std::unique_ptr<Store> canonical;
  ASSERT_TRUE(Store::Open(canonical_config, &canonical).ok());
  auto recorder = std::make_unique<LimitRecorder>(std::move(canonical));
  LimitRecorder* limits = recorder.get();
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::Open(c, std::move(recorder), &e).ok());

  e->Put("a", "1");
  e->Put("a", "2");  // a hit: dirty
  e->Put("b", "1");
  e->Delete("b");    // a hit: a dirty tombstone
  EXPECT_EQ(e->Stats().hot_cache_dirty, 2u);
  ASSERT_TRUE(e->SetMemoryLimit(1 << 20, EvictionPolicy::kAllKeysLru).ok());
  EXPECT_EQ(limits->limit.load(), 1u << 20);
  EXPECT_EQ(limits->policy, EvictionPolicy::kAllKeysLru);
  EXPECT_EQ(limits->size_at_call, 1u);  // "b"'s delete was written back first
  EXPECT_EQ(e->Stats().hot_cache_dirty, 0u);
  e->Put("a", "3");  // write-through: the canonical store has it at once
  EXPECT_EQ(e->Stats().hot_cache_dirty, 0u);
  EXPECT_EQ(e->canonical()->Get("a").value, "3");
  // No limit: write-back again.
  ASSERT_TRUE(e->SetMemoryLimit(0, EvictionPolicy::kNoEviction).ok());
  e->Put("a", "4");
  EXPECT_EQ(e->Stats().hot_cache_dirty, 1u);
  EXPECT_EQ(e->canonical()->Get("a").value, "3");
}

}  // namespace
}  // namespace kvcg::testing
