// The engine's request workflow and switch protocol, one behaviour per test:
// hot hits and misses, tombstones, write-back and replay, same-key order when
// a key's operations wait behind a miss, the m1 hot -> m2 cold -> m3 hot case,
// cpu-only mode, capacity (write-through), collisions, Clear, Size, stats.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine_test_util.h"
#include "kvcg/engine.h"
#include "kvcg/model.h"
#include "kvcg/store.h"

namespace kvcg::testing {
namespace {

std::shared_ptr<const Model> Hot(std::vector<std::string> keys) {
  return MakeKeySetModel(std::move(keys), "test");
}

void Install(Engine* e, std::shared_ptr<const Model> model, SwitchRecord* rec = nullptr) {
  Status s = e->InstallModel(std::move(model), "test", rec);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

class EngineTest : public ::testing::TestWithParam<uint32_t> {  // param: canonical delay (µs)
 protected:
  std::unique_ptr<Engine> Open(Config c = EngineConfig()) { return OpenEngine(c, GetParam()); }
};

TEST_P(EngineTest, StoreOpenReturnsEngineForEngineModes) {
  for (Mode mode : {Mode::kKvcg, Mode::kHotOnly}) {
    std::unique_ptr<Store> store;
    ASSERT_TRUE(Store::Open(EngineConfig(mode), &store).ok());
    Engine* engine = AsEngine(store.get());
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(engine->Stats().mode, ModeName(mode));
    EXPECT_NE(store->Info().detail.find("engine"), std::string::npos);
  }
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(EngineConfig(Mode::kCanonical), &store).ok());
  EXPECT_EQ(AsEngine(store.get()), nullptr);
}

TEST_P(EngineTest, ColdKeysGoToCanonicalStore) {
  auto e = Open();
  EXPECT_EQ(e->Put("k", "v1").code, Code::kNotFound);
  EXPECT_EQ(e->canonical()->Get("k").value, "v1");  // written through at once
  OpResult r = e->Put("k", "v2");
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.value, "v1");
  EngineStats s = e->Stats();
  EXPECT_EQ(s.hot.ops, 0u);
  EXPECT_EQ(s.cold.ops, 2u);
}

TEST_P(EngineTest, HotMissFillsThenHitsAndWritesBack) {
  auto e = Open();
  ASSERT_EQ(e->Put("a", "1").code, Code::kNotFound);  // cold, canonical store has it
  Install(e.get(), Hot({"a"}));
  OpResult r = e->Get("a");  // compulsory miss: fetched and cached
  EXPECT_EQ(r.value, "1");
  EXPECT_EQ(e->Stats().hot.misses, 1u);
  r = e->Get("a");
  EXPECT_EQ(r.value, "1");
  EXPECT_EQ(e->Stats().hot.hits, 1u);
  r = e->Put("a", "2");  // hit: written in the cache only
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.value, "1");
  EXPECT_EQ(e->canonical()->Get("a").value, "1");  // canonical is behind (write-back)
  EXPECT_EQ(e->Stats().hot_cache_dirty, 1u);
  EXPECT_EQ(e->Get("a").value, "2");
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_EQ(e->canonical()->Get("a").value, "2");
  EXPECT_EQ(e->Stats().hot_cache_dirty, 0u);
  EXPECT_EQ(e->Stats().recent_switches.back().replayed, 1u);
}

TEST_P(EngineTest, DeleteLeavesTombstoneAnsweredWithoutCanonical) {
  auto e = Open();
  ASSERT_EQ(e->Put("b", "x").code, Code::kNotFound);
  Install(e.get(), Hot({"b", "never"}));
  OpResult r = e->Delete("b");  // miss: executed on the canonical store, fills a tombstone
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.value, "x");
  EXPECT_EQ(e->Delete("never").code, Code::kNotFound);  // miss on an absent key: tombstone
  const uint64_t misses = e->Stats().hot.misses;
  EXPECT_EQ(misses, 2u);
  EXPECT_EQ(e->Get("b").code, Code::kNotFound);
  EXPECT_EQ(e->Get("never").code, Code::kNotFound);
  EngineStats s = e->Stats();
  EXPECT_EQ(s.hot.misses, misses);  // both answered by their tombstones
  EXPECT_EQ(s.hot.hits, 2u);
  EXPECT_EQ(e->Put("b", "y").code, Code::kNotFound);  // hit on the tombstone
  EXPECT_EQ(e->Get("b").value, "y");
  EXPECT_EQ(e->Size(), 1u);
}

// The rule: a key's operations in one batch all take the same path; once one
// misses, the later ones wait behind it and run in batch order at its fill.
TEST_P(EngineTest, SameBatchOrderAcrossMissAndQueuedOps) {
  auto e = Open();
  ASSERT_EQ(e->Put("k", "old").code, Code::kNotFound);
  Install(e.get(), Hot({"k", "n"}));
  Batch b;
  b.Get("k");        // miss
  b.Put("k", "v1");  // waits behind the miss
  b.Get("k");
  b.Delete("k");
  b.Get("k");
  const std::string_view expected = "absent?";
  b.CompareAndSwap("k", nullptr, "v2");  // stores: the key is absent now
  b.CompareAndSwap("k", &expected, "v3");  // does not store
  b.Get("k");
  b.Put("n", "fresh");  // another hot key in the same batch: its own miss
  b.Get("n");
  Results r = e->Execute(b);
  ASSERT_EQ(r.size(), 10u);
  EXPECT_EQ(r[0].value, "old");
  EXPECT_EQ(r[1].value, "old");
  EXPECT_EQ(r[2].value, "v1");
  EXPECT_EQ(r[3].value, "v1");
  EXPECT_EQ(r[4].code, Code::kNotFound);
  EXPECT_EQ(r[5].code, Code::kNotFound);
  EXPECT_EQ(r[6].code, Code::kOk);
  EXPECT_EQ(r[6].value, "v2");
  EXPECT_EQ(r[7].value, "v2");
  EXPECT_EQ(r[8].code, Code::kNotFound);
  EXPECT_EQ(r[9].value, "fresh");
  EngineStats s = e->Stats();
  EXPECT_EQ(s.hot.misses, 2u);
  EXPECT_EQ(s.hot.waited, 8u);
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_EQ(e->canonical()->Get("k").value, "v2");
  EXPECT_EQ(e->canonical()->Get("n").value, "fresh");
}

// A batch of many hot ops among cold ones answers exactly as one with few:
// hits, misses, ops queued behind a miss, a hot op's input error, a
// client's no-op and cold ops, each in its place (the canonical store's
// results and the engine's own answers line up by position); the writes
// land where they belong.
TEST_P(EngineTest, ManyOrFewHotOpsAmongColdOnesAnswerInPlace) {
  for (const int hot_keys : {6, 48}) {
    SCOPED_TRACE("hot keys " + std::to_string(hot_keys));
    Config c = EngineConfig();
    c.max_value_bytes = 16;
    auto e = Open(c);
    auto h = [](int i) { return "h" + std::to_string(i); };
    auto k = [](int i) { return "c" + std::to_string(i); };
    std::vector<std::string> hot;
    for (int i = 0; i < hot_keys; ++i) {
      hot.push_back(h(i));
      ASSERT_EQ(e->Put(h(i), "0" + h(i)).code, Code::kNotFound);
      ASSERT_EQ(e->Put(k(i), "0" + k(i)).code, Code::kNotFound);
    }
    Install(e.get(), Hot(hot));
    for (int i = 0; i < hot_keys; i += 2) ASSERT_EQ(e->Get(h(i)).value, "0" + h(i));  // cached
    const EngineStats before = e->Stats();
    Batch b;
    for (int i = 0; i < hot_keys; ++i) {
      b.Get(h(i));                   // even: a hit; odd: a miss
      b.Put(h(i), "1" + h(i));       // even: a hit; odd: queued behind the miss
      b.Put(k(i), "1" + k(i));       // cold
    }
    b.Put(h(0), "a value longer than sixteen bytes");  // hot, refused
    b.Get(h(1));
    b.SetNoop(b.size() - 1);  // the client's own no-op on a hot key
    b.Get(k(0));              // cold, after its PUT above
    Results r = e->Execute(b);
    ASSERT_EQ(r.size(), size_t(3 * hot_keys + 3));
    for (int i = 0; i < hot_keys; ++i) {
      EXPECT_EQ(r[3 * i].value, "0" + h(i)) << i;
      EXPECT_EQ(r[3 * i + 1].code, Code::kOk) << i;
      EXPECT_EQ(r[3 * i + 1].value, "0" + h(i)) << i;
      EXPECT_EQ(r[3 * i + 2].value, "0" + k(i)) << i;
    }
    EXPECT_EQ(r[3 * hot_keys].code, Code::kValueTooLarge);
    EXPECT_EQ(r[3 * hot_keys + 1].code, Code::kNotFound);  // a no-op
    EXPECT_EQ(r[3 * hot_keys + 2].value, "1" + k(0));
    const EngineStats after = e->Stats();
    EXPECT_EQ(after.hot.misses - before.hot.misses, uint64_t(hot_keys / 2));
    EXPECT_EQ(after.hot.waited - before.hot.waited, uint64_t(hot_keys / 2));
    EXPECT_EQ(after.errors - before.errors, 1u);
    for (int i = 0; i < hot_keys; ++i) {
      EXPECT_EQ(e->canonical()->Get(k(i)).value, "1" + k(i)) << i;  // cold: written through
      EXPECT_EQ(e->Get(h(i)).value, "1" + h(i)) << i;                 // hot: in the cache
    }
    ASSERT_TRUE(e->Flush().ok());
    for (int i = 0; i < hot_keys; ++i) EXPECT_EQ(e->canonical()->Get(h(i)).value, "1" + h(i)) << i;
  }
}

// A Results is the caller's until it releases it: values answered by a hit,
// by an op queued behind a miss, by the miss itself and by a cold op all stay
// as they were when later operations overwrite or delete their keys.
TEST_P(EngineTest, ResultsStayValidAcrossLaterWrites) {
  auto e = Open();
  ASSERT_EQ(e->Put("h", "h-old").code, Code::kNotFound);
  ASSERT_EQ(e->Put("m", "m-old").code, Code::kNotFound);
  ASSERT_EQ(e->Put("c", "c-old").code, Code::kNotFound);
  Install(e.get(), Hot({"h", "m"}));
  ASSERT_EQ(e->Get("h").value, "h-old");  // fills h
  Batch b = e->NewBatch();
  b.Get("h");  // hit
  b.Get("m");  // miss
  b.Put("m", "m-new");  // queued behind the miss
  b.Get("c");  // cold
  Results r = e->Execute(std::move(b));
  ASSERT_EQ(r.size(), 4u);
  for (const char* key : {"h", "m", "c"}) ASSERT_EQ(e->Put(key, "overwritten").code, Code::kOk);
  ASSERT_EQ(e->Delete("h").code, Code::kOk);
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_EQ(r[0].value, "h-old");
  EXPECT_EQ(r[1].value, "m-old");
  EXPECT_EQ(r[2].value, "m-old");
  EXPECT_EQ(r[3].value, "c-old");
  EXPECT_EQ(e->Stats().hot.waited, 1u);
}

TEST_P(EngineTest, SuccessiveBatchesOfOneSubmitterKeepOrderAcrossMiss) {
  auto e = Open();
  Install(e.get(), Hot({"k"}));
  std::vector<Results> out(3);
  std::atomic<int> done{0};
  Batch b1, b2, b3;
  b1.Put("k", "1");  // miss (possibly still in flight when b2 arrives)
  b2.Put("k", "2");
  b3.Get("k");
  e->Submit(b1, [&](Results&& r) { out[0] = std::move(r); ++done; });
  e->Submit(b2, [&](Results&& r) { out[1] = std::move(r); ++done; });
  e->Submit(b3, [&](Results&& r) { out[2] = std::move(r); ++done; });
  while (done.load() != 3) std::this_thread::yield();
  EXPECT_EQ(out[0][0].code, Code::kNotFound);
  EXPECT_EQ(out[1][0].value, "1");
  EXPECT_EQ(out[2][0].value, "2");
}

// §6.2: hot under m1, cold under m2, hot again under m3. Without eviction at
// m2 the m3 read would see the m1-era value.
TEST_P(EngineTest, HotColdHotNeverSeesStaleValue) {
  auto e = Open();
  Install(e.get(), Hot({"k"}));  // m1
  ASSERT_EQ(e->Put("k", "m1").code, Code::kNotFound);
  ASSERT_EQ(e->Put("k", "m1b").code, Code::kOk);  // hit, dirty
  SwitchRecord rec;
  Install(e.get(), Hot({"other"}), &rec);  // m2: k cold
  EXPECT_EQ(rec.replayed, 1u);
  EXPECT_EQ(rec.evicted, 1u);
  EXPECT_EQ(e->canonical()->Get("k").value, "m1b");
  OpResult r = e->Put("k", "m2");  // cold: canonical store
  EXPECT_EQ(r.value, "m1b");
  Install(e.get(), Hot({"k"}));  // m3
  EXPECT_EQ(e->Get("k").value, "m2");
  EXPECT_EQ(e->Stats().model_version, 4u);
}

TEST_P(EngineTest, SwitchRecordsAndHistory) {
  auto e = Open();
  Install(e.get(), Hot({"x", "y"}));
  ASSERT_EQ(e->Put("x", "1").code, Code::kNotFound);
  ASSERT_EQ(e->Put("y", "1").code, Code::kNotFound);
  ASSERT_EQ(e->Put("x", "2").code, Code::kOk);
  ASSERT_EQ(e->Delete("y").code, Code::kOk);
  SwitchRecord rec;
  Install(e.get(), Hot({"y"}), &rec);
  EXPECT_TRUE(rec.ok);
  EXPECT_EQ(rec.replayed, 2u);
  EXPECT_EQ(rec.evicted, 1u);  // x; y stays
  EXPECT_EQ(rec.version, 3u);
  EXPECT_GE(rec.duration_us, rec.blocked_us);
  EXPECT_NE(rec.model.find("test"), std::string::npos);
  EngineStats s = e->Stats();
  EXPECT_EQ(s.switches, 2u);
  ASSERT_EQ(s.recent_switches.size(), 2u);
  EXPECT_EQ(s.recent_switches[1].version, 3u);
  EXPECT_EQ(s.hot_cache_entries, 1u);
  EXPECT_EQ(e->canonical()->Get("x").value, "2");
  EXPECT_EQ(e->canonical()->Get("y").code, Code::kNotFound);
}

TEST_P(EngineTest, ShadowModelLearnsHotKeys) {
  // The same stream, each trained model: the histogram marks the two hot
  // keys' bins, heavy-hitters the two keys (each "cold" key has one sample).
  for (RouterModel model : {RouterModel::kHistogram, RouterModel::kHeavyHitters}) {
    SCOPED_TRACE(RouterModelName(model));
    Config c = EngineConfig();
    c.router.model = model;
    c.router.sample_rate = 1.0;
    c.router.threshold = 0.05;
    auto e = Open(c);
    for (int i = 0; i < 200; ++i) {
      Batch b;
      b.Get("hot1");
      b.Get("hot2");
      b.Get("cold" + std::to_string(i));
      e->Execute(b);
    }
    EXPECT_EQ(e->Stats().samples, 600u);
    SwitchRecord rec;
    ASSERT_TRUE(e->SwitchToShadowModel(&rec).ok());
    const char* expected = model == RouterModel::kHistogram ? "histogram(10000 bins, 2 hot)"
                                                            : "heavy-hitters(2 keys)";
    EXPECT_NE(rec.model.find(expected), std::string::npos) << rec.model;
    EngineStats s = e->Stats();
    EXPECT_EQ(s.samples, 0u);  // training restarted
    EXPECT_EQ(s.router_model, RouterModelName(model));
    EXPECT_EQ(s.model_hot_keys, model == RouterModel::kHistogram ? -1 : 2);
    e->Get("hot1");  // miss
    e->Get("hot1");  // hit
    e->Get("cold7");
    s = e->Stats();
    EXPECT_EQ(s.hot.misses, 1u);
    EXPECT_EQ(s.hot.hits, 1u);
    EXPECT_EQ(s.cold.ops, 602u);  // the 600 training ops, the miss, cold7
  }
}

// A shadow model whose hot keys had less than router.min_hot_share of the
// samples is installed as all-cold: the engine then routes nothing.
TEST_P(EngineTest, ShadowModelOfARareHotKeyRoutesNothing) {
  for (double floor : {0.05, 0.04}) {
    SCOPED_TRACE(floor);
    Config c = EngineConfig();
    c.router.model = RouterModel::kHistogram;
    c.router.sample_rate = 1.0;
    c.router.threshold = 0.01;
    c.router.min_hot_share = floor;
    auto e = Open(c);
    for (int i = 0; i < 200; ++i) {  // "hot" has 1 in 21 samples: 4.76 %
      Batch b;
      b.Get("hot");
      for (int j = 0; j < 20; ++j) b.Get("cold" + std::to_string(i * 20 + j));
      e->Execute(b);
    }
    SwitchRecord rec;
    ASSERT_TRUE(e->SwitchToShadowModel(&rec).ok());
    e->Get("hot");  // a miss when hot
    e->Get("hot");  // then a hit
    const EngineStats s = e->Stats();
    if (floor == 0.05) {
      // 4.76 %, or a little more if a cold key shares the hot key's bin.
      EXPECT_EQ(rec.model.rfind("all-cold (hot share 4.", 0), 0u) << rec.model;
      EXPECT_NE(rec.model.find("< router.min_hot_share 5.00%): histogram(10000 bins, 1 hot)"),
                std::string::npos)
          << rec.model;
      EXPECT_EQ(s.model_hot_keys, 0);
      EXPECT_EQ(s.hot.misses + s.hot.hits, 0u);
    } else {
      EXPECT_EQ(rec.model, "histogram(10000 bins, 1 hot)");
      EXPECT_EQ(s.hot.misses, 1u);
      EXPECT_EQ(s.hot.hits, 1u);
    }
  }
}

TEST_P(EngineTest, PeriodicSwitchInstallsShadowModel) {
  for (RouterModel model : {RouterModel::kHistogram, RouterModel::kHeavyHitters}) {
    SCOPED_TRACE(RouterModelName(model));
    Config c = EngineConfig();
    c.router.model = model;
    c.router.sample_rate = 1.0;
    c.router.threshold = 0.2;
    c.router.switch_period_ms = 5;
    c.router.min_samples = 100;
    auto e = Open(c);
    for (int i = 0; i < 2000 && e->Stats().switches == 0; ++i) {
      e->Get("popular");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    EngineStats s = e->Stats();
    ASSERT_GE(s.switches, 1u);
    EXPECT_EQ(s.recent_switches[0].reason, "periodic");
    EXPECT_NE(s.model.find(model == RouterModel::kHistogram ? "1 hot" : "(1 keys)"), std::string::npos)
        << s.model;
  }
}

TEST_P(EngineTest, CpuOnlyServesEveryKeyFromHotCache) {
  auto e = Open(EngineConfig(Mode::kHotOnly));
  EXPECT_EQ(e->Put("a", "1").code, Code::kNotFound);  // compulsory miss
  EXPECT_EQ(e->Put("a", "2").value, "1");             // hit
  EXPECT_EQ(e->Get("a").value, "2");
  EXPECT_EQ(e->Put("b", "1").code, Code::kNotFound);
  EXPECT_EQ(e->Delete("b").value, "1");
  EXPECT_EQ(e->Put("b", "3").code, Code::kNotFound);
  EXPECT_EQ(e->Delete("b").value, "3");
  EXPECT_EQ(e->Size(), 1u);
  EngineStats s = e->Stats();
  EXPECT_EQ(s.cold.ops, 2u);  // the two compulsory misses
  EXPECT_EQ(s.hot.hits, 5u);
  EXPECT_EQ(e->InstallModel(MakeAllColdModel(), "x", nullptr).code(), Code::kInvalidArgument);
  EXPECT_EQ(e->SwitchToShadowModel(nullptr).code(), Code::kInvalidArgument);
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_EQ(e->canonical()->Size(), 1u);
  EXPECT_EQ(e->canonical()->Get("a").value, "2");
}

// Hot-only mode caches every key a client names, but past the cache's
// capacity not the ones that do not exist: a client asking for random
// absent keys must not grow memory without bound.
TEST_P(EngineTest, HotOnlyBoundsCachedAbsentKeys) {
  Config c = EngineConfig(Mode::kHotOnly);
  c.hot_cache_buckets = 16;  // capacity 128
  auto e = Open(c);
  for (int round = 0; round < 2; ++round) {
    Batch b;
    for (int i = 0; i < 1000; ++i) b.Get("absent" + std::to_string(i));
    b.Delete("absent0");
    const Results r = e->Execute(b);
    for (size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r[i].code, Code::kNotFound) << i;
  }
  EXPECT_LE(e->Stats().hot_cache_entries, 128u);
  EXPECT_GT(e->Stats().hot_cache_entries, 0u);  // within the bound they stay
  for (int i = 0; i < 200; ++i) ASSERT_EQ(e->Put("k" + std::to_string(i), "v").code, Code::kNotFound);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(e->Get("k" + std::to_string(i)).value, "v") << i;
  EXPECT_GE(e->Stats().hot_cache_entries, 200u);  // keys with values are all cached
  EXPECT_EQ(e->Delete("k0").value, "v");
  EXPECT_EQ(e->Get("k0").code, Code::kNotFound);
  EXPECT_EQ(e->Size(), 199u);
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_EQ(e->canonical()->Size(), 199u);
  // Keys created and deleted: once the deletes are written back, their
  // tombstones go too (the cache holds the 199 values and no more).
  for (int i = 0; i < 300; ++i) ASSERT_EQ(e->Put("t" + std::to_string(i), "v").code, Code::kNotFound);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(e->Delete("t" + std::to_string(i)).value, "v") << i;
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_LE(e->Stats().hot_cache_entries, 199u + 128u);
  EXPECT_EQ(e->Size(), 199u);
  for (int i = 0; i < 300; i += 7) EXPECT_EQ(e->Get("t" + std::to_string(i)).code, Code::kNotFound) << i;
}

TEST_P(EngineTest, SizeCountsUnreplayedHotUpdates) {
  auto e = Open();
  ASSERT_EQ(e->Put("p", "1").code, Code::kNotFound);
  ASSERT_EQ(e->Put("q", "1").code, Code::kNotFound);
  Install(e.get(), Hot({"p", "q", "r"}));
  e->Get("p");
  e->Get("q");
  e->Get("r");  // tombstone
  EXPECT_EQ(e->Size(), 2u);
  e->Delete("p");  // hit: canonical still has p
  e->Put("r", "1");  // hit on tombstone: canonical lacks r
  e->Put("s", "1");  // cold
  EXPECT_EQ(e->canonical()->Size(), 3u);
  EXPECT_EQ(e->Size(), 3u);  // q, r, s
  ASSERT_TRUE(e->Flush().ok());
  EXPECT_EQ(e->canonical()->Size(), 3u);
  EXPECT_EQ(e->Size(), 3u);
}

TEST_P(EngineTest, ClearEmptiesBothComponents) {
  auto e = Open();
  Install(e.get(), Hot({"h"}));
  e->Put("h", "1");
  e->Put("h", "2");
  e->Put("c", "1");
  e->Clear();
  EXPECT_EQ(e->Size(), 0u);
  EXPECT_EQ(e->Get("h").code, Code::kNotFound);
  EXPECT_EQ(e->Get("c").code, Code::kNotFound);
  EXPECT_EQ(e->Stats().hot_cache_dirty, 0u);
}

TEST_P(EngineTest, CapacityLimitMakesHotWritesWriteThrough) {
  Config c = EngineConfig();
  c.max_keys = 2;
  auto e = Open(c);
  Install(e.get(), Hot({"a", "b", "c"}));
  EXPECT_EQ(e->Put("a", "1").code, Code::kNotFound);
  EXPECT_EQ(e->Put("b", "1").code, Code::kNotFound);
  EXPECT_EQ(e->Put("c", "1").code, Code::kCapacityExhausted);
  EXPECT_EQ(e->Get("c").code, Code::kNotFound);
  EXPECT_EQ(e->Put("a", "2").value, "1");  // hit, but executed on the canonical store
  EXPECT_EQ(e->canonical()->Get("a").value, "2");
  EXPECT_EQ(e->Delete("b").value, "1");
  EXPECT_EQ(e->Put("c", "1").code, Code::kNotFound);  // room again
  EXPECT_EQ(e->Stats().hot_cache_dirty, 0u);
  EXPECT_EQ(e->Size(), 2u);
}

TEST_P(EngineTest, EqualHashesNeverAliasOnEitherPath) {
  Config c = EngineConfig();
  c.hash = [](std::string_view) -> uint64_t { return 7; };
  auto e = Open(c);
  Install(e.get(), Hot({"h1", "h2"}));  // c1, c2 cold with the same hash
  Batch b;
  b.Put("h1", "a");
  b.Put("c1", "b");
  b.Put("h2", "c");
  b.Put("c2", "d");
  b.Get("h1");
  b.Get("c1");
  b.Get("h2");
  b.Get("c2");
  Results r = e->Execute(b);
  EXPECT_EQ(r[4].value, "a");
  EXPECT_EQ(r[5].value, "b");
  EXPECT_EQ(r[6].value, "c");
  EXPECT_EQ(r[7].value, "d");
  Install(e.get(), Hot({"c1", "h2"}));
  EXPECT_EQ(e->Get("h1").value, "a");
  EXPECT_EQ(e->Get("c1").value, "b");
  EXPECT_EQ(e->Get("h2").value, "c");
  EXPECT_EQ(e->Get("c2").value, "d");
}

TEST_P(EngineTest, BadInputIsAnsweredWithErrorsAndNotRouted) {
  Config c = EngineConfig();
  c.max_key_bytes = 4;
  c.max_value_bytes = 4;
  auto e = Open(c);
  Install(e.get(), MakeAllHotModel());
  Batch b;
  b.Put("toolong", "v");
  b.Put("k", "toolong");
  b.Get("k");
  Results r = e->Execute(b);
  EXPECT_EQ(r[0].code, Code::kKeyTooLarge);
  EXPECT_EQ(r[1].code, Code::kValueTooLarge);
  EXPECT_EQ(r[2].code, Code::kNotFound);
  EXPECT_EQ(e->Stats().errors, 2u);
  EXPECT_EQ(e->Size(), 0u);
}

TEST_P(EngineTest, RejectsBadRouterConfig) {
  Config c = EngineConfig();
  c.router.model = RouterModel::kHistogram;
  c.router.bins = 0;
  std::unique_ptr<Store> store;
  EXPECT_EQ(Store::Open(c, &store).code(), Code::kInvalidArgument);
  c = EngineConfig();
  c.router.sample_rate = 2;
  EXPECT_EQ(Store::Open(c, &store).code(), Code::kInvalidArgument);
  Status s;
  c = EngineConfig();
  c.router.threshold = -0.5;
  EXPECT_EQ(Store::Open(c, &store).code(), Code::kInvalidArgument);
  c = EngineConfig();
  c.router.min_hot_share = 1.5;
  s = Store::Open(c, &store);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.ToString().find("router.min_hot_share"), std::string::npos) << s.ToString();
  c = EngineConfig();
  c.router.hot_keys = kMaxRouterHotKeys + 1;
  s = Store::Open(c, &store);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.ToString().find("router.hot_keys"), std::string::npos) << s.ToString();
  c = EngineConfig();
  c.router.model = static_cast<RouterModel>(7);
  s = Store::Open(c, &store);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.ToString().find("router.model"), std::string::npos) << s.ToString();
  // bins only matter to the histogram model.
  c = EngineConfig();
  c.router.model = RouterModel::kHeavyHitters;
  c.router.bins = 0;
  EXPECT_TRUE(Store::Open(c, &store).ok());
  store.reset();
  // gpu-only ignores the router, so nothing there is a contradiction.
  c = EngineConfig(Mode::kCanonical);
  c.router.sample_rate = 2;
  EXPECT_TRUE(Store::Open(c, &store).ok());
}

TEST_P(EngineTest, StatsReportLatencyAndReset) {
  auto e = Open();
  Install(e.get(), Hot({"h"}));
  e->Put("h", "1");
  for (int i = 0; i < 10; ++i) e->Get("h");
  e->Get("c");
  EngineStats s = e->Stats();
  EXPECT_EQ(s.hot.latency.count, 10u);
  EXPECT_EQ(s.cold.latency.count, 2u);
  EXPECT_GT(s.hot.latency.p99_us, 0);
  EXPECT_LE(s.hot.latency.p50_us, s.hot.latency.p99_us);
  EXPECT_LE(s.hot.latency.p99_us, s.hot.latency.max_us);
  e->ResetStats();
  s = e->Stats();
  EXPECT_EQ(s.hot.ops, 0u);
  EXPECT_EQ(s.hot.latency.count, 0u);
  EXPECT_EQ(s.switches, 1u);  // history kept
}

// Liveness: clients that keep submitting (each as soon as its previous batch
// completes) must not keep a switch blocked. The clients stop only after the
// switches are done, so a switch that never unblocks hangs the test.
TEST_P(EngineTest, SwitchesFinishUnderClosedLoopLoad) {
  auto e = Open();
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      std::atomic<int> outstanding{0};
      for (uint64_t i = 0; !stop.load(); ++i) {
        while (outstanding.load() >= 2) std::this_thread::yield();
        Batch b;
        b.Put("k" + std::to_string((i + c) % 8), "v");
        b.Get("k" + std::to_string(i % 8));
        ++outstanding;
        e->Submit(std::move(b), [&outstanding](Results&&) { --outstanding; });
      }
      while (outstanding.load() != 0) std::this_thread::yield();
    });
  }
  uint64_t parked = 0;
  for (int i = 0; i < 30; ++i) {
    SwitchRecord rec;
    Install(e.get(), i % 2 ? Hot({"k1", "k2", "k3"}) : MakeAllHotModel(), &rec);
    parked += rec.deferred;
  }
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_EQ(e->Stats().switches, 30u);
  // A parked batch's completion waits for the gate to open, so each client
  // can have at most its 2 in-flight batches parked per switch.
  EXPECT_LE(parked, 30u * 4 * 2);
  std::printf("[ INFO     ] %llu batches parked over 30 switches\n",
              static_cast<unsigned long long>(parked));
}

INSTANTIATE_TEST_SUITE_P(Canonical, EngineTest, ::testing::Values(0u, 200u), CanonicalDelayName);

}  // namespace
}  // namespace kvcg::testing
