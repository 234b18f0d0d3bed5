// Orchestrator: aggregation, packing, launch and completion of ARBs.
// See orchestrator.h for the loop and the ordering argument.
#include "store/gpu/orchestrator.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "store/gpu/lslab_kernel.h"

namespace kvcg::store::gpu {
namespace {

uint64_t NowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

constexpr int kDequeueBudget = 8;             // empty polls before a batch leaves
constexpr int kIdleSpinUs = 200;              // spin before sleeping when idle

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}
constexpr uint64_t kMaxArenaBytes = 256 << 20;  // key/expected bytes per batch

size_t Align8(size_t x) { return (x + 7) & ~size_t(7); }

uint64_t Load8(std::string_view s) {
  uint64_t v;
  std::memcpy(&v, s.data(), 8);
  return v;
}

uint32_t TypeCode(OpType t) {
  switch (t) {
    case OpType::kGet: return kOpGet;
    case OpType::kPut: return kOpPut;
    case OpType::kDelete: return kOpDelete;
    case OpType::kCompareAndSwap: return kOpCas;
  }
  return kOpGet;
}

}  // namespace

Orchestrator::Orchestrator(GpuStore* store, uint32_t id, DeviceBudget* budget)
    : store_(store),
      id_(id),
      general_(store->general()),
      max_ops_(store->max_batch_ops()),
      timeout_us_(store->config().gpu_batch_timeout_us),
      records_(budget),
      profile_(std::getenv("KVCG_GPU_PROFILE") != nullptr) {}

Orchestrator::~Orchestrator() {
  Stop();
  for (Slot& s : slots_) {
    if (s.host != nullptr) cudaFreeHost(s.host);
    if (s.dev != nullptr) cudaFree(s.dev);
    if (s.event != nullptr) cudaEventDestroy(s.event);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

cudaError_t Orchestrator::Start() {
  cudaError_t err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  for (Slot& s : slots_) {
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&s.event, cudaEventDisableTiming);
  }
  if (err != cudaSuccess) return err;
  thread_ = std::thread([this] {
    cudaSetDevice(store_->config().gpu_device);
    Run();
  });
  return cudaSuccess;
}

void Orchestrator::Enqueue(Part* part) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(part);
    queued_.fetch_add(1, std::memory_order_release);
  }
  if (sleeping_.load(std::memory_order_acquire)) cv_.notify_one();
}

void Orchestrator::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) {
    thread_.join();
    if (profile_ && prof_.batches > 0) {
      std::fprintf(stderr,
                   "orchestrator %u: %llu batches, %llu ops (%.0f/batch); ms idle %.1f gather %.1f "
                   "pack+launch %.1f wait %.1f complete %.1f; ns/op gather %.1f pack %.1f complete %.1f\n",
                   id_, (unsigned long long)prof_.batches, (unsigned long long)prof_.ops,
                   double(prof_.ops) / prof_.batches, prof_.idle / 1e6, prof_.gather / 1e6,
                   prof_.pack / 1e6, prof_.wait / 1e6, prof_.complete / 1e6,
                   double(prof_.gather) / prof_.ops, double(prof_.pack) / prof_.ops,
                   double(prof_.complete) / prof_.ops);
    }
  }
}

Part* Orchestrator::TryPop() {
  if (queued_.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.empty()) return nullptr;
  Part* p = queue_.front();
  queue_.pop_front();
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return p;
}

void Orchestrator::Run() {
  while (true) {
    if (barrier_ != nullptr) {
      Part* b = barrier_;
      barrier_ = nullptr;
      HandleBarrier(b);
      continue;
    }
    if (inflight_.empty() && cur_ == nullptr) {
      const uint64_t t_idle = profile_ ? NowNs() : 0;
      // Idle: spin a while (low latency for the next small batch), then sleep.
      const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(kIdleSpinUs);
      while (queued_.load(std::memory_order_acquire) == 0 &&
             std::chrono::steady_clock::now() < spin_until) {
        CpuRelax();
      }
      std::unique_lock<std::mutex> lock(mu_);
      sleeping_.store(true, std::memory_order_seq_cst);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      sleeping_.store(false, std::memory_order_relaxed);
      if (profile_) prof_.idle += NowNs() - t_idle;
      if (queue_.empty()) break;  // stopping, and everything is done
    }
    if (inflight_.size() == 2) CompleteFront();
    Slot& s = inflight_.empty() || inflight_.front() != &slots_[0] ? slots_[0] : slots_[1];
    const uint64_t t_gather = profile_ ? NowNs() : 0;
    const bool got = Gather(s);
    if (profile_) prof_.gather += NowNs() - t_gather;
    if (got) {
      const uint64_t t_pack = profile_ ? NowNs() : 0;
      if (profile_) {
        ++prof_.batches;
        prof_.ops += s.ops.size();
      }
      Launch(s, false);
      if (profile_) prof_.pack += NowNs() - t_pack;
      // A batch that could not reserve its slabs runs alone (orchestrator.h).
      if (!inflight_.empty() && inflight_.back() == &s && s.exclusive) CompleteFront();
    } else if (!inflight_.empty()) {
      CompleteFront();
    }
    while (!inflight_.empty() && cudaEventQuery(inflight_.front()->event) != cudaErrorNotReady) {
      CompleteFront();
    }
  }
}

bool Orchestrator::Gather(Slot& s) {
  s.ops.clear();
  s.arena_bytes = 0;
  s.has_cas = false;
  const auto start = std::chrono::steady_clock::now();
  const auto bound = std::chrono::microseconds(timeout_us_);
  int budget = kDequeueBudget;
  while (s.ops.size() < max_ops_) {
    if (cur_ == nullptr) {
      Part* p = TryPop();
      if (p == nullptr) {
        if (s.ops.empty()) return false;
        if (--budget <= 0 || std::chrono::steady_clock::now() - start >= bound) break;
        std::this_thread::yield();
        continue;
      }
      if (p->request == nullptr) {
        barrier_ = p;
        break;
      }
      cur_ = p;
    }
    const Batch& batch = cur_->request->batch;
    bool full = false;
    while (cur_->next < cur_->ops.size() && s.ops.size() < max_ops_) {
      const uint32_t i = cur_->ops[cur_->next];
      const OpType type = batch.type(i);
      if (type == OpType::kCompareAndSwap) s.has_cas = true;
      if (general_) {
        uint64_t bytes = Align8(batch.key(i).size());
        if (type == OpType::kCompareAndSwap && !batch.expect_absent(i)) {
          bytes += Align8(batch.expected(i).size());
        }
        if (!s.ops.empty() && s.arena_bytes + bytes > kMaxArenaBytes) {
          full = true;
          break;
        }
        s.arena_bytes += bytes;
      }
      s.ops.push_back(OpRef{cur_, i, cur_->hashes[cur_->next], nullptr, 0, false});
      ++cur_->next;
    }
    if (cur_->next == cur_->ops.size()) cur_ = nullptr;
    if (full || std::chrono::steady_clock::now() - start >= bound) break;
  }
  return !s.ops.empty();
}

void Orchestrator::Layout(Slot& s) {
  const size_t n = s.ops.size();
  size_t off = 0;
  auto take = [&](size_t bytes) {
    const size_t at = off;
    off += Align8(bytes);
    return at;
  };
  s.hash_off = take(n * 8);
  s.key_off = take(n * 8);
  s.ctl_off = take(n * 8);
  s.value_off = take(n * 8);
  s.expected_off = general_ || s.has_cas ? take(n * 8) : SIZE_MAX;
  s.rec_off = general_ ? take(n * 8) : SIZE_MAX;
  s.vlen_off = general_ ? take(n * 4) : SIZE_MAX;
  s.done_off = take((n / 2 + 2) * 4);
  s.arena_off = take(s.arena_bytes);
  s.hdr_off = take(16);
  s.code_off = take(n);
  s.rvalue_off = take(n * 8);
  s.rrec_off = general_ ? take(n * 8) : SIZE_MAX;
  s.end = off;
}

bool Orchestrator::EnsureCapacity(Slot& s) {
  if (s.capacity >= s.end) return true;
  if (s.host != nullptr) cudaFreeHost(s.host);
  if (s.dev != nullptr) cudaFree(s.dev);
  s.host = nullptr;
  s.dev = nullptr;
  s.capacity = 0;
  const size_t want = s.end + s.end / 2 + 4096;
  if (cudaHostAlloc(reinterpret_cast<void**>(&s.host), want, cudaHostAllocDefault) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&s.dev), want) != cudaSuccess) {
    cudaGetLastError();
    if (s.host != nullptr) cudaFreeHost(s.host);
    s.host = nullptr;
    return false;
  }
  s.capacity = want;
  return true;
}

void Orchestrator::Launch(Slot& s, bool exclusive) {
  const size_t n = s.ops.size();
  if (sticky_ != cudaSuccess) {
    FailAll(s, Code::kInternal);
    return;
  }
  Layout(s);
  if (!EnsureCapacity(s)) {
    FailAll(s, Code::kInternal);
    return;
  }
  char* h = s.host;
  uint64_t* hash = reinterpret_cast<uint64_t*>(h + s.hash_off);
  uint64_t* key = reinterpret_cast<uint64_t*>(h + s.key_off);
  uint64_t* ctl = reinterpret_cast<uint64_t*>(h + s.ctl_off);
  uint64_t* value = reinterpret_cast<uint64_t*>(h + s.value_off);
  uint64_t* expected = s.expected_off == SIZE_MAX ? nullptr : reinterpret_cast<uint64_t*>(h + s.expected_off);
  uint64_t* rec = general_ ? reinterpret_cast<uint64_t*>(h + s.rec_off) : nullptr;
  uint32_t* vlen = general_ ? reinterpret_cast<uint32_t*>(h + s.vlen_off) : nullptr;
  char* arena = h + s.arena_off;
  if (group_.size() < n) {
    group_.resize(n);
    need_.resize(n);
  }

  order_.Begin(n);
  uint64_t storing = 0;
  size_t arena_at = 0;
  for (size_t k = 0; k < n; ++k) {
    OpRef& r = s.ops[k];
    const Batch& batch = r.part->request->batch;
    OpType type = batch.type(r.op);
    const std::string_view kbytes = batch.key(r.op);
    const bool stores = type == OpType::kPut || type == OpType::kCompareAndSwap;
    hash[k] = r.hash;
    r.blob = nullptr;
    r.rec = 0;
    r.failed = false;
    uint64_t exp = 0;
    if (general_) {
      key[k] = uint64_t(arena_at) | (uint64_t(kbytes.size()) << 32);
      std::memcpy(arena + arena_at, kbytes.data(), kbytes.size());
      std::memset(arena + arena_at + kbytes.size(), 0, Align8(kbytes.size()) - kbytes.size());
      arena_at += Align8(kbytes.size());
      vlen[k] = 0;
      value[k] = 0;
      if (stores) {
        const std::string_view v = batch.value(r.op);
        r.blob = values_.Allocate(v);
        if (r.blob == nullptr) {
          r.failed = true;
          type = OpType::kGet;  // run as a harmless read; answered kCapacityExhausted
        } else {
          r.rec = records_.Allocate(uint32_t(kbytes.size()));
          value[k] = reinterpret_cast<uint64_t>(r.blob);
          vlen[k] = uint32_t(v.size());
        }
      }
      if (type == OpType::kCompareAndSwap && !batch.expect_absent(r.op)) {
        const std::string_view e = batch.expected(r.op);
        exp = uint64_t(arena_at) | (uint64_t(e.size()) << 32);
        std::memcpy(arena + arena_at, e.data(), e.size());
        std::memset(arena + arena_at + e.size(), 0, Align8(e.size()) - e.size());
        arena_at += Align8(e.size());
      }
      rec[k] = r.rec;
      expected[k] = exp;
      order_.Add(uint32_t(k), r.hash, type != OpType::kGet,
                 [&](uint32_t j) {
                   const OpRef& o = s.ops[j];
                   return o.part->request->batch.key(o.op) == kbytes;
                 },
                 group_.data(), need_.data());
    } else {
      const uint64_t kw = Load8(kbytes);
      key[k] = kw;
      value[k] = stores ? Load8(batch.value(r.op)) : 0;
      if (expected != nullptr) {
        expected[k] = type == OpType::kCompareAndSwap && !batch.expect_absent(r.op)
                          ? Load8(batch.expected(r.op))
                          : 0;
      }
      order_.Add(uint32_t(k), kw, type != OpType::kGet, [&](uint32_t j) { return key[j] == kw; },
                 group_.data(), need_.data());
    }
    if (stores && !r.failed) ++storing;
    // ctl is written in the second pass (a key's first op learns its group late).
    ctl[k] = TypeCode(type) |
             (type == OpType::kCompareAndSwap && batch.expect_absent(r.op) ? 4u : 0u);
  }
  for (size_t k = 0; k < n; ++k) {
    ctl[k] |= MakeCtl(0, false, group_[k], need_[k]);
  }
  const uint32_t groups = order_.groups();
  std::memset(h + s.done_off, 0, (size_t(groups) + 1) * 4);

  // Slabs: reserve one per storing op, or run alone on what is left.
  s.exclusive = exclusive;
  s.reserved = 0;
  if (!exclusive && storing > 0 && !store_->pool().Reserve(storing)) {
    while (!inflight_.empty()) CompleteFront();
    s.exclusive = true;
  }
  s.pool_exhausted = false;
  if (s.exclusive) {
    s.reserved = store_->pool().ReserveAvailable(storing, &s.pool_exhausted);
  } else {
    s.reserved = storing;
  }
  s.allowance = int(s.reserved);
  uint32_t* hdr = reinterpret_cast<uint32_t*>(h + s.hdr_off);
  hdr[0] = 0;  // cursor
  std::memcpy(hdr + 1, &s.allowance, 4);
  hdr[2] = hdr[3] = 0;

  char* d = s.dev;
  ArbView a{};
  a.n = uint32_t(n);
  a.cursor = reinterpret_cast<uint32_t*>(d + s.hdr_off);
  a.slab_allowance = reinterpret_cast<int*>(d + s.hdr_off + 4);
  a.hash = reinterpret_cast<const uint64_t*>(d + s.hash_off);
  a.key = reinterpret_cast<const uint64_t*>(d + s.key_off);
  a.ctl = reinterpret_cast<const uint64_t*>(d + s.ctl_off);
  a.value = reinterpret_cast<const uint64_t*>(d + s.value_off);
  a.expected = expected ? reinterpret_cast<const uint64_t*>(d + s.expected_off) : nullptr;
  a.rec = general_ ? reinterpret_cast<const uint64_t*>(d + s.rec_off) : nullptr;
  a.vlen = general_ ? reinterpret_cast<const uint32_t*>(d + s.vlen_off) : nullptr;
  a.done = reinterpret_cast<uint32_t*>(d + s.done_off);
  a.arena = reinterpret_cast<const uint64_t*>(d + s.arena_off);
  a.res_code = reinterpret_cast<uint8_t*>(d + s.code_off);
  a.res_value = reinterpret_cast<uint64_t*>(d + s.rvalue_off);
  a.res_rec = general_ ? reinterpret_cast<uint64_t*>(d + s.rrec_off) : nullptr;

  cudaError_t err =
      cudaMemcpyAsync(s.dev, s.host, s.hdr_off + 16, cudaMemcpyHostToDevice, stream_);
  if (err == cudaSuccess) err = LaunchLSlab(general_, store_->table(), a, 0, stream_);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(h + s.hdr_off, d + s.hdr_off, s.end - s.hdr_off, cudaMemcpyDeviceToHost,
                          stream_);
  }
  if (err == cudaSuccess) err = cudaEventRecord(s.event, stream_);
  s.launched_ok = err == cudaSuccess;
  if (err != cudaSuccess) sticky_ = err;
  inflight_.push_back(&s);
}

void Orchestrator::CompleteFront() {
  Slot* s = inflight_.front();
  inflight_.pop_front();
  std::vector<OpRef> retries;
  Complete(*s, &retries);
  // Retries come only from a batch that ran alone (slab_pool.h): re-run them,
  // in order, alone, before anything else of ours is launched.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(store_->config().retry_timeout_ms);
  while (!retries.empty()) {
    s->ops.swap(retries);
    retries.clear();
    if (std::chrono::steady_clock::now() > deadline) {
      FailAll(*s, Code::kTimedOut);
      break;
    }
    s->arena_bytes = 0;
    s->has_cas = false;
    for (const OpRef& r : s->ops) {
      const Batch& b = r.part->request->batch;
      if (b.type(r.op) == OpType::kCompareAndSwap) s->has_cas = true;
      if (general_) {
        s->arena_bytes += Align8(b.key(r.op).size());
        if (b.type(r.op) == OpType::kCompareAndSwap && !b.expect_absent(r.op)) {
          s->arena_bytes += Align8(b.expected(r.op).size());
        }
      }
    }
    Launch(*s, /*exclusive=*/true);
    // Nothing reservable but not exhausted: other batches hold the rest until
    // they finish; give them a moment instead of spinning launches.
    if (s->reserved == 0 && !s->pool_exhausted) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (!inflight_.empty() && inflight_.back() == s) {
      inflight_.pop_back();
      Complete(*s, &retries);
    }
  }
}

void Orchestrator::FailAll(Slot& s, Code code) {
  for (const OpRef& r : s.ops) {
    values_.Free(r.blob);
    if (r.rec != 0) records_.Free(r.rec, uint32_t(r.part->request->batch.key(r.op).size()));
    OpResult& out = r.part->request->results[r.op];
    out.code = code;
    out.value.clear();
    FinishOp(r);
  }
  s.ops.clear();
}

void Orchestrator::FinishOp(const OpRef& r) {
  Part* part = r.part;
  if (--part->pending != 0) return;
  Request* req = part->request;
  delete part;
  if (req->parts_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    req->done(std::move(req->results));
    delete req;
  }
}

void Orchestrator::Complete(Slot& s, std::vector<OpRef>* retries) {
  // Poll rather than block: a blocking wait adds a wake-up to every batch.
  cudaError_t err = sticky_;
  const uint64_t t_wait = profile_ ? NowNs() : 0;
  if (s.launched_ok) {
    while ((err = cudaEventQuery(s.event)) == cudaErrorNotReady) CpuRelax();
  }
  const uint64_t t_done = profile_ ? NowNs() : 0;
  if (profile_) prof_.wait += t_done - t_wait;
  struct AddComplete {
    Orchestrator* o;
    uint64_t t;
    ~AddComplete() {
      if (o->profile_) o->prof_.complete += NowNs() - t;
    }
  } add_complete{this, t_done};
  if (err != cudaSuccess) {
    sticky_ = err;
    FailAll(s, Code::kInternal);
    store_->pool().Release(s.reserved, s.reserved);
    return;
  }
  const char* h = s.host;
  int allowance_left;
  std::memcpy(&allowance_left, h + s.hdr_off + 4, 4);
  store_->pool().Release(s.reserved, uint64_t(s.allowance - allowance_left));

  const uint8_t* codes = reinterpret_cast<const uint8_t*>(h + s.code_off);
  const uint64_t* rvalue = reinterpret_cast<const uint64_t*>(h + s.rvalue_off);
  const uint64_t* rrec = general_ ? reinterpret_cast<const uint64_t*>(h + s.rrec_off) : nullptr;
  const size_t n = s.ops.size();
  for (size_t k = 0; k < n; ++k) {
    const OpRef& r = s.ops[k];
    const Batch& batch = r.part->request->batch;
    OpResult& out = r.part->request->results[r.op];
    const uint32_t klen = uint32_t(batch.key(r.op).size());
    const uint8_t code = codes[k] & 0x7f;
    const bool stored = (codes[k] & kResStored) != 0;
    if (r.failed) {
      out.code = Code::kCapacityExhausted;
      out.value.clear();
      FinishOp(r);
      continue;
    }
    if (code == kResRetryNoSlab || code == kResRetryPoisoned) {
      if (code == kResRetryNoSlab && s.exclusive && s.pool_exhausted) {
        // Not one slab left, none held by other batches: really full.
        out.code = Code::kCapacityExhausted;
        out.value.clear();
        values_.Free(r.blob);
        records_.Free(r.rec, klen);
        FinishOp(r);
        continue;
      }
      values_.Free(r.blob);
      records_.Free(r.rec, klen);
      retries->push_back(r);
      continue;
    }
    if (code == kResCapacity) {
      out.code = Code::kCapacityExhausted;
      out.value.clear();
      values_.Free(r.blob);
      records_.Free(r.rec, klen);
      FinishOp(r);
      continue;
    }
    if (code != kResOk && code != kResNotFound) {
      out.code = Code::kInternal;
      out.value.clear();
      FinishOp(r);
      continue;
    }
    const bool found = code == kResOk;
    out.code = found ? Code::kOk : Code::kNotFound;
    if (!general_) {
      if (found) out.value.assign(reinterpret_cast<const char*>(rvalue + k), 8);
      else out.value.clear();
    } else {
      const uint64_t* old = reinterpret_cast<const uint64_t*>(rvalue[k]);
      if (found) out.value.assign(ValueHeap::Bytes(old));
      else out.value.clear();
      switch (batch.type(r.op)) {
        case OpType::kGet:
          break;
        case OpType::kPut:
        case OpType::kCompareAndSwap:
          if (!stored) {
            values_.Free(r.blob);
            records_.Free(r.rec, klen);
          } else if (found) {
            records_.Free(r.rec, klen);  // the key's record already existed
            free_blobs_.push_back(const_cast<uint64_t*>(old));
          }
          break;
        case OpType::kDelete:
          if (found) {
            free_blobs_.push_back(const_cast<uint64_t*>(old));
            free_records_.emplace_back(rrec[k], klen);
          }
          break;
      }
    }
    FinishOp(r);
  }
  // Replaced values were read above (a GET earlier in this batch may have
  // returned the same blob); only now can they go.
  for (uint64_t* b : free_blobs_) values_.Free(b);
  for (auto& [rec, len] : free_records_) records_.Free(rec, len);
  free_blobs_.clear();
  free_records_.clear();
  s.ops.clear();
}

void Orchestrator::HandleBarrier(Part* barrier) {
  while (!inflight_.empty()) CompleteFront();
  ClearBarrier* b = barrier->barrier;
  delete barrier;
  store_->ArriveAtBarrier(b);
  // The table was wiped while every orchestrator was parked: no slab refers
  // to our records or blobs any more.
  records_.Reset();
  values_.Reset();
}

}  // namespace kvcg::store::gpu
