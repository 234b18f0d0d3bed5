// Device primitives of the L-Slab table shared by its kernels (the L-Slab
// kernel, lslab_kernel.cu, and the expiry sweep, expiry_kernels.cu): cached
// table loads and stores, acquire/release atomics, the bucket readers-writer
// spin lock, counter reservations, pool slab addressing and allocation, the
// tile of lanes that works on one op, and the key / value compares.
// Included by .cu files only (nvcc); everything is internal to each kernel
// file (anonymous namespace).
#pragma once

#include <cuda_runtime.h>

#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr uint64_t kWriterBit = 0x80000000u;  // in the bucket lock word (below)
constexpr uint32_t kPoisonBit = 0x80000000u;

__device__ __forceinline__ uint64_t Ld(const uint64_t* p) {
  return __ldcg(reinterpret_cast<const unsigned long long*>(p));
}
__device__ __forceinline__ void St(uint64_t* p, uint64_t v) {
  __stcg(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ unsigned long long LdVolatile64(const unsigned long long* p) {
  return *reinterpret_cast<const volatile unsigned long long*>(p);
}

// Acquire/release atomics (PTX scope gpu) instead of relaxed atomics plus
// __threadfence(): a full fence waits for every outstanding memory access of
// the thread, which costs a round trip per lock operation.
__device__ __forceinline__ void RedAddRelease(uint32_t* p, uint32_t v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void RedOrRelease(uint32_t* p, uint32_t v) {
  asm volatile("red.release.gpu.global.or.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t LdAcquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t LdAcquire64(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t AtomAddAcquire64(uint64_t* p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acquire.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
__device__ __forceinline__ uint64_t AtomOrAcquire64(uint64_t* p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acquire.gpu.global.or.b64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
__device__ __forceinline__ void RedAddRelease64(uint64_t* p, uint64_t v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void FenceAcqRel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// The bucket lock word (head slab word 63): low 32 bits a readers–writer
// spin lock (writer bit | reader count), high 32 bits the bucket's
// sequence, which every writer advances as it unlocks. GETs take no lock:
// they read optimistically and validate against the sequence (ReadBegin /
// ReadValidate, below; the argument is at ProcessOp in lslab_op.cuh).
// The read lock remains for one-off readers that must hold a bucket still
// (Store::KeyAccess). Every atomic on the word is 64 bits wide, so no two
// accesses of different sizes overlap.
constexpr uint64_t kLockBits = 0xffffffffull;

__device__ void ReadLock(uint64_t* word) {
  while (true) {
    const uint64_t v = AtomAddAcquire64(word, 1);
    if ((v & kWriterBit) == 0) return;
    atomicAdd(reinterpret_cast<unsigned long long*>(word), ~0ull);  // -1
    while (LdVolatile64(reinterpret_cast<unsigned long long*>(word)) & kWriterBit) __nanosleep(64);
  }
}
__device__ void ReadUnlock(uint64_t* word) { RedAddRelease64(word, ~0ull); }
// Readers counted when the writer bit went up are waited out (none, unless
// a KeyAccess holds the bucket: then a second round trip). The fence is the
// seqlock's write barrier: a lock-free reader that sees any of this
// writer's stores also sees the writer bit, or the advanced sequence, when
// it validates.
__device__ void WriteLock(uint64_t* word) {
  uint64_t v;
  while ((v = AtomOrAcquire64(word, kWriterBit)) & kWriterBit) __nanosleep(64);
  if ((v & kLockBits) != 0) {
    while ((LdAcquire64(word) & kLockBits) != kWriterBit) __nanosleep(32);
  }
  FenceAcqRel();
}
// One release add drops the writer bit and, by its carry out of the low
// half, advances the sequence.
__device__ void WriteUnlock(uint64_t* word) { RedAddRelease64(word, kWriterBit); }

// Lock-free read of a bucket, leader lane: waits out a writer and returns
// the lock word to validate against.
__device__ uint64_t ReadBegin(const uint64_t* word) {
  uint64_t v = LdAcquire64(word);
  while (v & kWriterBit) {
    __nanosleep(32);
    v = LdAcquire64(word);
  }
  return v;
}

// Counter reservations: exact against the configured limits (CAS loop),
// a plain atomicAdd when there is no limit.
__device__ bool ReserveCounter(unsigned long long* counter, unsigned long long max,
                               unsigned long long amount) {
  if (max == 0) {
    atomicAdd(counter, amount);
    return true;
  }
  unsigned long long cur = LdVolatile64(counter);
  while (true) {
    if (cur + amount > max || cur + amount < cur) return false;
    const unsigned long long prev = atomicCAS(counter, cur, cur + amount);
    if (prev == cur) return true;
    cur = prev;
  }
}
__device__ void ReleaseCounter(unsigned long long* counter, unsigned long long amount) {
  atomicAdd(counter, 0ull - amount);
}

__device__ uint64_t* PoolSlab(const TableView& t, uint32_t idx) {
  uint64_t* chunk =
      *reinterpret_cast<uint64_t* const volatile*>(t.chunks + (idx >> kPoolChunkShift));
  return chunk + uint64_t(idx & (kPoolChunkSlabs - 1)) * kSlabWords;
}

// The access byte (lslab_types.h) of `slot` in the slab with pool index
// `idx`, or in bucket `bucket`'s head slab when idx is 0.
__device__ uint8_t* AccessByte(const TableView& t, uint64_t bucket, uint32_t idx, int slot) {
  if (idx == 0) {
    return reinterpret_cast<uint8_t*>(t.buckets + (uint64_t(1) << t.bucket_bits) * kSlabWords) +
           bucket * kAccessBytesPerSlab + slot;
  }
  uint64_t* chunk =
      *reinterpret_cast<uint64_t* const volatile*>(t.chunks + (idx >> kPoolChunkShift));
  return reinterpret_cast<uint8_t*>(chunk + uint64_t(kPoolChunkSlabs) * kSlabWords) +
         uint64_t(idx & (kPoolChunkSlabs - 1)) * kAccessBytesPerSlab + slot;
}

__device__ __forceinline__ uint64_t Mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Leader only: records an access to (or the insertion of) the key whose
// access byte is `b`. LRU: the current generation, written only when it
// differs (most hits on a hot key write nothing). LFU: Redis's
// LFULogIncr (probability 1 / ((counter - 5) * 10 + 1), lfu-log-factor 10);
// a new key starts at 5. Concurrent readers of one key may race on the
// byte: both write the same generation, or one increment is lost, as
// Redis's approximate counters allow.
__device__ void TouchAccess(uint32_t mode, uint32_t generation, uint8_t* b, bool inserted,
                            uint64_t salt) {
  if (mode == kAccessLru) {
    const uint8_t g = uint8_t(generation);
    if (inserted || __ldcg(b) != g) __stcg(b, g);
  } else if (mode == kAccessLfu) {
    if (inserted) {
      __stcg(b, kLfuInitCounter);
      return;
    }
    const uint8_t c = __ldcg(b);
    if (c == 255) return;
    const uint32_t base = c > kLfuInitCounter ? c - kLfuInitCounter : 0;
    const float r = float(Mix64(salt ^ uint64_t(clock64())) >> 40) * (1.0f / 16777216.0f);
    if (r < 1.0f / float(base * 10 + 1)) __stcg(b, uint8_t(c + 1));
  }
}
__device__ void TouchAccess(const TableView& t, uint8_t* b, bool inserted, uint64_t salt) {
  TouchAccess(t.access_mode, t.generation, b, inserted, salt);
}

// Lane 0 only. A slab from this batch's allowance, then from the pool; 0 when
// either is spent.
__device__ uint32_t AllocSlab(const TableView& t, const ArbView& a) {
  if (atomicSub(a.slab_allowance, 1) <= 0) {
    atomicAdd(a.slab_allowance, 1);
    return 0;
  }
  DeviceCounters* c = t.counters;
  unsigned long long cur = LdVolatile64(&c->slabs_next);
  while (true) {
    if (cur >= LdVolatile64(&c->slabs_capacity)) {
      atomicAdd(a.slab_allowance, 1);
      return 0;
    }
    const unsigned long long prev = atomicCAS(&c->slabs_next, cur, cur + 1);
    if (prev == cur) return uint32_t(cur);
    cur = prev;
  }
}

// Warp-wide sums (every lane gets the total).
__device__ __forceinline__ uint64_t WarpSum(uint64_t v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(kFull, v, d);
  return v;
}

__device__ __forceinline__ double WarpSum(double v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(kFull, v, d);
  return v;
}

// Lane 0 (sweep kernels' lists of unlinked entries, expiry_kernels.h): `n` consecutive list entries from one atomicAdd, or ~0 when the
// list looks full. Why not a CAS loop: every warp of the grid reserves on this
// one word, and under that contention a CAS loop retries without end (the
// H100 measured ~850 ms per pass over 2^27 keys); atomicAdd always succeeds.
// A reservation that crosses the capacity is still handed out: its caller
// fills the part inside the list with empty entries (rec = 0, skipped by the
// host) and unlinks nothing, so the list has no holes.
__device__ uint64_t ReserveList(unsigned long long* listed, uint64_t capacity, uint32_t n) {
  if (LdVolatile64(listed) + n > capacity) return ~0ull;
  return atomicAdd(listed, (unsigned long long)n);
}

// One op as the leader's tile sees it (ArbView's columns). vlen is the
// ExpireCondition for an EXPIRE (lslab_types.h).
struct Op {
  uint64_t hash, key, ctl, value, expected, rec, expire;
  uint32_t vlen;
};

// kvcg/batch.h's IsExpired and ExpireConditionHolds, on the device.
__device__ __forceinline__ bool Expired(uint64_t expire_at, uint64_t now) {
  return expire_at != 0 && expire_at <= now;
}
__device__ __forceinline__ bool ConditionHolds(uint32_t condition, uint64_t current,
                                               uint64_t wanted) {
  switch (condition) {
    case 0: return true;                                      // always
    case 1: return current == 0;                              // NX
    case 2: return current != 0;                              // XX
    case 3: return current != 0 && wanted != 0 && wanted > current;  // GT
    case 4: return wanted != 0 && (current == 0 || wanted < current);  // LT
  }
  return false;
}

// A tile of kTile lanes (32: the whole warp, the paper's scheme; 8 or 16:
// 4 or 2 independent ops per warp in flight, each probed by fewer lanes
// reading 32 / kTile words each). Shuffles and ballots stay inside the tile.
template <int kTile>
struct Tile {
  static constexpr int kWords = 32 / kTile;  // slab words per lane and half-slab
  uint32_t lane;  // 0..kTile-1
  uint32_t base;  // first warp lane of the tile
  unsigned mask;
  __device__ explicit Tile(uint32_t warp_lane)
      : lane(warp_lane % kTile),
        base(warp_lane - warp_lane % kTile),
        mask(kTile == 32 ? kFull : ((1u << kTile) - 1) << (warp_lane - warp_lane % kTile)) {}
  template <typename T>
  __device__ T Shfl(T v, int src) const {
    return __shfl_sync(mask, v, src, kTile);
  }
  // Bit i set for tile lane i.
  __device__ uint32_t Ballot(bool p) const {
    const uint32_t b = __ballot_sync(mask, p);
    return kTile == 32 ? b : (b >> base) & ((1u << kTile) - 1);
  }
  __device__ bool All(bool p) const { return __all_sync(mask, p); }
  __device__ void Sync() const { __syncwarp(mask); }
};

// Tile-wide end of a lock-free read begun with ReadBegin (`seen`, the
// leader's): true when no writer held or released the bucket since, so
// every load the tile made in between saw one state of it. Each lane's
// fence orders its loads before the leader's second look at the word.
template <int kTile>
__device__ bool ReadValidate(const uint64_t* lock_word, uint64_t seen, const Tile<kTile>& tile) {
  FenceAcqRel();
  tile.Sync();
  int ok = 0;
  if (tile.lane == 0) {
    const uint64_t v = LdVolatile64(reinterpret_cast<const unsigned long long*>(lock_word));
    ok = (v & kWriterBit) == 0 && (v >> 32) == (seen >> 32);
  }
  return tile.Shfl(ok, 0) != 0;
}

// General layout: does key record `rec` hold exactly the op's key? Tile-wide.
// The record's length word is lane 0's, shuffled: a lock-free GET may read
// a record that a writer is changing, and every lane must take the same
// branch to the tile-wide vote.
template <int kTile>
__device__ bool KeyEquals(const uint64_t* rec, const Op& op, const ArbView& a, const Tile<kTile>& tile) {
  const uint32_t klen = uint32_t(op.key >> 32);
  const uint32_t rec_klen = tile.Shfl(tile.lane == 0 ? uint32_t(Ld(rec + 1)) : 0u, 0);
  if (rec_klen != klen) return false;
  const uint32_t words = (klen + 7) / 8;
  const uint64_t* mine = a.arena + uint32_t(op.key) / 8;
  bool eq = true;
  for (uint32_t w = tile.lane; w < words; w += kTile) eq &= Ld(rec + kRecordKeyWord + w) == mine[w];
  return tile.All(eq);
}

// General layout: does ValueBlob `blob` (pinned host memory) hold exactly the
// expected bytes? Tile-wide; the caller checked the lengths.
template <int kTile>
__device__ bool BlobEquals(const uint64_t* blob, uint32_t len, const uint64_t* want,
                           const Tile<kTile>& tile) {
  const uint32_t words = (len + 7) / 8;
  bool eq = true;
  for (uint32_t w = tile.lane; w < words; w += kTile) {
    uint64_t x = *reinterpret_cast<const volatile uint64_t*>(blob + w) ^ want[w];
    if (w == words - 1 && (len & 7) != 0) x &= (1ull << (8 * (len & 7))) - 1;
    eq &= x == 0;
  }
  return tile.All(eq);
}

}  // namespace
}  // namespace kvcg::store::gpu
