// GpuStore: the canonical store on the GPU (L-Slab) behind the Store
// contract.
//
// Submit (any thread) checks each op (CheckOperation, as the CPU backend),
// hashes its key with Config::hash, and routes it by hash to one orchestrator
// thread (its "part" of the request). Every op on a key therefore goes
// through the same orchestrator's FIFO queue, and one orchestrator runs its
// batches in order on its own CUDA stream; together with the in-batch
// numbering of same-key ops (same_key_order.h) that gives the contract's
// same-key order across orchestrators and streams, and it makes each
// orchestrator the only thread that allocates or frees the out-of-slab memory
// of its keys (device_heaps.h). The request completes when its last part does.
//
// Device state: the bucket array (head slabs), the slab pool (slab_pool.h),
// the counters (keys, charged bytes, pool bump pointer, limits).
//
// Clear() parks every orchestrator at a barrier queued behind the work
// submitted before it, wipes the table, and lets them go on. It must not be
// called from a completion callback (the calling orchestrator would wait for
// itself).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "kvcg/gpu_bulk.h"
#include "kvcg/store.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/slab_pool.h"

namespace kvcg::store::gpu {

class Orchestrator;
class BulkContext;

// One Submit call.
struct Request {
  Batch batch;
  Store::Completion done;
  std::vector<OpResult> results;
  std::atomic<uint32_t> parts_left{0};
};

struct ClearBarrier;

// The ops of one request routed to one orchestrator, in batch order.
struct Part {
  Request* request = nullptr;  // nullptr: a Clear barrier
  ClearBarrier* barrier = nullptr;
  std::vector<uint32_t> ops;
  std::vector<uint64_t> hashes;
  size_t next = 0;      // ops before this were put into batches
  size_t pending = 0;   // ops not completed yet
};

// Parks every orchestrator for Clear().
struct ClearBarrier {
  std::mutex mu;
  std::condition_variable cv;
  uint32_t arrived = 0;
  bool released = false;
  uint32_t left = 0;  // orchestrators that woke up (the barrier dies after all did)
};

class GpuStore final : public Store {
 public:
  // Use Open.
  GpuStore(const Config& config);
  ~GpuStore() override;

  static Status Open(const Config& config, std::unique_ptr<Store>* out);

  void Submit(Batch batch, Completion done) override;
  // Submit and wait, spinning briefly before sleeping: a GPU batch completes
  // in tens of microseconds, about what a futex wake-up costs.
  void ExecuteInto(const Batch& batch, std::vector<OpResult>* results) override;
  uint64_t Size() const override;
  uint64_t MemoryBytes() const override;
  void Clear() override;
  StoreInfo Info() const override;

  // kvcg::gpu::ExecuteFixed8 (kvcg/gpu_bulk.h, which states the contract):
  // runs on the calling thread with a pooled BulkContext (bulk.h), beside
  // the orchestrators, against the same table.
  Status BulkFixed8(const kvcg::gpu::Fixed8Ops& ops);

  // --- For orchestrators and benchmarks.
  const Config& config() const { return config_; }
  bool general() const { return config_.layout == Layout::kGeneral; }
  const TableView& table() const { return table_; }
  SlabPool& pool() { return *pool_; }
  uint32_t max_batch_ops() const { return max_batch_ops_; }
  // Orchestrators arrive here at a Clear barrier.
  void ArriveAtBarrier(ClearBarrier* barrier);
  // Per-entry overhead charged to max_memory_bytes (beyond key + value).
  uint64_t entry_overhead() const { return table_.entry_overhead; }

 private:
  Status Init();
  void ReadCounters(DeviceCounters* out) const;
  uint32_t Route(uint64_t hash) const {
    return uint32_t(((hash * 0xC2B2AE3D27D4EB4Full) >> 32) % orchestrators_.size());
  }

  const Config config_;
  std::string device_name_;
  uint32_t max_batch_ops_ = 0;
  uint64_t bucket_count_ = 0;
  std::unique_ptr<DeviceBudget> budget_;
  std::unique_ptr<SlabPool> pool_;
  TableView table_{};
  uint64_t* buckets_ = nullptr;
  uint64_t** chunk_table_ = nullptr;
  DeviceCounters* counters_ = nullptr;
  mutable std::mutex control_mu_;
  cudaStream_t control_ = nullptr;
  std::vector<std::unique_ptr<Orchestrator>> orchestrators_;
  std::mutex clear_mu_;  // one Clear at a time
  // Bulk calls hold it shared; Clear() exclusively (no kernel of a bulk call
  // may run while the table is wiped).
  std::shared_mutex clear_gate_;
  std::mutex bulk_mu_;
  std::vector<std::unique_ptr<BulkContext>> bulk_free_;  // idle contexts
};

}  // namespace kvcg::store::gpu
