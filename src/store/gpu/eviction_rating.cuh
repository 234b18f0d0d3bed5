// How an eviction pass rates a key and what it does to the keys it keeps
// (eviction_kernels.h has the scores), shared by the L-Slab table's
// eviction kernels (eviction_kernels.cu) and the window table's
// (window_eviction_kernels.cu), so that one policy ranks a key the same in
// either table: its score, whether the cutoff chooses it, how its access
// byte ages, and the grid both launch. Included by .cu files only (nvcc);
// everything is internal to each kernel file (anonymous namespace).
#pragma once

#include <cuda_runtime.h>

#include "store/gpu/eviction_kernels.h"
#include "store/gpu/grid_size.h"
#include "store/gpu/lslab_device.cuh"

namespace kvcg::store::gpu {
namespace {

constexpr int kEvictBlockThreads = 256;
constexpr uint32_t kEvictWarpsPerBlock = kEvictBlockThreads / 32;
constexpr uint64_t kShareSalt = 0x5bd1e9955bd1e995ull;  // the cutoff bin's share: other hash bits

// One key as a pass rates it.
struct Rating {
  bool candidate = false;  // the policy may evict it
  uint32_t score = 0;      // lower goes first; 0 only for an expired key
  uint8_t* access = nullptr;  // its access byte, when the policy reads one (LRU, LFU)
  uint32_t access_byte = 0;   // that byte as read
  uint32_t counter = 0;       // LFU: the counter after this pass's decay
};

// Whether policy p ranks keys by their access bytes (LRU, LFU): then every
// key's byte is read, candidate or not, since all of them age.
__host__ __device__ __forceinline__ bool UsesAccessBytes(const EvictParams& p) {
  return p.score == kScoreLru || p.score == kScoreLfu;
}

// The volatile-ttl score of `remaining` ms: 4 log2 plus the next two bits,
// at most 255.
__device__ uint32_t TtlScore(uint64_t remaining) {
  const uint32_t lg = 63 - __clzll(remaining | 1);
  const uint32_t frac = lg >= 2 ? uint32_t(remaining >> (lg - 2)) & 3 : 0;
  const uint32_t s = lg * 4 + frac;
  return s < 255 ? s : 255;
}

// Rates one live key. word: the key word the random score and the cutoff
// share hash (the window table's: the key; L-Slab's: the key's hash). exp:
// its expire-at (0 = none). access: its access byte, read when
// UsesAccessBytes(p) (the caller may pass null otherwise). generation: the table's current LRU generation.
__device__ Rating RateKey(const EvictParams& p, uint32_t generation, uint64_t word, uint64_t exp,
                          uint8_t* access) {
  Rating r;
  if (UsesAccessBytes(p)) {
    r.access = access;
    r.access_byte = __ldcg(access);
    r.counter = r.access_byte > p.lfu_decay ? r.access_byte - p.lfu_decay : 0;
    r.score = p.score == kScoreLru ? 255 - ((generation - r.access_byte) & 0xff) : r.counter;
  }
  if (p.volatile_only && exp == 0) return r;
  r.candidate = true;
  if (Expired(exp, p.now)) {
    r.score = 0;  // an expired key goes first
    return r;
  }
  switch (p.score) {
    case kScoreLru:
    case kScoreLfu: break;
    case kScoreRandom: r.score = uint32_t(Mix64(word ^ p.salt) >> 56); break;
    default: r.score = TtlScore(exp - p.now); break;
  }
  if (r.score == 0) r.score = 1;  // bin 0 is the expired keys': they go first
  return r;
}

// Whether the pass's cutoff (p.cutoff, p.share) takes a candidate of score
// `score` whose key word is `word`: every score below the cutoff, and of
// the cutoff bin those whose 16-bit key hash is below the share.
__device__ __forceinline__ bool ChosenByCutoff(const EvictParams& p, uint32_t score, uint64_t word) {
  return score < p.cutoff ||
         (score == p.cutoff && (Mix64(word ^ p.salt ^ kShareSalt) & 0xffff) < p.share);
}

// Ages the access byte of a key the pass keeps (r.access not null): LRU
// ages saturate at kMaxLruAge (the 8-bit generation never wraps onto
// them), LFU counters decay by p.lfu_decay.
__device__ void AgeKeptKey(const EvictParams& p, uint32_t generation, const Rating& r) {
  if (p.score == kScoreLru) {
    const uint32_t age = (generation - r.access_byte) & 0xff;
    if (age > kMaxLruAge) __stcg(r.access, uint8_t(generation - kMaxLruAge));
  } else if (p.lfu_decay != 0 && r.counter != r.access_byte) {
    __stcg(r.access, uint8_t(r.counter));
  }
}

// The grid of a pass over `warps` warps' work (kEvictBlockThreads a
// block): enough blocks to fill the device several times over (64 warps
// per SM), fewer when there is less work; the kernels grid-stride beyond.
inline cudaError_t EvictBlocks(uint64_t warps, uint32_t* blocks) {
  return GridStrideBlocks(warps, kEvictWarpsPerBlock, 8, blocks);
}

}  // namespace
}  // namespace kvcg::store::gpu
