// The window table (store/gpu/window_types.h) and its kernel, against a host
// model: batches of GET / PUT / DELETE / CAS with repeated keys (same-key
// groups numbered here as the pipeline numbers them), the two sentinel key
// values, tombstones and their reuse, forced hash collisions (every key in
// one home window: probe chains across the whole table), the claim
// allowance, max_keys, retry poisoning, the results in kvcg's form, and
// growth (a rebuild into more windows).
// Without a usable GPU every test is skipped with the reason.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu_test_util.h"
#include "window_test_rig.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/window_kernel.h"
#include "store/gpu/window_table.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess)

using namespace window_test;

// The L-Slab kernel's raw result of `op` on `model`, which it then applies.
Outcome Apply(std::unordered_map<uint64_t, uint64_t>& model, const HostOp& op) {
  auto it = model.find(op.key);
  const bool found = it != model.end();
  const uint64_t old = found ? it->second : 0;
  const uint8_t base = found ? kResOk : kResNotFound;
  switch (op.type) {
    case kOpGet: return {base, old};
    case kOpDelete:
      if (found) model.erase(it);
      return {base, old};
    case kOpPut:
      model[op.key] = op.value;
      return {uint8_t(base | kResStored), old};
    default: {  // CAS
      const bool store = found ? !op.flag && old == op.expected : op.flag;
      if (store) model[op.key] = op.value;
      return {uint8_t(store ? base | kResStored : base), old};
    }
  }
}

// Random ops over keys [0, key_space) plus the two sentinel key values;
// skewed so that keys repeat inside a batch.
std::vector<HostOp> RandomOps(std::mt19937_64& rng, uint32_t n, uint64_t key_space,
                              const std::unordered_map<uint64_t, uint64_t>& model) {
  std::vector<HostOp> ops(n);
  for (auto& op : ops) {
    const uint64_t r = rng();
    if (r % 97 == 0) {
      op.key = (r >> 8) & 1 ? kEmptyKey : kTombKey;
    } else {
      // Half the ops on a hot tenth of the key space.
      const uint64_t span = (r >> 10) & 1 ? key_space / 10 + 1 : key_space;
      op.key = (r >> 12) % span;
    }
    op.value = rng();
    const uint32_t kind = uint32_t((r >> 40) % 10);
    op.type = kind < 4 ? kOpGet : kind < 7 ? kOpPut : kind < 9 ? kOpDelete : kOpCas;
    if (op.type == kOpCas) {
      auto it = model.find(op.key);
      op.flag = (r >> 50) % 4 == 0;
      op.expected = it != model.end() && (r >> 52) % 2 ? it->second : rng();
    }
  }
  return ops;
}

void ExpectMatchesModel(uint64_t windows, uint64_t key_space, int batches, uint32_t batch_ops,
                        const std::function<uint64_t(uint64_t)>& hash) {
  WindowTable t(windows, 0);
  CK(t.error());
  Rig rig(std::max<uint32_t>(batch_ops, uint32_t(key_space) + 2));
  std::unordered_map<uint64_t, uint64_t> model;
  std::mt19937_64 rng(7);
  for (int b = 0; b < batches; ++b) {
    const auto ops = RandomOps(rng, batch_ops, key_space, model);
    const auto got = rig.Run(t, ops, 1 << 30, hash);
    // Ops on one key apply in batch order; ops on different keys commute.
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const Outcome want = Apply(model, ops[i]);
      ASSERT_EQ(got[i].code, want.code) << "batch " << b << " op " << i << " type " << ops[i].type
                                        << " key " << ops[i].key;
      if ((want.code & 0x7f) == kResOk) {
        ASSERT_EQ(got[i].value, want.value) << "batch " << b << " op " << i;
      }
    }
  }
  WindowTableStats st;
  CK(t.Stats(&st, rig.stream()));
  EXPECT_EQ(st.keys, model.size());
  EXPECT_EQ(st.mem_bytes, 16 * model.size());
  EXPECT_LE(st.used, key_space);  // a key's slot is reused; the sentinels take none
  // Every key of the space, read back.
  std::vector<HostOp> gets;
  for (uint64_t k = 0; k < key_space; ++k) gets.push_back({kOpGet, k});
  gets.push_back({kOpGet, kEmptyKey});
  gets.push_back({kOpGet, kTombKey});
  const auto got = rig.Run(t, gets, 0, hash);
  for (uint32_t i = 0; i < gets.size(); ++i) {
    auto it = model.find(gets[i].key);
    ASSERT_EQ(got[i].code, it != model.end() ? kResOk : kResNotFound) << "key " << gets[i].key;
    if (it != model.end()) {
      ASSERT_EQ(got[i].value, it->second) << "key " << gets[i].key;
    }
  }
}

TEST(WindowTable, MixedBatchesMatchTheModel) {
  SKIP_WITHOUT_GPU();
  // 20,000 keys in 65,536 slots: deletes leave tombstones that later inserts reuse.
  ExpectMatchesModel(16384, 20000, 40, 8192, MixHash);
}

TEST(WindowTable, ForcedCollisionsProbeAcrossTheTable) {
  SKIP_WITHOUT_GPU();
  // Every key has the same home window and step: one probe chain of ~75
  // windows around the table, tombstones all along it.
  ExpectMatchesModel(128, 300, 30, 1000, [](uint64_t) { return 42ull; });
}

TEST(WindowTable, AllowanceBoundsClaimsAndTombstonesCostNone) {
  SKIP_WITHOUT_GPU();
  WindowTable t(64, 0);
  CK(t.error());
  Rig rig(1000);
  auto same_home = [](uint64_t) { return 5ull; };
  std::vector<HostOp> puts;
  for (uint64_t k = 0; k < 150; ++k) puts.push_back({kOpPut, k, k + 1000});
  int left = -1;
  auto got = rig.Run(t, puts, 100, same_home, &left);
  int stored = 0, retry = 0;
  for (const auto& o : got) {
    stored += o.code == (kResNotFound | kResStored);
    retry += o.code == kResRetryNoSlab;
  }
  EXPECT_EQ(stored, 100);
  EXPECT_EQ(retry, 50);
  EXPECT_EQ(left, 0);
  WindowTableStats st;
  CK(t.Stats(&st, rig.stream()));
  EXPECT_EQ(st.keys, 100u);
  EXPECT_EQ(st.used, 100u);
  // Delete 40 stored keys; 40 new keys then fit with no allowance at all
  // (they reuse the tombstones on their common path), the 41st does not.
  std::vector<HostOp> dels;
  for (uint64_t k = 0; k < 150 && dels.size() < 40; ++k) {
    if (got[k].code == (kResNotFound | kResStored)) dels.push_back({kOpDelete, k});
  }
  for (const auto& o : rig.Run(t, dels, 0, same_home)) EXPECT_EQ(o.code, kResOk);
  std::vector<HostOp> again;
  for (uint64_t k = 1000; k < 1041; ++k) again.push_back({kOpPut, k, k});
  got = rig.Run(t, again, 0, same_home, &left);
  stored = retry = 0;
  for (const auto& o : got) {
    stored += o.code == (kResNotFound | kResStored);
    retry += o.code == kResRetryNoSlab;
  }
  EXPECT_EQ(stored, 40);
  EXPECT_EQ(retry, 1);
  CK(t.Stats(&st, rig.stream()));
  EXPECT_EQ(st.keys, 100u);
  EXPECT_EQ(st.used, 100u);
  EXPECT_EQ(t.windows(), 67u);  // the next prime
  EXPECT_EQ(t.ClaimableSlots(st.used), uint64_t(67 * 4 * kMaxWindowLoad) - 100);
}

TEST(WindowTable, MaxKeysAnswersCapacityAndKeepsUpdates) {
  SKIP_WITHOUT_GPU();
  WindowTable t(256, 0);
  CK(t.error());
  Rig rig(100);
  CK(t.SetLimits(10, 0, rig.stream()));
  std::vector<HostOp> puts;
  for (uint64_t k = 0; k < 30; ++k) puts.push_back({kOpPut, k, k});
  auto got = rig.Run(t, puts, 1 << 20, MixHash);
  int stored = 0, full = 0;
  std::vector<HostOp> updates;
  for (uint64_t k = 0; k < 30; ++k) {
    if (got[k].code == (kResNotFound | kResStored)) {
      ++stored;
      updates.push_back({kOpPut, k, k + 77});
    }
    full += got[k].code == kResCapacity;
  }
  EXPECT_EQ(stored, 10);
  EXPECT_EQ(full, 20);
  for (const auto& o : rig.Run(t, updates, 0, MixHash)) EXPECT_EQ(o.code, kResOk | kResStored);
  WindowTableStats st;
  CK(t.Stats(&st, rig.stream()));
  EXPECT_EQ(st.keys, 10u);
}

TEST(WindowTable, RetryPoisonsTheRestOfTheKeysGroup) {
  SKIP_WITHOUT_GPU();
  WindowTable t(16, 0);
  CK(t.error());
  Rig rig(16);
  const std::vector<HostOp> ops = {{kOpPut, 9, 1}, {kOpGet, 9}, {kOpPut, 9, 2}, {kOpGet, 10}};
  const auto got = rig.Run(t, ops, 0, MixHash);  // no slot may be claimed
  EXPECT_EQ(got[0].code, kResRetryNoSlab);
  EXPECT_EQ(got[1].code, kResRetryPoisoned);
  EXPECT_EQ(got[2].code, kResRetryPoisoned);
  EXPECT_EQ(got[3].code, kResNotFound);
}

TEST(WindowTable, ResultsInKvcgFormWithSkippedOps) {
  SKIP_WITHOUT_GPU();
  WindowTable t(64, 0);
  CK(t.error());
  Rig rig(16);
  // kvcg::Code bytes: 0 ok, 1 not found, 3 an invalid argument (a skipped op).
  const std::vector<HostOp> ops = {{kOpPut, 1, 11}, {kOpGet, 1}, {kOpGet, 2}, {kOpPut, 2, 22},
                                   {kOpGet, 2}};
  const std::vector<uint8_t> skip = {0, 0, 0, 3, 0};
  uint32_t retry = 9;
  const auto got = rig.Run(t, ops, 100, MixHash, nullptr, &skip, true, &retry);
  EXPECT_EQ(got[0].code, 1);  // PUT of a new key: "not found" before it
  EXPECT_EQ(got[1].code, 0);
  EXPECT_EQ(got[1].value, 11u);
  EXPECT_EQ(got[2].code, 1);
  EXPECT_EQ(got[3].code, 3);  // skipped: nothing stored
  EXPECT_EQ(got[4].code, 1);
  EXPECT_EQ(retry, 0u);
}

// The GET kernel (a batch of GETs only) against the general kernel on the
// same batch and against the model: repeated keys, misses, tombstones on
// the probe paths, both sentinel values (one stored, one not), skipped ops,
// both result forms, a grid of one block per 64 ops and one of 2 blocks
// (whose warps take chunk after chunk), and every key in one home window
// (probes that go on past it, one window at a time). xxh3: `hash` is
// Xxh3Fixed8, and the GET kernel also runs without the hash column.
void ExpectGetKernelMatches(const std::function<uint64_t(uint64_t)>& hash, uint64_t windows,
                            uint64_t keys, bool xxh3 = false) {
  WindowTable t(windows, 0);
  CK(t.error());
  Rig rig(4096);
  std::unordered_map<uint64_t, uint64_t> model;
  std::vector<HostOp> puts;
  for (uint64_t k = 0; k < keys; ++k) puts.push_back({kOpPut, k, 1000 + k});
  puts.push_back({kOpPut, kEmptyKey, 77});
  for (const auto& o : rig.Run(t, puts, 1 << 20, hash)) ASSERT_EQ(o.code, kResNotFound | kResStored);
  for (const auto& op : puts) model[op.key] = op.value;
  std::vector<HostOp> dels;
  for (uint64_t k = 0; k < keys; k += 4) {
    dels.push_back({kOpDelete, k});
    model.erase(k);
  }
  for (const auto& o : rig.Run(t, dels, 0, hash)) ASSERT_EQ(o.code, kResOk);
  std::mt19937_64 rng(11);
  std::vector<HostOp> gets;
  std::vector<uint8_t> skip;
  for (int i = 0; i < 3001; ++i) {
    const uint64_t r = rng();
    uint64_t key = r % (keys + keys / 3);  // a quarter deleted, and misses past the keys
    if (r % 61 == 0) key = (r >> 8) & 1 ? kEmptyKey : kTombKey;
    gets.push_back({kOpGet, key});
    skip.push_back(i % 37 == 5 ? 3 : 0);
  }
  for (const auto& [kvcg_form, max_blocks] :
       std::vector<std::pair<bool, uint32_t>>{{false, 0}, {true, 0}, {false, 2}, {true, 2}}) {
    const auto* sk = kvcg_form ? &skip : nullptr;
    rig.SetMaxBlocks(max_blocks);
    const auto fast = rig.Run(t, gets, 0, hash, nullptr, sk, kvcg_form, nullptr, true);
    const auto general = rig.Run(t, gets, 0, hash, nullptr, sk, kvcg_form, nullptr, false);
    rig.SetHashColumn(false);
    const auto hashed = xxh3 ? rig.Run(t, gets, 0, hash, nullptr, sk, kvcg_form, nullptr, true)
                             : fast;
    rig.SetHashColumn(true);
    const uint8_t ok = 0, missing = kvcg_form ? 1 : kResNotFound;
    for (size_t i = 0; i < gets.size(); ++i) {
      auto it = model.find(gets[i].key);
      const uint8_t want = kvcg_form && skip[i] != 0 ? skip[i] : it != model.end() ? ok : missing;
      ASSERT_EQ(fast[i].code, want) << "op " << i << " key " << gets[i].key << " form " << kvcg_form
                                    << " max_blocks " << max_blocks;
      ASSERT_EQ(general[i].code, want) << "op " << i << " key " << gets[i].key;
      ASSERT_EQ(hashed[i].code, want) << "op " << i << " key " << gets[i].key << " (no hash column)";
      if (want == ok) {
        ASSERT_EQ(fast[i].value, it->second) << "op " << i << " key " << gets[i].key;
        ASSERT_EQ(hashed[i].value, it->second) << "op " << i << " (no hash column)";
        ASSERT_EQ(general[i].value, it->second) << "op " << i;
      }
    }
  }
}

TEST(WindowTable, GetKernelAnswersAsTheGeneralKernel) {
  SKIP_WITHOUT_GPU();
  ExpectGetKernelMatches(MixHash, 512, 1500);  // load 0.73
}

TEST(WindowTable, GetKernelHashesKeysWithoutAHashColumn) {
  SKIP_WITHOUT_GPU();
  ExpectGetKernelMatches([](uint64_t k) { return Xxh3Fixed8(k); }, 512, 1500, true);
}

TEST(WindowTable, GetKernelFollowsProbesAcrossTheTable) {
  SKIP_WITHOUT_GPU();
  // Every key in one home window with one step: probes of up to ~75 windows.
  ExpectGetKernelMatches([](uint64_t) { return 42ull; }, 128, 300);
}

// Fills a table, deletes a third (tombstones), grows it, and checks every
// entry, the counters and later writes. host_hash: the hash Grow is given
// (empty: the device's Xxh3Fixed8, which `hash` must then be).
void ExpectGrowKeepsEntries(const std::function<uint64_t(uint64_t)>& hash,
                            const std::function<uint64_t(uint64_t)>& host_hash) {
  WindowTable t(1024, 0);
  CK(t.error());
  Rig rig(4096);
  std::unordered_map<uint64_t, uint64_t> model;
  std::vector<HostOp> puts;
  for (uint64_t k = 0; k < 3000; ++k) puts.push_back({kOpPut, k * 7919, k});
  puts.push_back({kOpPut, kEmptyKey, 11});
  puts.push_back({kOpPut, kTombKey, 12});
  for (const auto& o : rig.Run(t, puts, 1 << 20, hash)) ASSERT_EQ(o.code, kResNotFound | kResStored);
  for (const auto& op : puts) model[op.key] = op.value;
  std::vector<HostOp> dels;
  for (uint64_t k = 0; k < 3000; k += 3) {
    dels.push_back({kOpDelete, k * 7919});
    model.erase(k * 7919);
  }
  dels.push_back({kOpDelete, kTombKey});
  model.erase(kTombKey);
  for (const auto& o : rig.Run(t, dels, 0, hash)) ASSERT_EQ(o.code, kResOk);
  WindowTableStats before;
  CK(t.Stats(&before, rig.stream()));
  ASSERT_EQ(before.used, 3000u);  // tombstones still count
  const uint64_t old_windows = t.windows();
  CK(t.Grow(2 * old_windows, host_hash, rig.stream()));
  EXPECT_GT(t.windows(), 2 * old_windows - 1);
  WindowTableStats after;
  CK(t.Stats(&after, rig.stream()));
  EXPECT_EQ(after.keys, model.size());
  EXPECT_EQ(after.mem_bytes, before.mem_bytes);
  EXPECT_EQ(after.used, model.size() - 1);  // live slots: kEmptyKey lives in the side table
  std::vector<HostOp> gets;
  for (uint64_t k = 0; k < 3000; ++k) gets.push_back({kOpGet, k * 7919});
  gets.push_back({kOpGet, kEmptyKey});
  gets.push_back({kOpGet, kTombKey});
  const auto got = rig.Run(t, gets, 0, hash);
  for (size_t i = 0; i < gets.size(); ++i) {
    auto it = model.find(gets[i].key);
    ASSERT_EQ(got[i].code, it != model.end() ? kResOk : kResNotFound) << "key " << gets[i].key;
    if (it != model.end()) {
      ASSERT_EQ(got[i].value, it->second) << "key " << gets[i].key;
    }
  }
  // Writes go on after the rebuild: updates, deletes, new keys.
  std::vector<HostOp> more = {{kOpPut, 1 * 7919, 99}, {kOpDelete, 2 * 7919}, {kOpPut, 123456789, 5}};
  const auto m = rig.Run(t, more, 10, hash);
  EXPECT_EQ(m[0].code, kResOk | kResStored);
  EXPECT_EQ(m[1].code, kResOk);
  EXPECT_EQ(m[2].code, kResNotFound | kResStored);
}

TEST(WindowTable, GrowKeepsEveryEntryWithAHostHash) {
  SKIP_WITHOUT_GPU();
  ExpectGrowKeepsEntries(MixHash, MixHash);
}

TEST(WindowTable, GrowKeepsEveryEntryWithTheDeviceHash) {
  SKIP_WITHOUT_GPU();
  ExpectGrowKeepsEntries([](uint64_t k) { return Xxh3Fixed8(k); }, {});
}

TEST(WindowTable, GrowNeverShrinksBelowTheLiveKeys) {
  SKIP_WITHOUT_GPU();
  WindowTable t(256, 0);
  CK(t.error());
  Rig rig(1000);
  std::vector<HostOp> puts;
  for (uint64_t k = 0; k < 700; ++k) puts.push_back({kOpPut, k, k});
  for (const auto& o : rig.Run(t, puts, 1 << 20, MixHash)) ASSERT_EQ(o.code, kResNotFound | kResStored);
  CK(t.Grow(1, MixHash, rig.stream()));  // asks for less than the keys need
  EXPECT_GE(double(t.windows() * kWindowSlots) * kMaxWindowLoad, 700.0);
  std::vector<HostOp> gets;
  for (uint64_t k = 0; k < 700; ++k) gets.push_back({kOpGet, k});
  const auto got = rig.Run(t, gets, 0, MixHash);
  for (uint64_t k = 0; k < 700; ++k) ASSERT_EQ(got[k].value, k);
}

TEST(WindowTable, AccessBytesComeWithThePolicyThatKeepsThem) {
  SKIP_WITHOUT_GPU();
  WindowTable t(64, 0, nullptr, /*access_bytes=*/false);
  CK(t.error());
  EXPECT_EQ(t.view().access, nullptr);
  EXPECT_EQ(t.device_bytes(), WindowTable::DeviceBytes(67, false));
  CK(t.EnsureAccessBytes());
  ASSERT_NE(t.view().access, nullptr);
  EXPECT_EQ(t.device_bytes(), WindowTable::DeviceBytes(67, true));
  const uint8_t* const access = t.view().access;
  CK(t.EnsureAccessBytes());  // a second call keeps them
  EXPECT_EQ(t.view().access, access);
  EXPECT_EQ(t.device_bytes(), WindowTable::DeviceBytes(67, true));
  Rig rig(200);
  rig.SetAccess(kAccessLfu, 0);
  std::vector<HostOp> puts;
  for (uint64_t k = 0; k < 150; ++k) puts.push_back({kOpPut, k, k});
  for (const auto& o : rig.Run(t, puts, 1 << 20, MixHash)) ASSERT_EQ(o.code, kResNotFound | kResStored);
  // Every new key starts at LFU_INIT_VAL; the other bytes stay 0.
  std::vector<uint8_t> bytes(67 * kWindowSlots + 2);
  CK(cudaMemcpy(bytes.data(), t.view().access, bytes.size(), cudaMemcpyDeviceToHost));
  int init = 0, zero = 0;
  for (uint8_t b : bytes) {
    init += b == kLfuInitCounter;
    zero += b == 0;
  }
  EXPECT_EQ(init, 150);
  EXPECT_EQ(zero, int(bytes.size()) - 150);
  // A rebuild keeps them.
  CK(t.Grow(200, MixHash, rig.stream()));
  std::vector<uint8_t> after(t.windows() * kWindowSlots + 2);
  CK(cudaMemcpy(after.data(), t.view().access, after.size(), cudaMemcpyDeviceToHost));
  init = 0;
  for (uint8_t b : after) init += b == kLfuInitCounter;
  EXPECT_EQ(init, 150);
}

}  // namespace
}  // namespace kvcg::store::gpu
