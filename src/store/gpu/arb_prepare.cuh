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
#include "store/gpu/resident_ring.h"
#include "store/gpu/xxh3_device.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {


constexpr int kThreads = 256;
static_assert(8 * kThreads == int(kSmallArbOps));

// kvcg::Code values (kvcg/status.h), as bytes.
constexpr uint8_t kCodeNotFound = 1, kCodeInvalid = 2, kCodeKeyTooLarge = 3, kCodeValueTooLarge = 4,
                  kCodeCapacity = 5;
constexpr uint32_t kOverflowOff = 0xffffffffu;
constexpr uint64_t kNoExpected = ~0ull;

struct MaxInt2 {
  __device__ __forceinline__ int2 operator()(int2 a, int2 b) const {
    return make_int2(a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y);
  }
};

__device__ __forceinline__ uint64_t GlobalNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint64_t Load64(const char* p) {
  return *reinterpret_cast<const uint64_t*>(p);  // 8-byte aligned by construction
}

// The segment whose range of `kBegin` (op_begin, put_begin or write_begin)
// holds i: the last one beginning at or before i (segments with an empty
// range share their begin with the next, and come before it).
template <uint32_t ArbSegment::*kBegin = &ArbSegment::op_begin>
__device__ uint32_t FindSegment(const ArbDev& a, uint32_t i) {
  uint32_t lo = 0, hi = a.segments;  // begin of lo <= i < begin of hi
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (a.seg[mid].*kBegin <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

// The contract's per-op input check (store/backends.h CheckOperation), in
// the same order, so both backends answer bad input alike.
__device__ uint8_t CheckOp(const ArbDev& a, uint32_t t, uint64_t kd, uint32_t vlen, uint64_t ed,
                           uint64_t exp, uint32_t cond) {
  if (t == 5) return kCodeNotFound;  // OpType::kNoop: answered kNotFound, reads nothing
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

// An op as normalized: what the small prepare numbers it by, kept in
// registers rather than read back from the columns just written.
struct NormalizedOp {
  uint64_t hash;
  uint8_t type;
  bool skip;  // failed its input check (or is a kNoop): runs as a no-op
};

__device__ NormalizedOp NormalizeOp(const ArbDev& a, uint32_t i) {
  const ArbSegment& s = a.seg[FindSegment(a, i)];
  const uint32_t local = i - s.op_begin;
  const char* in = a.input;
  const uint32_t t = uint8_t(in[s.types + local]);
  // A fixed-width batch's descriptors follow from its widths (ArbSegment).
  const bool fixed = s.key_width != 0;
  const uint64_t kd = fixed ? uint64_t(local) * s.key_width | uint64_t(s.key_width) << 32
                            : reinterpret_cast<const uint64_t*>(in + s.keys)[local];
  const uint32_t vlen = fixed ? (t == 1 ? s.value_width : 0)
                              : reinterpret_cast<const uint32_t*>(in + s.lens)[local];
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
    // Runs as a no-op (ArbView::skip). A small ARB leaves it out of the
    // numbering (SmallPrepare: group 0); a large one groups it under hash 0
    // with the other skipped ops, as GETs that wait for no one.
    a.type[i] = kOpGet;
    a.hash[i] = 0;
    a.key[i] = 0;
    a.value[i] = 0;
    a.expected[i] = 0;
    return {0, kOpGet, true};
  }
  const uint32_t koff = uint32_t(kd);
  const uint32_t klen = uint32_t(kd >> 32);
  const char* kbytes = in + s.key_bytes + koff;
  const bool absent = t == 3 && ed == kNoExpected;
  // Bit 2: CAS expect_absent, or EXPIRE as a flagged DELETE (lslab_types.h).
  const uint8_t type = t == 4 ? uint8_t(kOpDelete | 4u) : uint8_t(t | (absent ? 4u : 0u));
  a.type[i] = type;
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
    const uint64_t voff = !stores ? 0
                          : fixed ? uint64_t(local) * s.value_width
                                  : reinterpret_cast<const uint64_t*>(in + s.values)[local];
    a.value[i] = stores ? Load64(in + s.value_bytes + voff) : 0;
    a.expected[i] = t == 3 && !absent ? Load64(in + s.key_bytes + uint32_t(ed)) : 0;
  }
  a.key[i] = key;
  a.hash[i] = hash;
  return {hash, type, false};
}

// Puts and write slots (after every op was normalized). sh_type: the small
// prepare's copy of the type column, or null.
__device__ void ScatterPut(const ArbDev& a, uint32_t j, uint8_t* sh_type = nullptr) {
  if (j < a.write_count) {
    a.wslot[a.seg[FindSegment<&ArbSegment::write_begin>(a, j)].op_begin + a.write_ops[j]] = j;
  }
  if (j >= a.put_count) return;
  const PutEntry e = a.puts[j];
  const uint32_t op = a.seg[FindSegment<&ArbSegment::put_begin>(a, j)].op_begin + e.op;
  if (a.check[op] != 0) return;
  if (e.blob == 0) {
    a.check[op] = kCodeCapacity;  // no host memory for the value
    a.type[op] = kOpGet;
    if (sh_type != nullptr) sh_type[op] = kOpGet;
    return;
  }
  a.value[op] = e.blob;
  a.rec[op] = e.rec;
  a.vlen[op] = e.vlen;
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

// --- Small and medium ARBs: everything in one block of kBlock threads,
// kItems ops per thread (the smallest that holds n), the table and per-op
// arrays in `sh` (static shared memory for a small ARB, dynamic for a
// medium one: 152 KB at 8,192 ops).
//
// Numbering without a sort. A small ARB's ops are grouped by their hash in
// a shared-memory table (open addressing, 2 slots per op, keyed by the
// hash's top 32 bits, probed from its low bits): an op alone in its slot —
// nearly every op of a few hundred on distinct keys — is numbered at once;
// an op whose slot holds others counts the earlier ones (and the last
// writer among them) by a scan of the ops before it. Same-key ops share a
// hash and so a slot; different keys that meet in a slot are ordered as if
// equal (rare, one wait each, as any prefix grouping). The group's id is
// its first op's index + 1: unique and <= n, as ArbView::done needs.
// Against the block radix sort of 16 hash bits it replaced (H100, resident
// kernel profile, 512-op ARBs, 2026-11-24): the numbering stage fell from
// ~3.0 to ~0.55 µs, but the stage before it (normalize, now with the
// table's inserts) rose by ~2.4 µs, so the prepare as a whole is as long as
// before; what it buys is grouping by 32 hash bits instead of 16 (fewer
// different keys ordered as if equal) and no sort. The scan is quadratic
// in a group's size: a batch of 1,024 ops on one key scans ~0.5 M shared
// words, 32 per warp step (a few µs), while its ops then wait for each
// other in turn anyway.
// Ops that skip (input errors, and the no-ops the engine masks its hot ops
// with, up to most of a skewed batch) stay out of the table: they read and
// write nothing, so they need no order, and grouped under hash 0 they made
// one large group that scanned quadratically for nothing.
// An op's entry in PrepareShared::op_slot: its table slot, with the writer
// bit for a writer; kSlotNone for an op that skips.
constexpr uint16_t kSlotWriterBit = 0x8000u;
constexpr uint16_t kSlotNone = 0x7fffu;

template <uint32_t kMaxOps>
struct PrepareShared {
  uint32_t tab_key[2 * kMaxOps];    // 0 = empty, else hash >> 32 | 1
  uint32_t tab_count[2 * kMaxOps];  // ops in the slot
  uint16_t op_slot[kMaxOps];        // per op: its slot | kSlotWriterBit, or kSlotNone
  uint8_t sh_type[kMaxOps];         // per op: the type column's value
};

// A small ARB's numbering: an op alone in its slot (tab_count 1) is
// numbered at once; a grouped op's earlier ops are scanned by its whole
// warp, 32 per step: a ballot of the ops in the slot gives the group's
// first op (the lowest set bit of the first nonzero ballot) and the op's
// rank (their count), a ballot of the writers among them the last
// writer's rank. A scan by the grouped op's lane alone walked ~500 ops one
// per step for an op near the end of a 512-op ARB (H200, Nsight Compute:
// such a launch ran 18.2 us against 11-12; ~3 % of uniform 512-op batches
// over 4 M keys hold a same-key pair, BENCHMARKS 2y); the warp's scan
// takes ~16 steps. The loop runs whole warps (i0 is warp-uniform), so
// every lane takes part in the ballots.
template <int kBlock>
__device__ void ScanNumbering(const ArbDev& a, const uint16_t* op_slot, const uint8_t* sh_type,
                              const uint32_t* tab_count) {
  static_assert(kBlock % 32 == 0, "whole warps");
  constexpr uint32_t kAll = 0xffffffffu;
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t i0 = threadIdx.x - lane; i0 < a.n; i0 += kBlock) {
    const uint32_t i = i0 + lane;
    const bool valid = i < a.n;
    const uint32_t t = valid ? uint32_t(op_slot[i] & ~kSlotWriterBit) : kSlotNone;
    const uint8_t type = valid ? sh_type[i] : 0;
    uint32_t group = 0, need = 0;
    uint32_t todo = __ballot_sync(kAll, t != kSlotNone && tab_count[t] > 1);
    while (todo != 0) {
      const uint32_t src = uint32_t(__ffs(todo)) - 1;
      todo &= todo - 1;
      const uint32_t ts = __shfl_sync(kAll, t, src);  // the grouped op's slot
      const uint32_t is = i0 + src;                   // ... and index
      uint32_t first = is, rank = 0;
      int lastw = -1;  // rank of the last writer before op is
      for (uint32_t j0 = 0; j0 < is; j0 += 32) {
        const uint32_t j = j0 + lane;
        const uint32_t o = j < is ? uint32_t(op_slot[j]) : uint32_t(kSlotNone);
        const bool match = (o & ~kSlotWriterBit) == ts;
        const uint32_t m = __ballot_sync(kAll, match);
        if (m == 0) continue;
        const uint32_t w = __ballot_sync(kAll, match && (o & kSlotWriterBit) != 0);
        if (rank == 0) first = j0 + uint32_t(__ffs(m)) - 1;
        if (w != 0) {
          const uint32_t hi = 31u - uint32_t(__clz(w));  // the chunk's last writer
          lastw = int(rank + uint32_t(__popc(m & ((1u << hi) - 1u))));
        }
        rank += uint32_t(__popc(m));
      }
      if (lane == src) {
        group = first + 1;
        need = IsWriter(type) ? rank : uint32_t(lastw + 1);
      }
    }
    if (valid) a.ctl[i] = MakeCtl(type & 3, (type & 4) != 0, group, need);
  }
}

// A medium ARB's numbering: a stable block radix sort of the ops by their
// slot (blocked arrangement, so ties keep batch order) and a max-scan that
// finds each op's group start and the last writer before it — the large
// path's sort-and-scan (MarkKernel, CtlKernel), inside one block. The
// small path's scan of the ops before each grouped op costs O(n) per op:
// fine for a few hundred, but a skewed 8,192-op ARB (a zipf 0.99 batch
// puts hundreds of ops on its hottest keys) spent ~1 ms in it on the H200.
template <int kBlock, int kItems>
struct SortNumbering {
  using Sort = cub::BlockRadixSort<uint32_t, kBlock, kItems, uint32_t>;
  using Scan = cub::BlockScan<int2, kBlock>;
  union TempStorage {
    typename Sort::TempStorage sort;
    typename Scan::TempStorage scan;
  };

  // op_slot: each op's slot (kSlotNone: skipped), sh_type: its type after
  // the put scatter; sorted_slot: kBlock * kItems words of scratch.
  static __device__ void Run(const ArbDev& a, const uint16_t* op_slot, const uint8_t* sh_type,
                             uint32_t* sorted_slot, TempStorage& temp) {
    constexpr uint32_t kPositions = kBlock * kItems;
    constexpr uint32_t kPad = 0xffffu;  // positions past n sort last, after skipped ops
    const uint32_t first = threadIdx.x * kItems;
    uint32_t key[kItems], op[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      op[k] = first + k;
      key[k] = op[k] < a.n ? uint32_t(op_slot[op[k]] & ~kSlotWriterBit) : kPad;
    }
    Sort(temp.sort).Sort(key, op, 0, 16);
    __syncthreads();  // temp is the scan's next
#pragma unroll
    for (int k = 0; k < kItems; ++k) sorted_slot[first + k] = key[k];
    __syncthreads();
    int2 m[kItems];  // (group start, last writer) candidates at each position
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const uint32_t p = first + k;
      const bool start = p == 0 || sorted_slot[p - 1] != key[k];
      const bool writer = key[k] < kSlotNone && IsWriter(sh_type[op[k]]);
      m[k] = make_int2(start ? int(p) : 0, writer ? int(p) : -1);
    }
    Scan(temp.scan).InclusiveScan(m, m, MaxInt2{});
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const uint32_t p = first + k, o = op[k];
      if (o >= a.n) continue;  // padding
      const uint8_t type = sh_type[o];
      uint32_t group = 0, need = 0;
      const uint32_t s = uint32_t(m[k].x);
      const bool alone =
          key[k] >= kSlotNone || (s == p && (p + 1 == kPositions || sorted_slot[p + 1] != key[k]));
      if (!alone) {
        group = s + 1;  // unique, <= n: a group's first position
        need = IsWriter(type) ? p - s : (m[k].y >= int(s) ? uint32_t(m[k].y) - s + 1 : 0u);
      }
      a.ctl[o] = MakeCtl(type & 3, (type & 4) != 0, group, need);
    }
  }
};

// sort_temp: SortNumbering's storage when kBlock * kItems > kSmallArbOps
// (a medium ARB numbers by sorting), else unused.
template <int kBlock, int kItems>
__device__ void OneBlockPrepare(const ArbDev& a, PrepareShared<kBlock * kItems>& sh,
                                volatile uint64_t* marks, void* sort_temp = nullptr) {
  constexpr uint32_t kMaxOps = kBlock * kItems;
  constexpr uint32_t kTab = 2 * kMaxOps;
  static_assert(kTab < kSlotNone, "slot indices fit in 15 bits, below kSlotNone");
  uint32_t* const tab_key = sh.tab_key;
  uint32_t* const tab_count = sh.tab_count;
  uint16_t* const op_slot = sh.op_slot;
  uint8_t* const sh_type = sh.sh_type;
  const uint32_t tid = threadIdx.x;
  // Only a small ARB's input is staged in mapped memory (and CopyStage is
  // written for kThreads).
  if constexpr (kBlock == kThreads) {
    if (a.stage != nullptr) CopyStage(a);
  }
  if (marks != nullptr && tid == 0) marks[kMarkStaged] = GlobalNs();
  // Thread tid's ops are tid + k kBlock; their hashes stay in registers.
  uint64_t hash[kItems];
  uint32_t skips = 0;  // bit k: op k of this thread skips
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t i = tid + uint32_t(k) * kBlock;
    if (i >= a.n) continue;
    const NormalizedOp o = NormalizeOp(a, i);
    hash[k] = o.hash;
    sh_type[i] = o.type;
    if (o.skip) skips |= 1u << k;
  }
  if (marks != nullptr) {  // (uniform over the block)
    __syncthreads();
    if (tid == 0) marks[kMarkOpsNormalized] = GlobalNs();
  }
  if (tid == 0) InitHeader(a);
  for (uint32_t t = tid; t < kTab; t += kBlock) {
    tab_key[t] = 0;
    tab_count[t] = 0;
  }
  __syncthreads();
  // The writer bit is the normalized type's (before ScatterPut may turn a
  // failed PUT into a no-op GET, which it then only orders more than needed).
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t i = tid + uint32_t(k) * kBlock;
    if (i >= a.n) continue;
    if (skips & (1u << k)) {
      op_slot[i] = kSlotNone;
      continue;
    }
    const uint32_t key = uint32_t(hash[k] >> 32) | 1u;
    uint32_t t = uint32_t(hash[k]) & (kTab - 1);
    for (;;) {
      const uint32_t prev = atomicCAS(&tab_key[t], 0u, key);
      if (prev == 0u || prev == key) break;
      t = (t + 1) & (kTab - 1);
    }
    atomicAdd(&tab_count[t], 1u);
    op_slot[i] = uint16_t(t | (IsWriter(sh_type[i]) ? kSlotWriterBit : 0u));
  }
  __syncthreads();
  if (marks != nullptr && tid == 0) marks[kMarkGrouped] = GlobalNs();
  const uint32_t scatter = a.put_count > a.write_count ? a.put_count : a.write_count;
  for (uint32_t j = tid; j < scatter; j += kBlock) ScatterPut(a, j, sh_type);
  __syncthreads();
  if (marks != nullptr && tid == 0) marks[kMarkNormalized] = GlobalNs();
  if constexpr (kMaxOps > kSmallArbOps) {
    using SN = SortNumbering<kBlock, kItems>;
    // tab_count is free now: it holds the sorted slots.
    SN::Run(a, op_slot, sh_type, tab_count, *static_cast<typename SN::TempStorage*>(sort_temp));
  } else {
    ScanNumbering<kBlock>(a, op_slot, sh_type, tab_count);
  }
}

// A small ARB's prepare (256 threads; also the resident kernel's).
template <int kItems>
__device__ void SmallPrepare(const ArbDev& a, volatile uint64_t* marks = nullptr) {
  __shared__ PrepareShared<kThreads * kItems> sh;
  OneBlockPrepare<kThreads, kItems>(a, sh, marks);
}

}  // namespace
}  // namespace kvcg::store::gpu
