// Same-key order across one submitter's batches, under load.
//
// The contract (kvcg/store.h): operations on one key inside a batch take
// effect in batch order, and a batch whose Submit call returned before
// another Submit started takes effect first on every key they share — even
// when the second is submitted before the first completes (pipelining,
// which is where a GPU backend with several orchestrators and streams could
// reorder). Each submitter here owns its keys, so a sequential model of
// them predicts every result exactly; meanwhile hammer threads keep the
// store busy on other keys (and, in the collision rows, in the same bucket).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "kvcg/store.h"
#include "linearizability.h"
#include "stress_support.h"

namespace kvcg::stress {
namespace {

constexpr int kSubmitters = 2;
constexpr int kKeysPerSubmitter = 3;
constexpr int kPipelineDepth = 32;  // Batches submitted before waiting for any.

struct Expected {
  std::vector<std::optional<std::string>> results;  // nullopt: kNotFound.
};

// Outstanding batches of one round and their results.
struct Round {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  std::vector<Results> results;  // Kept (views valid) until the round is compared.
};

// Compares one round's results against the model; returns "" or the first
// mismatch, described.
std::string Compare(const std::vector<Batch>& batches, const std::vector<Expected>& expected,
                    const std::vector<Results>& results) {
  for (size_t b = 0; b < batches.size(); ++b) {
    if (results[b].size() != batches[b].size()) {
      return "batch " + std::to_string(b) + ": " + std::to_string(results[b].size()) +
             " results for " + std::to_string(batches[b].size()) + " ops";
    }
    for (size_t i = 0; i < batches[b].size(); ++i) {
      const OpResultView got = results[b][i];
      const std::optional<std::string>& want = expected[b].results[i];
      const bool ok = want ? got.code == Code::kOk && got.value == *want : got.code == Code::kNotFound;
      if (!ok) {
        return std::string("batch ") + std::to_string(b) + " op " + std::to_string(i) + ": " +
               OpTypeName(batches[b].type(i)) + " " + lincheck::Quote(batches[b].key(i)) +
               " expected " + (want ? "ok " + lincheck::Quote(*want) : std::string("not_found")) +
               ", got " + CodeName(got.code) + " " + lincheck::Quote(got.value);
      }
    }
  }
  return "";
}

class SameKeyOrderTest : public ::testing::TestWithParam<Row> {};

TEST_P(SameKeyOrderTest, PipelinedBatchesOfOneSubmitterTakeEffectInOrder) {
  const Config config = GetParam().make_config();
  if (const std::string why = Unavailable(GetParam(), config); !why.empty()) {
    GTEST_SKIP() << "GPU backend unavailable: " << why;
  }
  std::unique_ptr<Store> store;
  const Status s = Store::Open(config, &store);
  ASSERT_TRUE(s.ok()) << s.ToString();

  const double seconds = StressSeconds() / 2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<bool> stop{false};

  // Hammers: random single-op and multi-op traffic on their own keys.
  const std::vector<std::string> hammer_keys = Keys(config.layout, 16, /*salt=*/99);
  const int hammers = std::max(1, StressThreads() - kSubmitters);
  std::vector<std::thread> pool;
  for (int h = 0; h < hammers; ++h) {
    pool.emplace_back([&, h] {
      std::mt19937_64 rng(h);
      uint64_t seq = 0;
      Results results;
      while (!stop.load(std::memory_order_relaxed)) {
        Batch batch = store->NewBatch();
        const int n = 1 + static_cast<int>(rng() % 16);
        for (int i = 0; i < n; ++i) {
          const std::string& key = hammer_keys[rng() % hammer_keys.size()];
          switch (rng() % 3) {
            case 0: batch.Get(key); break;
            case 1: batch.Put(key, UniqueValue(config.layout, 1000 + h, ++seq)); break;
            default: batch.Delete(key); break;
          }
        }
        results = store->Execute(std::move(batch));  // releases the previous results
      }
    });
  }

  std::vector<std::string> failures(kSubmitters);
  std::vector<uint64_t> checked_ops(kSubmitters, 0);
  for (int sidx = 0; sidx < kSubmitters; ++sidx) {
    pool.emplace_back([&, sidx] {
      const std::vector<std::string> keys = Keys(config.layout, kKeysPerSubmitter, /*salt=*/sidx + 1);
      std::map<std::string, std::string> model;  // The truth for this submitter's keys.
      std::mt19937_64 rng(1000 + sidx);
      uint64_t seq = 0;
      for (int round = 0; std::chrono::steady_clock::now() < deadline; ++round) {
        std::vector<Batch> batches;
        std::vector<Expected> expected;
        auto add = [&](Batch& batch, Expected& exp, OpType type, const std::string& key) {
          auto it = model.find(key);
          exp.results.push_back(it == model.end() ? std::nullopt
                                                  : std::optional<std::string>(it->second));
          const std::string value = UniqueValue(config.layout, sidx, ++seq);
          switch (type) {
            case OpType::kGet: batch.Get(key); break;
            case OpType::kPut:
              batch.Put(key, value);
              model[key] = value;
              break;
            case OpType::kDelete:
              batch.Delete(key);
              if (it != model.end()) model.erase(it);
              break;
            case OpType::kCompareAndSwap: {
              // Right expectation three times in four.
              const bool absent = it == model.end();
              const bool right = rng() % 4 != 0;
              if (absent == right) {
                batch.CompareAndSwap(key, nullptr, value);
              } else {
                const std::string e = absent ? UniqueValue(config.layout, sidx, 0) : it->second;
                const std::string_view ev = e;
                batch.CompareAndSwap(key, &ev, value);
              }
              if (right) model[key] = value;
              break;
            }
          }
        };
        if (round % 2 == 0) {
          // The plain chain: PUT 1, PUT 2, GET, DELETE, GET, PUT 3, ... each
          // in its own batch, all in flight at once.
          const std::string& key = keys[0];
          const OpType chain[] = {OpType::kPut, OpType::kPut, OpType::kGet, OpType::kDelete,
                                  OpType::kGet, OpType::kPut, OpType::kCompareAndSwap, OpType::kGet};
          for (int b = 0; b < kPipelineDepth; ++b) {
            batches.push_back(store->NewBatch());
            expected.emplace_back();
            add(batches.back(), expected.back(), chain[b % 8], key);
          }
        } else {
          // Random batches, keys repeating inside and across batches.
          for (int b = 0; b < kPipelineDepth; ++b) {
            batches.push_back(store->NewBatch());
            expected.emplace_back();
            const int n = 1 + static_cast<int>(rng() % 8);
            for (int i = 0; i < n; ++i) {
              add(batches.back(), expected.back(), static_cast<OpType>(rng() % 4),
                  keys[rng() % keys.size()]);
            }
          }
        }
        Round r;
        r.pending = static_cast<int>(batches.size());
        r.results.resize(batches.size());
        for (size_t b = 0; b < batches.size(); ++b) {
          // A copy goes to the store; `batches` keeps the ops for Compare.
          store->Submit(batches[b], [&r, b](Results&& results) {
            std::lock_guard<std::mutex> lock(r.mu);
            r.results[b] = std::move(results);
            --r.pending;
            r.cv.notify_all();
          });
        }
        {
          std::unique_lock<std::mutex> lock(r.mu);
          r.cv.wait(lock, [&] { return r.pending == 0; });
        }
        for (const Batch& b : batches) checked_ops[sidx] += b.size();
        std::string mismatch = Compare(batches, expected, r.results);
        if (!mismatch.empty()) {
          failures[sidx] = "submitter " + std::to_string(sidx) + ", round " + std::to_string(round) +
                           ": " + mismatch;
          return;
        }
      }
    });
  }
  // Submitters stop at the deadline; then the hammers.
  for (int i = hammers; i < static_cast<int>(pool.size()); ++i) pool[i].join();
  stop = true;
  for (int i = 0; i < hammers; ++i) pool[i].join();

  for (int sidx = 0; sidx < kSubmitters; ++sidx) {
    EXPECT_EQ(failures[sidx], "");
    EXPECT_GT(checked_ops[sidx], 0u) << "submitter " << sidx << " never completed a round";
  }
  std::printf("[%s] %d submitters x depth %d, %d hammers: %llu ops checked against the model\n",
              GetParam().name, kSubmitters, kPipelineDepth, hammers,
              static_cast<unsigned long long>(checked_ops[0] + checked_ops[1]));
}

INSTANTIATE_TEST_SUITE_P(Backends, SameKeyOrderTest, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return RowName(info.param); });

}  // namespace
}  // namespace kvcg::stress
