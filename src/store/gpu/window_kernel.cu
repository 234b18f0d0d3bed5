// The window table's kernel: fixed8 ops on an open-addressing table of
// 64-byte windows (layout and the argument for needing no lock:
// window_types.h).
//
// A tile of 4 lanes takes up to 4 ops (its warp claims them from the
// batch's cursor) and steps through them (the loop: WindowKernel). Per op:
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
#include "store/gpu/resident_kernel.cuh"

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

// One op's probe, the same on every lane of its tile: where it is, and
// what it found (the key's slot and value; for a writer, the first free
// slot on the path).
struct Probe {
  uint64_t w, step, probes, found_w, free_w, rv;
  int found, free_slot;
  bool free_empty;
};

__device__ void ProbeStart(const WindowTableView& t, uint64_t hash, Probe& p) {
  p.w = HomeWindow(hash, t.windows);
  p.step = ProbeStep(hash, t.windows);
  p.probes = 0;
  p.found_w = p.free_w = p.rv = 0;
  p.found = p.free_slot = -1;
  p.free_empty = false;
}

// Tile-wide: reads the probe's current window and looks at it. True when
// the probe is over (the key found, an EMPTY slot met, or a whole lap done),
// else moves on to the next window.
__device__ bool ProbeWindow(const WindowTableView& t, uint64_t key, bool writer, Probe& p,
                            const WTile& tile) {
  const ulonglong2 kv =
      __ldcg(reinterpret_cast<const ulonglong2*>(t.slots + p.w * kWindowWords + 2 * tile.lane));
  const uint32_t match = tile.Ballot(kv.x == key);
  if (match != 0) {
    p.found = __ffs(match) - 1;
    p.found_w = p.w;
    p.rv = tile.Shfl(static_cast<uint64_t>(kv.y), p.found);
    return true;
  }
  const uint32_t empty = tile.Ballot(kv.x == kEmptyKey);
  if (writer && p.free_slot < 0) {
    const uint32_t free = empty | tile.Ballot(kv.x == kTombKey);
    if (free != 0) {
      p.free_slot = __ffs(free) - 1;
      p.free_w = p.w;
      p.free_empty = (empty >> p.free_slot) & 1;
    }
  }
  if (empty != 0 || ++p.probes >= t.windows) return true;
  p.w = NextWindow(p.w, p.step, t.windows);
  return false;
}

// Leader only, after the probe: performs the op on what it found. Returns
// the raw result code (the value before the op is p.rv when found).
__device__ uint8_t FinishOp(const WindowTableView& t, const ArbView& a, const Op& op, uint32_t type,
                            bool flag, const Probe& p) {
  const int found = p.found;
  uint8_t code = found >= 0 ? kResOk : kResNotFound;
  uint64_t* key_word = t.slots + p.found_w * kWindowWords + 2 * found;
  int touch = -1;  // 0: an access, 1: an insert
  uint64_t touch_index = p.found_w * kWindowSlots + uint64_t(found);
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
    if (type == kOpCas) store = found >= 0 ? !flag && p.rv == op.expected : flag;
    if (store && found >= 0) {
      St(key_word + 1, op.value);
      code |= kResStored;
      touch = 0;
    } else if (store) {
      // Insert: claim the first free slot on the path (the key is absent
      // and no other op on it runs, so any free slot before the first
      // EMPTY one keeps it reachable: window_types.h).
      if (!ReserveInsert(t)) return kResCapacity;
      uint64_t i = p.free_slot < 0 ? ~0ull : p.free_w * kWindowSlots + uint64_t(p.free_slot);
      bool empty = p.free_empty;
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
        i = NextFreeSlot(t, i / kWindowSlots, uint32_t(i % kWindowSlots), p.step);
        if (i != ~0ull) empty = Ld(t.slots + 2 * i) == kEmptyKey;
      }
      if (code == kResRetryNoSlab) ReleaseInsert(t);
    }
  }
  if (touch >= 0 && t.access_mode != kAccessNone) {
    TouchAccess(t.access_mode, t.generation, t.access + touch_index, touch == 1, op.hash);
  }
  return code;
}

// Leader only: the op's result (kvcg's form, or the raw columns) and its
// group's done count.
__device__ void Answer(const ArbView& a, uint32_t idx, uint32_t group, bool skip, uint8_t code,
                       uint64_t rv) {
  GroupDone(a, group, code);
  if (a.out_codes != nullptr) {
    WriteOutputs<false>(a, idx, skip, code, rv, 0, 0, 0);
  } else {
    a.res_code[idx] = code;
    a.res_value[idx] = rv;
  }
}

// The loop. A warp claims the ops of its 8 tiles with one atomic on the
// batch's cursor (a claim per tile capped the kernel on that one word,
// H100), each tile taking up to 4 consecutive ones; ops are claimed only by
// running warps, in index order, so the unfinished op of lowest index is
// always the current op of a running tile and waits only on finished ones:
// no deadlock, whatever else shares the GPU. Then each warp runs one loop in
// which every tile takes one step per iteration — start its next op, look
// at its group once, or read one window — and a tile whose op is done
// starts the next at once. Why not lead each op to its end, tile after
// tile (as the L-Slab kernel does): the warp's 8 tiles then meet after every
// op, so each round costs the longest of 8 probes, and at load 0.8 one GET
// in five reads a second window (measured: 6.1 against 7.5 G ops/s for
// 95/5, H100 2026-11-24).
// kStatic: the ARB may use static claims (the resident kernel; StaticClaim).
template <bool kStatic>
__device__ __forceinline__ void WindowOps(const WindowTableView& t, const ArbView& a) {
  const WTile tile(threadIdx.x & 31);
  const bool leader = tile.lane == 0;
  const uint32_t per_tile = a.ops_per_warp < kWindowTile ? a.ops_per_warp : kWindowTile;
  constexpr uint32_t kTilesPerWarp = 32 / kWindowTile;
  const uint32_t tile_in_warp = (threadIdx.x & 31) / kWindowTile;
  constexpr int kStart = 0, kWait = 1, kProbe = 2;
  const StaticClaim claim(kStatic && a.cursor == nullptr, kWindowTile);
  if (claim.idle) return;
  for (bool first = true;; first = false) {
    uint32_t base = 0, stride = 1;
    if (claim.on) {
      if (!first) return;
      // Warps whose tiles all start past the ARB end, as a claim past it.
      if (claim.tile - tile_in_warp * claim.blocks >= a.n) return;
      base = claim.tile;
      stride = claim.tiles;
    } else {
      uint32_t warp_base = 0;
      if ((threadIdx.x & 31) == 0) warp_base = atomicAdd(a.cursor, per_tile * kTilesPerWarp);
      warp_base = __shfl_sync(kFull, warp_base, 0);
      if (warp_base >= a.n) return;
      base = warp_base + tile_in_warp * per_tile;
    }
    const uint32_t i = base + tile.lane * stride;
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
    // The tile's current op (cur: its lane, -1 = none) and its state.
    int cur = -1, phase = kStart;
    Op op{};
    bool skip = false;
    Probe p{};
    while (__any_sync(kFull, todo != 0 || cur >= 0)) {
      if (cur < 0 && todo != 0) {
        cur = __ffs(todo) - 1;
        todo &= todo - 1;
        op.hash = tile.Shfl(mine.hash, cur);
        op.key = tile.Shfl(mine.key, cur);
        op.ctl = tile.Shfl(mine.ctl, cur);
        op.value = tile.Shfl(mine.value, cur);
        op.expected = tile.Shfl(mine.expected, cur);
        skip = tile.Shfl(int(my_skip), cur) != 0;
        ProbeStart(t, op.hash, p);
        phase = (op.ctl >> 3) & kMaxGroups ? kWait : kProbe;
      }
      if (cur >= 0) {
        const uint32_t type = uint32_t(op.ctl & 3);
        const bool flag = (op.ctl >> 2) & 1;
        const uint32_t group = uint32_t(op.ctl >> 3) & kMaxGroups;
        bool done = false;
        uint8_t code = kResNotFound;
        if (phase == kWait) {
          // One look at the group per iteration (no spinning in place).
          int st = 0;  // 0 wait, 1 go, 2 poisoned
          if (leader) {
            const uint32_t d = LdAcquire(a.done + group);
            if ((d & ~kPoisonBit) >= uint32_t(op.ctl >> 32)) st = d & kPoisonBit ? 2 : 1;
          }
          st = tile.Shfl(st, 0);
          if (st == 2) {
            done = true;
            code = kResRetryPoisoned;
          } else if (st == 1) {
            phase = kProbe;
          }
        }
        if (!done && phase == kProbe) {
          if (skip) {
            done = true;
          } else if (op.key >= kTombKey) {
            if (leader) code = SpecialOp(t, op, type, flag, &p.rv);
            done = true;
          } else if (ProbeWindow(t, op.key, type != kOpGet, p, tile)) {
            if (leader) code = FinishOp(t, a, op, type, flag, p);
            done = true;
          }
        }
        if (done) {
          if (leader) Answer(a, base + cur * stride, group, skip, code, p.rv);
          cur = -1;
        }
      }
    }
  }
}

template <int kMinBlocks>
__global__ void __launch_bounds__(kWindowBlockThreads, kMinBlocks)
    WindowKernel(WindowTableView t, ArbView a) {
  WindowOps<false>(t, a);
  PublishOutputs(a);
}

// The resident kernel (resident_ring.h).
struct WindowResidentOps {
  __device__ void operator()(const ResidentDesc& d) const { WindowOps<true>(d.window, d.view); }
};
static_assert(kWindowBlockThreads == int(kResidentThreads), "the resident kernel's blocks");
__global__ void __launch_bounds__(kWindowBlockThreads, 1) WindowResidentKernel(ResidentParams p) {
  ResidentLoop(p, WindowResidentOps{});
}

// 64 registers, 4 blocks per SM: capping them for 6 spilled and ran at half
// the rate (H100 2026-11-24).
constexpr int kWindowMinBlocks = 4;
int g_window_resident = 0;

}  // namespace

cudaError_t WindowResidentBlocks(int* blocks) {
  *blocks = 0;
  int device = 0, per_sm = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, WindowKernel<kWindowMinBlocks>,
                                                        kWindowBlockThreads, 0);
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
  a.ops_per_warp = OpsPerTile(arb.n, tiles_avail, uint32_t(kWindowTile));
  const uint32_t tiles = (arb.n + a.ops_per_warp - 1) / a.ops_per_warp;
  uint32_t blocks = (tiles + kTilesPerBlock - 1) / kTilesPerBlock;
  if (blocks > blocks_avail) blocks = blocks_avail;
  if (blocks == 0) blocks = 1;
  WindowKernel<kWindowMinBlocks><<<blocks, kWindowBlockThreads, 0, stream>>>(table, a);
  return cudaGetLastError();
}

cudaError_t LaunchWindowResident(const ResidentParams& p, uint32_t blocks, cudaStream_t stream) {
  WindowResidentKernel<<<blocks, kWindowBlockThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
