// Router and models: bins partition the hash space, the shadow histogram
// marks exactly the bins above the threshold, sampling honours its rate,
// key-set, fingerprint-set and predicate models answer by key.
#include "router/router.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/model.h"
#include "router/bins.h"

namespace kvcg::router {
namespace {

constexpr uint64_t kCapacity = 1024;  // hot-cache capacity the heavy-hitters model is bounded by

TEST(RouterTest, BinsCoverTheHashSpaceEvenly) {
  EXPECT_EQ(BinOf(0, 10000), 0u);
  EXPECT_EQ(BinOf(~uint64_t{0}, 10000), 9999u);
  EXPECT_EQ(BinOf(uint64_t{1} << 63, 10000), 5000u);
  EXPECT_EQ(BinOf(uint64_t{1} << 63, 3), 1u);
}

uint64_t HashInBin(size_t bin, size_t bins) {
  // The middle of the bin's hash range.
  const long double width = 18446744073709551616.0L / bins;
  return static_cast<uint64_t>(width * bin + width / 2);
}

// A histogram router of 100 bins that samples every request and marks the
// bins above 10 % of the samples.
Config::RouterConfig Histogram100() {
  Config::RouterConfig c;
  c.model = RouterModel::kHistogram;
  c.bins = 100;
  c.threshold = 0.1;
  c.sample_rate = 1.0;
  return c;
}

TEST(RouterTest, ShadowHistogramMarksBinsAboveThreshold) {
  Router r(Histogram100(), MakeAllColdModel(), kCapacity);
  for (int i = 0; i < 50; ++i) r.Sample("k", HashInBin(3, 100));   // 50%
  for (int i = 0; i < 11; ++i) r.Sample("k", HashInBin(7, 100));   // 11%
  for (int i = 0; i < 10; ++i) r.Sample("k", HashInBin(8, 100));   // 10%: not above
  for (int i = 0; i < 29; ++i) r.Sample("k", HashInBin(10 + i, 100));
  EXPECT_EQ(r.samples(), 100u);
  auto model = r.BuildShadow();
  EXPECT_EQ(model->Describe(), "histogram(100 bins, 2 hot)");
  EXPECT_TRUE(model->IsHot("x", HashInBin(3, 100)));
  EXPECT_TRUE(model->IsHot("x", HashInBin(7, 100)));
  EXPECT_FALSE(model->IsHot("x", HashInBin(8, 100)));
  EXPECT_FALSE(model->IsHot("x", HashInBin(10, 100)));
  r.ResetTraining();
  EXPECT_EQ(r.samples(), 0u);
  EXPECT_EQ(r.BuildShadow()->Describe(), "histogram(100 bins, 0 hot)");
}

// The hot bins' share of the samples against RouterConfig::min_hot_share:
// bins above the per-bin threshold that together had less than the floor
// give an all-cold model that says why; at or above it, the histogram.
TEST(RouterTest, ShadowModelRoutesNothingBelowTheMinimumHotShare) {
  Config::RouterConfig c = Histogram100();
  c.threshold = 0.01;
  c.min_hot_share = 0.25;
  Router r(c, MakeAllColdModel(), kCapacity);
  for (int i = 0; i < 20; ++i) r.Sample("k", HashInBin(3, 100));      // 20 %
  for (int i = 0; i < 80; ++i) r.Sample("k", HashInBin(10 + i, 100));  // 1 % each: not hot
  auto model = r.BuildShadow();
  EXPECT_EQ(model->KeyCount(), 0);
  EXPECT_FALSE(model->IsHot("x", HashInBin(3, 100)));
  EXPECT_EQ(model->Describe(),
            "all-cold (hot share 20.00% < router.min_hot_share 25.00%): histogram(100 bins, 1 hot)");
  r.ResetTraining();  // two hot bins: their shares add up past the floor
  for (int i = 0; i < 15; ++i) r.Sample("k", HashInBin(3, 100));
  for (int i = 0; i < 15; ++i) r.Sample("k", HashInBin(4, 100));
  for (int i = 0; i < 70; ++i) r.Sample("k", HashInBin(10 + i, 100));
  EXPECT_EQ(r.BuildShadow()->Describe(), "histogram(100 bins, 2 hot)");
  r.ResetTraining();
  for (int i = 0; i < 25; ++i) r.Sample("k", HashInBin(3, 100));   // 25 %: the floor itself
  for (int i = 0; i < 75; ++i) r.Sample("k", HashInBin(10 + i, 100));
  model = r.BuildShadow();
  EXPECT_EQ(model->Describe(), "histogram(100 bins, 1 hot)");
  EXPECT_TRUE(model->IsHot("x", HashInBin(3, 100)));

  c.min_hot_share = 0;  // the paper's router: whatever the trainer built
  Router paper(c, MakeAllColdModel(), kCapacity);
  for (int i = 0; i < 3; ++i) paper.Sample("k", HashInBin(3, 100));        // 3 %
  for (int i = 0; i < 97; ++i) paper.Sample("k", HashInBin((4 + i) % 100, 100));  // 1 % each
  EXPECT_EQ(paper.BuildShadow()->Describe(), "histogram(100 bins, 1 hot)");
}

// A model that calls no key hot routes nothing (the engine then forwards
// batches unhashed); its batches are still sampled, hashing only the
// sampled ops, and train the shadow model as hashed batches do.
uint64_t HashToBin3(std::string_view) { return HashInBin(3, 100); }

TEST(RouterTest, ModelsThatCallNoKeyHotRouteNothingAndStillTrain) {
  Router r(Histogram100(), MakeAllColdModel(), kCapacity, &HashToBin3);
  EXPECT_TRUE(r.routes_nothing());
  Batch b;
  for (int i = 0; i < 20; ++i) b.Get("key" + std::to_string(i));
  r.SampleUnhashed(b, &HashToBin3);
  EXPECT_EQ(r.samples(), 20u);
  auto learned = r.BuildShadow();
  EXPECT_EQ(learned->Describe(), "histogram(100 bins, 1 hot)");
  EXPECT_EQ(learned->KeyCount(), -1);
  r.Install(learned);
  EXPECT_FALSE(r.routes_nothing());
  r.ResetTraining();
  auto none = r.BuildShadow();  // no samples: no hot bin
  EXPECT_EQ(none->KeyCount(), 0);
  r.Install(none);
  EXPECT_TRUE(r.routes_nothing());
  r.Install(MakeKeySetModel({"a"}, "one key"));
  EXPECT_FALSE(r.routes_nothing());
  r.Install(MakeKeySetModel({}, "no keys"));
  EXPECT_TRUE(r.routes_nothing());
  r.Install(MakeAllHotModel());
  EXPECT_FALSE(r.routes_nothing());
}

TEST(RouterTest, SamplingRateIsHonoured) {
  Config::RouterConfig c;
  c.sample_rate = 0.1;
  Router r(c, MakeAllColdModel(), kCapacity);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t id = static_cast<uint64_t>(i);
    r.Sample(std::string_view(reinterpret_cast<const char*>(&id), sizeof id),
             id * 0x9e3779b97f4a7c15ull);
  }
  EXPECT_GT(r.samples(), 9000u);
  EXPECT_LT(r.samples(), 11000u);
  c.sample_rate = 0;
  Router never(c, MakeAllColdModel(), kCapacity);
  for (int i = 0; i < 1000; ++i) never.Sample("k", i);
  EXPECT_EQ(never.samples(), 0u);
  EXPECT_FALSE(never.sampling());
}

// The batch form draws the same Bernoulli(rate) per op, as geometric gaps:
// the count over 100,000 ops is within ~5 standard deviations of rate * n,
// and the rates 0 and 1 sample nothing and everything.
TEST(RouterTest, BatchSamplingRateIsHonoured) {
  Batch batch;
  std::vector<uint64_t> hashes;
  for (uint64_t id = 0; id < 1000; ++id) {
    batch.Get(std::string_view(reinterpret_cast<const char*>(&id), sizeof id));
    hashes.push_back(id * 0x9e3779b97f4a7c15ull);
  }
  for (double rate : {0.1, 0.01, 0.5}) {
    Config::RouterConfig c;
    c.sample_rate = rate;
    Router r(c, MakeAllColdModel(), kCapacity);
    for (int b = 0; b < 100; ++b) r.Sample(batch, hashes.data());
    const double want = rate * 100000, sd = std::sqrt(want * (1 - rate));
    EXPECT_GT(double(r.samples()), want - 5 * sd) << rate;
    EXPECT_LT(double(r.samples()), want + 5 * sd) << rate;
  }
  Config::RouterConfig all;
  all.sample_rate = 1;
  Router every(all, MakeAllColdModel(), kCapacity);
  every.Sample(batch, hashes.data());
  EXPECT_EQ(every.samples(), 1000u);
  Config::RouterConfig none;
  none.sample_rate = 0;
  Router never(none, MakeAllColdModel(), kCapacity);
  never.Sample(batch, hashes.data());
  EXPECT_EQ(never.samples(), 0u);
}

TEST(RouterTest, InstallBumpsVersion) {
  Router r(Config::RouterConfig{}, MakeAllColdModel(), kCapacity);
  EXPECT_EQ(r.version(), 1u);
  EXPECT_FALSE(r.IsHot("k", 1, KeyFingerprint("k")));
  r.Install(MakeAllHotModel());
  EXPECT_EQ(r.version(), 2u);
  EXPECT_TRUE(r.IsHot("k", 1, KeyFingerprint("k")));
}

uint64_t ConstantHash(std::string_view) { return 5; }

TEST(RouterTest, FingerprintIsTheKeysWhateverTheStoresHash) {
  Router by_default(Config::RouterConfig{}, MakeAllColdModel(), kCapacity);
  Router by_test_hash(Config::RouterConfig{}, MakeAllColdModel(), kCapacity, &ConstantHash);
  for (const std::string& k : std::vector<std::string>{"", "a", "key", std::string(100, 'x')}) {
    // From the store's hash when that is XXH3 (one hash per request)...
    EXPECT_EQ(by_default.Fingerprint(k, Xxh3Hash(k)), KeyFingerprint(k)) << k;
    // ...and never from a test hash, which would merge keys.
    EXPECT_EQ(by_test_hash.Fingerprint(k, ConstantHash(k)), KeyFingerprint(k)) << k;
  }
  EXPECT_EQ(by_default.Fingerprint("z", 0), 1u) << "a fingerprint is never 0";
  // A key-set model answers by that fingerprint.
  by_default.Install(MakeKeySetModel({"hot"}));
  EXPECT_TRUE(by_default.IsHot("hot", 0, by_default.Fingerprint("hot", Xxh3Hash("hot"))));
  EXPECT_FALSE(by_default.IsHot("cold", 0, by_default.Fingerprint("cold", Xxh3Hash("cold"))));
}

TEST(ModelTest, KeySetAndPredicateModelsAnswerByKey) {
  auto set = MakeKeySetModel({"a", std::string("b\0c", 3)}, "prior");
  EXPECT_TRUE(set->IsHot("a", 0));
  EXPECT_TRUE(set->IsHot(std::string_view("b\0c", 3), 0));
  EXPECT_FALSE(set->IsHot("b", 0));
  EXPECT_EQ(set->Describe(), "prior(2 keys)");
  auto pred = MakePredicateModel([](std::string_view k, uint64_t) { return k.size() == 1; },
                                 "short keys");
  EXPECT_TRUE(pred->IsHot("x", 0));
  EXPECT_FALSE(pred->IsHot("xy", 0));
  EXPECT_EQ(pred->Describe(), "short keys");
  EXPECT_EQ(set->KeyCount(), 2);
  EXPECT_EQ(MakeKeySetModel({"a", "a", "b"})->KeyCount(), 2) << "duplicates count once";
  std::vector<uint64_t> fps;
  for (int i = 0; i < 1000; ++i) fps.push_back(KeyFingerprint("key" + std::to_string(i)));
  auto by_fp = MakeFingerprintSetModel(fps, "heavy-hitters");
  EXPECT_EQ(by_fp->Describe(), "heavy-hitters(1000 keys)");
  EXPECT_EQ(by_fp->KeyCount(), 1000);
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "key" + std::to_string(i);
    by_fp->Prefetch(KeyFingerprint(k));
    EXPECT_EQ(by_fp->IsHot(k, 0), i < 1000) << k;
  }
  EXPECT_NE(KeyFingerprint(""), 0u);
  EXPECT_EQ(MakeAllColdModel()->KeyCount(), 0);
  EXPECT_EQ(MakeAllHotModel()->KeyCount(), -1);
  auto hist = MakeHistogramModel({false, true});
  EXPECT_EQ(hist->KeyCount(), -1);
  EXPECT_FALSE(hist->IsHot("k", 0));
  EXPECT_TRUE(hist->IsHot("k", ~uint64_t{0}));
}

}  // namespace
}  // namespace kvcg::router
