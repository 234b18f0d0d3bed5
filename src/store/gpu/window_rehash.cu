// WindowRehash (window_rehash.h): one thread per slot of the old table. A
// live key probes the new table from its home window with its step and
// claims the first EMPTY slot with a CAS (the new table has no tombstones
// and no other writer than this kernel, so the first EMPTY slot on the path
// is where an insert would put it, and every key stays reachable).
#include <cuda_runtime.h>

#include "store/gpu/grid_size.h"
#include "store/gpu/window_rehash.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {

constexpr int kBlockThreads = 256;

__global__ void __launch_bounds__(kBlockThreads)
    RehashKernel(WindowTableView from, WindowTableView to, const uint64_t* slot_hashes) {
  const uint64_t slots = from.windows * kWindowSlots;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < slots;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t key = from.slots[2 * i];
    if (key >= kTombKey) continue;  // EMPTY or a tombstone
    const uint64_t hash = slot_hashes != nullptr ? slot_hashes[i] : Xxh3Fixed8(key);
    uint64_t w = HomeWindow(hash, to.windows);
    const uint64_t step = ProbeStep(hash, to.windows);
    for (uint64_t probes = 0; probes < to.windows; ++probes) {
      bool placed = false;
      for (uint32_t s = 0; s < kWindowSlots && !placed; ++s) {
        uint64_t* k = to.slots + w * kWindowWords + 2 * s;
        if (*reinterpret_cast<volatile uint64_t*>(k) != kEmptyKey) continue;
        if (atomicCAS(reinterpret_cast<unsigned long long*>(k), kEmptyKey, key) == kEmptyKey) {
          k[1] = from.slots[2 * i + 1];
          if (to.access != nullptr && from.access != nullptr) {
            to.access[w * kWindowSlots + s] = from.access[i];
          }
          atomicAdd(to.used, 1ull);
          placed = true;
        }
      }
      if (placed) break;
      w = NextWindow(w, step, to.windows);
    }
  }
}

__global__ void CopySpecial(WindowTableView from, WindowTableView to) {
  if (threadIdx.x < 4) to.special[threadIdx.x] = from.special[threadIdx.x];
  if (threadIdx.x < 2 && to.access != nullptr && from.access != nullptr) {
    to.access[to.windows * kWindowSlots + threadIdx.x] =
        from.access[from.windows * kWindowSlots + threadIdx.x];
  }
}

}  // namespace

cudaError_t WindowRehash(const WindowTableView& from, const WindowTableView& to,
                         const uint64_t* slot_hashes, cudaStream_t stream) {
  uint32_t blocks = 1;
  const cudaError_t err =
      GridStrideBlocks(from.windows * kWindowSlots, kBlockThreads, 16, &blocks);  // a thread a slot
  if (err != cudaSuccess) return err;
  RehashKernel<<<blocks, kBlockThreads, 0, stream>>>(from, to, slot_hashes);
  CopySpecial<<<1, 32, 0, stream>>>(from, to);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
