// Key expiry (kvcg/batch.h, "Expiry") on every row: a PUT or CAS stores its
// expire-at and results report it; an expired key is absent to every op
// (lazy expiry) at the store's clock; kKeepExpiry keeps a key's expire-at,
// kNoExpiry clears it; kExpire applies under NX/XX/GT/LT exactly as Redis's
// EXPIRE options do, deletes for a time in the past and persists for
// kNoExpiry; ReclaimExpired and the store's own active expiry reclaim
// expired keys without access; Keyspace() counts volatile and expired keys;
// snapshots and scans carry each key's expire-at. fixed8 rows answer every
// expiry with kInvalidArgument (that layout stores no expire-at).
//
// The clock is injected (Config::clock): a test moves it, so nothing here
// sleeps except the active-expiry test, which waits for the store's own
// sweeper (polling, bounded).
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "conformance_fixture.h"
#include "kvcg/durable.h"

namespace kvcg::conformance {
namespace {

// The injected clock: every store opened by these tests reads it.
std::atomic<uint64_t> g_now{0};
uint64_t FakeClock() { return g_now.load(std::memory_order_relaxed); }

constexpr uint64_t kStart = 1'700'000'000'000;  // a plausible "now", ms since the epoch

class Expiry : public Conformance {
 protected:
  void SetUp() override {
    Conformance::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    g_now = kStart;
    // No background sweeper: tests that count what ReclaimExpired or a
    // read reclaims must not race one (the active-expiry test turns it on).
    ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) {
      c.clock = &FakeClock;
      c.active_expiry_hz = 0;
    }));
  }

  // One op, through a batch: its result, owned.
  OpResult One(const std::function<void(Batch&)>& add) {
    Batch b = NewBatch();
    add(b);
    Results r = Run(std::move(b));
    return r[0].ToOwned();
  }
  OpResult PutAt(const std::string& k, const std::string& v, uint64_t at) {
    return One([&](Batch& b) { b.Put(k, v, at); });
  }
  OpResult ExpireAt(const std::string& k, uint64_t at,
                    ExpireCondition c = ExpireCondition::kAlways) {
    return One([&](Batch& b) { b.Expire(k, at, c); });
  }
};

#define KVCG_SKIP_FIXED8_EXPIRY() KVCG_SKIP_IF_FIXED8("stores no expire-at (see FixedLayoutRejectsEveryExpiry)")

TEST_P(Expiry, FixedLayoutRejectsEveryExpiry) {
  if (!fixed8()) GTEST_SKIP() << "fixed8 rows only";
  EXPECT_TRUE(Failed(PutAt(K(1), V(1), kStart + 1000), Code::kInvalidArgument));
  EXPECT_TRUE(Failed(ExpireAt(K(1), kStart + 1000), Code::kInvalidArgument));
  EXPECT_TRUE(Failed(PutAt(K(1), V(1), kKeepExpiry), Code::kInvalidArgument));
  EXPECT_TRUE(NotFound(Get(K(1))));  // nothing was stored
}

TEST_P(Expiry, PutStoresItsExpireAtAndResultsReportIt) {
  KVCG_SKIP_FIXED8_EXPIRY();
  EXPECT_TRUE(NotFound(PutAt(K(1), V(1), kStart + 5000)));
  OpResult r = Get(K(1));
  EXPECT_TRUE(Found(r, V(1)));
  EXPECT_EQ(r.expire_at, kStart + 5000);
  // A PUT's result is the previous value with its expire-at; a plain PUT
  // (kNoExpiry) makes the key persistent, as Redis's SET does.
  r = PutAt(K(1), V(2), kNoExpiry);
  EXPECT_TRUE(Found(r, V(1)));
  EXPECT_EQ(r.expire_at, kStart + 5000);
  r = Get(K(1));
  EXPECT_TRUE(Found(r, V(2)));
  EXPECT_EQ(r.expire_at, kNoExpiry);
}

TEST_P(Expiry, ExpiredKeyIsAbsentToEveryOp) {
  KVCG_SKIP_FIXED8_EXPIRY();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(NotFound(PutAt(K(i), V(i), kStart + 100)));
  ASSERT_TRUE(Found(Get(K(0)), V(0)));
  g_now = kStart + 99;
  ASSERT_TRUE(Found(Get(K(0)), V(0)));  // one ms before
  g_now = kStart + 100;                 // expire-at <= now: expired
  EXPECT_TRUE(NotFound(Get(K(0))));
  EXPECT_TRUE(NotFound(Delete(K(1))));
  EXPECT_TRUE(NotFound(Put(K(2), V(20))));  // no previous value; stores a persistent one
  EXPECT_TRUE(Found(Get(K(2)), V(20)));
  EXPECT_TRUE(NotFound(Cas(K(3), nullptr, V(30))));  // "only if absent" holds
  EXPECT_TRUE(Found(Get(K(3)), V(30)));
  const std::string old_bytes = V(4);  // owns the bytes the view points at
  const std::string_view old = old_bytes;
  EXPECT_TRUE(NotFound(Cas(K(4), &old, V(40))));  // the old value is gone: no match
  EXPECT_TRUE(NotFound(Get(K(4))));
  EXPECT_TRUE(NotFound(ExpireAt(K(0), kStart + 10'000)));
}

TEST_P(Expiry, KeepExpiryKeepsItAndNewKeysGetNone) {
  KVCG_SKIP_FIXED8_EXPIRY();
  ASSERT_TRUE(NotFound(PutAt(K(1), V(1), kStart + 700)));
  EXPECT_TRUE(Found(PutAt(K(1), V(2), kKeepExpiry), V(1)));
  OpResult r = Get(K(1));
  EXPECT_TRUE(Found(r, V(2)));
  EXPECT_EQ(r.expire_at, kStart + 700);
  // CAS keeps it too (Redis's INCR/APPEND keep a key's TTL).
  const std::string two_bytes = V(2);  // owns the bytes the view points at
  const std::string_view two = two_bytes;
  EXPECT_TRUE(Found(One([&](Batch& b) { b.CompareAndSwap(K(1), &two, V(3), kKeepExpiry); }), V(2)));
  r = Get(K(1));
  EXPECT_TRUE(Found(r, V(3)));
  EXPECT_EQ(r.expire_at, kStart + 700);
  // A new key has nothing to keep.
  EXPECT_TRUE(NotFound(PutAt(K(2), V(2), kKeepExpiry)));
  EXPECT_EQ(Get(K(2)).expire_at, kNoExpiry);
  g_now = kStart + 700;
  EXPECT_TRUE(NotFound(Get(K(1))));
  EXPECT_TRUE(Found(Get(K(2)), V(2)));
}

TEST_P(Expiry, CasStoresItsExpireAt) {
  KVCG_SKIP_FIXED8_EXPIRY();
  EXPECT_TRUE(NotFound(One([&](Batch& b) { b.CompareAndSwap(K(1), nullptr, V(1), kStart + 300); })));
  EXPECT_EQ(Get(K(1)).expire_at, kStart + 300);
  // A CAS that does not match changes nothing, expire-at included.
  const std::string wrong_bytes = V(9);  // owns the bytes the view points at
  const std::string_view wrong = wrong_bytes;
  EXPECT_TRUE(Found(One([&](Batch& b) { b.CompareAndSwap(K(1), &wrong, V(2), kStart + 900); }), V(1)));
  EXPECT_EQ(Get(K(1)).expire_at, kStart + 300);
}

TEST_P(Expiry, ExpireFollowsRedisConditions) {
  KVCG_SKIP_FIXED8_EXPIRY();
  const uint64_t t = kStart + 1000;
  struct Case {
    uint64_t current;  // the key's expire-at before (kNoExpiry = persistent)
    ExpireCondition condition;
    uint64_t wanted;
    bool applies;
  };
  const Case cases[] = {
      {kNoExpiry, ExpireCondition::kAlways, t, true},
      {t, ExpireCondition::kAlways, t + 5, true},
      {kNoExpiry, ExpireCondition::kIfNone, t, true},
      {t, ExpireCondition::kIfNone, t + 5, false},
      {kNoExpiry, ExpireCondition::kIfSet, t, false},
      {t, ExpireCondition::kIfSet, t + 5, true},
      {t, ExpireCondition::kIfGreater, t + 5, true},
      {t, ExpireCondition::kIfGreater, t - 5, false},
      {t, ExpireCondition::kIfGreater, t, false},
      {kNoExpiry, ExpireCondition::kIfGreater, t, false},  // persistent = infinite TTL
      {t, ExpireCondition::kIfLess, t - 5, true},
      {t, ExpireCondition::kIfLess, t + 5, false},
      {kNoExpiry, ExpireCondition::kIfLess, t, true},
  };
  uint64_t i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("case " + std::to_string(i));
    ASSERT_TRUE(NotFound(PutAt(K(i), V(i), c.current)));
    OpResult r = ExpireAt(K(i), c.wanted, c.condition);
    EXPECT_TRUE(Found(r, V(i)));  // the value and expire-at before the op
    EXPECT_EQ(r.expire_at, c.current);
    EXPECT_EQ(ExpireConditionHolds(c.condition, r.expire_at, c.wanted), c.applies);
    r = Get(K(i));
    EXPECT_TRUE(Found(r, V(i)));  // the value never changes
    EXPECT_EQ(r.expire_at, c.applies ? c.wanted : c.current);
    ++i;
  }
}

TEST_P(Expiry, ExpireInThePastDeletesAndNoExpiryPersists) {
  KVCG_SKIP_FIXED8_EXPIRY();
  ASSERT_TRUE(NotFound(PutAt(K(1), V(1), kStart + 1000)));
  ASSERT_TRUE(NotFound(Put(K(2), V(2))));
  // PERSIST: kNoExpiry removes the expire-at.
  EXPECT_TRUE(Found(ExpireAt(K(1), kNoExpiry), V(1)));
  EXPECT_EQ(Get(K(1)).expire_at, kNoExpiry);
  // An expire-at at or before now deletes the key at once.
  EXPECT_TRUE(Found(ExpireAt(K(2), kStart), V(2)));
  EXPECT_TRUE(NotFound(Get(K(2))));
  EXPECT_TRUE(Found(ExpireAt(K(1), 1), V(1)));
  EXPECT_TRUE(NotFound(Get(K(1))));
  EXPECT_TRUE(NotFound(ExpireAt(K(3), kStart + 5)));  // absent key: nothing to expire
  EXPECT_TRUE(NotFound(Get(K(3))));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Expiry, StoringAnExpireAtInThePastLeavesNoKey) {
  KVCG_SKIP_FIXED8_EXPIRY();
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  EXPECT_TRUE(Found(PutAt(K(1), V(2), kStart - 1), V(1)));  // the PUT took effect...
  EXPECT_TRUE(NotFound(Get(K(1))));                           // ...and the key expired at once
  EXPECT_TRUE(NotFound(PutAt(K(2), V(2), kStart)));
  EXPECT_TRUE(NotFound(Get(K(2))));
}

TEST_P(Expiry, SameKeyOrderHoldsForExpiryInsideABatch) {
  KVCG_SKIP_FIXED8_EXPIRY();
  Batch b = NewBatch();
  b.Put(K(1), V(1), kStart + 50);                               // 0
  b.Get(K(1));                                                  // 1: expire-at kStart + 50
  b.Expire(K(1), kStart + 80, ExpireCondition::kIfGreater);     // 2: applies
  b.Get(K(1));                                                  // 3: kStart + 80
  b.Put(K(1), V(2), kKeepExpiry);                               // 4
  b.Expire(K(1), kNoExpiry);                                    // 5: persist
  b.Get(K(1));                                                  // 6: V(2), none
  b.Expire(K(1), kStart - 10);                                  // 7: deletes
  b.Get(K(1));                                                  // 8: absent
  Results r = Run(std::move(b));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Found(r[1], V(1)));
  EXPECT_EQ(r.expire_at(1), kStart + 50);
  EXPECT_EQ(r.expire_at(2), kStart + 50);
  EXPECT_EQ(r.expire_at(3), kStart + 80);
  EXPECT_TRUE(Found(r[4], V(1)));
  EXPECT_EQ(r.expire_at(4), kStart + 80);
  EXPECT_TRUE(Found(r[5], V(2)));
  EXPECT_EQ(r.expire_at(5), kStart + 80);
  EXPECT_TRUE(Found(r[6], V(2)));
  EXPECT_EQ(r.expire_at(6), kNoExpiry);
  EXPECT_TRUE(Found(r[7], V(2)));
  EXPECT_TRUE(NotFound(r[8]));
}

TEST_P(Expiry, ReclaimExpiredRemovesExactlyTheExpiredKeys) {
  KVCG_SKIP_FIXED8_EXPIRY();
  constexpr int kKeys = 3000;  // enough for CPU shard tables to grow
  Batch b = NewBatch();
  for (int i = 0; i < kKeys; ++i) {
    // A third persistent, a third expiring at +100, a third at +200.
    b.Put(K(i), V(i), i % 3 == 0 ? kNoExpiry : kStart + 100 * (i % 3));
  }
  Run(std::move(b));
  KeyspaceStats ks = store_->Keyspace();
  EXPECT_EQ(ks.keys, uint64_t(kKeys));
  EXPECT_EQ(ks.volatile_keys, uint64_t(kKeys - kKeys / 3));
  const uint64_t expired_before = ks.expired_keys;
  g_now = kStart + 150;
  EXPECT_EQ(store_->ReclaimExpired(), uint64_t(kKeys / 3));
  ks = store_->Keyspace();
  EXPECT_EQ(ks.keys, uint64_t(kKeys - kKeys / 3));
  EXPECT_EQ(ks.volatile_keys, uint64_t(kKeys / 3));
  EXPECT_EQ(ks.expired_keys - expired_before, uint64_t(kKeys / 3));
  EXPECT_EQ(store_->Size(), uint64_t(kKeys - kKeys / 3));
  for (int i = 0; i < kKeys; i += 7) {
    if (i % 3 == 1) {
      EXPECT_TRUE(NotFound(Get(K(i))));
    } else {
      EXPECT_TRUE(Found(Get(K(i)), V(i)));
    }
  }
  EXPECT_EQ(store_->ReclaimExpired(), 0u);  // nothing left to reclaim
}

TEST_P(Expiry, ActiveExpiryReclaimsWithoutAccess) {
  KVCG_SKIP_FIXED8_EXPIRY();
  ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) {
    c.clock = &FakeClock;
    c.active_expiry_hz = 50;
  }));
  Batch b = NewBatch();
  for (int i = 0; i < 500; ++i) b.Put(K(i), V(i), i % 2 == 0 ? kStart + 10 : kNoExpiry);
  Run(std::move(b));
  ASSERT_EQ(store_->Size(), 500u);
  g_now = kStart + 10;
  // Nothing touches the keys: the store's own sweep must find them.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (store_->Size() != 250 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(store_->Size(), 250u);
  EXPECT_GE(store_->Keyspace().expired_keys, 250u);
  EXPECT_EQ(store_->Keyspace().volatile_keys, 0u);
}

TEST_P(Expiry, SetActiveExpiryHzTurnsTheSweepOnAndOff) {
  KVCG_SKIP_FIXED8_EXPIRY();
  // The fixture opened the store with active expiry off.
  auto put_expiring = [&](int from) {
    Batch b = NewBatch();
    for (int i = from; i < from + 100; ++i) b.Put(K(i), V(i), g_now.load() + 10);
    Run(std::move(b));
    g_now += 10;
  };
  auto size_after = [&](uint64_t want, std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (store_->Size() != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return store_->Size();
  };
  put_expiring(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(store_->Size(), 100u);  // expired, and nothing sweeps
  ASSERT_TRUE(store_->SetActiveExpiryHz(50).ok());
  EXPECT_EQ(size_after(0, std::chrono::seconds(20)), 0u);  // the sweep found them
  ASSERT_TRUE(store_->SetActiveExpiryHz(0).ok());
  put_expiring(1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(store_->Size(), 100u);  // off again: 50 Hz would have swept ~15 times
  EXPECT_EQ(store_->SetActiveExpiryHz(Store::kMaxActiveExpiryHz + 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->ReclaimExpired(), 100u);
}

TEST_P(Expiry, SnapshotsAndScansCarryExpireAt) {
  KVCG_SKIP_FIXED8_EXPIRY();
  ASSERT_TRUE(NotFound(PutAt(K(1), V(1), kStart + 4000)));
  ASSERT_TRUE(NotFound(Put(K(2), V(2))));
  std::map<std::string, uint64_t> want = {{K(1), kStart + 4000}, {K(2), kNoExpiry}};
  std::unique_ptr<SnapshotReader> image;
  ASSERT_TRUE(store_->OpenSnapshot(&image).ok());
  std::map<std::string, uint64_t> got;
  SnapshotChunk chunk;
  while (image->Next(&chunk)) {
    ASSERT_EQ(chunk.expires.size(), chunk.keys.size());
    for (size_t i = 0; i < chunk.size(); ++i) got[std::string(chunk.keys[i])] = chunk.expires[i];
  }
  image.reset();
  EXPECT_EQ(got, want);
  got.clear();
  uint64_t cursor = 0;
  do {
    std::unique_ptr<SnapshotReader> step;
    ASSERT_TRUE(store_->Scan(cursor, 100, &step, &cursor).ok());
    while (step->Next(&chunk)) {
      ASSERT_EQ(chunk.expires.size(), chunk.keys.size());
      for (size_t i = 0; i < chunk.size(); ++i) got[std::string(chunk.keys[i])] = chunk.expires[i];
    }
  } while (cursor != 0);
  EXPECT_EQ(got, want);
}

TEST_P(Expiry, ClearForgetsVolatileKeys) {
  KVCG_SKIP_FIXED8_EXPIRY();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(NotFound(PutAt(K(i), V(i), kStart + 100)));
  EXPECT_EQ(store_->Keyspace().volatile_keys, 10u);
  store_->Clear();
  EXPECT_EQ(store_->Keyspace().volatile_keys, 0u);
  EXPECT_EQ(store_->Size(), 0u);
}

// The average-TTL estimate describes the keys the store holds: a Clear()
// forgets it (as Redis's FLUSHALL resets avg_ttl), so keys with far-future
// expiry removed by a flush do not inflate the next keys' estimate.
TEST_P(Expiry, ClearForgetsTheAverageTtl) {
  KVCG_SKIP_FIXED8_EXPIRY();
  constexpr uint64_t kFar = uint64_t(1) << 62;  // far-future expire-at
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(NotFound(PutAt(K(i), V(i), kFar)));
  EXPECT_EQ(store_->ReclaimExpired(), 0u);  // a full pass: it estimates the TTL
  // (estimated in floating point: 2^62 ms summed ten times overflows 64 bits)
  EXPECT_NEAR(double(store_->Keyspace().avg_ttl_ms), double(kFar - kStart), 1e-9 * double(kFar));
  store_->Clear();
  ASSERT_TRUE(NotFound(PutAt(K(1), V(1), kStart + 1000)));
  EXPECT_LE(store_->Keyspace().avg_ttl_ms, 1000u);  // no estimate yet (0) or this key's
  EXPECT_EQ(store_->ReclaimExpired(), 0u);
  EXPECT_EQ(store_->Keyspace().avg_ttl_ms, 1000u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Expiry, ::testing::ValuesIn(BackendParams()),
                         [](const ::testing::TestParamInfo<BackendParam>& info) {
                           std::string name = info.param.name;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace kvcg::conformance
