// kvcg/gpu_bulk.h — columnar bulk operations on a GPU store of the fixed8
// layout (cuCollections-style host bulk API).
//
// Store::Submit carries one std::string per key, value and result, and the
// GPU backend's orchestrators pack them into batches one op at a time: tens
// of nanoseconds of host work per op, which caps the batch API far below
// what PCIe carries. ExecuteFixed8 instead takes structure-of-arrays host
// buffers and does no per-op host work beyond one pass over the op types:
// the keys are hashed and same-key ops numbered on the GPU, each chunk of the
// call is one copy in, a few kernels and one copy out, and two streams
// overlap one chunk's copies with the previous chunk's kernels.
//
// Results are exactly those the Store path gives for the same ops in the
// same order (same table: a store may be used through both at once).
//
//   std::unique_ptr<kvcg::Store> store;   // backend kGpu, layout kFixed8
//   kvcg::gpu::Fixed8Ops ops;             // arrays from AllocPinned, ideally
//   ops.n = n; ops.types = t; ops.keys = k; ops.values = v;
//   ops.codes = c; ops.results = r;
//   kvcg::Status s = kvcg::gpu::ExecuteFixed8(store.get(), ops);
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvcg/batch.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace kvcg::gpu {

// One call's ops, structure of arrays, each of length n. A key or value is
// the 8 bytes that the Store path would carry as an 8-byte string, read
// little-endian (memcpy of the string into a uint64_t).
struct Fixed8Ops {
  size_t n = 0;
  const OpType* types = nullptr;   // kGet, kPut or kDelete (no kCompareAndSwap)
  const uint64_t* keys = nullptr;
  const uint64_t* values = nullptr;  // read for kPut only; may be null if no op is a kPut
  Code* codes = nullptr;           // out: as OpResult::code
  uint64_t* results = nullptr;     // out: kOk: the value found / replaced / deleted; else 0
  // Ops per pipelined chunk (0: the default, 1M). Tests use small chunks to
  // exercise the cross-chunk ordering.
  size_t chunk_ops = 0;
};

// Runs ops[0..n) against `store` and returns when every result is in
// `codes` / `results`.
//
// Order: ops on one key take effect in array order, and every op of the call
// takes effect after every op of an earlier call (or Store::Execute /
// Submit whose completion ran) on the same thread. Ops of Submit calls still
// in flight when ExecuteFixed8 starts are not ordered against it. Ops on
// different keys, and ops of calls running at the same time on other
// threads, are each atomic but in no promised order (as for Store::Submit).
//
// Errors (nothing is run and the outputs are untouched):
//   InvalidArgument: `store` is not a GPU store of the fixed8 layout, an
//     array is null (values only when a kPut is present), or a type is not
//     kGet / kPut / kDelete.
//   Unavailable: built without CUDA.
// Per op, as the Store path: kCapacityExhausted (max_keys, max_memory_bytes,
// device memory), kTimedOut (a retry after pool growth outlasted
// retry_timeout_ms). A device failure returns Internal; results are then
// undefined.
//
// Thread-safe: any number of threads may call it at once, together with
// Store calls. Buffers from AllocPinned (page-locked) are copied at PCIe
// speed; pageable buffers work but are staged by the driver (slower).
// Clear() waits for running calls and runs between calls.
Status ExecuteFixed8(Store* store, const Fixed8Ops& ops);

// Page-locked host memory for the arrays above; nullptr when it cannot be
// had. FreePinned(nullptr) is a no-op. Thread-safe.
void* AllocPinned(size_t bytes);
void FreePinned(void* p);

}  // namespace kvcg::gpu
