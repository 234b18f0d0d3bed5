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
  Batch batch = NewBatch();
  batch.Put(K(1), V(1));
  batch.Get(K(1));
  batch.Delete(K(1));
  batch.Get(K(1));
  Results r = Run(std::move(batch));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Found(r[1], V(1)));
  EXPECT_TRUE(Found(r[2], V(1)));
  EXPECT_TRUE(NotFound(r[3]));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, PutPutDeletePutInOneBatch) {
  Batch batch = NewBatch();
  batch.Put(K(1), V(1));
  batch.Put(K(1), V(2));
  batch.Delete(K(1));
  batch.Delete(K(1));
  batch.Put(K(1), V(3));
  Results r = Run(std::move(batch));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Found(r[1], V(1)));
  EXPECT_TRUE(Found(r[2], V(2)));
  EXPECT_TRUE(NotFound(r[3]));
  EXPECT_TRUE(NotFound(r[4]));
  EXPECT_TRUE(Found(Get(K(1)), V(3)));
}

// Any Batch works with any store: one in the heap, one in the store's own
// memory filled by AppendFrom, and a const Batch that Execute copies (and
// must leave intact) all give the same results.
TEST_P(Conformance, HeapStoreAndConstBatchesAgree) {
  Batch heap;
  const std::string v1 = V(1);
  const std::string_view e = v1;
  heap.Put(K(1), V(1));
  heap.Get(K(1));
  heap.CompareAndSwap(K(1), &e, V(2));
  heap.Get(K(1));
  heap.Delete(K(1));
  ASSERT_FALSE(heap.pinned());
  const Batch templ = heap;
  Batch own = NewBatch();
  for (size_t i = 0; i < templ.size(); ++i) own.AppendFrom(templ, i);
  auto check = [&](const Results& r, const char* which) {
    SCOPED_TRACE(which);
    ASSERT_EQ(r.size(), 5u);
    EXPECT_TRUE(NotFound(r[0]));
    EXPECT_TRUE(Found(r[1], V(1)));
    EXPECT_TRUE(Found(r[2], V(1)));
    EXPECT_TRUE(Found(r[3], V(2)));
    EXPECT_TRUE(Found(r[4], V(2)));
    EXPECT_EQ(store_->Size(), 0u);
  };
  check(Run(std::move(heap)), "heap batch");
  check(Run(std::move(own)), "store batch");
  check(store_->Execute(templ), "const batch");
  ASSERT_EQ(templ.size(), 5u) << "Execute(const Batch&) must not consume the batch";
  EXPECT_EQ(templ.key(0), K(1));
  EXPECT_EQ(templ.value(2), V(2));
  EXPECT_EQ(templ.expected(2), V(1));
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
    Batch batch = NewBatch();
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
    Results r = Run(std::move(batch));
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
  // Each completion moves its Results here: the views stay valid after the
  // completion returns, until the vector is destroyed.
  std::vector<Results> results(kBatches);
  for (int i = 0; i < kBatches; ++i) {
    Batch batch = NewBatch();
    batch.Put(K(0), V(i));
    batch.Get(K(0));
    if (i % 7 == 6) batch.Delete(K(0));
    store_->Submit(std::move(batch), [&, i](Results&& r) {
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
