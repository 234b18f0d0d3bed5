// The expiry sweep kernel (expiry_kernels.h).
//
// Parallelization: one warp per bucket chain, grid-stride over buckets, as
// the snapshot kernels do. Per slab, lane l owns slot l (l < 31); the meta
// word is read by every lane (one broadcast load), so the chain walk is
// warp-uniform and every ballot and shuffle runs with all 32 lanes
// converged. Per slab with the volatile hint: each occupied lane reads its
// record's expire-at; the expired lanes take consecutive list entries (one
// reservation per slab by lane 0, all or nothing, so the list stays
// contiguous), lane 0 rewrites the meta word once (bitmap and hint). Counters
// are summed per warp and added once per warp at the end.
//
// Races: none. No other kernel touches the table meanwhile (the caller's
// guarantee); list ranges are handed out once by the CAS-reserved cursor;
// totals and counters are updated with atomics only.
#include <cuda_runtime.h>

#include "store/gpu/expiry_kernels.h"
#include "store/gpu/lslab_device.cuh"

namespace kvcg::store::gpu {
namespace {

constexpr int kBlockThreads = 256;
constexpr uint32_t kWarpsPerBlock = kBlockThreads / 32;
constexpr uint32_t kSlotMask = (1u << kSlotsPerSlab) - 1;

__device__ __forceinline__ uint64_t WarpSum(uint64_t v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(kFull, v, d);
  return v;
}

// Lane 0: `n` consecutive list entries, all or none (then ~0).
__device__ uint64_t ReserveList(SweepTotals* totals, uint64_t capacity, uint32_t n) {
  unsigned long long cur = LdVolatile64(&totals->listed);
  while (true) {
    if (cur + n > capacity) return ~0ull;
    const unsigned long long prev = atomicCAS(&totals->listed, cur, cur + n);
    if (prev == cur) return cur;
    cur = prev;
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    SweepKernel(TableView t, uint64_t now, Reclaimed* list, uint64_t capacity, SweepTotals* totals) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t first = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t stride = uint64_t(gridDim.x) * kWarpsPerBlock;
  const uint64_t buckets = 1ull << t.bucket_bits;
  // Warp-uniform sums (lane 0 publishes them).
  uint64_t removed = 0, charge = 0, ttl_sum = 0, ttl_n = 0, slabs = 0, hinted = 0;
  bool more = false;
  for (uint64_t b = first; b < buckets; b += stride) {
    uint64_t* slab = t.buckets + b * kSlabWords;
    while (true) {
      const uint64_t meta = Ld(slab + kMetaWord);
      ++slabs;
      if (meta & kVolatileBit) {
        ++hinted;
        const uint32_t occupied = uint32_t(meta) & kSlotMask;
        const bool mine = lane < kSlotsPerSlab && ((occupied >> lane) & 1);
        const uint64_t* rec = nullptr;
        uint64_t exp = 0;
        if (mine) {
          rec = reinterpret_cast<const uint64_t*>(Ld(slab + 32 + lane));
          exp = Ld(rec + kRecordExpireWord);
        }
        const bool expired = mine && Expired(exp, now);
        const uint64_t lens = expired ? Ld(rec + 1) : 0;
        uint32_t gone = __ballot_sync(kFull, expired);
        const uint32_t n = __popc(gone);
        if (n != 0) {
          uint64_t base = 0;
          if (lane == 0) base = ReserveList(totals, capacity, n);
          base = __shfl_sync(kFull, base, 0);
          if (base == ~0ull) {
            more = true;  // left in place for the next sweep
            gone = 0;
          } else if (expired) {
            Reclaimed& r = list[base + __popc(gone & ((1u << lane) - 1))];
            r.rec = reinterpret_cast<uint64_t>(rec);
            r.blob = Ld(rec);
            r.lens = lens;
          }
        }
        const bool kept = mine && exp != 0 && ((gone >> lane) & 1) == 0;
        const uint32_t still = __ballot_sync(kFull, kept);
        if (gone != 0) {
          const uint64_t bytes =
              (gone >> lane) & 1 ? uint64_t(uint32_t(lens)) + (lens >> 32) + t.entry_overhead : 0;
          charge += WarpSum(bytes);
          removed += __popc(gone);
        }
        // TTLs of the live ones (an expired key left for the next sweep is
        // still volatile, above, but has no time left).
        const bool live = kept && !expired;
        ttl_sum += WarpSum(live ? exp - now : 0);
        ttl_n += __popc(__ballot_sync(kFull, live));
        uint64_t next_meta = meta & ~uint64_t(gone);
        if (still == 0) next_meta &= ~kVolatileBit;  // nothing volatile left here
        if (lane == 0 && next_meta != meta) St(slab + kMetaWord, next_meta);
      }
      const uint32_t next = uint32_t(meta >> 32);
      if (next == 0) break;
      slab = PoolSlab(t, next);
    }
  }
  if (lane != 0) return;
  DeviceCounters* c = t.counters;
  if (removed != 0) {
    ReleaseCounter(&c->keys, removed);
    ReleaseCounter(&c->mem_bytes, charge);
    ReleaseCounter(&c->volatile_keys, removed);
    atomicAdd(&c->expired_keys, (unsigned long long)removed);
    atomicAdd(&totals->removed, (unsigned long long)removed);
  }
  if (ttl_n != 0) {
    atomicAdd(&totals->ttl_sum, (unsigned long long)ttl_sum);
    atomicAdd(&totals->ttl_n, (unsigned long long)ttl_n);
  }
  atomicAdd(&totals->slabs, (unsigned long long)slabs);
  if (hinted != 0) atomicAdd(&totals->hinted, (unsigned long long)hinted);
  if (more) atomicExch(&totals->more, 1ull);
}

}  // namespace

cudaError_t SweepExpired(const TableView& table, uint64_t now, Reclaimed* list, uint64_t capacity,
                         SweepTotals* totals, cudaStream_t stream) {
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess) err = cudaMemsetAsync(totals, 0, sizeof(SweepTotals), stream);
  if (err != cudaSuccess) return err;
  // Enough warps to fill the device several times over (a chain walk is a
  // string of dependent loads: many in flight hide them); grid-stride beyond.
  const uint64_t buckets = 1ull << table.bucket_bits;
  const uint64_t want = (buckets + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const uint64_t cap = uint64_t(sms > 0 ? sms : 1) * 8;  // 64 warps per SM: all resident
  const uint32_t blocks = uint32_t(want < cap ? want : cap);
  SweepKernel<<<blocks == 0 ? 1 : blocks, kBlockThreads, 0, stream>>>(table, now, list, capacity,
                                                                       totals);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
