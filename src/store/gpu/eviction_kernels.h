// The GPU store's eviction (cache mode, docs/EVICTION.md): two kernels over
// the whole table, run by the pipeline with nothing else in flight
// (pipeline_eviction.cc).
//
// Why not Redis's sampling: a sampled pool per write is a host round trip
// per eviction; the GPU instead ranks every key at once. Each key has an
// access byte (lslab_types.h) that the L-Slab kernel keeps: the LRU
// generation of its last access, or Redis's LFU counter. A pass
//   1. histograms the candidates by score (256 bins of keys and charged
//      bytes; lower score = evicted first),
//   2. lets the host pick the cutoff bin so that the bins below it free
//      enough bytes, and the share of the cutoff bin to take (chosen by a
//      hash of the key, so it is spread evenly),
//   3. unlinks those entries (listing the general layout's records and
//      blobs for the host to free, as the expiry sweep does).
// Scores: LRU 255 - age in generations (the generation advances once per
// pass, so a pass evicts the keys untouched for the most passes; ages are
// saturated at kMaxLruAge, so the 8-bit generation never wraps onto a
// live key), LFU the counter, random a hash of the key, volatile-ttl the
// log2 of the remaining TTL — at least 1: an expired key alone scores 0 (and
// counts as expired, not evicted); volatile policies skip keys without an
// expire-at.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kvcg/config.h"
#include "store/gpu/expiry_kernels.h"
#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {

enum EvictScore : uint32_t { kScoreLru = 0, kScoreLfu = 1, kScoreRandom = 2, kScoreTtl = 3 };
constexpr uint32_t kMaxLruAge = 192;

// The access bytes a policy needs the L-Slab kernel to keep (none without a
// limit: nothing is ever evicted then).
inline uint32_t AccessModeOf(uint64_t max_memory_bytes, EvictionPolicy p) {
  if (max_memory_bytes == 0) return kAccessNone;
  switch (p) {
    case EvictionPolicy::kAllKeysLru:
    case EvictionPolicy::kVolatileLru: return kAccessLru;
    case EvictionPolicy::kAllKeysLfu:
    case EvictionPolicy::kVolatileLfu: return kAccessLfu;
    default: return kAccessNone;
  }
}

// What one pass ranks and keeps.
struct EvictParams {
  uint32_t score;          // EvictScore
  uint32_t volatile_only;  // volatile-* policies
  uint64_t now;            // the store's clock (expired keys, TTLs)
  uint64_t salt;           // random policy and the cutoff bin's share
  uint32_t lfu_decay;      // LFU: subtract this from every counter kept (idle minutes)
  uint32_t cutoff;         // evict: scores below it go,
  uint32_t share;          // and those equal to it whose 16-bit key hash is below this
};

// Device-side results of a pass (device memory).
struct EvictHistogram {
  unsigned long long keys[256];
  unsigned long long bytes[256];
};
struct EvictTotals {
  unsigned long long listed;   // list entries handed out (as SweepTotals::listed)
  unsigned long long more;     // nonzero: a chosen entry did not fit the list
  unsigned long long evicted;  // entries unlinked by the policy
  unsigned long long expired;  // of the unlinked, already expired
  unsigned long long freed;    // charged bytes released
  unsigned long long pad[3];
};
static_assert(sizeof(EvictTotals) == 64);

// The cutoff of a pass (host): the lowest scores whose charged bytes reach
// `need`, and the share (in 1/65536, rounded up) of the bin where they do.
// All candidates (cutoff 256) when they hold fewer bytes than `need`.
// Returns false when there is no candidate at all.
inline bool ChooseCutoff(const EvictHistogram& h, uint64_t need, uint32_t* cutoff, uint32_t* share) {
  uint64_t below = 0;
  for (uint32_t c = 0; c < 256; ++c) {
    if (h.bytes[c] != 0 && below + h.bytes[c] >= need) {
      const unsigned __int128 s =
          ((unsigned __int128)(need - below) * 65536 + h.bytes[c] - 1) / h.bytes[c];
      *cutoff = c;
      *share = uint32_t(s > 65536 ? 65536 : s);
      return true;
    }
    below += h.bytes[c];
  }
  *cutoff = 256;
  *share = 0;
  return below != 0;
}

// Zeroes *hist, then counts the candidates of every bucket by score.
cudaError_t EvictionHistogram(const TableView& table, const EvictParams& p, EvictHistogram* hist,
                              cudaStream_t stream);

// Zeroes *totals, then unlinks the chosen entries (p.cutoff, p.share),
// listing general-layout entries in `list` (`capacity` entries), updating the
// counters (keys, mem_bytes, volatile_keys, expired_keys), and ages the
// access bytes of the keys kept (LRU saturation, LFU decay).
cudaError_t EvictChosen(const TableView& table, const EvictParams& p, Reclaimed* list,
                        uint64_t capacity, EvictTotals* totals, cudaStream_t stream);

// OBJECT FREQ (Store::KeyAccess): *out (device) := 0 when the key is absent
// or expired, else 1 << 32 | its access byte, read under the bucket's read
// lock without touching it. `key` (device): the key's bytes zero-padded to
// whole words (as a key record holds them); klen: its length.
cudaError_t LookupAccessByte(const TableView& table, uint64_t hash, const uint64_t* key, uint32_t klen,
                             uint64_t now, unsigned long long* out, cudaStream_t stream);

// Writes the table's charged bytes (DeviceCounters::mem_bytes) to `out`
// (8 bytes of device memory) in stream order.
cudaError_t SampleMemBytes(const TableView& table, void* out, cudaStream_t stream);

}  // namespace kvcg::store::gpu
