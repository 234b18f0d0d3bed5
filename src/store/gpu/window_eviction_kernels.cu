// The window table's eviction kernels (window_eviction_kernels.h): rank
// every key by score, evict the chosen ones, and look up one key's access
// byte. The pass kernels take one entry a thread — slot i (of 4 W) with its
// access byte i, then the two sentinel keys (side table entries 0 and 1,
// access bytes 4 W and 4 W + 1) — in warp-aligned grid-stride rounds, so a
// warp's lanes take 32 consecutive slots together and stay converged for
// their ballots. Both pass kernels rate a key with RateKey
// (eviction_rating.cuh), as the L-Slab table's kernels do, so the cutoff
// the host chooses from the histogram selects exactly what it counted.
//
// fixed8 keys carry no expire-at: every key is rated with expire-at 0, so a
// volatile-only policy finds no candidate (its histogram is empty), the
// TTL score never applies, and no key counts as expired.
//
// No locking: every kernel here runs with nothing else in flight on the
// table (the pipeline drains first), and a thread changes only its own
// entry (key word or present flag, access byte).
#include <cuda_runtime.h>

#include "store/gpu/eviction_rating.cuh"
#include "store/gpu/lslab_device.cuh"
#include "store/gpu/window_eviction_kernels.h"

namespace kvcg::store::gpu {
namespace {

// One entry of a pass: a slot or a sentinel key.
struct Entry {
  bool live = false;        // holds a key
  uint64_t key = 0;         // that key
  uint64_t* word = nullptr; // what says it is there: the slot's key word, the sentinel's present flag
  uint64_t gone = 0;        // what `word` becomes when it is evicted: kTombKey, or 0
};

// Entry i (i < 4 W + 2; past that: not live) of table t with `slots` (4 W) slots.
__device__ Entry EntryAt(const WindowTableView& t, uint64_t slots, uint64_t i) {
  Entry e;
  if (i < slots) {
    e.word = t.slots + 2 * i;
    e.key = Ld(e.word);
    e.live = e.key < kTombKey;  // neither EMPTY nor a tombstone
    e.gone = kTombKey;
  } else if (i < slots + 2) {
    e.word = t.special + 2 * (i - slots);
    e.key = i == slots ? kEmptyKey : kTombKey;
    e.live = Ld(e.word) != 0;
    e.gone = 0;
  }
  return e;
}

// Calls f(i, entry i) for every entry of the table, warp-wide: the lanes of
// a warp take 32 consecutive entries per round and run the same number of
// rounds (an entry past the end is not live), so f may use warp votes.
template <typename F>
__device__ void ForEachEntry(const WindowTableView& t, F&& f) {
  const uint64_t slots = t.windows * kWindowSlots;
  const uint64_t total = slots + 2;
  const uint64_t lane = threadIdx.x & 31;
  const uint64_t first = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) & ~uint64_t(31);
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;  // a multiple of 32
  for (uint64_t base = first; base < total; base += stride) {
    const uint64_t i = base + lane;
    f(i, EntryAt(t, slots, i));
  }
}

// A live entry's rating: RateKey with the key as its word and no
// expire-at. The access bytes exist whenever the score
// reads them (the host entry points check).
__device__ Rating RateEntry(const WindowTableView& t, const EvictParams& p, uint64_t i,
                            const Entry& e) {
  return RateKey(p, t.generation, e.key, 0, t.access != nullptr ? t.access + i : nullptr);
}

// Counts keys per score in shared memory, warp-aggregated (one shared
// atomic per distinct score in a warp: LRU's bins are few and crowded),
// then adds the block's bins to *hist. Every key is charged the same, so
// a bin's bytes are its keys times the charge.
__global__ void __launch_bounds__(kEvictBlockThreads)
    WindowHistogramKernel(WindowTableView t, EvictParams p, EvictHistogram* hist) {
  __shared__ unsigned long long keys[256];
  for (uint32_t b = threadIdx.x; b < 256; b += blockDim.x) keys[b] = 0;
  __syncthreads();
  const uint32_t lane = threadIdx.x & 31;
  ForEachEntry(t, [&](uint64_t i, const Entry& e) {
    Rating r;
    if (e.live) r = RateEntry(t, p, i, e);
    const bool counted = e.live && r.candidate;
    const uint32_t counting = __ballot_sync(kFull, counted);
    if (!counted) return;
    const uint32_t same = __match_any_sync(counting, r.score);
    if (lane == uint32_t(__ffs(same) - 1)) {
      atomicAdd(&keys[r.score], (unsigned long long)__popc(same));
    }
  });
  __syncthreads();
  const uint64_t charge = 16 + t.entry_overhead;
  for (uint32_t b = threadIdx.x; b < 256; b += blockDim.x) {
    if (keys[b] != 0) {
      atomicAdd(&hist->keys[b], keys[b]);
      atomicAdd(&hist->bytes[b], (unsigned long long)(keys[b] * charge));
    }
  }
}

// Evicts the chosen entries and ages the kept keys' access bytes; each
// warp's lane 0 then releases what its warp evicted from the counters and
// adds it to *totals.
__global__ void __launch_bounds__(kEvictBlockThreads)
    WindowEvictKernel(WindowTableView t, EvictParams p, EvictTotals* totals) {
  uint64_t evicted = 0;  // by this warp, on every lane
  ForEachEntry(t, [&](uint64_t i, const Entry& e) {
    Rating r;
    if (e.live) r = RateEntry(t, p, i, e);
    const bool chosen = e.live && r.candidate && ChosenByCutoff(p, r.score, e.key);
    if (chosen) {
      St(e.word, e.gone);
    } else if (e.live && r.access != nullptr) {
      AgeKeptKey(p, t.generation, r);
    }
    evicted += __popc(__ballot_sync(kFull, chosen));
  });
  if ((threadIdx.x & 31) != 0 || evicted == 0) return;
  const uint64_t freed = evicted * (16 + t.entry_overhead);
  ReleaseCounter(&t.counters->keys, evicted);
  ReleaseCounter(&t.counters->mem_bytes, freed);
  atomicAdd(&totals->evicted, (unsigned long long)evicted);
  atomicAdd(&totals->freed, (unsigned long long)freed);
}

// Access byte i, or 0 for a table that keeps none.
__device__ uint32_t AccessByteOf(const WindowTableView& t, uint64_t i) {
  return t.access != nullptr ? __ldcg(t.access + i) : 0;
}

// One thread: the key's access byte, probing as the ops kernel does (home
// window, then steps of ProbeStep, up to the first window with an EMPTY
// slot; a whole lap at most), or from the side table for a sentinel key.
// *out = 0 when absent, else 1 << 32 | the byte.
__global__ void WindowKeyAccessKernel(WindowTableView t, uint64_t hash, uint64_t key,
                                      unsigned long long* out) {
  const uint64_t slots = t.windows * kWindowSlots;
  unsigned long long result = 0;
  if (key >= kTombKey) {
    const uint64_t which = SentinelEntry(key);
    if (Ld(t.special + 2 * which) != 0) result = (1ull << 32) | AccessByteOf(t, slots + which);
  } else {
    uint64_t w = HomeWindow(hash, t.windows);
    const uint64_t step = ProbeStep(hash, t.windows);
    bool over = false;
    for (uint64_t n = 0; n < t.windows && !over; ++n, w = NextWindow(w, step, t.windows)) {
      for (uint32_t s = 0; s < kWindowSlots; ++s) {
        const uint64_t k = Ld(t.slots + w * kWindowWords + 2 * s);
        if (k == key) {
          result = (1ull << 32) | AccessByteOf(t, w * kWindowSlots + s);
          over = true;
          break;
        }
        over |= k == kEmptyKey;  // the probe ends with this window
      }
    }
  }
  *out = result;
}

// The grid of a pass: a warp per 32 entries, capped (EvictBlocks).
cudaError_t PassBlocks(const WindowTableView& t, uint32_t* blocks) {
  return EvictBlocks((t.windows * kWindowSlots + 2 + 31) / 32, blocks);
}

}  // namespace

cudaError_t WindowEvictionHistogram(const WindowTableView& table, const EvictParams& p,
                                    EvictHistogram* hist, cudaStream_t stream) {
  if (UsesAccessBytes(p) && table.access == nullptr) return cudaErrorInvalidValue;
  uint32_t blocks = 0;
  cudaError_t err = PassBlocks(table, &blocks);
  if (err == cudaSuccess) err = cudaMemsetAsync(hist, 0, sizeof(EvictHistogram), stream);
  if (err != cudaSuccess) return err;
  WindowHistogramKernel<<<blocks, kEvictBlockThreads, 0, stream>>>(table, p, hist);
  return cudaGetLastError();
}

cudaError_t WindowEvictChosen(const WindowTableView& table, const EvictParams& p,
                              EvictTotals* totals, cudaStream_t stream) {
  if (UsesAccessBytes(p) && table.access == nullptr) return cudaErrorInvalidValue;
  uint32_t blocks = 0;
  cudaError_t err = PassBlocks(table, &blocks);
  if (err == cudaSuccess) err = cudaMemsetAsync(totals, 0, sizeof(EvictTotals), stream);
  if (err != cudaSuccess) return err;
  WindowEvictKernel<<<blocks, kEvictBlockThreads, 0, stream>>>(table, p, totals);
  return cudaGetLastError();
}

cudaError_t WindowLookupAccessByte(const WindowTableView& table, uint64_t hash, uint64_t key,
                                   unsigned long long* out, cudaStream_t stream) {
  WindowKeyAccessKernel<<<1, 1, 0, stream>>>(table, hash, key, out);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
