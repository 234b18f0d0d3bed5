// Eviction kernels (eviction_kernels.h): rank every key by score, then
// unlink the chosen ones. A warp walks one bucket's chain at a time, lane l
// rating slot l of each slab; both kernels rate identically (RateKey,
// eviction_rating.cuh, which the window table's kernels share), so the
// host's cutoff chosen from the histogram selects what the histogram counted.
// They run with no other kernel of the table in flight (the pipeline
// drains first), so they take no bucket locks.
#include <cuda_runtime.h>

#include "store/gpu/eviction_kernels.h"
#include "store/gpu/eviction_rating.cuh"
#include "store/gpu/lslab_device.cuh"

namespace kvcg::store::gpu {
namespace {

constexpr int kBlockThreads = kEvictBlockThreads;
constexpr uint32_t kWarpsPerBlock = kEvictWarpsPerBlock;

// One occupied slot as a pass sees it: its rating (eviction_rating.cuh)
// and what unlinking it needs.
struct Rated : Rating {
  uint64_t charge = 0;
  uint64_t exp = 0;   // expire-at (in a slab with the volatile hint; else 0)
  uint64_t rec = 0;   // the key record
  uint64_t lens = 0;  // key length | value length << 32
  uint64_t word = 0;  // the slot's key word (the key's hash)
};

__device__ Rated Rate(const TableView& t, const EvictParams& p, const uint64_t* slab,
                      uint64_t meta, uint64_t bucket, uint32_t idx, uint32_t lane) {
  Rated r;
  r.word = Ld(slab + lane);
  r.rec = Ld(slab + 32 + lane);
  const uint64_t* rec = reinterpret_cast<const uint64_t*>(r.rec);
  r.lens = Ld(rec + 1);
  if (meta & kVolatileBit) r.exp = Ld(rec + kRecordExpireWord);
  r.charge = uint64_t(uint32_t(r.lens)) + (r.lens >> 32) + t.entry_overhead;
  uint8_t* access = UsesAccessBytes(p) ? AccessByte(t, bucket, idx, int(lane)) : nullptr;
  static_cast<Rating&>(r) = RateKey(p, t.generation, r.word, r.exp, access);
  return r;
}

// Calls f(slab, meta, idx) for each slab of bucket b's chain, warp-wide.
template <typename F>
__device__ void ForEachSlab(const TableView& t, uint64_t b, F&& f) {
  uint64_t* slab = t.buckets + b * kSlabWords;
  uint32_t idx = 0;
  while (true) {
    const uint64_t meta = Ld(slab + kMetaWord);
    f(slab, meta, idx);
    const uint32_t next = uint32_t(meta >> 32);
    if (next == 0) return;
    slab = PoolSlab(t, next);
    idx = next;
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    HistogramKernel(TableView t, EvictParams p, EvictHistogram* hist) {
  __shared__ unsigned long long keys[256], bytes[256];
  for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) keys[i] = bytes[i] = 0;
  __syncthreads();
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t warps = uint64_t(gridDim.x) * kWarpsPerBlock;
  const uint64_t buckets = 1ull << t.bucket_bits;
  for (uint64_t b = warp; b < buckets; b += warps) {
    ForEachSlab(t, b, [&](uint64_t* slab, uint64_t meta, uint32_t idx) {
      if (lane >= kSlotsPerSlab || ((meta >> lane) & 1) == 0) return;
      const Rated r = Rate(t, p, slab, meta, b, idx, lane);
      if (!r.candidate) return;
      atomicAdd(&keys[r.score], 1ull);
      atomicAdd(&bytes[r.score], (unsigned long long)r.charge);
    });
  }
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) {
    if (keys[i] != 0) {
      atomicAdd(&hist->keys[i], keys[i]);
      atomicAdd(&hist->bytes[i], bytes[i]);
    }
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    EvictKernel(TableView t, EvictParams p, Reclaimed* list, uint64_t capacity, EvictTotals* totals) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t warps = uint64_t(gridDim.x) * kWarpsPerBlock;
  const uint64_t buckets = 1ull << t.bucket_bits;
  uint64_t evicted = 0, expired = 0, freed = 0, volatile_gone = 0;
  bool more = false;
  for (uint64_t b = warp; b < buckets; b += warps) {
    ForEachSlab(t, b, [&](uint64_t* slab, uint64_t meta, uint32_t idx) {
      const bool mine = lane < kSlotsPerSlab && ((meta >> lane) & 1);
      Rated r;
      if (mine) r = Rate(t, p, slab, meta, b, idx, lane);
      const bool chosen = r.candidate && ChosenByCutoff(p, r.score, r.word);
      uint32_t gone = __ballot_sync(kFull, chosen);
      if (gone != 0) {
        const uint32_t n = __popc(gone);
        uint64_t base = 0;
        if (lane == 0) base = ReserveList(&totals->listed, capacity, n);
        base = __shfl_sync(kFull, base, 0);
        if (base == ~0ull || base + n > capacity) {
          more = true;  // left for the next pass
          gone = 0;
          if (base != ~0ull && lane < n && base + lane < capacity) list[base + lane].rec = 0;
        } else if (chosen) {
          Reclaimed& e = list[base + __popc(gone & ((1u << lane) - 1))];
          e.rec = r.rec;
          e.blob = Ld(reinterpret_cast<const uint64_t*>(r.rec));
          e.lens = r.lens;
        }
      }
      const bool unlinked = (gone >> lane) & 1;
      const bool was_expired = unlinked && Expired(r.exp, p.now);
      if (gone != 0) {
        freed += WarpSum(unlinked ? r.charge : 0);
        expired += __popc(__ballot_sync(kFull, was_expired));
        evicted += __popc(__ballot_sync(kFull, unlinked && !was_expired));
        volatile_gone += __popc(__ballot_sync(kFull, unlinked && r.exp != 0));
      }
      uint64_t next_meta = meta & ~uint64_t(gone);
      if ((meta & kVolatileBit) != 0 &&
          __ballot_sync(kFull, mine && !unlinked && r.exp != 0) == 0) {
        next_meta &= ~kVolatileBit;  // nothing volatile left here
      }
      if (lane == 0 && next_meta != meta) St(slab + kMetaWord, next_meta);
      if (mine && !unlinked && r.access != nullptr) AgeKeptKey(p, t.generation, r);
    });
  }
  if (lane != 0) return;
  DeviceCounters* c = t.counters;
  const uint64_t removed = evicted + expired;
  if (removed != 0) {
    ReleaseCounter(&c->keys, removed);
    ReleaseCounter(&c->mem_bytes, freed);
    if (volatile_gone != 0) ReleaseCounter(&c->volatile_keys, volatile_gone);
    if (expired != 0) {
      atomicAdd(&c->expired_keys, (unsigned long long)expired);
      atomicAdd(&totals->expired, (unsigned long long)expired);
    }
    atomicAdd(&totals->evicted, (unsigned long long)evicted);
    atomicAdd(&totals->freed, (unsigned long long)freed);
  }
  if (more) atomicExch(&totals->more, 1ull);
}

__global__ void SampleMemBytesKernel(DeviceCounters* counters, unsigned long long* out) {
  *out = atomicAdd(&counters->mem_bytes, 0ull);  // a coherent read of a word others update
}

// One thread: the key's access byte under its bucket's read lock (so a
// concurrent ARB's write is wholly before or after), without touching it.
// *out = 0 when the key is absent or expired, else 1 << 32 | the byte.
__global__ void KeyAccessKernel(TableView t, uint64_t hash, const uint64_t* key, uint32_t klen,
                                uint64_t now, unsigned long long* out) {
  const uint64_t bucket = BucketOf(hash, t.bucket_bits);
  uint64_t* head = t.buckets + bucket * kSlabWords;
  uint64_t* lock = head + kLockWord;
  ReadLock(lock);
  const uint32_t words = (klen + 7) / 8;
  unsigned long long result = 0;
  uint64_t* slab = head;
  uint32_t idx = 0;
  bool done = false;
  while (!done) {
    const uint64_t meta = Ld(slab + kMetaWord);
    for (uint32_t slot = 0; slot < kSlotsPerSlab && !done; ++slot) {
      if (((meta >> slot) & 1) == 0 || Ld(slab + slot) != hash) continue;
      const uint64_t* rec = reinterpret_cast<const uint64_t*>(Ld(slab + 32 + slot));
      if (uint32_t(Ld(rec + 1)) != klen) continue;
      bool same = true;
      for (uint32_t w = 0; w < words && same; ++w) same = Ld(rec + kRecordKeyWord + w) == key[w];
      if (!same) continue;
      done = true;
      if ((meta & kVolatileBit) && Expired(Ld(rec + kRecordExpireWord), now)) break;  // absent
      result = (1ull << 32) | *AccessByte(t, bucket, idx, int(slot));
    }
    const uint32_t next = uint32_t(meta >> 32);
    if (done || next == 0) break;
    slab = PoolSlab(t, next);
    idx = next;
  }
  ReadUnlock(lock);
  *out = result;
}

// One warp a bucket (EvictBlocks: a grid that fills the device, grid-stride
// beyond).
cudaError_t Blocks(const TableView& t, uint32_t* blocks) {
  return EvictBlocks(1ull << t.bucket_bits, blocks);
}

}  // namespace

cudaError_t EvictionHistogram(const TableView& table, const EvictParams& p, EvictHistogram* hist,
                              cudaStream_t stream) {
  uint32_t blocks = 0;
  cudaError_t err = Blocks(table, &blocks);
  if (err == cudaSuccess) err = cudaMemsetAsync(hist, 0, sizeof(EvictHistogram), stream);
  if (err != cudaSuccess) return err;
  HistogramKernel<<<blocks, kBlockThreads, 0, stream>>>(table, p, hist);
  return cudaGetLastError();
}

cudaError_t EvictChosen(const TableView& table, const EvictParams& p, Reclaimed* list,
                        uint64_t capacity, EvictTotals* totals, cudaStream_t stream) {
  uint32_t blocks = 0;
  cudaError_t err = Blocks(table, &blocks);
  if (err == cudaSuccess) err = cudaMemsetAsync(totals, 0, sizeof(EvictTotals), stream);
  if (err != cudaSuccess) return err;
  EvictKernel<<<blocks, kBlockThreads, 0, stream>>>(table, p, list, capacity, totals);
  return cudaGetLastError();
}

cudaError_t SampleMemBytes(const TableView& table, void* out, cudaStream_t stream) {
  SampleMemBytesKernel<<<1, 1, 0, stream>>>(table.counters, static_cast<unsigned long long*>(out));
  return cudaGetLastError();
}

cudaError_t LookupAccessByte(const TableView& table, uint64_t hash, const uint64_t* key, uint32_t klen,
                             uint64_t now, unsigned long long* out, cudaStream_t stream) {
  KeyAccessKernel<<<1, 1, 0, stream>>>(table, hash, key, klen, now, out);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
