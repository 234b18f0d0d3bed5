// HistoryRecorder + Check end to end, against small in-test stores whose
// behaviour is known: a correct one (inline or with a completion thread), one
// that serves stale reads and one that swaps successive batches of a
// submitter. The checker must accept the first and catch the other two;
// this is what makes a passing stress test against the real backends mean
// something.
#include "history_recorder.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "linearizability.h"

namespace kvcg::lincheck {
namespace {

enum class Flaw { kNone, kStaleReads, kSwapBatchPairs };

// A std::map under one mutex. With a completion thread, batches run in FIFO
// order on that thread.
class TestStore : public Store {
 public:
  TestStore(Flaw flaw, bool completion_thread) : flaw_(flaw) {
    if (completion_thread) worker_ = std::thread([this] { Work(); });
  }
  ~TestStore() override {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      stop_ = true;
    }
    queue_cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  void Submit(Batch batch, Completion done) override {
    if (worker_.joinable()) {
      std::lock_guard<std::mutex> lock(queue_mu_);
      queue_.emplace_back(std::move(batch), std::move(done));
      queue_cv_.notify_one();
      return;
    }
    if (flaw_ == Flaw::kSwapBatchPairs) {
      // Hold every other batch back and run it after its successor.
      std::optional<std::pair<Batch, Completion>> held;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!held_) {
          held_.emplace(std::move(batch), std::move(done));
          return;
        }
        held.swap(held_);
      }
      done(Run(batch));
      held->second(Run(held->first));
      return;
    }
    done(Run(batch));
  }
  uint64_t Size() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }
  uint64_t MemoryBytes() const override { return 0; }
  void Clear() override {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
  }
  StoreInfo Info() const override { return {}; }

 private:
  // Results as a real backend builds them: one ResultsBuilder per batch,
  // each value copied into its arena before the op changes the map.
  Results Run(const Batch& batch) {
    std::lock_guard<std::mutex> lock(mu_);
    ResultsBuilder out;
    out.Reset(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const std::string key(batch.key(i));
      auto it = map_.find(key);
      const bool found = it != map_.end();
      if (found) out.SetValue(i, Code::kOk, it->second);
      switch (batch.type(i)) {
        case OpType::kGet:
          if (flaw_ == Flaw::kStaleReads) {
            auto s = snapshot_.find(key);
            if (s == snapshot_.end()) out.SetCode(i, Code::kNotFound);
            else out.SetValue(i, Code::kOk, s->second);
          }
          break;
        case OpType::kPut: map_[key] = std::string(batch.value(i)); break;
        case OpType::kDelete:
          if (found) map_.erase(it);
          break;
        case OpType::kCompareAndSwap: {
          const bool stores = found ? !batch.expect_absent(i) && it->second == batch.expected(i)
                                    : batch.expect_absent(i);
          if (stores) map_[key] = std::string(batch.value(i));
          break;
        }
      }
      if (batch.type(i) != OpType::kGet && ++writes_ % 16 == 0) snapshot_ = map_;
    }
    return out.Finish();
  }

  void Work() {
    std::unique_lock<std::mutex> lock(queue_mu_);
    while (true) {
      queue_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      item.second(Run(item.first));
      lock.lock();
    }
  }

  const Flaw flaw_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> map_, snapshot_;
  uint64_t writes_ = 0;
  std::optional<std::pair<Batch, Completion>> held_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::pair<Batch, Completion>> queue_;
  bool stop_ = false;
  std::thread worker_;
};

// `threads` clients each running `batches` random batches of 1..4 ops on 4
// keys with unique values.
std::vector<Event> RunWorkload(Store* store, int threads, int batches) {
  HistoryRecorder recorder;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      HistoryRecorder::Client* client = recorder.NewClient();
      std::mt19937 rng(t);
      for (int b = 0; b < batches; ++b) {
        Batch batch;
        const int n = 1 + rng() % 4;
        for (int i = 0; i < n; ++i) {
          const std::string key = "k" + std::to_string(rng() % 4);
          const std::string value = std::to_string(t) + ":" + std::to_string(b) + ":" + std::to_string(i);
          switch (rng() % 4) {
            case 0: batch.Get(key); break;
            case 1: batch.Put(key, value); break;
            case 2: batch.Delete(key); break;
            default: batch.CompareAndSwap(key, nullptr, value); break;
          }
        }
        client->Execute(store, batch);
      }
    });
  }
  for (auto& w : workers) w.join();
  return recorder.History();
}

TEST(HistoryRecorderTest, RecordsEveryOpWithItsResult) {
  TestStore store(Flaw::kNone, false);
  HistoryRecorder recorder;
  HistoryRecorder::Client* client = recorder.NewClient();
  Batch b1;
  b1.Put("k", "v1");
  b1.Get("k");
  const std::string_view expected = "v1";
  b1.CompareAndSwap("k", &expected, "v2");
  client->Execute(&store, b1);
  Batch b2;
  b2.Delete("k");
  client->Execute(&store, b2);

  std::vector<Event> h = recorder.History();
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].type, OpType::kPut);
  EXPECT_EQ(h[0].value, "v1");
  EXPECT_EQ(h[0].code, Code::kNotFound);
  EXPECT_EQ(h[1].output, "v1");
  EXPECT_EQ(h[2].expected, "v1");
  EXPECT_FALSE(h[2].expect_absent);
  EXPECT_EQ(h[2].value, "v2");
  EXPECT_EQ(h[3].output, "v2");
  // One window per batch; batches of one client are ordered in real time and
  // in program order.
  EXPECT_EQ(h[0].invoke, h[2].invoke);
  EXPECT_EQ(h[0].response, h[2].response);
  EXPECT_LT(h[0].invoke, h[0].response);
  EXPECT_LT(h[2].response, h[3].invoke);
  for (size_t i = 1; i < h.size(); ++i) {
    EXPECT_EQ(h[i].order_group, h[0].order_group);
    EXPECT_LT(h[i - 1].order_seq, h[i].order_seq);
  }
  EXPECT_NE(h[0].batch, h[3].batch);
  EXPECT_TRUE(Check(h).linearizable());
}

TEST(HistoryRecorderTest, CorrectStorePasses) {
  TestStore store(Flaw::kNone, false);
  std::vector<Event> h = RunWorkload(&store, 4, 2000);
  CheckResult r = Check(h);
  EXPECT_TRUE(r.linearizable()) << r.explanation;
  EXPECT_EQ(r.keys, 4u);
  EXPECT_GT(r.operations, 4u * 2000);
}

TEST(HistoryRecorderTest, StaleReadsAreCaught) {
  TestStore store(Flaw::kStaleReads, false);
  std::vector<Event> h = RunWorkload(&store, 4, 500);
  CheckResult r = Check(h);
  ASSERT_EQ(r.verdict, Verdict::kNotLinearizable);
  bool has_get = false;
  for (const Event& e : r.window) has_get |= e.type == OpType::kGet;
  EXPECT_TRUE(has_get) << r.explanation;
}

// One client pipelines PUT k=1, PUT k=2, ... and GETs through Submit, then
// waits for all of them.
std::vector<Event> Pipeline(Store* store, int puts) {
  HistoryRecorder recorder;
  HistoryRecorder::Client* client = recorder.NewClient();
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  for (int i = 0; i < puts; ++i) {
    Batch batch;
    if (i % 3 == 2) {
      batch.Get("k");
    } else {
      batch.Put("k", std::to_string(i));
    }
    client->Submit(store, std::move(batch), [&](Results&&) {
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done == puts; });
  return recorder.History();
}

TEST(HistoryRecorderTest, InOrderPipelineWithCompletionThreadPasses) {
  TestStore store(Flaw::kNone, true);
  std::vector<Event> h = Pipeline(&store, 300);
  ASSERT_EQ(h.size(), 300u);
  CheckResult r = Check(h);
  EXPECT_TRUE(r.linearizable()) << r.explanation;
}

TEST(HistoryRecorderTest, SwappedSuccessiveBatchesAreCaught) {
  TestStore store(Flaw::kSwapBatchPairs, false);
  std::vector<Event> h = Pipeline(&store, 300);
  ASSERT_EQ(h.size(), 300u);
  CheckResult r = Check(h);
  EXPECT_EQ(r.verdict, Verdict::kNotLinearizable) << "same-submitter order was not enforced";
  // The swap keeps every op inside its own [invoke, response] window, so
  // without the program-order constraint the history is fine: the failure
  // above comes from the order constraint alone.
  for (Event& e : h) e.order_group = 0;
  EXPECT_TRUE(Check(h).linearizable());
}

TEST(HistoryRecorderTest, ConcurrentClientsWithCompletionThreadPass) {
  TestStore store(Flaw::kNone, true);
  HistoryRecorder recorder;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      HistoryRecorder::Client* client = recorder.NewClient();
      std::mutex mu;
      std::condition_variable cv;
      int in_flight = 0;
      for (int i = 0; i < 500; ++i) {
        Batch batch;
        batch.Put("k" + std::to_string(i % 3), std::to_string(t) + "/" + std::to_string(i));
        batch.Get("k" + std::to_string((i + 1) % 3));
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return in_flight < 4; });
          ++in_flight;
        }
        client->Submit(&store, std::move(batch), [&](Results&&) {
          std::lock_guard<std::mutex> lock(mu);
          --in_flight;
          cv.notify_all();
        });
      }
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight == 0; });
    });
  }
  for (auto& t : threads) t.join();
  std::vector<Event> h = recorder.History();
  EXPECT_EQ(h.size(), 4u * 500 * 2);
  CheckResult r = Check(h);
  EXPECT_TRUE(r.linearizable()) << r.explanation;
}

}  // namespace
}  // namespace kvcg::lincheck
