// PinnedMemory: the GPU store's pool of page-locked host memory, handed out
// as BatchMemory (Store::NewBatch) and used for the pipeline's result
// buffers and snapshot images.
//
// Pinning costs milliseconds (cudaHostAlloc, or cudaHostRegister of huge
// pages: AllocatePinnedHost below), far too much per batch, so freed blocks are kept in power-of-two
// size classes and reused. Memory is portable (usable from any CUDA context
// of the process) and mapped (kernels write small ARBs' results into it). The pool keeps at most `cache_limit` bytes of idle blocks;
// beyond that a freed block goes back to the driver. The default is 4 GiB:
// with 1 GiB, 14 submitters x 3 in flight of 65,536-op general batches
// (batch columns, arenas and result buffers) passed the limit once the expiry
// columns grew each batch's op region past a power-of-two class, and every
// batch then paid cudaFreeHost + cudaHostAlloc: general 95/5 fell from ~140 M
// to ~20 M ops/s on the H100 (bisected to 2d6191c; 125 M again with 4 GiB).
// Idle blocks are only ever what the workload held at once. Thread-safe (one mutex;
// taken once per block, never per operation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kvcg/batch.h"

namespace kvcg::store::gpu {

// Page-locked, device-mapped, portable host memory of `bytes`, or nullptr.
// A multiple of 2 MiB is backed by 2 MiB pages where the kernel gives them
// (transparent huge pages, madvise), then registered with CUDA: the
// submitters write batch columns and read result buffers at scattered places
// of blocks of several MiB (a 65,536-op general batch's value slots span
// 4 MiB), and with 4 KiB pages (cudaHostAlloc) each of those places is a
// TLB miss, and a random 64-byte read costs 18.6 ns instead of 5 on the H100
// host (bench/results/h100/2026-11-27-value-copy/README.txt, randread.cc).
// Other sizes come from cudaHostAlloc. Costs milliseconds: pool it.
void* AllocatePinnedHost(size_t bytes);
// Frees memory from AllocatePinnedHost(bytes) with the same `bytes`.
void FreePinnedHost(void* p, size_t bytes);

class PinnedMemory final : public BatchMemory {
 public:
  explicit PinnedMemory(size_t cache_limit = size_t(4) << 30) : cache_limit_(cache_limit) {}
  ~PinnedMemory() override;
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;

  void* Allocate(size_t bytes) override;
  void Free(void* p, size_t bytes) override;
  bool pinned() const override { return true; }

 private:
  static constexpr int kMinClass = 12;  // 4 KiB
  static constexpr int kClasses = 40;
  static int ClassOf(size_t bytes);

  static size_t ClassBytes(int c) { return size_t(1) << (c + kMinClass); }

  const size_t cache_limit_;
  std::mutex mu_;
  std::vector<void*> free_[kClasses];
  size_t cached_ = 0;
};

}  // namespace kvcg::store::gpu
