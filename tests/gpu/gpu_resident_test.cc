// The resident kernel (src/store/gpu/resident_ring.h): small ARBs posted to
// a ring that a kernel staying on the device takes them from. These tests
// check that the ring is really used (the store's path counts), that its
// answers equal a host model's on both layouts whatever the block count,
// that same-key order holds across ARBs that alternate between the ring and
// the stream path (batches on both sides of the size limits), that a kernel
// that ended by itself (idle) or was stopped (markers) is relaunched without
// losing an ARB, that concurrent submitters each see their own writes, and
// that Config::gpu_idle_spin_us decides whether the pipeline thread sleeps
// between batches, and that the polling thread relaunches a kernel its
// lifetime ended.
// Without a usable GPU every test is skipped with the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "kvcg/store.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/resident_ring.h"

namespace kvcg {
namespace {

using store::gpu::GpuStore;

std::unique_ptr<Store> OpenResident(Layout layout, uint32_t blocks,
                                    uint32_t idle_spin_us = Config{}.gpu_idle_spin_us) {
  Config c;
  c.gpu_idle_spin_us = idle_spin_us;
  c.backend = Backend::kGpu;
  c.layout = layout;
  c.gpu_memory_bytes = 1ull << 30;
  c.gpu_resident_blocks = blocks;
  std::unique_ptr<Store> s;
  const Status st = Store::Open(c, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

GpuStore::PathCounts Counts(Store* s) { return dynamic_cast<GpuStore*>(s)->path_counts(); }

std::string KeyOf(bool fixed8, uint64_t k) {
  if (fixed8) return gpu_test::Bytes8(k * 0x9E3779B97F4A7C15ull + 1);
  return "key:" + std::to_string(k) + std::string(k % 17, 'x');
}
std::string ValueOf(bool fixed8, uint64_t v) {
  if (fixed8) return gpu_test::Bytes8(v);
  return "v" + std::to_string(v) + std::string(v % 41, 'y');
}

// Batches of `sizes` (cycled), random GET / PUT / DELETE over `keys` keys,
// each checked op by op against a std::map; every `pause_every` batches the
// test sleeps for `pause` (by default past the kernel's idle bound: it ends;
// the next post relaunches it).
void RunAgainstModel(Store* store, bool fixed8, const std::vector<int>& sizes, int batches,
                     int keys, int pause_every, uint64_t seed,
                     std::chrono::microseconds pause = std::chrono::milliseconds(3)) {
  std::mt19937_64 rng(seed);
  std::map<std::string, std::string> model;
  for (int b = 0; b < batches; ++b) {
    if (pause_every > 0 && b % pause_every == pause_every - 1) {
      std::this_thread::sleep_for(pause);
    }
    Batch batch;
    std::vector<OpResult> want;
    const int n = sizes[b % sizes.size()];
    for (int i = 0; i < n; ++i) {
      const std::string key = KeyOf(fixed8, rng() % keys);
      OpResult r;
      auto it = model.find(key);
      r.code = it != model.end() ? Code::kOk : Code::kNotFound;
      if (it != model.end()) r.value = it->second;
      const int kind = int(rng() % 10);
      if (kind < 5) {
        batch.Get(key);
      } else if (kind < 8) {
        const std::string value = ValueOf(fixed8, rng());
        batch.Put(key, value);
        model[key] = value;
      } else {
        batch.Delete(key);
        if (it != model.end()) model.erase(it);
      }
      want.push_back(std::move(r));
    }
    const std::vector<OpResult> got = store->Execute(batch).ToOwned();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].code, want[i].code) << "batch " << b << " (" << n << " ops) op " << i;
      ASSERT_EQ(got[i].value, want[i].value) << "batch " << b << " op " << i;
    }
  }
  EXPECT_EQ(store->Size(), model.size());
}

class ResidentRing : public ::testing::TestWithParam<Layout> {};

// Sizes on both sides of the ring's limits: up to kResidentMaxOps ops (the
// ring), more (a small ARB on a stream), past kSmallArbOps (a medium ARB:
// one-block prepare of 1,024 threads, DMA copies).
TEST_P(ResidentRing, AnswersEqualTheModelAcrossBothPaths) {
  SKIP_WITHOUT_GPU();
  const bool fixed8 = GetParam() == Layout::kFixed8;
  const int max = int(store::gpu::kResidentMaxOps);
  // 1 block: claims from the cursor; 8 and 16: static claims (one op per
  // tile of blocks 1..) for the batches their tiles cover, the cursor above.
  for (uint32_t blocks : {1u, 8u, 16u}) {
    SCOPED_TRACE("blocks " + std::to_string(blocks));
    auto store = OpenResident(GetParam(), blocks);
    ASSERT_TRUE(store);
    RunAgainstModel(store.get(), fixed8, {1, 37, max, 300, max + 1, 5, 3000, 64, 512}, 90, 400,
                    0, 7 + blocks);
    const GpuStore::PathCounts c = Counts(store.get());
    EXPECT_GE(c.resident_arbs, 60u) << "the ring took the small batches";
    EXPECT_GE(c.stream_arbs, 20u) << "the larger ones went on streams";
    EXPECT_GE(c.resident_launches, 1u);
  }
}

// Whole batches on three keys: the prepare's table puts each key's ops in
// one slot and numbers them by a scan of the ops before each (up to 1,024
// in one group); every GET must see the write just before it in its batch.
TEST_P(ResidentRing, BatchesOnAFewKeysKeepTheirOrder) {
  SKIP_WITHOUT_GPU();
  const int max = int(store::gpu::kResidentMaxOps);
  auto store = OpenResident(GetParam(), 16);
  ASSERT_TRUE(store);
  RunAgainstModel(store.get(), GetParam() == Layout::kFixed8, {max, 2, 512, 100, 33}, 40, 3, 0, 11);
  EXPECT_GE(Counts(store.get()).resident_arbs, 30u);
}

// With 0 blocks every ARB is launched on a stream, and the answers are the same.
TEST_P(ResidentRing, OffLaunchesEveryArbOnAStream) {
  SKIP_WITHOUT_GPU();
  auto store = OpenResident(GetParam(), 0);
  ASSERT_TRUE(store);
  RunAgainstModel(store.get(), GetParam() == Layout::kFixed8, {16, 200}, 30, 100, 0, 3);
  const GpuStore::PathCounts c = Counts(store.get());
  EXPECT_EQ(c.resident_arbs, 0u);
  EXPECT_EQ(c.resident_launches, 0u);
  EXPECT_GE(c.stream_arbs, 30u);
}

// Pauses past the idle bound: the kernel ends by itself and is relaunched,
// and no ARB posted around that moment is lost or answered out of order.
TEST_P(ResidentRing, RelaunchesAfterEndingWhenIdle) {
  SKIP_WITHOUT_GPU();
  auto store = OpenResident(GetParam(), 4);
  ASSERT_TRUE(store);
  RunAgainstModel(store.get(), GetParam() == Layout::kFixed8, {8, 120}, 60, 50, 4, 5);
  const GpuStore::PathCounts c = Counts(store.get());
  EXPECT_GE(c.resident_launches, 10u) << "each pause ends the kernel";
  EXPECT_EQ(c.stream_arbs, 0u);
}

// Markers (Clear, a snapshot) stop the kernel; what follows relaunches it.
TEST_P(ResidentRing, MarkersStopTheKernelAndWorkGoesOn) {
  SKIP_WITHOUT_GPU();
  const bool fixed8 = GetParam() == Layout::kFixed8;
  auto store = OpenResident(GetParam(), 8);
  ASSERT_TRUE(store);
  for (int round = 0; round < 5; ++round) {
    Batch put;
    for (int k = 0; k < 100; ++k) put.Put(KeyOf(fixed8, k), ValueOf(fixed8, round * 1000 + k));
    for (const OpResult& r : store->Execute(put).ToOwned()) ASSERT_TRUE(r.code == Code::kOk || r.code == Code::kNotFound);
    std::unique_ptr<SnapshotReader> snap;
    ASSERT_TRUE(store->OpenSnapshot(&snap).ok());
    Batch get;
    for (int k = 0; k < 100; ++k) get.Get(KeyOf(fixed8, k));
    const std::vector<OpResult> got = store->Execute(get).ToOwned();
    for (int k = 0; k < 100; ++k) {
      ASSERT_EQ(got[k].code, Code::kOk) << "round " << round << " key " << k;
      ASSERT_EQ(got[k].value, ValueOf(fixed8, round * 1000 + k));
    }
    store->Clear();
    EXPECT_EQ(store->Size(), 0u);
  }
  EXPECT_GE(Counts(store.get()).resident_launches, 5u);
}

// Several submitters, several batches in flight each (Submit without
// waiting): each submitter's keys are its own, and each sees its own last
// write (same-key order across one submitter's batches, DESIGN.md §2).
TEST_P(ResidentRing, ConcurrentSubmittersSeeTheirOwnWrites) {
  SKIP_WITHOUT_GPU();
  const bool fixed8 = GetParam() == Layout::kFixed8;
  auto store = OpenResident(GetParam(), 8);
  ASSERT_TRUE(store);
  constexpr int kThreads = 6, kRounds = 300, kKeys = 20;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        // A PUT batch then a GET batch, submitted back to back.
        Batch put, get;
        for (int k = 0; k < kKeys; ++k) {
          const uint64_t key = uint64_t(t) * 1000 + k;
          put.Put(KeyOf(fixed8, key), ValueOf(fixed8, uint64_t(round) * 100 + k));
          get.Get(KeyOf(fixed8, key));
        }
        std::promise<void> put_done;
        store->Submit(std::move(put), [&](Results&&) { put_done.set_value(); });
        const std::vector<OpResult> got = store->Execute(get).ToOwned();
        put_done.get_future().wait();
        for (int k = 0; k < kKeys; ++k) {
          if (got[k].code != Code::kOk || got[k].value != ValueOf(fixed8, uint64_t(round) * 100 + k)) {
            ++failures[t];
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "submitter " << t;
  EXPECT_GE(Counts(store.get()).resident_arbs, 100u);
}

// The pipeline thread polls for gpu_idle_spin_us after going idle, then
// sleeps: with 0 it sleeps in every pause between batches, with a spin far
// longer than the pauses never (the store just opened may have slept once
// before the first batch). Either way every answer is right.
TEST_P(ResidentRing, IdleSpinDecidesWhetherThePipelineSleeps) {
  SKIP_WITHOUT_GPU();
  const bool fixed8 = GetParam() == Layout::kFixed8;
  const auto pause = std::chrono::microseconds(300);
  {
    auto store = OpenResident(GetParam(), 16, 0);
    ASSERT_TRUE(store);
    const uint64_t before = Counts(store.get()).idle_sleeps;
    RunAgainstModel(store.get(), fixed8, {64, 512}, 40, 200, 1, 21, pause);
    EXPECT_GE(Counts(store.get()).idle_sleeps - before, 40u) << "a sleep in every pause";
  }
  {
    auto store = OpenResident(GetParam(), 16, 2000000);  // 2 s
    ASSERT_TRUE(store);
    RunAgainstModel(store.get(), fixed8, {64, 512}, 40, 200, 1, 22, pause);
    EXPECT_LE(Counts(store.get()).idle_sleeps, 1u) << "polled through every 300 us pause";
    EXPECT_GE(Counts(store.get()).resident_arbs, 40u);
  }
}

// A launch ends at a poll for work once its lifetime (resident_ring.h,
// 20 ms) has passed. While the pipeline thread polls too (the store is in
// use), it relaunches the kernel at once, a renewal, so the next batch
// waits for no launch; a thread that sleeps at once (spin 0) leaves the
// launch to the next post. Batches every ~0.3 ms (under the kernel's 1 ms
// idle bound) for well over one lifetime, every answer checked.
TEST_P(ResidentRing, ALifetimeEndIsRenewedWhileThePipelinePolls) {
  SKIP_WITHOUT_GPU();
  const bool fixed8 = GetParam() == Layout::kFixed8;
  const auto pause = std::chrono::microseconds(200);
  for (uint32_t spin : {2000000u, 0u}) {
    SCOPED_TRACE("gpu_idle_spin_us " + std::to_string(spin));
    auto store = OpenResident(GetParam(), 16, spin);
    ASSERT_TRUE(store);
    const auto t0 = std::chrono::steady_clock::now();
    RunAgainstModel(store.get(), fixed8, {512, 64}, 300, 2000, 1, 41 + spin, pause);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0).count();
    const GpuStore::PathCounts c = Counts(store.get());
    ASSERT_GE(ms, 60) << "the run outlasts the kernel's lifetime a few times";
    EXPECT_GE(c.resident_arbs, 290u);
    if (spin != 0) {
      EXPECT_GE(c.resident_renewals, 1u) << c.resident_launches << " launches";
    } else {
      EXPECT_EQ(c.resident_renewals, 0u);
      EXPECT_GE(c.resident_launches, 2u) << "posts relaunched the ended kernel";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, ResidentRing, ::testing::Values(Layout::kFixed8, Layout::kGeneral),
                         [](const ::testing::TestParamInfo<Layout>& i) {
                           return i.param == Layout::kFixed8 ? std::string("Fixed8")
                                                             : std::string("General");
                         });

}  // namespace
}  // namespace kvcg
