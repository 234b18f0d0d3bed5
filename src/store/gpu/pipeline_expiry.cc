// Pipeline, active expiry: the sweep kernel (expiry_kernels.h) run in the
// pipeline's order, periodically (Config::active_expiry_hz) and at a
// ReclaimExpired marker.
//
// Why in the pipeline: the sweep unlinks entries without bucket locks, so
// no L-Slab kernel may run meanwhile, and same-key order must hold (a key
// PUT with a new TTL by a batch queued before the sweep must not be swept
// by its old one). A sweep therefore runs where a snapshot does: every ARB
// launched before it has completed, none after it has started. The pipeline
// thread waits for the kernel (milliseconds for 100M keys, far less for a
// table whose slabs carry no volatile hint) and frees what it unlinked:
// records at once (no consumer reads them), value blobs through the epochs
// (Results may still point at them; result_epochs.h).
//
// No TTLs, no cost: while no batch with expiry has run since the last Clear
// or the last sweep that left no volatile key, no sweep runs at all.
#include <cuda_runtime.h>

#include <cstdio>

#include "store/gpu/gpu_store.h"
#include "store/gpu/pipeline.h"

namespace kvcg::store::gpu {
namespace {

constexpr uint64_t kMinList = 1ull << 16;  // entries of the first list
constexpr uint64_t kMaxList = 1ull << 22;  // 96 MiB of page-locked memory at most

}  // namespace

uint64_t Pipeline::NextSweepNs() const {
  if (sweep_period_ns_ == 0 || !may_have_volatile_) return 0;
  const uint64_t at = last_sweep_ns_ + sweep_period_ns_;
  return at == 0 ? 1 : at;
}

void Pipeline::MaybeSweep() {
  const uint64_t at = NextSweepNs();
  if (at == 0 || NowNs() < at) return;
  // Not a marker: the sweep needs the table to itself and answers no one,
  // so the delivery thread's completions need not be waited for.
  CompleteInFlight();
  uint64_t removed = 0;
  bool more = false;
  float ms = 0;
  // One pass per period: what did not fit its list waits for the next one
  // (and is absent to every op meanwhile).
  SweepPass(store_->config().clock(), &removed, &more, &ms);
  last_sweep_ns_ = NowNs();
}

void Pipeline::HandleSweep(Request* r) {
  SweepMarker* m = r->sweep;
  delete r;
  uint64_t removed = 0, passes = 0;
  double kernel_ms = 0;
  if (general_) {
    const uint64_t now = store_->config().clock();
    bool more = true;
    while (more) {
      uint64_t n = 0;
      float ms = 0;
      more = false;
      if (!SweepPass(now, &n, &more, &ms)) break;
      removed += n;
      kernel_ms += ms;
      ++passes;
      epochs_.Collect();  // frees what no Results holds before the next pass
    }
    last_sweep_ns_ = NowNs();
  }
  std::lock_guard<std::mutex> lock(m->mu);
  m->removed = removed;
  m->passes = passes;
  m->kernel_ms = kernel_ms;
  m->done = true;
  m->cv.notify_all();
}

bool Pipeline::SweepPass(uint64_t now, uint64_t* removed, bool* more, float* kernel_ms) {
  *removed = 0;
  *more = false;
  *kernel_ms = 0;
  if (sticky_ != cudaSuccess) return false;
  cudaError_t err = cudaSuccess;
  if (sweep_totals_ == nullptr) {
    err = cudaMalloc(reinterpret_cast<void**>(&sweep_totals_), sizeof(SweepTotals));
    if (err == cudaSuccess) err = cudaEventCreate(&sweep_t0_);
    if (err == cudaSuccess) err = cudaEventCreate(&sweep_t1_);
    if (err != cudaSuccess) return PassFailed(err, "expiry sweep");
  }
  err = EnsureReclaimList();
  if (err != cudaSuccess) return PassFailed(err, "expiry sweep");
  cudaStream_t st = slots_[0].stream;  // nothing else of ours is in flight
  SweepTotals totals{};
  err = cudaEventRecord(sweep_t0_, st);
  if (err == cudaSuccess) {
    err = SweepExpired(store_->table(), now, sweep_list_, sweep_list_cap_, sweep_totals_, st);
  }
  if (err == cudaSuccess) err = cudaEventRecord(sweep_t1_, st);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&totals, sweep_totals_, sizeof(totals), cudaMemcpyDeviceToHost, st);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  if (err != cudaSuccess) return PassFailed(err, "expiry sweep");
  cudaEventElapsedTime(kernel_ms, sweep_t0_, sweep_t1_);

  FreeReclaimed(totals.listed);
  *removed = totals.removed;
  *more = totals.more != 0;
  // The mean TTL of what is left (INFO keyspace's avg_ttl), and whether
  // anything volatile is left at all.
  const double mean = totals.ttl_n == 0 ? 0.0 : totals.ttl_sum / double(totals.ttl_n);
  avg_ttl_ms_.store(mean >= 9.2e18 ? uint64_t(9.2e18) : uint64_t(mean), std::memory_order_relaxed);
  if (totals.ttl_n == 0 && !*more) may_have_volatile_ = false;
  if (*more) GrowReclaimList();
  return true;
}

bool Pipeline::PassFailed(cudaError_t err, const char* what) {
  cudaGetLastError();
  if (err != cudaErrorMemoryAllocation) sticky_ = err;  // short of memory: a later pass may work
  std::fprintf(stderr, "kvcg gpu: %s failed: %s\n", what, cudaGetErrorString(err));
  return false;
}

cudaError_t Pipeline::EnsureReclaimList() {
  if (sweep_list_ != nullptr) return cudaSuccess;
  // Mapped (like the value heap and snapshot images): the kernel writes
  // the list straight into host memory, where the frees read it.
  cudaError_t err = cudaHostAlloc(reinterpret_cast<void**>(&sweep_list_), kMinList * sizeof(Reclaimed),
                                  cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) {
    sweep_list_ = nullptr;
    return err;
  }
  sweep_list_cap_ = kMinList;
  return cudaSuccess;
}

void Pipeline::FreeReclaimed(uint64_t listed) {
  // Records: now. Blobs: once every Results begun so far is released (the
  // newest epoch; every ARB before the sweep has completed).
  const uint64_t seq = epochs_.last_seq();
  if (listed > sweep_list_cap_) listed = sweep_list_cap_;
  for (uint64_t i = 0; i < listed; ++i) {
    const Reclaimed& r = sweep_list_[i];
    if (r.rec == 0) continue;  // handed out past the capacity: nothing unlinked
    records_.Free(r.rec, uint32_t(r.lens));
    epochs_.Retire(seq, values_.get(), reinterpret_cast<uint64_t*>(r.blob), r.lens >> 32);
  }
}

void Pipeline::GrowReclaimList() {
  if (sweep_list_cap_ < kMaxList) {
    // A larger list for the next pass: fewer passes over a table where
    // much goes at once.
    Reclaimed* bigger = nullptr;
    const uint64_t cap = sweep_list_cap_ * 4 < kMaxList ? sweep_list_cap_ * 4 : kMaxList;
    if (cudaHostAlloc(reinterpret_cast<void**>(&bigger), cap * sizeof(Reclaimed),
                      cudaHostAllocMapped | cudaHostAllocPortable) == cudaSuccess) {
      cudaFreeHost(sweep_list_);
      sweep_list_ = bigger;
      sweep_list_cap_ = cap;
    } else {
      cudaGetLastError();  // keep the smaller list
    }
  }
}

}  // namespace kvcg::store::gpu
