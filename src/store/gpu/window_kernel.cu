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
// An ARB of GETs only (ArbView::gets_only) goes to the GET kernel instead
// (window_get_kernel.cu): one op per lane, static chunks, no claims.
// Table words are read with ld.global.cg (L2, never a stale L1 line) and
// written with st.global.cg, as in the L-Slab kernel.
#include <cuda_runtime.h>

#include "store/gpu/arb_ops.cuh"
#include "store/gpu/grid_size.h"
#include "store/gpu/lslab_device.cuh"
#include "store/gpu/window_kernel.h"
#include "store/gpu/window_ops.cuh"
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
__device__ uint64_t NextFreeSlot(const WindowTableView& t, uint32_t w, uint32_t s, uint32_t step) {
  const uint32_t windows = uint32_t(t.windows);
  for (uint32_t n = 0; n < windows; ++n) {
    for (++s; s < kWindowSlots; ++s) {
      const uint64_t k = Ld(t.slots + uint64_t(w) * kWindowWords + 2 * s);
      if (k == kEmptyKey || k == kTombKey) return uint64_t(w) * kWindowSlots + s;
    }
    w = NextWindow(w, step, windows);
    s = ~0u;  // slot 0 next
  }
  return ~0ull;
}

// One op as its leader sees it: its key and control word, which every lane
// of the tile holds, and its index; the fields only a writer uses (its
// value, a CAS's expected value) and the hash (for an access byte) are
// loaded where they are used, so that no lane keeps them in registers
// through the probe.
struct LeaderOp {
  uint64_t key;
  uint32_t ctl;
  uint32_t idx;
  __device__ uint32_t type() const { return ctl & 3; }
  __device__ bool flag() const { return (ctl >> 2) & 1; }
  __device__ uint64_t value(const ArbView& a) const { return a.value[idx]; }
  __device__ uint64_t expected(const ArbView& a) const {
    return a.expected != nullptr ? a.expected[idx] : 0;
  }
  __device__ uint64_t hash(const ArbView& a) const { return a.hash[idx]; }
};

// Leader only: an op on one of the two sentinel key values, kept in the
// side table (window_types.h). Returns the raw result code; *rv the value
// before the op.
__device__ uint8_t SpecialOp(const WindowTableView& t, const ArbView& a, const LeaderOp& op,
                             uint64_t* rv) {
  const uint32_t type = op.type();
  const bool flag = op.flag();
  const uint32_t which = SentinelEntry(op.key);
  uint64_t* present = t.special + 2 * which;
  uint64_t* value = present + 1;
  uint8_t* access = t.access + t.windows * kWindowSlots + which;
  const bool found = Ld(present) != 0;
  *rv = found ? Ld(value) : 0;
  uint8_t code = found ? kResOk : kResNotFound;
  if (type == kOpGet) {
    if (found && t.access_mode != kAccessNone) {
      TouchAccess(t.access_mode, t.generation, access, false, op.hash(a));
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
  if (type == kOpCas) store = found ? !flag && *rv == op.expected(a) : flag;
  if (!store) return code;
  if (!found) {
    if (!ReserveInsert(t)) return kResCapacity;
    St(value, op.value(a));
    St(present, 1);
  } else {
    St(value, op.value(a));
  }
  if (t.access_mode != kAccessNone) {
    TouchAccess(t.access_mode, t.generation, access, !found, op.hash(a));
  }
  return code | kResStored;
}

// One op's probe, the same on every lane of its tile: where it is, and
// what it found (the key's slot and value; for a writer, the first free
// slot on the path). Window indices are 32-bit (WindowTable refuses 2^32
// windows): half the registers and integer work of 64-bit ones.
// free_slot: the first free slot's index in window free_w, plus 4 when it
// is EMPTY (not a tombstone), or -1. What the probe found is a Hit, set in
// the step that ends it (so that no register holds it between steps): the
// key's slot in window w, where the probe stopped, or -1, and its value.
struct Probe {
  uint32_t w, step, probes, free_w;
  int free_slot;
};
struct Hit {
  int found = -1;
  uint64_t rv = 0;
};

// Tile-wide: looks at one window of the probe, read as `kv` (this lane's
// slot). True when the probe is over (the key found, or an EMPTY slot met).
__device__ __forceinline__ bool LookAt(const ulonglong2& kv, uint64_t key, bool writer, Probe& p,
                                       Hit& h, const WTile& tile) {
  const uint32_t match = tile.Ballot(kv.x == key);
  if (match != 0) {
    h.found = __ffs(match) - 1;
    h.rv = tile.Shfl(static_cast<uint64_t>(kv.y), h.found);
    return true;
  }
  const uint32_t empty = tile.Ballot(kv.x == kEmptyKey);
  if (writer && p.free_slot < 0) {
    const uint32_t free = empty | tile.Ballot(kv.x == kTombKey);
    if (free != 0) {
      const int slot = __ffs(free) - 1;
      p.free_slot = slot | int((empty >> slot) & 1) << 2;
      p.free_w = p.w;
    }
  }
  return empty != 0;
}

__device__ __forceinline__ void PrefetchL1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

__device__ __forceinline__ ulonglong2 LoadSlot(const WindowTableView& t, uint32_t w, const WTile& tile) {
  return __ldcg(reinterpret_cast<const ulonglong2*>(t.slots + uint64_t(w) * kWindowWords + 2 * tile.lane));
}

// Tile-wide: one step of the probe, reading its current window. True when
// the probe is over (the key found, an EMPTY slot met, or a whole lap
// done), else moves on to the next window. (Reading the next two windows
// at once after a first miss was measured slower: 8.46 against 8.76 G
// ops/s for 95/5 at load 0.7, H100 2026-11-27.)
__device__ __forceinline__ bool ProbeWindow(const WindowTableView& t, uint64_t key, bool writer,
                                            Probe& p, Hit& h, const WTile& tile) {
  const uint32_t windows = uint32_t(t.windows);
  if (LookAt(LoadSlot(t, p.w, tile), key, writer, p, h, tile) || ++p.probes >= windows) return true;
  p.w = NextWindow(p.w, p.step, windows);
  return false;
}

// Leader only: inserts an absent key into the first free slot on its
// probe's path (the key is absent and no other op on it runs, so any free
// slot before the first EMPTY one keeps it reachable: window_types.h).
// Returns the raw code; *index the slot claimed. Inlined like SpecialOp:
// as __noinline__ functions the two took a 360-byte stack frame for the
// views passed by reference and made every op spill (ptxas, 2026-11-27).
__device__ uint8_t InsertKey(const WindowTableView& t, const ArbView& a, const LeaderOp& op,
                             const Probe& p, uint64_t* index) {
  if (!ReserveInsert(t)) return kResCapacity;
  uint64_t i = p.free_slot < 0 ? ~0ull : uint64_t(p.free_w) * kWindowSlots + uint64_t(p.free_slot & 3);
  bool empty = p.free_slot >= 4;
  uint8_t code = kResRetryNoSlab;  // unless a claim succeeds
  while (i != ~0ull) {
    if (empty && atomicSub(a.slab_allowance, 1) <= 0) {
      atomicAdd(a.slab_allowance, 1);
      break;
    }
    uint64_t* k = t.slots + 2 * i;
    const uint64_t want = empty ? kEmptyKey : kTombKey;
    if (atomicCAS(reinterpret_cast<unsigned long long*>(k), want, op.key) == want) {
      St(k + 1, op.value(a));
      if (empty) atomicAdd(t.used, 1ull);
      code = kResNotFound | kResStored;
      *index = i;
      break;
    }
    if (empty) atomicAdd(a.slab_allowance, 1);  // lost: not claimed
    i = NextFreeSlot(t, uint32_t(i / kWindowSlots), uint32_t(i % kWindowSlots), p.step);
    if (i != ~0ull) empty = Ld(t.slots + 2 * i) == kEmptyKey;
  }
  if (code == kResRetryNoSlab) ReleaseInsert(t);
  return code;
}

// Leader only, after the probe: performs the op on what it found. Returns
// the raw result code (the value before the op is h.rv when found).
__device__ uint8_t FinishOp(const WindowTableView& t, const ArbView& a, const LeaderOp& op,
                            const Probe& p, const Hit& h) {
  const uint32_t type = op.type();
  const bool flag = op.flag();
  const int found = h.found;
  uint8_t code = found >= 0 ? kResOk : kResNotFound;
  uint64_t* key_word = t.slots + uint64_t(p.w) * kWindowWords + 2 * found;
  int touch = -1;  // 0: an access, 1: an insert
  uint64_t touch_index = uint64_t(p.w) * kWindowSlots + uint64_t(found);
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
    if (type == kOpCas) store = found >= 0 ? !flag && h.rv == op.expected(a) : flag;
    if (store && found >= 0) {
      St(key_word + 1, op.value(a));
      code |= kResStored;
      touch = 0;
    } else if (store) {
      code = InsertKey(t, a, op, p, &touch_index);
      if (code == (kResNotFound | kResStored)) touch = 1;
    }
  }
  if (touch >= 0 && t.access_mode != kAccessNone) {
    TouchAccess(t.access_mode, t.generation, t.access + touch_index, touch == 1, op.hash(a));
  }
  return code;
}

// A tile's current op and the state of its probe (the same on every lane).
struct TileOp {
  LeaderOp op;
  Probe p;
  int phase;  // kWaitPhase: for earlier ops of its group; kProbePhase
  bool skip;  // answered already (bad input, a no-op): it only counts in its group, if any
};
constexpr int kWaitPhase = 1, kProbePhase = 2;

// Tile-wide: makes op `idx` (key, low control word, home window and probe
// step, skip) the tile's current op.
__device__ __forceinline__ void StartOp(const ArbView& a, TileOp& c, uint64_t key, uint32_t ctl,
                                        uint32_t idx, uint32_t home, uint32_t step, bool skip,
                                        bool leader) {
  c.op.key = key;
  c.op.ctl = ctl;
  c.op.idx = idx;
  c.p.w = home;
  c.p.step = step;
  c.p.probes = 0;
  c.p.free_slot = -1;
  c.skip = skip;
  c.phase = CtlGroup(ctl) != 0 ? kWaitPhase : kProbePhase;
  // A writer's value is read after its probe: start its way to L1 now,
  // without a register held through the probe.
  if (leader && (c.op.type() == kOpPut || c.op.type() == kOpCas)) PrefetchL1(a.value + idx);
}

// Tile-wide: one step of the tile's current op — one look at its group, or
// one window of its probe — and, when that ends it, its answer. True when
// the op is done.
__device__ __forceinline__ bool StepOp(const WindowTableView& t, const ArbView& a, TileOp& c,
                                       const WTile& tile, bool leader) {
  const uint32_t group = CtlGroup(c.op.ctl);
  bool done = false;
  uint8_t code = kResNotFound;
  Hit h;
  if (c.phase == kWaitPhase) {
    // One look at the group per step (no spinning in place); how many of
    // its ops must be done first is the control word's high half.
    int st = 0;  // 0 wait, 1 go, 2 poisoned
    if (leader) {
      const uint32_t d = LdAcquire(a.done + group);
      if ((d & ~kPoisonBit) >= uint32_t(a.ctl[c.op.idx] >> 32)) st = d & kPoisonBit ? 2 : 1;
    }
    st = tile.Shfl(st, 0);
    if (st == 2) {
      done = true;
      code = kResRetryPoisoned;
    } else if (st == 1) {
      c.phase = kProbePhase;
    }
  }
  if (!done && c.phase == kProbePhase) {
    if (c.skip) {
      done = true;
    } else if (c.op.key >= kTombKey) {
      if (leader) code = SpecialOp(t, a, c.op, &h.rv);
      done = true;
    } else if (ProbeWindow(t, c.op.key, c.op.type() != kOpGet, c.p, h, tile)) {
      if (leader) code = FinishOp(t, a, c.op, c.p, h);
      done = true;
    }
  }
  if (done && leader) Answer(a, c.op.idx, group, c.skip, code, h.rv);
  return done;
}

// Static claims (the resident kernel's small ARBs; StaticClaim): tile g
// runs ops g, g + tiles, ... (at most kWindowTile), one lane holding each;
// every tile of the warp takes one step per iteration and starts its next
// op as soon as one is done.
__device__ __forceinline__ void StaticOps(const WindowTableView& t, const ArbView& a,
                                          const StaticClaim& claim, const WTile& tile, bool leader) {
  const uint32_t per_tile = a.ops_per_warp < kWindowTile ? a.ops_per_warp : kWindowTile;
  const uint32_t tile_in_warp = (threadIdx.x & 31) / kWindowTile;
  const uint32_t windows = uint32_t(t.windows);
  // Warps whose tiles all start past the ARB end have nothing to do.
  if (claim.tile - tile_in_warp * claim.blocks >= a.n) return;
  const uint32_t i = claim.tile + tile.lane * claim.tiles;
  const bool active = tile.lane < per_tile && i < a.n;
  uint64_t my_key = 0;
  uint32_t my_ctl = 0, my_home = 0, my_step = 0;
  bool my_skip = false;
  if (active) {
    const OpInput in = LoadOp(a, i);
    my_key = in.key;
    my_ctl = in.ctl;
    my_home = uint32_t(HomeWindow(in.hash, windows));
    my_step = uint32_t(ProbeStep(in.hash, windows));
    my_skip = in.skip;
  }
  uint32_t todo = tile.Ballot(active);
  bool busy = false;
  TileOp c{};
  while (__any_sync(kFull, todo != 0 || busy)) {
    if (!busy && todo != 0) {
      const int cur = __ffs(todo) - 1;
      todo &= todo - 1;
      StartOp(a, c, tile.Shfl(my_key, cur), tile.Shfl(my_ctl, cur),
              claim.tile + uint32_t(cur) * claim.tiles, tile.Shfl(my_home, cur),
              tile.Shfl(my_step, cur), tile.Shfl(int(my_skip), cur) != 0, leader);
      busy = true;
    }
    if (busy && StepOp(t, a, c, tile, leader)) busy = false;
  }
}

// Cursor claims: a warp's ops pass through a ring in shared memory. Lane 0
// claims a chunk of the batch (8 ops per tile-claim size, at most 32) with
// one atomic on the cursor when the ring runs low; each lane loads one op
// of it, and in the next iteration computes its home window and step and
// stores it in the ring (so the loads' latency overlaps the tiles' probes);
// a tile whose op is done takes the ring's next one at once. Why a ring:
// with each tile holding its own 4 ops, a warp claimed again only when its
// slowest tile was done — each chunk cost the longest of 8 tiles' probe
// sums, and the claim's loads then stalled the whole warp.
// No deadlock: a warp takes its ops from the ring in claim order (index
// order), and claims only while it runs, so the unfinished op of lowest
// index is always a running tile's current op, or the next op of a warp
// whose tiles are all free — and its waits are on finished ops.
constexpr uint32_t kRingOps = 64;
struct RingOp {
  uint64_t key;
  uint32_t ctl, home, step, idx;  // idx: bit 31 set when the op is to be skipped
};
constexpr uint32_t kSkipBit = 0x80000000u;

__device__ __forceinline__ void RingOps(const WindowTableView& t, const ArbView& a,
                                        const WTile& tile, bool leader) {
  __shared__ RingOp rings[kWindowBlockThreads / 32][kRingOps];
  RingOp* ring = rings[threadIdx.x / 32];
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t per_tile = a.ops_per_warp < kWindowTile ? a.ops_per_warp : kWindowTile;
  const uint32_t chunk = per_tile * (32 / kWindowTile);
  const uint32_t windows = uint32_t(t.windows);
  // Warp-uniform: ops stored in the ring (tail), taken (head), loaded in
  // the last iteration and not stored yet (pending, from pend_base).
  uint32_t head = 0, tail = 0, pending = 0, pend_base = 0;
  bool exhausted = false;
  OpInput pend;  // this lane's loaded op
  bool busy = false;
  TileOp c{};
  while (true) {
    if (pending != 0) {
      __syncwarp();  // every lane is done reading the slots it overwrites
      if (lane < pending) {
        RingOp& e = ring[(tail + lane) % kRingOps];
        e.key = pend.key;
        e.ctl = pend.ctl;
        e.home = uint32_t(HomeWindow(pend.hash, windows));
        e.step = uint32_t(ProbeStep(pend.hash, windows));
        e.idx = (pend_base + lane) | (pend.skip ? kSkipBit : 0u);
      }
      tail += pending;
      pending = 0;
      __syncwarp();
    }
    // Claim when the ring runs low (it has room: at most chunk / 2 of its
    // 64 slots are taken).
    if (!exhausted && tail - head <= chunk / 2) {
      uint32_t b = 0;
      if (lane == 0) b = atomicAdd(a.cursor, chunk);
      b = __shfl_sync(kFull, b, 0);
      if (b >= a.n) {
        exhausted = true;
      } else {
        pending = a.n - b < chunk ? a.n - b : chunk;
        pend_base = b;
        if (lane < pending) pend = LoadOp(a, b + lane);
      }
    }
    // Free tiles take the ring's next ops, in tile order.
    const uint32_t free_tiles = __ballot_sync(kFull, !busy && tile.lane == 0);
    const uint32_t avail = tail - head;
    if (!busy) {
      const uint32_t rank = __popc(free_tiles & ((1u << tile.base) - 1));
      if (rank < avail) {
        const RingOp e = ring[(head + rank) % kRingOps];
        StartOp(a, c, e.key, e.ctl, e.idx & ~kSkipBit, e.home, e.step, (e.idx & kSkipBit) != 0,
                leader);
        busy = true;
      }
    }
    const uint32_t taken = __popc(free_tiles);
    head += taken < avail ? taken : avail;
    if (!__any_sync(kFull, busy) && exhausted && pending == 0 && head == tail) return;
    if (busy && StepOp(t, a, c, tile, leader)) busy = false;
  }
}

// The loop. Every tile of a warp takes one step per iteration — start its
// next op, look at its group once, or read one window — and a tile whose
// op is done starts the next at once. Why not lead each op to its end,
// tile after tile (as the L-Slab kernel does): the warp's 8 tiles then meet
// after every op, so each round costs the longest of 8 probes, and at load
// 0.8 one GET in five reads a second window (measured: 6.1 against 7.5 G
// ops/s for 95/5, H100 2026-11-24).
//
// What a step costs is the kernel's rate (it is issue-bound, not
// memory-bound: Nsight Compute, BENCHMARKS.md 2e), so the work is placed
// where it is done once: each lane loads one op's key and control word and
// computes its probe's home window and step (32 ops in parallel, not 4
// lanes redundantly per op); an op's start then reads only those; the
// fields only the leader uses (a writer's value, a CAS's expected value, a
// waiting op's count, the hash for access bytes) are loaded by the leader
// when the op needs them.
// kStatic: the ARB may use static claims (the resident kernel; StaticClaim).
template <bool kStatic>
__device__ __forceinline__ void WindowOps(const WindowTableView& t, const ArbView& a) {
  const WTile tile(threadIdx.x & 31);
  const bool leader = tile.lane == 0;
  const StaticClaim claim(kStatic && a.cursor == nullptr, kWindowTile);
  if (claim.idle) return;
  if (claim.on) {
    StaticOps(t, a, claim, tile, leader);
  } else {
    RingOps(t, a, tile, leader);
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

int g_window_resident = 0;

}  // namespace

cudaError_t WindowResidentBlocks(int* blocks) {
  const cudaError_t err = ResidentBlocks(WindowKernel<kWindowMinBlocks>, kWindowBlockThreads, blocks);
  if (err == cudaSuccess) g_window_resident = *blocks;
  return err;
}

cudaError_t LaunchWindowOps(const WindowTableView& table, const ArbView& arb, uint32_t max_blocks,
                            cudaStream_t stream) {
  if (TakesGetKernel(table, arb.gets_only != 0)) {
    return LaunchWindowGets(table, arb, max_blocks, stream);
  }
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
