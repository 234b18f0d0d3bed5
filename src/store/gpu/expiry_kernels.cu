// The expiry sweep kernel (expiry_kernels.h).
//
// Parallelization: one warp per bucket chain, grid-stride over runs of 32
// buckets whose head meta words the lanes read at once (SweepKernel). Per
// slab, lane l owns slot l (l < 31); the meta
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
// (listed may exceed the capacity; the host reads min(listed, capacity).)
#include <cuda_runtime.h>

#include "store/gpu/expiry_kernels.h"
#include "store/gpu/grid_size.h"
#include "store/gpu/lslab_device.cuh"

namespace kvcg::store::gpu {
namespace {

constexpr int kBlockThreads = 256;
constexpr uint32_t kWarpsPerBlock = kBlockThreads / 32;
constexpr uint32_t kSlotMask = (1u << kSlotsPerSlab) - 1;


// Warp-uniform sums of one warp's sweep (lane 0 publishes them).
struct WarpSums {
  uint64_t removed = 0, charge = 0, ttl_n = 0, slabs = 0, hinted = 0;
  double ttl_sum = 0;
  bool more = false;
};

// The whole warp: sweeps one slab whose meta word is `meta`.
__device__ void SweepSlab(const TableView& t, uint64_t* slab, uint64_t meta, uint64_t now,
                          Reclaimed* list, uint64_t capacity, SweepTotals* totals, uint32_t lane,
                          WarpSums& sum) {
  ++sum.slabs;
  if ((meta & kVolatileBit) == 0) return;
  ++sum.hinted;
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
    if (lane == 0) base = ReserveList(&totals->listed, capacity, n);
    base = __shfl_sync(kFull, base, 0);
    if (base == ~0ull || base + n > capacity) {
      sum.more = true;  // left in place for the next sweep
      gone = 0;
      if (base != ~0ull && lane < n && base + lane < capacity) list[base + lane].rec = 0;
    } else if (expired) {
      Reclaimed& r = list[base + __popc(gone & ((1u << lane) - 1))];
      r.rec = reinterpret_cast<uint64_t>(rec);
      r.blob = Ld(rec);
      r.lens = lens;
    }
  }
  const bool unlinked = (gone >> lane) & 1;
  // Still volatile: every kept key with an expire-at, an expired one that
  // did not fit the list included (it keeps the hint, but has no TTL left).
  const uint32_t still = __ballot_sync(kFull, mine && exp != 0 && !unlinked);
  if (gone != 0) {
    sum.charge += WarpSum(unlinked ? uint64_t(uint32_t(lens)) + (lens >> 32) + t.entry_overhead : 0);
    sum.removed += __popc(gone);
  }
  const bool live = mine && exp != 0 && !expired;
  sum.ttl_sum += WarpSum(live ? double(exp - now) : 0.0);
  sum.ttl_n += __popc(__ballot_sync(kFull, live));
  uint64_t next_meta = meta & ~uint64_t(gone);
  if (still == 0) next_meta &= ~kVolatileBit;  // nothing volatile left here
  if (lane == 0 && next_meta != meta) St(slab + kMetaWord, next_meta);
}

// A warp takes 32 buckets at a time: each lane reads one head slab's meta
// word (32 independent loads in flight instead of one), and only buckets
// with the volatile hint or an overflow chain are visited slab by slab. A
// table without TTLs thus costs about one load round trip per 32 buckets.
__global__ void __launch_bounds__(kBlockThreads)
    SweepKernel(TableView t, uint64_t now, Reclaimed* list, uint64_t capacity, SweepTotals* totals) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t warps = uint64_t(gridDim.x) * kWarpsPerBlock;
  const uint64_t buckets = 1ull << t.bucket_bits;
  WarpSums sum;
  for (uint64_t b0 = warp * 32; b0 < buckets; b0 += warps * 32) {
    const uint64_t mb = b0 + lane;
    const uint64_t m = mb < buckets ? Ld(t.buckets + mb * kSlabWords + kMetaWord) : 0;
    uint32_t todo = __ballot_sync(kFull, (m & kVolatileBit) != 0 || (m >> 32) != 0);
    sum.slabs += __popc(__ballot_sync(kFull, mb < buckets)) - __popc(todo);  // skipped heads
    while (todo != 0) {
      const int j = __ffs(todo) - 1;
      todo &= todo - 1;
      uint64_t* slab = t.buckets + (b0 + uint64_t(j)) * kSlabWords;
      uint64_t meta = __shfl_sync(kFull, m, j);
      while (true) {
        SweepSlab(t, slab, meta, now, list, capacity, totals, lane, sum);
        const uint32_t next = uint32_t(meta >> 32);
        if (next == 0) break;
        slab = PoolSlab(t, next);
        meta = Ld(slab + kMetaWord);
      }
    }
  }
  if (lane != 0) return;
  DeviceCounters* c = t.counters;
  if (sum.removed != 0) {
    ReleaseCounter(&c->keys, sum.removed);
    ReleaseCounter(&c->mem_bytes, sum.charge);
    ReleaseCounter(&c->volatile_keys, sum.removed);
    atomicAdd(&c->expired_keys, (unsigned long long)sum.removed);
    atomicAdd(&totals->removed, (unsigned long long)sum.removed);
  }
  if (sum.ttl_n != 0) {
    atomicAdd(&totals->ttl_sum, sum.ttl_sum);
    atomicAdd(&totals->ttl_n, (unsigned long long)sum.ttl_n);
  }
  atomicAdd(&totals->slabs, (unsigned long long)sum.slabs);
  if (sum.hinted != 0) atomicAdd(&totals->hinted, (unsigned long long)sum.hinted);
  if (sum.more) atomicExch(&totals->more, 1ull);
}

}  // namespace

cudaError_t SweepExpired(const TableView& table, uint64_t now, Reclaimed* list, uint64_t capacity,
                         SweepTotals* totals, cudaStream_t stream) {
  // Enough warps to fill the device several times over (a chain walk is a
  // string of dependent loads: many in flight hide them); grid-stride beyond.
  // 32 buckets a warp; 8 blocks, 64 warps, per SM: all resident.
  const uint64_t buckets = 1ull << table.bucket_bits;
  uint32_t blocks = 1;
  cudaError_t err = GridStrideBlocks(buckets / 32, kWarpsPerBlock, 8, &blocks);
  if (err == cudaSuccess) err = cudaMemsetAsync(totals, 0, sizeof(SweepTotals), stream);
  if (err != cudaSuccess) return err;
  SweepKernel<<<blocks, kBlockThreads, 0, stream>>>(table, now, list, capacity, totals);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
