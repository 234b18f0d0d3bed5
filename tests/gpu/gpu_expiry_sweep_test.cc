// GPU backend active expiry (expiry_kernels.cu, pipeline_expiry.cc):
// ReclaimExpired removes exactly the expired keys and keeps the counters
// (keys, volatile, expired, charged bytes, avg TTL) exact; a sweep that
// reclaims more than its list holds takes several passes and still gets
// everything; chains of several slabs; values of reclaimed keys stay
// readable through Results taken before (epochs); the periodic sweep
// (Config::active_expiry_hz) runs in pipeline order, so a key re-PUT with a
// new TTL before a sweep is never swept by its old one, also while a writer
// keeps going; snapshots and SCAN leave expired keys out. A large table's
// sweep time is printed (not asserted). Without a usable GPU every test is
// skipped with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "kvcg/store.h"
#include "store/gpu/gpu_store.h"

namespace kvcg {
namespace {

std::atomic<uint64_t> g_now{0};
uint64_t FakeClock() { return g_now.load(std::memory_order_relaxed); }
constexpr uint64_t kStart = 1'700'000'000'000;
constexpr uint64_t kOverhead = 48;  // GPU general layout, per entry (gpu_store.cc)

uint64_t FewBuckets(std::string_view k) { return k.empty() ? 0 : uint8_t(k.back()) % 3; }

Config SweepConfig(uint32_t hz) {
  Config c;
  c.backend = Backend::kGpu;
  c.layout = Layout::kGeneral;
  c.gpu_memory_bytes = 2ull << 30;
  c.clock = &FakeClock;
  c.active_expiry_hz = hz;
  return c;
}

using gpu_test::OpenOrDie;

// 12-byte keys, 20-byte values: every entry charges 12 + 20 + kOverhead.
std::string Key(uint64_t i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "k%011llu", static_cast<unsigned long long>(i));
  return buf;
}
std::string Value(uint64_t i) {
  std::string v = "v" + std::to_string(i);
  v.resize(20, '.');
  return v;
}
constexpr uint64_t kCharge = 12 + 20 + kOverhead;

// Key i: persistent when i % 3 == 0, else expires at kStart + 100 * (i % 3).
uint64_t ExpireOf(uint64_t i) { return i % 3 == 0 ? kNoExpiry : kStart + 100 * (i % 3); }

void Fill(Store* store, uint64_t n) {
  for (uint64_t base = 0; base < n; base += 100000) {
    Batch b = store->NewBatch();
    for (uint64_t i = base; i < std::min(n, base + 100000); ++i) b.Put(Key(i), Value(i), ExpireOf(i));
    Results r = store->Execute(std::move(b));
    for (size_t j = 0; j < r.size(); ++j) ASSERT_EQ(r.code(j), Code::kNotFound);
  }
}

void CheckAll(Store* store, uint64_t n, uint64_t now) {
  for (uint64_t base = 0; base < n; base += 100000) {
    Batch b = store->NewBatch();
    for (uint64_t i = base; i < std::min(n, base + 100000); ++i) b.Get(Key(i));
    Results r = store->Execute(std::move(b));
    for (size_t j = 0; j < r.size(); ++j) {
      const uint64_t i = base + j;
      if (IsExpired(ExpireOf(i), now)) {
        ASSERT_EQ(r.code(j), Code::kNotFound) << i;
      } else {
        ASSERT_EQ(r.code(j), Code::kOk) << i;
        ASSERT_EQ(r.value(j), Value(i)) << i;
        ASSERT_EQ(r.expire_at(j), ExpireOf(i)) << i;
      }
    }
  }
}

void ReclaimAndCheck(const Config& config, uint64_t n) {
  std::unique_ptr<Store> store = OpenOrDie(config);
  ASSERT_NE(store, nullptr);
  const bool gpu_charges = config.backend == Backend::kGpu;  // kOverhead is the GPU's
  g_now = kStart;
  ASSERT_NO_FATAL_FAILURE(Fill(store.get(), n));
  const uint64_t persistent = (n + 2) / 3, at100 = (n + 1) / 3, at200 = n / 3;
  KeyspaceStats ks = store->Keyspace();
  EXPECT_EQ(ks.keys, n);
  EXPECT_EQ(ks.volatile_keys, at100 + at200);
  if (gpu_charges) EXPECT_EQ(store->MemoryBytes(), n * kCharge);
  EXPECT_EQ(store->ReclaimExpired(), 0u);  // nothing expired yet
  g_now = kStart + 150;
  auto* gpu = dynamic_cast<store::gpu::GpuStore*>(store.get());
  uint64_t passes = 0;
  double kernel_ms = 0;
  if (gpu != nullptr) {
    EXPECT_EQ(gpu->ReclaimExpired(&passes, &kernel_ms), at100);
    if (at100 > (1u << 16)) EXPECT_GT(passes, 1u);  // the first list holds 64Ki entries
    EXPECT_GE(passes, 1u);
  } else {
    EXPECT_EQ(store->ReclaimExpired(), at100);  // the CPU backend (the tests' own check)
  }
  std::printf("reclaimed %llu of %llu keys in %llu pass(es), %.3f ms of sweep kernels\n",
              (unsigned long long)at100, (unsigned long long)n, (unsigned long long)passes,
              kernel_ms);
  ks = store->Keyspace();
  EXPECT_EQ(ks.keys, persistent + at200);
  EXPECT_EQ(ks.volatile_keys, at200);
  EXPECT_EQ(ks.expired_keys, at100);
  EXPECT_EQ(ks.avg_ttl_ms, 50u);  // every key left expires at kStart + 200
  EXPECT_EQ(store->Size(), persistent + at200);
  if (gpu_charges) EXPECT_EQ(store->MemoryBytes(), (persistent + at200) * kCharge);
  ASSERT_NO_FATAL_FAILURE(CheckAll(store.get(), n, kStart + 150));
  EXPECT_EQ(store->ReclaimExpired(), 0u);
  g_now = kStart + 200;
  EXPECT_EQ(store->ReclaimExpired(), at200);
  ks = store->Keyspace();
  EXPECT_EQ(ks.keys, persistent);
  EXPECT_EQ(ks.volatile_keys, 0u);
  EXPECT_EQ(ks.avg_ttl_ms, 0u);
  EXPECT_EQ(ks.expired_keys, at100 + at200);
  if (gpu_charges) EXPECT_EQ(store->MemoryBytes(), persistent * kCharge);
  ASSERT_NO_FATAL_FAILURE(CheckAll(store.get(), n, kStart + 200));
  // The reclaimed keys can be stored again.
  Batch b = store->NewBatch();
  b.Put(Key(1), "again");
  Results r = store->Execute(std::move(b));
  EXPECT_EQ(r.code(0), Code::kNotFound);
}

TEST(GpuExpirySweep, ReclaimsExactlyTheExpiredKeys) {
  SKIP_WITHOUT_GPU();
  ReclaimAndCheck(SweepConfig(0), 30000);
}

TEST(GpuExpirySweep, ManyExpiredKeysTakeSeveralPasses) {
  SKIP_WITHOUT_GPU();
  // 200k expire at once: more than the first sweep list holds (64Ki).
  ReclaimAndCheck(SweepConfig(0), 600000);
}

TEST(GpuExpirySweep, LongChains) {
  SKIP_WITHOUT_GPU();
  Config c = SweepConfig(0);
  c.hash = &FewBuckets;  // 3 buckets: chains of ~30 slabs each
  ReclaimAndCheck(c, 3000);
}

TEST(GpuExpirySweep, ReclaimedValuesStayReadableThroughEarlierResults) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Store> store = OpenOrDie(SweepConfig(0));
  g_now = kStart;
  Batch b = store->NewBatch();
  for (int i = 0; i < 1000; ++i) b.Put(Key(i), Value(i), kStart + 10);
  store->Execute(std::move(b));
  b = store->NewBatch();
  for (int i = 0; i < 1000; ++i) b.Get(Key(i));
  Results held = store->Execute(std::move(b));
  g_now = kStart + 10;
  ASSERT_EQ(store->ReclaimExpired(), 1000u);
  // New values of the same size would take the reclaimed blobs if they had
  // been freed while `held` still points at them.
  for (int round = 0; round < 3; ++round) {
    b = store->NewBatch();
    for (int i = 0; i < 1000; ++i) b.Put(Key(100000 + round * 1000 + i), std::string(20, 'z'));
    store->Execute(std::move(b));
  }
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(held.value(i), Value(i)) << i;
  held.Release();
}

void PeriodicSweepReclaimsWithoutAccessAndInOrder(Backend backend) {
  Config config = SweepConfig(100);
  config.backend = backend;
  std::unique_ptr<Store> store = OpenOrDie(config);
  g_now = kStart;
  Batch b = store->NewBatch();
  for (int i = 0; i < 2000; ++i) b.Put(Key(i), Value(i), i % 2 ? kStart + 10 : kNoExpiry);
  store->Execute(std::move(b));
  // A writer keeps re-PUTting keys 1, 3, 5, ... < 200 with a TTL that is
  // always ahead of the clock, while the clock passes their old TTL and
  // sweeps run: none of them may ever be reclaimed by the old one.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0};
  auto write = [&] {
    Batch w = store->NewBatch();
    const uint64_t at = g_now.load() + 1'000'000;
    for (int i = 1; i < 200; i += 2) w.Put(Key(i), Value(i), at);
    for (int i = 1; i < 200; i += 2) w.Get(Key(i));
    Results r = store->Execute(std::move(w));
    for (size_t j = 0; j < 100; ++j) bad += r.code(j) != Code::kOk;  // never reclaimed before
    for (size_t j = 100; j < r.size(); ++j) bad += r.code(j) != Code::kOk;
  };
  write();  // before the clock moves: from here on they are ahead of it
  std::thread writer([&] {
    while (!stop.load()) write();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  g_now = kStart + 10;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (store->Keyspace().expired_keys < 900 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a few more sweeps
  stop = true;
  writer.join();
  EXPECT_EQ(bad.load(), 0u);
  const KeyspaceStats ks = store->Keyspace();
  EXPECT_EQ(ks.expired_keys, 900u);  // keys 201, 203, ..., 1999: nobody touched them
  EXPECT_EQ(ks.keys, 1100u);
  EXPECT_EQ(ks.volatile_keys, 100u);  // the writer's keys
  EXPECT_GT(ks.avg_ttl_ms, 0u);
  for (int i = 0; i < 2000; ++i) {
    const OpResult r = store->Get(Key(i));
    const bool present = i % 2 == 0 || i < 200;
    ASSERT_EQ(r.code, present ? Code::kOk : Code::kNotFound) << i;
  }
}

TEST(GpuExpirySweep, PeriodicSweepReclaimsWithoutAccessAndInOrder) {
  SKIP_WITHOUT_GPU();
  PeriodicSweepReclaimsWithoutAccessAndInOrder(Backend::kGpu);
}

void SnapshotsAndScansLeaveExpiredKeysOut() {
  for (bool collide : {false, true}) {
    Config c = SweepConfig(0);
    if (collide) c.hash = &FewBuckets;
    std::unique_ptr<Store> store = OpenOrDie(c);
    g_now = kStart;
    const uint64_t n = 3000;
    ASSERT_NO_FATAL_FAILURE(Fill(store.get(), n));
    g_now = kStart + 100;  // keys with i % 3 == 1 expired, not reclaimed
    std::map<std::string, uint64_t> want;
    for (uint64_t i = 0; i < n; ++i) {
      if (!IsExpired(ExpireOf(i), kStart + 100)) want[Key(i)] = ExpireOf(i);
    }
    std::unique_ptr<SnapshotReader> image;
    ASSERT_TRUE(store->OpenSnapshot(&image).ok());
    EXPECT_EQ(image->size(), want.size());
    std::map<std::string, uint64_t> got;
    SnapshotChunk chunk;
    while (image->Next(&chunk)) {
      for (size_t i = 0; i < chunk.size(); ++i) {
        got[std::string(chunk.keys[i])] = chunk.expires[i];
        EXPECT_EQ(chunk.values[i].substr(0, 1), "v");
      }
    }
    ASSERT_TRUE(image->status().ok()) << image->status().ToString();
    image.reset();
    EXPECT_EQ(got, want) << "collide " << collide;
    got.clear();
    uint64_t cursor = 0;
    do {
      std::unique_ptr<SnapshotReader> step;
      ASSERT_TRUE(store->Scan(cursor, 200, &step, &cursor).ok());
      while (step->Next(&chunk)) {
        for (size_t i = 0; i < chunk.size(); ++i) got[std::string(chunk.keys[i])] = chunk.expires[i];
      }
    } while (cursor != 0);
    EXPECT_EQ(got, want) << "collide " << collide;
    EXPECT_EQ(store->Size(), n);  // left out, not removed
  }
}

TEST(GpuExpirySweep, SnapshotsAndScansLeaveExpiredKeysOut) {
  SKIP_WITHOUT_GPU();
  SnapshotsAndScansLeaveExpiredKeysOut();
}

// The checks above, against the CPU backend (runs without a GPU): the
// tests' own expectations follow the contract, not the GPU code.
TEST(GpuExpirySweep, ChecksAgreeWithTheCpuBackend) {
  Config c = SweepConfig(0);
  c.backend = Backend::kCpu;
  ReclaimAndCheck(c, 30000);
  c.hash = &FewBuckets;
  ReclaimAndCheck(c, 3000);
  PeriodicSweepReclaimsWithoutAccessAndInOrder(Backend::kCpu);
  // (Not SnapshotsAndScansLeaveExpiredKeysOut: the CPU backend's snapshots
  // and scans still return expired keys it has not reclaimed yet.)
}

TEST(GpuExpirySweep, LargeTableSweepTimePrinted) {
  SKIP_WITHOUT_GPU();
  Config c = SweepConfig(0);
  c.expected_keys = 1 << 22;
  std::unique_ptr<Store> store = OpenOrDie(c);
  auto* gpu = dynamic_cast<store::gpu::GpuStore*>(store.get());
  ASSERT_NE(gpu, nullptr);
  g_now = kStart;
  const uint64_t n = 1 << 22;
  ASSERT_NO_FATAL_FAILURE(Fill(store.get(), n));
  uint64_t passes = 0;
  double ms = 0;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(gpu->ReclaimExpired(&passes, &ms), 0u);
  double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("sweep of %llu keys (2/3 volatile), nothing expired: kernel %.3f ms, call %.3f ms\n",
              (unsigned long long)n, ms, wall);
  g_now = kStart + 250;
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(gpu->ReclaimExpired(&passes, &ms), n - (n + 2) / 3);
  wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("sweep reclaiming %llu keys: %llu passes, kernels %.3f ms, call %.3f ms\n",
              (unsigned long long)(n - (n + 2) / 3), (unsigned long long)passes, ms, wall);
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(gpu->ReclaimExpired(&passes, &ms), 0u);
  wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("sweep after, no volatile key left (hints cleared): kernel %.3f ms, call %.3f ms\n",
              ms, wall);
  EXPECT_EQ(store->Size(), (n + 2) / 3);
  EXPECT_EQ(store->Keyspace().volatile_keys, 0u);
}

}  // namespace
}  // namespace kvcg
