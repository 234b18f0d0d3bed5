// The gate that write batches share while the append-only log is off
// (durability/writer_gate.h): writes without a log no longer wait for one
// another, writes with a log still do (same key, same lane), a barrier gets
// in under a steady stream of writers, and turning the log on under writes
// loses nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "durability/durable_store.h"
#include "durability/writer_gate.h"
#include "forwarding_store.h"
#include "kvcg/durable.h"
#include "kvcg/store.h"
#include "temp_dir.h"

namespace kvcg {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Each test's files in a directory of its own (tests/support/temp_dir.h).
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("gate") {}
};

Config CpuConfig(const std::string& dir, bool log) {
  Config c;
  c.backend = Backend::kCpu;
  c.expected_keys = 1024;
  c.durability.dir = dir;
  c.durability.append_only = log;
  c.durability.fsync = FsyncPolicy::kNo;
  return c;
}

// Records how many batches writing "meet" were inside Submit at once (the
// peak): each waits there (up to `wait`) until two have been.
class MeetingStore final : public testing::ForwardingStore {
 public:
  MeetingStore(std::unique_ptr<Store> inner, std::chrono::milliseconds wait)
      : ForwardingStore(std::move(inner)), wait_(wait) {}
  void Submit(Batch batch, Completion done) override {
    bool meets = false;
    for (size_t i = 0; i < batch.size(); ++i) meets |= batch.key(i) == "meet";
    if (meets) {
      const int now_inside = inside_.fetch_add(1) + 1;
      int peak = peak_.load();
      while (now_inside > peak && !peak_.compare_exchange_weak(peak, now_inside)) {
      }
      const auto deadline = Clock::now() + wait_;
      while (peak_.load() < 2 && Clock::now() < deadline) std::this_thread::yield();
    }
    ForwardingStore::Submit(std::move(batch), std::move(done));
    if (meets) inside_.fetch_sub(1);
  }
  int peak() const { return peak_.load(); }

 private:
  const std::chrono::milliseconds wait_;
  std::atomic<int> inside_{0};
  std::atomic<int> peak_{0};
};

// Two threads PUT "meet" at once through a DurableStore over MeetingStore;
// returns how many were inside Submit together at most.
int PeakOfTwoWriters(bool log, std::chrono::milliseconds wait) {
  TempDir dir;
  const Config config = CpuConfig(dir.path(), log);
  std::unique_ptr<Store> cpu;
  EXPECT_TRUE(Store::Open(CpuConfig(dir.path(), false), &cpu).ok());
  auto meeting = std::make_unique<MeetingStore>(std::move(cpu), wait);
  MeetingStore* m = meeting.get();
  std::unique_ptr<Store> store;
  const Status s = durability::OpenDurable(config, std::move(meeting), &store);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return -1;
  auto put = [&](const char* value) {
    const Code c = store->Put("meet", value).code;
    EXPECT_TRUE(c == Code::kOk || c == Code::kNotFound) << int(c);  // (the previous value, if any)
  };
  std::thread a([&] { put("a"); });
  std::thread b([&] { put("b"); });
  a.join();
  b.join();
  return m->peak();
}

TEST(WriterGate, WritesWithoutALogAreInsideSubmitTogether) {
  // Before the gate both took the lane of "meet", and the second waited
  // for the first to leave Submit.
  EXPECT_EQ(PeakOfTwoWriters(/*log=*/false, std::chrono::seconds(20)), 2);
}

TEST(WriterGate, WritesWithALogStillTakeTheirKeysLanes) {
  // Same key, same lane: one at a time, so the log's order is the store's.
  EXPECT_EQ(PeakOfTwoWriters(/*log=*/true, std::chrono::milliseconds(300)), 1);
}

TEST(WriterGate, ABarrierGetsInUnderASteadyStreamOfWriters) {
  durability::WriterGate gate;
  std::atomic<bool> stop{false};
  std::atomic<int> inside{0};
  std::atomic<int> seen_during_barrier{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      while (!stop.load()) {
        gate.lock_shared();
        inside.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // overlapping holders
        inside.fetch_sub(1);
        gate.unlock_shared();
      }
    });
  }
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    gate.lock();
    seen_during_barrier.fetch_add(inside.load());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    seen_during_barrier.fetch_add(inside.load());
    gate.unlock();
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(seen_during_barrier.load(), 0);
}

TEST(WriterGate, TurningTheLogOnUnderWritesKeepsEveryAcknowledgedWrite) {
  TempDir dir;
  constexpr int kWriters = 4;
  std::vector<std::map<std::string, std::string>> acked(kWriters);
  {
    std::unique_ptr<Store> store;
    ASSERT_TRUE(Store::Open(CpuConfig(dir.path(), false), &store).ok());
    Durable* d = dynamic_cast<Durable*>(store.get());
    ASSERT_NE(d, nullptr);
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        for (uint64_t n = 0; !stop.load(); ++n) {
          Batch batch;  // a few keys a batch, as a server round has
          for (int k = 0; k < 4; ++k) {
            batch.Put("w" + std::to_string(w) + ":" + std::to_string((n * 4 + k) % 500), std::to_string(n));
          }
          Results r = store->Execute(batch);
          for (size_t i = 0; i < batch.size(); ++i) {
            if (r.code(i) == Code::kOk) acked[w][std::string(batch.key(i))] = std::string(batch.value(i));
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ASSERT_TRUE(d->SetAppendOnly(true).ok());
    for (int i = 0; i < 500 && d->Persistence().aof_rewrite_in_progress; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    stop = true;
    for (auto& t : writers) t.join();
    EXPECT_TRUE(d->Persistence().aof_enabled);
  }
  // Reopened from the log (its base holds what was written before it).
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(CpuConfig(dir.path(), true), &store).ok());
  size_t keys = 0;
  for (const auto& m : acked) {
    keys += m.size();
    for (const auto& [k, v] : m) {
      OpResult r = store->Get(k);
      ASSERT_EQ(r.code, Code::kOk) << k;
      EXPECT_EQ(r.value, v) << k;
    }
  }
  EXPECT_GT(keys, 0u);
}

}  // namespace
}  // namespace kvcg
