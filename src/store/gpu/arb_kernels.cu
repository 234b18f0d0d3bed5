// ARB prepare kernels (arb_kernels.h explains the steps; the device
// functions are in arb_prepare.cuh).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "store/gpu/arb_prepare.cuh"

namespace kvcg::store::gpu {
namespace {

template <int kItems>
__global__ void __launch_bounds__(kThreads) SmallPrepareKernel(ArbDev a) {
  SmallPrepare<kItems>(a);
}

// --- Large ARBs: grid kernels around device-wide cub sort and scans.
__global__ void NormalizeKernel(ArbDev a) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) {
    NormalizeOp(a, i);
    a.hkey[i] = uint32_t(a.hash[i] >> 32);
  }
  if (i == 0) InitHeader(a);
}

__global__ void ScatterKernel(ArbDev a) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  ScatterPut(a, j);
}

__global__ void MarkKernel(ArbDev a) {
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= a.n) return;
  const uint32_t h = a.sorted_hkey[p];
  a.marks[p] = make_int2(p == 0 || a.sorted_hkey[p - 1] != h ? int(p) : 0,
                         IsWriter(a.type[a.idx_out[p]]) ? int(p) : -1);
}

__global__ void CtlKernel(ArbDev a) {
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= a.n) return;
  const uint32_t h = a.sorted_hkey[p];
  const int2 m = a.marks_scan[p];
  const uint32_t s = uint32_t(m.x);
  const bool alone = s == p && (p + 1 == a.n || a.sorted_hkey[p + 1] != h);
  WriteCtl(a, a.idx_out[p], p, s, m.y, alone);
}

uint32_t Blocks(uint32_t n) { return (n + kThreads - 1) / kThreads; }

}  // namespace

cudaError_t ArbTempBytes(uint32_t n, size_t* bytes) {
  size_t sort = 0, scan = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, sort, (const uint32_t*)nullptr,
                                                    (uint32_t*)nullptr, (const uint32_t*)nullptr,
                                                    (uint32_t*)nullptr, n);
  if (err != cudaSuccess) return err;
  err = cub::DeviceScan::InclusiveScan(nullptr, scan, (const int2*)nullptr, (int2*)nullptr,
                                       MaxInt2{}, int(n));
  *bytes = sort > scan ? sort : scan;
  return err;
}

cudaError_t ArbPrepare(const ArbDev& a, cudaStream_t stream) {
  if (a.stage != nullptr && a.n > kSmallArbOps) return cudaErrorInvalidValue;
  if (a.n <= kSmallArbOps) {
    if (a.n <= kThreads) {
      SmallPrepareKernel<1><<<1, kThreads, 0, stream>>>(a);
    } else if (a.n <= 2 * kThreads) {
      SmallPrepareKernel<2><<<1, kThreads, 0, stream>>>(a);
    } else if (a.n <= 4 * kThreads) {
      SmallPrepareKernel<4><<<1, kThreads, 0, stream>>>(a);
    } else {
      SmallPrepareKernel<8><<<1, kThreads, 0, stream>>>(a);
    }
    return cudaGetLastError();
  }
  NormalizeKernel<<<Blocks(a.n), kThreads, 0, stream>>>(a);
  const uint32_t scatter = a.put_count > a.write_count ? a.put_count : a.write_count;
  if (scatter != 0) ScatterKernel<<<Blocks(scatter), kThreads, 0, stream>>>(a);
  size_t bytes = a.temp_bytes;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(a.temp, bytes, a.hkey, a.sorted_hkey, a.idx_in,
                                                    a.idx_out, a.n, 0, 32, stream);
  if (err != cudaSuccess) return err;
  MarkKernel<<<Blocks(a.n), kThreads, 0, stream>>>(a);
  bytes = a.temp_bytes;
  err = cub::DeviceScan::InclusiveScan(a.temp, bytes, a.marks, a.marks_scan, MaxInt2{}, int(a.n),
                                       stream);
  if (err != cudaSuccess) return err;
  CtlKernel<<<Blocks(a.n), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
