// HotCache in isolation: misses create pending entries whose fills become
// the entry's state, queued ops run in order at the fill, hits answer with
// previous values, the log replays exactly the epoch's updates, eviction
// keeps what the predicate keeps, write-through never dirties.
#include "hotcache/hot_cache.h"

#include <gtest/gtest.h>

namespace kvcg::hotcache {
namespace {

constexpr uint64_t kHash = 42;  // one bucket for everything: exercises chains

// Records what the cache answers, with owned copies (the cache's value views
// die with the call).
struct Sink final : ResultSink {
  void Answer(uint32_t index, Code code, std::string_view value, uint64_t expire_at,
              bool q) override {
    results[index] = {code, std::string(value), expire_at};
    queued[index] = q;
    ++answers[index];
  }
  OpResult results[128];
  bool queued[128] = {};
  int answers[128] = {};
};

// The canonical store's answers, as a Results (what CommitLog reads).
Results MakeResults(std::initializer_list<OpResultView> rs) {
  ResultsBuilder b;
  b.Reset(rs.size());
  size_t i = 0;
  for (const OpResultView& r : rs) b.SetValue(i++, r.code, r.value);
  return b.Finish();
}

struct Harness {
  explicit Harness(bool write_through = false) : cache({4, write_through}) {}
  explicit Harness(const HotCache::Options& options) : cache(options) {}
  // Appends an op to the batch and returns its ref (results sized generously).
  OpRef Add(OpType type, std::string_view key, std::string_view value = {}) {
    batch.Append(type, key, value);
    const uint32_t i = static_cast<uint32_t>(batch.size() - 1);
    return {&batch, i, &sink};
  }
  const OpResult& Result(const OpRef& op) const { return sink.results[op.index]; }
  Batch batch;
  Sink sink;
  HotCache cache;
};

TEST(HotCacheTest, MissFillThenHit) {
  Harness h;
  OpRef get = h.Add(OpType::kGet, "k");
  ASSERT_EQ(h.cache.Execute(get, kHash), Outcome::kMiss);
  EXPECT_EQ(h.cache.pending(), 1u);
  HotCache::Completion c;
  // What the canonical store answered; the caller records the miss's own result.
  h.cache.Complete(get, kHash, {Code::kOk, "canon"}, &c);
  ASSERT_EQ(c.done.size(), 1u);
  EXPECT_FALSE(c.has_next);
  EXPECT_EQ(h.cache.pending(), 0u);
  EXPECT_EQ(h.sink.answers[get.index], 0);
  OpRef get2 = h.Add(OpType::kGet, "k");
  ASSERT_EQ(h.cache.Execute(get2, kHash), Outcome::kDone);
  EXPECT_EQ(h.Result(get2).code, Code::kOk);
  EXPECT_EQ(h.Result(get2).value, "canon");
  EXPECT_FALSE(h.sink.queued[get2.index]);  // answered inside Execute
  EXPECT_EQ(h.cache.entries(), 1u);
  EXPECT_EQ(h.cache.dirty(), 0u);
}

TEST(HotCacheTest, OpsQueueBehindMissAndRunInOrder) {
  Harness h;
  OpRef miss = h.Add(OpType::kGet, "k");
  ASSERT_EQ(h.cache.Execute(miss, kHash), Outcome::kMiss);
  OpRef put = h.Add(OpType::kPut, "k", "new");
  OpRef get = h.Add(OpType::kGet, "k");
  OpRef del = h.Add(OpType::kDelete, "k");
  OpRef other = h.Add(OpType::kGet, "other");  // same hash, different key: its own miss
  EXPECT_EQ(h.cache.Execute(put, kHash), Outcome::kWaiting);
  EXPECT_EQ(h.cache.Execute(get, kHash), Outcome::kWaiting);
  EXPECT_EQ(h.cache.Execute(del, kHash), Outcome::kWaiting);
  EXPECT_EQ(h.cache.Execute(other, kHash), Outcome::kMiss);
  HotCache::Completion c;
  h.cache.Complete(miss, kHash, {Code::kOk, "old"}, &c);
  ASSERT_EQ(c.done.size(), 4u);
  EXPECT_EQ(h.Result(put).value, "old");
  EXPECT_EQ(h.Result(get).value, "new");
  EXPECT_EQ(h.Result(del).value, "new");
  for (const OpRef& w : {put, get, del}) {
    EXPECT_EQ(h.sink.answers[w.index], 1);
    EXPECT_TRUE(h.sink.queued[w.index]);  // answered by Complete
  }
  EXPECT_EQ(h.cache.dirty(), 1u);  // logged once although updated twice
  EXPECT_EQ(h.cache.pending(), 1u);  // "other" is still in flight
  EXPECT_EQ(h.cache.presence_delta(), -1);  // canonical has k, the cache says deleted
}

TEST(HotCacheTest, FailedMissHandsQueueToNextOp) {
  Harness h;
  OpRef put = h.Add(OpType::kPut, "k", "v");
  ASSERT_EQ(h.cache.Execute(put, kHash), Outcome::kMiss);
  OpRef get = h.Add(OpType::kGet, "k");
  EXPECT_EQ(h.cache.Execute(get, kHash), Outcome::kWaiting);
  HotCache::Completion c;
  h.cache.Complete(put, kHash, {Code::kCapacityExhausted, ""}, &c);
  ASSERT_EQ(c.done.size(), 1u);  // the failed put
  ASSERT_TRUE(c.has_next);       // the get must now fetch the state itself
  EXPECT_EQ(c.next.index, get.index);
  EXPECT_EQ(c.next.sink, &h.sink);
  EXPECT_EQ(h.sink.answers[get.index], 0);  // not answered by the cache
  h.cache.Complete(get, kHash, {Code::kNotFound, ""}, &c);
  EXPECT_EQ(c.done.size(), 1u);
  EXPECT_EQ(h.cache.pending(), 0u);
  OpRef get2 = h.Add(OpType::kGet, "k");
  EXPECT_EQ(h.cache.Execute(get2, kHash), Outcome::kDone);  // tombstone
  EXPECT_EQ(h.Result(get2).code, Code::kNotFound);
}

TEST(HotCacheTest, FailedMissWithNothingQueuedLeavesNoEntry) {
  Harness h;
  OpRef put = h.Add(OpType::kPut, "k", "v");
  ASSERT_EQ(h.cache.Execute(put, kHash), Outcome::kMiss);
  HotCache::Completion c;
  h.cache.Complete(put, kHash, {Code::kTimedOut, ""}, &c);
  EXPECT_EQ(h.cache.entries(), 0u);
  EXPECT_EQ(h.cache.Execute(h.Add(OpType::kGet, "k"), kHash), Outcome::kMiss);
}

// A miss on an absent key leaves a tombstone (the next op on the key is
// answered here). With bound_absent (hot-only mode) only while the cache is
// within its capacity: past it, asking for keys that do not exist costs no
// memory, while every key with a value (or with a write queued behind its
// miss) stays cached.
TEST(HotCacheTest, AbsentKeysLeaveTombstonesWithinTheBound) {
  HotCache::Completion c;
  HotCache::Options o;
  o.buckets = 1;  // capacity 8
  o.bound_absent = true;
  Harness h(o);
  ASSERT_EQ(h.cache.capacity(), 8u);
  for (int i = 0; i < 8; ++i) {  // within the bound: tombstones stay
    OpRef get = h.Add(OpType::kGet, "absent" + std::to_string(i));
    ASSERT_EQ(h.cache.Execute(get, kHash), Outcome::kMiss);
    h.cache.Complete(get, kHash, {Code::kNotFound, ""}, &c);
  }
  EXPECT_EQ(h.cache.entries(), 8u);
  EXPECT_EQ(h.cache.Execute(h.Add(OpType::kGet, "absent0"), kHash), Outcome::kDone);
  // Past it: an absent key's entry goes once its miss is answered ...
  OpRef get = h.Add(OpType::kGet, "a");
  ASSERT_EQ(h.cache.Execute(get, kHash), Outcome::kMiss);
  h.cache.Complete(get, kHash, {Code::kNotFound, ""}, &c);
  EXPECT_EQ(h.cache.entries(), 8u);
  EXPECT_EQ(h.cache.Execute(h.Add(OpType::kGet, "a"), kHash), Outcome::kMiss);  // asks again
  EXPECT_EQ(h.cache.entries(), 9u);                                              // in flight
  // ... and so does one a DELETE found (the canonical store agrees it is gone);
  OpRef del = h.Add(OpType::kDelete, "b");
  ASSERT_EQ(h.cache.Execute(del, kHash), Outcome::kMiss);
  h.cache.Complete(del, kHash, {Code::kOk, "old"}, &c);
  EXPECT_EQ(h.cache.entries(), 9u);
  // a PUT queued behind the miss makes the entry the key's only copy: kept;
  OpRef miss = h.Add(OpType::kGet, "c");
  ASSERT_EQ(h.cache.Execute(miss, kHash), Outcome::kMiss);
  OpRef put = h.Add(OpType::kPut, "c", "new");
  ASSERT_EQ(h.cache.Execute(put, kHash), Outcome::kWaiting);
  h.cache.Complete(miss, kHash, {Code::kNotFound, ""}, &c);
  EXPECT_EQ(c.done.size(), 2u);
  EXPECT_EQ(h.cache.entries(), 10u);
  EXPECT_EQ(h.cache.dirty(), 1u);
  OpRef hit = h.Add(OpType::kGet, "c");
  ASSERT_EQ(h.cache.Execute(hit, kHash), Outcome::kDone);
  EXPECT_EQ(h.Result(hit).value, "new");
  // a key with a value stays cached.
  OpRef found = h.Add(OpType::kGet, "d");
  ASSERT_EQ(h.cache.Execute(found, kHash), Outcome::kMiss);
  h.cache.Complete(found, kHash, {Code::kOk, "v"}, &c);
  EXPECT_EQ(h.cache.entries(), 11u);
  EXPECT_EQ(h.cache.Execute(h.Add(OpType::kGet, "d"), kHash), Outcome::kDone);
  // Without bound_absent (kvcg mode) tombstones stay past the capacity.
  Harness k(HotCache::Options{1});
  for (int i = 0; i < 12; ++i) {
    OpRef g = k.Add(OpType::kGet, "absent" + std::to_string(i));
    ASSERT_EQ(k.cache.Execute(g, kHash), Outcome::kMiss);
    k.cache.Complete(g, kHash, {Code::kNotFound, ""}, &c);
  }
  EXPECT_EQ(k.cache.entries(), 12u);
}

// The same bound for a deleted key's tombstone once it is written back: with
// bound_absent, past the capacity, CommitLog removes it; without, it stays.
TEST(HotCacheTest, WrittenBackTombstonesGoPastTheBound) {
  for (const bool bound : {true, false}) {
    SCOPED_TRACE(bound ? "bound_absent" : "keep tombstones");
    HotCache::Options o;
    o.buckets = 1;  // capacity 8
    o.bound_absent = bound;
    Harness h(o);
    HotCache::Completion c;
    for (int i = 0; i < 12; ++i) {
      OpRef get = h.Add(OpType::kGet, "k" + std::to_string(i));
      ASSERT_EQ(h.cache.Execute(get, kHash), Outcome::kMiss);
      h.cache.Complete(get, kHash, {Code::kOk, "v"}, &c);  // values stay past the bound
    }
    ASSERT_EQ(h.cache.entries(), 12u);
    for (int i = 0; i < 12; ++i) {
      ASSERT_EQ(h.cache.Execute(h.Add(OpType::kDelete, "k" + std::to_string(i)), kHash),
                Outcome::kDone);
    }
    EXPECT_EQ(h.cache.dirty(), 12u);
    EXPECT_EQ(h.cache.entries(), 12u);  // dirty: the only record of the deletes
    Batch replay;
    h.cache.CollectLog(&replay);
    ASSERT_EQ(replay.size(), 12u);
    ResultsBuilder rb;
    rb.Reset(12);
    for (size_t i = 0; i < 12; ++i) rb.SetValue(i, Code::kOk, "v");
    EXPECT_EQ(h.cache.CommitLog(rb.Finish()), 0u);
    EXPECT_EQ(h.cache.dirty(), 0u);
    EXPECT_EQ(h.cache.entries(), bound ? 8u : 12u);
    // Whatever was removed or kept, every key reads as deleted.
    for (int i = 0; i < 12; ++i) {
      OpRef get = h.Add(OpType::kGet, "k" + std::to_string(i));
      const Outcome out = h.cache.Execute(get, kHash);
      if (out == Outcome::kDone) {
        EXPECT_EQ(h.Result(get).code, Code::kNotFound) << i;
      } else {
        EXPECT_EQ(out, Outcome::kMiss) << i;  // removed: the canonical store is asked
        h.cache.Complete(get, kHash, {Code::kNotFound, ""}, &c);
      }
    }
  }
}

TEST(HotCacheTest, LogReplaysCurrentStateAndEvictionFollowsPredicate) {
  Harness h;
  HotCache::Completion c;
  for (const char* key : {"a", "b", "c"}) {
    OpRef miss = h.Add(OpType::kGet, key);
    ASSERT_EQ(h.cache.Execute(miss, kHash), Outcome::kMiss);
    h.cache.Complete(miss, kHash, {Code::kOk, "0"}, &c);
  }
  ASSERT_EQ(h.cache.Execute(h.Add(OpType::kPut, "a", "1"), kHash), Outcome::kDone);
  ASSERT_EQ(h.cache.Execute(h.Add(OpType::kPut, "a", "2"), kHash), Outcome::kDone);
  ASSERT_EQ(h.cache.Execute(h.Add(OpType::kDelete, "b"), kHash), Outcome::kDone);
  Batch replay;
  h.cache.CollectLog(&replay);
  ASSERT_EQ(replay.size(), 2u);
  EXPECT_EQ(replay.type(0), OpType::kPut);
  EXPECT_EQ(replay.key(0), "a");
  EXPECT_EQ(replay.value(0), "2");
  EXPECT_EQ(replay.type(1), OpType::kDelete);
  EXPECT_EQ(replay.key(1), "b");
  // The first replayed op fails: that entry stays dirty and logged.
  EXPECT_EQ(h.cache.CommitLog(MakeResults({{Code::kTimedOut, ""}, {Code::kOk, "0"}})), 1u);
  EXPECT_EQ(h.cache.dirty(), 1u);
  EXPECT_EQ(h.cache.presence_delta(), 0);  // b's delete reached the canonical store
  // Dirty entries are never evicted.
  EXPECT_EQ(h.cache.Evict([](std::string_view, uint64_t) { return false; }), 2u);
  EXPECT_EQ(h.cache.entries(), 1u);
  Batch again;
  h.cache.CollectLog(&again);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(h.cache.CommitLog(MakeResults({{Code::kOk, "0"}})), 0u);
  EXPECT_EQ(h.cache.Evict([](std::string_view key, uint64_t) { return key == "a"; }), 0u);
  EXPECT_EQ(h.cache.Evict([](std::string_view, uint64_t) { return false; }), 1u);
  EXPECT_EQ(h.cache.entries(), 0u);
}

TEST(HotCacheTest, ManyKeysInOneBucketChainNodes) {
  Harness h;
  HotCache::Completion c;
  Batch batch;
  Sink sink;
  for (int i = 0; i < 100; ++i) batch.Put("key" + std::to_string(i), std::to_string(i));
  for (uint32_t i = 0; i < 100; ++i) {
    OpRef op{&batch, i, &sink};
    ASSERT_EQ(h.cache.Execute(op, kHash), Outcome::kMiss);
    h.cache.Complete(op, kHash, {Code::kNotFound, ""}, &c);
  }
  EXPECT_EQ(h.cache.entries(), 100u);
  for (int i = 0; i < 100; ++i) {
    OpRef get = h.Add(OpType::kGet, "key" + std::to_string(i));
    ASSERT_EQ(h.cache.Execute(get, kHash), Outcome::kDone);
    EXPECT_EQ(h.Result(get).value, std::to_string(i));
    if (h.batch.size() == 60) h.batch.Clear();  // stay within results[]
  }
  EXPECT_EQ(h.cache.Evict([](std::string_view k, uint64_t) { return k.back() == '7'; }), 90u);
  EXPECT_EQ(h.cache.entries(), 10u);
}

TEST(HotCacheTest, WriteThroughSendsStateChangesToCanonical) {
  Harness h(/*write_through=*/true);
  HotCache::Completion c;
  OpRef miss = h.Add(OpType::kGet, "k");
  ASSERT_EQ(h.cache.Execute(miss, kHash), Outcome::kMiss);
  h.cache.Complete(miss, kHash, {Code::kOk, "v"}, &c);
  EXPECT_EQ(h.cache.Execute(h.Add(OpType::kGet, "k"), kHash), Outcome::kDone);
  const std::string_view wrong = "w";
  h.batch.CompareAndSwap("k", &wrong, "x");  // does not store: answered inline
  OpRef cas{&h.batch, static_cast<uint32_t>(h.batch.size() - 1), &h.sink};
  EXPECT_EQ(h.cache.Execute(cas, kHash), Outcome::kDone);
  EXPECT_EQ(h.Result(cas).value, "v");
  OpRef put = h.Add(OpType::kPut, "k", "v2");
  ASSERT_EQ(h.cache.Execute(put, kHash), Outcome::kMiss);
  h.cache.Complete(put, kHash, {Code::kOk, "v"}, &c);
  OpRef get = h.Add(OpType::kGet, "k");
  ASSERT_EQ(h.cache.Execute(get, kHash), Outcome::kDone);
  EXPECT_EQ(h.Result(get).value, "v2");
  EXPECT_EQ(h.cache.dirty(), 0u);
}

}  // namespace
}  // namespace kvcg::hotcache
