// The window table's eviction kernels (store/gpu/window_eviction_kernels.h)
// on tables filled by its ops kernel (window_test_rig.h): the histogram
// counts every key and charged byte in the bin its score says (LRU by
// generation, LFU by counter, random spread over the bins, the sentinel
// keys included; none under a volatile-only policy, fixed8 keys having no
// expiry); the cutoff ChooseCutoff picks evicts exactly the bins below it
// and the share of its bin by key hash, consistently with the histogram;
// the keys kept age (LRU saturation, LFU decay); counters agree with a GET
// sweep afterwards; evicted slots become tombstones that later inserts
// reuse without allowance and that probes pass over; the access-byte
// lookup answers absent keys with 0. Without a usable GPU every test is
// skipped with the reason.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "gpu_test_util.h"
#include "store/gpu/eviction_kernels.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/window_eviction_kernels.h"
#include "store/gpu/window_table.h"
#include "window_test_rig.h"

namespace kvcg::store::gpu {
namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess)

using namespace window_test;

constexpr uint8_t kNew = kResNotFound | kResStored;  // a PUT's result for a new key
uint64_t ValueOf(uint64_t key) { return key * 3 + 7; }

// Device results of the kernels under test, and the calls around them, on
// a table's view with the rig's access mode and LRU generation. The result
// buffers are filled with garbage first, so a kernel that fails to zero or
// to write them shows.
class Passes {
 public:
  explicit Passes(const Rig& rig) : rig_(rig), s_(rig.stream()) {
    cudaMalloc(&hist_, sizeof(EvictHistogram));
    cudaMalloc(&totals_, sizeof(EvictTotals));
    cudaMalloc(&word_, 8);
  }
  ~Passes() {
    cudaFree(hist_);
    cudaFree(totals_);
    cudaFree(word_);
  }

  EvictHistogram Histogram(const WindowTable& t, const EvictParams& p) {
    return Result(hist_, [&] { return WindowEvictionHistogram(rig_.ViewOf(t), p, hist_, s_); });
  }
  EvictTotals Evict(const WindowTable& t, const EvictParams& p) {
    const EvictTotals tot =
        Result(totals_, [&] { return WindowEvictChosen(rig_.ViewOf(t), p, totals_, s_); });
    EXPECT_EQ(tot.expired, 0u);  // fixed8 keys never expire
    EXPECT_EQ(tot.listed, 0u);
    EXPECT_EQ(tot.more, 0u);
    return tot;
  }
  // WindowLookupAccessByte's answer for `key` with hash `hash`.
  unsigned long long Access(const WindowTable& t, uint64_t hash, uint64_t key) {
    return Result(word_,
                  [&] { return WindowLookupAccessByte(rig_.ViewOf(t), hash, key, word_, s_); });
  }

 private:
  // Fills the device result `dev` with garbage, runs `launch` (which must
  // write it), and returns it.
  template <typename T, typename F>
  T Result(T* dev, F&& launch) {
    T v{};
    EXPECT_EQ(cudaMemsetAsync(dev, 0xab, sizeof(T), s_), cudaSuccess);
    EXPECT_EQ(launch(), cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(&v, dev, sizeof(T), cudaMemcpyDeviceToHost, s_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    return v;
  }

  const Rig& rig_;
  cudaStream_t s_;
  EvictHistogram* hist_ = nullptr;
  EvictTotals* totals_ = nullptr;
  unsigned long long* word_ = nullptr;
};

EvictParams Params(uint32_t score, uint64_t salt = 0) {
  EvictParams p{};
  p.score = score;
  p.salt = salt;
  return p;
}

uint64_t Sum(const unsigned long long (&bins)[256], uint32_t from = 0, uint32_t to = 256) {
  uint64_t s = 0;
  for (uint32_t b = from; b < to; ++b) s += bins[b];
  return s;
}

constexpr unsigned long long Present(uint32_t byte) { return (1ull << 32) | byte; }

std::vector<HostOp> Puts(const std::vector<uint64_t>& keys) {
  std::vector<HostOp> ops;
  for (uint64_t k : keys) ops.push_back({kOpPut, k, ValueOf(k)});
  return ops;
}
std::vector<HostOp> Gets(const std::vector<uint64_t>& keys) {
  std::vector<HostOp> ops;
  for (uint64_t k : keys) ops.push_back({kOpGet, k});
  return ops;
}
// Keys from, from + step, ... below `to`.
std::vector<uint64_t> Range(uint64_t from, uint64_t to, uint64_t step = 1) {
  std::vector<uint64_t> keys;
  for (uint64_t k = from; k < to; k += step) keys.push_back(k);
  return keys;
}

// A window table with a rig for its batches and buffers for its passes.
struct Fixture {
  Fixture(uint64_t windows, uint64_t entry_overhead, uint32_t batch_cap)
      : t(windows, entry_overhead), rig(batch_cap), ps(rig) {}

  // PUTs `keys`, all new, under access mode `mode` at LRU generation
  // `generation`; asserts each was stored.
  void PutNew(const std::vector<uint64_t>& keys, uint32_t mode, uint32_t generation,
              const std::function<uint64_t(uint64_t)>& hash = MixHash, int allowance = 1 << 20) {
    rig.SetAccess(mode, generation);
    for (const auto& o : rig.Run(t, Puts(keys), allowance, hash)) ASSERT_EQ(o.code, kNew);
  }
  // GETs `keys`, all present, under `mode` at `generation` (touching their
  // access bytes); asserts each was found.
  void Touch(const std::vector<uint64_t>& keys, uint32_t mode, uint32_t generation,
             const std::function<uint64_t(uint64_t)>& hash = MixHash) {
    rig.SetAccess(mode, generation);
    for (const auto& o : rig.Run(t, Gets(keys), 0, hash)) ASSERT_EQ(o.code, kResOk);
  }
  // GETs every key of `keys` without touching their access bytes (so that
  // a later pass ranks them as before); returns how many were found, each
  // with its value (ValueOf).
  uint64_t CountPresent(const std::vector<uint64_t>& keys,
                        const std::function<uint64_t(uint64_t)>& hash = MixHash) {
    const uint32_t mode = rig.access_mode();
    rig.SetAccess(kAccessNone, rig.generation());
    const auto got = rig.Run(t, Gets(keys), 0, hash);
    rig.SetAccess(mode, rig.generation());
    uint64_t found = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_TRUE(got[i].code == kResOk || got[i].code == kResNotFound) << "key " << keys[i];
      if (got[i].code != kResOk) continue;
      ++found;
      EXPECT_EQ(got[i].value, ValueOf(keys[i])) << "key " << keys[i];
    }
    return found;
  }
  WindowTableStats Stats() {
    WindowTableStats st;
    EXPECT_EQ(t.Stats(&st, rig.stream()), cudaSuccess);
    return st;
  }

  WindowTable t;
  Rig rig;
  Passes ps;
};

// 2000 keys (1..2000, charged 32 bytes each) put at LRU generation 10; the
// even ones read again at generation 20.
constexpr uint64_t kKeys = 2000;
constexpr uint64_t kCharge = 32;
std::vector<uint64_t> Even() { return Range(2, kKeys + 1, 2); }
std::vector<uint64_t> Odd() { return Range(1, kKeys + 1, 2); }
void FillLru(Fixture& f) {
  ASSERT_EQ(f.t.error(), cudaSuccess);
  ASSERT_NO_FATAL_FAILURE(f.PutNew(Range(1, kKeys + 1), kAccessLru, 10));
  ASSERT_NO_FATAL_FAILURE(f.Touch(Even(), kAccessLru, 20));
}

TEST(WindowEviction, LruRanksByAgeAndEvictsTheUntouched) {
  SKIP_WITHOUT_GPU();
  Fixture f(1024, kCharge - 16, kKeys);
  ASSERT_NO_FATAL_FAILURE(FillLru(f));
  WindowTableStats st = f.Stats();
  ASSERT_EQ(st.keys, kKeys);
  ASSERT_EQ(st.mem_bytes, kKeys * kCharge);

  // Scores 255 - age: the even keys (age 0) at 255, the odd ones (age 10) at 245.
  EvictParams p = Params(kScoreLru);
  const EvictHistogram h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(Sum(h.keys), st.keys);
  EXPECT_EQ(Sum(h.bytes), st.mem_bytes);
  EXPECT_EQ(h.keys[245], kKeys / 2);
  EXPECT_EQ(h.keys[255], kKeys / 2);
  EXPECT_EQ(h.bytes[245], kKeys / 2 * kCharge);
  EXPECT_EQ(f.ps.Access(f.t, MixHash(1), 1), Present(10));
  EXPECT_EQ(f.ps.Access(f.t, MixHash(2), 2), Present(20));
  EXPECT_EQ(f.ps.Access(f.t, MixHash(kKeys + 1), kKeys + 1), 0u);

  // Half the bytes: the whole of bin 245, nothing above.
  ASSERT_TRUE(ChooseCutoff(h, st.mem_bytes / 2, &p.cutoff, &p.share));
  EXPECT_EQ(p.cutoff, 245u);
  EXPECT_EQ(p.share, 65536u);
  const EvictTotals tot = f.ps.Evict(f.t, p);
  EXPECT_EQ(tot.evicted, kKeys / 2);
  EXPECT_EQ(tot.freed, kKeys / 2 * kCharge);
  st = f.Stats();
  EXPECT_EQ(st.keys, kKeys / 2);
  EXPECT_EQ(st.mem_bytes, kKeys / 2 * kCharge);
  EXPECT_EQ(st.used, kKeys);  // the evicted keys' slots are tombstones
  EXPECT_EQ(f.ps.Access(f.t, MixHash(1), 1), 0u);
  EXPECT_EQ(f.ps.Access(f.t, MixHash(2), 2), Present(20));

  // A GET sweep: every even key (with its value), no odd one.
  EXPECT_EQ(f.CountPresent(Even()), kKeys / 2);
  EXPECT_EQ(f.CountPresent(Odd()), 0u);
  const EvictHistogram after = f.ps.Histogram(f.t, p);
  EXPECT_EQ(Sum(after.keys), kKeys / 2);
  EXPECT_EQ(after.keys[255], kKeys / 2);
}

TEST(WindowEviction, TheCutoffBinGoesByShare) {
  SKIP_WITHOUT_GPU();
  Fixture f(1024, kCharge - 16, kKeys);
  ASSERT_NO_FATAL_FAILURE(FillLru(f));
  EvictParams p = Params(kScoreLru, 0x1234);
  const EvictHistogram h = f.ps.Histogram(f.t, p);
  // A quarter of the bytes: half of bin 245, chosen by key hash.
  ASSERT_TRUE(ChooseCutoff(h, kKeys / 4 * kCharge, &p.cutoff, &p.share));
  EXPECT_EQ(p.cutoff, 245u);
  EXPECT_EQ(p.share, 32768u);
  const EvictTotals tot = f.ps.Evict(f.t, p);
  EXPECT_GT(tot.evicted, kKeys / 4 - 100);  // binomial(1000, 1/2): sd 16
  EXPECT_LT(tot.evicted, kKeys / 4 + 100);
  EXPECT_EQ(tot.freed, tot.evicted * kCharge);
  const WindowTableStats st = f.Stats();
  EXPECT_EQ(st.keys, kKeys - tot.evicted);
  EXPECT_EQ(st.mem_bytes, st.keys * kCharge);
  // The histogram agrees: bin 245 lost exactly the evicted keys.
  const EvictHistogram mid = f.ps.Histogram(f.t, p);
  EXPECT_EQ(mid.keys[245], kKeys / 2 - tot.evicted);
  EXPECT_EQ(mid.keys[255], kKeys / 2);
  // Every touched key is still there; the untouched ones left make up the rest.
  EXPECT_EQ(f.CountPresent(Even()), kKeys / 2);
  EXPECT_EQ(f.CountPresent(Odd()), kKeys / 2 - tot.evicted);
  // The rest of the bin: a share of 65536 takes all of it, and only it.
  ASSERT_TRUE(ChooseCutoff(mid, Sum(mid.bytes, 0, 246), &p.cutoff, &p.share));
  EXPECT_EQ(p.cutoff, 245u);
  EXPECT_EQ(p.share, 65536u);
  EXPECT_EQ(f.ps.Evict(f.t, p).evicted, kKeys / 2 - tot.evicted);
  EXPECT_EQ(f.CountPresent(Odd()), 0u);
  EXPECT_EQ(f.CountPresent(Even()), kKeys / 2);
}

TEST(WindowEviction, LruAgesOfKeptKeysSaturate) {
  SKIP_WITHOUT_GPU();
  Fixture f(256, 0, 200);
  CK(f.t.error());
  ASSERT_NO_FATAL_FAILURE(f.PutNew(Range(1, 201), kAccessLru, 10));
  ASSERT_NO_FATAL_FAILURE(f.Touch(Range(1, 101), kAccessLru, 250));
  EvictParams p = Params(kScoreLru);
  EvictHistogram h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(h.keys[255 - 240], 100u);  // keys 101..200: age 240
  EXPECT_EQ(h.keys[255], 100u);
  // A pass that chooses nothing (cutoff 0, share 0) still ages: 240 > kMaxLruAge.
  EXPECT_EQ(f.ps.Evict(f.t, p).evicted, 0u);
  EXPECT_EQ(f.ps.Access(f.t, MixHash(150), 150), Present(250 - kMaxLruAge));
  EXPECT_EQ(f.ps.Access(f.t, MixHash(50), 50), Present(250));
  h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(h.keys[255 - kMaxLruAge], 100u);
  EXPECT_EQ(h.keys[255], 100u);
  // The 8-bit generation wraps: at 4, the kept keys are 10 and 202 old.
  f.rig.SetAccess(kAccessLru, 4);
  h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(h.keys[255 - 10], 100u);
  EXPECT_EQ(h.keys[255 - 202], 100u);
  EXPECT_EQ(f.ps.Evict(f.t, p).evicted, 0u);
  EXPECT_EQ(f.ps.Access(f.t, MixHash(150), 150), Present(uint8_t(4 - kMaxLruAge)));
  EXPECT_EQ(f.ps.Access(f.t, MixHash(50), 50), Present(250));
  EXPECT_EQ(f.Stats().keys, 200u);
}

TEST(WindowEviction, LfuRanksByCounterAndDecaysTheKept) {
  SKIP_WITHOUT_GPU();
  Fixture f(1024, kCharge - 16, kKeys);
  CK(f.t.error());
  const std::vector<uint64_t> hot = Range(1, kKeys / 2 + 1), cold = Range(kKeys / 2 + 1, kKeys + 1);
  ASSERT_NO_FATAL_FAILURE(f.PutNew(Range(1, kKeys + 1), kAccessLfu, 0));
  EXPECT_EQ(f.ps.Access(f.t, MixHash(7), 7), Present(kLfuInitCounter));
  // The hot keys read in 3 batches: the first read always counts (5 -> 6),
  // later ones with probability 1/11, then 1/21.
  for (int r = 0; r < 3; ++r) ASSERT_NO_FATAL_FAILURE(f.Touch(hot, kAccessLfu, 0));
  std::vector<unsigned long long> before;
  for (uint64_t k = 1; k <= 100; ++k) {
    before.push_back(f.ps.Access(f.t, MixHash(k), k));
    EXPECT_GE(before.back(), Present(kLfuInitCounter + 1));
    EXPECT_LE(before.back(), Present(kLfuInitCounter + 3));
  }
  EvictParams p = Params(kScoreLfu);
  EvictHistogram h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(h.keys[kLfuInitCounter], kKeys / 2);
  EXPECT_EQ(Sum(h.keys, kLfuInitCounter + 1, kLfuInitCounter + 4), kKeys / 2);
  EXPECT_EQ(Sum(h.bytes), kKeys * kCharge);
  // Two idle minutes: every counter scores 2 less, and the kept ones keep that.
  p.lfu_decay = 2;
  h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(h.keys[kLfuInitCounter - 2], kKeys / 2);
  EXPECT_EQ(Sum(h.keys, kLfuInitCounter - 1, kLfuInitCounter + 2), kKeys / 2);
  ASSERT_TRUE(ChooseCutoff(h, kKeys / 2 * kCharge, &p.cutoff, &p.share));
  EXPECT_EQ(p.cutoff, uint32_t(kLfuInitCounter - 2));
  EXPECT_EQ(p.share, 65536u);
  EXPECT_EQ(f.ps.Evict(f.t, p).evicted, kKeys / 2);
  for (uint64_t k = 1; k <= 100; ++k) {
    EXPECT_EQ(f.ps.Access(f.t, MixHash(k), k), before[k - 1] - 2) << "key " << k;
  }
  EXPECT_EQ(f.ps.Access(f.t, MixHash(kKeys), kKeys), 0u);
  EXPECT_EQ(f.CountPresent(cold), 0u);
  EXPECT_EQ(f.CountPresent(hot), kKeys / 2);
  const WindowTableStats st = f.Stats();
  EXPECT_EQ(st.keys, kKeys / 2);
  EXPECT_EQ(st.mem_bytes, kKeys / 2 * kCharge);
}

TEST(WindowEviction, RandomScoresSpreadAndTheCutoffMatchesTheHistogram) {
  SKIP_WITHOUT_GPU();
  // 2^18 windows: over a million entries, several grid-stride rounds; the
  // sentinel keys, the last two entries, among the keys.
  constexpr uint64_t kMany = 100000;
  Fixture f(1 << 18, 0, kMany + 2);
  CK(f.t.error());
  std::vector<uint64_t> keys = Range(1, kMany + 1);
  keys.push_back(kEmptyKey);
  keys.push_back(kTombKey);
  ASSERT_NO_FATAL_FAILURE(f.PutNew(keys, kAccessNone, 0));
  const uint64_t n = keys.size();
  EvictParams p = Params(kScoreRandom, 0x9E3779B97F4A7C15ull);
  const EvictHistogram h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(Sum(h.keys), n);
  EXPECT_EQ(Sum(h.bytes), n * 16);
  EXPECT_EQ(h.keys[0], 0u);  // bin 0 is for expired keys only
  int filled = 0;
  for (uint32_t b = 1; b < 256; ++b) {
    filled += h.keys[b] != 0;
    EXPECT_LT(h.keys[b], 4 * n / 256) << "bin " << b;
  }
  EXPECT_EQ(filled, 255);
  ASSERT_TRUE(ChooseCutoff(h, n / 2 * 16, &p.cutoff, &p.share));
  const uint64_t below = Sum(h.keys, 0, p.cutoff);
  const EvictTotals tot = f.ps.Evict(f.t, p);
  EXPECT_GE(tot.evicted, below);
  EXPECT_LE(tot.evicted, below + h.keys[p.cutoff]);
  EXPECT_NEAR(double(tot.evicted), double(n / 2), 100.0);
  // The same ranking again: nothing below the cutoff, the cutoff bin less
  // exactly what went from it, the bins above untouched.
  const EvictHistogram after = f.ps.Histogram(f.t, p);
  EXPECT_EQ(Sum(after.keys, 0, p.cutoff), 0u);
  EXPECT_EQ(after.keys[p.cutoff], h.keys[p.cutoff] - (tot.evicted - below));
  for (uint32_t b = p.cutoff + 1; b < 256; ++b) EXPECT_EQ(after.keys[b], h.keys[b]) << "bin " << b;
  const WindowTableStats st = f.Stats();
  EXPECT_EQ(st.keys, n - tot.evicted);
  EXPECT_EQ(st.mem_bytes, st.keys * 16);
  EXPECT_EQ(f.CountPresent(keys), st.keys);
}

TEST(WindowEviction, VolatileOnlyFindsNoCandidate) {
  SKIP_WITHOUT_GPU();
  Fixture f(256, 0, 100);
  CK(f.t.error());
  ASSERT_NO_FATAL_FAILURE(f.PutNew(Range(1, 101), kAccessLru, 3));
  for (uint32_t score : {uint32_t(kScoreLru), uint32_t(kScoreTtl)}) {
    EvictParams p = Params(score);
    p.volatile_only = 1;
    const EvictHistogram h = f.ps.Histogram(f.t, p);
    EXPECT_EQ(Sum(h.keys), 0u);
    EXPECT_EQ(Sum(h.bytes), 0u);
    EXPECT_FALSE(ChooseCutoff(h, 16, &p.cutoff, &p.share));
    EXPECT_EQ(p.cutoff, 256u);
    EXPECT_EQ(f.ps.Evict(f.t, p).evicted, 0u);
  }
  EXPECT_EQ(f.CountPresent(Range(1, 101)), 100u);
}

TEST(WindowEviction, SentinelKeysAreCountedAndEvictable) {
  SKIP_WITHOUT_GPU();
  Fixture f(64, kCharge - 16, 64);
  CK(f.t.error());
  std::vector<uint64_t> keys = Range(1, 51);
  keys.push_back(kEmptyKey);
  keys.push_back(kTombKey);
  ASSERT_NO_FATAL_FAILURE(f.PutNew(keys, kAccessLru, 1));
  ASSERT_NO_FATAL_FAILURE(f.Touch(Range(1, 51), kAccessLru, 5));
  EXPECT_EQ(f.ps.Access(f.t, MixHash(kEmptyKey), kEmptyKey), Present(1));
  EXPECT_EQ(f.ps.Access(f.t, MixHash(kTombKey), kTombKey), Present(1));
  EvictParams p = Params(kScoreLru);
  const EvictHistogram h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(h.keys[251], 2u);  // the sentinel keys: age 4
  EXPECT_EQ(h.keys[255], 50u);
  EXPECT_EQ(Sum(h.keys), 52u);
  ASSERT_TRUE(ChooseCutoff(h, 2 * kCharge, &p.cutoff, &p.share));
  EXPECT_EQ(p.cutoff, 251u);
  const EvictTotals tot = f.ps.Evict(f.t, p);
  EXPECT_EQ(tot.evicted, 2u);
  EXPECT_EQ(tot.freed, 2 * kCharge);
  EXPECT_EQ(f.ps.Access(f.t, MixHash(kEmptyKey), kEmptyKey), 0u);
  EXPECT_EQ(f.ps.Access(f.t, MixHash(kTombKey), kTombKey), 0u);
  EXPECT_EQ(f.CountPresent(keys), 50u);
  const WindowTableStats st = f.Stats();
  EXPECT_EQ(st.keys, 50u);
  EXPECT_EQ(st.mem_bytes, 50 * kCharge);
  // Storable again (the side table needs no allowance).
  ASSERT_NO_FATAL_FAILURE(f.PutNew({kEmptyKey, kTombKey}, kAccessLru, 5, MixHash, 0));
  EXPECT_EQ(f.CountPresent(keys), 52u);
}

TEST(WindowEviction, EvictedSlotsAreTombstonesThatInsertsReuse) {
  SKIP_WITHOUT_GPU();
  // Every key shares one probe path (one home window and step): 150 keys
  // fill some 38 windows of it in turn.
  Fixture f(64, 0, 200);
  CK(f.t.error());
  const auto same_path = [](uint64_t) { return 5ull; };
  ASSERT_NO_FATAL_FAILURE(f.PutNew(Range(1, 151), kAccessLru, 1, same_path, 150));
  EXPECT_EQ(f.ps.Access(f.t, 5, 150), Present(1));  // near the end of the path
  ASSERT_NO_FATAL_FAILURE(f.Touch(Range(1, 76), kAccessLru, 2, same_path));
  EvictParams p = Params(kScoreLru);
  const EvictHistogram h = f.ps.Histogram(f.t, p);
  EXPECT_EQ(h.keys[254], 75u);
  EXPECT_EQ(h.keys[255], 75u);
  ASSERT_TRUE(ChooseCutoff(h, 75 * 16, &p.cutoff, &p.share));
  EXPECT_EQ(p.cutoff, 254u);
  EXPECT_EQ(f.ps.Evict(f.t, p).evicted, 75u);
  WindowTableStats st = f.Stats();
  EXPECT_EQ(st.keys, 75u);
  EXPECT_EQ(st.used, 150u);
  // Probes pass the tombstones: the keys kept are found, the evicted not.
  EXPECT_EQ(f.CountPresent(Range(1, 76), same_path), 75u);
  EXPECT_EQ(f.CountPresent(Range(76, 151), same_path), 0u);
  EXPECT_EQ(f.ps.Access(f.t, 5, 75), Present(2));
  EXPECT_EQ(f.ps.Access(f.t, 5, 150), 0u);
  EXPECT_EQ(f.ps.Access(f.t, 5, 9999), 0u);
  // 76 new keys with no allowance: 75 take the tombstones, one must retry.
  int left = -1;
  const auto got = f.rig.Run(f.t, Puts(Range(1001, 1077)), 0, same_path, &left);
  int stored = 0, retry = 0;
  for (const auto& o : got) {
    stored += o.code == kNew;
    retry += o.code == kResRetryNoSlab;
  }
  EXPECT_EQ(stored, 75);
  EXPECT_EQ(retry, 1);
  EXPECT_EQ(left, 0);
  st = f.Stats();
  EXPECT_EQ(st.keys, 150u);
  EXPECT_EQ(st.used, 150u);
  EXPECT_EQ(f.CountPresent(Range(1, 76), same_path), 75u);
  EXPECT_EQ(f.CountPresent(Range(1001, 1077), same_path), 75u);
}

}  // namespace
}  // namespace kvcg::store::gpu
