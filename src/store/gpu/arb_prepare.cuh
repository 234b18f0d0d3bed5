// The ARB prepare steps of arb_kernels.h as device functions: per-op
// normalize and check, the put scatter, the same-key numbering rule, and a
// small ARB's whole prepare in one block (SmallPrepare). Included by
// arb_kernels.cu (the prepare kernels) and by the table kernels' .cu files
// for their resident loop (resident_kernel.cuh), which prepares and runs an
// ARB in one kernel; internal to each (anonymous namespace).
#pragma once

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

#include "store/gpu/arb_kernels.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/xxh3_device.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {


constexpr int kThreads = 256;
static_assert(8 * kThreads == int(kSmallArbOps));

// kvcg::Code values (kvcg/status.h), as bytes.
constexpr uint8_t kCodeInvalid = 2, kCodeKeyTooLarge = 3, kCodeValueTooLarge = 4,
                  kCodeCapacity = 5;
constexpr uint32_t kOverflowOff = 0xffffffffu;
constexpr uint64_t kNoExpected = ~0ull;

struct MaxInt {
  __device__ __forceinline__ int operator()(int a, int b) const { return a > b ? a : b; }
};
struct MaxInt2 {
  __device__ __forceinline__ int2 operator()(int2 a, int2 b) const {
    return make_int2(a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y);
  }
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
__device__ uint8_t CheckOp(const ArbDev& a, uint32_t t, uint64_t kd, uint32_t vlen, uint64_t ed,
                           uint64_t exp, uint32_t cond) {
  const bool cas_expected = t == 3 && ed != kNoExpected;
  if (uint32_t(kd) == kOverflowOff) return kCodeKeyTooLarge;
  if (cas_expected && uint32_t(ed) == kOverflowOff) return kCodeValueTooLarge;
  const bool stores = t == 1 || t == 3;
  if (t > 4) return kCodeInvalid;  // kGet .. kExpire
  const uint64_t klen = kd >> 32;
  if (klen > a.max_key) return kCodeKeyTooLarge;
  if (stores && vlen > a.max_value) return kCodeValueTooLarge;
  if (!a.general) {
    if (klen != 8) return kCodeInvalid;
    if (stores && vlen != 8) return kCodeInvalid;
    if (t == 4 || exp != 0) return kCodeInvalid;  // fixed8 stores no expire-at
  }
  if (cond > 4) return kCodeInvalid;  // ExpireCondition::kIfLess is the last
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
  const bool has_expiry = s.expire != kNoExpected;
  const uint64_t exp = has_expiry ? reinterpret_cast<const uint64_t*>(in + s.expire)[local] : 0;
  const uint32_t cond = has_expiry ? uint8_t(in[s.cond + local]) : 0;
  const uint8_t check = CheckOp(a, t, kd, vlen, ed, exp, cond);
  a.check[i] = check;
  // EXPIRE's condition rides in vlen (a PUT's is set by ScatterPut).
  a.vlen[i] = t == 4 ? cond : 0;
  if (a.expire != nullptr) a.expire[i] = exp;
  a.rec[i] = 0;
  a.done[i] = 0;
  if (a.general) a.wslot[i] = ~0u;
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
  // Bit 2: CAS expect_absent, or EXPIRE as a flagged DELETE (lslab_types.h).
  a.type[i] = t == 4 ? uint8_t(kOpDelete | 4u) : uint8_t(t | (absent ? 4u : 0u));
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

// Puts and write slots (after every op was normalized).
__device__ void ScatterPut(const ArbDev& a, uint32_t j) {
  if (j < a.write_count) a.wslot[a.write_ops[j]] = j;
  if (j >= a.put_count) return;
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
  if (e.src != ~0ull) {
    // The ValueBlob in host memory: size word, then the bytes (8-byte
    // words; the tail of the last word is don't-care, as every reader masks).
    uint64_t* blob = reinterpret_cast<uint64_t*>(e.blob);
    const uint64_t* src = reinterpret_cast<const uint64_t*>(a.input + e.src);
    blob[0] = e.vlen;
    for (uint32_t w = 0; w < (e.vlen + 7) / 8; ++w) blob[1 + w] = src[w];
  }
}

__device__ void InitHeader(const ArbDev& a) {
  a.hdr[0] = 0;
  a.hdr[1] = uint32_t(a.allowance);
  a.hdr[2] = 0;
  a.hdr[3] = 0;
  a.done[a.n] = 0;
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

// A small ARB's input, from the mapped staging buffer to device memory by
// the whole block (ArbDev::stage): one call and ~3 µs of DMA latency less
// than a copy before the kernel. Four 16-byte loads in flight per thread,
// as PCIe reads are round trips.
__device__ void CopyStage(const ArbDev& a) {
  const uint4* __restrict__ src = reinterpret_cast<const uint4*>(a.stage);
  uint4* __restrict__ dst = reinterpret_cast<uint4*>(const_cast<char*>(a.input));
  const uint32_t words = (a.stage_bytes + 15) / 16;
  constexpr uint32_t kUnroll = 4;
  for (uint32_t w0 = threadIdx.x; w0 < words; w0 += kUnroll * kThreads) {
    uint4 v[kUnroll];
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u) {
      const uint32_t w = w0 + u * kThreads;
      if (w < words) v[u] = src[w];
    }
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u) {
      const uint32_t w = w0 + u * kThreads;
      if (w < words) dst[w] = v[u];
    }
  }
  __syncthreads();
}

// --- Small ARBs: everything in one block. kItems per thread is the
// smallest that holds n (sorting padding costs as much as sorting ops).
//
// Ops are grouped by kSmallSortBits bits of their hash (bits 48..63), not
// all 64: a group is then a superset of one key's ops, which is still a
// correct order (as the large path's 32 bits; arb_kernels.h), and the block
// radix sort makes 4 passes instead of 16. The sort was most of a small
// ARB's time on the device: ~20 µs of a 512-op batch's ~40 (H100,
// KVCG_GPU_PROFILE). The price is false grouping: about n^2 / 2^17 pairs of
// different keys ordered as if equal (2 in a 512-op ARB, 32 in a 2048-op
// one), each costing one wait inside the table kernel.
constexpr int kSmallSortBits = 16;

template <int kItems>
__device__ void SmallPrepare(const ArbDev& a) {
  using Sort = cub::BlockRadixSort<uint32_t, kThreads, kItems, uint32_t>;
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ union {
    typename Sort::TempStorage sort;
    typename Scan::TempStorage scan;
  } temp;
  __shared__ uint32_t sh_key[kThreads * kItems];
  const uint32_t tid = threadIdx.x;
  if (a.stage != nullptr) CopyStage(a);
  for (uint32_t i = tid; i < a.n; i += kThreads) NormalizeOp(a, i);
  if (tid == 0) InitHeader(a);
  __syncthreads();
  const uint32_t scatter = a.put_count > a.write_count ? a.put_count : a.write_count;
  for (uint32_t j = tid; j < scatter; j += kThreads) ScatterPut(a, j);
  __syncthreads();

  uint32_t keys[kItems];
  uint32_t idx[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t i = tid * kItems + k;
    idx[k] = i;
    // Padding sorts last (stable: after any real key of all ones).
    keys[k] = i < a.n ? uint32_t(a.hash[i] >> (64 - kSmallSortBits)) : ~0u;
  }
  // Blocked arrangement: position tid * kItems + k.
  Sort(temp.sort).Sort(keys, idx, 0, kSmallSortBits);
#pragma unroll
  for (int k = 0; k < kItems; ++k) sh_key[tid * kItems + k] = keys[k];
  __syncthreads();
  int seg[kItems], lastw[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t p = tid * kItems + k;
    seg[k] = p == 0 || sh_key[p - 1] != keys[k] ? int(p) : 0;
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
    const bool alone = s == p && (p + 1 == a.n || sh_key[p + 1] != keys[k]);
    WriteCtl(a, idx[k], p, s, lastw[k], alone);
  }
}

}  // namespace
}  // namespace kvcg::store::gpu
