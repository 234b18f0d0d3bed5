// Device helpers of kvcg-bench-gpu: the ARB generator (batches built in
// device memory, so the kernel benchmark measures the kernel alone) and the
// random-read bounds (DESIGN.md §5) measured on the table's own memory.
#include <cuda_runtime.h>

#include "bench_kernels.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/window_types.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::bench {
namespace {

__device__ __forceinline__ uint64_t Fmix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

__global__ void GenKernel(uint32_t n, uint64_t first, int key_log2, uint32_t put_per_mille,
                          uint64_t seed, bool sequential, uint64_t* hash, uint64_t* key,
                          uint64_t* ctl, uint64_t* value) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint64_t r = Fmix(seed * 0x9E3779B97F4A7C15ull + first + i);
  const uint64_t space_mask = (1ull << key_log2) - 1;
  const uint64_t index =
      sequential ? first + i : PermuteKeyIndex((first + i) & space_mask, key_log2);
  const uint64_t k = BenchKey(index);
  const bool put = sequential || (Fmix(r) % 1000) < put_per_mille;
  key[i] = k;
  hash[i] = store::gpu::Xxh3Fixed8(k);
  // Group 0: the only op on its key in the batch (keys are distinct), so
  // nothing waits and no numbering is needed.
  ctl[i] = store::gpu::MakeCtl(put ? store::gpu::kOpPut : store::gpu::kOpGet, false, 0, 0);
  value[i] = put ? r : 0;
}

__global__ void RandomRead8(const uint64_t* buf, uint64_t words, uint64_t seed, int per_thread,
                            uint64_t* sink) {
  const uint64_t t = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  uint64_t acc = 0;
#pragma unroll 4
  for (int j = 0; j < per_thread; ++j) {
    const uint64_t idx = Fmix(seed + t * 64 + j) % words;
    acc ^= __ldcg(reinterpret_cast<const unsigned long long*>(buf + idx));
  }
  if (acc == 0x123456789ull) *sink = acc;
}

// One warp reads one random 256-byte slab half (lane i: word i), as a probe does.
__global__ void RandomSlab256(const uint64_t* buf, uint64_t slabs, uint64_t seed, int per_warp,
                              uint64_t* sink) {
  const uint64_t warp = (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) / 32;
  const uint32_t lane = threadIdx.x & 31;
  uint64_t acc = 0;
#pragma unroll 4
  for (int j = 0; j < per_warp; ++j) {
    const uint64_t s = Fmix(seed + warp * 64 + j) % slabs;
    acc ^= __ldcg(reinterpret_cast<const unsigned long long*>(buf + s * 64 + lane));
  }
  if (acc == 0x123456789ull) *sink = acc;
}

// A tile of 4 lanes reads one random 64-byte window (lane i: bytes 16 i ..
// 16 i + 15), as a window-table probe does.
__global__ void RandomWindow64(const uint64_t* buf, uint64_t windows, uint64_t seed, int per_tile,
                               uint64_t* sink) {
  const uint64_t tile = (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) / 4;
  const uint32_t lane = threadIdx.x & 3;
  uint64_t acc = 0;
#pragma unroll 4
  for (int j = 0; j < per_tile; ++j) {
    const uint64_t w = Fmix(seed + tile * 64 + j) % windows;
    const ulonglong2 v = __ldcg(reinterpret_cast<const ulonglong2*>(buf + w * 8 + 2 * lane));
    acc ^= v.x ^ v.y;
  }
  if (acc == 0x123456789ull) *sink = acc;
}

// A GET on a window table of (hash, record) slots for the general layout:
// a tile of 4 lanes reads one random 64-byte window, then the 128-byte key
// record (header, 16 key bytes, the 64-byte value copy) its slot names,
// 32 bytes per lane. The record's index is taken from the window's first
// word (lane 0's), so the second read waits for the first, as a GET's does.
__global__ void RandomWindowThenRecord(const uint64_t* windows_buf, uint64_t windows,
                                       const uint64_t* records_buf, uint64_t records,
                                       uint64_t seed, int per_tile, uint64_t* sink) {
  const uint64_t tile = (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) / 4;
  const uint32_t lane = threadIdx.x & 3, tb = threadIdx.x & 31 & ~3u;
  uint64_t acc = 0;
#pragma unroll 1
  for (int j = 0; j < per_tile; ++j) {
    const uint64_t w = Fmix(seed + tile * 64 + j) % windows;
    const ulonglong2 v =
        __ldcg(reinterpret_cast<const ulonglong2*>(windows_buf + w * 8 + 2 * lane));
    const uint64_t slot = __shfl_sync(~0u, static_cast<unsigned long long>(v.x), int(tb));
    const uint64_t r = Fmix(slot ^ w) % records;
    const ulonglong2* rec = reinterpret_cast<const ulonglong2*>(records_buf + r * 16 + 4 * lane);
    const ulonglong2 a = __ldcg(rec), b = __ldcg(rec + 1);
    acc ^= v.y ^ a.x ^ a.y ^ b.x ^ b.y;
  }
  if (acc == 0x123456789ull) *sink = acc;
}

__global__ void CursorClaims(uint32_t* cursor, uint32_t n, uint32_t chunk, uint32_t* sink) {
  const uint32_t lane = threadIdx.x & 31;
  uint32_t claims = 0;
  while (true) {
    uint32_t b = 0;
    if (lane == 0) b = atomicAdd(cursor, chunk);
    b = __shfl_sync(~0u, b, 0);
    if (b >= n) break;
    ++claims;
  }
  if (claims == ~0u) *sink = claims;
}

// Per stored key of a window table: how many probe steps past its home
// window it sits (a GET that finds it reads that many windows + 1). out:
// sum, keys, max.
__global__ void WindowDisplacement(const uint64_t* slots, uint64_t windows,
                                   unsigned long long* out) {
  const uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (i >= windows * store::gpu::kWindowSlots) return;
  const uint64_t k = slots[2 * i];
  if (k >= store::gpu::kTombKey) return;
  const uint64_t h = store::gpu::Xxh3Fixed8(k);
  const uint64_t step = store::gpu::ProbeStep(h, windows);
  const uint64_t w = i / store::gpu::kWindowSlots;
  uint64_t at = store::gpu::HomeWindow(h, windows), d = 0;
  while (at != w && d < windows) {
    at = store::gpu::NextWindow(at, step, windows);
    ++d;
  }
  atomicAdd(&out[0], (unsigned long long)d);
  atomicAdd(&out[1], 1ull);
  atomicMax(&out[2], (unsigned long long)d);
}

}  // namespace

cudaError_t MeasureWindowDisplacement(const uint64_t* slots, uint64_t windows,
                                      unsigned long long* out, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(out, 0, 24, stream);
  if (err != cudaSuccess) return err;
  const uint64_t n = windows * store::gpu::kWindowSlots;
  WindowDisplacement<<<uint32_t((n + 255) / 256), 256, 0, stream>>>(slots, windows, out);
  return cudaGetLastError();
}

cudaError_t LaunchRandomWindow64(const uint64_t* buf, uint64_t windows, uint64_t tiles,
                                 int per_tile, uint64_t seed, uint64_t* sink, cudaStream_t stream) {
  RandomWindow64<<<uint32_t(tiles * 4 / 256), 256, 0, stream>>>(buf, windows, seed, per_tile, sink);
  return cudaGetLastError();
}

cudaError_t LaunchRandomWindowThenRecord(const uint64_t* windows_buf, uint64_t windows,
                                        const uint64_t* records_buf, uint64_t records,
                                        uint64_t tiles, int per_tile, uint64_t seed,
                                        uint64_t* sink, cudaStream_t stream) {
  RandomWindowThenRecord<<<uint32_t(tiles * 4 / 256), 256, 0, stream>>>(
      windows_buf, windows, records_buf, records, seed, per_tile, sink);
  return cudaGetLastError();
}

cudaError_t LaunchCursorClaims(uint32_t* cursor, uint32_t n, uint32_t chunk, uint32_t blocks,
                               uint32_t* sink, cudaStream_t stream) {
  CursorClaims<<<blocks, 256, 0, stream>>>(cursor, n, chunk, sink);
  return cudaGetLastError();
}

cudaError_t GenerateArb(uint32_t n, uint64_t first, int key_log2, uint32_t put_per_mille,
                        uint64_t seed, bool sequential, uint64_t* hash, uint64_t* key,
                        uint64_t* ctl, uint64_t* value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  GenKernel<<<(n + 255) / 256, 256, 0, stream>>>(n, first, key_log2, put_per_mille, seed,
                                                 sequential, hash, key, ctl, value);
  return cudaGetLastError();
}

cudaError_t LaunchRandomRead8(const uint64_t* buf, uint64_t words, uint64_t threads,
                              int per_thread, uint64_t seed, uint64_t* sink, cudaStream_t stream) {
  RandomRead8<<<uint32_t(threads / 256), 256, 0, stream>>>(buf, words, seed, per_thread, sink);
  return cudaGetLastError();
}

cudaError_t LaunchRandomSlab256(const uint64_t* buf, uint64_t slabs, uint64_t warps, int per_warp,
                                uint64_t seed, uint64_t* sink, cudaStream_t stream) {
  RandomSlab256<<<uint32_t(warps * 32 / 256), 256, 0, stream>>>(buf, slabs, seed, per_warp, sink);
  return cudaGetLastError();
}

}  // namespace kvcg::bench
