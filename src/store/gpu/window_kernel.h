// Host entry point of the window table's kernel (window_kernel.cu): one
// launch executes one aggregated batch (ArbView, fixed8 columns) against a
// window table (window_types.h). Plain C++ so host code can call it.
//
// Same contract as LaunchLSlab (lslab_kernel.h) for a fixed8 ARB: the same
// input columns (hash, key, ctl, value, expected, skip, done, cursor, slab
// allowance — here the EMPTY slots the batch may claim), the same results
// (out_codes / out_values in kvcg's form, or the raw res_code / res_value
// columns when out_codes is null), the same retry codes. A launch that
// writes must not overlap any other launch on the table (the table's
// argument for needing no lock is that no op runs beside a write on its
// key: window_types.h); launches of the GET kernel (below) may overlap
// each other. The pipeline orders its launches (WaitForTableKernels), so
// does every caller of this.
#pragma once

#include <cuda_runtime_api.h>

#include "store/gpu/lslab_types.h"
#include "store/gpu/resident_ring.h"
#include "store/gpu/window_types.h"

namespace kvcg::store::gpu {

constexpr int kWindowBlockThreads = 256;
constexpr int kWindowTile = 4;  // lanes per op: one 16-byte slot each
// The kernel's launch bounds: 5 blocks per SM at 48 registers (occupancy
// 0.62). Its state was cut to fit: 32-bit window indices, a writer's fields
// loaded where used, a warp's ops in a ring in shared memory
// (window_kernel.cu). H100 2026-11-27, 95/5 at load 0.7: 8.85 G ops/s
// before (64 registers, 4 blocks), 9.56 with 5 blocks, 10.2 with the ring;
// the same code bounded for 6 blocks (40 registers) spilled and ran at 9.30.
constexpr int kWindowMinBlocks = 5;

// Enqueues the kernel on `stream`; `max_blocks` caps the grid (0 = as many
// blocks as can be resident). Returns the launch error, if any. An ARB with
// gets_only set must hold GETs only (skipped ops aside): it runs the GET
// kernel (LaunchWindowGets), on a table without access bytes.
cudaError_t LaunchWindowOps(const WindowTableView& table, const ArbView& arb, uint32_t max_blocks,
                            cudaStream_t stream);

// Whether LaunchWindowOps runs an ARB (gets_only: ArbView::gets_only) on
// the GET kernel: GETs only, on a table without access bytes (cache mode's
// GETs write theirs, which the GET kernel leaves to the general one). Such
// a kernel writes nothing in the table, so the pipeline lets its launches
// run beside each other (Pipeline::WaitForTableKernels).
inline bool TakesGetKernel(const WindowTableView& table, bool gets_only) {
  return gets_only && table.access_mode == kAccessNone;
}

// The GET kernel alone (window_get_kernel.cu), for an ARB of GETs only on
// a table without access bytes; LaunchWindowOps calls it for such an ARB.
// Its grid is one 64-thread block per 64 ops; `max_blocks` (0: no cap)
// caps it, and the warps then take further 32-op chunks in turn.
cudaError_t LaunchWindowGets(const WindowTableView& table, const ArbView& arb, uint32_t max_blocks,
                             cudaStream_t stream);

// The resident kernel (resident_ring.h) for the window table: `blocks`
// blocks of kWindowBlockThreads, enqueued on `stream`.
cudaError_t LaunchWindowResident(const ResidentParams& p, uint32_t blocks, cudaStream_t stream);

// Blocks of kWindowBlockThreads that fit on the device at once.
cudaError_t WindowResidentBlocks(int* blocks);
// Threads of the GET kernel that fit on the device at once (its occupancy,
// times the device's threads).
cudaError_t WindowGetResidentThreads(int* threads);

}  // namespace kvcg::store::gpu
