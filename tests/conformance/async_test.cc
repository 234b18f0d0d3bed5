// Asynchronous Submit (kvcg/store.h): the completion runs exactly once per
// Submit with one result per operation, many batches may be in flight from
// many threads, a completion may submit again, and the destructor waits for
// every in-flight completion.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

// Counts completions and lets a test wait for a number of them.
class Latch {
 public:
  void Arrive() {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    cv_.notify_all();
  }
  void WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return count_ >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

TEST_P(Conformance, CompletionRunsOnceWithOneResultPerOp) {
  constexpr int kBatches = 64;
  std::vector<std::atomic<int>> calls(kBatches);
  std::vector<size_t> sizes(kBatches, ~size_t{0});
  Latch latch;
  for (int b = 0; b < kBatches; ++b) {
    Batch batch = NewBatch();  // batch b has b operations; batch 0 is empty
    for (int i = 0; i < b; ++i) batch.Put(K(b * 1000 + i), V(i));
    store_->Submit(std::move(batch), [&, b](Results&& r) {
      calls[b].fetch_add(1);
      sizes[b] = r.size();
      for (OpResultView result : ResultSpan(&r, 0, r.size())) {
        EXPECT_TRUE(NotFound(result)) << "batch " << b;
      }
      latch.Arrive();
    });
  }
  latch.WaitFor(kBatches);
  // Give a backend that wrongly calls a completion twice a moment to do so.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(latch.count(), kBatches);
  for (int b = 0; b < kBatches; ++b) {
    EXPECT_EQ(calls[b].load(), 1) << "batch " << b;
    EXPECT_EQ(sizes[b], static_cast<size_t>(b)) << "batch " << b;
  }
  EXPECT_EQ(store_->Size(), static_cast<uint64_t>(kBatches * (kBatches - 1) / 2));
}

// Several threads keep many batches in flight, each on its own keys, and each
// batch checks its own results: PUT returns the value the previous batch of
// that thread wrote (same-submitter order), GET sees the PUT before it.
TEST_P(Conformance, ManyBatchesInFlightFromSeveralThreads) {
  constexpr int kThreads = 4;
  constexpr int kBatches = 150;
  constexpr int kKeysPerThread = 8;
  Latch latch;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        Batch batch = NewBatch();
        for (int k = 0; k < kKeysPerThread; ++k) {
          const uint64_t key = t * 100 + k;
          batch.Put(K(key), V(b * 1000 + key));
          batch.Get(K(key));
        }
        store_->Submit(std::move(batch), [&, t, b](Results&& r) {
          EXPECT_EQ(r.size(), 2u * kKeysPerThread);
          for (int k = 0; k < kKeysPerThread && 2 * k + 1 < static_cast<int>(r.size()); ++k) {
            const uint64_t key = t * 100 + k;
            if (b == 0) EXPECT_TRUE(NotFound(r[2 * k]));
            else EXPECT_TRUE(Found(r[2 * k], V((b - 1) * 1000 + key))) << "thread " << t << " batch " << b;
            EXPECT_TRUE(Found(r[2 * k + 1], V(b * 1000 + key))) << "thread " << t << " batch " << b;
          }
          latch.Arrive();
        });
      }
    });
  }
  for (std::thread& th : threads) th.join();
  latch.WaitFor(kThreads * kBatches);
  EXPECT_EQ(store_->Size(), static_cast<uint64_t>(kThreads * kKeysPerThread));
}

TEST_P(Conformance, ExecuteIsThreadSafe) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const uint64_t key = t * 1000 + i % 10;
        const OpResult put = store_->Put(K(key), V(i));
        if (i < 10) EXPECT_TRUE(NotFound(put));
        else EXPECT_TRUE(Found(put, V(i - 10)));
        EXPECT_TRUE(Found(store_->Get(K(key)), V(i)));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(store_->Size(), static_cast<uint64_t>(kThreads * 10));
}

// A completion may call Submit (the server chains read-modify-write loops so).
TEST_P(Conformance, CompletionMaySubmitAgain) {
  constexpr int kDepth = 50;
  Latch latch;
  std::function<void(int)> step = [&](int i) {
    Batch batch = NewBatch();
    batch.Put(K(1), V(i));
    store_->Submit(std::move(batch), [&, i](Results&& r) {
      EXPECT_EQ(r.size(), 1u) << i;
      const OpResultView r0 = r.empty() ? OpResultView{Code::kInternal, {}} : r[0];
      if (i == 0) EXPECT_TRUE(NotFound(r0));
      else EXPECT_TRUE(Found(r0, V(i - 1))) << i;
      if (i + 1 < kDepth) step(i + 1);
      else latch.Arrive();
    });
  };
  step(0);
  latch.WaitFor(1);
  EXPECT_TRUE(Found(Get(K(1)), V(kDepth - 1)));
}

TEST_P(Conformance, DestructorWaitsForInFlightCompletions) {
  constexpr int kBatches = 200;
  std::atomic<int> completed{0};
  std::atomic<int> results{0};
  for (int b = 0; b < kBatches; ++b) {
    Batch batch = NewBatch();
    for (int i = 0; i < 32; ++i) batch.Put(K(b * 32 + i), V(i));
    store_->Submit(std::move(batch), [&](Results&& r) {
      results.fetch_add(static_cast<int>(r.size()));
      completed.fetch_add(1);
    });
  }
  store_.reset();  // must not return before every completion has run
  EXPECT_EQ(completed.load(), kBatches);
  EXPECT_EQ(results.load(), kBatches * 32);
}

}  // namespace
}  // namespace kvcg::conformance
