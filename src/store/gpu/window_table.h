// WindowTable: the device memory of one window table (window_types.h) —
// its windows, access bytes, sentinel-key side table and counters — and
// the host-side operations on it that are not ops of a batch.
//
// Batches run through LaunchWindowOps (window_kernel.h) on view(). Not
// thread-safe: the owner serialises calls with its launches (Clear and the
// counter reads synchronise on the stream they are given).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "store/gpu/window_types.h"

namespace kvcg::store::gpu {

struct WindowTableStats {
  uint64_t keys = 0;       // live keys (the sentinel keys included)
  uint64_t mem_bytes = 0;  // charged bytes
  uint64_t used = 0;       // slots claimed from EMPTY: live keys + tombstones
};

class WindowTable {
 public:
  // Allocates windows — the smallest prime >= `windows` (window_types.h) —
  // and clears them; error() tells whether that worked. entry_overhead: bytes charged per key beyond 16.
  WindowTable(uint64_t windows, uint64_t entry_overhead);
  ~WindowTable();
  WindowTable(const WindowTable&) = delete;
  WindowTable& operator=(const WindowTable&) = delete;

  cudaError_t error() const { return error_; }
  const WindowTableView& view() const { return view_; }
  uint64_t windows() const { return view_.windows; }
  // Device memory the table holds, in bytes.
  uint64_t device_bytes() const { return bytes_; }
  // EMPTY slots a batch may still claim before `used` reaches the load
  // limit (kMaxWindowLoad), given the current `used`.
  uint64_t ClaimableSlots(uint64_t used) const;

  // Every slot EMPTY, no sentinel key, counters 0 (limits kept), on
  // `stream`, synchronously.
  cudaError_t Clear(cudaStream_t stream);
  // max_keys / max_mem (0 = unlimited), synchronously on `stream`.
  cudaError_t SetLimits(uint64_t max_keys, uint64_t max_mem, cudaStream_t stream);
  // The counters, synchronously on `stream`.
  cudaError_t Stats(WindowTableStats* out, cudaStream_t stream) const;
  // Sets the access mode and LRU generation later launches use.
  void SetAccess(uint32_t mode, uint32_t generation) {
    view_.access_mode = mode;
    view_.generation = generation;
  }

 private:
  WindowTableView view_{};
  void* mem_ = nullptr;  // one allocation: windows, side table, counters, access bytes
  uint64_t bytes_ = 0;
  cudaError_t error_ = cudaSuccess;
};

}  // namespace kvcg::store::gpu
