// PinnedMemory (pinned_memory.h).
#include "store/gpu/pinned_memory.h"

#include <cuda_runtime.h>

#include <bit>

namespace kvcg::store::gpu {

int PinnedMemory::ClassOf(size_t bytes) {
  const int c = bytes <= (size_t(1) << kMinClass) ? kMinClass : int(std::bit_width(bytes - 1));
  return c - kMinClass;
}

PinnedMemory::~PinnedMemory() {
  for (auto& list : free_) {
    for (void* p : list) cudaFreeHost(p);
  }
}

void* PinnedMemory::Allocate(size_t bytes) {
  const int c = ClassOf(bytes);
  if (c >= kClasses) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_[c].empty()) {
      void* p = free_[c].back();
      free_[c].pop_back();
      cached_ -= size_t(1) << (c + kMinClass);
      return p;
    }
  }
  void* p = nullptr;
  if (cudaHostAlloc(&p, size_t(1) << (c + kMinClass), cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void PinnedMemory::Free(void* p, size_t bytes) {
  if (p == nullptr) return;
  const int c = ClassOf(bytes);
  const size_t size = size_t(1) << (c + kMinClass);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + size <= cache_limit_) {
      free_[c].push_back(p);
      cached_ += size;
      return;
    }
  }
  cudaFreeHost(p);
}

}  // namespace kvcg::store::gpu
