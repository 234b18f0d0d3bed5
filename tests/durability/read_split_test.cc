// A write batch's reads of keys it does not write run outside the log lanes
// on a store that runs batches inside Submit (durability/read_split.h): which
// ops go under the lanes, how the two parts' answers meet again, that a
// split batch answers and replays exactly as one batch, and that its reads
// no longer wait for another batch that holds its lanes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "durability/read_split.h"
#include "durable_test_util.h"
#include "forwarding_store.h"
#include "kvcg/batch.h"
#include "kvcg/hash.h"
#include "kvcg/results.h"
#include "kvcg/store.h"
#include "temp_dir.h"

namespace kvcg {
namespace {

using Clock = std::chrono::steady_clock;
using durability::OpsOnWrittenKeys;
using durability::PlanReadSplit;
using durability::SplitJoin;
using testing::OpenDurableOver;

class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("split") {}
};

TEST(ReadSplit, OpsOnWrittenKeysAreEveryOpOnAKeyAWriteTouches) {
  Batch b;
  b.Get("a");                                       // 0: a is deleted later
  b.Put("b", "1");                                  // 1
  b.Get("b");                                       // 2
  b.Get("c");                                       // 3: only read
  b.Delete("a");                                    // 4
  b.Get("a");                                       // 5
  b.Expire("d", 99);                                // 6
  b.Get("d");                                       // 7
  b.Get("bb");                                      // 8: shares a prefix, not a key
  const std::string_view old_e = "old";
  b.CompareAndSwap("e", &old_e, "new");             // 9
  b.Get("c");                                       // 10
  std::vector<uint32_t> written{42};                // cleared first
  OpsOnWrittenKeys(b, &Xxh3Hash, &written);
  EXPECT_EQ(written, (std::vector<uint32_t>{0, 1, 2, 4, 5, 6, 7, 9}));
  // Every key under one hash (a forced collision): the bytes still decide.
  OpsOnWrittenKeys(b, [](std::string_view) { return uint64_t{7}; }, &written);
  EXPECT_EQ(written, (std::vector<uint32_t>{0, 1, 2, 4, 5, 6, 7, 9}));

  Batch reads;
  reads.Get("x");
  reads.Get("y");
  OpsOnWrittenKeys(reads, &Xxh3Hash, &written);
  EXPECT_TRUE(written.empty());
}

TEST(ReadSplit, ThePlanCopiesThePartWithFewerBytes) {
  durability::ReadSplitPlan plan;
  Batch small_writes;
  small_writes.Get(std::string(100, 'r'));  // 0: the other part, 100 bytes
  small_writes.Put("w", "1");               // 1: written, 2 bytes
  small_writes.Get("w");                    // 2: written, 1 byte
  ASSERT_TRUE(PlanReadSplit(small_writes, &Xxh3Hash, &plan));
  EXPECT_TRUE(plan.copies_written);
  EXPECT_EQ(plan.copied, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(plan.bytes, 3u);

  Batch large_writes;
  large_writes.Put("w", std::string(1000, 'v'));  // 0: written, 1001 bytes
  large_writes.Get("r");                          // 1: the other part
  large_writes.Get("s");                          // 2: the other part
  ASSERT_TRUE(PlanReadSplit(large_writes, &Xxh3Hash, &plan));
  EXPECT_FALSE(plan.copies_written);
  EXPECT_EQ(plan.copied, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(plan.bytes, 2u);

  Batch writes_and_noops;
  writes_and_noops.Put("w", "1");
  writes_and_noops.Get("masked");
  writes_and_noops.SetNoop(1);
  EXPECT_FALSE(PlanReadSplit(writes_and_noops, &Xxh3Hash, &plan)) << "nothing to run outside the lanes";
}

// Results as a CPU store builds them: op i found with values[i], or not
// found where values[i] is null; expire-at where expires is given.
Results Built(const std::vector<const char*>& values, const std::vector<uint64_t>& expires = {}) {
  ResultsBuilder b;
  b.Reset(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == nullptr) continue;
    b.SetValue(i, Code::kOk, values[i]);
    if (!expires.empty()) b.SetExpire(i, expires[i]);
  }
  return b.Finish();
}

TEST(ReadSplit, MergeAnswersTheMaskedOpsInPlace) {
  // Ops 1 and 3 were copied; the base saw them as no-ops.
  Results merged = SplitJoin::Merge(Built({"r0", nullptr, "r2", nullptr}), Built({"w1", nullptr}), {1, 3});
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged.value(0), "r0");
  EXPECT_EQ(merged.value(1), "w1") << "kept alive by the merged Results (ASan: use after free otherwise)";
  EXPECT_EQ(merged.value(2), "r2");
  EXPECT_EQ(merged.code(3), Code::kNotFound);
}

TEST(ReadSplit, MergeRebuildsWhenTheReadsHaveNoExpireColumn) {
  // A copied op's answer carries an expire-at and no op of the base had
  // one: the base cannot hold it, so both are seen through a new Results.
  Results merged = SplitJoin::Merge(Built({"r0", nullptr, nullptr}), Built({"w1", "w2"}, {0, 777}), {1, 2});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged.value(0), "r0");
  EXPECT_EQ(merged.expire_at(0), 0u);
  EXPECT_EQ(merged.value(1), "w1");
  EXPECT_EQ(merged.value(2), "w2");
  EXPECT_EQ(merged.expire_at(2), 777u);
}

// A batch whose reads of unwritten keys carry fewer bytes than its ops on
// written keys (the reads are copied: the long value stays in place) or more
// (the writes are copied). Either way it answers as one batch, in order, and
// the log replays to the state it left.
void ExpectSplitAnswersAsOneBatch(bool long_values) {
  TempDir dir;
  const Config cfg = testing::DurableConfig(dir.path(), /*log=*/true, FsyncPolicy::kNo);
  const std::string v1 = long_values ? std::string(4096, '1') : "v1";
  const std::string unwritten_key = long_values ? "other" : std::string(200, 'o');
  std::vector<OpResult> got;
  {
    std::unique_ptr<Store> store;
    ASSERT_TRUE(Store::Open(cfg, &store).ok());
    ASSERT_EQ(store->Put(unwritten_key, "o").code, Code::kNotFound);
    ASSERT_EQ(store->Put("k", "v0").code, Code::kNotFound);
    Batch b;
    b.Get(unwritten_key);                  // a read only: outside the lanes
    b.Get("k");                            // v0, before the PUT below
    b.Put("k", v1);                        // previous: v0
    b.Get("k");                            // v1
    b.Get("missing");
    const std::string_view expected = v1;
    b.CompareAndSwap("k", &expected, "v2");  // holds: previous v1
    b.Delete("other2");                    // never stored
    b.Get(unwritten_key);
    got = store->Execute(std::move(b)).ToOwned();
  }
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0].value, "o");
  EXPECT_EQ(got[1].value, "v0");
  EXPECT_EQ(got[2].value, "v0");
  EXPECT_EQ(got[3].value, v1);
  EXPECT_EQ(got[4].code, Code::kNotFound);
  EXPECT_EQ(got[5].code, Code::kOk);
  EXPECT_EQ(got[5].value, v1);
  EXPECT_EQ(got[6].code, Code::kNotFound);
  EXPECT_EQ(got[7].value, "o");
  std::unique_ptr<Store> reopened;
  ASSERT_TRUE(Store::Open(cfg, &reopened).ok());
  EXPECT_EQ(reopened->Get("k").value, "v2");
  EXPECT_EQ(reopened->Get(unwritten_key).value, "o");
  EXPECT_EQ(reopened->Size(), 2u);
}

TEST(ReadSplit, ASplitBatchAnswersAndReplaysAsOneBatchWritesCopied) { ExpectSplitAnswersAsOneBatch(false); }
TEST(ReadSplit, ASplitBatchAnswersAndReplaysAsOneBatchReadsCopied) { ExpectSplitAnswersAsOneBatch(true); }

TEST(ReadSplit, AnExpireAtFromTheCopiedPartReachesTheAnswer) {
  // The PUT's previous value has an expire-at, the base part's GET none:
  // the merge rebuilds (SplitJoin::Merge) and keeps it.
  TempDir dir;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(testing::DurableConfig(dir.path(), /*log=*/true, FsyncPolicy::kNo), &store).ok());
  const uint64_t at = uint64_t{4} << 60;  // far ahead on any clock
  {
    Batch b;
    b.Put("ttl", "old", at);
    b.Put("plain", "p");
    store->Execute(std::move(b));
  }
  Batch b;
  b.Get(std::string(100, 'x'));  // more bytes than the write: the write is copied
  b.Put("ttl", "new");
  b.Get("plain");
  const Results r = store->Execute(std::move(b));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.code(0), Code::kNotFound);
  EXPECT_EQ(r.value(1), "old");
  EXPECT_EQ(r.expire_at(1), at);
  EXPECT_EQ(r.value(2), "p");
  EXPECT_EQ(r.expire_at(2), 0u);
}

// Holds a batch that writes "held" inside Submit until a batch reading
// "free" has been inside Submit too, or until a deadline; says whether it
// saw that read while it held its lane.
class HoldingStore final : public testing::ForwardingStore {
 public:
  explicit HoldingStore(std::unique_ptr<Store> inner) : ForwardingStore(std::move(inner)) {}
  void Submit(Batch batch, Completion done) override {
    bool holds = false, reads_free = false;
    for (size_t i = 0; i < batch.size(); ++i) {
      holds |= batch.type(i) == OpType::kPut && batch.key(i) == "held";
      reads_free |= batch.type(i) == OpType::kGet && batch.key(i) == "free";
    }
    if (reads_free) read_inside_.store(true);
    if (holds && !held_once_.exchange(true)) {
      holding_.store(true);
      const auto deadline = Clock::now() + std::chrono::seconds(3);
      while (!read_inside_.load() && Clock::now() < deadline) std::this_thread::yield();
      saw_read_while_holding_.store(read_inside_.load());
    }
    ForwardingStore::Submit(std::move(batch), std::move(done));
  }
  bool holding() const { return holding_.load(); }
  bool saw_read_while_holding() const { return saw_read_while_holding_.load(); }

 private:
  std::atomic<bool> held_once_{false}, holding_{false}, read_inside_{false}, saw_read_while_holding_{false};
};

TEST(ReadSplit, ReadsOfUnwrittenKeysDoNotWaitForAnotherBatchsLanes) {
  // Batch A writes "held" and stays inside Submit, holding that key's lane.
  // Batch B reads "free" and writes "held" (the same lane): its write waits
  // for A, its read does not. Before the split all of B waited for A's lane.
  TempDir dir;
  HoldingStore* h = nullptr;
  std::unique_ptr<Store> store;
  const Status s = OpenDurableOver(testing::DurableConfig(dir.path(), /*log=*/true, FsyncPolicy::kNo),
                                   [&](std::unique_ptr<Store> cpu) {
                                     auto holding = std::make_unique<HoldingStore>(std::move(cpu));
                                     h = holding.get();
                                     return holding;
                                   },
                                   &store);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::thread a([&] { store->Put("held", "a"); });
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!h->holding() && Clock::now() < deadline) std::this_thread::yield();
  if (!h->holding()) {
    a.join();
    FAIL() << "the first batch never reached the store";
  }
  Batch b;
  b.Get("free");
  b.Put("held", "b");
  const std::vector<OpResult> got = store->Execute(std::move(b)).ToOwned();
  a.join();
  EXPECT_TRUE(h->saw_read_while_holding());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].code, Code::kNotFound);
  EXPECT_EQ(got[1].value, "a") << "B's write came after A's";
  EXPECT_EQ(store->Get("held").value, "b");
}

}  // namespace
}  // namespace kvcg
