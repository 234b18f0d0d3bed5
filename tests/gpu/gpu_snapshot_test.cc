// GPU backend snapshots (Store::OpenSnapshot; pipeline_snapshot.cc,
// snapshot_kernels.cu, gpu_snapshot.h): every key exactly once with its
// value, in both layouts, over long slab chains and forced collisions; the
// image is the state at one point of the pipeline while writers keep going;
// the image's values survive later overwrites, deletes and Clear(); several
// readers at once; readers dropped early; and the epoch rule that keeps the
// image's blobs (result_epochs.h). Without a usable GPU every test is
// skipped with the reason.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "kvcg/store.h"
#include "store/gpu/device_heaps.h"
#include "store/gpu/pinned_memory.h"
#include "store/gpu/result_epochs.h"

namespace kvcg {
namespace {

using Image = std::map<std::string, std::string>;

using gpu_test::CollidingGpuConfig;
using gpu_test::GpuConfig;
using gpu_test::OpenOrDie;

std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 40)) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), c >= 32 && c < 127 ? "%c" : "\\x%02x", c);
    out += buf;
  }
  if (s.size() > 40) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

// Reads the whole image. Fails on a key returned twice, an empty chunk,
// columns of different lengths, a failed status or size() != entries read.
::testing::AssertionResult ReadAll(SnapshotReader* reader, Image* out) {
  out->clear();
  SnapshotChunk chunk;
  while (reader->Next(&chunk)) {
    if (chunk.size() == 0) return ::testing::AssertionFailure() << "Next returned an empty chunk";
    if (chunk.keys.size() != chunk.values.size()) {
      return ::testing::AssertionFailure() << "keys and values differ in length";
    }
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (!out->emplace(std::string(chunk.keys[i]), std::string(chunk.values[i])).second) {
        return ::testing::AssertionFailure()
               << "key returned twice: " << Printable(std::string(chunk.keys[i]));
      }
    }
  }
  if (!reader->status().ok()) {
    return ::testing::AssertionFailure() << "status: " << reader->status().ToString();
  }
  if (out->size() != reader->size()) {
    return ::testing::AssertionFailure()
           << "size() " << reader->size() << " but " << out->size() << " entries read";
  }
  if (reader->Next(&chunk)) return ::testing::AssertionFailure() << "Next after the end";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult SameImage(const Image& got, const Image& want) {
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) return ::testing::AssertionFailure() << "missing key " << Printable(k);
    if (it->second != v) {
      return ::testing::AssertionFailure() << "key " << Printable(k) << ": value "
                                           << Printable(it->second) << ", want " << Printable(v);
    }
  }
  for (const auto& [k, v] : got) {
    if (want.count(k) == 0) return ::testing::AssertionFailure() << "extra key " << Printable(k);
  }
  return ::testing::AssertionSuccess();
}

Image TakeImage(Store* store) {
  std::unique_ptr<SnapshotReader> reader;
  Status s = store->OpenSnapshot(&reader);
  EXPECT_TRUE(s.ok()) << s.ToString();
  Image image;
  if (!reader) {
    ADD_FAILURE() << "no reader";
    return image;
  }
  EXPECT_TRUE(ReadAll(reader.get(), &image));
  return image;
}

// Writes `model` into `store` in batches of 1000 puts.
void PutAll(Store* store, const Image& model) {
  Batch b;
  auto flush = [&] {
    for (const OpResult& r : store->Execute(b).ToOwned()) {
      ASSERT_TRUE(r.succeeded()) << CodeName(r.code);
    }
    b = Batch();
  };
  for (const auto& [k, v] : model) {
    b.Put(k, v);
    if (b.size() == 1000) flush();
  }
  if (b.size() != 0) flush();
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = char(rng() % 4 == 0 ? 0 : rng());  // zero bytes included
  return s;
}

TEST(GpuSnapshot, EmptyStoreAndEmptiedStore) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    std::unique_ptr<SnapshotReader> reader;
    ASSERT_TRUE(store->OpenSnapshot(&reader).ok());
    ASSERT_TRUE(reader);
    EXPECT_EQ(reader->size(), 0u);
    SnapshotChunk chunk;
    EXPECT_FALSE(reader->Next(&chunk));
    EXPECT_TRUE(reader->status().ok());
    reader.reset();
    // Slabs whose every slot was emptied (chains stay): still nothing.
    Image model;
    for (uint64_t k = 0; k < 3000; ++k) model[gpu_test::Bytes8(k * 7919)] = gpu_test::Bytes8(k);
    PutAll(store.get(), model);
    Batch del;
    for (const auto& [k, v] : model) del.Delete(k);
    for (const OpResult& r : store->Execute(del).ToOwned()) ASSERT_TRUE(r.found());
    EXPECT_EQ(store->Size(), 0u);
    EXPECT_TRUE(TakeImage(store.get()).empty());
  }
}

// General layout: binary keys of 1..max_key bytes, values of 0..5000 bytes,
// few buckets (expected_keys) so chains are several slabs long; then after
// overwrites (other sizes) and deletes. max_key 48 keeps every key record
// small (the dump's per-lane copy), 300 mixes in large ones (per-warp copy).
void GeneralEveryKeyOnce(size_t max_key, uint64_t seed) {
  Config c = GpuConfig(Layout::kGeneral);
  c.expected_keys = 256;
  auto store = OpenOrDie(c);
  ASSERT_TRUE(store);
  std::mt19937_64 rng(seed);
  Image model;
  while (model.size() < 20000) {
    model[RandomBytes(rng, 1 + rng() % max_key)] = RandomBytes(rng, rng() % 5001);
  }
  PutAll(store.get(), model);
  ASSERT_EQ(store->Size(), model.size());
  Image image = TakeImage(store.get());
  EXPECT_EQ(image.size(), model.size());
  EXPECT_TRUE(SameImage(image, model));

  Batch b;
  size_t i = 0;
  for (auto it = model.begin(); it != model.end(); ++i) {
    if (i % 3 == 0) {
      b.Delete(it->first);
      it = model.erase(it);
    } else {
      if (i % 3 == 1) it->second = RandomBytes(rng, rng() % 5001);
      b.Put(it->first, it->second);
      ++it;
    }
  }
  for (const OpResult& r : store->Execute(std::move(b)).ToOwned()) ASSERT_TRUE(r.found());
  image = TakeImage(store.get());
  EXPECT_EQ(image.size(), model.size());
  EXPECT_TRUE(SameImage(image, model));
}

TEST(GpuSnapshot, GeneralEveryKeyOnceShortKeys) {
  SKIP_WITHOUT_GPU();
  GeneralEveryKeyOnce(48, 1);
}

TEST(GpuSnapshot, GeneralEveryKeyOnceLongKeys) {
  SKIP_WITHOUT_GPU();
  GeneralEveryKeyOnce(300, 2);
}

TEST(GpuSnapshot, Fixed8EveryKeyOnce) {
  SKIP_WITHOUT_GPU();
  Config c = GpuConfig(Layout::kFixed8);
  c.expected_keys = 256;
  auto store = OpenOrDie(c);
  ASSERT_TRUE(store);
  std::mt19937_64 rng(3);
  Image model;
  model[gpu_test::Bytes8(0)] = gpu_test::Bytes8(0);
  model[gpu_test::Bytes8(~0ull)] = gpu_test::Bytes8(~0ull);
  while (model.size() < 50000) model[gpu_test::Bytes8(rng())] = gpu_test::Bytes8(rng());
  PutAll(store.get(), model);
  ASSERT_EQ(store->Size(), model.size());
  Image image = TakeImage(store.get());
  EXPECT_EQ(image.size(), model.size());
  EXPECT_TRUE(SameImage(image, model));
}

// Every key in one bucket: one chain of dozens of slabs.
TEST(GpuSnapshot, AllKeysCollideLongChain) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    auto store = OpenOrDie(CollidingGpuConfig(layout));
    ASSERT_TRUE(store);
    Image model;
    for (uint64_t k = 0; k < 2000; ++k) {
      if (layout == Layout::kFixed8) {
        model[gpu_test::Bytes8(k)] = gpu_test::Bytes8(k * 3);
      } else {
        model["key" + std::to_string(k) + std::string(k % 70, '\0')] = std::string(k % 300, 'v');
      }
    }
    PutAll(store.get(), model);
    EXPECT_TRUE(SameImage(TakeImage(store.get()), model));
  }
}

// Background threads, stopped and joined however the test body leaves
// (declare after the store they use).
struct Workers {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  ~Workers() {
    stop = true;
    for (auto& t : threads) t.join();
  }
};

// Writers whose batches carry increasing versions of their keys.
struct Writer {
  static constexpr int kKeys = 400;
  std::atomic<uint64_t> acked{0};    // newest version whose batch completed
  std::atomic<uint64_t> started{0};  // newest version whose batch was (being) submitted
};

std::string WriterKey(bool fixed8, int t, int i) {
  if (fixed8) return gpu_test::Bytes8((uint64_t(t + 1) << 32) | uint64_t(i));
  return "w" + std::to_string(t) + ":" + std::to_string(i) + std::string(i % 5, '\0');
}
// Version 0 is "never written". A version deletes some keys.
bool DeletedAt(int i, uint64_t v) { return v == 0 || (uint64_t(i) + v) % 5 == 0; }
std::string WriterValue(bool fixed8, int i, uint64_t v) {
  if (fixed8) return gpu_test::Bytes8((v << 20) | uint64_t(i));
  return std::to_string(v) + "/" + std::string((v * 31 + uint64_t(i)) % 200, char('a' + (v + i) % 26));
}

// Point in time: the image holds, for each writer, the state after some
// version V (every key) or V + 1 (for some keys: one batch in flight), with
// V at least the version acknowledged before OpenSnapshot started and
// V + 1 at most the version submitted before it returned.
TEST(GpuSnapshot, PointInTimeWhileWritersRun) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    const bool fixed8 = layout == Layout::kFixed8;
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    constexpr int kWriters = 3;
    Writer writers[kWriters];
    Workers workers;
    for (int t = 0; t < kWriters; ++t) {
      workers.threads.emplace_back([&, t] {
        for (uint64_t v = 1; !workers.stop.load(); ++v) {
          Batch b;
          for (int i = 0; i < Writer::kKeys; ++i) {
            if (DeletedAt(i, v)) {
              b.Delete(WriterKey(fixed8, t, i));
            } else {
              b.Put(WriterKey(fixed8, t, i), WriterValue(fixed8, i, v));
            }
          }
          writers[t].started.store(v);
          std::vector<OpResult> r = store->Execute(std::move(b)).ToOwned();
          for (const OpResult& x : r) ASSERT_TRUE(x.succeeded()) << CodeName(x.code);
          writers[t].acked.store(v);
        }
      });
    }
    int checked = 0;
    for (int round = 0; round < 30; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2 + round % 3));
      uint64_t lo[kWriters], hi[kWriters];
      for (int t = 0; t < kWriters; ++t) lo[t] = writers[t].acked.load();
      std::unique_ptr<SnapshotReader> reader;
      Status s = store->OpenSnapshot(&reader);
      for (int t = 0; t < kWriters; ++t) hi[t] = writers[t].started.load();
      ASSERT_TRUE(s.ok()) << s.ToString();
      Image image;
      ASSERT_TRUE(ReadAll(reader.get(), &image));
      size_t accounted = 0;
      for (int t = 0; t < kWriters; ++t) {
        // Some V in [lo, hi] explains every key of writer t.
        bool explained = false;
        for (uint64_t v = lo[t]; v <= hi[t] && !explained; ++v) {
          explained = true;
          for (int i = 0; i < Writer::kKeys && explained; ++i) {
            auto it = image.find(WriterKey(fixed8, t, i));
            auto matches = [&](uint64_t w) {
              if (DeletedAt(i, w)) return it == image.end();
              return it != image.end() && it->second == WriterValue(fixed8, i, w);
            };
            explained = matches(v) || (v < hi[t] && matches(v + 1));
          }
        }
        EXPECT_TRUE(explained) << "round " << round << " writer " << t << ": no version in ["
                               << lo[t] << ", " << hi[t] << "] explains the image";
        for (int i = 0; i < Writer::kKeys; ++i) accounted += image.count(WriterKey(fixed8, t, i));
      }
      EXPECT_EQ(accounted, image.size()) << "keys nobody wrote";
      if (hi[0] > 1) ++checked;
    }
    EXPECT_GT(checked, 0) << "the writers never got going";
  }
}

// The image does not change after OpenSnapshot returns: values (blobs read
// in place, general layout) survive overwrites in the same size class,
// deletes and Clear(); including a chunk taken before those happened.
TEST(GpuSnapshot, ImageOutlivesOverwritesDeletesAndClear) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    const bool fixed8 = layout == Layout::kFixed8;
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    auto value = [&](uint64_t k, int round) {
      return fixed8 ? gpu_test::Bytes8(k * 1000 + uint64_t(round))
                    : std::string(100, char('a' + (k + uint64_t(round)) % 26)) + std::to_string(k);
    };
    auto key = [&](uint64_t k) { return fixed8 ? gpu_test::Bytes8(k) : "key" + std::to_string(k); };
    Image model;
    for (uint64_t k = 0; k < 10000; ++k) model[key(k)] = value(k, 0);
    PutAll(store.get(), model);

    std::unique_ptr<SnapshotReader> reader;
    ASSERT_TRUE(store->OpenSnapshot(&reader).ok());
    ASSERT_EQ(reader->size(), model.size());
    SnapshotChunk first;
    ASSERT_TRUE(reader->Next(&first));
    ASSERT_LT(first.size(), model.size()) << "the test wants more than one chunk";

    for (int round = 1; round <= 30; ++round) {
      Batch b;
      for (uint64_t k = 0; k < 10000; ++k) {
        if ((k + uint64_t(round)) % 4 == 0) {
          b.Delete(key(k));
        } else {
          b.Put(key(k), value(k, round));
        }
      }
      for (const OpResult& r : store->Execute(std::move(b)).ToOwned()) {
        ASSERT_TRUE(r.succeeded());
      }
    }
    store->Clear();
    Image later;
    for (uint64_t k = 0; k < 10000; ++k) later[key(k + 20000)] = value(k, 99);
    PutAll(store.get(), later);

    Image image;
    for (size_t i = 0; i < first.size(); ++i) {
      image.emplace(std::string(first.keys[i]), std::string(first.values[i]));
    }
    SnapshotChunk chunk;
    while (reader->Next(&chunk)) {
      for (size_t i = 0; i < chunk.size(); ++i) {
        EXPECT_TRUE(image.emplace(std::string(chunk.keys[i]), std::string(chunk.values[i])).second);
      }
    }
    EXPECT_TRUE(reader->status().ok());
    EXPECT_TRUE(SameImage(image, model));
    reader.reset();
    EXPECT_TRUE(SameImage(TakeImage(store.get()), later));
  }
}

TEST(GpuSnapshot, TwoReadersAtOnce) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    const bool fixed8 = layout == Layout::kFixed8;
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    auto key = [&](uint64_t k) { return fixed8 ? gpu_test::Bytes8(k) : "k" + std::to_string(k); };
    auto value = [&](uint64_t k, uint64_t v) {
      return fixed8 ? gpu_test::Bytes8(k << 8 | v) : std::to_string(v) + std::string(k % 90, 'x');
    };
    Image model_a;
    for (uint64_t k = 0; k < 9000; ++k) model_a[key(k)] = value(k, 1);
    PutAll(store.get(), model_a);
    std::unique_ptr<SnapshotReader> a, b;
    ASSERT_TRUE(store->OpenSnapshot(&a).ok());

    Image model_b = model_a;
    Batch change;
    for (uint64_t k = 0; k < 12000; ++k) {
      if (k % 4 == 0) {
        change.Delete(key(k));
        model_b.erase(key(k));
      } else {
        change.Put(key(k), value(k, 2));
        model_b[key(k)] = value(k, 2);
      }
    }
    for (const OpResult& r : store->Execute(std::move(change)).ToOwned()) {
      ASSERT_TRUE(r.succeeded());
    }
    ASSERT_TRUE(store->OpenSnapshot(&b).ok());
    EXPECT_EQ(a->size(), model_a.size());
    EXPECT_EQ(b->size(), model_b.size());

    // Interleaved chunks.
    Image got_a, got_b;
    SnapshotChunk ca, cb;
    bool more_a = true, more_b = true;
    while (more_a || more_b) {
      if (more_a && (more_a = a->Next(&ca))) {
        for (size_t i = 0; i < ca.size(); ++i) {
          got_a.emplace(std::string(ca.keys[i]), std::string(ca.values[i]));
        }
      }
      if (more_b && (more_b = b->Next(&cb))) {
        for (size_t i = 0; i < cb.size(); ++i) {
          got_b.emplace(std::string(cb.keys[i]), std::string(cb.values[i]));
        }
      }
    }
    b.reset();  // the newer one first
    EXPECT_TRUE(SameImage(got_a, model_a));
    EXPECT_TRUE(SameImage(got_b, model_b));
    a.reset();
  }
}

// Readers dropped unread or half read give everything back; the store goes
// on (overwrites free the old blobs now), and the store closes cleanly.
TEST(GpuSnapshot, ReaderDestroyedBeforeReadingEverything) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    const bool fixed8 = layout == Layout::kFixed8;
    auto store = OpenOrDie(GpuConfig(layout));
    ASSERT_TRUE(store);
    auto key = [&](uint64_t k) { return fixed8 ? gpu_test::Bytes8(k) : "k" + std::to_string(k); };
    auto value = [&](uint64_t k, int round) {
      return fixed8 ? gpu_test::Bytes8(k << 8 | uint64_t(round)) : "v" + std::to_string(round);
    };
    Image model;
    for (uint64_t k = 0; k < 10000; ++k) model[key(k)] = value(k, 0);
    PutAll(store.get(), model);
    for (int i = 0; i < 5; ++i) {
      std::unique_ptr<SnapshotReader> reader;
      ASSERT_TRUE(store->OpenSnapshot(&reader).ok());
      SnapshotChunk chunk;
      if (i % 2 == 0) {
        ASSERT_TRUE(reader->Next(&chunk));
      }
      // Destroyed on another thread (allowed: any thread).
      std::thread([r = std::move(reader)]() mutable { r.reset(); }).join();
      for (uint64_t k = 0; k < 10000; ++k) model[key(k)] = value(k, i + 1);
      PutAll(store.get(), model);
    }
    EXPECT_TRUE(SameImage(TakeImage(store.get()), model));
    std::unique_ptr<SnapshotReader> last;
    ASSERT_TRUE(store->OpenSnapshot(&last).ok());
    last.reset();
    store.reset();  // every reader is gone: closes cleanly
  }
}

// Snapshots taken and read slowly while writers overwrite and Clear() runs:
// every value read belongs to its key (a freed and reused blob would show
// another key's bytes).
TEST(GpuSnapshot, ValuesStayTheirKeysAcrossClears) {
  SKIP_WITHOUT_GPU();
  auto store = OpenOrDie(GpuConfig(Layout::kGeneral));
  ASSERT_TRUE(store);
  Workers workers;
  for (int t = 0; t < 2; ++t) {
    workers.threads.emplace_back([&, t] {
      for (uint64_t i = 0; !workers.stop.load(); ++i) {
        Batch b;
        for (int j = 0; j < 200; ++j) {
          const std::string k = "t" + std::to_string(t) + ":" + std::to_string((i * 200 + j) % 3000);
          b.Put(k, k + "#" + std::to_string(i) + std::string(i % 64, '.'));
        }
        for (const OpResult& r : store->Execute(std::move(b)).ToOwned()) {
          ASSERT_TRUE(r.succeeded());
        }
      }
    });
  }
  workers.threads.emplace_back([&] {
    while (!workers.stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      store->Clear();
    }
  });
  size_t seen = 0;
  for (int round = 0; round < 20; ++round) {
    std::unique_ptr<SnapshotReader> reader;
    ASSERT_TRUE(store->OpenSnapshot(&reader).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // writes and Clears go on
    SnapshotChunk chunk;
    uint64_t n = 0;
    while (reader->Next(&chunk)) {
      for (size_t i = 0; i < chunk.size(); ++i) {
        const std::string k(chunk.keys[i]);
        ASSERT_EQ(std::string(chunk.values[i].substr(0, k.size() + 1)), k + "#");
      }
      n += chunk.size();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(reader->status().ok());
    EXPECT_EQ(n, reader->size());
    seen += n;
  }
  EXPECT_GT(seen, 0u);
}

// The epoch rule behind the image's blobs (result_epochs.h): a blob retired
// by an epoch after a held one is not freed until the held one is released,
// while the released epochs behind it are ended (their buffers freed).
TEST(GpuSnapshot, HeldEpochKeepsLaterRetiredBlobs) {
  SKIP_WITHOUT_GPU();
  using store::gpu::ResultEpochs;
  store::gpu::PinnedMemory pinned;
  store::gpu::ValueHeap heap;
  {
    ResultEpochs epochs(&pinned);
    uint64_t* blob = heap.Allocate(std::string(100, 'v'));
    ASSERT_NE(blob, nullptr);
    ResultEpochs::Arb* hold = epochs.Begin(0);  // a snapshot's
    ASSERT_NE(hold, nullptr);
    for (int i = 0; i < 300; ++i) {
      ResultEpochs::Arb* a = epochs.Begin(64);
      ASSERT_NE(a, nullptr);
      if (i == 0) epochs.Retire(a->seq, &heap, blob, 100);  // a later PUT replaced it
      ResultEpochs::Release(a);
      epochs.Collect();
    }
    EXPECT_GE(epochs.live(), 1u);
    EXPECT_LE(epochs.live(), 64u) << "released epochs behind the held one were kept";
    uint64_t* other = heap.Allocate(std::string(100, 'x'));  // same size class: would reuse a freed blob
    EXPECT_NE(other, blob) << "freed while an older epoch was held";
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(blob), 100), std::string(100, 'v'));
    ResultEpochs::Release(hold);
    epochs.Collect();
    EXPECT_EQ(epochs.live(), 0u);
    EXPECT_EQ(heap.Allocate(std::string(100, 'w')), blob) << "not freed once released";
  }
}

}  // namespace
}  // namespace kvcg
