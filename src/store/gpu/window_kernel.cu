// The window table's kernel: fixed8 ops on an open-addressing table of
// 64-byte windows (layout and the argument for needing no lock:
// window_types.h).
//
// A tile of 4 lanes takes up to 4 ops (its warp claims them from the
// batch's cursor) and leads them one after another. Per op:
//   1. same-key order: wait for the op's group (arb_ops.cuh);
//   2. probe: lane l reads slot l of the window (16 bytes: key and value),
//      ballots find the key, an EMPTY slot (the end of the probe) and, for a
//      writer, the first free slot (tombstone or EMPTY); double hashing over
//      windows;
//   3. lane 0 performs the op: a GET answers the value it read in step 2; a
//      PUT overwrites its value word or claims the free slot with a CAS on
//      its key word (a CAS lost to another key moves on to the next free
//      slot), a DELETE writes a tombstone; counters and access bytes follow.
// Table words are read with ld.global.cg (L2, never a stale L1 line) and
// written with st.global.cg, as in the L-Slab kernel.
#include <cuda_runtime.h>

#include "store/gpu/arb_ops.cuh"
#include "store/gpu/lslab_device.cuh"
#include "store/gpu/window_kernel.h"

namespace kvcg::store::gpu {
namespace {

using WTile = Tile<kWindowTile>;

// Leader only: an insert's charge, reserved against the limits. 0 = over a
// limit (nothing reserved), 1 = reserved.
__device__ int ReserveInsert(const WindowTableView& t) {
  DeviceCounters* c = t.counters;
  if (!ReserveCounter(&c->keys, c->max_keys, 1)) return 0;
  if (!ReserveCounter(&c->mem_bytes, c->max_mem, 16 + t.entry_overhead)) {
    ReleaseCounter(&c->keys, 1);
    return 0;
  }
  return 1;
}
__device__ void ReleaseInsert(const WindowTableView& t) {
  ReleaseCounter(&t.counters->keys, 1);
  ReleaseCounter(&t.counters->mem_bytes, 16 + t.entry_overhead);
}

// Leader only: the free slot after (w, s) on the probe path (step `step`)
// — a tombstone or an EMPTY slot — once a CAS on (w, s) was lost to
// another key. Slot index 4 w + s, or ~0 when a whole lap found none.
__device__ uint64_t NextFreeSlot(const WindowTableView& t, uint64_t w, uint32_t s, uint64_t step) {
  for (uint64_t n = 0; n < t.windows; ++n) {
    for (++s; s < kWindowSlots; ++s) {
      const uint64_t k = Ld(t.slots + w * kWindowWords + 2 * s);
      if (k == kEmptyKey || k == kTombKey) return w * kWindowSlots + s;
    }
    w = NextWindow(w, step, t.windows);
    s = ~0u;  // slot 0 next
  }
  return ~0ull;
}

// Leader only: an op on one of the two sentinel key values, kept in the
// side table (window_types.h). Returns the raw result code; *rv the value
// before the op.
__device__ uint8_t SpecialOp(const WindowTableView& t, const Op& op, uint32_t type, bool flag,
                             uint64_t* rv) {
  const uint32_t which = op.key == kEmptyKey ? 0 : 1;
  uint64_t* present = t.special + 2 * which;
  uint64_t* value = present + 1;
  uint8_t* access = t.access + t.windows * kWindowSlots + which;
  const bool found = Ld(present) != 0;
  *rv = found ? Ld(value) : 0;
  uint8_t code = found ? kResOk : kResNotFound;
  if (type == kOpGet) {
    if (found && t.access_mode != kAccessNone) {
      TouchAccess(t.access_mode, t.generation, access, false, op.hash);
    }
    return code;
  }
  if (type == kOpDelete) {
    // fixed8 keeps no expiry: an EXPIRE (flag) that reaches the kernel
    // changes nothing, as in the L-Slab kernel.
    if (found && !flag) {
      St(present, 0);
      ReleaseInsert(t);
    }
    return code;
  }
  bool store = true;
  if (type == kOpCas) store = found ? !flag && *rv == op.expected : flag;
  if (!store) return code;
  if (!found) {
    if (!ReserveInsert(t)) return kResCapacity;
    St(value, op.value);
    St(present, 1);
  } else {
    St(value, op.value);
  }
  if (t.access_mode != kAccessNone) TouchAccess(t.access_mode, t.generation, access, !found, op.hash);
  return code | kResStored;
}

__device__ void ProcessWindowOp(const WindowTableView& t, const ArbView& a, const Op& op, bool skip,
                                const WTile& tile, uint8_t* code_out, uint64_t* value_out) {
  const bool leader = tile.lane == 0;
  const uint32_t type = uint32_t(op.ctl & 3);
  const bool flag = (op.ctl >> 2) & 1;
  const uint32_t group = uint32_t(op.ctl >> 3) & kMaxGroups;
  const uint32_t need = uint32_t(op.ctl >> 32);
  uint8_t code = kResNotFound;
  uint64_t rv = 0;

  if (GroupWait(a, group, need, tile)) {
    code = kResRetryPoisoned;
  } else if (skip) {
    // Answered already (bad input): it only takes part in its group's order.
  } else if (op.key >= kTombKey) {
    if (leader) code = SpecialOp(t, op, type, flag, &rv);
  } else {
    const bool writer = type != kOpGet;
    uint64_t w = HomeWindow(op.hash, t.windows);
    const uint64_t step = ProbeStep(op.hash, t.windows);
    int found = -1, free_slot = -1;
    uint64_t found_w = 0, free_w = 0;
    bool free_empty = false;
    for (uint64_t probes = 0; probes < t.windows; ++probes) {
      const ulonglong2 kv = __ldcg(
          reinterpret_cast<const ulonglong2*>(t.slots + w * kWindowWords + 2 * tile.lane));
      const uint32_t match = tile.Ballot(kv.x == op.key);
      if (match != 0) {
        found = __ffs(match) - 1;
        found_w = w;
        rv = tile.Shfl(static_cast<uint64_t>(kv.y), found);
        break;
      }
      const uint32_t empty = tile.Ballot(kv.x == kEmptyKey);
      if (writer && free_slot < 0) {
        const uint32_t free = empty | tile.Ballot(kv.x == kTombKey);
        if (free != 0) {
          free_slot = __ffs(free) - 1;
          free_w = w;
          free_empty = (empty >> free_slot) & 1;
        }
      }
      if (empty != 0) break;
      w = NextWindow(w, step, t.windows);
    }

    if (leader) {
      const uint64_t slot_index = found_w * kWindowSlots + uint64_t(found);
      uint64_t* key_word = t.slots + found_w * kWindowWords + 2 * found;
      int touch = -1;  // 0: an access, 1: an insert
      uint64_t touch_index = slot_index;
      if (found >= 0) code = kResOk;
      if (type == kOpGet) {
        if (found >= 0) touch = 0;
      } else if (type == kOpDelete) {
        // fixed8 keeps no expiry: an EXPIRE (flag) changes nothing.
        if (found >= 0 && !flag) {
          St(key_word, kTombKey);
          ReleaseInsert(t);
        }
      } else {
        bool store = true;
        if (type == kOpCas) store = found >= 0 ? !flag && rv == op.expected : flag;
        if (store && found >= 0) {
          St(key_word + 1, op.value);
          code |= kResStored;
          touch = 0;
        } else if (store) {
          // Insert: claim the first free slot on the path (the key is absent
          // and no other op on it runs, so any free slot before the first
          // EMPTY one keeps it reachable: window_types.h).
          if (!ReserveInsert(t)) {
            code = kResCapacity;
          } else {
            uint64_t i = free_slot < 0 ? ~0ull : free_w * kWindowSlots + uint64_t(free_slot);
            bool empty = free_empty;
            code = kResRetryNoSlab;  // unless a claim succeeds
            while (i != ~0ull) {
              if (empty && atomicSub(a.slab_allowance, 1) <= 0) {
                atomicAdd(a.slab_allowance, 1);
                break;
              }
              uint64_t* k = t.slots + 2 * i;
              const uint64_t want = empty ? kEmptyKey : kTombKey;
              if (atomicCAS(reinterpret_cast<unsigned long long*>(k), want, op.key) == want) {
                St(k + 1, op.value);
                if (empty) atomicAdd(t.used, 1ull);
                code = kResNotFound | kResStored;
                touch = 1;
                touch_index = i;
                break;
              }
              if (empty) atomicAdd(a.slab_allowance, 1);  // lost: not claimed
              i = NextFreeSlot(t, i / kWindowSlots, uint32_t(i % kWindowSlots), step);
              if (i != ~0ull) empty = Ld(t.slots + 2 * i) == kEmptyKey;
            }
            if (code == kResRetryNoSlab) ReleaseInsert(t);
          }
        }
      }
      if (touch >= 0 && t.access_mode != kAccessNone) {
        TouchAccess(t.access_mode, t.generation, t.access + touch_index, touch == 1, op.hash);
      }
    }
  }
  // Only lane 0's code and value count (it writes the result).
  if (leader) GroupDone(a, group, code);
  *code_out = code;
  *value_out = rv;
}

template <int kMinBlocks>
__global__ void __launch_bounds__(kWindowBlockThreads, kMinBlocks)
    WindowKernel(WindowTableView t, ArbView a) {
  const WTile tile(threadIdx.x & 31);
  const uint32_t per_tile = a.ops_per_warp < kWindowTile ? a.ops_per_warp : kWindowTile;
  // A warp claims the ops of its 8 tiles with one atomic on the batch's
  // cursor (a claim per tile capped the kernel on that one word, H100), each
  // tile taking per_tile consecutive ones. Ops are claimed only by running
  // warps, in index order, so the unfinished op of lowest index is always
  // the current op of a running tile and waits only on finished ones: no
  // deadlock, whatever else shares the GPU.
  constexpr uint32_t kTilesPerWarp = 32 / kWindowTile;
  const uint32_t tile_in_warp = (threadIdx.x & 31) / kWindowTile;
  while (true) {
    uint32_t warp_base = 0;
    if ((threadIdx.x & 31) == 0) warp_base = atomicAdd(a.cursor, per_tile * kTilesPerWarp);
    warp_base = __shfl_sync(kFull, warp_base, 0);
    if (warp_base >= a.n) return;
    const uint32_t base = warp_base + tile_in_warp * per_tile;
    const uint32_t i = base + tile.lane;
    const bool active = tile.lane < per_tile && i < a.n;
    Op mine{};
    bool my_skip = false;
    if (active) {
      my_skip = a.skip != nullptr && a.skip[i] != 0;
      mine.hash = a.hash[i];
      mine.key = a.key[i];
      mine.ctl = a.ctl[i];
      mine.value = a.value[i];
      if (a.expected != nullptr) mine.expected = a.expected[i];
    }
    uint32_t todo = tile.Ballot(active);
    while (todo != 0) {
      const int leader = __ffs(todo) - 1;
      todo &= todo - 1;
      Op op{};
      op.hash = tile.Shfl(mine.hash, leader);
      op.key = tile.Shfl(mine.key, leader);
      op.ctl = tile.Shfl(mine.ctl, leader);
      op.value = tile.Shfl(mine.value, leader);
      op.expected = tile.Shfl(mine.expected, leader);
      const bool skip = tile.Shfl(int(my_skip), leader) != 0;
      uint8_t code;
      uint64_t rv;
      ProcessWindowOp(t, a, op, skip, tile, &code, &rv);
      if (tile.lane == 0) {
        const uint32_t idx = base + leader;
        if (a.out_codes != nullptr) {
          WriteOutputs<false>(a, idx, skip, code, rv, 0, 0, 0);
        } else {
          a.res_code[idx] = code;
          a.res_value[idx] = rv;
        }
      }
    }
  }
}

// Registers capped for this many blocks per SM: 4 (64 registers, no
// spill) or 6 (spills a little; measured no faster, H100 2026-11-24).
int g_window_min_blocks = 4;
int g_window_resident = 0;

cudaError_t Occupancy(int* per_sm) {
  return g_window_min_blocks == 6
             ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, WindowKernel<6>,
                                                             kWindowBlockThreads, 0)
             : cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, WindowKernel<4>,
                                                             kWindowBlockThreads, 0);
}

}  // namespace

void SetWindowMinBlocks(int min_blocks) {
  g_window_min_blocks = min_blocks == 6 ? 6 : 4;
  g_window_resident = 0;
}
int WindowMinBlocks() { return g_window_min_blocks; }

cudaError_t WindowResidentBlocks(int* blocks) {
  *blocks = 0;
  int device = 0, per_sm = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    err = Occupancy(&per_sm);
  }
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  *blocks = per_sm * sms;
  g_window_resident = *blocks;
  return cudaSuccess;
}

cudaError_t LaunchWindowOps(const WindowTableView& table, const ArbView& arb, uint32_t max_blocks,
                            cudaStream_t stream) {
  int resident = g_window_resident;
  if (resident == 0) {
    const cudaError_t err = WindowResidentBlocks(&resident);
    if (err != cudaSuccess) return err;
  }
  // As LaunchLSlab: a small batch is spread thin (one op per tile) to keep
  // its latency near one op's; a large one gives every tile kWindowTile.
  constexpr uint32_t kTilesPerBlock = kWindowBlockThreads / kWindowTile;
  uint32_t blocks_avail = uint32_t(resident);
  if (max_blocks != 0 && max_blocks < blocks_avail) blocks_avail = max_blocks;
  const uint32_t tiles_avail = blocks_avail * kTilesPerBlock;
  ArbView a = arb;
  const uint32_t per = (arb.n + tiles_avail - 1) / tiles_avail;
  a.ops_per_warp = per < 1 ? 1 : per > uint32_t(kWindowTile) ? uint32_t(kWindowTile) : per;
  const uint32_t tiles = (arb.n + a.ops_per_warp - 1) / a.ops_per_warp;
  uint32_t blocks = (tiles + kTilesPerBlock - 1) / kTilesPerBlock;
  if (blocks > blocks_avail) blocks = blocks_avail;
  if (blocks == 0) blocks = 1;
  if (g_window_min_blocks == 6) {
    WindowKernel<6><<<blocks, kWindowBlockThreads, 0, stream>>>(table, a);
  } else {
    WindowKernel<4><<<blocks, kWindowBlockThreads, 0, stream>>>(table, a);
  }
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
