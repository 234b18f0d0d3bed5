// The general layout's out-of-slab memory: the pipeline's pair of heaps.
//
// KeyRecordHeap: device memory for key records (lslab_types.h). Every
// PUT/CAS gets a record before launch (nobody can know whether the key is
// new); the kernel fills and links it only when it inserts, and the
// pipeline frees it otherwise, or when a DELETE hands the record back.
// ValueHeap: values in pinned, device-mapped host memory (Mega-KV and the
// paper keep values over 8 bytes outside the GPU index); the kernel swaps
// blob pointers and reads blobs only to compare a CAS's expected value.
// Its chunks are backed by 2 MiB pages where the kernel allows (THP) and
// then registered with CUDA: consumers read blobs and planners write them
// at random addresses, and with 4 KiB pages each access was a TLB miss
// (H100 host, 2026-11-25: general 100% GET 297 -> 431 M ops/s, the
// consumer's read per GET 34 -> 23 ns; registering is also faster than
// cudaHostAlloc: prefill 5.1 -> 3.3 s).
// Stored values are written into their blobs by the host, on the thread
// that submits the batch (write_plan.h). The GPU once did it for small
// values (each thread storing 8-byte words to mapped host memory at random
// addresses): that bounded general 50/50 at ~5 M PUTs/s on the H100
// (2026-11-25, BENCHMARKS §2j), where the submitters' copies do not
// (streaming stores for values of >= 64 bytes, ValueHeap::Fill).
//
// Both sit on a SizeClassArena: free lists by power-of-two class over chunks
// carved with a bump pointer (big blobs get their own allocation). Threads:
// the memory of a batch's writes is taken on the thread that submits it
// (write_plan.h), in one Take per size class, so the arena has a lock,
// taken once per batch, never per op. Everything else — frees, chunk
// allocation, Reset — is the pipeline thread's (the "owner"): Free queues
// an address without the lock and Flush hands the queue to Take. CUDA
// allocations are owner-only because they wait for every running kernel
// (the pipeline ends its resident kernel first, resident_ring.h); a Take
// that would need one returns short instead, and the owner keeps a spare
// chunk ready (Prepare) so that seldom happens.
// A replaced blob may still be read through Results, so it is freed only
// when its epoch ends (result_epochs.h); a record is never read by a
// consumer and is freed at the batch's completion.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/gpu/lslab_types.h"
#include "store/gpu/slab_pool.h"

namespace kvcg::store::gpu {

class SizeClassArena {
 public:
  // Chunk memory: `allocate` returns a chunk's base (0 when none can be
  // had), `release` gives one back. Both are CUDA calls: owner thread only.
  struct ChunkSource {
    std::function<uint64_t(uint64_t bytes)> allocate;
    std::function<void(uint64_t base, uint64_t bytes)> release;
  };
  SizeClassArena(ChunkSource source, uint64_t first_chunk, uint64_t max_chunk);
  ~SizeClassArena();  // frees every chunk, without the before-CUDA hook
  SizeClassArena(const SizeClassArena&) = delete;
  SizeClassArena& operator=(const SizeClassArena&) = delete;

  // Smallest power-of-two class >= bytes (>= 16), as an exponent.
  static uint32_t ClassOf(uint64_t bytes);

  // Puts up to `count` addresses of class `c` into `out` and returns how
  // many: from the free list, then the bump range, then the spare chunk;
  // with `may_grow` (owner only) new chunks as needed, short only when
  // the memory is exhausted. Any thread.
  size_t Take(uint32_t c, size_t count, uint64_t* out, bool may_grow);
  // Gives back `n` addresses of class `c` taken and never used. Any thread.
  void Return(uint32_t c, const uint64_t* addrs, size_t n);
  // Owner only. Free queues; Flush makes the queued addresses takeable.
  // Queued by class, so that Flush moves each class's queue with one copy:
  // the pipeline frees two addresses per replacing PUT.
  void Free(uint64_t addr, uint32_t c) {
    pending_[c].push_back(addr);
    pending_classes_ |= 1ull << c;
  }
  void Flush();
  // Owner only: when the bump range's chunk is half used and no spare is
  // ready, allocates the spare (so other threads' Takes find memory).
  void Prepare();
  // Owner only, nothing running: frees every chunk.
  void Reset();

  // Called before each chunk allocation or release (owner thread).
  void SetBeforeCudaCall(std::function<void()> f) { before_cuda_ = std::move(f); }

 private:
  // Under mu_: carve `size` bytes from the bump range or the spare; 0 when
  // neither has them.
  uint64_t CarveLocked(uint64_t size);
  // Owner, without mu_: a new chunk of at least `min_bytes`; 0 when none.
  uint64_t NewChunk(uint64_t min_bytes, uint64_t* bytes);

  const ChunkSource source_;
  const uint64_t first_chunk_, max_chunk_;
  std::function<void()> before_cuda_;
  static constexpr uint32_t kClasses = 64;
  std::array<std::vector<uint64_t>, kClasses> pending_;  // owner only, by class
  uint64_t pending_classes_ = 0;  // owner only: the classes with a queue

  std::mutex mu_;
  std::vector<std::vector<uint64_t>> free_;  // by class
  uint64_t begin_ = 0, cursor_ = 0, end_ = 0;  // the newest chunk and its bump range
  uint64_t spare_ = 0, spare_bytes_ = 0;       // an allocated chunk not yet carved
  // Owner only: every chunk allocated (for Reset), the next one's size.
  std::vector<std::pair<uint64_t, uint64_t>> chunks_;
  uint64_t next_chunk_;
};

class KeyRecordHeap {
 public:
  explicit KeyRecordHeap(DeviceBudget* budget);
  KeyRecordHeap(const KeyRecordHeap&) = delete;
  KeyRecordHeap& operator=(const KeyRecordHeap&) = delete;

  static uint64_t RecordBytes(uint32_t key_bytes) { return KeyRecordAllocBytes(key_bytes); }
  static uint32_t ClassOf(uint32_t key_bytes) {
    return SizeClassArena::ClassOf(RecordBytes(key_bytes));
  }

  // `count` record addresses of class `c` (ClassOf); see SizeClassArena::Take.
  size_t Take(uint32_t c, size_t count, uint64_t* out, bool may_grow) {
    return arena_.Take(c, count, out, may_grow);
  }
  void Return(uint32_t c, const uint64_t* addrs, size_t n) { arena_.Return(c, addrs, n); }
  void Free(uint64_t record, uint32_t key_bytes) {
    if (record != 0) arena_.Free(record, ClassOf(key_bytes));
  }
  void Flush() { arena_.Flush(); }
  void Prepare() { arena_.Prepare(); }
  void Reset() { arena_.Reset(); }
  void SetBeforeCudaCall(std::function<void()> f) { arena_.SetBeforeCudaCall(std::move(f)); }

 private:
  DeviceBudget* const budget_;
  SizeClassArena arena_;
};

class ValueHeap {
 public:
  ValueHeap();
  ~ValueHeap();
  ValueHeap(const ValueHeap&) = delete;
  ValueHeap& operator=(const ValueHeap&) = delete;

  // Blobs bigger than this get an allocation of their own (owner only).
  static constexpr uint64_t kBigBlob = 1 << 20;
  // The class of a blob for a value of `size` bytes (the blob is the bytes).
  static uint32_t ClassOf(uint64_t size) { return SizeClassArena::ClassOf(size); }
  static bool Big(uint64_t size) { return size > kBigBlob; }

  // `count` blobs of class `c` (not big); see SizeClassArena::Take.
  size_t Take(uint32_t c, size_t count, uint64_t** out, bool may_grow) {
    return arena_.Take(c, count, reinterpret_cast<uint64_t*>(out), may_grow);
  }
  void Return(uint32_t c, uint64_t* const* blobs, size_t n) {
    arena_.Return(c, reinterpret_cast<const uint64_t*>(blobs), n);
  }
  // Owner only. A blob holding `bytes`; nullptr when pinned memory cannot
  // be had.
  uint64_t* Allocate(std::string_view bytes);
  // Owner only. `size` is the blob's value size (what Allocate was given):
  // the blob does not record it.
  void Free(uint64_t* blob, uint64_t size);
  void Flush() { arena_.Flush(); }
  void Prepare() { arena_.Prepare(); }

  // Fills a blob taken for `bytes`. A value of 64 bytes or more goes with
  // non-temporal stores, its last 16-byte piece padded (a blob's block is
  // a multiple of 16 bytes): the blob is a random line of a heap far larger
  // than the caches, which an ordinary store would first read (the
  // planner's ~100 ns miss per PUT), and no host thread reads it before its
  // batch completes (the GPU may, for a later CAS in the same ARB: after
  // the fence). The caller issues FillFence() before the blobs are
  // published.
  static void Fill(uint64_t* blob, std::string_view bytes);
  static void FillFence();

  void SetBeforeCudaCall(std::function<void()> f) {
    before_cuda_ = f;
    arena_.SetBeforeCudaCall(std::move(f));
  }

 private:
  void BeforeCuda() {
    if (before_cuda_) before_cuda_();
  }
  std::function<void()> before_cuda_;
  SizeClassArena arena_;
  std::unordered_map<uint64_t*, uint64_t> big_;  // blob -> bytes allocated; owner only
};

}  // namespace kvcg::store::gpu
