// BulkContext: the host driver of kvcg::gpu::ExecuteFixed8 (kvcg/gpu_bulk.h).
//
// A call is cut into chunks (1M ops by default). Each chunk goes to one of
// two slots, each with its own stream and device buffers: copy in (types,
// keys, values), hash + number on the GPU (bulk_kernels.h), L-Slab kernel,
// translate, copy out straight into the caller's arrays. Chunk k's copies and
// numbering overlap chunk k-1's L-Slab kernel, but its L-Slab kernel waits
// (stream event) for chunk k-1's: ops of one key in different chunks take
// effect in array order. The host touches each op once, to validate the
// types and count the PUTs (the slab reservation of slab_pool.h).
//
// A chunk whose slabs cannot be fully reserved (device memory short) runs
// alone with what is available, like an orchestrator's exclusive batch; its
// RETRY ops are re-run in order until done, kCapacityExhausted, or
// retry_timeout_ms (kTimedOut).
//
// Not thread-safe: GpuStore hands one context to one call at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kvcg/gpu_bulk.h"
#include "store/gpu/bulk_kernels.h"

namespace kvcg::store::gpu {

class GpuStore;

class BulkContext {
 public:
  explicit BulkContext(GpuStore* store) : store_(store) {}
  ~BulkContext();
  BulkContext(const BulkContext&) = delete;
  BulkContext& operator=(const BulkContext&) = delete;

  // Runs a validated call (GpuStore::BulkFixed8 checked the arguments).
  Status Run(const kvcg::gpu::Fixed8Ops& ops);

 private:
  struct Slot {
    BulkChunkDev dev;
    cudaStream_t stream = nullptr;
    cudaEvent_t kernel_done = nullptr;  // its L-Slab kernel finished
    cudaEvent_t done = nullptr;         // everything, copies out included
    uint32_t* hdr_host = nullptr;       // pinned copy of dev.hdr
    uint64_t* hash_host = nullptr;      // pinned; custom Config::hash only
    bool busy = false;
    bool exclusive = false;
    bool exhausted = false;
    uint64_t reserved = 0;
    size_t off = 0, cnt = 0;
  };

  cudaError_t Ensure(size_t capacity);
  void FreeBuffers();
  // Enqueues one chunk on `s` (arrays already offset). `after`: an L-Slab
  // event to wait for, or nullptr.
  cudaError_t Issue(Slot& s, const OpType* types, const uint64_t* keys, const uint64_t* values,
                    Code* codes, uint64_t* results, size_t cnt, int allowance, cudaEvent_t after);
  // Waits for `s`, releases its slabs, re-runs its RETRY ops if it ran alone.
  cudaError_t Finish(Slot& s, const kvcg::gpu::Fixed8Ops& ops);
  cudaError_t Retry(Slot& s, const kvcg::gpu::Fixed8Ops& ops);

  GpuStore* const store_;
  size_t capacity_ = 0;
  Slot slots_[2];
};

}  // namespace kvcg::store::gpu
