// The window table's snapshot kernels (store/gpu/window_snapshot_kernels.h):
// tables filled through the window kernel (Rig) — thousands of keys, both
// sentinel keys, deletes that leave tombstones, values equal to the
// sentinel words — are counted and dumped into device memory, and the
// images are compared with a host model of the ops and with the table's own
// words read back: the whole table, then ranges that partition [0, W)
// (each entry once, the sentinel keys only with window 0), clamped and
// empty ranges, images too small (overflow set, nothing written past the
// end), an empty table, forced hash collisions (one probe chain around the
// table) and a table large enough that every warp strides several times.
// Without a usable GPU every test is skipped with the reason.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "gpu_test_util.h"
#include "window_test_rig.h"
#include "store/gpu/snapshot_kernels.h"
#include "store/gpu/window_snapshot_kernels.h"
#include "store/gpu/window_table.h"

namespace kvcg::store::gpu {
namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess)

using namespace window_test;
using Hash = std::function<uint64_t(uint64_t)>;
using Entries = std::map<uint64_t, uint64_t>;  // key word -> value word

constexpr uint64_t kEntryBytes = 16;
constexpr uint64_t kRunBytes = 32 * kEntryBytes;  // the most a warp places at once
constexpr uint8_t kCanaryByte = 0xA5;             // device image bytes before a dump
constexpr uint64_t kCanary = 0xA5A5A5A5A5A5A5A5ull;  // never a key of these tests
constexpr uint64_t kGuardBytes = 4096;            // canary after each image
constexpr uint64_t kCounted = ~0ull;              // RunPass: an image of the counted size

// Device memory freed on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p != nullptr) cudaFree(p);
  }
};

// Runs `ops` (PUTs and DELETEs of distinct keys) as one batch on `t`,
// asserts that each answered what `model` says, and applies them to it.
void RunAndApply(Rig& rig, WindowTable& t, const std::vector<HostOp>& ops, const Hash& hash,
                 Entries* model) {
  const auto got = rig.Run(t, ops, 1 << 30, hash);
  ASSERT_EQ(got.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool found = model->count(ops[i].key) != 0;
    uint8_t want = found ? kResOk : kResNotFound;
    if (ops[i].type == kOpPut) {
      want |= kResStored;
      (*model)[ops[i].key] = ops[i].value;
    } else {
      model->erase(ops[i].key);
    }
    ASSERT_EQ(got[i].code, want) << "op " << i << " type " << ops[i].type << " key " << ops[i].key;
  }
}

// Fills `t` through the kernel: `n` distinct random keys (a few values are
// the sentinel words, plain values here), both sentinel keys, then deletes
// every third key (tombstones) and puts every ninth back (which may reuse
// them). `model` ends as the table's contents; asserts that tombstones
// remain. `rig` must take n + 2 ops.
void Fill(Rig& rig, WindowTable& t, uint32_t n, const Hash& hash, Entries* model) {
  std::mt19937_64 rng(n);
  std::vector<uint64_t> keys;
  std::unordered_set<uint64_t> seen;
  while (keys.size() < n) {
    const uint64_t k = rng();
    if (k >= kTombKey || k == kCanary || !seen.insert(k).second) continue;
    keys.push_back(k);
  }
  std::vector<HostOp> puts, dels, again;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t v = i % 101 == 0 ? kEmptyKey : i % 103 == 0 ? kTombKey : rng();
    puts.push_back({kOpPut, keys[i], v});
  }
  puts.push_back({kOpPut, kEmptyKey, 111});
  puts.push_back({kOpPut, kTombKey, kEmptyKey});
  ASSERT_NO_FATAL_FAILURE(RunAndApply(rig, t, puts, hash, model));
  for (uint32_t i = 0; i < n; i += 3) dels.push_back({kOpDelete, keys[i]});
  for (uint32_t i = 0; i < n; i += 9) again.push_back({kOpPut, keys[i], rng()});
  ASSERT_NO_FATAL_FAILURE(RunAndApply(rig, t, dels, hash, model));
  ASSERT_NO_FATAL_FAILURE(RunAndApply(rig, t, again, hash, model));
  ASSERT_EQ(model->size(), n - dels.size() + again.size() + 2);
  WindowTableStats st;
  CK(t.Stats(&st, rig.stream()));
  ASSERT_EQ(st.keys, model->size());
  // Slots claimed = keys in slots + tombstones; each re-put reused at most one.
  ASSERT_GE(st.used, (st.keys - 2) + (dels.size() - again.size()));
}

// The table's words, read back: the reference for what a range holds.
struct TableCopy {
  uint64_t windows = 0;
  std::vector<uint64_t> slots;  // windows * kWindowWords
  uint64_t special[4] = {};     // [present, value] for kEmptyKey, then for kTombKey
  uint64_t tombstones = 0;
};

void Copy(const WindowTable& t, TableCopy* c) {
  c->windows = t.windows();
  c->slots.resize(c->windows * kWindowWords);
  CK(cudaMemcpy(c->slots.data(), t.view().slots, c->slots.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(c->special, t.view().special, sizeof(c->special), cudaMemcpyDeviceToHost));
  c->tombstones = 0;
  for (uint64_t i = 0; i < c->slots.size(); i += 2) c->tombstones += c->slots[i] == kTombKey;
}

// What a dump of `r` must hold, read from the copy: the live slots of
// windows [begin, end) clamped to W, and the sentinel keys when the clamped
// range contains window 0. A key in two slots is a failure.
Entries Expected(const TableCopy& c, WindowRange r) {
  const uint64_t begin = std::min(r.begin, c.windows);
  const uint64_t end = std::max(begin, std::min(r.end, c.windows));
  Entries out;
  if (begin == 0 && end > 0) {
    if (c.special[0] != 0) out[kEmptyKey] = c.special[1];
    if (c.special[2] != 0) out[kTombKey] = c.special[3];
  }
  for (uint64_t w = begin; w < end; ++w) {
    for (uint64_t s = 0; s < kWindowSlots; ++s) {
      const uint64_t k = c.slots[w * kWindowWords + 2 * s];
      if (k == kEmptyKey || k == kTombKey) continue;
      if (!out.emplace(k, c.slots[w * kWindowWords + 2 * s + 1]).second) {
        ADD_FAILURE() << "key " << k << " in two slots of the table";
      }
    }
  }
  return out;
}

// Missing and extra entries of `got` against `want`, the first few of each.
std::string Diff(const Entries& want, const Entries& got) {
  std::string out;
  int shown = 0;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end() || it->second != v) {
      if (shown++ < 5) out += " missing/changed key " + std::to_string(k);
    }
  }
  for (const auto& [k, v] : got) {
    if (want.count(k) == 0 && shown++ < 10) out += " extra key " + std::to_string(k);
  }
  return "want " + std::to_string(want.size()) + " entries, got " + std::to_string(got.size()) +
         ":" + out;
}

// One count and dump of `range` with an image in device memory:
// `image_bytes` (kCounted: the counted bytes), then kGuardBytes, all canary
// before the dump. The totals start as garbage, so the count must zero them.
struct Pass {
  SnapshotTotals counted{}, dumped{};
  uint64_t image_bytes = 0;
  std::vector<uint8_t> buffer;  // the image and its guard, read back
};

void RunPass(const WindowTable& t, WindowRange range, cudaStream_t s, uint64_t image_bytes,
             Pass* p) {
  DeviceBuffer totals, image;
  CK(cudaMalloc(&totals.p, sizeof(SnapshotTotals)));
  CK(cudaMemsetAsync(totals.p, 0x5A, sizeof(SnapshotTotals), s));
  auto* tp = static_cast<SnapshotTotals*>(totals.p);
  CK(WindowSnapshotCount(t.view(), range, tp, s));
  CK(cudaMemcpyAsync(&p->counted, tp, sizeof(SnapshotTotals), cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  p->image_bytes = image_bytes == kCounted ? p->counted.bytes : image_bytes;
  const uint64_t total = p->image_bytes + kGuardBytes;
  CK(cudaMalloc(&image.p, total));
  CK(cudaMemsetAsync(image.p, kCanaryByte, total, s));
  CK(WindowSnapshotDump(t.view(), range, static_cast<char*>(image.p), p->image_bytes, tp, s));
  CK(cudaMemcpyAsync(&p->dumped, tp, sizeof(SnapshotTotals), cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  p->buffer.resize(total);
  CK(cudaMemcpy(p->buffer.data(), image.p, total, cudaMemcpyDeviceToHost));  // after the sync
}

// The entries at the start of the image, 16 bytes each, up to the first
// entry still canary (or image_bytes); *written: the bytes they take. Fails
// on a key met twice or on a byte past them that is not canary (a write out
// of place, or past the image's end).
::testing::AssertionResult Parse(const Pass& p, Entries* out, uint64_t* written) {
  out->clear();
  uint64_t at = 0;
  for (; at + kEntryBytes <= p.image_bytes; at += kEntryBytes) {
    uint64_t kv[2];
    std::memcpy(kv, p.buffer.data() + at, sizeof(kv));
    if (kv[0] == kCanary) break;
    if (!out->emplace(kv[0], kv[1]).second) {
      return ::testing::AssertionFailure() << "key " << kv[0] << " twice in the image";
    }
  }
  *written = at;
  for (uint64_t i = at; i < p.buffer.size(); ++i) {
    if (p.buffer[i] != kCanaryByte) {
      return ::testing::AssertionFailure()
             << "byte " << i << " written (entries end at " << at << ", image " << p.image_bytes
             << " bytes)";
    }
  }
  return ::testing::AssertionSuccess();
}

// A count and dump of `range` into an image of the counted size: the totals
// agree, the image holds exactly `want` (each key once) and nothing is
// written past it. *got: the image's entries.
void ExpectExactPass(const WindowTable& t, WindowRange range, cudaStream_t s, const Entries& want,
                     Entries* got) {
  Pass p;
  ASSERT_NO_FATAL_FAILURE(RunPass(t, range, s, kCounted, &p));
  const std::string where = "range [" + std::to_string(range.begin) + ", " +
                            std::to_string(range.end) + ") of " + std::to_string(t.windows());
  EXPECT_EQ(p.counted.entries, want.size()) << where;
  EXPECT_EQ(p.counted.bytes, kEntryBytes * want.size()) << where;
  EXPECT_EQ(p.counted.cursor, 0u) << where;
  EXPECT_EQ(p.counted.dumped, 0u) << where;
  EXPECT_EQ(p.counted.overflow, 0u) << where;
  EXPECT_EQ(p.dumped.cursor, p.counted.bytes) << where;
  EXPECT_EQ(p.dumped.dumped, p.counted.entries) << where;
  EXPECT_EQ(p.dumped.overflow, 0u) << where;
  uint64_t written = 0;
  ASSERT_TRUE(Parse(p, got, &written)) << where;
  EXPECT_EQ(written, p.image_bytes) << where;
  EXPECT_TRUE(*got == want) << where << ": " << Diff(want, *got);
}

// The whole table, then ranges that partition [0, W) and ranges that hold
// nothing (past W, reversed, empty), against `model` and the table's words.
void ExpectSnapshotsMatch(const WindowTable& t, cudaStream_t s, const Entries& model) {
  TableCopy c;
  ASSERT_NO_FATAL_FAILURE(Copy(t, &c));
  const uint64_t w = c.windows;
  // The table holds the model (so the references below agree).
  ASSERT_TRUE(Expected(c, {0, w}) == model) << Diff(model, Expected(c, {0, w}));
  Entries got;
  ASSERT_NO_FATAL_FAILURE(ExpectExactPass(t, {0, w}, s, model, &got));
  ASSERT_NO_FATAL_FAILURE(ExpectExactPass(t, {0, ~0ull}, s, model, &got));  // clamped

  const std::vector<uint64_t> cuts = {0, 1, 2, 7, w / 3, w / 2 + 1, w - 1, w, w + 5, ~0ull};
  Entries all;
  uint64_t listed = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    ASSERT_LT(cuts[i], cuts[i + 1]);
    const WindowRange r{cuts[i], cuts[i + 1]};
    const Entries want = Expected(c, r);
    ASSERT_NO_FATAL_FAILURE(ExpectExactPass(t, r, s, want, &got));
    // The sentinel keys in the range with window 0 and in no other.
    EXPECT_EQ(got.count(kEmptyKey), i == 0 ? model.count(kEmptyKey) : 0u) << "range " << i;
    EXPECT_EQ(got.count(kTombKey), i == 0 ? model.count(kTombKey) : 0u) << "range " << i;
    if (r.begin >= w) {
      EXPECT_TRUE(got.empty()) << "range " << i << " past W";
    }
    listed += got.size();
    all.insert(got.begin(), got.end());
  }
  EXPECT_EQ(listed, model.size()) << "an entry listed by two ranges, or none";
  EXPECT_TRUE(all == model) << Diff(model, all);
  // Ranges with no window: nothing, not even the sentinel keys.
  for (const WindowRange r : {WindowRange{0, 0}, WindowRange{10, 3}, WindowRange{w, w}}) {
    ASSERT_NO_FATAL_FAILURE(ExpectExactPass(t, r, s, Entries{}, &got));
  }
}

// Each test's window table, a rig for its batches and the model of what the
// table holds (Open or OpenFilled make them; without a GPU SetUp skips).
class WindowSnapshot : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }

  // A table of `windows` windows (the next prime; no entry overhead) and a
  // rig for batches of up to `ops` ops.
  void Open(uint64_t windows, uint32_t ops) {
    table = std::make_unique<WindowTable>(windows, 0);
    CK(table->error());
    rig = std::make_unique<Rig>(ops);
  }
  // Open, then Fill with `keys` keys (and the two sentinel keys): `model`
  // holds the table's contents.
  void OpenFilled(uint64_t windows, uint32_t keys, const Hash& hash = MixHash) {
    ASSERT_NO_FATAL_FAILURE(Open(windows, keys + 2));
    ASSERT_NO_FATAL_FAILURE(Fill(*rig, *table, keys, hash, &model));
  }

  std::unique_ptr<WindowTable> table;
  std::unique_ptr<Rig> rig;
  Entries model;
};

TEST_F(WindowSnapshot, WholeTableAndRangesMatchTheModel) {
  // 5,000 keys in 2,053 windows (8,212 slots): full warps' runs and tombstones.
  ASSERT_NO_FATAL_FAILURE(OpenFilled(2048, 5000));
  ExpectSnapshotsMatch(*table, rig->stream(), model);
}

TEST_F(WindowSnapshot, ForcedCollisionsStillDumpEverything) {
  // Every key has one home window and one step: a single probe chain over
  // the whole table (131 windows, 400 keys), tombstones all along it.
  ASSERT_NO_FATAL_FAILURE(OpenFilled(128, 400, [](uint64_t) { return 42ull; }));
  TableCopy c;
  ASSERT_NO_FATAL_FAILURE(Copy(*table, &c));
  EXPECT_GT(c.tombstones, 0u);
  ExpectSnapshotsMatch(*table, rig->stream(), model);
}

TEST_F(WindowSnapshot, ManyWindowsEveryWarpStrides) {
  // 1.2 M slots: 37,500 warps' worth of runs, several times the grid (8
  // blocks of 8 warps per SM), so each warp takes several strides.
  ASSERT_NO_FATAL_FAILURE(OpenFilled(300000, 150000));
  ExpectSnapshotsMatch(*table, rig->stream(), model);
}

TEST_F(WindowSnapshot, SmallImageOverflowsAndWritesNothingPastIt) {
  ASSERT_NO_FATAL_FAILURE(OpenFilled(2048, 5000));
  const uint64_t need = kEntryBytes * model.size();
  // About half the image (not a whole number of entries), then 8 bytes:
  // less than one entry.
  for (const uint64_t bytes : {need / 2 / kEntryBytes * kEntryBytes + 8, uint64_t(8)}) {
    Pass p;
    ASSERT_NO_FATAL_FAILURE(RunPass(*table, {0, table->windows()}, rig->stream(), bytes, &p));
    EXPECT_EQ(p.counted.bytes, need);
    EXPECT_NE(p.dumped.overflow, 0u) << bytes << " bytes";
    // Every entry was met and handed its place, fitting or not.
    EXPECT_EQ(p.dumped.dumped, model.size());
    EXPECT_EQ(p.dumped.cursor, need);
    Entries got;
    uint64_t written = 0;
    ASSERT_TRUE(Parse(p, &got, &written)) << bytes << " bytes";  // nothing past the entries
    EXPECT_LE(written, bytes);
    // Places are handed out in one run after another from 0: every run that
    // fits is written, and only the one that crosses the end is not.
    EXPECT_GT(written + kRunBytes, bytes) << bytes << " bytes";
    for (const auto& [k, v] : got) {
      auto it = model.find(k);
      ASSERT_TRUE(it != model.end()) << "key " << k << " not in the table";
      EXPECT_EQ(v, it->second) << "key " << k;
    }
  }
}

TEST_F(WindowSnapshot, EmptyTableCountsZero) {
  ASSERT_NO_FATAL_FAILURE(Open(1000, 8));
  const WindowRange all{0, table->windows()};
  const cudaStream_t s = rig->stream();
  Entries got;
  ASSERT_NO_FATAL_FAILURE(ExpectExactPass(*table, all, s, Entries{}, &got));
  // Deleted keys (a tombstone) and deleted sentinel keys are not entries.
  ASSERT_NO_FATAL_FAILURE(RunAndApply(
      *rig, *table, {{kOpPut, 5, 50}, {kOpPut, kEmptyKey, 1}, {kOpPut, kTombKey, 2}}, MixHash,
      &model));
  ASSERT_NO_FATAL_FAILURE(ExpectExactPass(*table, all, s, model, &got));
  ASSERT_NO_FATAL_FAILURE(RunAndApply(
      *rig, *table, {{kOpDelete, 5}, {kOpDelete, kEmptyKey}, {kOpDelete, kTombKey}}, MixHash,
      &model));
  ASSERT_TRUE(model.empty());
  TableCopy c;
  ASSERT_NO_FATAL_FAILURE(Copy(*table, &c));
  EXPECT_EQ(c.tombstones, 1u);
  ASSERT_NO_FATAL_FAILURE(ExpectExactPass(*table, all, s, Entries{}, &got));
  // An image with room to spare gets nothing either.
  Pass p;
  ASSERT_NO_FATAL_FAILURE(RunPass(*table, all, s, 256, &p));
  EXPECT_EQ(p.dumped.cursor, 0u);
  EXPECT_EQ(p.dumped.dumped, 0u);
  EXPECT_EQ(p.dumped.overflow, 0u);
  uint64_t written = 0;
  ASSERT_TRUE(Parse(p, &got, &written));
  EXPECT_EQ(written, 0u);
}

}  // namespace
}  // namespace kvcg::store::gpu
