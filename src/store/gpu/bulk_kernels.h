// Device side of the columnar bulk path (bulk.h): per chunk, hash the keys
// and number the ops that share a key, entirely on the GPU, then translate
// the L-Slab result codes into kvcg::Code bytes. Plain C++ interface so the
// host driver (bulk.cc, g++) can call it.
//
// Numbering is SameKeyOrder's (same_key_order.h) computed by sorting instead
// of a host hash table: a stable radix sort of (key, index) puts each key's
// ops together in array order; a segment is one key. In a segment starting at
// sorted position s, the op at position p gets group s + 1 (0 when the key
// occurs once) and need = p - s for a write, or (last write at or before p)
// - s + 1 for a GET (0 if none) — two max-scans give the segment start and
// the last write position. Group ids are at most n, so `done` has n + 1
// words.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kvcg::store::gpu {

// Device buffers of one chunk (capacity ops each unless noted).
struct BulkChunkDev {
  uint32_t n = 0;
  uint8_t* types = nullptr;      // in: OpType bytes
  uint64_t* keys = nullptr;      // in
  uint64_t* values = nullptr;    // in
  uint64_t* hash = nullptr;      // in (host-hashed) or written here
  uint64_t* ctl = nullptr;
  uint32_t* done = nullptr;      // capacity + 1
  uint64_t* sorted_keys = nullptr;
  uint32_t* idx_in = nullptr;
  uint32_t* idx_out = nullptr;
  int* seg = nullptr;            // scan inputs/outputs
  int* lastw = nullptr;
  int* seg_scan = nullptr;
  int* lastw_scan = nullptr;
  uint32_t* hdr = nullptr;       // [0] cursor, [1] slab allowance, [2] retry flag, [3] unused
  uint8_t* res_code = nullptr;   // L-Slab ResCode
  uint64_t* res_value = nullptr; // L-Slab value, then the API's result
  uint8_t* codes = nullptr;      // kvcg::Code bytes (0xFE: retry no slab, 0xFD: retry poisoned)
  void* temp = nullptr;          // cub scratch
  size_t temp_bytes = 0;
};

constexpr uint8_t kBulkRetryNoSlab = 0xFE;
constexpr uint8_t kBulkRetryPoisoned = 0xFD;

// Scratch bytes cub needs for a chunk of `capacity` ops.
cudaError_t BulkTempBytes(uint32_t capacity, size_t* bytes);

// Hashes (when hash_on_device), numbers, and resets the chunk's header and
// done words; enqueued on `stream`.
cudaError_t BulkPrepare(const BulkChunkDev& c, bool hash_on_device, int allowance,
                        cudaStream_t stream);

// After the L-Slab kernel: codes and result values in the API's form; sets
// hdr[2] when an op must retry.
cudaError_t BulkTranslate(const BulkChunkDev& c, cudaStream_t stream);

}  // namespace kvcg::store::gpu
