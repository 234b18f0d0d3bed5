// FingerprintTable (the key-set models' lookup) and Model::Classify (a
// routing pass's one call per batch): every inserted fingerprint is found
// and no other, also when home lines overflow into the next ones and wrap
// around the table's end; Classify of every model agrees with IsHot op by op.
#include "router/fingerprint_table.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/hash.h"
#include "kvcg/model.h"

namespace kvcg::router {
namespace {

TEST(FingerprintTableTest, FindsWhatWasInsertedAndNothingElse) {
  std::mt19937_64 rng(7);
  FingerprintTable table(10000);
  std::set<uint64_t> in;
  while (in.size() < 10000) {
    const uint64_t fp = rng() | 1;  // never 0
    EXPECT_EQ(table.Insert(fp), in.insert(fp).second);
  }
  EXPECT_FALSE(table.Insert(*in.begin())) << "a duplicate is not inserted twice";
  EXPECT_EQ(table.size(), 10000u);
  for (uint64_t fp : in) EXPECT_TRUE(table.Contains(fp)) << fp;
  size_t false_hits = 0;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t fp = rng() | 1;
    if (in.count(fp) == 0 && table.Contains(fp)) ++false_hits;
  }
  EXPECT_EQ(false_hits, 0u);
}

TEST(FingerprintTableTest, FullHomeLinesOverflowIntoTheNextAndWrapAround) {
  // 16 fingerprints: 2 lines of 8 at load <= 1/2 would be 4 lines; the table
  // has 4 lines (mask 3). All 12 below share home line 3, the last: 8 fill
  // it, the other 4 wrap around to line 0.
  FingerprintTable table(16);
  std::vector<uint64_t> same_home;
  for (uint64_t k = 0; k < 12; ++k) same_home.push_back((k << 8) | 3);
  for (uint64_t fp : same_home) EXPECT_TRUE(table.Insert(fp));
  for (uint64_t fp : same_home) EXPECT_TRUE(table.Contains(fp)) << fp;
  // Absent fingerprints whose home line is full (3), and one whose home
  // line (0) holds the wrapped ones but has free slots.
  EXPECT_FALSE(table.Contains((uint64_t{99} << 8) | 3));
  EXPECT_FALSE(table.Contains((uint64_t{99} << 8) | 0));
  EXPECT_TRUE(table.Insert((uint64_t{5} << 8) | 0));
  EXPECT_TRUE(table.Contains((uint64_t{5} << 8) | 0));
  EXPECT_EQ(table.size(), 13u);
}

// A batch of the keys "k0" ... "k<n-1>" and their hashes and fingerprints.
struct Keys {
  Batch batch;
  std::vector<uint64_t> hashes, fps;
  explicit Keys(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string k = "k" + std::to_string(i);
      batch.Get(k);
      hashes.push_back(Xxh3Hash(k));
      fps.push_back(KeyFingerprint(k));
    }
  }
};

TEST(ModelClassifyTest, EveryModelAgreesWithIsHot) {
  const Keys keys(1000);
  std::vector<std::string> hot_keys;
  for (int i = 0; i < 1000; i += 7) hot_keys.push_back("k" + std::to_string(i));
  std::vector<std::shared_ptr<const Model>> models = {
      MakeKeySetModel(hot_keys, "prior"), MakeHistogramModel({false, true, true, false}),
      MakeAllColdModel(), MakeAllHotModel(),
      MakePredicateModel([](std::string_view k, uint64_t) { return k.size() == 3; }, "3 bytes")};
  for (const auto& model : models) {
    std::vector<uint8_t> hot(keys.batch.size(), 2);
    const uint32_t count = model->Classify(keys.batch, keys.hashes.data(), keys.fps.data(), hot.data());
    uint32_t expected = 0;
    for (size_t i = 0; i < keys.batch.size(); ++i) {
      const bool is_hot = model->IsHot(keys.batch.key(i), keys.hashes[i], keys.fps[i]);
      EXPECT_EQ(hot[i], is_hot ? 1 : 0) << model->Describe() << " op " << i;
      expected += is_hot;
    }
    EXPECT_EQ(count, expected) << model->Describe();
  }
  // The key set: exactly every seventh key (no fingerprint collision here).
  std::vector<uint8_t> hot(keys.batch.size());
  EXPECT_EQ(models[0]->Classify(keys.batch, keys.hashes.data(), keys.fps.data(), hot.data()), 143u);
  for (size_t i = 0; i < hot.size(); ++i) EXPECT_EQ(hot[i], i % 7 == 0 ? 1 : 0) << i;
}

TEST(ModelClassifyTest, AnEmptyBatchHasNoHotOp) {
  const Keys keys(0);
  uint8_t unused = 9;
  EXPECT_EQ(MakeAllHotModel()->Classify(keys.batch, nullptr, nullptr, &unused), 0u);
  EXPECT_EQ(MakeKeySetModel({"a"})->Classify(keys.batch, nullptr, nullptr, &unused), 0u);
  EXPECT_EQ(unused, 9);
}

}  // namespace
}  // namespace kvcg::router
