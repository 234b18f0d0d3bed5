// WindowSpace: the window table's TableSpace (table_space.h). A batch
// reserves one EMPTY slot per op that may insert, under the table's load
// limit (kMaxWindowLoad); the kernel lets it claim at most that many
// (its allowance), and Release counts what it claimed, so `used` (live
// slots + tombstones) is known on the host without reading the device.
//
// Growth: a rebuild (WindowTable::Grow) moves every entry into a new set of
// windows, which no kernel may overlap, so Reserve never grows — it fails,
// the pipeline drains and calls ReserveAvailable, which rebuilds: into
// about twice the windows the live keys and the batch need (load ~0.4
// after it), or into as many as before when tombstones, not live keys, took
// the room. The old windows are freed after the move; both count against
// the device budget meanwhile.
//
// Thread-safety: the pipeline's thread calls Reserve / ReserveAvailable /
// Release / Reset; a rebuild holds `table_mu` (the store's lock for other
// threads' reads of the table, e.g. KeyAccess) while it runs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <mutex>

#include "store/gpu/slab_pool.h"
#include "store/gpu/table_space.h"
#include "store/gpu/window_table.h"

namespace kvcg::store::gpu {

class WindowSpace final : public TableSpace {
 public:
  // host_hash: empty when the store hashes with Xxh3 (the rebuild hashes on
  // the device), else the store's hash of an 8-byte key. `stream` and
  // `table_mu` are the store's control stream and the lock that guards it.
  WindowSpace(WindowTable* table, DeviceBudget* budget,
              std::function<uint64_t(uint64_t)> host_hash, cudaStream_t stream,
              std::mutex* table_mu);

  bool Reserve(uint64_t n) override;
  uint64_t ReserveAvailable(uint64_t want, bool* exhausted) override;
  void Release(uint64_t reserved, uint64_t taken) override;
  // Clear(): the table is empty again (nothing in flight).
  void Reset();

  uint64_t used() const;
  // Rebuilds so far (a Scan cursor from before one restarts).
  uint64_t generation() const;
  // The first CUDA error a rebuild met (cudaSuccess if none).
  cudaError_t error() const;

 private:
  // Rebuilds for `want` more claims; mu_ held, nothing in flight.
  void RebuildLocked(uint64_t want);

  WindowTable* const table_;
  DeviceBudget* const budget_;
  const std::function<uint64_t(uint64_t)> host_hash_;
  cudaStream_t const stream_;
  std::mutex* const table_mu_;
  mutable std::mutex mu_;
  uint64_t used_ = 0;
  uint64_t reserved_ = 0;
  uint64_t generation_ = 0;
  cudaError_t error_ = cudaSuccess;
};

}  // namespace kvcg::store::gpu
