// GpuStore: device setup, Submit's check/hash/route, the admin calls, and
// the two backend factories (GpuAvailable, OpenGpuStore).
//
// Sizing. Buckets: a power of two near expected_keys / 16, so the paper's
// 31-slot slabs sit about half full and chains rarely grow past one slab;
// the bucket array may take at most half the device budget. Budget:
// Config::gpu_memory_bytes, or 3/4 of the free device memory. The batch
// buffers (pinned host + device) are not charged to it.
#include "store/gpu/gpu_store.h"

#include <cuda_runtime.h>

#include <bit>
#include <chrono>
#include <cstring>

#include "store/backends.h"
#include "store/gpu/bulk.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/orchestrator.h"

namespace kvcg::store {

bool GpuAvailable(const Config& config, std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    if (why) {
      *why = err != cudaSuccess ? std::string("no usable CUDA device: ") + cudaGetErrorString(err)
                                : "no CUDA device";
    }
    return false;
  }
  if (config.gpu_device < 0 || config.gpu_device >= count) {
    if (why) *why = "gpu_device " + std::to_string(config.gpu_device) + " does not exist";
    return false;
  }
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(config.gpu_device);
  int blocks = 0;
  err = gpu::LSlabResidentBlocks(config.layout == Layout::kGeneral, &blocks);
  cudaSetDevice(prev);
  if (err != cudaSuccess || blocks == 0) {
    cudaGetLastError();
    if (why) {
      *why = std::string("the L-Slab kernel (sm_90) cannot run on this device: ") +
             cudaGetErrorString(err);
    }
    return false;
  }
  return true;
}

Status OpenGpuStore(const Config& config, std::unique_ptr<Store>* store) {
  return gpu::GpuStore::Open(config, store);
}

}  // namespace kvcg::store

namespace kvcg::store::gpu {
namespace {

Status CudaStatus(cudaError_t err, const char* what) {
  cudaGetLastError();
  return Status::Internal(std::string(what) + ": " + cudaGetErrorString(err));
}

}  // namespace

GpuStore::GpuStore(const Config& config) : config_(config) {}

Status GpuStore::Open(const Config& config, std::unique_ptr<Store>* out) {
  out->reset();
  Status s = ValidateConfig(config);
  if (!s.ok()) return s;
  if (config.layout == Layout::kGeneral &&
      (config.max_value_bytes >= (1ull << 32) || config.max_key_bytes >= (1ull << 31))) {
    return Status::InvalidArgument(
        "the GPU backend keeps value lengths below 4 GiB and key lengths below 2 GiB");
  }
  std::string why;
  if (!GpuAvailable(config, &why)) return Status::Unavailable(why);
  std::unique_ptr<GpuStore> store(new GpuStore(config));
  s = store->Init();
  if (!s.ok()) return s;
  *out = std::move(store);
  return Status::Ok();
}

Status GpuStore::Init() {
  cudaError_t err = cudaSetDevice(config_.gpu_device);
  if (err != cudaSuccess) return CudaStatus(err, "cudaSetDevice");
  cudaDeviceProp prop{};
  err = cudaGetDeviceProperties(&prop, config_.gpu_device);
  if (err != cudaSuccess) return CudaStatus(err, "cudaGetDeviceProperties");
  device_name_ = prop.name;
  max_batch_ops_ = config_.gpu_max_batch_ops != 0
                       ? config_.gpu_max_batch_ops
                       : 2u * uint32_t(prop.multiProcessorCount) *
                             uint32_t(prop.maxThreadsPerMultiProcessor);

  uint64_t budget = config_.gpu_memory_bytes;
  if (budget == 0) {
    size_t free_bytes = 0, total = 0;
    err = cudaMemGetInfo(&free_bytes, &total);
    if (err != cudaSuccess) return CudaStatus(err, "cudaMemGetInfo");
    budget = free_bytes / 4 * 3;
  }
  budget_ = std::make_unique<DeviceBudget>(budget);

  uint64_t want = std::bit_ceil(std::max<uint64_t>(config_.expected_keys / 16, 256));
  while (want > 256 && want * kSlabBytes > budget / 2) want >>= 1;
  if (want * kSlabBytes > budget) {
    return Status::InvalidArgument("gpu_memory_bytes is too small for the bucket array");
  }
  bucket_count_ = want;
  if (!budget_->Take(bucket_count_ * kSlabBytes)) {
    return Status::InvalidArgument("gpu_memory_bytes is too small for the bucket array");
  }

  err = cudaStreamCreateWithFlags(&control_, cudaStreamNonBlocking);
  if (err != cudaSuccess) return CudaStatus(err, "cudaStreamCreate");
  err = cudaMalloc(&buckets_, bucket_count_ * kSlabBytes);
  if (err != cudaSuccess) return CudaStatus(err, "cudaMalloc(buckets)");
  err = cudaMalloc(&chunk_table_, sizeof(uint64_t*) * kMaxPoolChunks);
  if (err != cudaSuccess) return CudaStatus(err, "cudaMalloc(chunk table)");
  err = cudaMalloc(&counters_, sizeof(DeviceCounters));
  if (err != cudaSuccess) return CudaStatus(err, "cudaMalloc(counters)");

  table_.buckets = buckets_;
  table_.bucket_bits = uint32_t(std::countr_zero(bucket_count_));
  table_.chunks = chunk_table_;
  table_.counters = counters_;
  table_.entry_overhead = general() ? 48 : 16;

  DeviceCounters c{};
  c.slabs_next = 1;
  c.max_keys = config_.max_keys;
  c.max_mem = config_.max_memory_bytes;
  err = cudaMemsetAsync(buckets_, 0, bucket_count_ * kSlabBytes, control_);
  if (err == cudaSuccess) {
    err = cudaMemsetAsync(chunk_table_, 0, sizeof(uint64_t*) * kMaxPoolChunks, control_);
  }
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(counters_, &c, sizeof(c), cudaMemcpyHostToDevice, control_);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  if (err != cudaSuccess) return CudaStatus(err, "initializing the table");

  pool_ = std::make_unique<SlabPool>(budget_.get(), counters_, chunk_table_);
  if (pool_->error() != cudaSuccess) return CudaStatus(pool_->error(), "slab pool");

  for (uint32_t i = 0; i < config_.gpu_orchestrators; ++i) {
    orchestrators_.push_back(std::make_unique<Orchestrator>(this, i, budget_.get()));
    err = orchestrators_.back()->Start();
    if (err != cudaSuccess) return CudaStatus(err, "starting an orchestrator");
  }
  return Status::Ok();
}

GpuStore::~GpuStore() {
  bulk_free_.clear();  // callers are gone: every context is idle
  for (auto& o : orchestrators_) o->Stop();
  orchestrators_.clear();  // frees the heaps while the table still exists
  pool_.reset();
  if (buckets_ != nullptr) cudaFree(buckets_);
  if (chunk_table_ != nullptr) cudaFree(chunk_table_);
  if (counters_ != nullptr) cudaFree(counters_);
  if (control_ != nullptr) cudaStreamDestroy(control_);
}

void GpuStore::Submit(Batch batch, Completion done) {
  const size_t n = batch.size();
  auto* req = new Request;
  req->batch = std::move(batch);
  req->done = std::move(done);
  req->results.resize(n);
  const uint32_t orchs = uint32_t(orchestrators_.size());
  Part* parts_small[8] = {};
  std::vector<Part*> parts_big;
  Part** parts = parts_small;
  if (orchs > 8) {
    parts_big.assign(orchs, nullptr);
    parts = parts_big.data();
  }
  const Batch& b = req->batch;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view key = b.key(i);
    const Code code = CheckOperation(config_, b, i);
    if (code != Code::kOk) {
      req->results[i].code = code;
      continue;
    }
    const uint64_t hash = config_.hash(key);
    const uint32_t o = Route(hash);
    if (parts[o] == nullptr) {
      parts[o] = new Part;
      parts[o]->request = req;
      const size_t expect = n / orchs + n / (4 * orchs) + 8;
      parts[o]->ops.reserve(expect);
      parts[o]->hashes.reserve(expect);
    }
    parts[o]->ops.push_back(uint32_t(i));
    parts[o]->hashes.push_back(hash);
  }
  uint32_t count = 0;
  for (uint32_t o = 0; o < orchs; ++o) count += parts[o] != nullptr;
  if (count == 0) {
    req->done(std::move(req->results));
    delete req;
    return;
  }
  req->parts_left.store(count, std::memory_order_relaxed);
  for (uint32_t o = 0; o < orchs; ++o) {
    if (parts[o] == nullptr) continue;
    parts[o]->pending = parts[o]->ops.size();
    orchestrators_[o]->Enqueue(parts[o]);
  }
}

void GpuStore::ExecuteInto(const Batch& batch, std::vector<OpResult>* results) {
  struct Waiter {
    std::atomic<bool> done{false};
    std::mutex mu;
    std::condition_variable cv;
  } w;
  Submit(batch, [&w, results](std::vector<OpResult>&& r) {
    *results = std::move(r);
    std::lock_guard<std::mutex> lock(w.mu);
    w.done.store(true, std::memory_order_release);
    w.cv.notify_one();
  });
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
  while (!w.done.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < spin_until) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  std::unique_lock<std::mutex> lock(w.mu);
  w.cv.wait(lock, [&] { return w.done.load(std::memory_order_acquire); });
}

void GpuStore::ReadCounters(DeviceCounters* out) const {
  std::lock_guard<std::mutex> lock(control_mu_);
  static_assert(sizeof(DeviceCounters) == 48);
  if (cudaMemcpyAsync(out, counters_, sizeof(*out), cudaMemcpyDeviceToHost, control_) !=
          cudaSuccess ||
      cudaStreamSynchronize(control_) != cudaSuccess) {
    cudaGetLastError();
    std::memset(out, 0, sizeof(*out));
  }
}

uint64_t GpuStore::Size() const {
  DeviceCounters c;
  ReadCounters(&c);
  return c.keys;
}

uint64_t GpuStore::MemoryBytes() const {
  DeviceCounters c;
  ReadCounters(&c);
  return c.mem_bytes;
}

void GpuStore::ArriveAtBarrier(ClearBarrier* b) {
  std::unique_lock<std::mutex> lock(b->mu);
  ++b->arrived;
  b->cv.notify_all();
  b->cv.wait(lock, [&] { return b->released; });
  ++b->left;
  b->cv.notify_all();
}

void GpuStore::Clear() {
  std::lock_guard<std::mutex> clear_lock(clear_mu_);
  std::unique_lock<std::shared_mutex> gate(clear_gate_);
  ClearBarrier barrier;
  for (auto& o : orchestrators_) {
    Part* p = new Part;
    p->barrier = &barrier;
    o->Enqueue(p);
  }
  std::unique_lock<std::mutex> lock(barrier.mu);
  barrier.cv.wait(lock, [&] { return barrier.arrived == orchestrators_.size(); });
  // Every orchestrator is parked with nothing in flight: wipe the table.
  {
    std::lock_guard<std::mutex> control(control_mu_);
    cudaMemsetAsync(buckets_, 0, bucket_count_ * kSlabBytes, control_);
    const unsigned long long zero[2] = {0, 0};
    cudaMemcpyAsync(counters_, zero, sizeof(zero), cudaMemcpyHostToDevice, control_);
    cudaStreamSynchronize(control_);
  }
  pool_->Reset();
  barrier.released = true;
  barrier.cv.notify_all();
  barrier.cv.wait(lock, [&] { return barrier.left == orchestrators_.size(); });
}

StoreInfo GpuStore::Info() const {
  StoreInfo info;
  info.backend = Backend::kGpu;
  info.layout = config_.layout;
  info.device = device_name_;
  info.detail = "L-Slab: " + std::to_string(bucket_count_) + " buckets of 31-slot slabs, " +
                std::to_string(orchestrators_.size()) + " orchestrators, batches <= " +
                std::to_string(max_batch_ops_) + " ops / " +
                std::to_string(config_.gpu_batch_timeout_us) + " us, device budget " +
                std::to_string(budget_->limit() >> 20) + " MiB";
  return info;
}

}  // namespace kvcg::store::gpu
