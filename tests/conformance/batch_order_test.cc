// Same-key order (DESIGN.md §2): operations on one key inside a batch take
// effect in batch order, and so do one submitter's successive batches, even
// when the second is submitted before the first has completed.
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

TEST_P(Conformance, PutGetDeleteGetInOneBatch) {
  Batch batch;
  batch.Put(K(1), V(1));
  batch.Get(K(1));
  batch.Delete(K(1));
  batch.Get(K(1));
  std::vector<OpResult> r = Run(std::move(batch));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Found(r[1], V(1)));
  EXPECT_TRUE(Found(r[2], V(1)));
  EXPECT_TRUE(NotFound(r[3]));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, PutPutDeletePutInOneBatch) {
  Batch batch;
  batch.Put(K(1), V(1));
  batch.Put(K(1), V(2));
  batch.Delete(K(1));
  batch.Delete(K(1));
  batch.Put(K(1), V(3));
  std::vector<OpResult> r = Run(std::move(batch));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Found(r[1], V(1)));
  EXPECT_TRUE(Found(r[2], V(2)));
  EXPECT_TRUE(NotFound(r[3]));
  EXPECT_TRUE(NotFound(r[4]));
  EXPECT_TRUE(Found(Get(K(1)), V(3)));
}

// A long batch of random operations on a few keys, interleaved, against a
// per-key model: only the order among one key's operations is prescribed.
TEST_P(Conformance, ManyOpsOnFewKeysInOneBatchKeepPerKeyOrder) {
  for (int keys : {1, 5}) {
    SCOPED_TRACE(keys);
    ASSERT_NO_FATAL_FAILURE(Reopen(nullptr));
    std::mt19937_64 rng(keys);
    std::map<std::string, std::string> model;
    std::vector<std::optional<std::string>> want;  // nullopt: kNotFound
    Batch batch;
    for (int i = 0; i < 2000; ++i) {
      const std::string key = K(rng() % keys);
      const auto it = model.find(key);
      want.push_back(it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
      switch (rng() % 3) {
        case 0:
          batch.Get(key);
          break;
        case 1:
          batch.Put(key, V(i, i % 40));
          model[key] = V(i, i % 40);
          break;
        default:
          batch.Delete(key);
          model.erase(key);
      }
    }
    std::vector<OpResult> r = Run(std::move(batch));
    for (size_t i = 0; i < r.size(); ++i) {
      if (want[i]) ASSERT_TRUE(Found(r[i], *want[i])) << "op " << i;
      else ASSERT_TRUE(NotFound(r[i])) << "op " << i;
    }
    EXPECT_EQ(store_->Size(), model.size());
  }
}

// One thread submits batch after batch without waiting; batch i puts V(i)
// and reads it back, so it must see batch i-1's value as the previous one.
TEST_P(Conformance, SuccessiveSubmitsFromOneThreadKeepOrder) {
  constexpr int kBatches = 300;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::vector<OpResult>> results(kBatches);
  for (int i = 0; i < kBatches; ++i) {
    Batch batch;
    batch.Put(K(0), V(i));
    batch.Get(K(0));
    if (i % 7 == 6) batch.Delete(K(0));
    store_->Submit(std::move(batch), [&, i](std::vector<OpResult>&& r) {
      std::lock_guard<std::mutex> lock(mu);
      results[i] = std::move(r);
      ++done;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done == kBatches; });
  }
  for (int i = 0; i < kBatches; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(results[i].size(), i % 7 == 6 ? 3u : 2u);
    if (i == 0 || i % 7 == 0) EXPECT_TRUE(NotFound(results[i][0]));
    else EXPECT_TRUE(Found(results[i][0], V(i - 1)));
    EXPECT_TRUE(Found(results[i][1], V(i)));
    if (i % 7 == 6) {
      EXPECT_TRUE(Found(results[i][2], V(i)));
    }
  }
}

}  // namespace
}  // namespace kvcg::conformance
