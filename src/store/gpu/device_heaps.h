// The general layout's out-of-slab memory: the pipeline's pair of heaps.
//
// KeyRecordHeap: device memory for key records (lslab_types.h). The host
// allocates a record for every PUT/CAS before launch (it cannot know whether
// the key is new); the kernel fills and links it only when it inserts, and
// the host frees it otherwise, or when a DELETE hands the record back.
// ValueHeap: values in pinned, device-mapped host memory (Mega-KV and the
// paper keep values over 8 bytes outside the GPU index); the kernel swaps
// blob pointers and reads blobs only to compare a CAS's expected value.
// Small stored values are written into their blobs by the GPU (Reserve hands
// out an address without touching it); larger ones by the host (Allocate).
//
// Both are size-class free lists (powers of two) over chunks carved with a
// bump pointer; big blobs get their own allocation. Only the pipeline thread
// allocates and frees: no locks. A replaced blob may still be read through
// Results, so it is freed only when its epoch ends (result_epochs.h); a
// record is never read by a consumer and is freed at the batch's completion.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "store/gpu/lslab_types.h"
#include "store/gpu/slab_pool.h"

namespace kvcg::store::gpu {

class KeyRecordHeap {
 public:
  explicit KeyRecordHeap(DeviceBudget* budget) : budget_(budget) {}
  ~KeyRecordHeap() { Reset(); }
  KeyRecordHeap(const KeyRecordHeap&) = delete;
  KeyRecordHeap& operator=(const KeyRecordHeap&) = delete;

  // Device address of a record for a key of `key_bytes`; 0 when the budget
  // or the card is exhausted.
  uint64_t Allocate(uint32_t key_bytes);
  void Free(uint64_t record, uint32_t key_bytes);
  // Frees every chunk (nothing may be running).
  void Reset();

  static uint64_t RecordBytes(uint32_t key_bytes) { return KeyRecordBytes(key_bytes); }

  // Called before each CUDA allocation or free the heap makes: such calls
  // wait for every running kernel, so the pipeline ends its resident kernel
  // first (resident_ring.h) rather than wait up to its idle bound.
  void SetBeforeCudaCall(std::function<void()> f) { before_cuda_ = std::move(f); }
 private:
  void BeforeCuda() {
    if (before_cuda_) before_cuda_();
  }
  std::function<void()> before_cuda_;
  DeviceBudget* const budget_;
  std::vector<std::vector<uint64_t>> free_;  // by size class
  std::vector<std::pair<void*, uint64_t>> chunks_;
  uint64_t cursor_ = 0, end_ = 0;  // bump range in the newest chunk
  uint64_t next_chunk_ = 1 << 20;
};

class ValueHeap {
 public:
  ValueHeap() = default;
  ~ValueHeap() { Reset(); }
  ValueHeap(const ValueHeap&) = delete;
  ValueHeap& operator=(const ValueHeap&) = delete;

  // A blob holding `bytes` (word 0: size, then the bytes); nullptr when
  // pinned memory cannot be had.
  uint64_t* Allocate(std::string_view bytes);
  // A blob for `size` bytes that the caller fills (word 0 too) without the
  // heap touching its memory.
  uint64_t* Reserve(uint64_t size);
  // `size` is the blob's value size (what Allocate was given): passing it
  // spares reading the blob, a cache miss per free on the pipeline thread.
  void Free(uint64_t* blob, uint64_t size);
  // Frees everything (nothing may be running).
  void Reset();

  static std::string_view Bytes(const uint64_t* blob) {
    return {reinterpret_cast<const char*>(blob + 1), size_t(blob[0])};
  }

  // Called before each CUDA allocation or free the heap makes: such calls
  // wait for every running kernel, so the pipeline ends its resident kernel
  // first (resident_ring.h) rather than wait up to its idle bound.
  void SetBeforeCudaCall(std::function<void()> f) { before_cuda_ = std::move(f); }
 private:
  void BeforeCuda() {
    if (before_cuda_) before_cuda_();
  }
  std::function<void()> before_cuda_;
  static constexpr uint64_t kBigBlob = 1 << 20;
  std::vector<std::vector<uint64_t*>> free_;
  std::vector<void*> chunks_;
  std::unordered_set<uint64_t*> big_;
  char* cursor_ = nullptr;
  char* end_ = nullptr;
  uint64_t next_chunk_ = 64 << 10;
};

}  // namespace kvcg::store::gpu
