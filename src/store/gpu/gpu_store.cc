// GpuStore: device setup, Submit, the admin calls, and
// the two backend factories (GpuAvailable, OpenGpuStore).
//
// Sizing. Buckets: a power of two near expected_keys / 16, so the paper's
// 31-slot slabs sit about half full and chains rarely grow past one slab;
// the bucket array may take at most half the device budget. Budget:
// Config::gpu_memory_bytes, or 3/4 of the free device memory. The batch
// buffers (pinned host + device) are not charged to it.
#include "store/gpu/gpu_store.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

#include "kvcg/hash.h"
#include "store/backends.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/gpu_snapshot.h"
#include "store/gpu/pipeline.h"
#include "store/gpu/window_eviction_kernels.h"
#include "store/gpu/window_kernel.h"

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
  // The layout's table kernel: L-Slab (general) or the window table's (fixed8).
  int blocks = 0;
  const bool general = config.layout == Layout::kGeneral;
  err = general ? gpu::LSlabResidentBlocks(&blocks) : gpu::WindowResidentBlocks(&blocks);
  cudaSetDevice(prev);
  if (err != cudaSuccess || blocks == 0) {
    cudaGetLastError();
    if (why) {
      *why = std::string(general ? "the L-Slab kernel" : "the window table's kernel") +
             " (sm_90) cannot run on this device: " + cudaGetErrorString(err);
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

// General layout: the L-Slab bucket array and slab pool.
Status GpuStore::InitSlabTable(uint64_t budget) {
  uint64_t want = std::bit_ceil(std::max<uint64_t>(config_.expected_keys / 16, 256));
  while (want > 256 && want * kSlabAndAccessBytes > budget / 2) want >>= 1;
  if (want * kSlabAndAccessBytes > budget) {
    return Status::InvalidArgument("gpu_memory_bytes is too small for the bucket array");
  }
  bucket_count_ = want;
  if (!budget_->Take(want * kSlabAndAccessBytes)) {
    return Status::InvalidArgument("gpu_memory_bytes is too small for the bucket array");
  }
  // The head slabs, then their access bytes (lslab_types.h).
  cudaError_t err = cudaMalloc(&buckets_, want * kSlabAndAccessBytes);
  if (err != cudaSuccess) return CudaStatus(err, "cudaMalloc(buckets)");
  err = cudaMalloc(&chunk_table_, sizeof(uint64_t*) * kMaxPoolChunks);
  if (err != cudaSuccess) return CudaStatus(err, "cudaMalloc(chunk table)");
  table_.buckets = buckets_;
  table_.bucket_bits = uint32_t(std::countr_zero(want));
  table_.chunks = chunk_table_;
  err = cudaMemsetAsync(buckets_, 0, want * kSlabAndAccessBytes, control_);
  if (err == cudaSuccess) {
    err = cudaMemsetAsync(chunk_table_, 0, sizeof(uint64_t*) * kMaxPoolChunks, control_);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  if (err != cudaSuccess) return CudaStatus(err, "initializing the table");
  pool_ = std::make_unique<SlabPool>(budget_.get(), counters_, chunk_table_);
  if (pool_->error() != cudaSuccess) return CudaStatus(pool_->error(), "slab pool");
  return Status::Ok();
}

// Fixed8: the window table, sized for expected_keys at load 0.7 (it grows
// past kMaxWindowLoad by a rebuild, window_space.h), at most half the budget.
Status GpuStore::InitWindowTable(uint64_t budget) {
  uint64_t windows = WindowsFor(std::max<uint64_t>(config_.expected_keys, 4096), 0.7);
  while (windows > 1024 && WindowTable::DeviceBytes(NextPrime(windows), false) > budget / 2) {
    windows /= 2;
  }
  windows = NextPrime(windows);
  const uint64_t bytes = WindowTable::DeviceBytes(windows, false);
  if (bytes > budget || !budget_->Take(bytes)) {
    return Status::InvalidArgument("gpu_memory_bytes is too small for the window table");
  }
  window_ = std::make_unique<WindowTable>(windows, table_.entry_overhead, counters_,
                                          /*access_bytes=*/false);
  if (window_->error() != cudaSuccess) return CudaStatus(window_->error(), "window table");
  std::function<uint64_t(uint64_t)> host_hash;
  if (config_.hash != &Xxh3Hash) {
    const HashFunction hash = config_.hash;
    host_hash = [hash](uint64_t key) {
      return hash(std::string_view(reinterpret_cast<const char*>(&key), 8));
    };
  }
  window_space_ = std::make_unique<WindowSpace>(window_.get(), budget_.get(), std::move(host_hash),
                                                control_, &control_mu_);
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

  err = cudaStreamCreateWithFlags(&control_, cudaStreamNonBlocking);
  if (err != cudaSuccess) return CudaStatus(err, "cudaStreamCreate");
  err = cudaMalloc(&counters_, sizeof(DeviceCounters));
  if (err != cudaSuccess) return CudaStatus(err, "cudaMalloc(counters)");
  table_.counters = counters_;
  table_.entry_overhead = general() ? 48 : 16;
  table_.access_mode = kAccessNone;  // the pipeline's ApplyLimit sets it at Start
  table_.generation = 0;
  DeviceCounters c{};
  c.slabs_next = 1;
  c.max_keys = config_.max_keys;
  c.max_mem = config_.max_memory_bytes;
  err = cudaMemcpyAsync(counters_, &c, sizeof(c), cudaMemcpyHostToDevice, control_);
  if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  if (err != cudaSuccess) return CudaStatus(err, "initializing the counters");
  const Status t = general() ? InitSlabTable(budget) : InitWindowTable(budget);
  if (!t.ok()) return t;

  pinned_ = std::make_unique<PinnedMemory>();
  pipeline_ = std::make_unique<Pipeline>(this, budget_.get(), pinned_.get());
  err = pipeline_->Start();
  if (err != cudaSuccess) return CudaStatus(err, "starting the pipeline");
  return Status::Ok();
}

GpuStore::~GpuStore() {
  if (pipeline_) pipeline_->Stop();
  pipeline_.reset();  // frees the heaps while the table still exists
  pool_.reset();
  window_space_.reset();
  window_.reset();
  if (buckets_ != nullptr) cudaFree(buckets_);
  if (chunk_table_ != nullptr) cudaFree(chunk_table_);
  if (counters_ != nullptr) cudaFree(counters_);
  if (access_scratch_ != nullptr) cudaFree(access_scratch_);
  if (control_ != nullptr) cudaStreamDestroy(control_);
}

Status GpuStore::KeyAccess(std::string_view key, KeyAccessInfo* info) const {
  // A key this layout cannot hold is absent.
  if (general() ? key.empty() || key.size() > config_.max_key_bytes : key.size() != 8) {
    return Status(Code::kNotFound, "no such key");
  }
  const uint64_t now = config_.clock();
  const uint64_t hash = config_.hash(key);
  std::vector<uint64_t> words((key.size() + 7) / 8, 0);  // zero-padded, as a key record holds it
  std::memcpy(words.data(), key.data(), key.size());
  unsigned long long found = 0;
  cudaError_t err = cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    if (access_scratch_words_ < words.size() + 1) {
      if (access_scratch_ != nullptr) cudaFree(access_scratch_);
      access_scratch_words_ = 0;
      err = cudaMalloc(reinterpret_cast<void**>(&access_scratch_), (words.size() + 1) * 8);
      if (err != cudaSuccess) access_scratch_ = nullptr;
      if (err == cudaSuccess) access_scratch_words_ = words.size() + 1;
    }
    if (err == cudaSuccess) {
      err = cudaMemcpyAsync(access_scratch_ + 1, words.data(), words.size() * 8, cudaMemcpyHostToDevice, control_);
    }
    if (err == cudaSuccess) {
      // The window table's own view, under control_mu_ (a rebuild holds
      // it): not window_view(), whose access mode and generation the
      // pipeline thread writes meanwhile (the lookup reads neither).
      err = general()
                ? LookupAccessByte(table_, hash, access_scratch_ + 1, uint32_t(key.size()), now,
                                   reinterpret_cast<unsigned long long*>(access_scratch_), control_)
                : WindowLookupAccessByte(window_->view(), hash, words[0],
                                         reinterpret_cast<unsigned long long*>(access_scratch_),
                                         control_);
    }
    if (err == cudaSuccess) err = cudaMemcpyAsync(&found, access_scratch_, 8, cudaMemcpyDeviceToHost, control_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  }
  if (err != cudaSuccess) return CudaStatus(err, "looking up a key's access byte");
  if (found == 0) return Status(Code::kNotFound, "no such key");
  if (access_mode_.load(std::memory_order_relaxed) != kAccessLfu) {
    return Status::Unavailable("the GPU backend keeps a per-key counter under an LFU policy only");
  }
  // Counters lose one per idle minute, applied by the next eviction pass
  // (pipeline_eviction.cc); the minutes since the last one are due.
  const uint64_t decayed_to = lfu_decay_at_ms_.load(std::memory_order_relaxed);
  const uint64_t due = now > decayed_to ? (now - decayed_to) / 60000 : 0;
  const uint32_t counter = uint32_t(found & 0xff);
  *info = KeyAccessInfo{};
  info->lfu = true;
  info->frequency = due >= counter ? 0 : counter - uint32_t(due);
  return Status::Ok();
}

void GpuStore::Submit(Batch batch, Completion done) {
  auto* r = new Request;
  r->batch = std::move(batch);
  r->done = std::move(done);
  pipeline_->Plan(r);  // general layout: its writes' memory, on this thread
  pipeline_->Enqueue(r);
}

void GpuStore::ReadCounters(DeviceCounters* out) const {
  std::lock_guard<std::mutex> lock(control_mu_);
  static_assert(sizeof(DeviceCounters) == 64);
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

void GpuStore::WipeTable() {
  if (!general()) {
    {
      std::lock_guard<std::mutex> control(control_mu_);
      window_->Clear(control_);  // slots, side table, keys and charged bytes
    }
    window_space_->Reset();  // (not under control_mu_: a rebuild takes the two the other way)
    return;
  }
  {
    std::lock_guard<std::mutex> control(control_mu_);
    cudaMemsetAsync(buckets_, 0, bucket_count() * kSlabBytes, control_);
    const unsigned long long zero[2] = {0, 0};  // keys, mem_bytes
    cudaMemcpyAsync(counters_, zero, sizeof(zero), cudaMemcpyHostToDevice, control_);
    cudaMemcpyAsync(&counters_->volatile_keys, zero, sizeof(zero[0]), cudaMemcpyHostToDevice,
                    control_);
    cudaStreamSynchronize(control_);
  }
  pool_->Reset();
}

void GpuStore::Clear() {
  ClearMarker marker;
  auto* r = new Request;
  r->clear = &marker;
  pipeline_->Enqueue(r);
  std::unique_lock<std::mutex> lock(marker.mu);
  marker.cv.wait(lock, [&] { return marker.done; });
}

KeyspaceStats GpuStore::Keyspace() const {
  DeviceCounters c;
  ReadCounters(&c);
  KeyspaceStats stats;
  stats.keys = c.keys;
  stats.volatile_keys = c.volatile_keys;
  stats.avg_ttl_ms = c.volatile_keys == 0 ? 0 : pipeline_->avg_ttl_ms();
  stats.expired_keys = c.expired_keys;
  stats.evicted_keys = pipeline_->evicted_keys();
  return stats;
}

GpuStore::PathCounts GpuStore::path_counts() const { return pipeline_->PathCounts(); }

Status GpuStore::SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) {
  SettingMarker marker;
  marker.max_memory_bytes = max_memory_bytes;
  marker.policy = policy;
  return ApplySetting(&marker);
}

Status GpuStore::ApplyActiveExpiryHz(uint32_t hz) {
  SettingMarker marker;
  marker.expiry_rate = true;
  marker.expiry_hz = hz;
  return ApplySetting(&marker);
}

Status GpuStore::ApplySetting(SettingMarker* marker) {
  auto* r = new Request;
  r->setting = marker;
  pipeline_->Enqueue(r);
  std::unique_lock<std::mutex> lock(marker->mu);
  marker->cv.wait(lock, [&] { return marker->done; });
  return marker->status;
}

Status GpuStore::FillAccessBytes(uint8_t value) {
  cudaError_t err;
  if (!general()) {
    // The window table allocates its access bytes with the first policy
    // that keeps them (window_table.h).
    std::lock_guard<std::mutex> lock(control_mu_);
    err = window_->EnsureAccessBytes();
    if (err == cudaSuccess) {
      err = cudaMemsetAsync(window_->view().access, value,
                            window_->windows() * kWindowSlots + 2, control_);
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
    return err == cudaSuccess ? Status::Ok() : CudaStatus(err, "setting the access bytes");
  }
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    err = cudaMemsetAsync(buckets_ + bucket_count() * kSlabWords, value, bucket_count() * kAccessBytesPerSlab,
                          control_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  }
  if (err == cudaSuccess) err = pool_->FillAccess(value);
  return err == cudaSuccess ? Status::Ok() : CudaStatus(err, "setting the access bytes");
}

Status GpuStore::WriteMemoryLimit(uint64_t max_memory_bytes) {
  std::lock_guard<std::mutex> lock(control_mu_);
  const unsigned long long v = max_memory_bytes;
  cudaError_t err = cudaMemcpyAsync(&counters_->max_mem, &v, sizeof(v), cudaMemcpyHostToDevice, control_);
  if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  return err == cudaSuccess ? Status::Ok() : CudaStatus(err, "writing the memory limit");
}

uint64_t GpuStore::ReclaimExpired() { return ReclaimExpired(nullptr, nullptr); }

uint64_t GpuStore::ReclaimExpired(uint64_t* passes, double* kernel_ms) {
  SweepMarker marker;
  auto* r = new Request;
  r->sweep = &marker;
  pipeline_->Enqueue(r);
  std::unique_lock<std::mutex> lock(marker.mu);
  marker.cv.wait(lock, [&] { return marker.done; });
  if (passes != nullptr) *passes = marker.passes;
  if (kernel_ms != nullptr) *kernel_ms = marker.kernel_ms;
  return marker.removed;
}

Status GpuStore::OpenSnapshot(std::unique_ptr<SnapshotReader>* out) {
  out->reset();
  SnapshotMarker marker;
  return CopyBuckets(&marker, out);
}

// A Scan step is a snapshot of a run of buckets or windows, picked by the
// pipeline at the step's marker (the table may have grown or been rebuilt
// since the last step: pipeline_snapshot.cc). An L-Slab entry never leaves
// its bucket but when the table grows, and then bucket b's entries go to
// the buckets that split it, which the position cursor names exactly; so a
// cursor returns every key present for the whole iteration at least once
// (exactly once unless it was deleted and re-inserted meanwhile). The
// window table's cursor carries its rebuild generation
// (window_snapshot_kernels.h).
Status GpuStore::Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next) {
  out->reset();
  *next = 0;
  SnapshotMarker marker;
  marker.scan = true;
  marker.cursor = cursor;
  marker.count = count;
  marker.keys = Size();
  Status s = CopyBuckets(&marker, out);
  if (s.ok()) *next = marker.next;
  return s;
}

Status GpuStore::CopyBuckets(SnapshotMarker* m, std::unique_ptr<SnapshotReader>* out) {
  SnapshotMarker& marker = *m;
  auto* r = new Request;
  r->snapshot = &marker;
  pipeline_->Enqueue(r);
  std::unique_lock<std::mutex> lock(marker.mu);
  marker.cv.wait(lock, [&] { return marker.done; });
  if (marker.status.ok()) *out = std::move(marker.reader);
  return marker.status;
}

StoreInfo GpuStore::Info() const {
  StoreInfo info;
  info.backend = Backend::kGpu;
  info.layout = config_.layout;
  info.device = device_name_;
  std::string table;
  if (general()) {
    table = "L-Slab: " + std::to_string(bucket_count()) + " buckets of 31-slot slabs (grown " +
            std::to_string(pipeline_ ? pipeline_->growths() : 0) + " times), ";
  } else {
    std::lock_guard<std::mutex> lock(control_mu_);
    table = "window table: " + std::to_string(window_->windows()) +
            " windows of 4 slots (open addressing), ";
  }
  info.detail = table + "one pipeline, batches <= " +
                std::to_string(max_batch_ops_) + " ops / " +
                std::to_string(config_.gpu_batch_timeout_us) + " us, device budget " +
                std::to_string(budget_->limit() >> 20) + " MiB";
  return info;
}

}  // namespace kvcg::store::gpu
