// Concurrent stress test: many threads run mixed GET/PUT/DELETE/CAS batches
// on a handful of keys, every op is recorded with its batch's invocation and
// response ticks, and the per-key linearizability checker must accept the
// whole history.
//
// Why it is sharp: every written value is unique (writer id + counter), so a
// read pins exactly which write it saw; the key space is tiny (16 keys, or
// one hash bucket for the collision rows), so nearly every batch races with
// others on the same keys; batches repeat keys, so in-batch order is checked
// too (the recorder declares it); about half the batches are pipelined
// through Submit without waiting, so same-submitter order across overlapping
// batches is checked as well; CASes mostly expect the last value the thread
// saw, so many succeed and a lost update shows up as a wrong previous value.
// The run ends with sequential reads of every key, which must agree with the
// order the checker found.
//
// A second shape is skewed and read-mostly: 4,096 keys drawn zipfian
// (theta 0.99), batches of up to 256 ops, 80% GET. The hot keys see GETs of
// many batches race the few writes on them and on their bucket neighbours,
// which is what the GPU kernel's lock-free GETs (validated against a bucket
// sequence) must get right.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "history_recorder.h"
#include "kvcg/store.h"
#include "linearizability.h"
#include "stress_support.h"
#include "workload/generators.h"

namespace kvcg::stress {
namespace {

using lincheck::CheckResult;
using lincheck::Event;
using lincheck::HistoryRecorder;

constexpr int kMaxInFlight = 4;  // Per thread, for pipelined batches.

// What a run draws: how many keys and how (uniform or zipfian), batch
// sizes, and the op mix in percent (the rest of 100 is CAS).
struct Shape {
  int keys;
  int max_batch;
  double zipf_theta;  // 0 = uniform
  int get_pct, put_pct, delete_pct;
};
constexpr Shape kFewKeys{16, 16, 0.0, 35, 30, 10};
constexpr Shape kZipfKeys{4096, 256, 0.99, 80, 12, 3};

// What one worker thread knows: the last value it saw per key (for CAS
// expectations) and how many of its pipelined batches are in flight.
// Completions may run on store threads, hence the lock.
struct WorkerState {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::map<std::string, std::string> last_seen;  // Absent key: no entry.
  bool bad_result_count = false;

  void Observe(const Batch& batch, const Results& results) {
    std::lock_guard<std::mutex> lock(mu);
    if (results.size() != batch.size()) {
      bad_result_count = true;
      return;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const std::string key(batch.key(i));
      if (results[i].found()) {
        last_seen[key] = std::string(results[i].value);  // a copy: outlives the Results
      } else if (results[i].code == Code::kNotFound) {
        last_seen.erase(key);
      }
    }
  }
};

void RunStress(const Row& row, const Shape& shape) {
  const Config config = row.make_config();
  if (const std::string why = Unavailable(row, config); !why.empty()) {
    GTEST_SKIP() << "GPU backend unavailable: " << why;
  }
  std::unique_ptr<Store> store;
  const Status s = Store::Open(config, &store);
  ASSERT_TRUE(s.ok()) << s.ToString();

  const std::vector<std::string> keys = Keys(config.layout, shape.keys);
  const int threads = StressThreads();
  const uint64_t max_ops = StressMaxOps();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(StressSeconds());
  HistoryRecorder recorder;
  std::atomic<uint64_t> ops_issued{0};
  std::atomic<uint64_t> batches{0};
  std::vector<std::unique_ptr<WorkerState>> states;
  for (int t = 0; t < threads; ++t) states.push_back(std::make_unique<WorkerState>());

  auto worker = [&](int t) {
    HistoryRecorder::Client* client = recorder.NewClient();
    WorkerState& state = *states[t];
    std::mt19937_64 rng(0x5eed0000u + t);
    workload::Random zrng(0x21bf0000u + t);
    std::optional<workload::ZipfianGenerator> zipf;
    if (shape.zipf_theta > 0) zipf.emplace(keys.size(), shape.zipf_theta);
    uint64_t seq = 0;
    while (std::chrono::steady_clock::now() < deadline &&
           ops_issued.load(std::memory_order_relaxed) < max_ops) {
      Batch batch = store->NewBatch();
      const int n = 1 + static_cast<int>(rng() % shape.max_batch);
      for (int i = 0; i < n; ++i) {
        const std::string& key = keys[zipf ? zipf->Next(zrng) : rng() % keys.size()];
        const int dice = static_cast<int>(rng() % 100);
        const std::string value =
            UniqueValue(config.layout, static_cast<uint32_t>(t), ++seq, rng() % 24);
        if (dice < shape.get_pct) {
          batch.Get(key);
        } else if (dice < shape.get_pct + shape.put_pct) {
          batch.Put(key, value);
        } else if (dice < shape.get_pct + shape.put_pct + shape.delete_pct) {
          batch.Delete(key);
        } else {
          // Expect what this thread saw last: often still current, so many
          // CASes store; sometimes stale, so many don't.
          std::optional<std::string> expected;
          {
            std::lock_guard<std::mutex> lock(state.mu);
            auto it = state.last_seen.find(key);
            if (it != state.last_seen.end()) expected = it->second;
          }
          if (expected) {
            const std::string_view e = *expected;
            batch.CompareAndSwap(key, &e, value);
          } else {
            batch.CompareAndSwap(key, nullptr, value);
          }
        }
      }
      ops_issued.fetch_add(n, std::memory_order_relaxed);
      batches.fetch_add(1, std::memory_order_relaxed);
      if (rng() % 2 == 0) {
        state.Observe(batch, client->Execute(store.get(), batch));
        continue;
      }
      {
        std::unique_lock<std::mutex> lock(state.mu);
        state.cv.wait(lock, [&] { return state.in_flight < kMaxInFlight; });
        ++state.in_flight;
      }
      Batch copy = batch;  // The completion needs the keys; Submit takes the batch.
      client->Submit(store.get(), std::move(batch),
                     [&state, copy = std::move(copy)](Results&& results) {
                       state.Observe(copy, results);
                       std::lock_guard<std::mutex> lock(state.mu);
                       --state.in_flight;
                       state.cv.notify_all();
                     });
    }
    std::unique_lock<std::mutex> lock(state.mu);
    state.cv.wait(lock, [&] { return state.in_flight == 0; });
  };

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();
  const double run_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Quiescent final reads: part of the history, so they must agree with the
  // linearization the checker finds.
  HistoryRecorder::Client* reader = recorder.NewClient();
  for (const std::string& key : keys) {
    Batch b = store->NewBatch();
    b.Get(key);
    reader->Execute(store.get(), b);
  }

  for (const auto& st : states) ASSERT_FALSE(st->bad_result_count) << "a batch got the wrong number of results";
  const std::vector<Event> history = recorder.History();
  const auto check_start = std::chrono::steady_clock::now();
  const CheckResult r = lincheck::Check(history);
  const double check_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();

  std::printf("[%s, %d keys] %d threads, %.2f s: %llu batches, %zu ops (%.0f ops/s), checked in %.2f s (%llu steps)\n",
              row.name, shape.keys, threads, run_seconds,
              static_cast<unsigned long long>(batches.load()), history.size(),
              history.size() / run_seconds, check_seconds,
              static_cast<unsigned long long>(r.steps));
  ::testing::Test::RecordProperty("ops", static_cast<int>(history.size()));
  // No op may fail here (no limits are configured, keys and values are
  // valid): an error would also silently weaken the check.
  EXPECT_EQ(r.excluded, 0u) << "some operations returned an error";
  EXPECT_EQ(r.keys, static_cast<size_t>(shape.keys));
  EXPECT_GT(batches.load(), static_cast<uint64_t>(threads));
  ASSERT_EQ(r.verdict, lincheck::Verdict::kLinearizable) << r.explanation;
}

class StoreLinearizabilityTest : public ::testing::TestWithParam<Row> {};

TEST_P(StoreLinearizabilityTest, MixedBatchesOnFewKeysAreLinearizable) { RunStress(GetParam(), kFewKeys); }

TEST_P(StoreLinearizabilityTest, ZipfianReadMostlyBatchesAreLinearizable) {
  RunStress(GetParam(), kZipfKeys);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreLinearizabilityTest, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return RowName(info.param); });

}  // namespace
}  // namespace kvcg::stress
