// Orchestrator: one thread, one CUDA stream, two pinned batch buffers
// (the paper's orchestrator threads, §5).
//
// Loop: take parts from the FIFO queue into the free buffer until the batch
// holds max_batch_ops ops, the aggregation time bound (gpu_batch_timeout_us,
// Mega-KV's periodic scheduling) has passed since the first op, or the queue
// stayed empty for a small dequeue budget of polls (so a lone small batch
// leaves at once); pack it (hashes, keys, values, same-key numbering) into
// one contiguous pinned region; then copy in, run the kernel and copy out,
// all asynchronous on the stream. While that runs the next batch is gathered
// and launched into the other buffer; the older batch is then completed: its
// results are built, memory of replaced values freed, completions called.
// Batches of one orchestrator run in queue order on one stream, so ops on
// one key (always routed here) take effect in submission order.
//
// A batch that could not reserve its slabs (device memory exhausted) runs
// alone: the other buffer is completed first, and it is completed before
// anything else is launched, so its RETRY ops can be re-run in order.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "store/gpu/device_heaps.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/same_key_order.h"

namespace kvcg::store::gpu {

class Orchestrator {
 public:
  Orchestrator(GpuStore* store, uint32_t id, DeviceBudget* budget);
  ~Orchestrator();
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  // Creates the stream and events and starts the thread.
  cudaError_t Start();
  // Takes ownership of `part` (a request part, or a Clear barrier).
  void Enqueue(Part* part);
  // Finishes everything queued, then stops the thread. Idempotent.
  void Stop();

 private:
  struct OpRef {
    Part* part;
    uint32_t op;      // index in part->request->batch
    uint64_t hash;
    uint64_t* blob;   // general: the new value (PUT/CAS)
    uint64_t rec;     // general: pre-allocated key record (PUT/CAS)
    bool failed;      // no host memory for the value: answer kCapacityExhausted
  };
  struct Slot {
    std::vector<OpRef> ops;
    uint64_t arena_bytes = 0;
    bool has_cas = false;
    char* host = nullptr;
    char* dev = nullptr;
    size_t capacity = 0;
    cudaEvent_t event = nullptr;
    // Region layout of the current batch (byte offsets).
    size_t hash_off, key_off, ctl_off, value_off, expected_off, rec_off, vlen_off, done_off,
        arena_off, hdr_off, code_off, rvalue_off, rrec_off, end;
    uint64_t reserved = 0;
    int allowance = 0;
    bool exclusive = false;
    bool pool_exhausted = false;  // exclusive, and the pool had no slab left at all
    bool launched_ok = false;
  };

  void Run();
  Part* TryPop();
  bool Gather(Slot& s);
  void Layout(Slot& s);
  bool EnsureCapacity(Slot& s);
  // Packs and launches s.ops. exclusive: nothing else of ours is in flight.
  void Launch(Slot& s, bool exclusive);
  // Waits for the oldest in-flight batch and completes it (and its retries).
  void CompleteFront();
  void Complete(Slot& s, std::vector<OpRef>* retries);
  void FinishOp(const OpRef& r);
  void FailAll(Slot& s, Code code);
  void HandleBarrier(Part* barrier);

  GpuStore* const store_;
  const uint32_t id_;
  const bool general_;
  const uint32_t max_ops_;
  const uint32_t timeout_us_;
  cudaStream_t stream_ = nullptr;
  Slot slots_[2];
  std::deque<Slot*> inflight_;
  Part* cur_ = nullptr;       // partly batched part
  Part* barrier_ = nullptr;   // Clear barrier met while gathering

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Part*> queue_;
  bool stop_ = false;
  // Lock-free view of the queue for the idle spin (a sleeping orchestrator
  // costs a futex wake-up, tens of microseconds, on every small batch).
  std::atomic<uint64_t> queued_{0};
  std::atomic<bool> sleeping_{false};
  std::thread thread_;

  KeyRecordHeap records_;
  ValueHeap values_;
  SameKeyOrder order_;
  std::vector<uint32_t> group_, need_;
  std::vector<std::pair<uint64_t, uint32_t>> free_records_;  // deferred frees
  std::vector<uint64_t*> free_blobs_;
  cudaError_t sticky_ = cudaSuccess;  // a failed device: answer kInternal from now on

  // Where the thread's time goes, per phase (ns), printed to stderr at Stop()
  // when KVCG_GPU_PROFILE is set: the end-to-end benchmark's diagnosis tool.
  struct Profile {
    uint64_t idle = 0, gather = 0, pack = 0, wait = 0, complete = 0, batches = 0, ops = 0;
  } prof_;
  const bool profile_;
};

}  // namespace kvcg::store::gpu
