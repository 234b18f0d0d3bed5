// GPU backend tests beyond the shared conformance suite: the paths that only
// the GPU tables have (slab pool growth, window table rebuilds, device-memory exhaustion with
// RETRY, batches split across ARBs, hot keys repeated inside one aggregated
// batch, pipelined Submits, long chains under forced collisions). Each test
// checks results against a host model. Without a usable GPU every test is
// skipped with the reason.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kvcg/store.h"
#include "gpu_differential.h"
#include "gpu_test_util.h"
#include "store/backends.h"
#include "store/gpu/lslab_kernel.h"

namespace kvcg {
namespace {

using gpu_test::OpenOrDie;

using gpu_test::GpuConfig;
using gpu_test::HostModel;
using gpu_test::RunDifferential;
using gpu_test::Same;

TEST(GpuStore, Fixed8DifferentialWithRepeatedKeys) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(GpuConfig(Layout::kFixed8));
  ASSERT_TRUE(store);
  EXPECT_EQ(store->Info().backend, Backend::kGpu);
  RunDifferential(store.get(), true, 1, 20, 5000, 700);
}

TEST(GpuStore, GeneralDifferentialWithRepeatedKeys) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(GpuConfig(Layout::kGeneral));
  ASSERT_TRUE(store);
  RunDifferential(store.get(), false, 2, 20, 5000, 700);
}

// Every L-Slab kernel variant (tile of 32, 16 or 8 lanes per op; capped or
// uncapped registers) gives the same answers, including under forced
// collisions. General layout only: fixed8 runs on the window table, whose
// kernel has one variant. The batches without collisions are medium ARBs
// (more than kSmallArbOps), whose GETs return short values from the key
// records' copies (ArbView::value_slots); the colliding ones are small.
TEST(GpuStore, EveryKernelVariantMatchesTheModel) {
  SKIP_WITHOUT_GPU();
  const int before_blocks = store::gpu::LSlabMinBlocks(), before_tile = store::gpu::LSlabTile();
  const int variants[][2] = {{1, 32}, {4, 32}, {4, 16}, {4, 8}, {1, 8}, {3, 16}};
  for (const auto& v : variants) {
    SCOPED_TRACE("min_blocks " + std::to_string(v[0]) + " tile " + std::to_string(v[1]));
    store::gpu::SetLSlabVariant(v[0], v[1]);
    for (bool collide : {false, true}) {
      auto store = OpenOrDie(collide ? gpu_test::CollidingGpuConfig(Layout::kGeneral)
                                     : GpuConfig(Layout::kGeneral));
      ASSERT_TRUE(store);
      RunDifferential(store.get(), false, 11 + v[1], 4, collide ? 1500 : 2500,
                      collide ? 80 : 300);
    }
  }
  store::gpu::SetLSlabVariant(before_blocks, before_tile);
}

// Every key hashes to 7: one bucket, a long slab chain, exact compares only.
TEST(GpuStore, GeneralAllKeysCollideLongChain) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(gpu_test::CollidingGpuConfig(Layout::kGeneral));
  ASSERT_TRUE(store);
  RunDifferential(store.get(), false, 3, 6, 2000, 400);  // ~13 slabs in one chain
}

TEST(GpuStore, Fixed8AllKeysCollideLongChain) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(gpu_test::CollidingGpuConfig(Layout::kFixed8));
  ASSERT_TRUE(store);
  RunDifferential(store.get(), true, 4, 6, 2000, 400);
}

// Batches split over many small ARBs (gpu_max_batch_ops = 64) keep order.
TEST(GpuStore, BatchSplitAcrossArbsKeepsOrder) {
  SKIP_WITHOUT_GPU();
  Config c = GpuConfig(Layout::kGeneral);
  c.gpu_max_batch_ops = 64;
  c.gpu_orchestrators = 2;
  auto store = OpenOrDie(c);
  ASSERT_TRUE(store);
  RunDifferential(store.get(), false, 5, 5, 3000, 5);
}

// A table sized for one key takes 400,000: general, chains of dozens of
// pool slabs (the pool grows several times while batches are in flight);
// fixed8, the window table is rebuilt into more windows several times
// (window_space.h), each time with nothing in flight.
TEST(GpuStore, TableGrowsAndKeepsEverything) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    Config c = GpuConfig(layout);
    c.expected_keys = 1;  // the minimum: 256 buckets, or ~1,500 windows
    auto store = OpenOrDie(c);
    ASSERT_TRUE(store);
    constexpr uint64_t kKeys = 400000;
    for (uint64_t base = 0; base < kKeys; base += 50000) {
      Batch batch;
      for (uint64_t i = base; i < base + 50000; ++i) {
        batch.Put(gpu_test::Bytes8(i), gpu_test::Bytes8(i + 1));
      }
      std::vector<OpResult> r = store->Execute(batch).ToOwned();
      for (size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r[i].code, Code::kNotFound) << base + i;
    }
    EXPECT_EQ(store->Size(), kKeys);
    Batch batch;
    for (uint64_t i = 0; i < kKeys; ++i) batch.Get(gpu_test::Bytes8(i));
    std::vector<OpResult> r = store->Execute(batch).ToOwned();
    for (uint64_t i = 0; i < kKeys; ++i) ASSERT_EQ(r[i].value, gpu_test::Bytes8(i + 1)) << i;
  }
}

// Device memory runs out: PUTs of new keys get kCapacityExhausted (after the
// internal RETRY found nothing to grow into), nothing acknowledged is lost,
// updates still work.
TEST(GpuStore, DeviceMemoryExhaustionLosesNothing) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    Config c = GpuConfig(layout);
    c.expected_keys = 1;
    // 256 buckets + one 34 MiB pool chunk, or a few rebuilds; the general
    // layout's key records hold a 64-byte value copy (128-byte class).
    c.gpu_memory_bytes = (layout == Layout::kGeneral ? 64ull : 48ull) << 20;
    auto store = OpenOrDie(c);
    ASSERT_TRUE(store);
    std::vector<uint64_t> stored;
    bool exhausted = false;
    for (uint64_t base = 0; base < (8u << 20) && !exhausted; base += 100000) {
      Batch batch;
      for (uint64_t i = base; i < base + 100000; ++i) batch.Put(gpu_test::Bytes8(i), gpu_test::Bytes8(~i));
      std::vector<OpResult> r = store->Execute(batch).ToOwned();
      for (size_t i = 0; i < r.size(); ++i) {
        if (r[i].code == Code::kNotFound) {
          stored.push_back(base + i);
        } else {
          ASSERT_EQ(r[i].code, Code::kCapacityExhausted) << base + i;
          ASSERT_TRUE(r[i].value.empty());
          exhausted = true;
        }
      }
    }
    ASSERT_TRUE(exhausted) << "never ran out with a budget of " << c.gpu_memory_bytes << " bytes";
    ASSERT_GT(stored.size(), 100000u);
    EXPECT_EQ(store->Size(), stored.size());
    Batch gets;
    for (uint64_t k : stored) gets.Get(gpu_test::Bytes8(k));
    std::vector<OpResult> r = store->Execute(gets).ToOwned();
    for (size_t i = 0; i < stored.size(); ++i) {
      ASSERT_EQ(r[i].code, Code::kOk) << stored[i];
      ASSERT_EQ(r[i].value, gpu_test::Bytes8(~stored[i])) << stored[i];
    }
    // Updating existing keys needs no room.
    EXPECT_EQ(store->Put(gpu_test::Bytes8(stored[0]), gpu_test::Bytes8(42)).value, gpu_test::Bytes8(~stored[0]));
    EXPECT_EQ(store->Get(gpu_test::Bytes8(stored[0])).value, gpu_test::Bytes8(42));
    // Deleting frees a slot in its bucket; Clear frees everything.
    store->Clear();
    EXPECT_EQ(store->Size(), 0u);
    EXPECT_EQ(store->Put(gpu_test::Bytes8(1), gpu_test::Bytes8(2)).code, Code::kNotFound);
    EXPECT_EQ(store->Get(gpu_test::Bytes8(1)).value, gpu_test::Bytes8(2));
  }
}

// One submitter pipelines PUT, GET, DELETE, GET on one key as four Submits
// without waiting; and several submitters hammer one hot key each with long
// pipelines (zipf-like: the hot key fills most of every aggregated batch).
TEST(GpuStore, PipelinedSubmitsOnHotKeysKeepSubmitterOrder) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    {
      std::vector<std::vector<OpResult>> r(4);
      std::atomic<int> left{4};
      const std::string k = gpu_test::Bytes8(77), v = gpu_test::Bytes8(88);
      for (int i = 0; i < 4; ++i) {
        Batch b;
        if (i == 0) b.Put(k, v);
        if (i == 1 || i == 3) b.Get(k);
        if (i == 2) b.Delete(k);
        store->Submit(std::move(b), [&, i](Results&& res_view) {
          std::vector<OpResult> res = res_view.ToOwned();
          r[i] = std::move(res);
          left.fetch_sub(1);
        });
      }
      while (left.load() != 0) std::this_thread::yield();
      EXPECT_EQ(r[0][0].code, Code::kNotFound);
      EXPECT_EQ(r[1][0].value, v);
      EXPECT_EQ(r[2][0].value, v);
      EXPECT_EQ(r[3][0].code, Code::kNotFound);
    }
    constexpr int kThreads = 4, kBatches = 200, kOps = 256;
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(t);
        const std::string hot = gpu_test::Bytes8(1000 + t);
        HostModel model;
        std::mutex mu;
        std::condition_variable cv;
        int outstanding = 0;
        for (int b = 0; b < kBatches; ++b) {
          Batch batch;
          auto want = std::make_shared<std::vector<OpResult>>();
          for (int i = 0; i < kOps; ++i) {
            const std::string key = rng() % 10 < 8 ? hot : gpu_test::Bytes8(5000 + t * 100 + rng() % 50);
            const std::string value = gpu_test::Bytes8(uint64_t(t) << 32 | uint64_t(b) << 12 | uint64_t(i));
            if (rng() % 4 == 0) {
              batch.Put(key, value);
              want->push_back(model.Apply(OpType::kPut, key, value, std::nullopt));
            } else if (rng() % 8 == 0) {
              batch.Delete(key);
              want->push_back(model.Apply(OpType::kDelete, key, "", std::nullopt));
            } else {
              batch.Get(key);
              want->push_back(model.Apply(OpType::kGet, key, "", std::nullopt));
            }
          }
          {
            std::lock_guard<std::mutex> lock(mu);
            ++outstanding;
          }
          store->Submit(std::move(batch), [&, want](Results&& got_view) {
            std::vector<OpResult> got = got_view.ToOwned();
            for (size_t i = 0; i < got.size(); ++i) {
              if (!Same(got[i], (*want)[i])) errors.fetch_add(1);
            }
            std::lock_guard<std::mutex> lock(mu);
            --outstanding;
            cv.notify_all();
          });
        }
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return outstanding == 0; });
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(errors.load(), 0);
  }
}

// ARBs of GETs only run their table kernels beside each other, after the
// newest writing ARB, and the next writing ARB after all of them
// (Pipeline::WaitForTableKernels; fixed8, the layout whose GET ARBs take
// the GET kernel). Each thread submits without waiting, round after round,
// on its own N keys (ARBs of at most N ops, so no two of these batches
// share one, and S > kResidentMaxOps, so none goes to the resident kernel):
//   big PUT (all N keys := v(r)), small GET of the last S keys, big GET of
//   all N, small PUT (the last S := w(r)), small GET of the last S.
// A small GET that ran beside the big PUT before it would see round r - 1;
// a small PUT that ran beside the big GET before it would show w(r) to the
// big GET's last ops (its last blocks run last). Each kernel on N ops
// lasts longer than the next ARB's copy and prepare, so a wrong wait shows.
TEST(GpuStore, AllGetArbsBetweenWritesSeeTheirRound) {
  SKIP_WITHOUT_GPU();
  constexpr int kThreads = 2, kRounds = 12;
  constexpr uint32_t kN = 1u << 18, kS = 4096;
  Config c = GpuConfig(Layout::kFixed8);
  c.gpu_max_batch_ops = kN;
  auto store = OpenOrDie(c);
  ASSERT_TRUE(store);
  std::atomic<int> errors{0};
  std::atomic<int64_t> checked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto key = [&](uint32_t i) { return gpu_test::Bytes8(uint64_t(t) << 32 | i); };
      // v(r) for a big PUT's value of key i, w(r) for a small PUT's.
      auto value = [&](int r, bool small, uint32_t i) {
        return gpu_test::Bytes8(uint64_t(t) << 48 | uint64_t(r) << 24 | uint64_t(small) << 23 | i);
      };
      std::mutex mu;
      std::condition_variable cv;
      int outstanding = 0;
      // want(i): the value op i of a GET batch must see (first: its first key).
      auto submit = [&](Batch&& batch, std::function<std::string(uint32_t)> want) {
        {
          std::lock_guard<std::mutex> lock(mu);
          ++outstanding;
        }
        store->Submit(std::move(batch), [&, want](Results&& view) {
          if (want) {
            const std::vector<OpResult> got = view.ToOwned();
            int bad = 0;
            for (uint32_t i = 0; i < got.size(); ++i) {
              if (got[i].code != Code::kOk || got[i].value != want(i)) ++bad;
            }
            errors.fetch_add(bad);
            checked.fetch_add(int64_t(got.size()));
          }
          std::lock_guard<std::mutex> lock(mu);
          --outstanding;
          cv.notify_all();
        });
      };
      auto gets = [&](uint32_t first, uint32_t n) {
        Batch b;
        for (uint32_t i = first; i < first + n; ++i) b.Get(key(i));
        return b;
      };
      for (int r = 0; r < kRounds; ++r) {
        Batch put;
        for (uint32_t i = 0; i < kN; ++i) put.Put(key(i), value(r, false, i));
        submit(std::move(put), nullptr);
        submit(gets(kN - kS, kS), [&, r](uint32_t i) { return value(r, false, kN - kS + i); });
        submit(gets(0, kN), [&, r](uint32_t i) { return value(r, false, i); });
        Batch small_put;
        for (uint32_t i = kN - kS; i < kN; ++i) small_put.Put(key(i), value(r, true, i));
        submit(std::move(small_put), nullptr);
        submit(gets(kN - kS, kS), [&, r](uint32_t i) { return value(r, true, kN - kS + i); });
      }
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return outstanding == 0; });
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(checked.load(), int64_t(kThreads) * kRounds * (kN + 2 * kS));
}

// General CAS compares the whole value, byte for byte, against host memory.
TEST(GpuStore, GeneralCasComparesEveryByte) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(GpuConfig(Layout::kGeneral));
  ASSERT_TRUE(store);
  std::string v(3001, 'x');
  ASSERT_EQ(store->Put("key", v).code, Code::kNotFound);
  for (size_t pos : {size_t(0), size_t(7), size_t(8), size_t(2047), size_t(3000)}) {
    std::string wrong = v;
    wrong[pos] ^= 1;
    const std::string_view e = wrong;
    Batch b;
    b.CompareAndSwap("key", &e, "new");
    std::vector<OpResult> r = store->Execute(b).ToOwned();
    EXPECT_EQ(r[0].code, Code::kOk);
    EXPECT_EQ(r[0].value, v) << pos;
    EXPECT_EQ(store->Get("key").value, v) << "CAS stored although byte " << pos << " differs";
  }
  const std::string_view e = v;
  Batch b;
  b.CompareAndSwap("key", &e, "new");
  EXPECT_EQ(store->Execute(b)[0].value, v);
  EXPECT_EQ(store->Get("key").value, "new");
}

// Clear while other threads keep submitting: no crash, no lost completion,
// and afterwards the store answers as an empty one.
TEST(GpuStore, ClearWhileSubmitting) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(GpuConfig(Layout::kGeneral));
  ASSERT_TRUE(store);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> completed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      uint64_t i = 0;
      while (!stop.load()) {
        Batch b;
        for (int j = 0; j < 100; ++j, ++i) b.Put("t" + std::to_string(t) + ":" + std::to_string(i % 5000), "v");
        std::vector<OpResult> r = store->Execute(b).ToOwned();
        for (const OpResult& x : r) ASSERT_TRUE(x.succeeded()) << CodeName(x.code);
        completed.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    store->Clear();
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(completed.load(), 0u);
  store->Clear();
  EXPECT_EQ(store->Size(), 0u);
  EXPECT_EQ(store->MemoryBytes(), 0u);
  EXPECT_EQ(store->Get("t0:1").code, Code::kNotFound);
}

// ARBs over kMediumArbOps take the device-wide sort path (20,000 and 9,000
// ops here); page-locked batches of >= 1024 ops are DMA'd as is. Both
// against the model, both layouts.
TEST(GpuStore, LargeArbsAndDirectBatchesMatchTheModel) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    const bool fixed8 = layout == Layout::kFixed8;
    RunDifferential(store.get(), fixed8, 11, 4, 20000, 3000, /*pinned=*/true);
    store->Clear();  // the next run starts from an empty model
    RunDifferential(store.get(), fixed8, 12, 3, 9000, 200, /*pinned=*/false);
  }
}

// Direct (page-locked, large) and staged (heap, small) batches submitted
// back to back land in one ARB; same-key order holds across them.
TEST(GpuStore, MixedDirectAndStagedBatchesKeepOrder) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    Config c = GpuConfig(layout);
    c.gpu_batch_timeout_us = 2000;  // let the submits below aggregate
    auto store = OpenOrDie(c);
    ASSERT_TRUE(store);
    HostModel model;
    std::mt19937_64 rng(21);
    std::vector<std::shared_ptr<std::vector<OpResult>>> wants;
    std::vector<std::vector<OpResult>> gots(16);
    std::atomic<int> left{16};
    for (int b = 0; b < 16; ++b) {
      const bool big = b % 2 == 0;
      Batch batch = big ? store->NewBatch() : Batch();
      auto want = std::make_shared<std::vector<OpResult>>();
      for (int i = 0; i < (big ? 1500 : 40); ++i) {
        const std::string key = gpu_test::Bytes8(rng() % 64);
        const std::string value = gpu_test::Bytes8(rng());
        if (rng() % 3 == 0) {
          batch.Put(key, value);
          want->push_back(model.Apply(OpType::kPut, key, value, std::nullopt));
        } else {
          batch.Get(key);
          want->push_back(model.Apply(OpType::kGet, key, "", std::nullopt));
        }
      }
      EXPECT_EQ(batch.pinned(), big);
      wants.push_back(want);
      store->Submit(std::move(batch), [&, b](Results&& r) {
        gots[b] = r.ToOwned();
        left.fetch_sub(1);
      });
    }
    while (left.load() != 0) std::this_thread::yield();
    for (int b = 0; b < 16; ++b) {
      ASSERT_EQ(gots[b].size(), wants[b]->size());
      for (size_t i = 0; i < gots[b].size(); ++i) {
        ASSERT_TRUE(Same(gots[b][i], (*wants[b])[i])) << "batch " << b << " op " << i;
      }
    }
  }
}

// One submitter pipelines batches that alternate between the pipeline's
// ways (small staged ARBs, large ones with the device-wide sort, page-locked
// ones DMA'd as is), on a few keys, without waiting: every op sees the
// effects of all earlier ones, whichever thread delivers the results (the
// pipeline thread when idle, its delivery thread under load).
TEST(GpuStore, PipelinedSmallLargeAndDirectArbsKeepOrder) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    HostModel model;
    std::mt19937_64 rng(33);
    constexpr int kBatches = 48;
    const int sizes[] = {50, 3000, 1200, 300, 1, 700};
    std::vector<std::shared_ptr<std::vector<OpResult>>> wants;
    std::vector<std::vector<OpResult>> gots(kBatches);
    std::atomic<int> left{kBatches};
    for (int b = 0; b < kBatches; ++b) {
      const int n = sizes[b % 6];
      Batch batch = n == 1200 ? store->NewBatch() : Batch();  // page-locked: DMA'd as is
      auto want = std::make_shared<std::vector<OpResult>>();
      for (int i = 0; i < n; ++i) {
        const std::string key = gpu_test::Bytes8(rng() % 24);
        const std::string value = gpu_test::Bytes8(rng());
        const uint64_t dice = rng() % 8;
        if (dice < 3) {
          batch.Put(key, value);
          want->push_back(model.Apply(OpType::kPut, key, value, std::nullopt));
        } else if (dice == 3) {
          batch.Delete(key);
          want->push_back(model.Apply(OpType::kDelete, key, "", std::nullopt));
        } else {
          batch.Get(key);
          want->push_back(model.Apply(OpType::kGet, key, "", std::nullopt));
        }
      }
      wants.push_back(want);
      store->Submit(std::move(batch), [&, b](Results&& r) {
        gots[b] = r.ToOwned();
        left.fetch_sub(1);
      });
    }
    while (left.load() != 0) std::this_thread::yield();
    for (int b = 0; b < kBatches; ++b) {
      ASSERT_EQ(gots[b].size(), wants[b]->size()) << "batch " << b;
      for (size_t i = 0; i < gots[b].size(); ++i) {
        ASSERT_TRUE(Same(gots[b][i], (*wants[b])[i])) << "batch " << b << " op " << i;
      }
    }
  }
}

// A value view stays valid and unchanged while its Results lives, however
// often the key is overwritten or deleted meanwhile (result_epochs.h); and
// across Clear().
TEST(GpuStore, ResultViewsOutliveOverwritesDeletesAndClear) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(GpuConfig(Layout::kGeneral));
  ASSERT_TRUE(store);
  const std::string v0(100, 'x');
  ASSERT_TRUE(store->Put("key", v0).succeeded());
  Batch get;
  get.Get("key");
  Results held = store->Execute(get);
  ASSERT_EQ(held.value(0), v0);
  const char* where = held.value(0).data();
  for (int round = 0; round < 300; ++round) {
    Batch b;
    // Same size class as v0, so a reused blob would be overwritten.
    b.Put("key", std::string(100, char('a' + round % 26)));
    if (round % 3 == 0) b.Delete("key");
    for (int k = 0; k < 20; ++k) b.Put("other" + std::to_string(k), std::string(100, 'o'));
    Results r = store->Execute(std::move(b));
    ASSERT_TRUE(r[0].succeeded());
  }
  EXPECT_EQ(held.value(0), v0);
  EXPECT_EQ(held.value(0).data(), where);
  store->Clear();
  for (int k = 0; k < 100; ++k) store->Put("new" + std::to_string(k), std::string(100, 'n'));
  EXPECT_EQ(held.value(0), v0);
  held.Release();
  // After the release the memory may be reused; the store keeps serving.
  for (int k = 0; k < 100; ++k) ASSERT_TRUE(store->Put("new" + std::to_string(k), "z").found());
}

// The device applies the contract's per-op input check: bad ops are
// answered like the CPU backend answers them, good ops beside them run.
TEST(GpuStore, BadInputIsAnsweredPerOpOnTheDevice) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    Config c = GpuConfig(layout);
    c.max_key_bytes = 16;
    c.max_value_bytes = 32;
    auto gpu = OpenOrDie(c);
    Config cc = c;
    cc.backend = Backend::kCpu;
    auto cpu = OpenOrDie(cc);
    ASSERT_TRUE(gpu && cpu);
    const std::string k8 = gpu_test::Bytes8(5), v8 = gpu_test::Bytes8(6);
    const std::string long_key(17, 'k'), long_value(33, 'v'), short_key(3, 's');
    Batch b;
    b.Put(k8, v8);
    b.Get(long_key);
    b.Put(k8, long_value);
    b.Put(short_key, v8);
    b.Put(k8, "abc");
    const std::string_view bad_expected = long_value;
    b.CompareAndSwap(k8, &bad_expected, v8);
    b.Get(k8);
    b.Delete(long_key);
    for (int pass = 0; pass < 2; ++pass) {  // small and large ARB paths
      Batch big;
      for (int r = 0; r < (pass == 0 ? 1 : 400); ++r) {
        for (size_t i = 0; i < b.size(); ++i) big.AppendFrom(b, i);
      }
      std::vector<OpResult> g = gpu->Execute(big).ToOwned();
      std::vector<OpResult> w = cpu->Execute(big).ToOwned();
      ASSERT_EQ(g.size(), w.size());
      for (size_t i = 0; i < g.size(); ++i) ASSERT_TRUE(Same(g[i], w[i])) << "op " << i;
    }
    EXPECT_EQ(gpu->Size(), cpu->Size());
  }
}

}  // namespace
}  // namespace kvcg
