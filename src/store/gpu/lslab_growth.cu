// The L-Slab table's growth kernels (lslab_growth.h).
//
// Parallelization: the two passes over the old table walk one chain per
// warp, lane l owning slot l of each slab (as the expiry sweep does: the
// meta word is a broadcast load, so the walk is warp-uniform); the copy
// reserves its range of the flat columns with one atomicAdd per slab. The
// passes over entries and new buckets are one thread each.
//
// Races: none that matter. No other kernel touches either table meanwhile
// (the caller's guarantee); (4) writes only meta words, (5) only key and
// value words, access bytes, and the volatile hint with an atomicOr on the
// meta word (two entries of one slab may both set it); each entry's slot
// comes from an atomic countdown on its bucket, so no two share one.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include "store/gpu/grid_size.h"
#include "store/gpu/lslab_device.cuh"
#include "store/gpu/lslab_growth.h"

namespace kvcg::store::gpu {
namespace {

constexpr int kBlockThreads = 256;
constexpr uint32_t kWarpsPerBlock = kBlockThreads / 32;
constexpr uint32_t kSlotMask = (1u << kSlotsPerSlab) - 1;

uint32_t Blocks(uint64_t threads, uint32_t cap_per_sm) {
  uint32_t blocks = 1;
  GridStrideBlocks(threads, kBlockThreads, cap_per_sm, &blocks);  // one SM if unreadable
  return blocks;
}

// One warp per chain (grid-stride over buckets). kCopy false: counts the
// occupied slots into *cursor; true: copies them to e at ranges reserved
// on *cursor.
template <bool kCopy>
__global__ void __launch_bounds__(kBlockThreads)
    WalkKernel(TableView t, GrowEntries e, uint64_t capacity, unsigned long long* cursor) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t warps = uint64_t(gridDim.x) * kWarpsPerBlock;
  const uint64_t buckets = 1ull << t.bucket_bits;
  uint64_t counted = 0;
  for (uint64_t b = warp; b < buckets; b += warps) {
    uint64_t* slab = t.buckets + b * kSlabWords;
    uint32_t idx = 0;  // pool index of `slab`, 0 for the head
    while (true) {
      const uint64_t meta = Ld(slab + kMetaWord);
      const uint32_t occupied = uint32_t(meta) & kSlotMask;
      if (!kCopy) {
        counted += __popc(occupied);
      } else if (occupied != 0) {
        unsigned long long base = 0;
        if (lane == 0) base = atomicAdd(cursor, (unsigned long long)__popc(occupied));
        base = __shfl_sync(kFull, base, 0);
        if (lane < kSlotsPerSlab && ((occupied >> lane) & 1)) {
          const uint64_t at = base + __popc(occupied & ((1u << lane) - 1));
          if (at < capacity) {
            e.hash[at] = Ld(slab + lane);
            e.record[at] = Ld(slab + 32 + lane) | ((meta & kVolatileBit) != 0 ? 1 : 0);
            e.access[at] = *AccessByte(t, b, idx, int(lane));
          }
        }
      }
      idx = uint32_t(meta >> 32);
      if (idx == 0) break;
      slab = PoolSlab(t, idx);
    }
  }
  if (!kCopy && lane == 0 && counted != 0) atomicAdd(cursor, (unsigned long long)counted);
}

__global__ void CountNewKernel(GrowEntries e, uint64_t n, uint32_t new_bits, uint32_t* counts) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    atomicAdd(counts + BucketOf(e.hash[i], new_bits), 1u);
  }
}

__device__ __forceinline__ uint32_t SlabsFor(uint32_t entries) {
  return entries <= kSlotsPerSlab ? 1 : (entries + kSlotsPerSlab - 1) / kSlotsPerSlab;
}

__global__ void OverflowKernel(const uint32_t* counts, uint64_t buckets, uint32_t* overflow) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t b = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; b <= buckets; b += stride) {
    overflow[b] = b == buckets ? 0 : SlabsFor(counts[b]) - 1;
  }
}

// Slab k of new bucket b's chain: the head (k = 0) or pool slab
// first_pool + first[b] + k - 1; *idx gets its pool index (0: the head).
__device__ __forceinline__ uint64_t* ChainSlab(const TableView& t, uint64_t b, uint32_t k,
                                               const uint32_t* first, uint32_t first_pool,
                                               uint32_t* idx) {
  if (k == 0) {
    *idx = 0;
    return t.buckets + b * kSlabWords;
  }
  *idx = first_pool + first[b] + k - 1;
  return PoolSlab(t, *idx);
}

__global__ void LinkKernel(TableView t, const uint32_t* counts, const uint32_t* first,
                           uint32_t first_pool) {
  const uint64_t buckets = 1ull << t.bucket_bits;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t b = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < buckets; b += stride) {
    const uint32_t c = counts[b];
    const uint32_t slabs = SlabsFor(c);
    for (uint32_t k = 0; k < slabs; ++k) {
      uint32_t idx;
      uint64_t* slab = ChainSlab(t, b, k, first, first_pool, &idx);
      const uint32_t filled = c - k * kSlotsPerSlab < kSlotsPerSlab ? c - k * kSlotsPerSlab
                                                                    : kSlotsPerSlab;
      const uint32_t bitmap = filled == kSlotsPerSlab ? kSlotMask : (1u << filled) - 1;
      const uint64_t next = k + 1 < slabs ? uint64_t(first_pool + first[b] + k) : 0;
      St(slab + kMetaWord, (next << 32) | bitmap);
    }
  }
}

__global__ void PlaceKernel(TableView t, GrowEntries e, uint64_t n, uint32_t* counts,
                            const uint32_t* first, uint32_t first_pool) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t hash = e.hash[i];
    const uint64_t b = BucketOf(hash, t.bucket_bits);
    const uint32_t pos = atomicSub(counts + b, 1u) - 1;
    const uint32_t k = pos / kSlotsPerSlab, slot = pos % kSlotsPerSlab;
    uint32_t idx;
    uint64_t* slab = ChainSlab(t, b, k, first, first_pool, &idx);
    const uint64_t record = e.record[i];
    St(slab + slot, hash);
    St(slab + 32 + slot, record & ~1ull);
    *AccessByte(t, b, idx, int(slot)) = e.access[i];
    if (record & 1) {
      atomicOr(reinterpret_cast<unsigned long long*>(slab + kMetaWord),
               (unsigned long long)kVolatileBit);
    }
  }
}

}  // namespace

cudaError_t GrowCountEntries(const TableView& t, unsigned long long* count, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(count, 0, sizeof(*count), stream);
  if (err != cudaSuccess) return err;
  const uint64_t buckets = 1ull << t.bucket_bits;
  WalkKernel<false><<<Blocks(buckets * 32, 8), kBlockThreads, 0, stream>>>(t, GrowEntries{}, 0,
                                                                            count);
  return cudaGetLastError();
}

cudaError_t GrowGatherEntries(const TableView& t, GrowEntries e, uint64_t capacity,
                              unsigned long long* cursor, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(cursor, 0, sizeof(*cursor), stream);
  if (err != cudaSuccess) return err;
  const uint64_t buckets = 1ull << t.bucket_bits;
  WalkKernel<true><<<Blocks(buckets * 32, 8), kBlockThreads, 0, stream>>>(t, e, capacity, cursor);
  return cudaGetLastError();
}

cudaError_t GrowCountNewBuckets(GrowEntries e, uint64_t n, uint32_t new_bits, uint32_t* counts,
                                cudaStream_t stream) {
  const uint64_t buckets = 1ull << new_bits;
  cudaError_t err = cudaMemsetAsync(counts, 0, (buckets + 1) * sizeof(uint32_t), stream);
  if (err != cudaSuccess || n == 0) return err;
  CountNewKernel<<<Blocks(n, 32), kBlockThreads, 0, stream>>>(e, n, new_bits, counts);
  return cudaGetLastError();
}

size_t GrowScanTempBytes(uint32_t new_bits) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                static_cast<uint32_t*>(nullptr), (1ull << new_bits) + 1);
  return bytes;
}

cudaError_t GrowScanOverflow(const uint32_t* counts, uint32_t new_bits, uint32_t* overflow,
                             uint32_t* first, void* temp, size_t temp_bytes, cudaStream_t stream) {
  const uint64_t buckets = 1ull << new_bits;
  OverflowKernel<<<Blocks(buckets + 1, 32), kBlockThreads, 0, stream>>>(counts, buckets, overflow);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, overflow, first, buckets + 1, stream);
}

cudaError_t GrowLinkChains(const TableView& t, const uint32_t* counts, const uint32_t* first,
                           uint32_t first_pool, cudaStream_t stream) {
  const uint64_t buckets = 1ull << t.bucket_bits;
  LinkKernel<<<Blocks(buckets, 32), kBlockThreads, 0, stream>>>(t, counts, first, first_pool);
  return cudaGetLastError();
}

cudaError_t GrowPlaceEntries(const TableView& t, GrowEntries e, uint64_t n, uint32_t* counts,
                             const uint32_t* first, uint32_t first_pool, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  PlaceKernel<<<Blocks(n, 32), kBlockThreads, 0, stream>>>(t, e, n, counts, first, first_pool);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
