// The gate that write batches share while the append-only log is off
// (durability/writer_gate.h): writes without a log no longer wait for one
// another, writes with a log still do (same key, same lane), a barrier gets
// in under a steady stream of writers, turning the log on waits for a write
// inside Submit, and turning it on under writes loses nothing.
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
#include "durable_test_util.h"
#include "forwarding_store.h"
#include "kvcg/durable.h"
#include "kvcg/store.h"
#include "temp_dir.h"

namespace kvcg {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::OpenDurableOver;

// These tests write much and need no fsync.
Config NoFsyncConfig(const std::string& dir, bool log) { return testing::DurableConfig(dir, log, FsyncPolicy::kNo); }

// Each test's files in a directory of its own (tests/support/temp_dir.h).
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("gate") {}
};

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
  MeetingStore* m = nullptr;
  std::unique_ptr<Store> store;
  const Status s = OpenDurableOver(NoFsyncConfig(dir.path(), log), [&](std::unique_ptr<Store> cpu) {
    auto meeting = std::make_unique<MeetingStore>(std::move(cpu), wait);
    m = meeting.get();
    return meeting;
  }, &store);
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
  std::atomic<int> rounds{0};
  std::thread barrier([&] {
    for (int round = 0; round < 20; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      gate.lock();
      seen_during_barrier.fetch_add(inside.load());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      seen_during_barrier.fetch_add(inside.load());
      gate.unlock();
      rounds.fetch_add(1);
    }
  });
  // A gate that let writers starve the barrier would hang it: fail instead
  // (stopping the writers then lets it finish).
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (rounds.load() < 20 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(rounds.load(), 20) << "the barrier did not get in within 30 s";
  stop = true;
  barrier.join();
  for (auto& t : writers) t.join();
  EXPECT_EQ(seen_during_barrier.load(), 0);
}

// Holds the first batch that writes "held" inside Submit until released.
class HoldingStore final : public testing::ForwardingStore {
 public:
  explicit HoldingStore(std::unique_ptr<Store> inner) : ForwardingStore(std::move(inner)) {}
  void Submit(Batch batch, Completion done) override {
    bool held = false;
    for (size_t i = 0; i < batch.size(); ++i) held |= batch.key(i) == "held";
    if (held && !used_.exchange(true)) {
      inside_.store(true);
      while (!released_.load()) std::this_thread::yield();
    }
    ForwardingStore::Submit(std::move(batch), std::move(done));
  }
  bool inside() const { return inside_.load(); }
  void Release() { released_.store(true); }

 private:
  std::atomic<bool> used_{false}, inside_{false}, released_{false};
};

TEST(WriterGate, TurningTheLogOnWaitsForAWriteInsideSubmit) {
  TempDir dir;
  HoldingStore* h = nullptr;
  {
    std::unique_ptr<Store> store;
    ASSERT_TRUE(OpenDurableOver(NoFsyncConfig(dir.path(), false), [&](std::unique_ptr<Store> cpu) {
      auto holding = std::make_unique<HoldingStore>(std::move(cpu));
      h = holding.get();
      return holding;
    }, &store).ok());
    Durable* d = AsDurable(store.get());
    ASSERT_NE(d, nullptr);
    std::thread writer([&] { store->Put("held", "before the log"); });
    while (!h->inside()) std::this_thread::yield();
    // The write is inside Submit, not yet in the store, under no log: the
    // log's base image must not be taken before it is in.
    std::atomic<bool> on{false};
    std::thread turn_on([&] {
      EXPECT_TRUE(d->SetAppendOnly(true).ok());
      on = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(on.load()) << "the log was turned on while a write without it was inside Submit";
    h->Release();
    writer.join();
    turn_on.join();
    EXPECT_TRUE(on.load());
    EXPECT_EQ(store->Get("held").value, "before the log");
  }
  // Reopened from the log alone: the write is in its base image.
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(NoFsyncConfig(dir.path(), true), &store).ok());
  OpResult r = store->Get("held");
  EXPECT_EQ(r.code, Code::kOk);
  EXPECT_EQ(r.value, "before the log");
}

TEST(WriterGate, TurningTheLogOnUnderWritesKeepsEveryAcknowledgedWrite) {
  TempDir dir;
  constexpr int kWriters = 4;
  std::vector<std::map<std::string, std::string>> acked(kWriters);
  {
    std::unique_ptr<Store> store;
    ASSERT_TRUE(Store::Open(NoFsyncConfig(dir.path(), false), &store).ok());
    Durable* d = AsDurable(store.get());
    ASSERT_NE(d, nullptr);
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        // Every key written once, so a write lost at the switch cannot be
        // hidden by a later (logged) write of the same key.
        for (uint64_t n = 0; !stop.load(); ++n) {
          Batch batch;  // a few keys a batch, as a server round has
          for (int k = 0; k < 4; ++k) batch.Put("w" + std::to_string(w) + ":" + std::to_string(n * 4 + k), "v");
          Results r = store->Execute(batch);
          for (size_t i = 0; i < batch.size(); ++i) {
            if (r.code(i) == Code::kOk || r.code(i) == Code::kNotFound) {  // (kNotFound: it was new)
              acked[w][std::string(batch.key(i))] = std::string(batch.value(i));
            }
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ASSERT_TRUE(d->SetAppendOnly(true).ok());  // synchronous: base image and log in place
    stop = true;
    for (auto& t : writers) t.join();
    EXPECT_TRUE(d->Persistence().aof_enabled);
  }
  // Reopened from the log (its base holds what was written before it).
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(NoFsyncConfig(dir.path(), true), &store).ok());
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
  EXPECT_EQ(store->Size(), keys);
}

}  // namespace
}  // namespace kvcg
