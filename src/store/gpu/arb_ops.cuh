// What both table kernels (L-Slab, lslab_kernel.cu; the window table,
// window_kernel.cu) do around each op of an ARB: the same-key order inside
// the batch (wait for the op's group, count it done) and the op's result
// written in kvcg's form. Included by those .cu files only (nvcc); internal
// to each (anonymous namespace).
#pragma once

#include <cuda_runtime.h>

#include "store/gpu/lslab_device.cuh"
#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {
namespace {

// Static claims (ArbView::cursor null; the resident kernel, whose blocks all
// run at once): block 0 runs no ops — it prepares the next ARB meanwhile —
// and tile g of the others takes ops g, g + tiles, g + 2 tiles, ... up to
// ops_per_warp of them; g runs across blocks first, so a small ARB's ops
// spread over every block rather than filling the first few. A tile runs
// its ops in index order, so a wait (always on an earlier op) is on an op
// that is running or done: no deadlock, as with the cursor's claims.
struct StaticClaim {
  bool on = false;      // the ARB's claims are static
  bool idle = false;    // block 0: no ops of this ARB
  uint32_t tile = 0;    // g
  uint32_t tiles = 0;   // tiles taking ops, over all blocks but block 0
  uint32_t blocks = 0;  // blocks taking ops: g's step between neighbouring tiles of a block
  __device__ StaticClaim(bool static_claims, uint32_t lanes) : on(static_claims) {
    if (!on) return;
    idle = blockIdx.x == 0;
    blocks = gridDim.x - 1;
    tiles = blocks * (blockDim.x / lanes);
    tile = (threadIdx.x / lanes) * blocks + (blockIdx.x - 1);
  }
};

// Same-key order: lane 0 waits until `need` of the group's earlier ops are
// done (the pipeline numbered the batch's ops on one key; waits only point
// to earlier ops, claimed earlier by running tiles, so no deadlock). True,
// on every lane, when one of them asked to retry: this op must retry too.
template <int kTile>
__device__ bool GroupWait(const ArbView& a, uint32_t group, uint32_t need, const Tile<kTile>& tile) {
  if (group == 0) return false;
  int poisoned = 0;
  if (tile.lane == 0) {
    const uint32_t* done = a.done + group;
    uint32_t d;
    while (((d = LdAcquire(done)) & ~kPoisonBit) < need) __nanosleep(32);
    poisoned = (d & kPoisonBit) != 0;
  }
  return tile.Shfl(poisoned, 0) != 0;
}

// Lane 0, after the op: counts it done (release: its stores are visible to
// the group's next op), poisoning the group when it must retry.
__device__ void GroupDone(const ArbView& a, uint32_t group, uint8_t code) {
  if (group == 0) return;
  const uint8_t c = code & 0x7f;
  if (c == kResRetryNoSlab || c == kResRetryPoisoned) RedOrRelease(a.done + group, kPoisonBit);
  RedAddRelease(a.done + group, 1u);
}

// The op's result in kvcg's form (leader lane): a Code byte, the value as a
// view of its blob in host memory (general) or the 8-byte value (fixed8),
// and for a write op what the host needs to free memory. Done here rather
// than in a separate kernel: one launch less per ARB. With value slots
// (large general ARBs, ArbView::value_slots) there is no view column: a
// found op's slot holds its value (`copied`: ValueCopyOut put it there) or
// else its view, and value_lens[i] says which (kvcg/results.h,
// kSlotHoldsView).
template <bool kGeneral>
__device__ void WriteOutputs(const ArbView& a, uint32_t i, bool skip, uint8_t raw, uint64_t rv,
                             uint32_t rlen, uint64_t rr, uint64_t exp, bool copied = false) {
  // kvcg::Code values (kvcg/status.h).
  constexpr uint8_t kOk = 0, kNotFound = 1, kCapacity = 5, kInternal = 8;
  uint8_t code;
  if (skip) {
    code = a.skip[i];
  } else {
    switch (raw & 0x7f) {
      case kResOk: code = kOk; break;
      case kResNotFound: code = kNotFound; break;
      case kResCapacity: code = kCapacity; break;
      case kResRetryNoSlab: code = 0xFE; break;
      case kResRetryPoisoned: code = 0xFD; break;
      default: code = kInternal; break;
    }
  }
  if (code >= 0xFD) atomicOr(a.retry_flag, 1u);
  a.out_codes[i] = code;
  const bool found = code == kOk;
  if (kGeneral) {
    if (a.value_slots == nullptr) {
      uint64_t* v = static_cast<uint64_t*>(a.out_values) + 2 * size_t(i);
      v[0] = found ? rv : 0;  // the ValueBlob is the bytes
      v[1] = found ? rlen : 0;
    } else if (found) {
      a.value_lens[i] = copied ? uint8_t(rlen) : kSlotHoldsView;
      if (!copied) {
        uint64_t* slot = a.value_slots + size_t(i) * (kValueCopyBytes / 8);
        slot[0] = rv;
        slot[1] = rlen;
      }
    }
    if (a.out_expires != nullptr) a.out_expires[i] = found ? exp : 0;
    const uint32_t w = a.wslot[i];
    if (w != ~0u) {
      uint64_t* o = a.out_writes + 3 * size_t(w);
      o[0] = skip ? 0 : rv;
      o[1] = skip ? 0 : rr;
      o[2] = uint64_t(skip ? kResNotFound : raw) | (uint64_t(skip ? 0 : rlen) << 32);
    }
  } else {
    static_cast<uint64_t*>(a.out_values)[i] = found ? rv : 0;
  }
}

// Every block, after its ops: the last block to finish copies the ARB's
// output region to the host (ArbView::publish). A DMA copy after the kernel
// costs the pipeline thread a CUDA call and the ARB a few microseconds of
// device latency (H100: ~7 µs from kernel end to results on the host); for
// a small ARB's few kilobytes one block's 16-byte stores over PCIe are
// quicker. Each block fences its results before it counts itself done, so
// the last one reads every block's (threadFenceReduction's pattern).
__device__ __forceinline__ void PublishOutputs(const ArbView& a) {
  if (a.publish == nullptr) return;
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(a.blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const uint4* src = reinterpret_cast<const uint4*>(a.publish_src);
  uint4* dst = reinterpret_cast<uint4*>(a.publish);
  const uint32_t words = (a.publish_bytes + 15) / 16;
  for (uint32_t w = threadIdx.x; w < words; w += blockDim.x) dst[w] = __ldcg(src + w);
}

}  // namespace
}  // namespace kvcg::store::gpu
