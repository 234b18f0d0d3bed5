// The L-Slab table's growth (src/store/gpu/lslab_growth.h): a general-layout
// GPU store opened for a few keys rebuilds its bucket array as keys arrive.
// Checked against a host model: nothing is lost or resurrected across
// rebuilds (with overwrites and deletes in between), expiry and its slabs'
// volatile hints survive them, a Scan begun before a rebuild still returns
// every key present throughout, and KeyAccess on another thread sees the
// old table or the new one, never a half-written one, and LFU counters
// (access bytes) move with their keys. Without a usable GPU
// every test is skipped with the reason.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpu_test_util.h"
#include "kvcg/snapshot.h"
#include "kvcg/store.h"

namespace kvcg {
namespace {

std::atomic<uint64_t> g_now{1'700'000'000'000};
uint64_t FakeClock() { return g_now.load(std::memory_order_relaxed); }

Config SmallTable() {
  Config c;
  c.backend = Backend::kGpu;
  c.layout = Layout::kGeneral;
  c.gpu_memory_bytes = 2ull << 30;
  c.expected_keys = 1;  // the minimum: 256 buckets
  c.clock = &FakeClock;
  return c;
}

using gpu_test::OpenOrDie;

std::string Key(uint64_t i) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "key:%012llu", static_cast<unsigned long long>(i));
  return buf;
}

// Bucket count and growths from Info's "L-Slab: N buckets ... (grown K times)".
void TableShape(const Store& store, uint64_t* buckets, uint64_t* growths) {
  const std::string d = store.Info().detail;
  *buckets = *growths = 0;
  ASSERT_EQ(std::sscanf(d.c_str(), "L-Slab: %llu buckets of 31-slot slabs (grown %llu times)",
                        reinterpret_cast<unsigned long long*>(buckets),
                        reinterpret_cast<unsigned long long*>(growths)),
            2)
      << d;
}

void PutRange(Store* store, uint64_t begin, uint64_t end, uint64_t tag,
              std::unordered_map<std::string, std::string>* model) {
  for (uint64_t base = begin; base < end; base += 20000) {
    Batch b = store->NewBatch();
    for (uint64_t i = base; i < std::min(end, base + 20000); ++i) {
      const std::string v = "v" + std::to_string(i * 7 + tag);
      b.Put(Key(i), v);
      if (model) (*model)[Key(i)] = v;
    }
    const Results r = store->Execute(std::move(b));
    for (size_t j = 0; j < r.size(); ++j) ASSERT_TRUE(r[j].succeeded()) << base + j;
  }
}

void CheckModel(Store* store, const std::unordered_map<std::string, std::string>& model,
                uint64_t key_space) {
  for (uint64_t base = 0; base < key_space; base += 50000) {
    Batch b = store->NewBatch();
    for (uint64_t i = base; i < std::min(key_space, base + 50000); ++i) b.Get(Key(i));
    const Results r = store->Execute(std::move(b));
    for (size_t j = 0; j < r.size(); ++j) {
      const auto it = model.find(Key(base + j));
      if (it == model.end()) {
        ASSERT_EQ(r.code(j), Code::kNotFound) << Key(base + j);
      } else {
        ASSERT_EQ(r.code(j), Code::kOk) << Key(base + j);
        ASSERT_EQ(r[j].value, it->second) << Key(base + j);
      }
    }
  }
  EXPECT_EQ(store->Size(), model.size());
  // The table itself (not the key counter, which a rebuild does not touch)
  // holds each key once: a lost or duplicated entry shows here.
  std::unique_ptr<SnapshotReader> image;
  ASSERT_TRUE(store->OpenSnapshot(&image).ok());
  EXPECT_EQ(image->size(), model.size());
}

// 300,000 keys into a table opened for one: it grows several times, with
// overwrites and deletes between the growths, and ends near 16 keys a bucket.
TEST(LSlabGrowth, GrowsAndKeepsEveryKey) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(SmallTable());
  ASSERT_TRUE(store);
  uint64_t buckets = 0, growths = 0;
  TableShape(*store, &buckets, &growths);
  EXPECT_EQ(buckets, 256u);
  EXPECT_EQ(growths, 0u);
  std::unordered_map<std::string, std::string> model;
  constexpr uint64_t kKeys = 300000;
  for (uint64_t step = 0; step < kKeys; step += 60000) {
    PutRange(store.get(), step, step + 60000, 0, &model);
    // Overwrite every third key so far, delete every fifth.
    Batch b = store->NewBatch();
    for (uint64_t i = 0; i < step + 60000; i += 3) {
      const std::string v = "w" + std::to_string(i + step);
      b.Put(Key(i), v);
      model[Key(i)] = v;
    }
    for (uint64_t i = 0; i < step + 60000; i += 5) {
      b.Delete(Key(i));
      model.erase(Key(i));
    }
    const Results r = store->Execute(std::move(b));
    for (size_t j = 0; j < r.size(); ++j) ASSERT_NE(r.code(j), Code::kInternal);
    CheckModel(store.get(), model, kKeys);
  }
  TableShape(*store, &buckets, &growths);
  EXPECT_GE(growths, 2u);
  // Sized by its keys (~16 a bucket), not left at 256 buckets of long chains.
  EXPECT_GE(buckets, model.size() / 32);
  EXPECT_LE(buckets, model.size() / 4);
  // Clear keeps the grown table; the store works on as before.
  store->Clear();
  EXPECT_EQ(store->Size(), 0u);
  model.clear();
  PutRange(store.get(), 0, 1000, 9, &model);
  CheckModel(store.get(), model, 2000);
}

// Keys with TTLs move with their expire-at (kept in their key records) and
// their slabs' volatile hints (kept by the rebuild), so the active sweep
// still finds them after the table grew.
TEST(LSlabGrowth, ExpiryOutlivesGrowth) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(SmallTable());
  ASSERT_TRUE(store);
  const uint64_t t0 = g_now.load();
  constexpr uint64_t kVolatile = 3000;
  {
    Batch b = store->NewBatch();
    for (uint64_t i = 0; i < kVolatile; ++i) b.Put(Key(i), "ttl", t0 + 1000);
    const Results r = store->Execute(std::move(b));
    for (size_t j = 0; j < r.size(); ++j) ASSERT_EQ(r.code(j), Code::kNotFound);
  }
  PutRange(store.get(), kVolatile, 120000, 0, nullptr);  // grows the table
  uint64_t buckets = 0, growths = 0;
  TableShape(*store, &buckets, &growths);
  ASSERT_GE(growths, 1u);
  EXPECT_EQ(store->Keyspace().volatile_keys, kVolatile);
  g_now += 2000;  // every TTL has passed
  EXPECT_EQ(store->ReclaimExpired(), kVolatile);
  EXPECT_EQ(store->Size(), 120000 - kVolatile);
  Batch b = store->NewBatch();
  b.Get(Key(0));
  b.Get(Key(kVolatile));
  const Results r = store->Execute(std::move(b));
  EXPECT_EQ(r.code(0), Code::kNotFound);
  EXPECT_EQ(r.code(1), Code::kOk);
}

// Under an LFU policy each key's counter lives in its slot's access byte;
// the rebuild moves the byte with the entry, so no counter changes.
TEST(LSlabGrowth, LfuCountersOutliveGrowth) {
  SKIP_WITHOUT_GPU();
  Config c = SmallTable();
  c.max_memory_bytes = 4ull << 30;  // far above what the test stores: no eviction pass
  c.eviction = EvictionPolicy::kAllKeysLfu;
  auto store = OpenOrDie(c);
  ASSERT_TRUE(store);
  PutRange(store.get(), 0, 200, 0, nullptr);
  for (int round = 0; round < 400; ++round) {  // keys 0..19 hot
    Batch b = store->NewBatch();
    for (uint64_t i = 0; i < 20; ++i) b.Get(Key(i));
    const Results r = store->Execute(std::move(b));
    for (size_t j = 0; j < r.size(); ++j) ASSERT_EQ(r.code(j), Code::kOk);
  }
  auto counters = [&] {
    std::vector<uint32_t> f;
    for (uint64_t i = 0; i < 40; ++i) {
      KeyAccessInfo info;
      const Status s = store->KeyAccess(Key(i), &info);
      EXPECT_TRUE(s.ok() && info.lfu) << Key(i) << ": " << s.ToString();
      f.push_back(info.frequency);
    }
    return f;
  };
  const std::vector<uint32_t> before = counters();
  for (uint64_t i = 0; i < 20; ++i) EXPECT_GT(before[i], 5u) << Key(i) << " was read 400 times";
  for (uint64_t i = 20; i < 40; ++i) EXPECT_EQ(before[i], 5u) << Key(i) << " was never read";
  PutRange(store.get(), 200, 150000, 0, nullptr);
  uint64_t buckets = 0, growths = 0;
  TableShape(*store, &buckets, &growths);
  ASSERT_GE(growths, 2u);
  EXPECT_EQ(counters(), before);
}

// A Scan begun on the small table and finished after it grew (twice)
// returns every key that was present throughout at least once.
TEST(LSlabGrowth, ScanAcrossGrowth) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(SmallTable());
  ASSERT_TRUE(store);
  constexpr uint64_t kEarly = 4000;
  PutRange(store.get(), 0, kEarly, 0, nullptr);
  std::set<std::string> seen;
  uint64_t cursor = 0;
  auto step = [&] {
    std::unique_ptr<SnapshotReader> image;
    uint64_t next = 0;
    const Status s = store->Scan(cursor, 100, &image, &next);
    ASSERT_TRUE(s.ok()) << s.ToString();
    SnapshotChunk chunk;
    while (image->Next(&chunk)) {
      for (size_t i = 0; i < chunk.size(); ++i) seen.insert(std::string(chunk.keys[i]));
    }
    cursor = next;
  };
  for (int i = 0; i < 5; ++i) step();
  ASSERT_NE(cursor, 0u) << "the iteration ended before the table grew";
  uint64_t buckets = 0, growths = 0;
  PutRange(store.get(), kEarly, 200000, 0, nullptr);
  TableShape(*store, &buckets, &growths);
  ASSERT_GE(growths, 2u);
  uint64_t steps = 0;
  do {
    step();
    ASSERT_LT(++steps, 1000000u);
  } while (cursor != 0);
  for (uint64_t i = 0; i < kEarly; ++i) ASSERT_TRUE(seen.count(Key(i))) << Key(i);
}

// KeyAccess runs its lookup on another stream under the store's control
// lock; a rebuild holds that lock throughout, so a lookup never walks a
// half-written table: a key stored before the lookups began is always found.
TEST(LSlabGrowth, KeyAccessDuringGrowth) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(SmallTable());
  ASSERT_TRUE(store);
  PutRange(store.get(), 0, 100, 0, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> lookups{0}, missing{0}, failed{0};
  std::thread reader([&] {
    for (uint64_t i = 0; !stop.load(); i = (i + 1) % 100) {
      KeyAccessInfo info;
      // No eviction policy: a live key answers kUnavailable (no counter kept).
      const Status s = store->KeyAccess(Key(i), &info);
      if (s.code() == Code::kNotFound) missing.fetch_add(1);
      if (s.code() != Code::kNotFound && s.code() != Code::kUnavailable) failed.fetch_add(1);
      lookups.fetch_add(1);
    }
  });
  PutRange(store.get(), 100, 150000, 0, nullptr);
  stop = true;
  reader.join();
  uint64_t buckets = 0, growths = 0;
  TableShape(*store, &buckets, &growths);
  EXPECT_GE(growths, 2u);
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_EQ(missing.load(), 0u);
  EXPECT_EQ(failed.load(), 0u);
}

}  // namespace
}  // namespace kvcg
