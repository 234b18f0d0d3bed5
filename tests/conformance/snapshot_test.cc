// Store::OpenSnapshot (kvcg/store.h, kvcg/snapshot.h) on every row: an image
// returns every key of the store exactly once with its value and an exact
// size(); it is a point in time — between what was acknowledged before the
// call and what was submitted after it, one instant for all keys — even while
// writers keep going; it stays intact through later overwrites, deletes and
// Clear() (the current chunk's views included); several readers may be open
// at once, each with its own instant; a reader may be dropped at any point.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "conformance_fixture.h"
#include "kvcg/durable.h"
#include "kvcg/engine.h"

namespace kvcg::conformance {
namespace {

using namespace std::string_literals;
using Image = std::map<std::string, std::string>;

std::unique_ptr<SnapshotReader> OpenImage(Store* store) {
  std::unique_ptr<SnapshotReader> reader;
  const Status s = store->OpenSnapshot(&reader);
  EXPECT_TRUE(s.ok()) << "OpenSnapshot: " << s.ToString();
  EXPECT_TRUE(s.ok() == (reader != nullptr)) << "a reader exactly when ok";
  return s.ok() ? std::move(reader) : nullptr;
}

// Adds one chunk to *image; fails on a malformed chunk or a repeated key.
::testing::AssertionResult AddChunk(const SnapshotChunk& chunk, Image* image) {
  if (chunk.size() == 0) return ::testing::AssertionFailure() << "Next returned true with no entry";
  if (chunk.keys.size() != chunk.values.size()) {
    return ::testing::AssertionFailure() << chunk.keys.size() << " keys but " << chunk.values.size()
                                         << " values in a chunk";
  }
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (!image->emplace(std::string(chunk.keys[i]), std::string(chunk.values[i])).second) {
      return ::testing::AssertionFailure() << "key \"" << Show(chunk.keys[i]) << "\" returned twice";
    }
  }
  return ::testing::AssertionSuccess();
}

// Reads the rest of `reader` into *image (which may hold earlier chunks) and
// checks the end: ok status, as many keys as size(), and Next stays false.
::testing::AssertionResult ReadRest(SnapshotReader* reader, Image* image) {
  SnapshotChunk chunk;
  while (reader->Next(&chunk)) {
    ::testing::AssertionResult added = AddChunk(chunk, image);
    if (!added) return added;
  }
  if (!reader->status().ok()) {
    return ::testing::AssertionFailure() << "reader failed: " << reader->status().ToString();
  }
  if (image->size() != reader->size()) {
    return ::testing::AssertionFailure() << "read " << image->size() << " keys, size() says "
                                         << reader->size();
  }
  if (reader->Next(&chunk)) return ::testing::AssertionFailure() << "Next true after the end";
  return ::testing::AssertionSuccess();
}

// got == want, naming the first few differences.
::testing::AssertionResult SameImage(const Image& got, const Image& want) {
  std::string diffs;
  int shown = 0;
  auto note = [&](const std::string& line) {
    if (++shown <= 5) diffs += "\n  " + line;
  };
  for (const auto& [key, value] : want) {
    auto it = got.find(key);
    if (it == got.end()) note("missing \"" + Show(key) + "\"");
    else if (it->second != value) {
      note("\"" + Show(key) + "\": got \"" + Show(it->second) + "\" (" +
           std::to_string(it->second.size()) + " bytes), want \"" + Show(value) + "\" (" +
           std::to_string(value.size()) + " bytes)");
    }
  }
  for (const auto& [key, value] : got) {
    if (!want.contains(key)) note("unexpected \"" + Show(key) + "\" = \"" + Show(value) + "\"");
  }
  if (shown == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << shown << " differences (image of " << got.size()
                                       << " keys, want " << want.size() << "):" << diffs;
}

// `n` distinct keys with values, valid in the layout. General: keys of 1 to
// 300 bytes, each with a NUL byte, values of 0 to 5000 bytes. Fixed8: 8-byte
// keys and values with NUL bytes. `seed` picks another set of values (the
// keys depend on n and the layout only).
Image MakeData(size_t n, bool fixed8, uint64_t seed) {
  Image data;
  for (uint64_t i = 0; data.size() < n; ++i) {
    std::string key;
    if (fixed8) {
      key = RandomBytes(8, i);
      key[i % 8] = '\0';
    } else {
      const size_t size = 1 + (i * 7919) % 300;
      key = RandomBytes(size, i);
      key[(i * 31) % size] = '\0';
    }
    if (data.contains(key)) continue;  // short keys repeat; keep the first
    const size_t value_size = fixed8 ? 8 : (i * 104729 + seed * 17) % 5001;
    data.emplace(std::move(key), RandomBytes(value_size, i * 1000003 + seed));
  }
  return data;
}

// Writes every pair (in batches), checking that each write succeeded.
void PutAll(Store* store, const Image& data) {
  Batch batch = store->NewBatch();
  auto flush = [&] {
    const size_t n = batch.size();
    Results r = store->Execute(std::move(batch));
    ASSERT_EQ(r.size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(r[i].succeeded()) << CodeName(r.code(i));
    batch = store->NewBatch();
  };
  for (const auto& [key, value] : data) {
    batch.Put(key, value);
    if (batch.size() == 256) {
      ASSERT_NO_FATAL_FAILURE(flush());
    }
  }
  ASSERT_NO_FATAL_FAILURE(flush());
}

// Deletes every `stride`-th key of *data from the store and from *data.
void DeleteEvery(Store* store, size_t stride, size_t offset, Image* data) {
  Batch batch = store->NewBatch();
  size_t i = 0;
  for (auto it = data->begin(); it != data->end(); ++i) {
    if (i % stride != offset) {
      ++it;
      continue;
    }
    batch.Delete(it->first);
    it = data->erase(it);
  }
  const size_t n = batch.size();
  Results r = store->Execute(std::move(batch));
  ASSERT_EQ(r.size(), n);
  for (size_t j = 0; j < n; ++j) ASSERT_EQ(r.code(j), Code::kOk) << "deleting a present key";
}

TEST_P(Conformance, SnapshotOfEmptyStoreIsEmpty) {
  std::unique_ptr<SnapshotReader> reader = OpenImage(store_.get());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->size(), 0u);
  SnapshotChunk chunk;
  EXPECT_FALSE(reader->Next(&chunk));
  EXPECT_TRUE(reader->status().ok()) << reader->status().ToString();
  EXPECT_FALSE(reader->Next(&chunk));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, SnapshotHoldsEveryKeyOnceWithItsLatestValue) {
  Image data = MakeData(3000, fixed8(), 1);
  if (!fixed8()) {
    data["\0"s] = "";
    data[std::string(300, '\0')] = std::string(5000, '\0');
    data["x"] = "\0\0\0"s;
  }
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
  // Second writes of a third of the keys (hot hits on engine rows, so the
  // image needs their logged updates) and deletes of a fifth.
  Image changed = MakeData(3000, fixed8(), 2);
  size_t i = 0;
  for (auto& [key, value] : data) {
    if (i++ % 3 == 0) value = changed.at(key);
  }
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
  ASSERT_NO_FATAL_FAILURE(DeleteEvery(store_.get(), 5, 1, &data));
  ASSERT_EQ(store_->Size(), data.size());

  std::unique_ptr<SnapshotReader> reader = OpenImage(store_.get());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->size(), data.size());
  Image image;
  ASSERT_TRUE(ReadRest(reader.get(), &image));
  EXPECT_TRUE(SameImage(image, data));
  EXPECT_EQ(store_->Size(), data.size()) << "a snapshot changes nothing";
  reader.reset();
  EXPECT_EQ(store_->Size(), data.size());
  for (const auto& [key, value] : data) ASSERT_TRUE(Found(Get(key), value)) << Show(key);
}

TEST_P(Conformance, SnapshotIsUnchangedByLaterOverwritesDeletesAndClear) {
  const Image before = MakeData(2000, fixed8(), 3);
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), before));
  std::unique_ptr<SnapshotReader> reader = OpenImage(store_.get());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->size(), before.size());
  SnapshotChunk first;
  ASSERT_TRUE(reader->Next(&first));

  // Overwrite every key, delete half, clear, then write new keys.
  Image after = MakeData(2000, fixed8(), 4);
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), after));
  ASSERT_NO_FATAL_FAILURE(DeleteEvery(store_.get(), 2, 0, &after));
  store_->Clear();
  ASSERT_EQ(store_->Size(), 0u);
  Image fresh;
  for (uint64_t k = 0; k < 500; ++k) fresh.emplace(K(1000000 + k), V(k, 1 + k % 100));
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), fresh));

  // The chunk read before the mutations is still intact (its views are valid
  // until the next Next), and so is everything after it.
  Image image;
  ASSERT_TRUE(AddChunk(first, &image));
  for (const auto& [key, value] : image) {
    auto it = before.find(key);
    ASSERT_NE(it, before.end()) << "unexpected key \"" << Show(key) << "\"";
    ASSERT_EQ(value, it->second) << "first chunk's value of \"" << Show(key) << "\" changed";
  }
  ASSERT_TRUE(ReadRest(reader.get(), &image));
  EXPECT_TRUE(SameImage(image, before));

  EXPECT_EQ(store_->Size(), fresh.size()) << "the store's size is its own, not the image's";
  std::unique_ptr<SnapshotReader> now = OpenImage(store_.get());
  ASSERT_NE(now, nullptr);
  Image current;
  ASSERT_TRUE(ReadRest(now.get(), &current));
  EXPECT_TRUE(SameImage(current, fresh));
}

TEST_P(Conformance, TwoOpenReadersSeeTheirOwnInstants) {
  Image first = MakeData(1500, fixed8(), 5);
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), first));
  std::unique_ptr<SnapshotReader> a = OpenImage(store_.get());
  ASSERT_NE(a, nullptr);

  // The second instant: half the keys overwritten, a quarter deleted, new keys.
  Image second = first;
  const Image overwrite = MakeData(1500, fixed8(), 6);
  size_t i = 0;
  for (auto& [key, value] : second) {
    if (i++ % 2 == 0) value = overwrite.at(key);
  }
  for (uint64_t k = 0; k < 300; ++k) second.emplace(K(2000000 + k), V(k, 1 + k * 13 % 4000));
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), second));
  ASSERT_NO_FATAL_FAILURE(DeleteEvery(store_.get(), 4, 3, &second));
  std::unique_ptr<SnapshotReader> b = OpenImage(store_.get());
  ASSERT_NE(b, nullptr);
  // A third at the same state as the second: one copy may serve both.
  std::unique_ptr<SnapshotReader> c = OpenImage(store_.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(a->size(), first.size());
  EXPECT_EQ(b->size(), second.size());
  EXPECT_EQ(c->size(), second.size());

  // Then everything changes again while both are read, chunk by chunk in turn.
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), MakeData(1500, fixed8(), 7)));
  Image image_a, image_b;
  SnapshotChunk chunk;
  bool more_a = true, more_b = true, cleared = false;
  while (more_a || more_b) {
    if (more_b && (more_b = b->Next(&chunk))) {
      ASSERT_TRUE(AddChunk(chunk, &image_b));
    }
    if (more_a && (more_a = a->Next(&chunk))) {
      ASSERT_TRUE(AddChunk(chunk, &image_a));
    }
    if (!cleared) store_->Clear();  // once, after each reader's first chunk
    cleared = true;
  }
  ASSERT_TRUE(ReadRest(a.get(), &image_a));
  ASSERT_TRUE(ReadRest(b.get(), &image_b));
  EXPECT_TRUE(SameImage(image_a, first));
  EXPECT_TRUE(SameImage(image_b, second));
  Image image_c;
  ASSERT_TRUE(ReadRest(c.get(), &image_c));
  EXPECT_TRUE(SameImage(image_c, second));
}

TEST_P(Conformance, ReaderMayBeDroppedAtAnyPoint) {
  Image data = MakeData(2000, fixed8(), 8);
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
  for (int round = 0; round < 6; ++round) {
    std::unique_ptr<SnapshotReader> dropped = OpenImage(store_.get());
    ASSERT_NE(dropped, nullptr);
    SnapshotChunk chunk;
    for (int c = 0; c < round; ++c) dropped->Next(&chunk);  // round 0: dropped unread
    // Writes while it is open, then after it is gone.
    const Image next = MakeData(2000, fixed8(), 9 + round);
    size_t i = 0;
    for (auto& [key, value] : data) {
      if (i++ % 3 == static_cast<size_t>(round % 3)) value = next.at(key);
    }
    ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
    dropped.reset();
    ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
    ASSERT_EQ(store_->Size(), data.size());
  }
  ASSERT_NO_FATAL_FAILURE(DeleteEvery(store_.get(), 3, 2, &data));
  std::unique_ptr<SnapshotReader> reader = OpenImage(store_.get());
  ASSERT_NE(reader, nullptr);
  Image image;
  ASSERT_TRUE(ReadRest(reader.get(), &image));
  EXPECT_TRUE(SameImage(image, data));
  EXPECT_EQ(store_->Size(), data.size());
  for (const auto& [key, value] : data) ASSERT_TRUE(Found(Get(key), value)) << Show(key);
}

// --- Point in time under concurrent writers.
//
// Each writer owns kKeysPerWriter keys and writes them in successive batches,
// one at a time, waiting for each: batch v puts version v into each of its
// keys, or deletes them all when v is a multiple of 5. At any instant a
// writer's keys therefore hold versions V and V+1 only (batch V+1 maybe half
// done). An image of one instant must show exactly that for every writer,
// with V at least the last batch acknowledged before OpenSnapshot was called
// and V+1, when shown, at most the last batch submitted before it returned.
// An image read live (no copy-on-write) shows later versions; one taken
// shard by shard at different instants, or missing logged hot-cache updates,
// shows a writer's keys at versions further apart.
constexpr uint32_t kWriters = 3;
constexpr uint32_t kKeysPerWriter = 24;

bool IsDeleteVersion(uint64_t v) { return v % 5 == 0; }  // version 0: never written

// Key and value bytes of the writers' keys, valid in both layouts.
struct VersionedKeys {
  bool fixed8;

  std::string Key(uint32_t id) const {
    if (!fixed8) return "pit\0"s + std::to_string(id);
    std::string key(8, '\0');
    key[0] = 'P';
    std::memcpy(key.data() + 1, &id, 4);
    return key;
  }
  // General: "<version>:<id>:" and (version * 37 + id) % 300 filler bytes.
  // Fixed8: the id's low 2 bytes, then the version's low 6 bytes.
  std::string Value(uint32_t id, uint64_t version) const {
    if (fixed8) {
      std::string value(8, '\0');
      std::memcpy(value.data(), &id, 2);
      std::memcpy(value.data() + 2, &version, 6);
      return value;
    }
    return std::to_string(version) + ":" + std::to_string(id) + ":" +
           RandomBytes((version * 37 + id) % 300, version * 1000 + id);
  }
  // The version `value` encodes for key `id`; false when it is no value
  // Value(id, version) could have produced.
  bool Version(uint32_t id, std::string_view value, uint64_t* version) const {
    if (fixed8) {
      if (value.size() != 8) return false;
      *version = 0;
      std::memcpy(version, value.data() + 2, 6);
    } else {
      const size_t colon = value.find(':');
      if (colon == std::string_view::npos || colon == 0 || colon > 18) return false;
      *version = std::stoull(std::string(value.substr(0, colon)));
    }
    return value == Value(id, *version);
  }
};

// Checks that `image` is one instant of the writers' keys (see above), given
// per writer the last version acknowledged before OpenSnapshot (lo) and the
// last submitted before it returned (hi).
::testing::AssertionResult AtOneInstant(const Image& image, const VersionedKeys& keys,
                                        const std::vector<uint64_t>& lo,
                                        const std::vector<uint64_t>& hi) {
  std::map<std::string, uint32_t> ids;
  for (uint32_t id = 0; id < kWriters * kKeysPerWriter; ++id) ids.emplace(keys.Key(id), id);
  std::vector<int64_t> shown(kWriters * kKeysPerWriter, -1);  // -1: absent
  for (const auto& [key, value] : image) {
    auto it = ids.find(key);
    if (it == ids.end()) return ::testing::AssertionFailure() << "unknown key \"" << Show(key) << "\"";
    uint64_t version;
    if (!keys.Version(it->second, value, &version)) {
      return ::testing::AssertionFailure() << "key " << it->second << ": corrupt value \""
                                           << Show(value) << "\"";
    }
    shown[it->second] = static_cast<int64_t>(version);
  }
  for (uint32_t t = 0; t < kWriters; ++t) {
    auto explains = [&](uint64_t v) {  // every key of t at version v or v + 1 (if submitted)
      for (uint32_t k = 0; k < kKeysPerWriter; ++k) {
        const int64_t x = shown[t * kKeysPerWriter + k];
        const bool at_v = x < 0 ? IsDeleteVersion(v) : x == static_cast<int64_t>(v);
        const bool at_next =
            v + 1 <= hi[t] && (x < 0 ? IsDeleteVersion(v + 1) : x == static_cast<int64_t>(v + 1));
        if (!at_v && !at_next) return false;
      }
      return true;
    };
    bool explained = false;
    for (uint64_t v = lo[t]; v <= hi[t] && !explained; ++v) explained = explains(v);
    if (!explained) {
      std::string versions;
      for (uint32_t k = 0; k < kKeysPerWriter; ++k) {
        const int64_t x = shown[t * kKeysPerWriter + k];
        versions += x < 0 ? " absent" : " " + std::to_string(x);
      }
      return ::testing::AssertionFailure()
             << "writer " << t << ": no instant explains the image: acknowledged before the call "
             << lo[t] << ", submitted before it returned " << hi[t] << ", image versions:" << versions;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_P(Conformance, SnapshotIsOneInstantWhileWritersRun) {
  const VersionedKeys keys{fixed8()};
  struct Progress {
    std::atomic<uint64_t> submitted{0};
    std::atomic<uint64_t> acked{0};
  };
  std::vector<Progress> progress(kWriters);
  std::atomic<bool> stop{false};
  std::atomic<int> bad_results{0};
  std::vector<std::thread> writers;
  for (uint32_t t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t v = 1; !stop.load(); ++v) {
        Batch batch = store_->NewBatch();
        for (uint32_t k = 0; k < kKeysPerWriter; ++k) {
          const uint32_t id = t * kKeysPerWriter + k;
          if (IsDeleteVersion(v)) batch.Delete(keys.Key(id));
          else batch.Put(keys.Key(id), keys.Value(id, v));
        }
        progress[t].submitted.store(v);
        Results r = store_->Execute(std::move(batch));
        // Each op returns the previous batch's state of its key.
        for (uint32_t k = 0; k < kKeysPerWriter && k < r.size(); ++k) {
          const uint32_t id = t * kKeysPerWriter + k;
          const bool ok = IsDeleteVersion(v - 1)
                              ? static_cast<bool>(NotFound(r[k]))
                              : static_cast<bool>(Found(r[k], keys.Value(id, v - 1)));
          if (!ok && bad_results.fetch_add(1) < 5) {
            ADD_FAILURE() << "writer " << t << " key " << id << " version " << v
                          << ": previous value " << ::testing::PrintToString(r[k]);
          }
        }
        if (r.size() != kKeysPerWriter) ADD_FAILURE() << "short results";
        progress[t].acked.store(v);
      }
    });
  }
  struct StopAndJoin {  // also when an ASSERT leaves the test early
    std::atomic<bool>* stop;
    std::vector<std::thread>* threads;
    ~StopAndJoin() {
      stop->store(true);
      for (std::thread& t : *threads) {
        if (t.joinable()) t.join();
      }
    }
  } stop_and_join{&stop, &writers};
  auto bounds = [&](auto field) {
    std::vector<uint64_t> out(kWriters);
    for (uint32_t t = 0; t < kWriters; ++t) out[t] = (progress[t].*field).load();
    return out;
  };
  for (uint32_t t = 0; t < kWriters; ++t) {
    while (progress[t].acked.load() < 3) std::this_thread::yield();
  }
  constexpr int kRounds = 16;
  for (int round = 0; round < kRounds && !HasFailure(); ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + round % 3));
    const std::vector<uint64_t> lo_a = bounds(&Progress::acked);
    std::unique_ptr<SnapshotReader> a = OpenImage(store_.get());
    const std::vector<uint64_t> hi_a = bounds(&Progress::submitted);
    ASSERT_NE(a, nullptr);
    if (round % 2 == 1) {  // one more, dropped at once while writers run
      std::unique_ptr<SnapshotReader> dropped = OpenImage(store_.get());
      ASSERT_NE(dropped, nullptr);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::vector<uint64_t> lo_b = bounds(&Progress::acked);
    std::unique_ptr<SnapshotReader> b = OpenImage(store_.get());
    const std::vector<uint64_t> hi_b = bounds(&Progress::submitted);
    ASSERT_NE(b, nullptr);
    // Read both (b first) while the writers keep going.
    Image image_a, image_b;
    ASSERT_TRUE(ReadRest(b.get(), &image_b)) << "round " << round;
    ASSERT_TRUE(ReadRest(a.get(), &image_a)) << "round " << round;
    EXPECT_TRUE(AtOneInstant(image_a, keys, lo_a, hi_a)) << "round " << round << ", first reader";
    EXPECT_TRUE(AtOneInstant(image_b, keys, lo_b, hi_b)) << "round " << round << ", second reader";
  }
  stop.store(true);
  for (std::thread& w : writers) w.join();
  ASSERT_FALSE(HasFailure());

  // Quiet now: the image is the store, exactly.
  Image expected;
  for (uint32_t t = 0; t < kWriters; ++t) {
    const uint64_t v = progress[t].acked.load();
    if (IsDeleteVersion(v)) continue;
    for (uint32_t k = 0; k < kKeysPerWriter; ++k) {
      const uint32_t id = t * kKeysPerWriter + k;
      expected.emplace(keys.Key(id), keys.Value(id, v));
    }
  }
  EXPECT_EQ(store_->Size(), expected.size());
  std::unique_ptr<SnapshotReader> last = OpenImage(store_.get());
  ASSERT_NE(last, nullptr);
  Image image;
  ASSERT_TRUE(ReadRest(last.get(), &image));
  EXPECT_TRUE(SameImage(image, expected));
}

TEST_P(Conformance, OpenSnapshotInsideACompletionIsRefusedByEngines) {
  if (AsEngine(store_.get()) == nullptr) {
    GTEST_SKIP() << "only engines refuse (their snapshot blocks like a model switch)";
  }
  std::mutex mu;
  std::condition_variable cv;
  bool ran = false;
  Status inside = Status::Ok();
  bool got_reader = true;
  Batch batch = NewBatch();
  batch.Put(K(1), V(1));
  Store* store = store_.get();
  store->Submit(std::move(batch), [&](Results&&) {
    std::unique_ptr<SnapshotReader> reader;
    const Status s = store->OpenSnapshot(&reader);
    std::lock_guard lock(mu);
    inside = s;
    got_reader = reader != nullptr;
    ran = true;
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ran; });
    if (AsDurable(store) != nullptr) {
      // The Durable wrapper delivers a write's completion outside the
      // engine's own completion (after its lanes, or after the fsync), so
      // there the engine has nothing to refuse.
      EXPECT_TRUE(inside.ok()) << inside.ToString();
      EXPECT_TRUE(got_reader);
    } else {
      EXPECT_EQ(inside.code(), Code::kInvalidArgument) << inside.ToString();
      EXPECT_FALSE(got_reader);
    }
  }
  // Outside a completion it works, and the write is in the image.
  std::unique_ptr<SnapshotReader> reader = OpenImage(store);
  ASSERT_NE(reader, nullptr);
  Image image;
  ASSERT_TRUE(ReadRest(reader.get(), &image));
  EXPECT_TRUE(SameImage(image, Image{{K(1), V(1)}}));
}

}  // namespace
}  // namespace kvcg::conformance
