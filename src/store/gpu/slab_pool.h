// SlabPool: the host side of the device slab allocator, and DeviceBudget,
// the device memory the table may take (Config::gpu_memory_bytes).
//
// The kernel takes overflow slabs with one atomic on a bump counter
// (lslab_types.h). The host keeps that counter from running dry under a
// launched batch: before launch every batch reserves one slab per op that may
// insert (an insert adds at most one slab), the pool grows (new zeroed 34 MiB
// chunks) until used + reserved fits, and the kernel lets a batch take at most
// its reservation (its "allowance"). So a batch that reserved fully can never
// see an empty pool, and ops of batches launched after it cannot overtake a
// retry. Only when the budget (or the card) is exhausted does a batch run
// with a partial allowance; it then runs alone in the pipeline, and the
// ops that found no slab come back as RETRY (retried after growth, else
// kCapacityExhausted). The host learns how many slabs a batch took from its
// allowance left over, so `used` is exact without reading the device.
//
// Thread-safe (one mutex; growth is rare).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "store/gpu/lslab_types.h"
#include "store/gpu/table_space.h"

namespace kvcg::store::gpu {

class DeviceBudget {
 public:
  explicit DeviceBudget(uint64_t limit) : limit_(limit) {}
  // Takes `bytes` if they fit under the limit.
  bool Take(uint64_t bytes);
  void Give(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

class SlabPool final : public TableSpace {
 public:
  // `counters` and `chunk_table` are device addresses owned by the caller.
  SlabPool(DeviceBudget* budget, DeviceCounters* counters, uint64_t** chunk_table);
  ~SlabPool();
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  // Reserves `slabs`, growing the pool if needed. False (nothing reserved)
  // when the budget cannot cover them.
  bool Reserve(uint64_t slabs) override;
  // Grows toward `want` as far as the budget allows, then reserves whatever
  // is free (possibly 0). Returns the amount reserved. *exhausted is set when
  // not a single slab is left even counting other batches' reservations
  // (which are released as they finish): only then is the pool really full.
  uint64_t ReserveAvailable(uint64_t want, bool* exhausted) override;
  // A batch finished: it had reserved `reserved` and took `taken` of them.
  void Release(uint64_t reserved, uint64_t taken) override;
  // Clear(): forget every slab; the caller guarantees nothing is running.
  // With `taken`, the table's growth (lslab_growth.h): the first `taken`
  // slabs (pool indices 1..taken, which must be backed: EnsureCapacity) are
  // in use again once it returns, zeroed like the rest.
  cudaError_t Reset(uint64_t taken = 0);
  // Grows until pool indices below `capacity` are backed, as far as the
  // budget allows; false if it could not. Nothing may be reserved (the
  // table's growth, with nothing in flight).
  bool EnsureCapacity(uint64_t capacity);
  // Sets every pool slab's access bytes (lslab_types.h) to `value`; nothing
  // may be running.
  cudaError_t FillAccess(uint8_t value);

  uint64_t capacity() const;
  uint64_t chunk_count() const;
  // Overflow slabs taken so far (benchmarks: the table's size).
  uint64_t used() const;
  // The first CUDA error met while growing (cudaSuccess if none).
  cudaError_t error() const { return error_.load(); }

 private:
  bool GrowLocked(uint64_t min_capacity);

  DeviceBudget* const budget_;
  DeviceCounters* const counters_;
  uint64_t** const chunk_table_;
  cudaStream_t stream_ = nullptr;
  mutable std::mutex mu_;
  std::vector<uint64_t*> chunks_;
  uint64_t capacity_ = 0;  // pool indices below this are backed
  uint64_t used_ = 1;      // == the device's slabs_next (index 0 is "none")
  uint64_t reserved_ = 0;
  std::atomic<cudaError_t> error_{cudaSuccess};
};

}  // namespace kvcg::store::gpu
