// The columnar bulk path (kvcg/gpu_bulk.h): public entry points, argument
// checks, and BulkContext, the chunk pipeline (bulk.h).
#include "store/gpu/bulk.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_kernel.h"

namespace kvcg::gpu {

Status ExecuteFixed8(Store* store, const Fixed8Ops& ops) {
  auto* gpu = dynamic_cast<store::gpu::GpuStore*>(store);
  if (gpu == nullptr) return Status::InvalidArgument("ExecuteFixed8 needs a GPU store");
  return gpu->BulkFixed8(ops);
}

void* AllocPinned(size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void FreePinned(void* p) {
  if (p != nullptr) cudaFreeHost(p);
}

}  // namespace kvcg::gpu

namespace kvcg::store::gpu {
namespace {

constexpr size_t kDefaultChunk = size_t(1) << 20;

template <typename T>
cudaError_t Alloc(T** p, size_t count) {
  return cudaMalloc(reinterpret_cast<void**>(p), count * sizeof(T));
}

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

Status GpuStore::BulkFixed8(const kvcg::gpu::Fixed8Ops& ops) {
  if (general()) return Status::InvalidArgument("ExecuteFixed8 needs the fixed8 layout");
  if (ops.n == 0) return Status::Ok();
  if (ops.types == nullptr || ops.keys == nullptr || ops.codes == nullptr ||
      ops.results == nullptr) {
    return Status::InvalidArgument("ExecuteFixed8: null array");
  }
  if (ops.n >= (size_t(1) << 31)) return Status::InvalidArgument("ExecuteFixed8: n >= 2^31");
  // The one host pass over the ops: types are valid, values present for PUTs.
  bool any_put = false;
  for (size_t i = 0; i < ops.n; ++i) {
    const uint8_t t = uint8_t(ops.types[i]);
    if (t > uint8_t(OpType::kDelete)) {
      return Status::InvalidArgument("ExecuteFixed8: op " + std::to_string(i) +
                                     " is not GET, PUT or DELETE");
    }
    any_put |= t == uint8_t(OpType::kPut);
  }
  if (any_put && ops.values == nullptr) {
    return Status::InvalidArgument("ExecuteFixed8: PUT without values");
  }
  cudaSetDevice(config_.gpu_device);
  std::shared_lock<std::shared_mutex> gate(clear_gate_);
  std::unique_ptr<BulkContext> ctx;
  {
    std::lock_guard<std::mutex> lock(bulk_mu_);
    if (!bulk_free_.empty()) {
      ctx = std::move(bulk_free_.back());
      bulk_free_.pop_back();
    }
  }
  if (!ctx) ctx = std::make_unique<BulkContext>(this);
  Status s = ctx->Run(ops);
  std::lock_guard<std::mutex> lock(bulk_mu_);
  bulk_free_.push_back(std::move(ctx));
  return s;
}

BulkContext::~BulkContext() {
  for (Slot& s : slots_) {
    if (s.stream != nullptr) cudaStreamSynchronize(s.stream);
  }
  FreeBuffers();
  for (Slot& s : slots_) {
    if (s.stream != nullptr) cudaStreamDestroy(s.stream);
    if (s.kernel_done != nullptr) cudaEventDestroy(s.kernel_done);
    if (s.done != nullptr) cudaEventDestroy(s.done);
    if (s.hdr_host != nullptr) cudaFreeHost(s.hdr_host);
  }
}

void BulkContext::FreeBuffers() {
  for (Slot& s : slots_) {
    BulkChunkDev& d = s.dev;
    for (void* p : {(void*)d.types, (void*)d.keys, (void*)d.values, (void*)d.hash, (void*)d.ctl,
                    (void*)d.done, (void*)d.sorted_keys, (void*)d.idx_in, (void*)d.idx_out,
                    (void*)d.seg, (void*)d.lastw, (void*)d.seg_scan, (void*)d.lastw_scan,
                    (void*)d.hdr, (void*)d.res_code, (void*)d.res_value, (void*)d.codes,
                    d.temp}) {
      if (p != nullptr) cudaFree(p);
    }
    d = BulkChunkDev{};
    if (s.hash_host != nullptr) cudaFreeHost(s.hash_host);
    s.hash_host = nullptr;
  }
  capacity_ = 0;
}

cudaError_t BulkContext::Ensure(size_t capacity) {
  cudaError_t err = cudaSuccess;
  for (Slot& s : slots_) {
    if (s.stream == nullptr) {
      err = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking);
      if (err == cudaSuccess) err = cudaEventCreateWithFlags(&s.kernel_done, cudaEventDisableTiming);
      if (err == cudaSuccess) err = cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming);
      if (err == cudaSuccess) {
        err = cudaHostAlloc(reinterpret_cast<void**>(&s.hdr_host), 16, cudaHostAllocDefault);
      }
      if (err != cudaSuccess) return err;
    }
  }
  if (capacity <= capacity_) return cudaSuccess;
  FreeBuffers();
  size_t temp = 0;
  err = BulkTempBytes(uint32_t(capacity), &temp);
  if (err != cudaSuccess) return err;
  for (Slot& s : slots_) {
    BulkChunkDev& d = s.dev;
    const size_t c = capacity;
    if ((err = Alloc(&d.types, c)) != cudaSuccess || (err = Alloc(&d.keys, c)) != cudaSuccess ||
        (err = Alloc(&d.values, c)) != cudaSuccess || (err = Alloc(&d.hash, c)) != cudaSuccess ||
        (err = Alloc(&d.ctl, c)) != cudaSuccess || (err = Alloc(&d.done, c + 1)) != cudaSuccess ||
        (err = Alloc(&d.sorted_keys, c)) != cudaSuccess ||
        (err = Alloc(&d.idx_in, c)) != cudaSuccess || (err = Alloc(&d.idx_out, c)) != cudaSuccess ||
        (err = Alloc(&d.seg, c)) != cudaSuccess || (err = Alloc(&d.lastw, c)) != cudaSuccess ||
        (err = Alloc(&d.seg_scan, c)) != cudaSuccess ||
        (err = Alloc(&d.lastw_scan, c)) != cudaSuccess || (err = Alloc(&d.hdr, 4)) != cudaSuccess ||
        (err = Alloc(&d.res_code, c)) != cudaSuccess ||
        (err = Alloc(&d.res_value, c)) != cudaSuccess || (err = Alloc(&d.codes, c)) != cudaSuccess ||
        (err = cudaMalloc(&d.temp, temp)) != cudaSuccess) {
      FreeBuffers();
      return err;
    }
    d.temp_bytes = temp;
  }
  capacity_ = capacity;
  return cudaSuccess;
}

cudaError_t BulkContext::Issue(Slot& s, const OpType* types, const uint64_t* keys,
                               const uint64_t* values, Code* codes, uint64_t* results, size_t cnt,
                               int allowance, cudaEvent_t after) {
  BulkChunkDev d = s.dev;
  d.n = uint32_t(cnt);
  const Config& config = store_->config();
  const bool device_hash = config.hash == &Xxh3Hash;
  cudaStream_t st = s.stream;
  cudaError_t err = cudaMemcpyAsync(d.types, types, cnt, cudaMemcpyHostToDevice, st);
  if (err == cudaSuccess) err = cudaMemcpyAsync(d.keys, keys, cnt * 8, cudaMemcpyHostToDevice, st);
  if (err == cudaSuccess && values != nullptr) {
    err = cudaMemcpyAsync(d.values, values, cnt * 8, cudaMemcpyHostToDevice, st);
  }
  if (err == cudaSuccess && !device_hash) {
    // A custom (test) hash: only the host can run it.
    if (s.hash_host == nullptr) {
      err = cudaHostAlloc(reinterpret_cast<void**>(&s.hash_host), capacity_ * 8,
                          cudaHostAllocDefault);
    }
    if (err == cudaSuccess) {
      for (size_t i = 0; i < cnt; ++i) {
        s.hash_host[i] = config.hash(std::string_view(reinterpret_cast<const char*>(keys + i), 8));
      }
      err = cudaMemcpyAsync(d.hash, s.hash_host, cnt * 8, cudaMemcpyHostToDevice, st);
    }
  }
  if (err == cudaSuccess) err = BulkPrepare(d, device_hash, allowance, st);
  if (err == cudaSuccess && after != nullptr) err = cudaStreamWaitEvent(st, after, 0);
  if (err == cudaSuccess) {
    ArbView a{};
    a.n = d.n;
    a.cursor = d.hdr;
    a.slab_allowance = reinterpret_cast<int*>(d.hdr + 1);
    a.hash = d.hash;
    a.key = d.keys;
    a.ctl = d.ctl;
    a.value = d.values;
    a.done = d.done;
    a.res_code = d.res_code;
    a.res_value = d.res_value;
    err = LaunchLSlab(false, store_->table(), a, 0, st);
  }
  if (err == cudaSuccess) err = cudaEventRecord(s.kernel_done, st);
  if (err == cudaSuccess) err = BulkTranslate(d, st);
  if (err == cudaSuccess) err = cudaMemcpyAsync(codes, d.codes, cnt, cudaMemcpyDeviceToHost, st);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(results, d.res_value, cnt * 8, cudaMemcpyDeviceToHost, st);
  }
  if (err == cudaSuccess) err = cudaMemcpyAsync(s.hdr_host, d.hdr, 16, cudaMemcpyDeviceToHost, st);
  if (err == cudaSuccess) err = cudaEventRecord(s.done, st);
  s.busy = err == cudaSuccess;
  return err;
}

cudaError_t BulkContext::Finish(Slot& s, const kvcg::gpu::Fixed8Ops& ops) {
  if (!s.busy) return cudaSuccess;
  s.busy = false;
  // Poll: a blocking wait adds a wake-up per chunk.
  cudaError_t err;
  while ((err = cudaEventQuery(s.done)) == cudaErrorNotReady) {
    CpuRelax();
    std::this_thread::yield();
  }
  if (err != cudaSuccess) {
    store_->pool().Release(s.reserved, s.reserved);
    return err;
  }
  const int left = int(s.hdr_host[1]);
  store_->pool().Release(s.reserved, s.reserved - uint64_t(left));
  if (s.hdr_host[2] == 0) return cudaSuccess;
  // Only a chunk that ran alone on a partial reservation can ask for retries.
  if (!s.exclusive) return cudaErrorUnknown;
  return Retry(s, ops);
}

cudaError_t BulkContext::Retry(Slot& s, const kvcg::gpu::Fixed8Ops& ops) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(store_->config().retry_timeout_ms);
  std::vector<size_t> idx;
  bool exhausted = s.exhausted;
  for (size_t i = s.off; i < s.off + s.cnt; ++i) {
    const uint8_t c = uint8_t(ops.codes[i]);
    if (c == kBulkRetryNoSlab && exhausted) {
      ops.codes[i] = Code::kCapacityExhausted;
    } else if (c == kBulkRetryNoSlab || c == kBulkRetryPoisoned) {
      idx.push_back(i);
    }
  }
  std::vector<OpType> t;
  std::vector<uint64_t> k, v, r;
  std::vector<Code> c;
  while (!idx.empty()) {
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t i : idx) {
        ops.codes[i] = Code::kTimedOut;
        ops.results[i] = 0;
      }
      break;
    }
    const size_t m = idx.size();
    t.resize(m);
    k.resize(m);
    v.resize(m);
    r.resize(m);
    c.resize(m);
    uint64_t puts = 0;
    for (size_t j = 0; j < m; ++j) {
      t[j] = ops.types[idx[j]];
      k[j] = ops.keys[idx[j]];
      v[j] = t[j] == OpType::kPut ? ops.values[idx[j]] : 0;
      puts += t[j] == OpType::kPut;
    }
    exhausted = false;
    s.reserved = store_->pool().ReserveAvailable(puts, &exhausted);
    cudaError_t err = Issue(s, t.data(), k.data(), v.data(), c.data(), r.data(), m,
                            int(s.reserved), nullptr);
    if (err != cudaSuccess) {
      store_->pool().Release(s.reserved, s.reserved);
      return err;
    }
    s.busy = false;
    while ((err = cudaEventQuery(s.done)) == cudaErrorNotReady) std::this_thread::yield();
    if (err != cudaSuccess) {
      store_->pool().Release(s.reserved, s.reserved);
      return err;
    }
    store_->pool().Release(s.reserved, s.reserved - uint64_t(int(s.hdr_host[1])));
    if (s.reserved == 0 && !exhausted) std::this_thread::sleep_for(std::chrono::microseconds(50));
    std::vector<size_t> again;
    for (size_t j = 0; j < m; ++j) {
      const uint8_t code = uint8_t(c[j]);
      if (code == kBulkRetryNoSlab && exhausted) {
        ops.codes[idx[j]] = Code::kCapacityExhausted;
        ops.results[idx[j]] = 0;
      } else if (code == kBulkRetryNoSlab || code == kBulkRetryPoisoned) {
        again.push_back(idx[j]);
      } else {
        ops.codes[idx[j]] = c[j];
        ops.results[idx[j]] = r[j];
      }
    }
    idx.swap(again);
  }
  return cudaSuccess;
}

Status BulkContext::Run(const kvcg::gpu::Fixed8Ops& ops) {
  const size_t chunk = std::min(ops.chunk_ops != 0 ? ops.chunk_ops : kDefaultChunk, ops.n);
  cudaError_t err = Ensure(chunk);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return Status::Internal(std::string("ExecuteFixed8: ") + cudaGetErrorString(err));
  }
  cudaEvent_t prev = nullptr;  // the previous chunk's L-Slab kernel
  size_t k = 0;
  for (size_t off = 0; off < ops.n && err == cudaSuccess; off += chunk, ++k) {
    Slot& s = slots_[k % 2];
    Slot& other = slots_[(k + 1) % 2];
    err = Finish(s, ops);
    if (err != cudaSuccess) break;
    const size_t cnt = std::min(chunk, ops.n - off);
    uint64_t puts = 0;
    for (size_t i = off; i < off + cnt; ++i) puts += ops.types[i] == OpType::kPut;
    s.off = off;
    s.cnt = cnt;
    s.exclusive = false;
    s.exhausted = false;
    if (puts == 0 || store_->pool().Reserve(puts)) {
      s.reserved = puts;
    } else {
      // Device memory short: run alone on what is left (bulk.h).
      err = Finish(other, ops);
      if (err != cudaSuccess) break;
      prev = nullptr;
      s.exclusive = true;
      s.reserved = store_->pool().ReserveAvailable(puts, &s.exhausted);
    }
    err = Issue(s, ops.types + off, ops.keys + off, ops.values ? ops.values + off : nullptr,
                ops.codes + off, ops.results + off, cnt, int(s.reserved), prev);
    if (err != cudaSuccess) {
      store_->pool().Release(s.reserved, s.reserved);
      break;
    }
    prev = s.kernel_done;
    if (s.exclusive) {
      err = Finish(s, ops);
      prev = nullptr;
    }
  }
  for (Slot& s : slots_) {
    const cudaError_t e = Finish(s, ops);
    if (err == cudaSuccess) err = e;
  }
  if (err != cudaSuccess) {
    // Nothing of this call may still write into the caller's arrays.
    for (Slot& s : slots_) cudaStreamSynchronize(s.stream);
    cudaGetLastError();
    return Status::Internal(std::string("ExecuteFixed8: ") + cudaGetErrorString(err));
  }
  return Status::Ok();
}

}  // namespace kvcg::store::gpu
