// Host entry points of the L-Slab kernel (lslab_kernel.cu). Plain C++ so the
// pipeline (.cc, built by g++) can call them.
//
// One launch executes one aggregated batch (ArbView, general-layout
// columns; fixed8 batches run on the window table, window_kernel.h) against
// the table (TableView). Each tile of lanes (8 by default, up to the whole
// warp as in the paper; see SetLSlabVariant) claims as many ops as it has
// lanes from the batch's cursor, then leads its lanes' ops one after another
// (the paper's warp-cooperative scheme); ops sharing a group wait until the
// group's earlier ops are done, which keeps same-key order inside a batch. Thread-safe: any number of
// launches may run at once on different streams against one table.
#pragma once

#include <cuda_runtime_api.h>

#include "store/gpu/lslab_types.h"
#include "store/gpu/resident_ring.h"

namespace kvcg::store::gpu {

// 8 warps per block: the paper uses 16, but at 68 registers a 512-thread
// block leaves room for only one per SM (ncu: 24% occupancy).
constexpr int kLSlabBlockThreads = 256;

// Enqueues the kernel on `stream`. `max_blocks` caps the grid (0 = as many
// blocks as can be resident). Returns the launch error, if any.
cudaError_t LaunchLSlab(const TableView& table, const ArbView& arb, uint32_t max_blocks,
                        cudaStream_t stream);

// The resident kernel (resident_ring.h) for the general layout: `blocks`
// blocks of kLSlabBlockThreads, tiles of kLSlabResidentTile lanes. Enqueued
// on `stream`; it ends by itself (resident_ring.h).
constexpr int kLSlabResidentTile = 8;
cudaError_t LaunchLSlabResident(const ResidentParams& p, uint32_t blocks, cudaStream_t stream);

// Kernel variant. min_blocks: 1 = registers uncapped; 3 or 4 = registers
// capped so that 3 or 4 blocks of kLSlabBlockThreads threads fit per SM.
// tile: lanes per op (32 = the whole warp, as in the paper; 16 or 8 = 2 or
// 4 ops of a warp in flight at once). Defaults: 3, 8.
// Not thread-safe: set it before any launch (benchmarks compare the
// variants).
void SetLSlabVariant(int min_blocks, int tile);
int LSlabMinBlocks();
int LSlabTile();

// Blocks of kLSlabBlockThreads that fit on the whole device at once (0 and an
// error when the kernel image cannot run on the current device).
cudaError_t LSlabResidentBlocks(int* blocks);

}  // namespace kvcg::store::gpu
