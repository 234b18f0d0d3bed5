// The L-Slab kernel (paper §5.1): claims an ARB's ops and runs each with a
// tile of lanes (lslab_op.cuh has one op's steps, locking and expiry); the
// per-ARB launch and the resident kernel's loop (resident_kernel.cuh).
#include <cuda_runtime.h>

#include "store/gpu/arb_ops.cuh"
#include "store/gpu/grid_size.h"
#include "store/gpu/lslab_device.cuh"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/lslab_op.cuh"
#include "store/gpu/resident_kernel.cuh"

namespace kvcg::store::gpu {
namespace {

// A large ARB returns a found GET's short value in its output (ArbView::
// value_slots): the leader copies it from the record into slot i, and
// WriteOutputs records its length (value_lens). The record is the one the
// GET validated, and only an op on the same key could change it: those are
// ordered after this one, so the op counts as done (GroupDone) only after
// the copy. Done after ProcessOp, where the op's index is at hand anyway:
// carried through the probe it cost registers. True when it copied.
__device__ bool ValueCopyOut(const ArbView& a, uint32_t i, const uint64_t* copy, uint32_t rlen) {
  if (copy == nullptr || a.value_slots == nullptr) return false;
  uint64_t* slot = a.value_slots + size_t(i) * (kValueCopyBytes / 8);
  for (uint32_t w = 0; w * 8 < rlen; ++w) St(slot + w, Ld(copy + w));
  return true;
}

// kMinBlocks > 1 caps registers so that many blocks fit per SM: more warps
// in flight hide more of each op's dependent memory round trips, at the
// price of some spilling (the benchmark measures which wins).
// kStatic: the ARB may use static claims (the resident kernel; StaticClaim).
template <int kTile, bool kStatic>
__device__ __forceinline__ void LSlabOps(const TableView& t, const ArbView& a) {
  const Tile<kTile> tile(threadIdx.x & 31);
  const uint32_t per_tile = a.ops_per_warp < kTile ? a.ops_per_warp : kTile;
  const StaticClaim claim(kStatic && a.cursor == nullptr, kTile);
  if (claim.idle) return;
  for (bool first = true;; first = false) {
    uint32_t base = 0, stride = 1;
    if (claim.on) {
      if (!first) return;
      base = claim.tile;
      stride = claim.tiles;
    } else {
      if (tile.lane == 0) base = atomicAdd(a.cursor, per_tile);
      base = tile.Shfl(base, 0);
    }
    if (base >= a.n) return;
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
      mine.rec = a.rec[i];
      mine.vlen = a.vlen[i];
      if (a.expire != nullptr) mine.expire = a.expire[i];
    }
    uint32_t todo = tile.Ballot(active);
    while (todo != 0) {
      const int leader = __ffs(todo) - 1;
      todo &= todo - 1;
      Op op;
      op.hash = tile.Shfl(mine.hash, leader);
      op.key = tile.Shfl(mine.key, leader);
      op.ctl = tile.Shfl(mine.ctl, leader);
      op.value = tile.Shfl(mine.value, leader);
      op.expected = tile.Shfl(mine.expected, leader);
      op.rec = tile.Shfl(mine.rec, leader);
      op.vlen = tile.Shfl(mine.vlen, leader);
      op.expire = tile.Shfl(mine.expire, leader);
      const bool skip = tile.Shfl(int(my_skip), leader) != 0;
      uint8_t code;
      uint64_t rv, rr, exp;
      uint32_t rlen;
      const uint64_t* copy;
      ProcessOp<kTile>(t, a, op, skip, tile, &code, &rv, &rlen, &rr, &exp, &copy);
      if (tile.lane == 0) {
        const uint32_t idx = base + leader * stride;
        const bool copied = ValueCopyOut(a, idx, copy, rlen);
        GroupDone(a, CtlGroup(op.ctl), code);
        if (a.out_codes != nullptr) {
          WriteOutputs<true>(a, idx, skip, code, rv, rlen, rr, exp, copied);
        } else {
          a.res_code[idx] = code;
          a.res_value[idx] = rv;
          a.res_rec[idx] = rr;
          a.res_len[idx] = rlen;
        }
      }
    }
  }
}

template <int kMinBlocks, int kTile>
__global__ void __launch_bounds__(kLSlabBlockThreads, kMinBlocks) LSlabKernel(TableView t, ArbView a) {
  LSlabOps<kTile, false>(t, a);
  PublishOutputs(a);
}

// The resident kernel (resident_ring.h) with the default tile.
struct LSlabResidentOps {
  __device__ void operator()(const ResidentDesc& d) const { LSlabOps<kLSlabResidentTile, true>(d.lslab, d.view); }
};
static_assert(kLSlabBlockThreads == int(kResidentThreads), "the resident kernel's blocks");
__global__ void __launch_bounds__(kLSlabBlockThreads, 1) LSlabResidentKernel(ResidentParams p) {
  ResidentLoop(p, LSlabResidentOps{});
}

// Default variant: 8 lanes per op (4 ops of a warp in flight), registers
// capped for 3 blocks per SM (occupancy 0.375). Measured on the H100 at
// 95/5, 16-byte keys (kvcg-bench-gpu kernel --layout general, 2026-11-27,
// fb16fdf): 1.43 G ops/s against 1.26 at 4 blocks per SM and 1.16 uncapped
// (100/0: 1.68, 1.41, 1.41). Before the value copy (lslab_types.h) 4 blocks
// won (1.57 against 1.58 at 3 and 1.21 uncapped): the copy's registers made
// the 4-block variant spill more than its extra warps hide.
int g_min_blocks = 3;
int g_tile = 8;
int g_resident_blocks[5] = {};  // per min_blocks

template <int kTile>
cudaError_t OccupancyT(int min_blocks, int* per_sm) {
  switch (min_blocks) {
    case 3:
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, LSlabKernel<3, kTile>,
                                                           kLSlabBlockThreads, 0);
    case 4:
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, LSlabKernel<4, kTile>,
                                                           kLSlabBlockThreads, 0);
    default:
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, LSlabKernel<1, kTile>,
                                                           kLSlabBlockThreads, 0);
  }
}
cudaError_t Occupancy(int min_blocks, int* per_sm) {
  switch (g_tile) {
    case 8: return OccupancyT<8>(min_blocks, per_sm);
    case 16: return OccupancyT<16>(min_blocks, per_sm);
    default: return OccupancyT<32>(min_blocks, per_sm);
  }
}

template <int kTile>
void LaunchT(int min_blocks, uint32_t blocks, cudaStream_t stream, const TableView& t,
             const ArbView& a) {
  switch (min_blocks) {
    case 3: LSlabKernel<3, kTile><<<blocks, kLSlabBlockThreads, 0, stream>>>(t, a); break;
    case 4: LSlabKernel<4, kTile><<<blocks, kLSlabBlockThreads, 0, stream>>>(t, a); break;
    default: LSlabKernel<1, kTile><<<blocks, kLSlabBlockThreads, 0, stream>>>(t, a); break;
  }
}
void Launch(int min_blocks, uint32_t blocks, cudaStream_t stream, const TableView& t,
            const ArbView& a) {
  switch (g_tile) {
    case 8: LaunchT<8>(min_blocks, blocks, stream, t, a); break;
    case 16: LaunchT<16>(min_blocks, blocks, stream, t, a); break;
    default: LaunchT<32>(min_blocks, blocks, stream, t, a); break;
  }
}

}  // namespace

void SetLSlabVariant(int min_blocks, int tile) {
  g_min_blocks = min_blocks == 3 || min_blocks == 4 ? min_blocks : 1;
  g_tile = tile == 8 || tile == 16 ? tile : 32;
  for (int& b : g_resident_blocks) b = 0;
}
int LSlabMinBlocks() { return g_min_blocks; }
int LSlabTile() { return g_tile; }

cudaError_t LSlabResidentBlocks(int* blocks) {
  *blocks = 0;
  int per_sm = 0, sms = 0;
  cudaError_t err = Occupancy(g_min_blocks, &per_sm);
  if (err == cudaSuccess) err = DeviceSmCount(&sms);
  if (err != cudaSuccess) return err;
  *blocks = per_sm * sms;
  g_resident_blocks[g_min_blocks] = *blocks;
  return cudaSuccess;
}

cudaError_t LaunchLSlab(const TableView& table, const ArbView& arb, uint32_t max_blocks,
                        cudaStream_t stream) {
  int resident = g_resident_blocks[g_min_blocks];
  if (resident == 0) {
    cudaError_t err = LSlabResidentBlocks(&resident);
    if (err != cudaSuccess) return err;
  }
  // A warp leads its ops one after another, so a small batch is spread thin
  // (down to one op per warp) to keep its latency near one op's; a large one
  // gives every resident warp 32.
  const uint32_t tiles_per_warp = 32 / uint32_t(g_tile);
  uint32_t tiles_avail = uint32_t(resident) * (kLSlabBlockThreads / 32) * tiles_per_warp;
  if (max_blocks != 0 && max_blocks < uint32_t(resident)) {
    tiles_avail = max_blocks * (kLSlabBlockThreads / 32) * tiles_per_warp;
  }
  ArbView a = arb;
  a.ops_per_warp = OpsPerTile(arb.n, tiles_avail, uint32_t(g_tile));
  const uint32_t tiles = (arb.n + a.ops_per_warp - 1) / a.ops_per_warp;
  const uint32_t warps = (tiles + tiles_per_warp - 1) / tiles_per_warp;
  uint32_t blocks = (warps + kLSlabBlockThreads / 32 - 1) / (kLSlabBlockThreads / 32);
  if (blocks > uint32_t(resident)) blocks = uint32_t(resident);
  if (max_blocks != 0 && blocks > max_blocks) blocks = max_blocks;
  if (blocks == 0) blocks = 1;
  Launch(g_min_blocks, blocks, stream, table, a);
  return cudaGetLastError();
}

cudaError_t LaunchLSlabResident(const ResidentParams& p, uint32_t blocks, cudaStream_t stream) {
  LSlabResidentKernel<<<blocks, kLSlabBlockThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
