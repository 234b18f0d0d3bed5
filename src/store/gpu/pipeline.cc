// Pipeline: aggregation, launch and completion of ARBs. See pipeline.h for
// the loop and the ordering argument, arb_kernels.h for the device side.
#include "store/gpu/pipeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/thread_name.h"
#include "store/backends.h"
#include "store/gpu/arb_layout.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_kernel.h"

namespace kvcg::store::gpu {
namespace {

constexpr int kDequeueBudget = 8;  // empty polls before an ARB leaves

}  // namespace

Pipeline::Pipeline(GpuStore* store, DeviceBudget* budget, PinnedMemory* pinned)
    : store_(store),
      general_(store->general()),
      max_ops_(store->max_batch_ops()),
      timeout_us_(store->config().gpu_batch_timeout_us),
      idle_spin_us_(store->config().gpu_idle_spin_us),
      pinned_(pinned),
      records_(budget),
      values_(std::make_unique<ValueHeap>()),
      epochs_(pinned),
      sweep_period_ns_(store->general() && store->config().active_expiry_hz != 0
                           ? 1000000000ull / store->config().active_expiry_hz
                           : 0),
      profile_(std::getenv("KVCG_GPU_PROFILE") != nullptr) {}

Pipeline::~Pipeline() {
  Stop();
  for (Slot& s : slots_) {
    if (s.stage != nullptr) cudaFreeHost(s.stage);
    for (DevBuf* b : {&s.in, &s.work, &s.out}) {
      if (b->p != nullptr) cudaFree(b->p);
    }
    if (s.lslab_done != nullptr) cudaEventDestroy(s.lslab_done);
    if (s.done != nullptr) cudaEventDestroy(s.done);
    if (s.t_begin != nullptr) cudaEventDestroy(s.t_begin);
    if (s.t_table != nullptr) cudaEventDestroy(s.t_table);
    if (s.prep_host != nullptr) cudaFreeHost(s.prep_host);
    if (s.stream != nullptr) cudaStreamDestroy(s.stream);
  }
  if (snapshot_totals_ != nullptr) cudaFree(snapshot_totals_);
  if (sweep_totals_ != nullptr) cudaFree(sweep_totals_);
  if (sweep_list_ != nullptr) cudaFreeHost(sweep_list_);
  if (sweep_t0_ != nullptr) cudaEventDestroy(sweep_t0_);
  if (sweep_t1_ != nullptr) cudaEventDestroy(sweep_t1_);
  if (evict_hist_ != nullptr) cudaFree(evict_hist_);
  if (evict_totals_ != nullptr) cudaFree(evict_totals_);
  if (evict_hist_host_ != nullptr) cudaFreeHost(evict_hist_host_);
  FreeResident();
}

cudaError_t Pipeline::Start() {
  for (Slot& s : slots_) {
    cudaError_t err = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking);
    const unsigned flags = profile_ ? cudaEventDefault : cudaEventDisableTiming;
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&s.lslab_done, flags);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&s.done, flags);
    if (err == cudaSuccess && profile_) err = cudaEventCreate(&s.t_begin);
    if (err == cudaSuccess && profile_) err = cudaEventCreate(&s.t_table);
    if (err == cudaSuccess) {
      err = cudaHostAlloc(reinterpret_cast<void**>(&s.prep_host), sizeof(ArbDev),
                          cudaHostAllocDefault);
    }
    if (err != cudaSuccess) return err;
  }
  if (const cudaError_t err = StartResident(); err != cudaSuccess) return err;
  // The heaps' CUDA allocations and frees would wait for the resident kernel.
  records_.SetBeforeCudaCall([this] { HeapCudaCall(); });
  values_->SetBeforeCudaCall([this] { HeapCudaCall(); });
  // The configured limit and policy (Open): nothing is stored yet.
  const Config& config = store_->config();
  if (!ApplyLimit(config.max_memory_bytes, config.eviction).ok()) return cudaErrorUnknown;
  delivery_thread_ = std::thread([this] {
    SetCurrentThreadName("kvcg-gpu-dlvr");
    DeliveryRun();
  });
  thread_ = std::thread([this] {
    SetCurrentThreadName("kvcg-gpu-pipe");
    cudaSetDevice(store_->config().gpu_device);
    Run();
  });
  return cudaSuccess;
}

void Pipeline::Plan(Request* r) {
  if (!general_) return;
  std::shared_lock<std::shared_mutex> lock(heap_mu_);
  WritePlan& p = r->plan;
  if (PlanWrites(r->batch, store_->config(), store_->entry_overhead(), values_.get(), &records_,
                 /*may_grow=*/false, &p)) {
    p.generation = generation_;
  }
}

void Pipeline::Enqueue(Request* r) {
  if (profile_) r->enqueued_ns = NowNs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(r);
    queued_.fetch_add(1, std::memory_order_release);
  }
  if (sleeping_.load(std::memory_order_acquire)) cv_.notify_one();
}

void Pipeline::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_relaxed);
  }
  cv_.notify_one();
  if (!thread_.joinable()) return;
  thread_.join();
  {  // the pipeline handed its last ARBs: the delivery thread drains them and ends
    std::lock_guard<std::mutex> lock(ring_mu_);
    ring_stop_ = true;
  }
  ring_cv_.notify_one();
  delivery_thread_.join();
  if (profile_) PrintProfile();
}

Request* Pipeline::TryPop() {
  if (pending_ != nullptr) {
    Request* r = pending_;
    pending_ = nullptr;
    return r;
  }
  if (queued_.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.empty()) return nullptr;
  Request* r = queue_.front();
  queue_.pop_front();
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return r;
}

Pipeline::Slot& Pipeline::FreeSlot(const Slot* except) {
  if (inflight_.size() + (except != nullptr ? 1 : 0) >= kSlots) CompleteFront();
  for (Slot& s : slots_) {
    if (&s != except && std::find(inflight_.begin(), inflight_.end(), &s) == inflight_.end()) {
      return s;
    }
  }
  return slots_[0];  // unreachable: fewer than kSlots are in flight
}

void Pipeline::Run() {
  while (true) {
    epochs_.Collect();
    MaybeSweep();
    MaybeGrowTable();
    if (marker_ != nullptr) {
      Request* m = marker_;
      marker_ = nullptr;
      // Everything before the marker is delivered before it is answered.
      Quiesce();
      if (m->clear != nullptr) {
        HandleClear(m);
      } else if (m->sweep != nullptr) {
        HandleSweep(m);
      } else if (m->setting != nullptr) {
        HandleSetting(m);
      } else {
        HandleSnapshot(m);
      }
      continue;
    }
    if (inflight_.empty() && pending_ == nullptr) {
      StageTimer t(profile_, &prof_.idle);
      // Idle: poll a while (Config::gpu_idle_spin_us: the next small batch
      // then pays no wake-up, ~5 us at the median and ~10 at p99 of a 512-op
      // round trip of ~26 on the H200 host, BENCHMARKS 2y), then sleep.
      // Meanwhile a resident kernel that its lifetime ended is relaunched.
      const auto spin_until =
          std::chrono::steady_clock::now() + std::chrono::microseconds(idle_spin_us_);
      while (queued_.load(std::memory_order_acquire) == 0 &&
             !stop_.load(std::memory_order_relaxed) &&
             std::chrono::steady_clock::now() < spin_until) {
        // (A failed renewal is left to the next post, which reports it.)
        if (res_running_ && NoteResidentExit(/*renew=*/true) != cudaSuccess) cudaGetLastError();
        CpuRelax();
      }
      if (queued_.load(std::memory_order_acquire) == 0) {
        idle_sleeps_.fetch_add(1, std::memory_order_relaxed);
        std::unique_lock<std::mutex> lock(mu_);
        sleeping_.store(true, std::memory_order_seq_cst);
        // Sleep until work comes, or until the next periodic sweep is due.
        const uint64_t sweep_at = NextSweepNs();
        if (sweep_at == 0) {
          cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        } else {
          const uint64_t now = NowNs();
          cv_.wait_for(lock, std::chrono::nanoseconds(sweep_at > now ? sweep_at - now : 0),
                       [&] { return stop_ || !queue_.empty(); });
        }
        sleeping_.store(false, std::memory_order_relaxed);
        if (queue_.empty()) {
          if (stop_) break;  // stopping, and everything is done
          continue;          // a sweep is due
        }
      }
    }
    Slot& s = FreeSlot();
    bool gathered;
    {
      StageTimer t(profile_, &prof_.gather);
      gathered = Gather(s);
    }
    if (gathered) {
      if (profile_) {
        ++prof_.arbs;
        prof_.ops += s.n;
        prof_.batches += s.reqs.size();
      }
      {
        StageTimer t(profile_, &prof_.launch);
        Launch(s, false);
      }
      // An ARB that could not reserve its slabs runs alone (pipeline.h).
      if (!inflight_.empty() && inflight_.back() == &s && s.exclusive) CompleteFront();
    } else if (!inflight_.empty()) {
      CompleteFront();
    }
    while (!inflight_.empty() && Query(*inflight_.front()) != cudaErrorNotReady) {
      CompleteFront();
    }
  }
  // Stopping. Only completion here: Stop() joins the delivery thread next,
  // which ends only once it has delivered every ARB handed to it.
  CompleteInFlight();
  epochs_.Collect();
}

bool Pipeline::Gather(Slot& s) {
  s.reqs.clear();
  s.begin.clear();
  s.n = 0;
  uint64_t input = 0;
  const auto start = std::chrono::steady_clock::now();
  const auto bound = std::chrono::microseconds(timeout_us_);
  int budget = kDequeueBudget;
  while (s.n < max_ops_) {
    Request* r = TryPop();
    if (r == nullptr) {
      if (s.reqs.empty()) return false;
      // An idle GPU gains nothing from waiting: leave at once (low latency
      // at low load). A busy one cannot start this ARB before the earlier
      // ones are done anyway, so keep gathering within the bounds (larger
      // ARBs at high load: Mega-KV's periodic scheduling).
      if (inflight_.empty()) break;
      if (--budget <= 0 || std::chrono::steady_clock::now() - start >= bound) break;
      std::this_thread::yield();
      continue;
    }
    if (r->marker()) {
      marker_ = r;
      break;
    }
    const uint64_t bytes = InputBytes(r->batch, general_);
    if (!s.reqs.empty() && (s.n + r->batch.size() > max_ops_ || input + bytes > kMaxInputBytes)) {
      pending_ = r;  // first of the next ARB
      break;
    }
    if (profile_) {
      const uint64_t now = NowNs();
      prof_.queued += now - r->enqueued_ns;
      if (s.reqs.empty()) s.taken_ns = now;
    }
    s.begin.push_back(uint32_t(s.n));
    s.reqs.push_back(r);
    s.n += r->batch.size();
    input += bytes;
    if (std::chrono::steady_clock::now() - start >= bound) break;
  }
  return !s.reqs.empty();
}

bool Pipeline::Ensure(DevBuf& b, size_t bytes) {
  if (b.cap >= bytes) return true;
  if (b.p != nullptr) cudaFree(b.p);
  b.p = nullptr;
  b.cap = 0;
  const size_t want = bytes + bytes / 2 + 4096;
  if (cudaMalloc(reinterpret_cast<void**>(&b.p), want) != cudaSuccess) {
    cudaGetLastError();
    b.p = nullptr;
    return false;
  }
  b.cap = want;
  return true;
}

void Pipeline::CompleteFront() {
  Slot* s = inflight_.front();
  inflight_.pop_front();
  Complete(*s);
}

void Pipeline::CompleteInFlight() {
  while (!inflight_.empty()) CompleteFront();
  // Whatever follows may allocate or free device memory, which waits for a
  // running kernel (resident_ring.h): the resident one ends now.
  StopResident();
}

void Pipeline::Quiesce() {
  CompleteInFlight();
  DrainDeliveries();
}

bool Pipeline::Finish(Slot& s) {
  if (!s.launched_ok) {
    // Its table kernel may have been launched before a later call failed:
    // the ARBs after it no longer wait for it once it leaves inflight_
    // (WaitForTableKernels), and its reservation must outlive it.
    if (s.table_kernel) cudaStreamSynchronize(s.stream);
    store_->space().Release(s.reserved, s.reserved);
    FailAll(s, sticky_ != cudaSuccess ? Code::kInternal : s.fail);
    return false;
  }
  // Poll rather than block: a blocking wait adds a wake-up to every ARB.
  cudaError_t err;
  {
    StageTimer t(profile_, &prof_.wait);
    while ((err = Query(s)) == cudaErrorNotReady) CpuRelax();
  }
  if (err != cudaSuccess) {
    sticky_ = err;
    cudaGetLastError();
    store_->space().Release(s.reserved, s.reserved);
    FailAll(s, Code::kInternal);
    return false;
  }
  if (profile_ && s.resident) RecordResident(s);
  if (profile_ && !s.resident) {
    float before = 0, table = 0, out = 0;
    if (cudaEventElapsedTime(&before, s.t_begin, s.t_table) == cudaSuccess &&
        cudaEventElapsedTime(&table, s.t_table, s.lslab_done) == cudaSuccess &&
        (s.finished == s.lslab_done ||
         cudaEventElapsedTime(&out, s.lslab_done, s.done) == cudaSuccess)) {
      prof_.dev_before += before * 1e3;
      prof_.dev_table += table * 1e3;
      prof_.dev_out += out * 1e3;
      ++prof_.dev_arbs;
    }
    cudaGetLastError();
  }
  const uint32_t* hdr = reinterpret_cast<const uint32_t*>(s.arb->out + s.out_hdr);
  store_->space().Release(s.reserved, s.reserved - uint64_t(int(hdr[1])));
  {
    StageTimer t(profile_, &prof_.frees);
    FreeWrites(s);
  }
  if (hdr[2] != 0 && s.pool_exhausted) {
    // Not one slab left, none held by other batches: really full.
    uint8_t* codes = reinterpret_cast<uint8_t*>(s.arb->out + s.out_codes);
    for (size_t i = 0; i < s.n; ++i) {
      if (codes[i] == kRetryNoSlabCode) codes[i] = uint8_t(Code::kCapacityExhausted);
    }
  }
  return true;
}

void Pipeline::Complete(Slot& s) {
  if (!Finish(s)) return;
  TightenMemBound(s);
  const uint32_t* hdr = reinterpret_cast<const uint32_t*>(s.arb->out + s.out_hdr);
  if (hdr[2] != 0) {
    if (s.exclusive) {
      RunRetries(s);
    } else {
      // A fully reserved ARB never runs out of slabs (slab_pool.h): a bug.
      uint8_t* codes = reinterpret_cast<uint8_t*>(s.arb->out + s.out_codes);
      for (size_t i = 0; i < s.n; ++i) {
        if (codes[i] == kRetryNoSlabCode || codes[i] == kRetryPoisonedCode) {
          codes[i] = uint8_t(Code::kInternal);
        }
      }
    }
  }
  Hand(s);
  if (profile_) FinishResidentRecord(s);
}

void Pipeline::FreeWrites(Slot& s) {
  // (Without write ops, placed plans are empty: only their flags change.)
  const WriteOut* wo = s.write_count != 0
                           ? reinterpret_cast<const WriteOut*>(s.arb->out + s.out_writes)
                           : nullptr;
  const uint64_t seq = s.arb->seq;
  size_t j = 0;  // the write's slot: batches' writes in ARB order
  for (Request* r : s.reqs) {
    WritePlan& p = r->plan;
    if (!p.placed) continue;
    p.placed = false;
    for (const WriteRef& w : p.writes) FreeWrite(w, wo[j++], seq);
  }
  s.write_count = 0;
}

void Pipeline::FreeWrite(const WriteRef& w, const WriteOut& out, uint64_t seq) {
  const uint8_t code = uint8_t(out.raw) & 0x7f;  // L-Slab ResCode
  const bool stored = (out.raw & kResStored) != 0;
  // An unlinked entry (DELETE, an EXPIRE or PUT/CAS to a past time, or an
  // expired key a writer met): its record and value go.
  if (out.old_rec != 0) {
    epochs_.Retire(seq, values_.get(), reinterpret_cast<uint64_t*>(out.old_blob), out.old_len);
    records_.Free(out.old_rec, w.klen);
  }
  if (w.type == OpType::kDelete || w.type == OpType::kExpire) return;
  if (w.blob == nullptr) {
    if (w.rec != 0) records_.Free(w.rec, w.klen);
    return;
  }
  if (!stored) {  // condition failed, capacity, or to be retried (re-allocated then)
    values_->Free(w.blob, w.vlen);
    if (w.rec != 0) records_.Free(w.rec, w.klen);
  } else if (code == kResOk) {  // replaced in place: the key's record already existed
    if (w.rec != 0) records_.Free(w.rec, w.klen);
    epochs_.Retire(seq, values_.get(), reinterpret_cast<uint64_t*>(out.old_blob), out.old_len);
  }
}

void Pipeline::RunRetries(Slot& s) {
  // Only an ARB that ran alone on a partial allowance gets here (pipeline.h),
  // and such an ARB has a view column, never value slots (Issue): the views
  // of the retries' results are copied into it.
  assert(!s.value_slots);
  uint8_t* codes = reinterpret_cast<uint8_t*>(s.arb->out + s.out_codes);
  char* values = s.arb->out + s.out_values;
  uint64_t* expires = s.expires();
  struct Ref {
    uint32_t req, local;
  };
  std::vector<Ref> todo;
  for (uint32_t r = 0; r < s.reqs.size(); ++r) {
    for (uint32_t i = 0; i < s.reqs[r]->batch.size(); ++i) {
      const uint8_t c = codes[s.begin[r] + i];
      if (c == kRetryNoSlabCode || c == kRetryPoisonedCode) todo.push_back({r, i});
    }
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(store_->config().retry_timeout_ms);
  Slot& x = FreeSlot(&s);  // nothing else is in flight: s ran alone
  while (!todo.empty()) {
    if (std::chrono::steady_clock::now() > deadline) {
      for (const Ref& t : todo) codes[s.begin[t.req] + t.local] = uint8_t(Code::kTimedOut);
      break;
    }
    auto* retry = new Request;
    for (const Ref& t : todo) retry->batch.AppendFrom(s.reqs[t.req]->batch, t.local);
    std::vector<Ref> again;
    // Copy each retried result into s's output; views stay valid while s's
    // epoch is live, which it is until s is delivered and released.
    retry->done = [&](Results&& res) {
      for (size_t j = 0; j < todo.size(); ++j) {
        const uint32_t op = s.begin[todo[j].req] + todo[j].local;
        const uint8_t c = uint8_t(res.code(j));
        codes[op] = c;
        if (c == kRetryNoSlabCode || c == kRetryPoisonedCode) {
          again.push_back(todo[j]);
          continue;
        }
        const std::string_view v = res.value(j);
        if (expires != nullptr) expires[op] = res.expire_at(j);
        if (general_) {
          reinterpret_cast<ValueRef*>(values)[op] = ValueRef{v.data(), v.size()};
        } else {
          uint64_t word = 0;
          std::memcpy(&word, v.data(), v.size());
          reinterpret_cast<uint64_t*>(values)[op] = word;
        }
      }
    };
    x.reqs.assign(1, retry);
    x.begin.assign(1, 0);
    x.n = retry->batch.size();
    Launch(x, /*exclusive=*/true);
    // Nothing reservable but not exhausted: other work holds the rest until
    // it finishes; give it a moment instead of spinning launches.
    const bool starved = x.reserved == 0 && !x.pool_exhausted;
    if (!inflight_.empty() && inflight_.back() == &x) {
      inflight_.pop_back();
      // Finish without recursing into retries: codes come back as markers.
      if (Finish(x)) Deliver(x);
      if (profile_) FinishResidentRecord(x);
    }
    todo.swap(again);
    if (starved) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void Pipeline::FailAll(Slot& s, Code code) {
  auto give_back = [this](const std::vector<WriteRef>& writes) {
    for (const WriteRef& w : writes) {
      if (w.blob != nullptr) values_->Free(w.blob, w.vlen);
      if (w.rec != 0) records_.Free(w.rec, w.klen);
    }
  };
  for (Request* r : s.reqs) {  // plans placed in the ARB, and those not yet placed
    WritePlan& p = r->plan;
    if (p.placed || (p.ready && p.generation == generation_)) give_back(p.writes);
    p.placed = p.ready = false;
  }
  s.write_count = s.put_count = 0;
  if (s.arb != nullptr) {
    ResultEpochs::Release(s.arb);
    s.arb = nullptr;
  }
  // Earlier ARBs' completions first. Not Quiesce: ARBs still in flight may
  // have come after s (FailAll from Finish), and completing them here would
  // answer them before s's requests.
  DrainDeliveries();
  for (Request* r : s.reqs) {
    ResultsBuilder b;
    b.Reset(r->batch.size());
    for (size_t i = 0; i < r->batch.size(); ++i) b.SetCode(i, code);
    Store::Completion done = std::move(r->done);
    delete r;
    done(b.Finish());
  }
  s.reqs.clear();
}

void Pipeline::HandleClear(Request* r) {
  store_->WipeTable();
  grow_at_slabs_ = 0;  // the pool is empty again
  // No slab refers to our records or blobs any more. Records are device
  // memory no consumer reads: free them now. Blobs may still be read
  // through Results: the whole heap goes when those are released.
  may_have_volatile_ = false;  // the table is empty
  mem_bound_ = 0;
  avg_ttl_ms_.store(0, std::memory_order_relaxed);  // as Redis's FLUSHALL resets avg_ttl
  {
    // Plans made from the old heaps are dropped at launch (generation).
    std::unique_lock<std::shared_mutex> lock(heap_mu_);
    records_.Reset();
    epochs_.RetireHeap(epochs_.last_seq(), std::move(values_));
    values_ = std::make_unique<ValueHeap>();
    values_->SetBeforeCudaCall([this] { HeapCudaCall(); });
    ++generation_;
  }
  ClearMarker* m = r->clear;
  delete r;
  std::lock_guard<std::mutex> lock(m->mu);
  m->done = true;
  m->cv.notify_all();
}

}  // namespace kvcg::store::gpu
