// Store::Scan (kvcg/store.h) on every row: one step of an iteration with
// Redis SCAN's guarantee. An empty store ends in one step; a full iteration
// returns every key with its value, in a number of steps that fits the count
// hint; a key present for the whole iteration is returned at least once
// while other keys are inserted (the CPU shard tables double), deleted (in
// the middle of probe runs, so later entries shift backward) and rewritten —
// between steps and from concurrent threads; every value returned is one the
// key had; cursor 0 after the end starts over; a garbage cursor neither
// fails nor runs away; an iteration across Clear() ends.
//
// The changing-store tests run twice: with the row's hash and with a
// clustered hash (four bits cleared, so 1 in 16 slots is a home and probe
// runs are long). Checked to fail on the CPU backend with: a positional
// cursor (slot index instead of home slot: misses entries that a delete
// shifts backward, or a doubling moves, behind it) — only the
// changing-store tests catch that one, a static table is iterated right;
// a home-slot visit that stops at the first entry of another home; a step
// that skips the next shard when it ends on a shard boundary. (A plain
// increment instead of the reverse-binary order passes, rightly: it is only
// needed when a table shrinks, which CPU tables do only at Clear.)
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "conformance_fixture.h"
#include "kvcg/hash.h"

namespace kvcg::conformance {
namespace {

using namespace std::string_literals;
using Image = std::map<std::string, std::string>;
// Every value ever given to a key (the keys never written are absent).
using Written = std::map<std::string, std::set<std::string>>;

// What one iteration returned.
struct ScanLog {
  std::map<std::string, std::vector<std::string>> seen;  // values returned, per key
  size_t steps = 0;
  size_t entries = 0;
  size_t max_step_entries = 0;
};

// One step from `cursor`: its whole reader into *log. Fails on an error, a
// missing reader, a malformed chunk, or a size() that is not what was read.
::testing::AssertionResult Step(Store* store, uint64_t cursor, size_t count, uint64_t* next,
                                ScanLog* log) {
  std::unique_ptr<SnapshotReader> reader;
  const Status s = store->Scan(cursor, count, &reader, next);
  if (!s.ok()) {
    return ::testing::AssertionFailure() << "Scan(" << cursor << ", " << count << "): " << s.ToString();
  }
  if (reader == nullptr) return ::testing::AssertionFailure() << "Scan ok with no reader";
  size_t n = 0;
  SnapshotChunk chunk;
  while (reader->Next(&chunk)) {
    if (chunk.size() == 0) return ::testing::AssertionFailure() << "Next returned true with no entry";
    if (chunk.keys.size() != chunk.values.size()) {
      return ::testing::AssertionFailure() << chunk.keys.size() << " keys but " << chunk.values.size()
                                           << " values in a chunk";
    }
    for (size_t i = 0; i < chunk.size(); ++i) {
      log->seen[std::string(chunk.keys[i])].emplace_back(chunk.values[i]);
    }
    n += chunk.size();
  }
  if (!reader->status().ok()) {
    return ::testing::AssertionFailure() << "step reader failed: " << reader->status().ToString();
  }
  if (reader->size() != n) {
    return ::testing::AssertionFailure() << "read " << n << " entries, size() says " << reader->size();
  }
  if (reader->Next(&chunk)) return ::testing::AssertionFailure() << "Next true after the end";
  ++log->steps;
  log->entries += n;
  log->max_step_entries = std::max(log->max_step_entries, n);
  return ::testing::AssertionSuccess();
}

// Steps from `cursor` until the cursor comes back 0, calling between() after
// every step but the last; fails after `max_steps` steps (a runaway).
::testing::AssertionResult Iterate(Store* store, uint64_t cursor, size_t count, size_t max_steps,
                                   ScanLog* log, const std::function<void()>& between = nullptr) {
  for (size_t i = 0; i < max_steps; ++i) {
    uint64_t next = 0;
    ::testing::AssertionResult r = Step(store, cursor, count, &next, log);
    if (!r) return r << " (step " << i << ", cursor " << cursor << ")";
    if (next == 0) return ::testing::AssertionSuccess();
    cursor = next;
    if (between) between();
  }
  return ::testing::AssertionFailure() << "no end after " << max_steps << " steps of count " << count
                                       << " (" << log->entries << " entries returned)";
}

// Every key of `want` was returned, each time with its value.
::testing::AssertionResult ReturnedAll(const ScanLog& log, const Image& want) {
  size_t missing = 0, wrong = 0;
  std::string first;
  for (const auto& [key, value] : want) {
    auto it = log.seen.find(key);
    if (it == log.seen.end()) {
      if (missing++ == 0 && first.empty()) first = "missing \"" + Show(key) + "\"";
      continue;
    }
    for (const std::string& v : it->second) {
      if (v != value) {
        if (wrong++ == 0 && first.empty()) first = "\"" + Show(key) + "\" = \"" + Show(v) + "\", want \"" + Show(value) + "\"";
      }
    }
  }
  if (missing == 0 && wrong == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << missing << " of " << want.size() << " keys never returned, "
                                       << wrong << " wrong values; first: " << first;
}

// Every key of `keys` was returned at least once.
::testing::AssertionResult ReturnedKeys(const ScanLog& log, const std::vector<std::string>& keys) {
  size_t missing = 0;
  std::string first;
  for (const std::string& key : keys) {
    if (!log.seen.contains(key) && missing++ == 0) first = Show(key);
  }
  if (missing == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << missing << " of " << keys.size()
                                       << " keys present for the whole iteration never returned (first \""
                                       << first << "\"; " << log.steps << " steps)";
}

// Every key returned was written, and every value returned is one it was given.
::testing::AssertionResult OnlyWrittenValues(const ScanLog& log, const Written& written) {
  for (const auto& [key, values] : log.seen) {
    auto it = written.find(key);
    if (it == written.end()) return ::testing::AssertionFailure() << "unknown key \"" << Show(key) << "\"";
    for (const std::string& v : values) {
      if (!it->second.contains(v)) {
        return ::testing::AssertionFailure() << "\"" << Show(key) << "\" returned with \"" << Show(v)
                                             << "\", a value it never had";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// `n` distinct keys with values, valid in the layout: general keys of 1 to
// 200 bytes with a NUL byte and values of 0 to 1000 bytes; fixed8 8 bytes.
Image MakeData(size_t n, bool fixed8, uint64_t seed) {
  Image data;
  for (uint64_t i = 0; data.size() < n; ++i) {
    std::string key;
    if (fixed8) {
      key = RandomBytes(8, i + seed * 1000003);
      key[i % 8] = '\0';
    } else {
      const size_t size = 1 + (i * 7919) % 200;
      key = RandomBytes(size, i + seed * 1000003);
      key[(i * 31) % size] = '\0';
    }
    if (data.contains(key)) continue;
    const size_t value_size = fixed8 ? 8 : (i * 104729 + seed) % 1001;
    data.emplace(std::move(key), RandomBytes(value_size, i * 7 + seed));
  }
  return data;
}

void Apply(Store* store, Batch batch) {
  const size_t n = batch.size();
  Results r = store->Execute(std::move(batch));
  ASSERT_EQ(r.size(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(r[i].succeeded()) << i << ": " << CodeName(r.code(i));
}

void PutAll(Store* store, const Image& data) {
  Batch batch = store->NewBatch();
  for (const auto& [key, value] : data) {
    batch.Put(key, value);
    if (batch.size() == 256) {
      ASSERT_NO_FATAL_FAILURE(Apply(store, std::move(batch)));
      batch = store->NewBatch();
    }
  }
  ASSERT_NO_FATAL_FAILURE(Apply(store, std::move(batch)));
}

// Keys of the changing-store tests, by kind ('S'table, 'D'oomed, 'N'ew,
// 'C'hurned) and id, and their versioned values; valid in both layouts.
std::string KeyOf(bool fixed8, char kind, uint64_t id) {
  if (!fixed8) return std::string(1, kind) + "\0"s + std::to_string(id);
  std::string key(8, '\0');
  key[0] = kind;
  std::memcpy(key.data() + 1, &id, 7);  // little-endian: the low 7 bytes
  return key;
}
std::string ValueOf(bool fixed8, uint64_t id, uint32_t version) {
  if (fixed8) {
    std::string value(8, '\0');
    std::memcpy(value.data(), &id, 4);
    std::memcpy(value.data() + 4, &version, 4);
    return value;
  }
  return std::to_string(id) + "." + std::to_string(version) + ":" +
         RandomBytes((id * 31 + version * 7) % 200, id * 1000 + version);
}

// Bits 2..5 cleared: within every 64 slots only 4 are home slots, so each
// CPU shard table holds long probe runs that deletes shift backward through,
// while the bits above still move entries when a table doubles.
uint64_t ClusteredHash(std::string_view key) { return Xxh3Hash(key) & ~uint64_t{0x3C}; }

struct NamedHash {
  const char* name;
  HashFunction hash;
};
const NamedHash kHashes[] = {{"xxh3", &Xxh3Hash}, {"clustered", &ClusteredHash}};

TEST_P(Conformance, ScanOfEmptyStoreIsOneEmptyStep) {
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "never written" : "emptied after growing");
    for (size_t count : {1, 10, 1000}) {
      SCOPED_TRACE("count " + std::to_string(count));
      ScanLog log;
      uint64_t next = 777;
      ASSERT_TRUE(Step(store_.get(), 0, count, &next, &log));
      EXPECT_EQ(next, 0u) << "an empty store's iteration is one step";
      EXPECT_EQ(log.entries, 0u);
    }
    // Grow the tables, then delete every key.
    Image data = MakeData(3000, fixed8(), 1);
    ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
    Batch batch = NewBatch();
    for (const auto& [key, value] : data) batch.Delete(key);
    ASSERT_NO_FATAL_FAILURE(Apply(store_.get(), std::move(batch)));
    ASSERT_EQ(store_->Size(), 0u);
  }
}

TEST_P(Conformance, ScanReturnsEveryKeyWithItsValue) {
  for (size_t n : {100, 3000}) {
    ASSERT_NO_FATAL_FAILURE(Reopen(nullptr));
    Image data = MakeData(n + n / 5, fixed8(), 2);
    if (!fixed8()) {
      data.erase(data.begin());
      data["\0"s] = "";
      data[std::string(200, '\0')] = std::string(1000, '\0');
    }
    ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
    // Delete a sixth, so the tables have holes where keys were.
    Batch batch = NewBatch();
    size_t i = 0;
    for (auto it = data.begin(); it != data.end(); ++i) {
      if (i % 6 != 3) {
        ++it;
        continue;
      }
      batch.Delete(it->first);
      it = data.erase(it);
    }
    ASSERT_NO_FATAL_FAILURE(Apply(store_.get(), std::move(batch)));
    ASSERT_EQ(store_->Size(), data.size());
    const size_t keys = data.size();
    for (size_t count : {1, 10, 1000}) {
      SCOPED_TRACE(std::to_string(keys) + " keys, count " + std::to_string(count));
      ScanLog log;
      // Each step returns about `count` entries: never many fewer (a step
      // count that does not shrink with the hint) nor many more.
      const size_t max_steps = keys / count + 2;
      ASSERT_TRUE(Iterate(store_.get(), 0, count, max_steps, &log));
      EXPECT_TRUE(ReturnedAll(log, data));
      EXPECT_EQ(log.seen.size(), keys) << "keys that are not in the store were returned";
      EXPECT_LE(log.entries, 2 * keys) << "runaway repeats";
      EXPECT_LE(log.max_step_entries, 2 * count + 64) << "a step returned far more than the hint";
    }
    EXPECT_EQ(store_->Size(), keys) << "a scan changes nothing";
  }
}

TEST_P(Conformance, ScanStartsOverAtCursorZeroAfterTheEnd) {
  const Image data = MakeData(1500, fixed8(), 3);
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("iteration " + std::to_string(round));
    ScanLog log;
    ASSERT_TRUE(Iterate(store_.get(), 0, 100, data.size(), &log));
    EXPECT_TRUE(ReturnedAll(log, data));
    EXPECT_EQ(log.seen.size(), data.size());
  }
}

TEST_P(Conformance, ScanFromGarbageCursorEndsOrRestartsPart) {
  const Image data = MakeData(2000, fixed8(), 4);
  ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), data));
  Written written;
  for (const auto& [key, value] : data) written[key].insert(value);
  const uint64_t garbage[] = {1,
                              7,
                              12345,
                              (uint64_t{1} << 32) + 5,
                              (uint64_t{1} << 44) | 3,
                              (uint64_t{5} << 44) | 0xFFFFFFFFull,
                              (uint64_t{1} << 63) | 1,
                              0x0123456789ABCDEFull,
                              ~uint64_t{0} - 1,
                              ~uint64_t{0}};
  for (uint64_t cursor : garbage) {
    SCOPED_TRACE("cursor " + std::to_string(cursor));
    ScanLog log;
    ASSERT_TRUE(Iterate(store_.get(), cursor, 10, data.size() / 10 + 2, &log));
    EXPECT_TRUE(OnlyWrittenValues(log, written));
  }
  // The store is unharmed, and a real iteration still returns everything.
  ScanLog log;
  ASSERT_TRUE(Iterate(store_.get(), 0, 10, data.size() / 10 + 2, &log));
  EXPECT_TRUE(ReturnedAll(log, data));
  EXPECT_EQ(store_->Size(), data.size());
}

// The writes of one round between two steps, as one batch (the log-always
// rows fsync once per batch): 2 * scale new keys, scale / 4 (at least one)
// deletes of doomed keys and as many overwrites of stable keys, and a
// churned key deleted and rewritten.
struct Changer {
  bool fixed8 = false;
  size_t stable = 1, doomed = 0;
  uint64_t next_new = 0, next_doomed = 0, next_churn = 0;
  uint32_t version = 0;
  Written written;

  Batch Round(Store* store, size_t scale) {
    Batch batch = store->NewBatch();
    ++version;
    for (size_t i = 0; i < 2 * scale; ++i, ++next_new) Put(batch, KeyOf(fixed8, 'N', next_new), next_new);
    for (size_t i = 0; i < std::max<size_t>(1, scale / 4) && next_doomed < doomed; ++i) {
      // In an order unrelated to insertion, so deletes land mid-run.
      batch.Delete(KeyOf(fixed8, 'D', (next_doomed++ * 7919) % doomed));
    }
    for (size_t i = 0; i < std::max<size_t>(1, scale / 4); ++i) {
      const uint64_t id = (uint64_t(version) * 104729 + i * 13) % stable;
      Put(batch, KeyOf(fixed8, 'S', id), id);
    }
    const uint64_t churned = next_churn++ % 64;
    batch.Delete(KeyOf(fixed8, 'C', churned));
    Put(batch, KeyOf(fixed8, 'C', churned), churned);
    return batch;
  }
  void Put(Batch& batch, const std::string& key, uint64_t id) {
    std::string value = ValueOf(fixed8, id, version);
    batch.Put(key, value);
    written[key].insert(std::move(value));
  }
};

TEST_P(Conformance, ScanReturnsKeysPresentThroughoutWhileTheStoreChanges) {
  constexpr size_t kStable = 1000, kDoomed = 1000;
  for (const NamedHash& h : kHashes) {
    for (size_t count : {1, 10, 100}) {
      SCOPED_TRACE(std::string(h.name) + " hash, count " + std::to_string(count));
      ASSERT_NO_FATAL_FAILURE(Reopen([&](Config& c) { c.hash = h.hash; }));
      Changer changer;
      changer.fixed8 = fixed8();
      changer.stable = kStable;
      changer.doomed = kDoomed;
      // Stable and doomed keys interleaved, so they share probe runs.
      Batch batch = NewBatch();
      std::vector<std::string> stable;
      for (uint64_t id = 0; id < kStable; ++id) {
        stable.push_back(KeyOf(fixed8(), 'S', id));
        changer.Put(batch, stable.back(), id);
        changer.Put(batch, KeyOf(fixed8(), 'D', id), id);
      }
      for (uint64_t id = 0; id < 64; ++id) changer.Put(batch, KeyOf(fixed8(), 'C', id), id);
      ASSERT_NO_FATAL_FAILURE(Apply(store_.get(), std::move(batch)));
      const uint64_t before = store_->Size();

      // After a step of n entries the store grows by about 1.75 * n keys, so
      // the iteration ends after several times as many inserts as there were
      // keys (a few doublings of every CPU table).
      ScanLog log;
      size_t returned = 0;
      ASSERT_TRUE(Iterate(store_.get(), 0, count, 200000 / count, &log, [&] {
        const size_t n = std::max<size_t>(1, log.entries - returned);
        returned = log.entries;
        Apply(store_.get(), changer.Round(store_.get(), n));
      }));
      ASSERT_FALSE(HasFatalFailure());
      EXPECT_TRUE(ReturnedKeys(log, stable));
      EXPECT_TRUE(OnlyWrittenValues(log, changer.written));
      // The store did grow and shrink under the iteration.
      EXPECT_GE(changer.next_new, 2 * before) << "too few inserts to grow the tables; " << log.steps
                                              << " steps returned " << log.entries << " entries, at most "
                                              << log.max_step_entries;
      EXPECT_GE(changer.next_doomed, kDoomed / 4) << "too few deletes";
    }
  }
}

// Writers on their own threads while the main thread iterates: inserts of
// new keys (bounded), deletes of doomed keys, overwrites of stable keys and
// a churned range deleted and rewritten over and over. Each writer records
// the values it writes before submitting them.
TEST_P(Conformance, ScanReturnsKeysPresentThroughoutWhileWritersRun) {
  constexpr size_t kStable = 1000, kDoomed = 2000, kNew = 20000, kChurn = 500;
  for (const NamedHash& h : kHashes) {
    SCOPED_TRACE(std::string(h.name) + " hash");
    ASSERT_NO_FATAL_FAILURE(Reopen([&](Config& c) { c.hash = h.hash; }));
    const bool f8 = fixed8();
    Written initial;
    std::vector<std::string> stable;
    {
      Batch batch = NewBatch();
      auto put = [&](std::string key, uint64_t id) {
        std::string value = ValueOf(f8, id, 0);
        batch.Put(key, value);
        initial[std::move(key)].insert(std::move(value));
      };
      for (uint64_t id = 0; id < kDoomed; ++id) {
        if (id < kStable) {
          stable.push_back(KeyOf(f8, 'S', id));
          put(stable.back(), id);
        }
        put(KeyOf(f8, 'D', id), id);
      }
      for (uint64_t id = 0; id < kChurn; ++id) put(KeyOf(f8, 'C', id), id);
      ASSERT_NO_FATAL_FAILURE(Apply(store_.get(), std::move(batch)));
    }

    std::atomic<bool> stop{false}, inserted{false};
    std::atomic<int> failures{0};
    std::atomic<size_t> batches{0};  // written by all writers
    Store* store = store_.get();
    auto submit = [&](Batch batch) {
      const size_t n = batch.size();
      Results r = store->Execute(std::move(batch));
      bool ok = r.size() == n;
      for (size_t i = 0; ok && i < n; ++i) ok = r[i].succeeded();
      if (!ok) failures.fetch_add(1);
      batches.fetch_add(1);
    };
    std::vector<Written> writes(4);
    std::vector<std::thread> writers;
    writers.emplace_back([&, out = &writes[0]] {  // new keys, until kNew
      for (uint64_t id = 0; id < kNew && !stop.load(); id += 50) {
        Batch batch = store->NewBatch();
        for (uint64_t k = id; k < id + 50; ++k) {
          std::string value = ValueOf(f8, k, 1);
          (*out)[KeyOf(f8, 'N', k)].insert(value);
          batch.Put(KeyOf(f8, 'N', k), value);
        }
        submit(std::move(batch));
      }
      inserted.store(true);
    });
    writers.emplace_back([&] {  // doomed keys, deleted mid-run in a scattered order
      for (uint64_t i = 0; i < kDoomed && !stop.load(); i += 5) {
        Batch batch = store->NewBatch();
        for (uint64_t k = i; k < i + 5; ++k) batch.Delete(KeyOf(f8, 'D', (k * 7919) % kDoomed));
        submit(std::move(batch));
        std::this_thread::yield();
      }
    });
    writers.emplace_back([&, out = &writes[2]] {  // stable keys rewritten
      for (uint32_t round = 0; !stop.load(); ++round) {
        const uint32_t version = 1 + round % 64;  // bounded: *out stays small
        Batch batch = store->NewBatch();
        for (uint64_t k = 0; k < 20; ++k) {
          const uint64_t id = (uint64_t(round) * 20 + k) % kStable;
          std::string value = ValueOf(f8, id, version);
          (*out)[KeyOf(f8, 'S', id)].insert(value);
          batch.Put(KeyOf(f8, 'S', id), value);
        }
        submit(std::move(batch));
      }
    });
    writers.emplace_back([&, out = &writes[3]] {  // a range deleted, then written back
      for (uint32_t round = 0; !stop.load(); ++round) {
        const uint32_t version = 1 + round % 64;
        const uint64_t first = (uint64_t(round) * 50) % kChurn;
        Batch del = store->NewBatch();
        for (uint64_t k = first; k < first + 50; ++k) del.Delete(KeyOf(f8, 'C', k));
        submit(std::move(del));
        Batch put = store->NewBatch();
        for (uint64_t k = first; k < first + 50; ++k) {
          std::string value = ValueOf(f8, k, version);
          (*out)[KeyOf(f8, 'C', k)].insert(value);
          put.Put(KeyOf(f8, 'C', k), value);
        }
        submit(std::move(put));
      }
    });

    // Iterations (counts 10, 1, 100 in turn) until the inserter is done, so
    // the tables grow under them, and at least three.
    std::vector<ScanLog> logs;
    const size_t kCounts[] = {10, 1, 100};
    size_t batches_during_first = 0;
    for (size_t i = 0; i < 1000 && (i < 3 || !inserted.load()); ++i) {
      const size_t count = kCounts[i % 3];
      logs.emplace_back();
      const size_t batches_before = batches.load();
      ::testing::AssertionResult r = Iterate(store, 0, count, 1000000, &logs.back());
      if (i == 0) batches_during_first = batches.load() - batches_before;
      if (!r) {
        ADD_FAILURE() << "count " << count << ": " << r.message();
        break;
      }
      EXPECT_TRUE(ReturnedKeys(logs.back(), stable)) << "iteration " << i << ", count " << count;
    }
    stop.store(true);
    RecordProperty(std::string(h.name) + "_iterations", std::to_string(logs.size()));
    RecordProperty(std::string(h.name) + "_batches_during_first", std::to_string(batches_during_first));
    for (std::thread& t : writers) t.join();
    EXPECT_EQ(failures.load(), 0) << "writes failed";
    Written all = initial;
    for (const Written& w : writes) {
      for (const auto& [key, values] : w) all[key].insert(values.begin(), values.end());
    }
    for (const ScanLog& log : logs) EXPECT_TRUE(OnlyWrittenValues(log, all));
  }
}

// Clear() removes every key, so nothing is owed to the iteration; it must
// still end (the CPU tables shrink back under a cursor from larger ones) and
// return only real entries, and a new iteration sees the refilled store.
TEST_P(Conformance, ScanAcrossClearAndRefillEnds) {
  const Image first = MakeData(2000, fixed8(), 5);
  Image refill;
  for (uint64_t k = 0; k < 500; ++k) refill.emplace(KeyOf(fixed8(), 'R', k), ValueOf(fixed8(), k, 9));
  for (size_t stop_after : {1, 20, 150}) {
    SCOPED_TRACE("clear after step " + std::to_string(stop_after));
    ASSERT_NO_FATAL_FAILURE(Reopen(nullptr));
    ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), first));
    Written written;
    for (const auto& [key, value] : first) written[key].insert(value);
    for (const auto& [key, value] : refill) written[key].insert(value);
    ScanLog log;
    uint64_t cursor = 0;
    size_t steps = 0;
    do {
      uint64_t next = 0;
      ASSERT_TRUE(Step(store_.get(), cursor, 10, &next, &log));
      cursor = next;
    } while (cursor != 0 && ++steps < stop_after);
    store_->Clear();
    ASSERT_EQ(store_->Size(), 0u);
    ASSERT_NO_FATAL_FAILURE(PutAll(store_.get(), refill));
    if (cursor != 0) {
      ASSERT_TRUE(Iterate(store_.get(), cursor, 10, first.size() / 10 + 2, &log));
    }
    EXPECT_TRUE(OnlyWrittenValues(log, written));
    ScanLog after;
    ASSERT_TRUE(Iterate(store_.get(), 0, 10, refill.size() / 10 + 2, &after));
    EXPECT_TRUE(ReturnedAll(after, refill));
    EXPECT_EQ(after.seen.size(), refill.size());
  }
}

}  // namespace
}  // namespace kvcg::conformance
