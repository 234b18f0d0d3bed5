// ARB prepare and translate kernels (arb_kernels.h explains the steps).
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "store/gpu/arb_kernels.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/xxh3_device.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {

constexpr int kThreads = 256;
static_assert(8 * kThreads == int(kSmallArbOps));

// kvcg::Code values (kvcg/status.h), as bytes.
constexpr uint8_t kCodeOk = 0, kCodeNotFound = 1, kCodeInvalid = 2, kCodeKeyTooLarge = 3,
                  kCodeValueTooLarge = 4, kCodeCapacity = 5, kCodeInternal = 8;
constexpr uint32_t kOverflowOff = 0xffffffffu;
constexpr uint64_t kNoExpected = ~0ull;

struct MaxInt {
  __device__ __forceinline__ int operator()(int a, int b) const { return a > b ? a : b; }
};

__device__ __forceinline__ uint64_t Load64(const char* p) {
  return *reinterpret_cast<const uint64_t*>(p);  // 8-byte aligned by construction
}

__device__ uint32_t FindSegment(const ArbDev& a, uint32_t i) {
  uint32_t lo = 0, hi = a.segments;  // op_begin of lo <= i < op_begin of hi
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (a.seg[mid].op_begin <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

// The contract's per-op input check (store/backends.h CheckOperation), in
// the same order, so both backends answer bad input alike.
__device__ uint8_t CheckOp(const ArbDev& a, uint32_t t, uint64_t kd, uint32_t vlen, uint64_t ed) {
  const bool cas_expected = t == 3 && ed != kNoExpected;
  if (uint32_t(kd) == kOverflowOff) return kCodeKeyTooLarge;
  if (cas_expected && uint32_t(ed) == kOverflowOff) return kCodeValueTooLarge;
  const bool stores = t == 1 || t == 3;
  if (t > 3) return kCodeInvalid;
  const uint64_t klen = kd >> 32;
  if (klen > a.max_key) return kCodeKeyTooLarge;
  if (stores && vlen > a.max_value) return kCodeValueTooLarge;
  if (!a.general) {
    if (klen != 8) return kCodeInvalid;
    if (stores && vlen != 8) return kCodeInvalid;
  }
  if (cas_expected) {
    const uint64_t elen = ed >> 32;
    if (elen > a.max_value) return kCodeValueTooLarge;
    if (!a.general && elen != 8) return kCodeInvalid;
  }
  return 0;
}

__device__ void NormalizeOp(const ArbDev& a, uint32_t i) {
  const ArbSegment& s = a.seg[FindSegment(a, i)];
  const uint32_t local = i - s.op_begin;
  const char* in = a.input;
  const uint32_t t = uint8_t(in[s.types + local]);
  const uint64_t kd = reinterpret_cast<const uint64_t*>(in + s.keys)[local];
  const uint32_t vlen = reinterpret_cast<const uint32_t*>(in + s.lens)[local];
  const uint64_t ed =
      s.expected == kNoExpected ? 0 : reinterpret_cast<const uint64_t*>(in + s.expected)[local];
  const uint8_t check = CheckOp(a, t, kd, vlen, ed);
  a.check[i] = check;
  a.vlen[i] = 0;
  a.rec[i] = 0;
  a.done[i] = 0;
  a.idx_in[i] = i;
  if (check != 0) {
    // Runs as a no-op (ArbView::skip) that still takes part in its group's
    // ordering; hash 0 groups it with the other invalid ops, harmlessly.
    a.type[i] = kOpGet;
    a.hash[i] = 0;
    a.key[i] = 0;
    a.value[i] = 0;
    a.expected[i] = 0;
    return;
  }
  const uint32_t koff = uint32_t(kd);
  const uint32_t klen = uint32_t(kd >> 32);
  const char* kbytes = in + s.key_bytes + koff;
  const bool absent = t == 3 && ed == kNoExpected;
  a.type[i] = uint8_t(t | (absent ? 4u : 0u));
  uint64_t key, hash;
  if (a.general) {
    key = (s.key_bytes + koff) | (uint64_t(klen) << 32);
    hash = a.host_hash != nullptr ? a.host_hash[i] : Xxh3Device(kbytes, klen);
    a.value[i] = 0;
    a.expected[i] = t == 3 && !absent ? (s.key_bytes + uint32_t(ed)) | ((ed >> 32) << 32) : 0;
  } else {
    key = Load64(kbytes);
    hash = a.host_hash != nullptr ? a.host_hash[i] : Xxh3Fixed8(key);
    const bool stores = t == 1 || t == 3;
    const uint64_t voff = stores ? reinterpret_cast<const uint64_t*>(in + s.values)[local] : 0;
    a.value[i] = stores ? Load64(in + s.value_bytes + voff) : 0;
    a.expected[i] = t == 3 && !absent ? Load64(in + s.key_bytes + uint32_t(ed)) : 0;
  }
  a.key[i] = key;
  a.hash[i] = hash;
}

__device__ void ScatterPut(const ArbDev& a, uint32_t j) {
  const PutEntry e = a.puts[j];
  if (a.check[e.op] != 0) return;
  if (e.blob == 0) {
    a.check[e.op] = kCodeCapacity;  // no host memory for the value
    a.type[e.op] = kOpGet;
    return;
  }
  a.value[e.op] = e.blob;
  a.rec[e.op] = e.rec;
  a.vlen[e.op] = e.vlen;
}

__device__ void InitHeader(const ArbDev& a) {
  a.hdr[0] = 0;
  a.hdr[1] = uint32_t(a.allowance);
  a.hdr[2] = 0;
  a.hdr[3] = 0;
  a.done[a.n] = 0;
  a.out_hdr[2] = 0;  // retry flag, or-ed by TranslateKernel
}

__device__ __forceinline__ bool IsWriter(uint8_t type) { return (type & 3) != kOpGet; }

// The numbering rule of arb_kernels.h for the op at sorted position p.
__device__ void WriteCtl(const ArbDev& a, uint32_t op, uint32_t p, uint32_t s, int lastw,
                         bool alone) {
  const uint8_t type = a.type[op];
  uint32_t group = 0, need = 0;
  if (!alone) {
    group = s + 1;
    if (IsWriter(type)) {
      need = p - s;
    } else {
      need = lastw >= int(s) ? uint32_t(lastw) - s + 1 : 0;
    }
  }
  a.ctl[op] = MakeCtl(type & 3, (type & 4) != 0, group, need);
}

// --- Small ARBs: everything in one block. kItems per thread is the
// smallest that holds n (sorting padding costs as much as sorting ops).
template <int kItems>
__global__ void __launch_bounds__(kThreads) SmallPrepareKernel(ArbDev a) {
  using Sort = cub::BlockRadixSort<uint64_t, kThreads, kItems, uint32_t>;
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ union {
    typename Sort::TempStorage sort;
    typename Scan::TempStorage scan;
  } temp;
  __shared__ uint64_t sh_hash[kThreads * kItems];
  const uint32_t tid = threadIdx.x;
  for (uint32_t i = tid; i < a.n; i += kThreads) NormalizeOp(a, i);
  if (tid == 0) InitHeader(a);
  __syncthreads();
  for (uint32_t j = tid; j < a.put_count; j += kThreads) ScatterPut(a, j);
  __syncthreads();

  uint64_t keys[kItems];
  uint32_t idx[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t i = tid * kItems + k;
    idx[k] = i;
    // Padding sorts last (stable: after any real hash of ~0).
    keys[k] = i < a.n ? a.hash[i] : ~0ull;
  }
  Sort(temp.sort).Sort(keys, idx);  // blocked arrangement: position tid * kItems + k
#pragma unroll
  for (int k = 0; k < kItems; ++k) sh_hash[tid * kItems + k] = keys[k];
  __syncthreads();
  int seg[kItems], lastw[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t p = tid * kItems + k;
    seg[k] = p == 0 || sh_hash[p - 1] != keys[k] ? int(p) : 0;
    lastw[k] = idx[k] < a.n && IsWriter(a.type[idx[k]]) ? int(p) : -1;
  }
  Scan(temp.scan).InclusiveScan(seg, seg, MaxInt{});
  __syncthreads();
  Scan(temp.scan).InclusiveScan(lastw, lastw, MaxInt{});
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t p = tid * kItems + k;
    if (idx[k] >= a.n) continue;
    const uint32_t s = uint32_t(seg[k]);
    const bool alone = s == p && (p + 1 == a.n || sh_hash[p + 1] != keys[k]);
    WriteCtl(a, idx[k], p, s, lastw[k], alone);
  }
}

// --- Large ARBs: grid kernels around device-wide cub sort and scans.
__global__ void NormalizeKernel(ArbDev a) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) NormalizeOp(a, i);
  if (i == 0) InitHeader(a);
}

__global__ void ScatterKernel(ArbDev a) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < a.put_count) ScatterPut(a, j);
}

__global__ void MarkKernel(ArbDev a) {
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= a.n) return;
  const uint64_t h = a.sorted_hash[p];
  a.segs[p] = p == 0 || a.sorted_hash[p - 1] != h ? int(p) : 0;
  a.lastw[p] = IsWriter(a.type[a.idx_out[p]]) ? int(p) : -1;
}

__global__ void CtlKernel(ArbDev a) {
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= a.n) return;
  const uint64_t h = a.sorted_hash[p];
  const uint32_t s = uint32_t(a.segs_scan[p]);
  const bool alone = s == p && (p + 1 == a.n || a.sorted_hash[p + 1] != h);
  WriteCtl(a, a.idx_out[p], p, s, a.lastw_scan[p], alone);
}

__global__ void TranslateKernel(ArbDev a) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) {
    const uint8_t raw = a.res_code[i];
    uint8_t code = a.check[i];
    if (code == 0) {
      switch (raw & 0x7f) {
        case kResOk: code = kCodeOk; break;
        case kResNotFound: code = kCodeNotFound; break;
        case kResCapacity: code = kCodeCapacity; break;
        case kResRetryNoSlab: code = kRetryNoSlabCode; break;
        case kResRetryPoisoned: code = kRetryPoisonedCode; break;
        default: code = kCodeInternal; break;
      }
    }
    if (code == kRetryNoSlabCode || code == kRetryPoisonedCode) atomicOr(a.out_hdr + 2, 1u);
    a.out_codes[i] = code;
    const bool found = code == kCodeOk;
    if (a.general) {
      // ValueRef {data, size}: the bytes of the value blob, read in place.
      uint64_t* v = static_cast<uint64_t*>(a.out_values) + 2 * size_t(i);
      v[0] = found ? a.res_value[i] + 8 : 0;
      v[1] = found ? a.res_len[i] : 0;
    } else {
      static_cast<uint64_t*>(a.out_values)[i] = found ? a.res_value[i] : 0;
    }
  }
  if (i < a.write_count) {
    const uint32_t op = a.write_ops[i];
    WriteOut w;
    w.raw = a.check[op] != 0 ? kResNotFound : a.res_code[op];
    w.old_blob = a.check[op] != 0 ? 0 : a.res_value[op];
    w.old_rec = a.check[op] != 0 ? 0 : a.res_rec[op];
    w.pad = 0;
    a.out_writes[i] = w;
  }
  if (i == 0) {
    a.out_hdr[0] = a.hdr[0];
    a.out_hdr[1] = a.hdr[1];  // slab allowance left: final once the L-Slab kernel is done
    a.out_hdr[3] = 0;
  }
}

uint32_t Blocks(uint32_t n) { return (n + kThreads - 1) / kThreads; }

}  // namespace

cudaError_t ArbTempBytes(uint32_t n, size_t* bytes) {
  size_t sort = 0, scan = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, sort, (const uint64_t*)nullptr,
                                                    (uint64_t*)nullptr, (const uint32_t*)nullptr,
                                                    (uint32_t*)nullptr, n);
  if (err != cudaSuccess) return err;
  err = cub::DeviceScan::InclusiveScan(nullptr, scan, (const int*)nullptr, (int*)nullptr, MaxInt{},
                                       int(n));
  *bytes = sort > scan ? sort : scan;
  return err;
}

cudaError_t ArbPrepare(const ArbDev& a, cudaStream_t stream) {
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
  if (a.put_count != 0) ScatterKernel<<<Blocks(a.put_count), kThreads, 0, stream>>>(a);
  size_t bytes = a.temp_bytes;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(a.temp, bytes, a.hash, a.sorted_hash, a.idx_in,
                                                    a.idx_out, a.n, 0, 64, stream);
  if (err != cudaSuccess) return err;
  MarkKernel<<<Blocks(a.n), kThreads, 0, stream>>>(a);
  bytes = a.temp_bytes;
  err = cub::DeviceScan::InclusiveScan(a.temp, bytes, a.segs, a.segs_scan, MaxInt{}, int(a.n),
                                       stream);
  if (err != cudaSuccess) return err;
  bytes = a.temp_bytes;
  err = cub::DeviceScan::InclusiveScan(a.temp, bytes, a.lastw, a.lastw_scan, MaxInt{}, int(a.n),
                                       stream);
  if (err != cudaSuccess) return err;
  CtlKernel<<<Blocks(a.n), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t ArbTranslate(const ArbDev& a, cudaStream_t stream) {
  const uint32_t m = a.n > a.write_count ? a.n : a.write_count;
  TranslateKernel<<<Blocks(m > 0 ? m : 1), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
