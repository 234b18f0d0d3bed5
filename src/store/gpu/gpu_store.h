// GpuStore: the canonical store on the GPU behind the Store contract. The
// general layout keeps the L-Slab table (lslab_types.h); fixed8 the window
// table (window_types.h): open addressing, one 64-byte read per GET.
//
// Submit hands the batch to the store's one pipeline (pipeline.h) and
// returns: the check of each op, its hash and the same-key numbering all run
// on the GPU, so Submit does no per-op work. NewBatch() leases page-locked
// memory (pinned_memory.h) so a large batch is copied to the device as is.
//
// Device state: general: the bucket array (head slabs) and the slab pool
// (slab_pool.h); fixed8: the window table and its space (window_space.h);
// both: the counters (keys, charged bytes, limits; general: the pool's bump
// pointer).
//
// Clear() queues a marker behind the work submitted before it; the pipeline
// wipes the table when it gets there. OpenSnapshot() queues a marker too;
// the pipeline copies the table's index to page-locked host memory there
// (pipeline_snapshot.cc). ReclaimExpired() queues a sweep marker
// (pipeline_expiry.cc). None of them may be called from a completion (the
// pipeline thread would wait for itself).
//
// Expiry (general layout): each key record holds its expire-at; the L-Slab
// kernel treats an expired key as absent (lazy expiry) and a sweep kernel
// reclaims expired keys nobody touches (active expiry, expiry_kernels.h).
// Layout::kFixed8 refuses every op with an expiry (kInvalidArgument).
//
// Eviction (max_memory_bytes with an evicting policy): the L-Slab kernel
// keeps an access byte per key, and the pipeline evicts between ARBs by
// ranking every key at once (eviction_kernels.h, pipeline_eviction.cc).
// KeyAccess (OBJECT FREQ) looks the key up with a one-thread kernel on the
// control stream and answers its LFU counter under an LFU policy; under any
// other it answers kUnavailable for a live key: the GPU's LRU time is a pass
// count, not a clock, so it has no idle time to report.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "kvcg/store.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/pinned_memory.h"
#include "store/gpu/pipeline_profile.h"
#include "store/gpu/slab_pool.h"
#include "store/gpu/table_space.h"
#include "store/gpu/window_space.h"
#include "store/gpu/window_table.h"

namespace kvcg::store::gpu {

class Pipeline;
struct SnapshotMarker;
struct SettingMarker;

class GpuStore final : public Store {
 public:
  // Use Open.
  GpuStore(const Config& config);
  ~GpuStore() override;

  static Status Open(const Config& config, std::unique_ptr<Store>* out);

  Batch NewBatch() override { return Batch(pinned_.get()); }
  void Submit(Batch batch, Completion done) override;
  uint64_t Size() const override;
  uint64_t MemoryBytes() const override;
  void Clear() override;
  StoreInfo Info() const override;
  // keys, volatile and expired counts from the device counters; avg_ttl_ms
  // from the last sweep.
  KeyspaceStats Keyspace() const override;
  uint64_t ReclaimExpired() override;
  // Store::SetMemoryLimit: applied by the pipeline between two ARBs (a
  // marker), which evicts down to a lower limit before this returns. Cache
  // mode on the GPU: pipeline_eviction.cc. Must not be called from a
  // completion.
  Status SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) override;
  // Store::KeyAccess, see above (kInternal on a device failure).
  Status KeyAccess(std::string_view key, KeyAccessInfo* info) const override;
  // ReclaimExpired, reporting how many sweep kernels ran and their device
  // time (benchmarks).
  uint64_t ReclaimExpired(uint64_t* passes, double* kernel_ms);
  // Store::OpenSnapshot. Errors: kInternal on a device failure, or when the
  // page-locked memory for the image (16 bytes a key, fixed8; 24 + the key
  // rounded up to 8, general) cannot be had.
  Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out) override;
  // Store::Scan: the cursor is a bucket's place in a space of 2^48 (general:
  // bucket << (48 - bucket bits), so a cursor stays exact when the table
  // grows, lslab_growth.h) or a window index tagged with the window table's
  // rebuild generation (fixed8; a cursor from before a rebuild reads the
  // copy of the table kept from then, or starts over when none is kept:
  // window_space.h); a step copies a run of buckets or windows (about
  // `count` entries) at a pipeline marker, which picks the run.
  Status Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next) override;

  // --- For the pipeline and benchmarks.
  const Config& config() const { return config_; }
  bool general() const { return config_.layout == Layout::kGeneral; }
  // The L-Slab table (general); for fixed8 only its counters, entry
  // overhead, access mode and generation are meaningful.
  const TableView& table() const { return table_; }
  // General layout only.
  SlabPool& pool() { return *pool_; }
  // Fixed8 only: the window table (rebuilt by window_space(), with nothing in
  // flight) and the view a launch takes: the table's, with the store's
  // access mode and LRU generation (the table keeps neither). The pipeline
  // thread only.
  WindowTable& window() { return *window_; }
  WindowSpace& window_space() { return *window_space_; }
  WindowTableView window_view() const {
    WindowTableView v = window_->view();
    v.access_mode = table_.access_mode;
    v.generation = table_.generation;
    return v;
  }
  // What a batch reserves before it launches (table_space.h).
  TableSpace& space() {
    return general() ? static_cast<TableSpace&>(*pool_) : static_cast<TableSpace&>(*window_space_);
  }
  uint32_t max_batch_ops() const { return max_batch_ops_; }
  // ARBs posted to the resident kernel's ring, its launches, ARBs launched
  // on a stream, and the pipeline thread's idle sleeps, since Open
  // (pipeline_resident.cc, pipeline.cc). Thread-safe; for tests and
  // benchmarks.
  using PathCounts = PipelinePathCounts;
  PathCounts path_counts() const;
  // The pipeline, at a Clear marker with nothing in flight: empties the table.
  void WipeTable();
  // General layout; the pipeline thread, nothing in flight and the resident
  // kernel stopped: rebuilds the L-Slab table with about 16 entries a
  // bucket, or as many buckets as it has when that is more, or as fit in
  // half the device budget (lslab_growth.h). Not an error when it cannot
  // (no memory for the rebuild): then rebuilt is false and the table is as
  // it was. An error is a device failure.
  struct SlabGrowth {
    bool rebuilt = false;
    uint64_t old_buckets = 0, new_buckets = 0, entries = 0, overflow_slabs = 0;
  };
  Status GrowSlabTable(SlabGrowth* g);
  uint64_t bucket_count() const { return bucket_count_.load(std::memory_order_relaxed); }
  // Per-entry overhead charged to max_memory_bytes (beyond key + value).
  uint64_t entry_overhead() const { return table_.entry_overhead; }
  // The pipeline thread only (kernels take the table view at launch): the
  // device's max_mem word, what the L-Slab kernel records in the access
  // bytes, and the LRU generation (eviction_kernels.h).
  Status WriteMemoryLimit(uint64_t max_memory_bytes);
  // Every slot's access byte := value (nothing may be running).
  Status FillAccessBytes(uint8_t value);
  void SetAccessMode(uint32_t mode) {
    table_.access_mode = mode;
    access_mode_.store(mode, std::memory_order_relaxed);
  }
  // LFU: counters are decayed up to this clock time (KeyAccess subtracts
  // the minutes since).
  void NoteLfuDecay(uint64_t at_ms) { lfu_decay_at_ms_.store(at_ms, std::memory_order_relaxed); }
  void AdvanceGeneration() { table_.generation = (table_.generation + 1) & 0xff; }

 protected:
  // Store::SetActiveExpiryHz: a pipeline marker like SetMemoryLimit (the
  // periodic sweep is the pipeline's); fixed8 stores no expiry and ignores it.
  Status ApplyActiveExpiryHz(uint32_t hz) override;

 private:
  // Queues `marker` (its bucket range set) and waits for its image.
  Status CopyBuckets(SnapshotMarker* marker, std::unique_ptr<SnapshotReader>* out);
  // Queues `marker` and waits until the pipeline applied it.
  Status ApplySetting(SettingMarker* marker);
  Status Init();
  Status InitSlabTable(uint64_t budget);
  Status InitWindowTable(uint64_t budget);
  void ReadCounters(DeviceCounters* out) const;

  const Config config_;
  std::string device_name_;
  uint32_t max_batch_ops_ = 0;
  std::atomic<uint64_t> bucket_count_{0};  // general: the table's, written under control_mu_
  std::unique_ptr<DeviceBudget> budget_;
  std::unique_ptr<SlabPool> pool_;               // general
  std::unique_ptr<WindowTable> window_;          // fixed8
  std::unique_ptr<WindowSpace> window_space_;    // fixed8
  TableView table_{};
  uint64_t* buckets_ = nullptr;
  uint64_t** chunk_table_ = nullptr;
  DeviceCounters* counters_ = nullptr;
  mutable std::mutex control_mu_;
  cudaStream_t control_ = nullptr;
  // KeyAccess: the answer word, then the key (device; under control_mu_).
  mutable uint64_t* access_scratch_ = nullptr;
  mutable size_t access_scratch_words_ = 0;
  std::atomic<uint32_t> access_mode_{0};  // table_.access_mode, for other threads
  std::atomic<uint64_t> lfu_decay_at_ms_{0};
  // Declared before the pipeline: batches and results borrow it, and the
  // pipeline's destructor returns memory to it.
  std::unique_ptr<PinnedMemory> pinned_;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace kvcg::store::gpu
