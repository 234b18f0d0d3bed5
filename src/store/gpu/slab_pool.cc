// SlabPool growth: cudaMalloc a chunk, zero it and publish its pointer on a
// private non-blocking stream, then raise the capacity word, so a kernel that
// sees the new capacity also sees the chunk.
#include "store/gpu/slab_pool.h"

#include <cuda_runtime.h>

namespace kvcg::store::gpu {

bool DeviceBudget::Take(uint64_t bytes) {
  uint64_t cur = used_.load(std::memory_order_relaxed);
  while (true) {
    if (limit_ != 0 && (cur + bytes > limit_ || cur + bytes < cur)) return false;
    if (used_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed)) return true;
  }
}

SlabPool::SlabPool(DeviceBudget* budget, DeviceCounters* counters, uint64_t** chunk_table)
    : budget_(budget), counters_(counters), chunk_table_(chunk_table) {
  cudaError_t err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (err != cudaSuccess) error_ = err;
}

SlabPool::~SlabPool() {
  for (uint64_t* chunk : chunks_) {
    cudaFree(chunk);
    budget_->Give(kPoolChunkBytes);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

bool SlabPool::GrowLocked(uint64_t min_capacity) {
  if (error_.load() != cudaSuccess) return false;
  const size_t before = chunks_.size();
  while (capacity_ < min_capacity && chunks_.size() < kMaxPoolChunks) {
    const uint64_t bytes = kPoolChunkBytes;  // slabs, then their access bytes
    if (!budget_->Take(bytes)) break;
    uint64_t* chunk = nullptr;
    if (cudaMalloc(&chunk, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of device memory is not sticky
      budget_->Give(bytes);
      break;
    }
    cudaError_t err = cudaMemsetAsync(chunk, 0, bytes, stream_);
    if (err != cudaSuccess) {
      error_ = err;
      cudaFree(chunk);
      budget_->Give(bytes);
      break;
    }
    chunks_.push_back(chunk);
    capacity_ = uint64_t(chunks_.size()) * kPoolChunkSlabs;
  }
  if (chunks_.size() == before) return capacity_ >= min_capacity;
  cudaError_t err = cudaMemcpyAsync(chunk_table_ + before, chunks_.data() + before,
                                    (chunks_.size() - before) * sizeof(uint64_t*),
                                    cudaMemcpyHostToDevice, stream_);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
  const unsigned long long cap = capacity_;
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&counters_->slabs_capacity, &cap, sizeof(cap), cudaMemcpyHostToDevice,
                          stream_);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess) {
    error_ = err;
    return false;
  }
  return capacity_ >= min_capacity;
}

bool SlabPool::Reserve(uint64_t slabs) {
  if (slabs == 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t need = used_ + reserved_ + slabs;
  if (need > capacity_) {
    // Grow a quarter beyond the need so steady inserts do not grow per batch.
    if (!GrowLocked(need + need / 4) && !GrowLocked(need)) return false;
  }
  reserved_ += slabs;
  return true;
}

uint64_t SlabPool::ReserveAvailable(uint64_t want, bool* exhausted) {
  std::lock_guard<std::mutex> lock(mu_);
  GrowLocked(used_ + reserved_ + want);
  *exhausted = used_ >= capacity_;
  const uint64_t taken = used_ + reserved_;
  const uint64_t avail = capacity_ > taken ? capacity_ - taken : 0;
  const uint64_t got = avail < want ? avail : want;
  reserved_ += got;
  return got;
}

void SlabPool::Release(uint64_t reserved, uint64_t taken) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ -= reserved;
  used_ += taken;
}

bool SlabPool::EnsureCapacity(uint64_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  return capacity_ >= capacity || GrowLocked(capacity);
}

cudaError_t SlabPool::Reset(uint64_t taken) {
  std::lock_guard<std::mutex> lock(mu_);
  if (1 + taken > capacity_ && taken != 0) return cudaErrorInvalidValue;
  for (uint64_t* chunk : chunks_) {
    cudaError_t err = cudaMemsetAsync(chunk, 0, kPoolChunkBytes, stream_);
    if (err != cudaSuccess) return err;
  }
  const unsigned long long next = 1 + taken;
  cudaError_t err = cudaMemcpyAsync(&counters_->slabs_next, &next, sizeof(next),
                                    cudaMemcpyHostToDevice, stream_);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
  used_ = 1 + taken;
  reserved_ = 0;
  return err;
}

cudaError_t SlabPool::FillAccess(uint8_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t* chunk : chunks_) {
    cudaError_t err = cudaMemsetAsync(chunk + uint64_t(kPoolChunkSlabs) * kSlabWords, value,
                                      uint64_t(kPoolChunkSlabs) * kAccessBytesPerSlab, stream_);
    if (err != cudaSuccess) return err;
  }
  return cudaStreamSynchronize(stream_);
}

uint64_t SlabPool::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_ - 1;
}

uint64_t SlabPool::capacity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return capacity_;
}

uint64_t SlabPool::chunk_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chunks_.size();
}

}  // namespace kvcg::store::gpu
