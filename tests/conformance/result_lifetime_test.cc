// Result lifetimes (kvcg/results.h): the bytes a Results points to stay valid
// and unchanged until it is released, even when later operations overwrite,
// delete and re-insert the keys it read — a backend that reads values in
// place (the GPU's host value heap) must not reuse a replaced value's memory
// while a Results that can point at it is alive. The ASan build of the unit
// tests catches the converse (a view read after its release).
#include <condition_variable>
#include <mutex>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

TEST_P(Conformance, HeldResultsKeepTheirValuesWhileTheStoreChanges) {
  constexpr int kKeys = 64;
  constexpr int kRounds = 20;
  auto first = [&](int i) { return V(i, 100 + i % 7 * 40); };
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(NotFound(Put(K(i), first(i))));

  Batch gets = NewBatch();
  for (int i = 0; i < kKeys; ++i) gets.Get(K(i));
  Results held_gets = Run(std::move(gets));
  // Previous values handed back by PUT and DELETE are views too.
  Batch puts = NewBatch();
  for (int i = 0; i < kKeys; ++i) puts.Put(K(i), V(i + 1000, 60));
  Results held_puts = Run(std::move(puts));
  Batch deletes = NewBatch();
  for (int i = 0; i < kKeys; i += 2) deletes.Delete(K(i));
  Results held_deletes = Run(std::move(deletes));

  // Churn: overwrite with other sizes, delete, re-insert, and insert new keys,
  // so that an allocator that recycled the held values' memory would hand it
  // out again here.
  for (int round = 0; round < kRounds; ++round) {
    Batch batch = NewBatch();
    for (int i = 0; i < kKeys; ++i) {
      const uint64_t id = 10'000 + uint64_t(round) * kKeys + i;
      if ((i + round) % 3 == 0) batch.Delete(K(i));
      else batch.Put(K(i), V(id, 100 + (i + round) % 7 * 40));
      batch.Put(K(kKeys + round * kKeys + i), V(id, 100 + i % 5 * 40));
    }
    Results r = Run(std::move(batch));
    for (size_t i = 0; i < r.size(); ++i) ASSERT_TRUE(r[i].succeeded()) << "round " << round << " op " << i;
  }

  for (int i = 0; i < kKeys; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(Found(held_gets[i], first(i)));
    EXPECT_TRUE(Found(held_puts[i], first(i)));
  }
  for (int i = 0; i < kKeys; i += 2) EXPECT_TRUE(Found(held_deletes[i / 2], V(i + 1000, 60))) << i;

  // Releasing them is an ordinary event for the store: it keeps working.
  held_gets.Release();
  held_puts.Release();
  held_deletes.Release();
  ASSERT_TRUE(NotFound(Put(K(10 * kKeys * kRounds), V(1))));
  EXPECT_TRUE(Found(Get(K(10 * kKeys * kRounds)), V(1)));
}

// A completion may move its Results out and the views stay valid after it
// returns, on whatever thread reads them later.
TEST_P(Conformance, ResultsMovedOutOfTheCompletionStayValid) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1, 300))));
  std::mutex mu;
  std::condition_variable cv;
  Results kept;
  bool done = false;
  Batch batch = NewBatch();
  batch.Get(K(1));
  batch.Put(K(1), V(2, 500));
  store_->Submit(std::move(batch), [&](Results&& r) {
    std::lock_guard<std::mutex> lock(mu);
    kept = std::move(r);
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Put(K(1), V(100 + i, 100 + i * 10)).found());
  ASSERT_TRUE(Found(Delete(K(1)), V(149, 590)));
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_TRUE(Found(kept[0], V(1, 300)));
  EXPECT_TRUE(Found(kept[1], V(1, 300)));
}

}  // namespace
}  // namespace kvcg::conformance
