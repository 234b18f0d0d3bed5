// HotCache expiry (hot_cache.h, "Expiry") with an injected clock: entries
// keep the expire-at their fill or update gave them and report it; a hit on
// an expired clean entry becomes a miss (the canonical store expires it
// itself), a dirty one a dirty tombstone whose write-back deletes; KEEPTTL,
// EXPIRE conditions and past times behave as on the canonical store; the
// write-back carries expire-at; DropExpired is the active sweep.
#include <gtest/gtest.h>

#include <atomic>

#include "hotcache/hot_cache.h"

namespace kvcg::hotcache {
namespace {

constexpr uint64_t kHash = 7;
constexpr uint64_t kT = 1'700'000'000'000;
std::atomic<uint64_t> g_now{kT};
uint64_t FakeClock() { return g_now.load(); }

struct Sink final : ResultSink {
  void Answer(uint32_t index, Code code, std::string_view value, uint64_t expire_at,
              bool) override {
    results[index] = {code, std::string(value), expire_at};
  }
  OpResult results[64];
};

struct Harness {
  explicit Harness(bool write_through = false) : cache({4, write_through, &FakeClock}) {
    g_now = kT;
  }
  OpRef Add(OpType type, std::string_view key, std::string_view value = {},
            uint64_t expire_at = kNoExpiry) {
    batch.Append(type, key, value, expire_at);
    return {&batch, uint32_t(batch.size() - 1), &sink};
  }
  OpRef AddExpire(std::string_view key, uint64_t at, ExpireCondition c = ExpireCondition::kAlways) {
    batch.Expire(key, at, c);
    return {&batch, uint32_t(batch.size() - 1), &sink};
  }
  // A GET miss on `key` filled with what the canonical store holds.
  void Fill(std::string_view key, std::string_view value, uint64_t expire_at) {
    OpRef get = Add(OpType::kGet, key);
    ASSERT_EQ(cache.Execute(get, kHash), Outcome::kMiss);
    HotCache::Completion c;
    cache.Complete(get, kHash, {Code::kOk, value, expire_at}, &c);
  }
  OpResult Run(const OpRef& op) {
    EXPECT_EQ(cache.Execute(op, kHash), Outcome::kDone);
    return sink.results[op.index];
  }
  Batch batch;
  Sink sink;
  HotCache cache;
};

TEST(HotCacheExpiry, FilledExpireAtIsReportedAndAnExpiredCleanHitBecomesAMiss) {
  Harness h;
  h.Fill("k", "v", kT + 100);
  OpResult r = h.Run(h.Add(OpType::kGet, "k"));
  EXPECT_EQ(r.value, "v");
  EXPECT_EQ(r.expire_at, kT + 100);
  g_now = kT + 100;
  EXPECT_EQ(h.cache.Execute(h.Add(OpType::kGet, "k"), kHash), Outcome::kMiss);
  EXPECT_EQ(h.cache.dirty(), 0u);
  EXPECT_EQ(h.cache.presence_delta(), 0);
}

TEST(HotCacheExpiry, AnExpiredDirtyEntryIsADirtyTombstoneThatWritesBackADelete) {
  Harness h;
  h.Fill("k", "v", kNoExpiry);
  EXPECT_TRUE(h.Run(h.Add(OpType::kPut, "k", "w", kT + 10)).found());
  EXPECT_EQ(h.cache.dirty(), 1u);
  g_now = kT + 10;
  OpResult r = h.Run(h.Add(OpType::kGet, "k"));
  EXPECT_EQ(r.code, Code::kNotFound);
  EXPECT_EQ(h.cache.presence_delta(), -1);  // the canonical store still has "v"
  Batch replay;
  h.cache.CollectLog(&replay);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay.type(0), OpType::kDelete);
}

TEST(HotCacheExpiry, WriteBackCarriesTheExpireAt) {
  Harness h;
  h.Fill("k", "v", kT + 500);
  h.Run(h.Add(OpType::kPut, "k", "w", kKeepExpiry));
  OpResult r = h.Run(h.Add(OpType::kGet, "k"));
  EXPECT_EQ(r.value, "w");
  EXPECT_EQ(r.expire_at, kT + 500);  // KEEPTTL kept the filled one
  Batch replay;
  h.cache.CollectLog(&replay);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay.type(0), OpType::kPut);
  EXPECT_EQ(replay.value(0), "w");
  EXPECT_EQ(replay.expire_at(0), kT + 500);
}

TEST(HotCacheExpiry, ExpireOnHitsFollowsConditionsAndPastTimesDelete) {
  Harness h;
  h.Fill("k", "v", kT + 100);
  OpResult r = h.Run(h.AddExpire("k", kT + 50, ExpireCondition::kIfGreater));  // no: earlier
  EXPECT_EQ(r.expire_at, kT + 100);
  EXPECT_EQ(h.cache.dirty(), 0u);  // nothing changed
  h.Run(h.AddExpire("k", kT + 200, ExpireCondition::kIfGreater));
  EXPECT_EQ(h.Run(h.Add(OpType::kGet, "k")).expire_at, kT + 200);
  h.Run(h.AddExpire("k", kT + 300, ExpireCondition::kIfNone));  // has one: no
  EXPECT_EQ(h.Run(h.Add(OpType::kGet, "k")).expire_at, kT + 200);
  h.Run(h.AddExpire("k", kNoExpiry));  // PERSIST
  r = h.Run(h.Add(OpType::kGet, "k"));
  EXPECT_EQ(r.value, "v");
  EXPECT_EQ(r.expire_at, kNoExpiry);
  EXPECT_TRUE(h.Run(h.AddExpire("k", kT - 1)).found());  // in the past: deletes
  EXPECT_EQ(h.Run(h.Add(OpType::kGet, "k")).code, Code::kNotFound);
  EXPECT_EQ(h.Run(h.AddExpire("k", kT + 10)).code, Code::kNotFound);  // absent: nothing
  // A PUT whose expire-at already passed leaves no key either.
  h.Run(h.Add(OpType::kPut, "k", "x", kT));
  EXPECT_EQ(h.Run(h.Add(OpType::kGet, "k")).code, Code::kNotFound);
}

TEST(HotCacheExpiry, MissFillsApplyTheOpsExpiry) {
  Harness h;
  // A PUT miss with an expire-at: the entry takes it.
  OpRef put = h.Add(OpType::kPut, "k", "v", kT + 70);
  ASSERT_EQ(h.cache.Execute(put, kHash), Outcome::kMiss);
  HotCache::Completion c;
  h.cache.Complete(put, kHash, {Code::kNotFound, {}, kNoExpiry}, &c);
  EXPECT_EQ(h.Run(h.Add(OpType::kGet, "k")).expire_at, kT + 70);
  // An EXPIRE miss that applied (the canonical store found the key).
  OpRef ex = h.AddExpire("e", kT + 900, ExpireCondition::kIfSet);
  ASSERT_EQ(h.cache.Execute(ex, kHash), Outcome::kMiss);
  h.cache.Complete(ex, kHash, {Code::kOk, "ev", kT + 5}, &c);
  OpResult r = h.Run(h.Add(OpType::kGet, "e"));
  EXPECT_EQ(r.value, "ev");
  EXPECT_EQ(r.expire_at, kT + 900);
}

TEST(HotCacheExpiry, DropExpiredRemovesCleanAndTombstonesDirtyEntries) {
  Harness h;
  h.Fill("clean", "1", kT + 10);
  h.Fill("dirty", "2", kNoExpiry);
  h.Fill("live", "3", kT + 1000);
  h.Run(h.Add(OpType::kPut, "dirty", "22", kT + 10));
  EXPECT_EQ(h.cache.DropExpired(), 0u);
  g_now = kT + 10;
  EXPECT_EQ(h.cache.DropExpired(), 2u);
  EXPECT_EQ(h.cache.entries(), 2u);  // "dirty" stays as a tombstone, "live" as it was
  EXPECT_EQ(h.Run(h.Add(OpType::kGet, "dirty")).code, Code::kNotFound);
  EXPECT_EQ(h.Run(h.Add(OpType::kGet, "live")).value, "3");
  EXPECT_EQ(h.cache.DropExpired(), 0u);
}

TEST(HotCacheExpiry, WriteThroughSendsOnlyExpiresThatApply) {
  Harness h(/*write_through=*/true);
  h.Fill("k", "v", kT + 100);
  // NX on a key with an expire-at changes nothing: answered from the cache.
  EXPECT_EQ(h.cache.Execute(h.AddExpire("k", kT + 5, ExpireCondition::kIfNone), kHash),
            Outcome::kDone);
  EXPECT_EQ(h.cache.Execute(h.AddExpire("k", kT + 5), kHash), Outcome::kMiss);
}

}  // namespace
}  // namespace kvcg::hotcache
