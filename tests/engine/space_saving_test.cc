// The heavy-hitters sketch (router/space_saving.h) and trainer
// (router/trainer.h), against exact counts of the same streams:
//  * on a zipf stream it finds exactly the keys above a share, with counts
//    inside their recorded error;
//  * Space-Saving's guarantees hold for every key of a flat stream that
//    keeps replacing counters (count - error <= true <= count,
//    error <= min <= N/m, every key above N/m monitored, counts sum to N),
//    in one stripe and per stripe of a striped sketch;
//  * the trainer keeps the threshold, the hot-key bound, the two-sample
//    floor and most-frequent-first;
//  * sampling threads and BuildShadow/ResetTraining run concurrently (run
//    under TSan: -DKVCG_SANITIZE=thread).
#include "router/space_saving.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kvcg/model.h"
#include "router/router.h"
#include "router/trainer.h"
#include "workload/generators.h"

namespace kvcg::router {
namespace {

// A key id's 8 bytes, as the benchmarks' binary keys.
std::string KeyOf(uint64_t id) { return std::string(reinterpret_cast<const char*>(&id), sizeof id); }
uint64_t FingerprintOf(uint64_t id) { return KeyFingerprint(KeyOf(id)); }

struct Stream {
  std::vector<uint64_t> fps;                        // in order
  std::unordered_map<uint64_t, uint64_t> true_count;  // by fingerprint
};

Stream ZipfStream(uint64_t items, double theta, size_t n, uint64_t seed) {
  workload::Random rng(seed);
  workload::ZipfianGenerator zipf(items, theta);
  Stream s;
  s.fps.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t fp = FingerprintOf(zipf.Next(rng));
    s.fps.push_back(fp);
    ++s.true_count[fp];
  }
  return s;
}

std::unordered_map<uint64_t, SpaceSaving::Counter> Monitored(const SpaceSaving& sketch,
                                                             uint64_t* total) {
  std::vector<SpaceSaving::Counter> all;
  *total = sketch.Collect(0, &all);
  std::unordered_map<uint64_t, SpaceSaving::Counter> by_fp;
  for (const auto& c : all) EXPECT_TRUE(by_fp.emplace(c.fingerprint, c).second) << "key twice";
  return by_fp;
}

TEST(SpaceSavingTest, FindsExactlyTheHeavyHittersOfAZipfStream) {
  // 2 M samples of zipf 0.99 over 1 M keys, 4096 counters.
  const Stream s = ZipfStream(1'000'000, 0.99, 2'000'000, 1);
  SpaceSaving sketch(4096);
  EXPECT_EQ(sketch.stripes(), 4u);  // automatic: >= 1024 counters per stripe
  for (uint64_t fp : s.fps) ASSERT_TRUE(sketch.Add(fp));  // one thread: never busy
  uint64_t total = 0;
  const auto monitored = Monitored(sketch, &total);
  ASSERT_EQ(total, s.fps.size());
  // Heavy hitters: true share above phi. Space-Saving must report every one
  // (count > phi N, since count >= true) and no key whose count - error
  // exceeds phi N may be outside them.
  const double phi = 0.0005;
  const double cut = phi * static_cast<double>(total);
  size_t heavy = 0;
  uint64_t worst_error = 0;
  for (const auto& [fp, n] : s.true_count) {
    if (static_cast<double>(n) <= cut) continue;
    ++heavy;
    auto it = monitored.find(fp);
    ASSERT_NE(it, monitored.end()) << "a heavy hitter with " << n << " samples is not monitored";
    EXPECT_GE(it->second.count, n);
    EXPECT_LE(it->second.count - it->second.error, n);
    worst_error = std::max(worst_error, it->second.count - n);
  }
  size_t reported = 0;
  for (const auto& [fp, c] : monitored) {
    if (static_cast<double>(c.count - c.error) > cut) {
      ++reported;
      EXPECT_GT(static_cast<double>(s.true_count.at(fp)), cut) << "false heavy hitter";
    }
  }
  std::printf("zipf 0.99, N = %llu, m = %zu: %zu heavy hitters above %.2g, %zu reported, "
              "largest error among them %llu (N/m = %llu)\n",
              (unsigned long long)total, sketch.counters(), heavy, phi, reported,
              (unsigned long long)worst_error, (unsigned long long)(total / sketch.counters()));
  EXPECT_GT(heavy, 50u);  // zipf 0.99: about 100 keys above 0.05%
  EXPECT_EQ(reported, heavy) << "every heavy hitter's lower bound clears the cut";
  // On a skewed stream the heavy hitters' error is far below the worst case N/m.
  EXPECT_LT(worst_error, total / sketch.counters() / 4) << worst_error;
}

void CheckGuarantees(const Stream& s, size_t counters, size_t stripes) {
  SpaceSaving sketch(counters, stripes);
  ASSERT_EQ(sketch.stripes(), stripes);
  for (uint64_t fp : s.fps) ASSERT_TRUE(sketch.Add(fp));
  const size_t per_stripe = sketch.counters() / stripes;
  // Per stripe: its samples and its counters.
  const unsigned shift = 64 - static_cast<unsigned>(__builtin_ctzll(stripes));
  auto stripe_of = [&](uint64_t fp) { return stripes == 1 ? 0 : fp >> shift; };
  std::vector<uint64_t> stripe_total(stripes, 0), stripe_sum(stripes, 0), stripe_min(stripes, ~0ull);
  for (uint64_t fp : s.fps) ++stripe_total[stripe_of(fp)];
  uint64_t total = 0;
  const auto monitored = Monitored(sketch, &total);
  ASSERT_EQ(total, s.fps.size());
  for (const auto& [fp, c] : monitored) {
    const size_t k = stripe_of(fp);
    stripe_sum[k] += c.count;
    stripe_min[k] = std::min(stripe_min[k], c.count);
    const uint64_t n = s.true_count.count(fp) ? s.true_count.at(fp) : 0;
    ASSERT_GE(c.count, n);
    ASSERT_LE(c.count - c.error, n);
    ASSERT_LE(c.error * per_stripe, stripe_total[k]) << "error <= N_s / m_s";
  }
  for (size_t k = 0; k < stripes; ++k) {
    EXPECT_EQ(stripe_sum[k], stripe_total[k]) << "Space-Saving's counts sum to N";
    EXPECT_LE(stripe_min[k] * per_stripe, stripe_total[k]) << "min <= N_s / m_s";
  }
  for (const auto& [fp, n] : s.true_count) {
    if (n * per_stripe > stripe_total[stripe_of(fp)]) {
      EXPECT_TRUE(monitored.count(fp)) << "a key above N_s / m_s must be monitored";
    }
  }
}

TEST(SpaceSavingTest, ErrorBoundHoldsForEveryKey) {
  // Flat (zipf 0.5 over 50,000 keys) with 256 counters: every counter is
  // replaced many times, the regime where the bound is tight.
  const Stream s = ZipfStream(50'000, 0.5, 300'000, 2);
  CheckGuarantees(s, 256, 1);
}

TEST(SpaceSavingTest, ErrorBoundHoldsPerStripe) {
  const Stream s = ZipfStream(50'000, 0.8, 300'000, 3);
  CheckGuarantees(s, 2048, 8);
}

TEST(SpaceSavingTest, ClearForgetsAndTheSketchIsReusable) {
  SpaceSaving sketch(64, 1);
  for (uint64_t i = 1; i <= 1000; ++i) sketch.Add(FingerprintOf(i % 100));
  EXPECT_EQ(sketch.total(), 1000u);
  sketch.Clear();
  EXPECT_EQ(sketch.total(), 0u);
  std::vector<SpaceSaving::Counter> out;
  EXPECT_EQ(sketch.Collect(0, &out), 0u);
  EXPECT_TRUE(out.empty());
  for (int i = 0; i < 5; ++i) sketch.Add(FingerprintOf(7));
  sketch.Add(FingerprintOf(8));
  EXPECT_EQ(sketch.Collect(2, &out), 6u);
  ASSERT_EQ(out.size(), 1u);  // key 8's single sample is below the floor of 2
  EXPECT_EQ(out[0].fingerprint, FingerprintOf(7));
  EXPECT_EQ(out[0].count, 5u);
  EXPECT_EQ(out[0].error, 0u);
}

// Trains a router on `key -> samples` (sample_rate 1) and returns its shadow model.
std::shared_ptr<const Model> Train(Config::RouterConfig c,
                                   const std::vector<std::pair<std::string, int>>& counts) {
  c.model = RouterModel::kHeavyHitters;
  c.sample_rate = 1.0;
  Router r(c, MakeAllColdModel(), 1024);
  for (const auto& [key, n] : counts) {
    for (int i = 0; i < n; ++i) r.Sample(key, 0);
  }
  return r.BuildShadow();
}

TEST(HeavyHitterTrainerTest, SelectsByThresholdBoundAndFloorMostFrequentFirst) {
  const std::vector<std::pair<std::string, int>> counts = {
      {"a", 50}, {"b", 30}, {"c", 10}, {"d", 1}, {"e", 9}};  // 100 samples
  Config::RouterConfig c;
  c.hot_keys = 10;
  auto m = Train(c, counts);  // threshold 0: no share floor
  EXPECT_EQ(m->Describe(), "heavy-hitters(4 keys)");
  EXPECT_EQ(m->KeyCount(), 4);
  for (const char* k : {"a", "b", "c", "e"}) EXPECT_TRUE(m->IsHot(k, 0)) << k;
  EXPECT_FALSE(m->IsHot("d", 0)) << "one sample is below the floor";
  EXPECT_FALSE(m->IsHot("z", 0));

  c.threshold = 0.095;  // share > 9.5%: a, b, c
  m = Train(c, counts);
  EXPECT_EQ(m->KeyCount(), 3);
  EXPECT_TRUE(m->IsHot("c", 0));
  EXPECT_FALSE(m->IsHot("e", 0));
  c.threshold = 0.1;  // exactly 10% does not exceed it
  EXPECT_FALSE(Train(c, counts)->IsHot("c", 0));

  c.threshold = 0;
  c.hot_keys = 2;  // the bound keeps the most frequent
  m = Train(c, counts);
  EXPECT_EQ(m->KeyCount(), 2);
  EXPECT_TRUE(m->IsHot("a", 0));
  EXPECT_TRUE(m->IsHot("b", 0));
  EXPECT_FALSE(m->IsHot("c", 0));
}

// The hot keys' share against RouterConfig::min_hot_share is taken from
// their guaranteed counts: after 1,000 keys seen once each have filled the
// 16 counters, 4 keys seen 3 times each enter at the minimum (~63) and keep
// it as error, so their estimates (~65 each, 26 % of the samples together)
// say hot while what is sure (3 each, 1.2 %) says a flat load.
TEST(HeavyHitterTrainerTest, ShareBelowTheFloorFromGuaranteedCountsRoutesNothing) {
  std::vector<std::pair<std::string, int>> flat;
  for (int i = 0; i < 1000; ++i) flat.emplace_back("once" + std::to_string(i), 1);
  for (const char* k : {"a", "b", "c", "d"}) flat.emplace_back(k, 3);
  Config::RouterConfig c;
  c.hot_keys = 4;  // 16 counters, one stripe
  c.min_hot_share = 0.05;
  auto m = Train(c, flat);
  EXPECT_EQ(m->KeyCount(), 0);
  EXPECT_FALSE(m->IsHot("a", 0));
  EXPECT_EQ(m->Describe().rfind("all-cold (hot share 1.", 0), 0u) << m->Describe();
  EXPECT_NE(m->Describe().find("< router.min_hot_share 5.00%): heavy-hitters(4 keys)"),
            std::string::npos)
      << m->Describe();

  c.min_hot_share = 0;  // no floor: the 4 keys
  m = Train(c, flat);
  EXPECT_EQ(m->KeyCount(), 4);
  EXPECT_TRUE(m->IsHot("a", 0));

  std::vector<std::pair<std::string, int>> skewed = flat;
  for (const char* k : {"a", "b", "c", "d"}) skewed.emplace_back(k, 100);  // ~29 % surely
  c.min_hot_share = 0.05;
  m = Train(c, skewed);
  EXPECT_EQ(m->Describe(), "heavy-hitters(4 keys)");
  for (const char* k : {"a", "b", "c", "d"}) EXPECT_TRUE(m->IsHot(k, 0)) << k;
}

TEST(HeavyHitterTrainerTest, HotKeysDefaultToTheHotCacheCapacity) {
  Config::RouterConfig c;
  EXPECT_EQ(c.model, RouterModel::kHeavyHitters) << "the default";
  EXPECT_EQ(Router(c, MakeAllColdModel(), 4096).hot_keys_limit(), 4096u);
  c.hot_keys = 100;
  const Router r(c, MakeAllColdModel(), 4096);
  EXPECT_EQ(r.hot_keys_limit(), 100u);
  EXPECT_EQ(r.TrainerDescription(), "heavy-hitters(100 hot keys max; 400 counters in 1 stripes)");
  c.model = RouterModel::kHistogram;
  EXPECT_EQ(Router(c, MakeAllColdModel(), 4096).hot_keys_limit(), 0u);
}

// Several threads sample (sketch updates under striped try-locks) while
// another builds shadow models and restarts training, as the engine's
// periodic switcher does. Under TSan this is the sketch's race check.
TEST(HeavyHitterTrainerTest, SamplingWhileBuildingShadowModels) {
  Config::RouterConfig c;
  c.sample_rate = 1.0;
  c.hot_keys = 256;
  Router router(c, MakeAllColdModel(), 1024);
  constexpr int kThreads = 3;
  constexpr int kPerThread = 60'000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&router, &running, t] {
      workload::Random rng(100 + t);
      workload::ZipfianGenerator zipf(10'000, 0.99);
      for (int i = 0; i < kPerThread; ++i) {
        const std::string key = KeyOf(zipf.Next(rng));
        router.Sample(key, 0);
      }
      running.fetch_sub(1);
    });
  }
  int builds = 0;
  while (running.load() != 0) {
    auto model = router.BuildShadow();
    EXPECT_LE(model->KeyCount(), 256);
    if (++builds % 4 == 0) router.ResetTraining();
  }
  for (auto& th : threads) th.join();
  EXPECT_GT(builds, 0);
  // Whatever the interleaving left, the trainer still trains: a fresh window
  // finds the hottest key (~10% of a zipf 0.99 stream over 10,000 keys).
  router.ResetTraining();
  workload::Random rng(99);
  workload::ZipfianGenerator zipf(10'000, 0.99);
  for (int i = 0; i < 10'000; ++i) router.Sample(KeyOf(zipf.Next(rng)), 0);
  EXPECT_EQ(router.samples(), 10'000u);
  auto model = router.BuildShadow();
  EXPECT_TRUE(model->IsHot(KeyOf(0), 0)) << model->Describe();
  EXPECT_EQ(model->KeyCount(), 256) << "more than 256 keys have 2+ samples";
}

// The sketch alone, its invariant checked at every copy: counts sum to N.
TEST(SpaceSavingTest, ConcurrentAddsAndCollects) {
  SpaceSaving sketch(2048, 4);
  constexpr int kThreads = 3;
  constexpr int kPerThread = 50'000;
  std::atomic<int> running{kThreads};
  std::atomic<uint64_t> accepted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      workload::Random rng(7 + t);
      workload::ZipfianGenerator zipf(20'000, 0.9);
      uint64_t mine = 0;
      for (int i = 0; i < kPerThread; ++i) mine += sketch.Add(FingerprintOf(zipf.Next(rng)));
      accepted.fetch_add(mine);
      running.fetch_sub(1);
    });
  }
  std::vector<SpaceSaving::Counter> out;
  while (running.load() != 0) {
    out.clear();
    const uint64_t total = sketch.Collect(0, &out);
    uint64_t sum = 0;
    for (const auto& counter : out) sum += counter.count;
    ASSERT_EQ(sum, total);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(sketch.total(), accepted.load());
  EXPECT_EQ(accepted.load() + sketch.dropped(), uint64_t{kThreads} * kPerThread);
}

}  // namespace
}  // namespace kvcg::router
