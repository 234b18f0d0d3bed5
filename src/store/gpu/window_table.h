// WindowTable: the device memory of one window table (window_types.h) —
// its windows, access bytes, sentinel-key side table and counters — and
// the host-side operations on it that are not ops of a batch: clearing,
// limits, counters, and growth (a rebuild into more windows).
//
// Batches run through LaunchWindowOps (window_kernel.h) on view(), with
// the access mode and LRU generation their owner sets on its copy of it
// (GpuStore::window_view): the table keeps neither. Not thread-safe: the owner serialises calls with its launches (Clear, Grow
// and the counter reads synchronise on the stream they are given, and
// nothing else may run on the table during Clear or Grow).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

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
  // and clears them; error() tells whether that worked. entry_overhead:
  // bytes charged per key beyond 16. counters: device counters the owner
  // keeps (a store's, shared with its other kernels), or null for the
  // table's own; their limits are kept, the rest is the table's to count.
  // access_bytes: allocate the access bytes now (else with
  // EnsureAccessBytes: only eviction policies need them, and they are 1.25
  // bytes per key at load 0.8).
  WindowTable(uint64_t windows, uint64_t entry_overhead, DeviceCounters* counters = nullptr,
              bool access_bytes = true);
  ~WindowTable();
  WindowTable(const WindowTable&) = delete;
  WindowTable& operator=(const WindowTable&) = delete;

  cudaError_t error() const { return error_; }
  // The table's memory; access_mode is kAccessNone and generation 0 (see
  // above).
  const WindowTableView& view() const { return view_; }
  uint64_t windows() const { return view_.windows; }
  // Device memory the table holds, in bytes.
  uint64_t device_bytes() const { return block_.bytes; }
  // Device memory a table of `windows` windows (a prime) holds, with or
  // without its access bytes.
  static uint64_t DeviceBytes(uint64_t windows, bool access_bytes);
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
  // Allocates the access bytes (zeroed) if the table has none yet; a no-op
  // otherwise. Nothing may run on the table meanwhile.
  cudaError_t EnsureAccessBytes();

  // Rebuilds the table into NextPrime(windows) windows (at least as many
  // as the live keys need under the load limit), keeping every live entry,
  // its value, its access byte and the counters; tombstones are dropped, so
  // `used` becomes the live slot count. host_hash: empty = the keys' hash is
  // Xxh3Fixed8, computed on the device (the store's default); else the
  // store's own hash of an 8-byte key, which the host runs over a copy of
  // the keys. Synchronous on `stream`; on an error (e.g. no device memory
  // for the new windows) the table is unchanged.
  cudaError_t Grow(uint64_t windows, const std::function<uint64_t(uint64_t)>& host_hash,
                   cudaStream_t stream);

 private:
  // One allocation for the windows, side table, `used` and own counters;
  // one for the access bytes (if any).
  struct Block {
    void* mem = nullptr;
    void* access = nullptr;
    uint64_t bytes = 0;
    WindowTableView view{};
  };
  static cudaError_t Allocate(uint64_t windows, bool access_bytes, Block* out);
  static void Free(Block* b);
  cudaError_t ClearBlock(const WindowTableView& v, cudaStream_t stream);

  WindowTableView view_{};
  Block block_;
  bool own_counters_ = true;
  cudaError_t error_ = cudaSuccess;
};

}  // namespace kvcg::store::gpu
