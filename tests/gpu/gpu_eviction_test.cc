// GPU backend cache mode (eviction_kernels.h, pipeline_eviction.cc): under
// every evicting policy, in both layouts, memory never passes the limit
// under sustained writes (single ops and batches, several submitters) and
// every write succeeds, the store stays nearly full, and the evicted-key
// count is exact; volatile policies evict only keys with an expire-at and
// refuse writes once none is left; noeviction refuses; LRU keeps the most
// recent keys, LFU keeps hot keys a scan would push out under LRU,
// volatile-ttl takes the nearest expiry first; SetMemoryLimit evicts down
// at once and can lift or tighten the limit; expired candidates count as
// expired; values evicted stay readable through Results taken before. Without
// a usable GPU every test is skipped with the reason, except the host-side
// choice of a pass's cutoff (ChooseCutoff), which runs everywhere.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "kvcg/store.h"
#include "store/gpu/eviction_kernels.h"

namespace kvcg {
namespace {

std::atomic<uint64_t> g_now{0};
uint64_t FakeClock() { return g_now.load(std::memory_order_relaxed); }
constexpr uint64_t kStart = 1'700'000'000'000;
constexpr uint64_t kFarFuture = kStart + 1'000'000'000;

// General layout: 8-byte keys, 100-byte values, 48 bytes of overhead
// (gpu_store.cc). fixed8: 8 + 8 + 16.
constexpr uint64_t kGeneralEntry = 8 + 100 + 48;
constexpr uint64_t kFixedEntry = 32;

std::string Key(uint64_t i) { return gpu_test::Bytes8(i * 0x9E3779B97F4A7C15ull + 1); }

struct Store8 {
  std::unique_ptr<Store> s;
  bool general;
  uint64_t entry() const { return general ? kGeneralEntry : kFixedEntry; }
  std::string Value(uint64_t i) const {
    return general ? std::string(100, char('a' + i % 26)) : gpu_test::Bytes8(i);
  }
  Code Put(uint64_t i, uint64_t at = kNoExpiry) {
    Batch b = s->NewBatch();
    b.Put(Key(i), Value(i), at);
    return s->Execute(std::move(b)).code(0);
  }
  Code Get(uint64_t i) { return s->Get(Key(i)).code; }
};

Store8 Open(uint64_t entries, EvictionPolicy policy, bool general = true) {
  g_now = kStart;
  Config c;
  c.backend = Backend::kGpu;
  c.layout = general ? Layout::kGeneral : Layout::kFixed8;
  c.gpu_memory_bytes = 1ull << 30;
  c.expected_keys = 1 << 14;
  c.clock = &FakeClock;
  c.active_expiry_hz = 0;
  Store8 out{nullptr, general};
  c.max_memory_bytes = entries * out.entry();
  c.eviction = policy;
  Status st = Store::Open(c, &out.s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

struct PolicyCase {
  EvictionPolicy policy;
  bool volatile_keys;
  bool general;
};

std::string CaseName(const ::testing::TestParamInfo<PolicyCase>& info) {
  std::string n = EvictionPolicyName(info.param.policy);
  for (char& ch : n) if (ch == '-') ch = '_';
  return n + (info.param.general ? "_general" : "_fixed8");
}

class EveryPolicy : public ::testing::TestWithParam<PolicyCase> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

TEST_P(EveryPolicy, MemoryStaysUnderLimitUnderSustainedWrites) {
  const uint64_t kEntries = 2000;
  Store8 s = Open(kEntries, GetParam().policy, GetParam().general);
  const uint64_t limit = kEntries * s.entry();
  for (uint64_t i = 0; i < 10000; ++i) {
    g_now += 1;
    const Code c = s.Put(i, GetParam().volatile_keys ? kFarFuture + i : kNoExpiry);
    ASSERT_TRUE(c == Code::kNotFound || c == Code::kOk) << "write " << i << ": " << CodeName(c);
    if (i % 97 == 0) {
      ASSERT_LE(s.s->MemoryBytes(), limit) << "after write " << i;
    }
    if (i % 3 == 0) s.Get(i / 2);
  }
  EXPECT_LE(s.s->MemoryBytes(), limit);
  EXPECT_EQ(s.s->MemoryBytes(), s.s->Size() * s.entry());
  // Passes free a slack beyond the need (1/64 to 1/8 of the limit, by the
  // time passes take; pipeline_eviction.cc) and may take a little more of
  // the last score bin: the store stays full within that.
  EXPECT_GE(s.s->Size(), kEntries - kEntries / 8 - kEntries / 64 - 16);
  const KeyspaceStats ks = s.s->Keyspace();
  EXPECT_EQ(ks.evicted_keys, 10000 - s.s->Size());
  EXPECT_EQ(ks.expired_keys, 0u);
  EXPECT_EQ(s.Get(9999), Code::kOk);  // the last write is there
}

TEST_P(EveryPolicy, ConcurrentBatchWritersStayUnderLimit) {
  const uint64_t kEntries = 20000;
  Store8 s = Open(kEntries, GetParam().policy, GetParam().general);
  const uint64_t at = GetParam().volatile_keys ? kFarFuture : kNoExpiry;
  std::atomic<int> failures{0};
  std::atomic<int> first_bad{-1};  // the first refusal's code, for the message
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 300; ++i) {
        Batch b = s.s->NewBatch();
        for (uint64_t j = 0; j < 64; ++j) {
          const uint64_t k = t * 1000000 + i * 64 + j;
          b.Put(Key(k), s.Value(k), at);
        }
        b.Get(Key(t * 1000000 + i));
        Results r = s.s->Execute(std::move(b));
        for (size_t j = 0; j < 64; ++j) {
          if (r.code(j) != Code::kNotFound && r.code(j) != Code::kOk) {
            failures.fetch_add(1);
            int none = -1;
            first_bad.compare_exchange_strong(none, int(r.code(j)));
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << "first refusal: " << CodeName(Code(first_bad.load()));
  EXPECT_LE(s.s->MemoryBytes(), kEntries * s.entry());
  EXPECT_EQ(s.s->MemoryBytes(), s.s->Size() * s.entry());
  // Full within the largest slack (1/8 of the limit; pipeline_eviction.cc),
  // a bin's share, and one batch of each writer in flight.
  EXPECT_GE(s.s->Size(), kEntries - kEntries / 8 - kEntries / 32 - 4 * 65);
  EXPECT_EQ(s.s->Keyspace().evicted_keys, 4u * 300 * 64 - s.s->Size());
}

INSTANTIATE_TEST_SUITE_P(
    Policies, EveryPolicy,
    ::testing::Values(PolicyCase{EvictionPolicy::kAllKeysLru, false, true},
                      PolicyCase{EvictionPolicy::kAllKeysLfu, false, true},
                      PolicyCase{EvictionPolicy::kAllKeysRandom, false, true},
                      PolicyCase{EvictionPolicy::kVolatileLru, true, true},
                      PolicyCase{EvictionPolicy::kVolatileLfu, true, true},
                      PolicyCase{EvictionPolicy::kVolatileRandom, true, true},
                      PolicyCase{EvictionPolicy::kVolatileTtl, true, true},
                      PolicyCase{EvictionPolicy::kAllKeysLru, false, false},
                      PolicyCase{EvictionPolicy::kAllKeysLfu, false, false},
                      PolicyCase{EvictionPolicy::kAllKeysRandom, false, false}),
    CaseName);

class GpuEviction : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

TEST_F(GpuEviction, VolatilePoliciesEvictOnlyVolatileKeysThenRefuse) {
  for (EvictionPolicy p : {EvictionPolicy::kVolatileLru, EvictionPolicy::kVolatileLfu,
                           EvictionPolicy::kVolatileRandom, EvictionPolicy::kVolatileTtl}) {
    SCOPED_TRACE(EvictionPolicyName(p));
    Store8 s = Open(300, p);
    for (uint64_t i = 0; i < 200; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
    for (uint64_t i = 200; i < 300; ++i) ASSERT_EQ(s.Put(i, kFarFuture + i), Code::kNotFound);
    // Persistent writes evict the volatile keys until none is left, then OOM.
    uint64_t i = 1000;
    for (; i < 1200; ++i) {
      if (s.Put(i) == Code::kCapacityExhausted) break;
    }
    EXPECT_EQ(i, 1100u);  // exactly the 100 volatile keys made room
    EXPECT_EQ(s.s->Keyspace().volatile_keys, 0u);
    EXPECT_EQ(s.s->Keyspace().evicted_keys, 100u);
    EXPECT_EQ(s.s->Size(), 300u);
    for (uint64_t k = 0; k < 200; ++k) EXPECT_EQ(s.Get(k), Code::kOk) << "persistent key " << k;
  }
}

TEST_F(GpuEviction, AKeyGivenATtlAfterARefusalBecomesACandidate) {
  Store8 s = Open(100, EvictionPolicy::kVolatileLru);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
  EXPECT_EQ(s.Put(100), Code::kCapacityExhausted);  // no volatile key to evict
  // An EXPIRE alone (no bytes written) makes key 5 a candidate...
  Batch b = s.s->NewBatch();
  b.Expire(Key(5), kFarFuture);
  ASSERT_EQ(s.s->Execute(std::move(b)).code(0), Code::kOk);
  EXPECT_EQ(s.Put(101), Code::kNotFound);  // ...so this write evicts it
  EXPECT_EQ(s.Get(5), Code::kNotFound);
  EXPECT_EQ(s.s->Keyspace().evicted_keys, 1u);
  // An overwrite with a TTL that costs no bytes, after a refusal: the same.
  EXPECT_EQ(s.Put(102), Code::kCapacityExhausted);
  ASSERT_EQ(s.Put(7, kFarFuture), Code::kOk);
  EXPECT_EQ(s.Put(102), Code::kNotFound);
  EXPECT_EQ(s.Get(7), Code::kNotFound);
  EXPECT_EQ(s.s->Keyspace().evicted_keys, 2u);
}

TEST_F(GpuEviction, NoEvictionRefusesAndKeepsEverything) {
  Store8 s = Open(100, EvictionPolicy::kNoEviction);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
  EXPECT_EQ(s.Put(100), Code::kCapacityExhausted);
  EXPECT_EQ(s.s->Put(Key(0), std::string(200, 'x')).code, Code::kCapacityExhausted);
  EXPECT_EQ(s.s->Size(), 100u);
  EXPECT_EQ(s.s->Keyspace().evicted_keys, 0u);
}

TEST_F(GpuEviction, LruKeepsTheMostRecentKeys) {
  for (bool general : {true, false}) {
    SCOPED_TRACE(general ? "general" : "fixed8");
    Store8 s = Open(1000, EvictionPolicy::kAllKeysLru, general);
    for (uint64_t i = 0; i < 4000; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
    int newest = 0, oldest = 0;
    for (uint64_t i = 3500; i < 4000; ++i) newest += s.Get(i) == Code::kOk;
    for (uint64_t i = 0; i < 2000; ++i) oldest += s.Get(i) == Code::kOk;
    EXPECT_EQ(newest, 500);
    EXPECT_EQ(oldest, 0);
    // A read protects a key. Unread now: about 3000..3199 and 3300..3499
    // (~390 keys, older generations); just read: 3200..3299 and, by the
    // loop above, 3500..3999. 200 inserts evict 200 of the unread plus the
    // slack (at most 1/8 of the limit: 125), oldest first (3000..3199,
    // then 3300 on), and none of the read keys.
    // (On a failure, say which keys are gone and how many the store has
    // evicted: this assertion has failed now and then in full ctest runs on
    // the H100, never when run alone; the cause is not known yet.)
    std::string missing;
    for (uint64_t i = 3200; i < 3300; ++i) {
      if (s.Get(i) != Code::kOk) missing += " " + std::to_string(i);
    }
    ASSERT_TRUE(missing.empty()) << "gone before the second phase:" << missing << "; size "
                                 << s.s->Size() << ", evicted " << s.s->Keyspace().evicted_keys;
    for (uint64_t i = 5000; i < 5200; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
    int kept = 0, unread = 0;
    for (uint64_t i = 3200; i < 3300; ++i) kept += s.Get(i) == Code::kOk;
    for (uint64_t i = 3000; i < 3100; ++i) unread += s.Get(i) == Code::kOk;
    EXPECT_EQ(kept, 100);
    EXPECT_LE(unread, 5);
  }
}

TEST_F(GpuEviction, LfuKeepsHotKeysThatLruWouldNot) {
  for (EvictionPolicy p : {EvictionPolicy::kAllKeysLfu, EvictionPolicy::kAllKeysLru}) {
    SCOPED_TRACE(EvictionPolicyName(p));
    Store8 s = Open(1000, p);
    for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
    for (int round = 0; round < 50; ++round) {
      for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(s.Get(i), Code::kOk);
    }
    for (uint64_t i = 1000; i < 4000; ++i) {  // a scan: written once, read once
      ASSERT_EQ(s.Put(i), Code::kNotFound);
      s.Get(i);
    }
    int hot = 0;
    for (uint64_t i = 0; i < 100; ++i) hot += s.Get(i) == Code::kOk;
    if (p == EvictionPolicy::kAllKeysLfu) {
      EXPECT_GE(hot, 95) << "LFU keeps the hot keys";
    } else {
      EXPECT_LE(hot, 5) << "LRU evicts them after a long enough scan";
    }
  }
}

// OBJECT FREQ on the GPU: KeyAccess reads the key's LFU counter without
// touching it (a new key starts at 5, reads raise it, idle minutes not yet
// applied by a pass are subtracted); absent, expired and (fixed8) wrong-size
// keys are kNotFound; under LRU a live key is kUnavailable (no clock).
TEST_F(GpuEviction, KeyAccessReportsTheLfuCounter) {
  for (const bool general : {true, false}) {
    SCOPED_TRACE(general ? "general" : "fixed8");
    Store8 s = Open(1000, EvictionPolicy::kAllKeysLfu, general);
    ASSERT_EQ(s.Put(1), Code::kNotFound);
    KeyAccessInfo info;
    ASSERT_TRUE(s.s->KeyAccess(Key(1), &info).ok());
    EXPECT_TRUE(info.lfu);
    EXPECT_EQ(info.frequency, 5u) << "Redis's LFU_INIT_VAL";
    for (int i = 0; i < 300; ++i) ASSERT_EQ(s.Get(1), Code::kOk);
    ASSERT_TRUE(s.s->KeyAccess(Key(1), &info).ok());
    const uint32_t after_reads = info.frequency;
    EXPECT_GE(after_reads, 7u);
    EXPECT_LE(after_reads, 20u);
    ASSERT_TRUE(s.s->KeyAccess(Key(1), &info).ok());
    EXPECT_EQ(info.frequency, after_reads) << "KeyAccess must not count as an access";
    g_now += 3 * 60000;  // three idle minutes, no pass yet
    ASSERT_TRUE(s.s->KeyAccess(Key(1), &info).ok());
    EXPECT_EQ(info.frequency, after_reads - 3);
    EXPECT_EQ(s.s->KeyAccess(Key(2), &info).code(), Code::kNotFound);
    if (general) {
      Batch b = s.s->NewBatch();
      b.Put(Key(3), s.Value(3), g_now + 10);
      ASSERT_EQ(s.s->Execute(std::move(b)).code(0), Code::kNotFound);
      ASSERT_TRUE(s.s->KeyAccess(Key(3), &info).ok());
      g_now += 20;
      EXPECT_EQ(s.s->KeyAccess(Key(3), &info).code(), Code::kNotFound) << "expired";
    } else {
      EXPECT_EQ(s.s->KeyAccess("not-8-bytes", &info).code(), Code::kNotFound);
    }
    Store8 lru = Open(1000, EvictionPolicy::kAllKeysLru, general);
    ASSERT_EQ(lru.Put(1), Code::kNotFound);
    EXPECT_EQ(lru.s->KeyAccess(Key(1), &info).code(), Code::kUnavailable);
    EXPECT_EQ(lru.s->KeyAccess(Key(2), &info).code(), Code::kNotFound);
  }
}

TEST_F(GpuEviction, VolatileTtlEvictsNearestExpiryFirst) {
  Store8 s = Open(2000, EvictionPolicy::kVolatileTtl);
  // Key i expires in (2000 - i) minutes: key 1999 first.
  for (uint64_t i = 0; i < 2000; ++i) ASSERT_EQ(s.Put(i, kStart + (2000 - i) * 60000), Code::kNotFound);
  for (uint64_t i = 5000; i < 5400; ++i) ASSERT_EQ(s.Put(i, kFarFuture), Code::kNotFound);
  int nearest_gone = 0, farthest_gone = 0;
  for (uint64_t i = 1400; i < 2000; ++i) nearest_gone += s.Get(i) == Code::kNotFound;
  for (uint64_t i = 0; i < 1000; ++i) farthest_gone += s.Get(i) == Code::kNotFound;
  EXPECT_GE(nearest_gone, 380);  // ~400 evicted (plus slack), nearly all among the 600 nearest
  EXPECT_EQ(farthest_gone, 0);
}

TEST_F(GpuEviction, SetMemoryLimitEvictsDownAtOnce) {
  Store8 s = Open(0, EvictionPolicy::kNoEviction);
  const uint64_t e = s.entry();
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
  ASSERT_TRUE(s.s->SetMemoryLimit(400 * e, EvictionPolicy::kAllKeysRandom).ok());
  // Down to the limit; the last score bin's share is drawn by key hash, so
  // a few more may go.
  EXPECT_LE(s.s->Size(), 400u);
  EXPECT_GE(s.s->Size(), 380u);
  EXPECT_EQ(s.s->MemoryBytes(), s.s->Size() * e);
  EXPECT_EQ(s.s->Keyspace().evicted_keys, 1000 - s.s->Size());
  // noeviction at a limit below what is stored: a new key is refused;
  // lifting it accepts.
  ASSERT_TRUE(s.s->SetMemoryLimit(300 * e, EvictionPolicy::kNoEviction).ok());
  EXPECT_EQ(s.Put(5000), Code::kCapacityExhausted);
  ASSERT_TRUE(s.s->SetMemoryLimit(0, EvictionPolicy::kNoEviction).ok());
  EXPECT_EQ(s.Put(5000), Code::kNotFound);
  // No access was recorded under noeviction: every key is in one LRU bin,
  // and the share drawn from it varies by a few keys.
  ASSERT_TRUE(s.s->SetMemoryLimit(100 * e, EvictionPolicy::kAllKeysLru).ok());
  EXPECT_LE(s.s->Size(), 100u);
  EXPECT_GE(s.s->Size(), 70u);
  EXPECT_EQ(s.Put(6000), Code::kNotFound);  // and evicts from now on
  EXPECT_LE(s.s->MemoryBytes(), 100 * e);
}

TEST_F(GpuEviction, ValueLargerThanTheLimitIsRefusedWithoutEvicting) {
  Store8 s = Open(100, EvictionPolicy::kAllKeysLru);
  for (uint64_t i = 0; i < 50; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
  EXPECT_EQ(s.s->Put("big", std::string(200 * kGeneralEntry, 'b')).code, Code::kCapacityExhausted);
  EXPECT_EQ(s.s->Size(), 50u);
  EXPECT_EQ(s.s->Keyspace().evicted_keys, 0u);
}

TEST_F(GpuEviction, ExpiredCandidatesCountAsExpiredNotEvicted) {
  Store8 s = Open(100, EvictionPolicy::kVolatileTtl);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(s.Put(i, kStart + 10), Code::kNotFound);
  g_now = kStart + 20;  // all expired, none reclaimed yet
  for (uint64_t i = 100; i < 150; ++i) ASSERT_EQ(s.Put(i, kFarFuture), Code::kNotFound);
  const KeyspaceStats ks = s.s->Keyspace();
  EXPECT_EQ(ks.evicted_keys, 0u);  // expired keys score lowest: they went first
  EXPECT_GE(ks.expired_keys, 50u);
  EXPECT_EQ(s.s->MemoryBytes(), s.s->Size() * s.entry());
  for (uint64_t i = 100; i < 150; ++i) EXPECT_EQ(s.Get(i), Code::kOk);
}

TEST_F(GpuEviction, EvictedValuesStayReadableThroughEarlierResults) {
  Store8 s = Open(500, EvictionPolicy::kAllKeysLru);
  for (uint64_t i = 0; i < 500; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);
  Batch b = s.s->NewBatch();
  for (uint64_t i = 0; i < 100; ++i) b.Get(Key(i));
  Results held = s.s->Execute(std::move(b));
  for (uint64_t i = 1000; i < 3000; ++i) ASSERT_EQ(s.Put(i), Code::kNotFound);  // evicts keys 0..99
  int gone = 0;
  for (uint64_t i = 0; i < 100; ++i) gone += s.Get(i) == Code::kNotFound;
  EXPECT_GT(gone, 0);
  for (uint64_t i = 0; i < 100; ++i) {
    ASSERT_EQ(held.code(i), Code::kOk);
    EXPECT_EQ(held.value(i), s.Value(i)) << i;  // the blob was not reused while held
  }
}

// The host's half of a pass: no device needed.
TEST(EvictionCutoff, TakesTheLowestScoresAndAShareOfTheLastBin) {
  using store::gpu::ChooseCutoff;
  using store::gpu::EvictHistogram;
  EvictHistogram h{};
  uint32_t cutoff = 0, share = 0;
  EXPECT_FALSE(ChooseCutoff(h, 100, &cutoff, &share));  // no candidate at all
  h.bytes[3] = 1000;
  h.bytes[7] = 4000;
  h.bytes[200] = 500;
  ASSERT_TRUE(ChooseCutoff(h, 1000, &cutoff, &share));  // bin 3 exactly
  EXPECT_EQ(cutoff, 3u);
  EXPECT_EQ(share, 65536u);
  ASSERT_TRUE(ChooseCutoff(h, 1, &cutoff, &share));  // a sliver of bin 3, rounded up
  EXPECT_EQ(cutoff, 3u);
  EXPECT_EQ(share, 66u);  // ceil(65536 / 1000)
  ASSERT_TRUE(ChooseCutoff(h, 3000, &cutoff, &share));  // bin 3, then half of bin 7
  EXPECT_EQ(cutoff, 7u);
  EXPECT_EQ(share, 32768u);
  ASSERT_TRUE(ChooseCutoff(h, 5500, &cutoff, &share));  // everything
  EXPECT_EQ(cutoff, 200u);
  EXPECT_EQ(share, 65536u);
  ASSERT_TRUE(ChooseCutoff(h, 1u << 30, &cutoff, &share));  // more than there is: all of it
  EXPECT_EQ(cutoff, 256u);
  h = EvictHistogram{};
  h.bytes[0] = ~0ull / 2;  // no overflow in the share
  ASSERT_TRUE(ChooseCutoff(h, ~0ull / 4, &cutoff, &share));
  EXPECT_EQ(cutoff, 0u);
  EXPECT_EQ(share, 32768u);
}

}  // namespace
}  // namespace kvcg
