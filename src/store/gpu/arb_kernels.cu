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

constexpr int kMediumThreads = 1024;
constexpr int kMediumItems = int(kMediumArbOps) / kMediumThreads;
struct MediumShared {
  PrepareShared<kMediumArbOps> prep;
  SortNumbering<kMediumThreads, kMediumItems>::TempStorage numbering;
};

// The kernel is built for sm_90 only (CMakeLists.txt), whose blocks may
// have up to 227 KB of shared memory.
static_assert(sizeof(MediumShared) <= 227 * 1024, "a medium ARB's prepare fits one block");

__global__ void __launch_bounds__(kMediumThreads) MediumPrepareKernel(ArbDev a) {
  extern __shared__ __align__(16) unsigned char medium_shared[];
  MediumShared& sh = *reinterpret_cast<MediumShared*>(medium_shared);
  OneBlockPrepare<kMediumThreads, kMediumItems>(a, sh.prep, nullptr, &sh.numbering);
}

// --- Large ARBs: grid kernels around device-wide cub sort and scans,
// sized for `cap` ops (LargeArbCapacity) and reading the ARB itself from
// device memory (ArbPrepareLarge). Positions n .. cap are padding: they sort last
// (hash key ~0, index >= n) and are never numbered.
__global__ void NormalizeKernel(const ArbDev* __restrict__ ap, uint32_t cap) {
  const ArbDev& a = *ap;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) {
    NormalizeOp(a, i);
    a.hkey[i] = uint32_t(a.hash[i] >> 32);
  } else if (i < cap) {
    a.hkey[i] = ~0u;
    a.idx_in[i] = i;
  }
  if (i == 0) InitHeader(a);
}

__global__ void ScatterKernel(const ArbDev* __restrict__ ap) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  ScatterPut(*ap, j);
}

__global__ void MarkKernel(const ArbDev* __restrict__ ap, uint32_t cap) {
  const ArbDev& a = *ap;
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= cap) return;
  const uint32_t h = a.sorted_hkey[p];
  const uint32_t op = a.idx_out[p];
  a.marks[p] = make_int2(p == 0 || a.sorted_hkey[p - 1] != h ? int(p) : 0,
                         op < a.n && IsWriter(a.type[op]) ? int(p) : -1);
}

__global__ void CtlKernel(const ArbDev* __restrict__ ap, uint32_t cap) {
  const ArbDev& a = *ap;
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= cap) return;
  const uint32_t op = a.idx_out[p];
  if (op >= a.n) return;  // padding
  const uint32_t h = a.sorted_hkey[p];
  const int2 m = a.marks_scan[p];
  const uint32_t s = uint32_t(m.x);
  const bool alone = s == p && (p + 1 == cap || a.sorted_hkey[p + 1] != h);
  WriteCtl(a, op, p, s, m.y, alone);
}

uint32_t Blocks(uint32_t n) { return (n + kThreads - 1) / kThreads; }

}  // namespace

uint32_t LargeArbCapacity(uint32_t n) {
  if (n <= 4096) return 4096;
  if (n <= 8192) return 8192;
  constexpr uint32_t kStep = 16384;
  return (n + kStep - 1) / kStep * kStep;
}

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
  if (a.n > kMediumArbOps) return cudaErrorInvalidValue;
  if (a.n > kSmallArbOps) {
    if (a.stage != nullptr) return cudaErrorInvalidValue;  // its input is in device memory
    // Past the 48 KB of static shared memory: allowed once per thread (a
    // store's pipeline thread, with the store's device current).
    thread_local cudaError_t allowed = cudaFuncSetAttribute(
        MediumPrepareKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(MediumShared)));
    if (allowed != cudaSuccess) return allowed;
    MediumPrepareKernel<<<1, kMediumThreads, sizeof(MediumShared), stream>>>(a);
    return cudaGetLastError();
  }
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

cudaError_t ArbPrepareLarge(const ArbDev* dev, const ArbDev& a, uint32_t cap,
                            cudaStream_t stream) {
  if (a.stage != nullptr || cap < a.n) return cudaErrorInvalidValue;
  NormalizeKernel<<<Blocks(cap), kThreads, 0, stream>>>(dev, cap);
  // The put list and write ops are at most n long; the kernel checks.
  ScatterKernel<<<Blocks(cap), kThreads, 0, stream>>>(dev);
  size_t bytes = a.temp_bytes;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(a.temp, bytes, a.hkey, a.sorted_hkey, a.idx_in,
                                                    a.idx_out, cap, 0, 32, stream);
  if (err != cudaSuccess) return err;
  MarkKernel<<<Blocks(cap), kThreads, 0, stream>>>(dev, cap);
  bytes = a.temp_bytes;
  err = cub::DeviceScan::InclusiveScan(a.temp, bytes, a.marks, a.marks_scan, MaxInt2{}, int(cap),
                                       stream);
  if (err != cudaSuccess) return err;
  CtlKernel<<<Blocks(cap), kThreads, 0, stream>>>(dev, cap);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
