// Pipeline, eviction: the GPU store's cache mode (max_memory_bytes with an
// evicting policy; eviction_kernels.h ranks and unlinks, docs/EVICTION.md).
//
// When. The kernel reserves every write's bytes against the device's limit
// exactly, so memory never passes it; eviction must make room *before* an
// ARB runs, because an ARB cannot stop halfway to evict. The pipeline keeps
// an upper bound on the charged bytes (the last value read from the device
// plus what every ARB launched since may add: key + value + overhead per
// write) and, when an ARB could pass the limit, drains what is in flight,
// reads the counter and evicts the excess plus some slack (below), so the
// drain-and-evict is paid once per slack's worth of writes, not per ARB.
// The bound is tightened at every ARB's completion: in cache mode each ARB
// brings back the device's charged bytes sampled after its kernel, so
// between passes the bound is the real memory plus the in-flight ARBs'
// worst case, not the worst case of every write since the last pass (a
// YCSB-A write overwrites an existing key more often than not).
// An ARB whose own writes exceed what eviction can free (the policy
// found too few candidates, or one ARB writes more than the limit) sees
// those writes refused with kCapacityExhausted, as Redis's OOM error.
//
// How much. A pass costs about the same whatever it frees (a drain, two
// kernels over the table, two round trips), so the slack decides how often
// it is paid: 1/64 of the limit keeps the memory in use close to the limit
// but, under a write-heavy load on a small limit, runs a pass every few
// ARBs (measured on the H100: cache fill at 0.43 of its unlimited speed).
// The slack therefore adapts to the time passes take: when the passes took
// more than 1/16 of the wall time since the previous pass, it doubles (up
// to 1/8 of the limit); below 1/64, it halves (down to 1/64). The cost is
// memory left unused on average (half the slack: at most 1/16 of the
// limit), i.e. a slightly smaller cache while the write rate is high.
//
// Precision. A pass frees at least what it was asked (it repeats while
// short) and at most one score bin's share more: the cutoff bin's share is
// drawn by key hash, so it is exact in expectation, not per key.
//
// Order. Passes run where sweeps run — everything launched before has
// completed, nothing after has started — so an eviction is linearizable
// with the writes on its key: it happens between two ARBs.
//
// Generations. The LRU "time" is the pass count (an 8-bit generation in
// TableView): a pass evicts the keys untouched for the most passes, then
// the generation advances. LFU counters decay by one per idle minute of
// the store's clock, applied by the next pass (Redis's lfu-decay-time 1).
#include <cuda_runtime.h>

#include <cstring>

#include "store/gpu/gpu_store.h"
#include "store/gpu/pipeline.h"
#include "store/gpu/window_eviction_kernels.h"

namespace kvcg::store::gpu {
namespace {

constexpr int kMaxPasses = 64;  // per EvictDown: a bound, not a goal
constexpr uint32_t kMinSlackDiv = 8;   // slack at most limit / 8
constexpr uint32_t kMaxSlackDiv = 64;  // slack at least limit / 64

uint32_t ScoreOf(EvictionPolicy p) {
  switch (p) {
    case EvictionPolicy::kAllKeysLru:
    case EvictionPolicy::kVolatileLru: return kScoreLru;
    case EvictionPolicy::kAllKeysLfu:
    case EvictionPolicy::kVolatileLfu: return kScoreLfu;
    case EvictionPolicy::kVolatileTtl: return kScoreTtl;
    default: return kScoreRandom;
  }
}

}  // namespace

Status Pipeline::ApplyLimit(uint64_t max_memory_bytes, EvictionPolicy policy) {
  Status s = store_->WriteMemoryLimit(max_memory_bytes);
  if (!s.ok()) return s;
  const uint32_t mode = AccessModeOf(max_memory_bytes, policy);
  if (mode != store_->table().access_mode) {
    // The bytes meant something else (or nothing): start every key where a
    // new one starts, so no key is ranked by a stale byte. (Before anything
    // else changes: a failure leaves the old policy whole.)
    if (mode != kAccessNone) {
      s = store_->FillAccessBytes(mode == kAccessLfu ? kLfuInitCounter : uint8_t(store_->table().generation));
      if (!s.ok()) return s;
    }
    store_->SetAccessMode(mode);
    if (mode == kAccessLfu) {
      lfu_decay_at_ms_ = store_->config().clock();
      store_->NoteLfuDecay(lfu_decay_at_ms_);
    }
  }
  const bool evicting = Evicts(max_memory_bytes, policy);
  // Eviction turning on, or a new policy, starts with the least slack; a
  // new limit under the same policy keeps what the load taught (the engine
  // re-sets the limit as its hot cache grows and shrinks).
  if ((evict_max_ == 0) != !evicting || policy != evict_policy_) {
    evict_slack_div_ = kMaxSlackDiv;
    evict_last_pass_end_ns_ = NowNs();
  }
  evict_policy_ = policy;
  evict_max_ = evicting ? max_memory_bytes : 0;
  evict_no_candidates_ = false;
  mem_bound_ = store_->MemoryBytes();
  return Status::Ok();
}

void Pipeline::HandleSetting(Request* r) {
  SettingMarker* m = r->setting;
  delete r;
  Status s;
  if (m->expiry_rate) {
    // The sweep's rate is this thread's state. Turning it on starts the
    // first period now, not in the past.
    if (general_) {
      if (sweep_period_ns_ == 0) last_sweep_ns_ = NowNs();
      sweep_period_ns_ = m->expiry_hz == 0 ? 0 : 1000000000ull / m->expiry_hz;
    }
  } else {
    s = sticky_ != cudaSuccess ? Status::Internal("the GPU failed earlier")
                               : ApplyLimit(m->max_memory_bytes, m->policy);
    // A lower limit evicts down to it at once (Store::SetMemoryLimit).
    if (s.ok() && evict_max_ != 0 && mem_bound_ > evict_max_) {
      EvictDown(mem_bound_ - evict_max_);
      mem_bound_ = store_->MemoryBytes();
    }
  }
  std::lock_guard<std::mutex> lock(m->mu);
  m->status = s;
  m->done = true;
  m->cv.notify_all();
}

void Pipeline::MakeRoom(uint64_t grow, bool has_expiry) {
  // A volatile policy that found no candidate finds none until a batch with
  // expiry runs: until then writes are refused by the kernel's limit check
  // without a drain and a table scan per ARB. (Launch clears the flag again
  // after this call: this ARB's own writes may add the candidates.)
  if (has_expiry) evict_no_candidates_ = false;
  if (evict_max_ == 0 || grow == 0) return;
  // Whatever an ARB writes beyond the limit cannot fit: room for the limit
  // at most (Launch leaves out single writes larger than the limit).
  if (grow > evict_max_) grow = evict_max_;
  if (mem_bound_ + grow <= evict_max_ || evict_no_candidates_) {
    mem_bound_ += grow;
    return;
  }
  const uint64_t t0 = NowNs();
  // The table to itself, not every delivery made: a pass answers no one,
  // and waiting for the delivery thread's callbacks would only stall the
  // pipeline and lengthen the pass's time as AdaptSlack measures it.
  CompleteInFlight();
  uint64_t mem = store_->MemoryBytes();
  if (mem + grow > evict_max_) {
    const uint64_t need = mem + grow - evict_max_ + evict_max_ / evict_slack_div_;
    EvictDown(need < mem ? need : mem);
    mem = store_->MemoryBytes();
    AdaptSlack(t0, NowNs());
  }
  mem_bound_ = mem + grow;
}

void Pipeline::TightenMemBound(const Slot& s) {
  if (!s.mem_sampled || evict_max_ == 0) return;
  uint64_t sampled;
  std::memcpy(&sampled, s.arb->out + s.out_hdr + kHdrMemSample, sizeof(sampled));
  // The sample follows s's L-Slab kernel and may also see part of later
  // ARBs' (their kernels wait only for s's kernel, or for none of s's when
  // both only read, never for its copies), so
  // sample + every later ARB's grow still bounds the memory once they are
  // done: what a later ARB added before the sample is at most its grow less
  // what it adds after, and what it removed before only lowers the sample.
  // Ops of s that are to be retried changed nothing; their re-run is a new
  // ARB with its own grow (MakeRoom).
  uint64_t bound = sampled;
  for (const Slot* later : inflight_) bound += later->grow;
  if (bound < mem_bound_) mem_bound_ = bound;
}

void Pipeline::AdaptSlack(uint64_t pass_start_ns, uint64_t pass_end_ns) {
  // The share of the wall time since the previous pass ended that this one
  // took (its drain included: without the pass it would not have waited).
  const uint64_t took = pass_end_ns - pass_start_ns;
  const uint64_t span = pass_end_ns - evict_last_pass_end_ns_;
  evict_last_pass_end_ns_ = pass_end_ns;
  if (took * 16 > span) {
    if (evict_slack_div_ > kMinSlackDiv) evict_slack_div_ /= 2;
  } else if (took * 64 < span) {
    if (evict_slack_div_ < kMaxSlackDiv) evict_slack_div_ *= 2;
  }
}

uint64_t Pipeline::EvictDown(uint64_t need) {
  uint64_t freed = 0;
  uint64_t boost = 1;  // after a pass fell short: ask for more than is left
  for (int pass = 0; pass < kMaxPasses && freed < need; ++pass) {
    uint64_t f = 0;
    bool more = false, candidates = false;
    const uint64_t left = need - freed;
    const uint64_t ask = left > ~uint64_t(0) / boost ? ~uint64_t(0) : left * boost;
    if (!EvictPass(ask, &f, &more, &candidates)) break;
    freed += f;
    epochs_.Collect();  // frees what no Results holds before the next pass
    if (!candidates) {
      // Nothing (left) to evict. Under a volatile policy that lasts until a
      // key gets an expire-at (MakeRoom).
      if (freed == 0 && IsVolatilePolicy(evict_policy_)) evict_no_candidates_ = true;
      break;
    }
    // The cutoff bin's share is drawn by key hash, so a pass may fall short
    // (even take no key): the next one asks for twice what is left.
    if (f < ask && !more) boost = boost < (1u << 20) ? boost * 2 : boost;
  }
  return freed;
}

bool Pipeline::EvictPass(uint64_t need, uint64_t* freed, bool* more, bool* candidates) {
  *freed = 0;
  *more = false;
  *candidates = false;
  if (sticky_ != cudaSuccess) return false;
  cudaError_t err = cudaSuccess;
  if (evict_hist_ == nullptr) {
    err = cudaMalloc(reinterpret_cast<void**>(&evict_hist_), sizeof(EvictHistogram));
    if (err != cudaSuccess) evict_hist_ = nullptr;
    if (err != cudaSuccess) return PassFailed(err, "eviction");
  }
  if (evict_totals_ == nullptr) {
    err = cudaMalloc(reinterpret_cast<void**>(&evict_totals_), sizeof(EvictTotals));
    if (err != cudaSuccess) evict_totals_ = nullptr;
    if (err != cudaSuccess) return PassFailed(err, "eviction");
  }
  if (evict_hist_host_ == nullptr) {
    err = cudaHostAlloc(reinterpret_cast<void**>(&evict_hist_host_), sizeof(EvictHistogram),
                        cudaHostAllocDefault);
    if (err != cudaSuccess) evict_hist_host_ = nullptr;
    if (err != cudaSuccess) return PassFailed(err, "eviction");
  }
  if (general_) {
    err = EnsureReclaimList();
    if (err != cudaSuccess) return PassFailed(err, "eviction");
  }

  const uint64_t now = store_->config().clock();
  EvictParams p{};
  p.score = ScoreOf(evict_policy_);
  p.volatile_only = IsVolatilePolicy(evict_policy_);
  p.now = now;
  p.salt = 0x9E3779B97F4A7C15ull * ++evict_salt_;
  uint64_t decayed_minutes = 0;  // the decay clock advances once the evict kernel applied it
  if (p.score == kScoreLfu && now > lfu_decay_at_ms_) {
    decayed_minutes = (now - lfu_decay_at_ms_) / 60000;
    p.lfu_decay = uint32_t(decayed_minutes < 255 ? decayed_minutes : 255);
  }

  // 1. The histogram, 2. the cutoff: the lowest scores whose bytes reach
  // `need`, and of the cutoff bin the share (in 1/65536) that makes it up.
  cudaStream_t st = slots_[0].stream;  // nothing else of ours is in flight
  err = general_ ? EvictionHistogram(store_->table(), p, evict_hist_, st)
                 : WindowEvictionHistogram(store_->window_view(), p, evict_hist_, st);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(evict_hist_host_, evict_hist_, sizeof(EvictHistogram),
                          cudaMemcpyDeviceToHost, st);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  if (err != cudaSuccess) return PassFailed(err, "eviction");
  if (!ChooseCutoff(*evict_hist_host_, need, &p.cutoff, &p.share)) return true;  // no candidate
  *candidates = true;

  // 3. Unlink them; the host frees what the general layout listed.
  EvictTotals totals{};
  err = general_ ? EvictChosen(store_->table(), p, sweep_list_, sweep_list_cap_, evict_totals_, st)
                 : WindowEvictChosen(store_->window_view(), p, evict_totals_, st);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&totals, evict_totals_, sizeof(totals), cudaMemcpyDeviceToHost, st);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  if (err != cudaSuccess) return PassFailed(err, "eviction");
  lfu_decay_at_ms_ += decayed_minutes * 60000;
  if (decayed_minutes != 0) store_->NoteLfuDecay(lfu_decay_at_ms_);
  if (general_) FreeReclaimed(totals.listed);
  evicted_keys_.fetch_add(totals.evicted, std::memory_order_relaxed);
  *freed = totals.freed;
  *more = totals.more != 0;
  if (*more) GrowReclaimList();
  if (p.score == kScoreLru) store_->AdvanceGeneration();
  return true;
}

}  // namespace kvcg::store::gpu
