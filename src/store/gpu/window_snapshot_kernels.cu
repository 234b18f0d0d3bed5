// Snapshot kernels of the window table (window_snapshot_kernels.h): count,
// then dump, the live entries of a run of windows.
//
// Parallelization: a lane per slot, grid-stride over the range's slots in
// runs of 32 per warp: lane l reads slot first + l (its key and value
// words, 16 bytes), so a warp reads 8 consecutive windows, 512 bytes, in one
// coalesced access. The loop bound is the warp's, so every ballot and
// shuffle runs with all 32 lanes converged. A warp's live entries of one
// run are placed together: lane 0 takes their bytes from the image cursor
// with one atomicAdd, and each lane writes at its rank among the live lanes
// (a ballot's population count below it: the warp scan for entries of one
// size), so writes to host memory are contiguous runs. The sentinel keys
// (side table) are taken by the grid's first warp, lanes 0 and 1, before
// its first run, through the same placement, when the range holds window 0.
//
// Races: none. The table is not written while these run (the caller's
// guarantee: the pipeline drains first); every image byte range is handed
// out once by the atomic cursor; totals are updated with atomics only.
// Bounds: a run that would pass the image's end is not written (overflow
// flag instead), so a count that disagreed with the dump could never write
// out of bounds. Termination: every loop is a grid-stride loop over a fixed
// range; nothing waits on anything.
#include <cuda_runtime.h>

#include "store/gpu/lslab_device.cuh"
#include "store/gpu/window_snapshot_kernels.h"

namespace kvcg::store::gpu {
namespace {

constexpr uint32_t kWarpsPerBlock = kSnapshotBlockThreads / 32;

// A WindowRange in slots (4 per window), clamped to the table, and whether
// it holds the sentinel keys (it contains window 0).
struct SlotRange {
  uint64_t begin;
  uint64_t end;
  bool sentinels;
};

SlotRange ToSlots(const WindowTableView& t, WindowRange r) {
  const uint64_t begin = r.begin < t.windows ? r.begin : t.windows;
  uint64_t end = r.end < t.windows ? r.end : t.windows;
  if (end < begin) end = begin;
  return {begin * kWindowSlots, end * kWindowSlots, begin == 0 && end > 0};
}

// Warp-wide: the lanes with `live` set hold an entry (key, value). Returns
// how many (the same in every lane). kDump: also writes them, in lane
// order, into one run of the image taken from totals->cursor — or, when the
// run would pass image_bytes, writes nothing and sets totals->overflow.
template <bool kDump>
__device__ uint32_t TakeEntries(bool live, uint64_t key, uint64_t value, uint32_t lane,
                                uint64_t* image, unsigned long long image_bytes,
                                SnapshotTotals* totals) {
  const uint32_t mask = __ballot_sync(kFull, live);
  const uint32_t n = uint32_t(__popc(mask));
  if (!kDump || n == 0) return n;
  const unsigned long long entry = SnapshotEntryBytes(false, 8);
  const unsigned long long run = n * entry;
  unsigned long long base = 0;
  if (lane == 0) base = atomicAdd(&totals->cursor, run);
  base = __shfl_sync(kFull, base, 0);
  if (base + run > image_bytes || base + run < base) {
    if (lane == 0) atomicExch(&totals->overflow, 1ull);
  } else if (live) {
    const uint32_t rank = uint32_t(__popc(mask & ((1u << lane) - 1)));
    uint64_t* dst = image + (base + rank * entry) / 8;
    dst[0] = key;
    dst[1] = value;
  }
  return n;
}

// Both passes: kDump = false counts into totals->entries / bytes, true
// writes the image and counts into totals->dumped. Every block has
// kSnapshotBlockThreads threads.
template <bool kDump>
__global__ void __launch_bounds__(kSnapshotBlockThreads)
    WindowSnapshotKernel(WindowTableView t, SlotRange r, uint64_t* image,
                         unsigned long long image_bytes, SnapshotTotals* totals) {
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint64_t warps = uint64_t(gridDim.x) * kWarpsPerBlock;
  uint64_t met = 0;  // entries this warp met; the same in every lane
  if (r.sentinels && warp == 0) {
    // special: [present, value] for kEmptyKey, then for kTombKey.
    const bool live = lane < 2 && Ld(t.special + 2 * lane) != 0;
    const uint64_t value = live ? Ld(t.special + 2 * lane + 1) : 0;
    met += TakeEntries<kDump>(live, lane == 0 ? kEmptyKey : kTombKey, value, lane, image,
                              image_bytes, totals);
  }
  for (uint64_t first = r.begin + warp * 32; first < r.end; first += warps * 32) {
    const uint64_t slot = first + lane;
    ulonglong2 kv = make_ulonglong2(kEmptyKey, 0);
    if (slot < r.end) kv = __ldcg(reinterpret_cast<const ulonglong2*>(t.slots) + slot);
    const bool live = kv.x != kEmptyKey && kv.x != kTombKey;
    met += TakeEntries<kDump>(live, kv.x, kv.y, lane, image, image_bytes, totals);
  }
  if (lane == 0 && met != 0) {
    if (kDump) {
      atomicAdd(&totals->dumped, (unsigned long long)met);
    } else {
      atomicAdd(&totals->entries, (unsigned long long)met);
      atomicAdd(&totals->bytes, (unsigned long long)(met * SnapshotEntryBytes(false, 8)));
    }
  }
}

// Enqueues one pass over `range` on `stream`; returns the first error.
template <bool kDump>
cudaError_t LaunchPass(const WindowTableView& t, WindowRange range, uint64_t* image,
                       uint64_t image_bytes, SnapshotTotals* totals, cudaStream_t stream) {
  const SlotRange r = ToSlots(t, range);
  uint32_t blocks = 0;
  const cudaError_t err = SnapshotBlocks((r.end - r.begin + 31) / 32, &blocks);
  if (err != cudaSuccess) return err;
  WindowSnapshotKernel<kDump><<<blocks, kSnapshotBlockThreads, 0, stream>>>(t, r, image,
                                                                            image_bytes, totals);
  return cudaGetLastError();
}

}  // namespace

cudaError_t WindowSnapshotCount(const WindowTableView& table, WindowRange range,
                                SnapshotTotals* totals, cudaStream_t stream) {
  const cudaError_t err = cudaMemsetAsync(totals, 0, sizeof(SnapshotTotals), stream);
  if (err != cudaSuccess) return err;
  return LaunchPass<false>(table, range, nullptr, 0, totals, stream);
}

cudaError_t WindowSnapshotDump(const WindowTableView& table, WindowRange range, char* image,
                               uint64_t image_bytes, SnapshotTotals* totals, cudaStream_t stream) {
  return LaunchPass<true>(table, range, reinterpret_cast<uint64_t*>(image), image_bytes, totals,
                          stream);
}

}  // namespace kvcg::store::gpu
