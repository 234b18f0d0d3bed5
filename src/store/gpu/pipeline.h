// Pipeline: the GPU store's one ordered path from Submit to the kernel and
// back (DESIGN.md §3a). One thread, a few slots (one CUDA stream each).
//
// Loop: take whole submitted batches from the FIFO queue into a free slot
// until the aggregated batch (ARB) holds max_batch_ops ops, the aggregation
// time bound (gpu_batch_timeout_us, Mega-KV's periodic scheduling) has
// passed since the first, or the queue stayed empty for a small dequeue
// budget of polls — or at once when nothing is in flight (an idle GPU gains
// nothing from waiting); launch it; complete the oldest slot whose work is
// done.
// A submitted batch is never split (one larger than max_batch_ops is an ARB
// of its own).
//
// Launch, per ARB — host work is per batch (the general layout's memory for
// stored values was taken when each batch was submitted, on the submitting
// thread: write_plan.h; placing it in the ARB is one copy per list):
//   * each batch's columns become one block of the device input region:
//     a page-locked batch of >= kDirectOps ops is DMA'd as is (zero copy);
//     smaller ones (a server's rounds) are gathered with one memcpy per
//     column into the slot's staging buffer and sent in one copy;
//   * general layout: the batches' write plans — a value blob + key record
//     per PUT/CAS (device_heaps.h) and the list of write ops (for the frees
//     at completion) — made here only for a batch whose submitter could not;
//   * one slab reservation for the ARB (slab_pool.h);
//   * on the slot's stream: copies in, ArbPrepare (check, hash, same-key
//     numbering on the GPU), the table kernel (after the kernels in flight
//     it must follow: stream events, WaitForTableKernels; an ARB of GETs
//     only runs beside the reading ones before it; it writes the results),
//     one copy out into the ARB's page-locked output buffer
//     (result_epochs.h). A small ARB makes neither copy call: its prepare kernel reads the staging buffer and its
//     table kernel's last block writes the output buffer (mapped memory) —
//     each CUDA call costs the thread 2.5–5 µs on the H100, a DMA a few µs
//     of latency, and a few hundred ops' bytes move faster inside kernels.
//     Such an ARB of at most kResidentMaxOps ops is not launched at all
//     (pipeline_resident.cc): it is posted to the ring of a kernel that
//     stays on the device (resident_ring.h); ARBs in flight on the other
//     path complete before one of either kind starts.
// Complete, per ARB: frees and retires replaced memory (per write op),
// then hands each batch a Results borrowing its slice of the output buffer
// and calls its completion. Nothing is built per GET.
//
// Delivery (pipeline_delivery.cc) — building those Results and calling the
// completions — runs on a second thread while the pipeline has more work
// (queued batches or ARBs in flight), inline when it is idle. Why: under a
// server's load it was 14 of the pipeline thread's 51 µs per ARB
// (KVCG_GPU_PROFILE, H100), and that one thread is what bounds the GPU
// store at small batches; idle, a hand-off would only add latency. One
// delivery thread takes ARBs in completion order, and the pipeline
// delivers inline only when that thread has nothing left, so completions
// keep the order they had. Markers (Clear, snapshots, sweeps, settings)
// and failures wait for it to drain first: a completion of a batch before a
// marker is still called before the marker is answered.
//
// Order. Batches enter ARBs in queue order and ARBs' table kernels run in
// launch order (except that ARBs of fixed8 GETs only run theirs beside each
// other, between the same writers: WaitForTableKernels), so ops on a key
// take effect in submission order across batches; inside an ARB the
// numbering keeps batch order. Copies and prepare of ARB k+1 overlap the
// kernel of ARB k.
//
// An ARB that cannot reserve its slabs (device memory short) runs alone
// (everything earlier completed first) on what is available; its ops that
// found no slab come back as RETRY and are re-run, alone and in order, until
// done, kCapacityExhausted (pool really full) or retry_timeout_ms (kTimedOut).
//
// Clear() is a marker in the queue: the thread completes everything before
// it, wipes the table, starts new heaps (the old value heap is retired as a
// whole, since Results may still point into it) and goes on.
//
// Expiry sweeps (pipeline_expiry.cc) run at the same kind of point: the
// periodic one (Config::active_expiry_hz, only while keys may have TTLs)
// drains what is in flight first; ReclaimExpired() is a marker.
//
// OpenSnapshot() is a marker too: with everything before it completed and
// nothing after it launched, the thread copies the table to page-locked
// host memory (snapshot_kernels.h) and begins an epoch that the reader holds
// (result_epochs.h), then goes on. The image is thus exactly the state
// between the ARBs before the marker and those after it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "common/spin_wait.h"
#include "kvcg/store.h"
#include "store/gpu/arb_kernels.h"
#include "store/gpu/device_heaps.h"
#include "store/gpu/eviction_kernels.h"
#include "store/gpu/expiry_kernels.h"
#include "store/gpu/pinned_memory.h"
#include "store/gpu/pipeline_profile.h"
#include "store/gpu/resident_ring.h"
#include "store/gpu/result_epochs.h"
#include "store/gpu/snapshot_kernels.h"
#include "store/gpu/write_plan.h"

namespace kvcg::store::gpu {

class GpuStore;

inline uint64_t NowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// Adds the time from construction to destruction to *slot when profiling.
struct StageTimer {
  uint64_t* slot;
  uint64_t t0;
  StageTimer(bool on, uint64_t* s) : slot(on ? s : nullptr), t0(on ? NowNs() : 0) {}
  ~StageTimer() {
    if (slot != nullptr) *slot += NowNs() - t0;
  }
};

// Clear(): the caller waits until the pipeline has wiped the table.
struct ClearMarker {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

// OpenSnapshot(): the caller waits for the pipeline's answer.
// General Scan cursors: bucket << (kScanBucketBits - the table's bucket
// bits), a place that stays exact when the table grows (lslab_growth.h).
constexpr uint32_t kScanBucketBits = 48;
// Fixed8 Scan cursors: window table generation << kScanWindowBits | window.
constexpr uint32_t kScanWindowBits = 40;
constexpr uint64_t kScanWindowMask = (1ull << kScanWindowBits) - 1;
constexpr uint64_t kScanGenerationMask = (1ull << (64 - kScanWindowBits)) - 1;
// A Scan step's run: about `count` entries' worth of the `remaining` of
// `units` buckets or windows of a table holding `keys` (pipeline_snapshot.cc).
uint64_t ScanRun(uint64_t remaining, uint64_t units, uint64_t count, uint64_t keys);

struct SnapshotMarker {
  // Buckets to copy: all of them for OpenSnapshot, a run for a Scan step.
  uint64_t begin = 0;
  uint64_t end = ~uint64_t(0);
  // Scan steps (either table can grow between steps, so the pipeline picks
  // the run): scan = this is one; cursor in (0 = start; general: a bucket's
  // place, kScanBucketBits; fixed8: window table generation <<
  // kScanWindowBits | window), about `count` entries of a table holding
  // `keys`; next out (0 = done).
  bool scan = false;
  uint64_t cursor = 0, count = 0, keys = 0, next = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::unique_ptr<SnapshotReader> reader;
};

// ReclaimExpired(): the caller waits for the pipeline's full sweep.
struct SweepMarker {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  uint64_t removed = 0;  // entries reclaimed
  uint64_t passes = 0;   // sweep kernels run (more than one when the list filled)
  double kernel_ms = 0;  // device time of those kernels
};

// A run-time setting: SetMemoryLimit() (the caller waits until the pipeline
// applied it and evicted down to it) or SetActiveExpiryHz() (the periodic
// sweep's rate). Both are the pipeline thread's state, so they are applied
// there, between two ARBs.
struct SettingMarker {
  bool expiry_rate = false;  // true: set expiry_hz; false: the memory limit
  uint32_t expiry_hz = 0;
  uint64_t max_memory_bytes = 0;
  EvictionPolicy policy = EvictionPolicy::kNoEviction;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
};

// One Submit call, or a Clear, snapshot, sweep or memory-limit marker.
struct Request {
  Batch batch;
  Store::Completion done;
  ClearMarker* clear = nullptr;
  SnapshotMarker* snapshot = nullptr;
  SweepMarker* sweep = nullptr;
  SettingMarker* setting = nullptr;
  WritePlan plan;            // general layout: its writes' memory (Pipeline::Plan)
  uint64_t enqueued_ns = 0;  // when profiling: Enqueue's clock
  bool marker() const {
    return clear != nullptr || snapshot != nullptr || sweep != nullptr || setting != nullptr;
  }
};

class Pipeline {
 public:
  // Batches of at least this many ops in page-locked memory are DMA'd as is.
  static constexpr size_t kDirectOps = 1024;
  // Small ARBs (<= kSmallArbOps ops) move their bytes inside the kernels
  // rather than by copy calls around them, up to these sizes: the prepare
  // kernel reads the staging buffer (PCIe reads are round trips: a few per
  // block are cheaper than a DMA's latency, many are not), the table
  // kernel's last block writes the results (posted writes).
  static constexpr size_t kKernelCopyInBytes = 32 << 10;
  static constexpr size_t kKernelCopyOutBytes = 64 << 10;

  Pipeline(GpuStore* store, DeviceBudget* budget, PinnedMemory* pinned);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Creates streams and events and starts the thread.
  cudaError_t Start();
  // General layout: takes the memory of `r`'s writes on the calling thread
  // (write_plan.h), before Enqueue. Thread-safe.
  void Plan(Request* r);
  // Takes ownership of `r`. Thread-safe.
  void Enqueue(Request* r);
  // Finishes everything queued, then stops the thread. Idempotent.
  void Stop();
  // The mean remaining TTL of the volatile keys at the last full sweep (ms;
  // 0 = none or unknown). Thread-safe.
  uint64_t avg_ttl_ms() const { return avg_ttl_ms_.load(std::memory_order_relaxed); }
  // Keys removed by the eviction policy since the store opened. Thread-safe.
  uint64_t evicted_keys() const { return evicted_keys_.load(std::memory_order_relaxed); }
  // L-Slab tables rebuilt with more buckets since Open. Thread-safe.
  uint64_t growths() const { return growths_.load(std::memory_order_relaxed); }
  // GpuStore::path_counts. Thread-safe.
  PipelinePathCounts PathCounts() const {
    PipelinePathCounts c;
    c.resident_arbs = resident_arbs_.load(std::memory_order_relaxed);
    c.resident_launches = resident_launches_.load(std::memory_order_relaxed);
    c.resident_renewals = resident_renewals_.load(std::memory_order_relaxed);
    c.stream_arbs = stream_arbs_.load(std::memory_order_relaxed);
    c.idle_sleeps = idle_sleeps_.load(std::memory_order_relaxed);
    return c;
  }

 private:
  static constexpr int kSlots = 3;
  // Byte offset in an ARB's output header (64 bytes; the kernel uses the
  // first 16) of the device's charged bytes sampled after its L-Slab kernel.
  static constexpr size_t kHdrMemSample = 32;

  // A device buffer that only grows.
  struct DevBuf {
    char* p = nullptr;
    size_t cap = 0;
  };
  // What delivering an ARB needs (pipeline_delivery.cc): its requests and
  // its output. Slot derives from it, so a slot's ARB is delivered in place
  // or swapped into the delivery thread's ring (Hand): nothing is copied or
  // allocated per ARB. Empty once delivered: no requests, arb null.
  struct Delivery {
    std::vector<Request*> reqs;
    std::vector<uint32_t> begin;  // first ARB op of each request
    ResultEpochs::Arb* arb = nullptr;  // null: nothing was launched (only empty batches)
    size_t out_codes = 0, out_values = 0, out_expires = 0;  // offsets in arb->out
    bool with_expires = false;  // the output holds an expire-at per op
    // Value slots (ArbView::value_slots) instead of the view column: their
    // lengths' and the slots' offsets in arb->out.
    bool value_slots = false;
    size_t out_value_lens = 0, out_value_slots = 0;
    // The output's expire-at column; null when it has none.
    uint64_t* expires() const {
      return arb != nullptr && with_expires ? reinterpret_cast<uint64_t*>(arb->out + out_expires)
                                            : nullptr;
    }
  };
  struct Slot : Delivery {
    size_t n = 0;
    cudaStream_t stream = nullptr;
    cudaEvent_t lslab_done = nullptr;
    cudaEvent_t done = nullptr;
    cudaEvent_t finished = nullptr;  // the ARB's last event: `done`, or `lslab_done` when
                                     // the table kernel's own copy was its last work
    // When profiling, timing events: the ARB's stream work begins, its
    // table kernel begins (after those it waits for); `lslab_done` and
    // `done` then time too.
    cudaEvent_t t_begin = nullptr, t_table = nullptr;
    char* stage = nullptr;  // page-locked staging (input blocks + aux)
    size_t stage_cap = 0;
    DevBuf in, work, out;  // in: input blocks, then the aux region
    // General: how many puts and write ops its batches' plans hold (their
    // WriteRefs are read in place, from each request's plan, by FreeWrites).
    uint32_t put_count = 0, write_count = 0;
    size_t out_writes = 0, out_hdr = 0;  // offsets in arb->out (the rest: Delivery)
    bool has_expiry = false;    // a batch of the ARB carries expiry columns
    bool gets_only = false;     // fixed8: no op of the ARB writes (ArbView::gets_only)
    // Its table kernel was launched (and `lslab_done` recorded after it);
    // that kernel writes nothing in the table (WaitForTableKernels).
    bool table_kernel = false, reads_table_only = false;
    uint64_t storing = 0, reserved = 0;
    uint64_t grow = 0;  // bytes the ARB's writes may add at most (eviction)
    bool mem_sampled = false;  // the header holds the charged bytes after the ARB (kHdrMemSample)
    bool exclusive = false, pool_exhausted = false, launched_ok = false;
    // Posted to the resident kernel's ring as `seq` (pipeline_resident.cc)
    // instead of launched on `stream`; its events are then unused.
    bool resident = false;
    uint64_t seq = 0;
    uint64_t posted_ns = 0;  // when profiling: PostResident's clock
    // When profiling, the host's steps before it: its first batch taken
    // (Gather), the heaps' flush and spare chunks done, the batches'
    // layout and write plans done, Issue begun (after the reservation),
    // the input staged (Issue's copy into the ring and the descriptor).
    uint64_t taken_ns = 0, heaps_ns = 0, planned_ns = 0, issue_ns = 0, staged_ns = 0;
    int64_t res_record = -1;  // when profiling: its PipelineProfile::res_records entry, until delivered
    Code fail = Code::kInternal;  // what the ARB is answered with if it did not launch
    // Large ARBs' prepare: the page-locked copy of the ARB's descriptor
    // that LaunchLargePrepare copies to the device. Allocated with the
    // slot (Start), so that no ARB can fail for it after its input copies
    // were queued.
    ArbDev* prep_host = nullptr;
  };

  void Run();
  Request* TryPop();
  bool Gather(Slot& s);
  // A slot not in flight (and not `except`), completing the oldest if needed.
  Slot& FreeSlot(const Slot* except = nullptr);
  // Builds and launches s.reqs. exclusive: nothing else of ours is in flight.
  void Launch(Slot& s, bool exclusive);
  cudaError_t Issue(Slot& s, size_t input_bytes, const std::vector<ArbSegment>& segs,
                    bool host_hash);
  // A large ARB's prepare (ArbPrepareLarge for `cap` ops, reading `a` from
  // `dev`) on the slot's stream, launched kernel by kernel. It was one
  // captured CUDA graph per size class (e587698: the ~12 launches cost the
  // pipeline thread ~96 us per ARB on the H100 host against ~14 for one
  // graph launch), until cudaGraphLaunch crashed inside libcuda in ~9% of
  // processes on the H200 host (CUDA 13.0; 15 of 167 prefills, never once
  // in 55 without the graph) with no fault of ours under ASan or
  // compute-sanitizer; the direct launches measured no slower end to end
  // (docs/BENCHMARKS.md 3c).
  cudaError_t LaunchLargePrepare(Slot& s, const ArbDev& a, uint32_t cap, ArbDev* dev);
  // Makes `st` wait for the table kernels in flight that an ARB's must
  // follow (pipeline_launch.cc).
  cudaError_t WaitForTableKernels(bool reads_table_only, cudaStream_t st);
  // cub's scratch bytes for a large prepare of `cap` ops (cached per cap).
  cudaError_t LargeTempBytes(uint32_t cap, size_t* bytes);
  // The resident kernel (resident_ring.h, pipeline_resident.cc).
  // StartResident: its memory, its stream, and every slot's buffers sized
  // for the largest ARB it takes (so posting one never frees device memory
  // while it runs). ResidentEligible: an ARB of n ops that moves its bytes
  // inside the kernels goes to the ring. SwitchPath: before an ARB on the
  // ring (resident) or on a stream, the ARBs in flight on the other path
  // complete (same-key order between the paths) and a stream ARB stops the
  // kernel (its launches may allocate). PostResident: writes the ARB's
  // descriptor and rings the doorbell, launching the kernel if none runs.
  // StopResident: asks a running kernel to end and waits (nothing of ours
  // in flight). Query: cudaSuccess once s's results are in host memory,
  // cudaErrorNotReady before, or the device's error; relaunches the kernel
  // when it ended before taking s.
  cudaError_t StartResident();
  void FreeResident();
  bool ResidentEligible(size_t n, bool in_kernel, bool publish) const;
  void SwitchPath(bool resident);
  cudaError_t PostResident(Slot& s, const ArbDev& a, ArbView v);
  cudaError_t LaunchResident(uint64_t start_seq);
  // When the running launch has ended: relaunches it from the first ARB it
  // did not take, if one was posted, or — with `renew`, from the idle poll
  // (the store is in use) — when its lifetime ended it, so the next ARB
  // does not wait for the launch (a renewal).
  cudaError_t NoteResidentExit(bool renew = false);
  void StopResident();
  // The heaps' hook before a chunk's allocation or release: the resident
  // kernel ends first (its CUDA call would wait for it); counted.
  void HeapCudaCall() {
    ++prof_.heap_cuda_calls;
    StopResident();
  }
  cudaError_t Query(const Slot& s);
  void CompleteFront();
  // Waits for s, releases its slabs, frees or retires its replaced memory,
  // answers kCapacityExhausted where the pool is really full. False when s
  // failed (its requests were answered with an error).
  bool Finish(Slot& s);
  // Finish, then re-run retries (exclusive ARBs), then deliver.
  void Complete(Slot& s);
  void RunRetries(Slot& s);
  // Delivery (pipeline_delivery.cc).
  // s's results to its requests, here and now (s's Delivery left empty).
  void Deliver(Slot& s);
  // The same, or queued for the delivery thread while the pipeline is busy.
  void Hand(Slot& s);
  // Builds each request's Results, calls its completion, drops the ARB's
  // hold; leaves d empty. The one delivery path, inline and on the thread.
  void DeliverResults(Delivery& d);
  void DeliveryRun();
  // KVCG_GPU_PROFILE (pipeline_profile.cc): a resident ARB's times, taken
  // when its results are seen (Finish) and once it is delivered or handed
  // on (Complete); the report printed at Stop().
  void RecordResident(Slot& s);
  void FinishResidentRecord(Slot& s);
  void PrintProfile();
  // Returns once the delivery thread has delivered everything handed to it.
  void DrainDeliveries();
  // Every ARB in flight completed: its slabs released, its memory freed or
  // retired, its delivery made or handed to the delivery thread. Enough
  // before work that only needs the table to itself (an eviction pass, a
  // periodic sweep, an ARB that runs alone); such work answers no one, so it
  // need not wait for the completions the delivery thread still holds.
  void CompleteInFlight();
  // CompleteInFlight, then DrainDeliveries: every ARB in flight completed
  // and every delivery made, so every earlier batch's completion has been
  // called. Markers are answered only after it (Run), so a batch's
  // completion comes before the answer to any marker queued after it.
  void Quiesce();
  void FailAll(Slot& s, Code code);
  void FreeWrites(Slot& s);
  void FreeWrite(const WriteRef& w, const WriteOut& out, uint64_t seq);
  // Markers. Each Handle* runs quiesced (Run() calls Quiesce first), answers
  // r's marker and deletes r.
  void HandleClear(Request* r);
  void HandleSnapshot(Request* r);
  // Expiry sweeps (pipeline_expiry.cc). HandleSweep: a ReclaimExpired
  // marker, sweeps until nothing expired is left. MaybeSweep: the periodic
  // sweep (Config::active_expiry_hz), when one is due. SweepPass: with
  // nothing in flight, one sweep kernel and the frees of what it unlinked;
  // false on a device failure.
  void HandleSweep(Request* r);
  void MaybeSweep();
  // The L-Slab table's growth (lslab_growth.cc): when its chains have grown
  // long (overflow slabs past grow_at_slabs_), completes what is in flight
  // and rebuilds the table with more buckets.
  void MaybeGrowTable();
  bool SweepPass(uint64_t now, uint64_t* removed, bool* more, float* kernel_ms);
  // Steady-clock ns of the next periodic sweep; 0 = none is due (no TTLs).
  uint64_t NextSweepNs() const;
  // The sweep kernels' list of unlinked entries (pipeline_expiry.cc):
  // made at first use, freed (records now, blobs through the epochs), grown
  // when a pass found it full.
  cudaError_t EnsureReclaimList();
  // A sweep or eviction pass met `err`: reports it, makes it sticky unless
  // it was a shortage of memory; returns false.
  bool PassFailed(cudaError_t err, const char* what);
  void FreeReclaimed(uint64_t listed);
  void GrowReclaimList();
  // Eviction (pipeline_eviction.cc). ApplyLimit: the policy and limit from
  // now on (at Start and at a SettingMarker). MakeRoom: before an
  // ARB that may grow the store by `grow` bytes, evicts when the limit
  // could be passed. EvictDown: passes until `need` bytes are freed or
  // nothing is left to evict; returns the bytes freed. EvictPass: one
  // histogram + evict round; false on a device failure.
  void HandleSetting(Request* r);
  Status ApplyLimit(uint64_t max_memory_bytes, EvictionPolicy policy);
  void MakeRoom(uint64_t grow, bool has_expiry);
  // At s's completion (s no longer in flight): tightens mem_bound_ with the
  // memory sampled after s ran.
  void TightenMemBound(const Slot& s);
  // Doubles or halves the eviction slack by the share of time a pass took.
  void AdaptSlack(uint64_t pass_start_ns, uint64_t pass_end_ns);
  uint64_t EvictDown(uint64_t need);
  bool EvictPass(uint64_t need, uint64_t* freed, bool* more, bool* candidates);
  // At a snapshot marker, nothing in flight: the table's image (pipeline_snapshot.cc).
  // General: buckets [begin, end) (clamped to the table) into a new image.
  Status TakeSnapshot(uint64_t begin, uint64_t end, std::unique_ptr<SnapshotReader>* out);
  // Fixed8: the window table's entries of windows [begin, end), and one
  // Scan step (the live table, or the copy kept from before a rebuild;
  // pipeline_snapshot.cc).
  Status TakeWindowSnapshot(uint64_t begin, uint64_t end, std::unique_ptr<SnapshotReader>* out);
  Status WindowScanStep(SnapshotMarker* m, std::unique_ptr<SnapshotReader>* out);
  // General: one Scan step of the L-Slab table.
  Status SlabScanStep(SnapshotMarker* m, std::unique_ptr<SnapshotReader>* out);
  // Both tables' snapshot passes: refuse after a sticky device error and
  // allocate the device totals once; an error met (sticky unless short of
  // memory) as a Status.
  Status SnapshotBegin();
  Status SnapshotFailed(cudaError_t err, const char* what);
  // The two passes of a snapshot, for either table: `count` into the
  // device totals, a mapped host image of the counted bytes, `dump` into
  // it, and the check that both passes agree. *image: null when empty or
  // on an error (then freed).
  using CountPass = std::function<cudaError_t(SnapshotTotals*, cudaStream_t)>;
  using DumpPass = std::function<cudaError_t(char*, uint64_t, SnapshotTotals*, cudaStream_t)>;
  Status CountAndDump(const CountPass& count, const DumpPass& dump, SnapshotTotals* counted,
                      char** image);
  static bool Ensure(DevBuf& b, size_t bytes);

  GpuStore* const store_;
  const bool general_;
  const uint32_t max_ops_;
  const uint32_t timeout_us_;
  const uint32_t idle_spin_us_;  // Config::gpu_idle_spin_us
  PinnedMemory* const pinned_;
  Slot slots_[kSlots];
  std::vector<std::pair<uint32_t, size_t>> large_temp_;  // LargeTempBytes' cache
  std::deque<Slot*> inflight_;

  // The resident kernel: blocks (0 = off), stream, ring memory; whether a
  // launch may be taking ARBs, its generation, the newest seq posted, polls
  // since the last look at the stream for device errors.
  uint32_t res_blocks_ = 0;
  cudaStream_t res_stream_ = nullptr;
  ResidentHostWords* res_host_ = nullptr;  // page-locked, mapped
  ResidentDevWords* res_dev_ = nullptr;
  bool res_running_ = false;
  uint64_t res_gen_ = 0;
  uint64_t res_posted_ = 0;
  uint32_t res_polls_ = 0;
  std::atomic<uint64_t> resident_arbs_{0}, resident_launches_{0}, stream_arbs_{0};
  std::atomic<uint64_t> resident_renewals_{0};  // launches of them that were renewals
  std::atomic<uint64_t> idle_sleeps_{0};  // times the idle thread slept (not only polled)
  Request* pending_ = nullptr;        // popped but did not fit the last ARB
  Request* marker_ = nullptr;         // a Clear or snapshot marker met while gathering

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request*> queue_;
  std::atomic<bool> stop_{false};  // set under mu_; read without it by the idle poll
  // Lock-free view of the queue for the idle poll (Config::gpu_idle_spin_us).
  std::atomic<uint64_t> queued_{0};
  std::atomic<bool> sleeping_{false};
  std::thread thread_;

  // The delivery thread's ring of ARBs (pipeline_delivery.cc): the
  // pipeline fills [head + count), the thread delivers from head. Entries
  // past the count are empty (delivered) and keep their vectors' memory
  // from one ARB to the next.
  static constexpr size_t kDeliveryRing = 16;
  Delivery ring_[kDeliveryRing];
  size_t ring_head_ = 0, ring_count_ = 0;  // under ring_mu_
  bool ring_stop_ = false;                 // under ring_mu_
  std::mutex ring_mu_;
  std::condition_variable ring_cv_;        // the delivery thread waits here
  std::atomic<size_t> ring_pending_{0};    // ring_count_, readable without the lock
  std::atomic<bool> ring_sleeping_{false};
  std::thread delivery_thread_;

  // The general layout's heaps. Submitting threads take memory from them
  // (Plan) under heap_mu_ shared; Clear() replaces them under it exclusive
  // and counts a new generation_ (written only then, on the pipeline thread).
  std::shared_mutex heap_mu_;
  uint64_t generation_ = 0;
  KeyRecordHeap records_;
  std::unique_ptr<ValueHeap> values_;
  ResultEpochs epochs_;
  cudaError_t sticky_ = cudaSuccess;  // a failed device: answer kInternal from now on
  SnapshotTotals* snapshot_totals_ = nullptr;  // device; made at the first snapshot

  // Expiry. may_have_volatile_: a batch with expiry ran since the last
  // Clear or sweep that found no volatile key left (general layout); while
  // false, results carry no expire column and no sweep runs.
  bool may_have_volatile_ = false;
  uint64_t sweep_period_ns_;  // 0: no periodic sweep (general layout only)
  uint64_t last_sweep_ns_ = 0;
  SweepTotals* sweep_totals_ = nullptr;  // device; made at the first sweep
  Reclaimed* sweep_list_ = nullptr;      // page-locked, mapped
  uint64_t sweep_list_cap_ = 0;                 // entries
  cudaEvent_t sweep_t0_ = nullptr, sweep_t1_ = nullptr;
  std::atomic<uint64_t> avg_ttl_ms_{0};

  // The L-Slab table's growth (lslab_growth.cc): it grows once the pool's
  // overflow slabs pass grow_at_slabs_ (0 = not set yet: half the bucket
  // count). growths_: tables rebuilt since Open (tests, INFO).
  uint64_t grow_at_slabs_ = 0;
  std::atomic<uint64_t> growths_{0};

  // Eviction. evict_max_: the limit while an evicting policy is on, else 0.
  // mem_bound_: an upper bound on the charged bytes once every ARB launched
  // so far is done (re-read from the device when it nears the limit).
  EvictionPolicy evict_policy_ = EvictionPolicy::kNoEviction;
  uint64_t evict_max_ = 0;
  uint64_t mem_bound_ = 0;
  uint64_t evict_salt_ = 0;
  uint64_t lfu_decay_at_ms_ = 0;  // LFU: counters decayed up to this clock time
  bool evict_no_candidates_ = false;  // a volatile policy found no key with an expire-at
  // Slack (pipeline_eviction.cc, "How much"): a pass evicts down to
  // limit - limit / evict_slack_div_; the divisor adapts between
  // kMinSlackDiv and kMaxSlackDiv to the share of time passes take.
  uint32_t evict_slack_div_ = 64;
  uint64_t evict_last_pass_end_ns_ = 0;
  EvictHistogram* evict_hist_ = nullptr;       // device
  EvictHistogram* evict_hist_host_ = nullptr;  // page-locked
  EvictTotals* evict_totals_ = nullptr;        // device
  std::atomic<uint64_t> evicted_keys_{0};

  PipelineProfile prof_;  // with profile_ (pipeline_profile.h)
  const bool profile_;
};

}  // namespace kvcg::store::gpu
