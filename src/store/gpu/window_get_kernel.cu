// The window table's GET kernel (window_kernel.h LaunchWindowGets): an ARB
// whose ops are all GETs, read with no claims and one op per lane.
#include <cuda_runtime.h>

#include "store/gpu/arb_ops.cuh"
#include "store/gpu/grid_size.h"
#include "store/gpu/lslab_device.cuh"
#include "store/gpu/window_kernel.h"
#include "store/gpu/window_ops.cuh"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {

// The GET kernel: an ARB whose ops are all GETs (ArbView::gets_only, the
// caller's word) needs no same-key order (no op writes, so nothing waits
// and any order is one of the allowed ones) and no claim order (that is
// only what keeps waits free of deadlock). So its warps take static chunks
// of 32 ops, with no claim on the shared cursor, and every lane owns one op
// of its chunk. A window is still read by a tile of 4 lanes, 16 bytes each
// (one 64-byte request: a lane reading its op's whole window alone makes
// four, and the window-read bound is one on requests); the 4 owners of a
// tile take turns: in load k the tile reads the window of its lane k's op,
// and 4 rounds of shuffles then hand each owner the 4 slots of its own
// window. Every branch is the lane's own (predicated), none the tile's: a
// kernel that resolved ops tile by tile ran at 11 active threads per warp
// (Nsight Compute, H200 2026-12-02, BENCHMARKS.md 2q). An op whose probe
// goes on past a window stays in the loop; the others wait for it (the
// warp's chunk ends with its longest probe).
// Results are the general kernel's: kvcg's form or the raw columns, a
// skipped op's code, a sentinel key's value from the side table.
// An op reads only its key (and skip byte) from the ARB: no ctl word, since
// no op of an ARB of GETs waits for another (so none counts itself done in
// its group), and, when ArbView::hash is null (the store hashes with XXH3),
// no hash either: the lane hashes the key (two multiplies) instead of
// reading 8 more bytes. H200 2026-12-02 (BENCHMARKS.md 2t), get100 at load
// 0.7 on 2 streams: 25.3 G ops/s reading key, hash and ctl, 26.5 reading
// the key alone.
__device__ __forceinline__ void GetOps(const WindowTableView& t, const ArbView& a) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t tl = lane & 3, tb = lane & ~3u;  // lane in its tile, the tile's first lane
  const uint32_t windows = uint32_t(t.windows);
  const uint32_t warps = gridDim.x * (blockDim.x / 32);
#pragma unroll 1
  for (uint64_t base = uint64_t(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * 32; base < a.n;
       base += uint64_t(warps) * 32) {
    const uint32_t i = uint32_t(base) + lane;
    const bool mine = i < a.n;
    OpInput in;
    if (mine) {
      in.key = a.key[i];
      in.hash = a.hash != nullptr ? a.hash[i] : Xxh3Fixed8(in.key);
      in.skip = a.skip != nullptr && a.skip[i] != 0;
    }
    bool probe = mine && !in.skip && in.key < kTombKey;
    uint8_t code = kResNotFound;
    uint64_t rv = 0;
    if (mine && !probe && !in.skip) {  // a sentinel key: the side table
      const uint64_t* present = t.special + 2 * SentinelEntry(in.key);
      if (Ld(present) != 0) {
        code = kResOk;
        rv = Ld(present + 1);
      }
    }
    uint32_t w = probe ? uint32_t(HomeWindow(in.hash, windows)) : 0;
    const uint32_t step = probe ? uint32_t(ProbeStep(in.hash, windows)) : 0;
    uint32_t probes = 0;
#pragma unroll 1
    while (__any_sync(kFull, probe)) {
      const uint32_t probing = __ballot_sync(kFull, probe);
      ulonglong2 sl[kWindowTile];
#pragma unroll
      for (int k = 0; k < kWindowTile; ++k) {
        const uint32_t wk = __shfl_sync(kFull, w, int(tb) + k);
        sl[k] = (probing >> (tb + k)) & 1
                    ? __ldcg(reinterpret_cast<const ulonglong2*>(t.slots + uint64_t(wk) * kWindowWords) + tl)
                    : make_ulonglong2(0, 0);
      }
      bool hit = false, empty = false;
      uint64_t value = 0;
#pragma unroll
      for (int r = 0; r < kWindowTile; ++r) {
        // This lane sends slot tl of the window of its tile's op (tl - r) & 3
        // and receives slot (tl + r) & 3 of its own op's window.
        const uint32_t d = (tl - uint32_t(r)) & 3;
        const ulonglong2 send = d == 0 ? sl[0] : d == 1 ? sl[1] : d == 2 ? sl[2] : sl[3];
        const int from = int(tb + ((tl + uint32_t(r)) & 3));
        const uint64_t k = __shfl_sync(kFull, static_cast<uint64_t>(send.x), from);
        const uint64_t v = __shfl_sync(kFull, static_cast<uint64_t>(send.y), from);
        if (k == in.key) {
          hit = true;
          value = v;
        }
        empty = empty || k == kEmptyKey;
      }
      if (probe) {
        if (hit) {
          code = kResOk;
          rv = value;
          probe = false;
        } else if (empty || ++probes >= windows) {
          probe = false;
        } else {
          w = NextWindow(w, step, windows);
        }
      }
    }
    if (mine) Answer(a, i, 0, in.skip, code, rv);
  }
}

// Blocks of 2 warps, one block per 64 ops of the batch, launched all at
// once rather than as many as fit (each warp then taking chunk after
// chunk): the block scheduler starts a new block wherever one ends, so a
// warp whose chunk had a long probe holds up only its own 32 ops. 20 blocks
// per SM keep the occupancy of 256-thread blocks (0.62 at 48 registers, no
// spills). H200 2026-12-02, get100 on 540,672-op batches (BENCHMARKS.md
// 2r): 13.6 / 16.8 / 20.1 G ops/s at load 0.8 / 0.7 / 0.5 with 256-thread
// blocks capped at those that fit, 14.4 / 16.9 / 20.8 so. A lane taking
// the warp's next op when its own is answered (a per-warp queue, the next
// ops loaded ahead) needed 56 registers, and was slower at every batch
// size but this one.
constexpr int kGetBlockThreads = 64, kGetMinBlocks = 20;

__global__ void __launch_bounds__(kGetBlockThreads, kGetMinBlocks)
    WindowGetKernel(WindowTableView t, ArbView a) {
  GetOps(t, a);
  PublishOutputs(a);
}

}  // namespace

cudaError_t LaunchWindowGets(const WindowTableView& table, const ArbView& arb, uint32_t max_blocks,
                             cudaStream_t stream) {
  // One 32-op chunk per warp; with max_blocks the warps take further
  // chunks in turn.
  uint32_t blocks = (arb.n + kGetBlockThreads - 1) / kGetBlockThreads;
  if (max_blocks != 0 && blocks > max_blocks) blocks = max_blocks;
  if (blocks == 0) blocks = 1;
  WindowGetKernel<<<blocks, kGetBlockThreads, 0, stream>>>(table, arb);
  return cudaGetLastError();
}

cudaError_t WindowGetResidentThreads(int* threads) {
  int blocks = 0;
  const cudaError_t err = ResidentBlocks(WindowGetKernel, kGetBlockThreads, &blocks);
  *threads = blocks * kGetBlockThreads;
  return err;
}

}  // namespace kvcg::store::gpu
