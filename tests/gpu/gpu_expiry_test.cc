// GPU backend expiry, the per-op side (lslab_kernel.cu, arb_kernels.cu,
// pipeline_launch.cc), beyond the conformance suite's expiry rows: a
// differential test against a host model of the contract (kvcg/batch.h,
// Expiry) with a fake clock — lazy expiry for every op type, kKeepExpiry,
// times in the past, EXPIRE under every condition, results' expire-at,
// Size/volatile/expired counters — over small and large ARBs (both prepare
// paths), batches with and without expiry columns aggregated together,
// repeated keys inside a batch, and every key in one bucket (chains of
// several slabs: the volatile hint per slab, reuse of an expired key's
// slot). The model is checked against the CPU backend too (no GPU needed).
// Also: results carry no expire column while no key has a TTL,
// fixed8 and bad conditions are refused on the device, and memory charged
// for expired keys is released when a writer unlinks them; results re-run
// after the device memory ran short keep their expire-at. Without a usable
// GPU every test is skipped with the reason.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "kvcg/store.h"

namespace kvcg {
namespace {

std::atomic<uint64_t> g_now{0};
uint64_t FakeClock() { return g_now.load(std::memory_order_relaxed); }
constexpr uint64_t kStart = 1'700'000'000'000;

uint64_t OneBucket(std::string_view) { return 7; }  // every key collides

// "key000", "key001", ...: equal lengths, so equal charges.
std::string Name(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "key%03d", i);
  return buf;
}

Config ExpiryConfig(Layout layout) {
  Config c;
  c.backend = Backend::kGpu;
  c.layout = layout;
  c.gpu_memory_bytes = 1ull << 30;
  c.clock = &FakeClock;
  c.active_expiry_hz = 0;  // Size() counts expired keys until a writer unlinks them
  return c;
}

using gpu_test::OpenOrDie;

// The contract, op by op, at time `now`. Expired entries stay until a
// writer meets them (as both backends keep them until then), so Size(),
// volatile and expired counts can be compared exactly.
struct ExpiryModel {
  struct Entry {
    std::string value;
    uint64_t expire_at;
  };
  std::map<std::string, Entry> map;
  uint64_t expired = 0;

  OpResult Apply(const Batch& b, size_t i, uint64_t now) {
    const OpType type = b.type(i);
    const std::string key(b.key(i));
    auto it = map.find(key);
    if (it != map.end() && IsExpired(it->second.expire_at, now) && type != OpType::kGet) {
      map.erase(it);  // a writer unlinks it
      ++expired;
      it = map.end();
    }
    const bool live = it != map.end() && !IsExpired(it->second.expire_at, now);
    OpResult r;
    r.code = live ? Code::kOk : Code::kNotFound;
    if (live) {
      r.value = it->second.value;
      r.expire_at = it->second.expire_at;
    }
    switch (type) {
      case OpType::kGet:
        break;
      case OpType::kDelete:
        if (live) map.erase(it);
        break;
      case OpType::kPut:
      case OpType::kCompareAndSwap: {
        bool store = true;
        if (type == OpType::kCompareAndSwap) {
          store = b.expect_absent(i) ? !live : live && it->second.value == b.expected(i);
        }
        if (!store) break;
        uint64_t want = b.expire_at(i);
        if (want == kKeepExpiry) want = live ? it->second.expire_at : kNoExpiry;
        if (IsExpired(want, now)) {
          if (live) map.erase(it);
        } else {
          map[key] = Entry{std::string(b.value(i)), want};
        }
        break;
      }
      case OpType::kExpire: {
        if (!live) break;
        const uint64_t want = b.expire_at(i);
        if (want == kKeepExpiry || !ExpireConditionHolds(b.condition(i), it->second.expire_at, want)) {
          break;
        }
        if (IsExpired(want, now)) {
          map.erase(it);
        } else {
          it->second.expire_at = want;
        }
        break;
      }
    }
    return r;
  }
  uint64_t volatile_keys() const {
    uint64_t n = 0;
    for (const auto& [k, e] : map) n += e.expire_at != kNoExpiry;
    return n;
  }
};

// Submits `batches` at once (so the pipeline aggregates them into shared
// ARBs) and returns every result, owned, in order.
std::vector<std::vector<OpResult>> SubmitAll(Store* store, std::vector<Batch>& batches) {
  std::vector<std::vector<OpResult>> out(batches.size());
  std::mutex mu;
  std::condition_variable cv;
  size_t left = batches.size();
  for (size_t j = 0; j < batches.size(); ++j) {
    store->Submit(std::move(batches[j]), [&, j](Results&& r) {
      std::vector<OpResult> owned = r.ToOwned();
      std::lock_guard<std::mutex> lock(mu);
      out[j] = std::move(owned);
      if (--left == 0) cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return left == 0; });
  return out;
}

std::string Key(std::mt19937_64& rng, int keys) {
  const int k = int(rng() % keys);
  // Lengths 1..40 bytes (key records of several word counts), distinct per k.
  std::string s = "k" + std::to_string(k);
  s.resize(1 + (k * 7) % 40, char('a' + k % 26));
  s[0] = char(k);
  return s;
}

// One random op with an expiry mix around `now`.
void AddOp(Batch& b, std::mt19937_64& rng, int keys, uint64_t now, bool with_expiry) {
  const std::string key = Key(rng, keys);
  const std::string value(rng() % 48, char('A' + rng() % 26));
  auto when = [&]() -> uint64_t {
    if (!with_expiry) return kNoExpiry;
    switch (rng() % 5) {
      case 0: return kNoExpiry;
      case 1: return kKeepExpiry;
      case 2: return now - rng() % 5;  // at or before now: expired at once
      default: return now + 1 + rng() % 60;
    }
  };
  const int pick = int(rng() % (with_expiry ? 6 : 4));
  switch (pick) {
    case 0: b.Get(key); break;
    case 1: b.Put(key, value, when()); break;
    case 2: b.Delete(key); break;
    case 3: {
      if (rng() % 2) {
        b.CompareAndSwap(key, nullptr, value, when());
      } else {
        // Often the value a PUT of this op shape stores, so some CAS match.
        const std::string expected(rng() % 3, 'A');
        const std::string_view e = expected;
        b.CompareAndSwap(key, &e, value, when());
      }
      break;
    }
    default: {
      uint64_t at = when();
      if (at == kKeepExpiry && rng() % 2) at = now + 5;
      b.Expire(key, at, ExpireCondition(rng() % 5));
      break;
    }
  }
}

void RunDifferential(Config config, int waves, int keys, size_t max_batch, uint32_t seed) {
  std::unique_ptr<Store> store = OpenOrDie(config);
  ASSERT_NE(store, nullptr);
  std::mt19937_64 rng(seed);
  ExpiryModel model;
  g_now = kStart;
  for (int w = 0; w < waves; ++w) {
    const uint64_t now = g_now.load();
    std::vector<Batch> batches;
    const int nb = 1 + int(rng() % 4);
    for (int j = 0; j < nb; ++j) {
      Batch b = store->NewBatch();
      // About a third of the batches carry no expiry at all (no columns).
      const bool with_expiry = rng() % 3 != 0;
      const size_t n = 1 + rng() % max_batch;
      for (size_t i = 0; i < n; ++i) AddOp(b, rng, keys, now, with_expiry);
      batches.push_back(std::move(b));
    }
    std::vector<Batch> copies;
    for (const Batch& b : batches) copies.push_back(Batch(b));
    const auto got = SubmitAll(store.get(), batches);
    for (size_t j = 0; j < copies.size(); ++j) {
      ASSERT_EQ(got[j].size(), copies[j].size());
      for (size_t i = 0; i < copies[j].size(); ++i) {
        const OpResult want = model.Apply(copies[j], i, now);
        const OpResult& r = got[j][i];
        ASSERT_EQ(r.code, want.code) << "wave " << w << " batch " << j << " op " << i << " ("
                                     << OpTypeName(copies[j].type(i)) << ")";
        ASSERT_EQ(r.value, want.value) << "wave " << w << " batch " << j << " op " << i;
        ASSERT_EQ(r.expire_at, want.expire_at) << "wave " << w << " batch " << j << " op " << i;
      }
    }
    ASSERT_EQ(store->Size(), model.map.size()) << "wave " << w;
    const KeyspaceStats ks = store->Keyspace();
    ASSERT_EQ(ks.volatile_keys, model.volatile_keys()) << "wave " << w;
    ASSERT_EQ(ks.expired_keys, model.expired) << "wave " << w;
    g_now += rng() % 25;  // only between waves: each launch reads the clock once
  }
}

// The model itself, against the CPU backend (the contract's reference
// implementation): runs without a GPU, so a wrong model shows up in CI, not
// as a false GPU failure.
TEST(GpuExpiry, ModelAgreesWithTheCpuBackend) {
  for (bool one_bucket : {false, true}) {
    Config c = ExpiryConfig(Layout::kGeneral);
    c.backend = Backend::kCpu;
    if (one_bucket) c.hash = &OneBucket;
    RunDifferential(c, 150, one_bucket ? 100 : 200, 64, 11);
    RunDifferential(c, 10, 3000, 6000, 12);
  }
}

TEST(GpuExpiry, DifferentialSmallArbs) {
  SKIP_WITHOUT_GPU();
  RunDifferential(ExpiryConfig(Layout::kGeneral), 300, 200, 64, 1);
}

TEST(GpuExpiry, DifferentialLargeArbs) {
  SKIP_WITHOUT_GPU();
  // Batches up to 6000 ops: ARBs past kSmallArbOps take the medium (one
  // block of 1,024 threads) prepare, and the aggregated ones past
  // kMediumArbOps the grid path.
  RunDifferential(ExpiryConfig(Layout::kGeneral), 40, 3000, 6000, 2);
}

TEST(GpuExpiry, DifferentialEveryKeyInOneBucket) {
  SKIP_WITHOUT_GPU();
  // 100 keys in one bucket: a chain of 4 slabs, host hashes, and writers
  // that reuse the slot of the expired key they unlink.
  Config c = ExpiryConfig(Layout::kGeneral);
  c.hash = &OneBucket;
  RunDifferential(c, 200, 100, 200, 3);
}

TEST(GpuExpiry, ResultsCarryExpireColumnOnlyWhileKeysHaveTtls) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Store> store = OpenOrDie(ExpiryConfig(Layout::kGeneral));
  g_now = kStart;
  Batch b = store->NewBatch();
  b.Put("a", "1");
  b.Get("a");
  Results r = store->Execute(std::move(b));
  EXPECT_EQ(r.expires(), nullptr);  // no TTL anywhere: no expire column moved
  EXPECT_EQ(r.expire_at(1), kNoExpiry);
  r.Release();

  b = store->NewBatch();
  b.Put("b", "2", kStart + 10);
  r = store->Execute(std::move(b));
  r.Release();
  b = store->NewBatch();
  b.Get("b");
  b.Get("a");
  r = store->Execute(std::move(b));  // a batch without expiry still reports it
  ASSERT_NE(r.expires(), nullptr);
  EXPECT_EQ(r.expire_at(0), kStart + 10);
  EXPECT_EQ(r.expire_at(1), kNoExpiry);
  r.Release();

  g_now = kStart + 10;
  EXPECT_EQ(store->ReclaimExpired(), 1u);  // nothing volatile is left
  b = store->NewBatch();
  b.Get("a");
  r = store->Execute(std::move(b));
  EXPECT_EQ(r.expires(), nullptr);
  EXPECT_EQ(r.value(0), "1");
}

TEST(GpuExpiry, PlainPutMakesAKeyPersistent) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Store> store = OpenOrDie(ExpiryConfig(Layout::kGeneral));
  g_now = kStart;
  Batch b = store->NewBatch();
  for (int i = 0; i < 100; ++i) b.Put("key" + std::to_string(i), "v", kStart + 100);
  store->Execute(std::move(b));
  EXPECT_EQ(store->Keyspace().volatile_keys, 100u);
  // A batch without expiry columns: every PUT stores kNoExpiry (Redis SET).
  b = store->NewBatch();
  for (int i = 0; i < 50; ++i) b.Put("key" + std::to_string(i), "w");
  ASSERT_FALSE(b.has_expiry());
  Results r = store->Execute(std::move(b));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(r.expire_at(i), kStart + 100);  // the previous one
  r.Release();
  EXPECT_EQ(store->Keyspace().volatile_keys, 50u);
  g_now = kStart + 100;
  for (int i = 0; i < 100; ++i) {
    OpResult got = store->Get("key" + std::to_string(i));
    if (i < 50) {
      EXPECT_EQ(got.code, Code::kOk) << i;
      EXPECT_EQ(got.value, "w");
      EXPECT_EQ(got.expire_at, kNoExpiry);
    } else {
      EXPECT_EQ(got.code, Code::kNotFound) << i;
    }
  }
}

// One batch per prepare path (arb_kernels.h): small, medium and large ARBs
// (30, 5,000 and 9,000 ops); the refused ops skip in each.
TEST(GpuExpiry, Fixed8RefusesExpiryOnTheDeviceInEveryPreparePath) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Store> store = OpenOrDie(ExpiryConfig(Layout::kFixed8));
  g_now = kStart;
  for (size_t n : {size_t(30), size_t(5000), size_t(9000)}) {
    Batch b = store->NewBatch();
    for (size_t i = 0; i < n; ++i) {
      const std::string k = gpu_test::Bytes8(i + 1);
      switch (i % 4) {
        case 0: b.Put(k, gpu_test::Bytes8(i)); break;
        case 1: b.Put(k, gpu_test::Bytes8(i), kStart + 50); break;
        case 2: b.Expire(k, kStart + 50); break;
        default: b.Put(k, gpu_test::Bytes8(i), kKeepExpiry); break;
      }
    }
    Results r = store->Execute(std::move(b));
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(r.code(i), i % 4 == 0 ? Code::kNotFound : Code::kInvalidArgument) << n << " " << i;
    }
    EXPECT_EQ(store->Size(), (n + 3) / 4);
    store->Clear();
  }
}

TEST(GpuExpiry, BadConditionIsRefused) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Store> store = OpenOrDie(ExpiryConfig(Layout::kGeneral));
  g_now = kStart;
  ASSERT_EQ(store->Put("k", "v").code, Code::kNotFound);
  Batch b = store->NewBatch();
  b.Expire("k", kStart + 5, ExpireCondition(9));
  b.Expire("k", kStart + 5, ExpireCondition::kIfNone);
  Results r = store->Execute(std::move(b));
  EXPECT_EQ(r.code(0), Code::kInvalidArgument);
  EXPECT_EQ(r.code(1), Code::kOk);
  r.Release();
  EXPECT_EQ(store->Get("k").expire_at, kStart + 5);
}

TEST(GpuExpiry, UnlinkingExpiredKeysReleasesTheirCharge) {
  SKIP_WITHOUT_GPU();
  Config c = ExpiryConfig(Layout::kGeneral);
  c.hash = &OneBucket;  // one chain: re-inserts must reuse the unlinked slots
  std::unique_ptr<Store> store = OpenOrDie(c);
  g_now = kStart;
  Batch b = store->NewBatch();
  for (int i = 0; i < 90; ++i) b.Put(Name(i), std::string(20, 'x'), kStart + 10);
  store->Execute(std::move(b));
  const uint64_t full = store->MemoryBytes();
  ASSERT_GT(full, 0u);
  g_now = kStart + 10;
  // DELETEs of expired keys: "not found", yet each unlinks and releases.
  b = store->NewBatch();
  for (int i = 0; i < 30; ++i) b.Delete(Name(i));
  Results r = store->Execute(std::move(b));
  for (int i = 0; i < 30; ++i) EXPECT_EQ(r.code(i), Code::kNotFound);
  r.Release();
  EXPECT_EQ(store->Size(), 60u);
  EXPECT_EQ(store->MemoryBytes(), full / 90 * 60);
  // PUTs over expired keys: "not found", stored fresh, same charge as before.
  b = store->NewBatch();
  for (int i = 30; i < 90; ++i) b.Put(Name(i), std::string(20, 'y'));
  r = store->Execute(std::move(b));
  for (int i = 0; i < 60; ++i) EXPECT_EQ(r.code(i), Code::kNotFound);
  r.Release();
  EXPECT_EQ(store->Size(), 60u);
  EXPECT_EQ(store->MemoryBytes(), full / 90 * 60);
  const KeyspaceStats ks = store->Keyspace();
  EXPECT_EQ(ks.expired_keys, 90u);
  EXPECT_EQ(ks.volatile_keys, 0u);
  EXPECT_EQ(store->Get(Name(45)).value, std::string(20, 'y'));
}

// Device memory runs out under PUTs with TTLs, each followed by a GET of its
// key in the same batch: ARBs run alone on a partial slab allowance, PUTs
// that found no slab are re-run (pipeline RunRetries) and so are the GETs
// behind them. Every GET must still report what its PUT did, expire-at
// included (the retried results' expire column).
TEST(GpuExpiry, RetriedOpsKeepTheirExpireAt) {
  SKIP_WITHOUT_GPU();
  Config c = ExpiryConfig(Layout::kGeneral);
  c.expected_keys = 1;
  c.gpu_memory_bytes = 48ull << 20;  // 256 buckets + one 34 MiB pool chunk + records
  std::unique_ptr<Store> store = OpenOrDie(c);
  g_now = kStart;
  uint64_t stored = 0;
  bool exhausted = false;
  for (uint64_t base = 0; base < (4u << 20) && !exhausted; base += 50000) {
    Batch b = store->NewBatch();
    for (uint64_t i = base; i < base + 50000; ++i) {
      b.Put(gpu_test::Bytes8(i), gpu_test::Bytes8(~i), kStart + 1 + i % 1000);
      b.Get(gpu_test::Bytes8(i));
    }
    Results r = store->Execute(std::move(b));
    for (uint64_t j = 0; j < 50000; ++j) {
      const uint64_t i = base + j;
      const Code put = r.code(2 * j), get = r.code(2 * j + 1);
      if (put == Code::kNotFound) {
        ++stored;
        ASSERT_EQ(get, Code::kOk) << i;
        ASSERT_EQ(r.value(2 * j + 1), gpu_test::Bytes8(~i)) << i;
        ASSERT_EQ(r.expire_at(2 * j + 1), kStart + 1 + i % 1000) << i;
      } else {
        ASSERT_EQ(put, Code::kCapacityExhausted) << i;
        ASSERT_EQ(get, Code::kNotFound) << i;
        exhausted = true;
      }
    }
  }
  ASSERT_TRUE(exhausted) << "never ran out with a 48 MiB budget";
  EXPECT_EQ(store->Size(), stored);
  EXPECT_EQ(store->Keyspace().volatile_keys, stored);
}

}  // namespace
}  // namespace kvcg
