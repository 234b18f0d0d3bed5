// Bulk path kernels: hashing, same-key numbering by sort + scans, result
// translation (bulk_kernels.h explains the numbering).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "store/gpu/bulk_kernels.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {

constexpr int kThreads = 256;

struct MaxInt {
  __device__ __forceinline__ int operator()(int a, int b) const { return a > b ? a : b; }
};

__global__ void InitKernel(BulkChunkDev c, bool hash_on_device, int allowance) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < c.n) {
    c.idx_in[i] = i;
    if (hash_on_device) c.hash[i] = Xxh3Fixed8(c.keys[i]);
  }
  if (i <= c.n) c.done[i] = 0;
  if (i == 0) {
    c.hdr[0] = 0;
    c.hdr[1] = uint32_t(allowance);
    c.hdr[2] = 0;
    c.hdr[3] = 0;
  }
}

__device__ __forceinline__ bool IsWriter(uint8_t type) { return type != kOpGet; }

__global__ void MarkKernel(BulkChunkDev c) {
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= c.n) return;
  const uint64_t k = c.sorted_keys[p];
  c.seg[p] = p == 0 || c.sorted_keys[p - 1] != k ? int(p) : 0;
  c.lastw[p] = IsWriter(c.types[c.idx_out[p]]) ? int(p) : -1;
}

__global__ void CtlKernel(BulkChunkDev c) {
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= c.n) return;
  const uint32_t op = c.idx_out[p];
  const uint8_t type = c.types[op];
  const uint64_t k = c.sorted_keys[p];
  const uint32_t s = uint32_t(c.seg_scan[p]);
  const bool alone = s == p && (p + 1 == c.n || c.sorted_keys[p + 1] != k);
  uint32_t group = 0, need = 0;
  if (!alone) {
    group = s + 1;
    if (IsWriter(type)) {
      need = p - s;
    } else {
      const int w = c.lastw_scan[p];
      need = w >= int(s) ? uint32_t(w) - s + 1 : 0;
    }
  }
  c.ctl[op] = MakeCtl(type, false, group, need);
}

__global__ void TranslateKernel(BulkChunkDev c) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= c.n) return;
  const uint8_t r = c.res_code[i] & 0x7f;
  uint8_t out;
  switch (r) {
    case kResOk: out = 0; break;          // Code::kOk
    case kResNotFound: out = 1; break;    // Code::kNotFound
    case kResCapacity: out = 5; break;    // Code::kCapacityExhausted
    case kResRetryNoSlab: out = kBulkRetryNoSlab; break;
    case kResRetryPoisoned: out = kBulkRetryPoisoned; break;
    default: out = 8; break;              // Code::kInternal
  }
  if (out >= kBulkRetryPoisoned) atomicOr(c.hdr + 2, 1u);
  if (r != kResOk) c.res_value[i] = 0;
  c.codes[i] = out;
}

uint32_t Blocks(uint32_t n) { return (n + kThreads - 1) / kThreads; }

}  // namespace

cudaError_t BulkTempBytes(uint32_t capacity, size_t* bytes) {
  size_t sort = 0, scan = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, sort, (const uint64_t*)nullptr,
                                                    (uint64_t*)nullptr, (const uint32_t*)nullptr,
                                                    (uint32_t*)nullptr, capacity);
  if (err != cudaSuccess) return err;
  err = cub::DeviceScan::InclusiveScan(nullptr, scan, (const int*)nullptr, (int*)nullptr, MaxInt{},
                                       int(capacity));
  *bytes = sort > scan ? sort : scan;
  return err;
}

cudaError_t BulkPrepare(const BulkChunkDev& c, bool hash_on_device, int allowance,
                        cudaStream_t stream) {
  InitKernel<<<Blocks(c.n + 1), kThreads, 0, stream>>>(c, hash_on_device, allowance);
  size_t bytes = c.temp_bytes;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(c.temp, bytes, c.keys, c.sorted_keys, c.idx_in,
                                                    c.idx_out, c.n, 0, 64, stream);
  if (err != cudaSuccess) return err;
  MarkKernel<<<Blocks(c.n), kThreads, 0, stream>>>(c);
  bytes = c.temp_bytes;
  err = cub::DeviceScan::InclusiveScan(c.temp, bytes, c.seg, c.seg_scan, MaxInt{}, int(c.n), stream);
  if (err != cudaSuccess) return err;
  bytes = c.temp_bytes;
  err = cub::DeviceScan::InclusiveScan(c.temp, bytes, c.lastw, c.lastw_scan, MaxInt{}, int(c.n),
                                       stream);
  if (err != cudaSuccess) return err;
  CtlKernel<<<Blocks(c.n), kThreads, 0, stream>>>(c);
  return cudaGetLastError();
}

cudaError_t BulkTranslate(const BulkChunkDev& c, cudaStream_t stream) {
  TranslateKernel<<<Blocks(c.n), kThreads, 0, stream>>>(c);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
