// Snapshot kernels (snapshot_kernels.h): count, then dump, the L-Slab table
// (general layout).
//
// Parallelization: one warp per bucket chain (grid-stride over buckets), the
// L-Slab kernel's own unit. Per slab, lane l owns slot l (lane 31 the meta
// word): the occupancy bitmap is read by every lane (one broadcast load), so
// the chain walk is warp-uniform and every shuffle below runs with all 32
// lanes converged. Entries of one slab are placed together: lane 0 takes
// the slab's bytes from the image cursor with one atomicAdd, and each lane
// writes at its exclusive prefix inside them, so writes to host memory are
// contiguous runs. Records are copied word by word: by their own lane when
// every record of the slab is small (the common case: keys up to 48 bytes),
// else by the whole warp, one record after another (keys up to
// max_key_bytes).
//
// Races: none. The table is not written while these run (the pipeline runs
// them alone); every image byte range is handed out once by the atomic
// cursor; totals are updated with atomics only. Bounds: a range that would
// pass the image's end is not written (overflow flag instead), so a count
// that disagreed with the dump could never write out of bounds.
#include <cuda_runtime.h>

#include "store/gpu/grid_size.h"
#include "store/gpu/snapshot_kernels.h"

namespace kvcg::store::gpu {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kBlockThreads = kSnapshotBlockThreads;
constexpr uint32_t kWarpsPerBlock = kBlockThreads / 32;
constexpr uint32_t kSlotMask = (1u << kSlotsPerSlab) - 1;  // bitmap bits of meta
constexpr uint32_t kSmallRecordWords = 8;                  // per-lane copy up to this

// Table words through L2 (as the L-Slab kernel reads them).
__device__ __forceinline__ uint64_t Ld(const uint64_t* p) {
  return __ldcg(reinterpret_cast<const unsigned long long*>(p));
}

__device__ __forceinline__ const uint64_t* PoolSlab(const TableView& t, uint32_t idx) {
  const uint64_t* chunk = reinterpret_cast<const uint64_t*>(
      __ldcg(reinterpret_cast<const unsigned long long*>(t.chunks + (idx >> kPoolChunkShift))));
  return chunk + uint64_t(idx & (kPoolChunkSlabs - 1)) * kSlabWords;
}

__device__ __forceinline__ uint64_t WarpSum(uint64_t v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(kFull, v, d);
  return v;
}

__device__ __forceinline__ uint64_t WarpInclusiveScan(uint64_t v, uint32_t lane) {
#pragma unroll
  for (uint32_t d = 1; d < 32; d <<= 1) {
    const uint64_t up = __shfl_up_sync(kFull, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// The key record of slot `lane` of `slab` (meta word `meta`), and its
// image bytes: 0 if the slot is empty, the lane is 31 or the entry expired
// at `now` (its expire-at is read only in a slab with the volatile hint).
__device__ __forceinline__ uint64_t RecordOf(const uint64_t* slab, uint64_t meta, bool occupied,
                                             uint32_t lane, uint64_t now, const uint64_t** rec) {
  *rec = nullptr;
  if (!occupied) return 0;
  const uint64_t* r = reinterpret_cast<const uint64_t*>(Ld(slab + 32 + lane));
  if (meta & kVolatileBit) {
    const uint64_t exp = Ld(r + kRecordExpireWord);
    if (exp != 0 && exp <= now) return 0;
  }
  *rec = r;
  return SnapshotEntryBytes(true, uint32_t(Ld(r + 1)));
}

__global__ void __launch_bounds__(kBlockThreads)
    CountKernel(TableView t, uint64_t begin, uint64_t end, uint64_t now, SnapshotTotals* totals) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t first = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t stride = uint64_t(gridDim.x) * kWarpsPerBlock;
  uint64_t entries = 0, bytes = 0;  // identical in every lane
  for (uint64_t b = begin + first; b < end; b += stride) {
    const uint64_t* slab = t.buckets + b * kSlabWords;
    while (true) {
      const uint64_t meta = Ld(slab + kMetaWord);
      const uint32_t occupied = uint32_t(meta) & kSlotMask;
      const uint64_t* rec;
      const uint64_t size =
          RecordOf(slab, meta, lane < kSlotsPerSlab && ((occupied >> lane) & 1), lane, now, &rec);
      entries += uint32_t(__popc(__ballot_sync(kFull, size != 0)));
      bytes += WarpSum(size);
      const uint32_t next = uint32_t(meta >> 32);
      if (next == 0) break;
      slab = PoolSlab(t, next);
    }
  }
  if (lane == 0 && entries != 0) {
    atomicAdd(&totals->entries, (unsigned long long)entries);
    atomicAdd(&totals->bytes, (unsigned long long)bytes);
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    DumpKernel(TableView t, uint64_t begin, uint64_t end, uint64_t now, uint64_t* image,
               unsigned long long image_bytes, SnapshotTotals* totals) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t first = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t stride = uint64_t(gridDim.x) * kWarpsPerBlock;
  uint64_t dumped = 0;  // identical in every lane
  for (uint64_t b = begin + first; b < end; b += stride) {
    const uint64_t* slab = t.buckets + b * kSlabWords;
    while (true) {
      const uint64_t meta = Ld(slab + kMetaWord);
      uint32_t occupied = uint32_t(meta) & kSlotMask;
      if (occupied != 0) {
        const bool mine = lane < kSlotsPerSlab && ((occupied >> lane) & 1);
        const uint64_t* rec = nullptr;
        const uint64_t size = RecordOf(slab, meta, mine, lane, now, &rec);  // this lane's bytes
        occupied = __ballot_sync(kFull, size != 0);  // expired entries are left out
        const uint32_t count = uint32_t(__popc(occupied));
        const uint64_t end = WarpInclusiveScan(size, lane);
        const uint64_t at = end - size;  // this lane's offset inside the slab's range
        const uint64_t total = __shfl_sync(kFull, end, 31);
        unsigned long long base = 0;
        if (lane == 0) base = atomicAdd(&totals->cursor, (unsigned long long)total);
        base = __shfl_sync(kFull, base, 0);
        if (base + total > image_bytes || base + total < base) {
          if (lane == 0) atomicExch(&totals->overflow, 1ull);
        } else {
          const uint32_t words = uint32_t(size / 8);
          if (__reduce_max_sync(kFull, words) <= kSmallRecordWords) {
            uint64_t* dst = image + (base + at) / 8;
            for (uint32_t w = 0; w < words; ++w) dst[w] = Ld(rec + w);
          } else {
            uint32_t todo = occupied;
            while (todo != 0) {
              const int j = __ffs(todo) - 1;
              todo &= todo - 1;
              const uint64_t* src = reinterpret_cast<const uint64_t*>(
                  __shfl_sync(kFull, reinterpret_cast<unsigned long long>(rec), j));
              const uint32_t n = __shfl_sync(kFull, words, j);
              uint64_t* dst = image + (base + __shfl_sync(kFull, at, j)) / 8;
              for (uint32_t w = lane; w < n; w += 32) dst[w] = Ld(src + w);
            }
          }
        }
        dumped += count;
      }
      const uint32_t next = uint32_t(meta >> 32);
      if (next == 0) break;
      slab = PoolSlab(t, next);
    }
  }
  if (lane == 0 && dumped != 0) atomicAdd(&totals->dumped, (unsigned long long)dumped);
}

}  // namespace

cudaError_t SnapshotBlocks(uint64_t warps, uint32_t* blocks) {
  return GridStrideBlocks(warps, kWarpsPerBlock, 8, blocks);
}

cudaError_t SnapshotCount(const TableView& table, BucketRange range, uint64_t now,
                          SnapshotTotals* totals, cudaStream_t stream) {
  static_assert(sizeof(SnapshotTotals) == 64);
  uint32_t blocks = 0;
  cudaError_t err = SnapshotBlocks(range.end - range.begin, &blocks);
  if (err == cudaSuccess) err = cudaMemsetAsync(totals, 0, sizeof(SnapshotTotals), stream);
  if (err != cudaSuccess) return err;
  CountKernel<<<blocks, kBlockThreads, 0, stream>>>(table, range.begin, range.end, now, totals);
  return cudaGetLastError();
}

cudaError_t SnapshotDump(const TableView& table, BucketRange range, uint64_t now, char* image,
                         uint64_t image_bytes, SnapshotTotals* totals, cudaStream_t stream) {
  uint32_t blocks = 0;
  cudaError_t err = SnapshotBlocks(range.end - range.begin, &blocks);
  if (err != cudaSuccess) return err;
  uint64_t* words = reinterpret_cast<uint64_t*>(image);
  DumpKernel<<<blocks, kBlockThreads, 0, stream>>>(table, range.begin, range.end, now, words,
                                                   image_bytes, totals);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
