// PinnedMemory (pinned_memory.h).
#include "store/gpu/pinned_memory.h"

#include <cuda_runtime.h>

#include <bit>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

namespace kvcg::store::gpu {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}  // namespace

void* AllocatePinnedHost(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0 || bytes % kHugePage != 0) {
    if (cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  p = std::aligned_alloc(kHugePage, bytes);
  if (p == nullptr) return nullptr;
  madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);  // fault it in now, as huge pages
  if (cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable) !=
      cudaSuccess) {
    cudaGetLastError();
    std::free(p);
    return nullptr;
  }
  return p;
}

void FreePinnedHost(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes == 0 || bytes % kHugePage != 0) {
    cudaFreeHost(p);
    return;
  }
  cudaHostUnregister(p);
  std::free(p);
}

int PinnedMemory::ClassOf(size_t bytes) {
  const int c = bytes <= (size_t(1) << kMinClass) ? kMinClass : int(std::bit_width(bytes - 1));
  return c - kMinClass;
}

PinnedMemory::~PinnedMemory() {
  for (int c = 0; c < kClasses; ++c) {
    for (void* p : free_[c]) FreePinnedHost(p, ClassBytes(c));
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
      cached_ -= ClassBytes(c);
      return p;
    }
  }
  return AllocatePinnedHost(ClassBytes(c));
}

void PinnedMemory::Free(void* p, size_t bytes) {
  if (p == nullptr) return;
  const int c = ClassOf(bytes);
  const size_t size = ClassBytes(c);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + size <= cache_limit_) {
      free_[c].push_back(p);
      cached_ += size;
      return;
    }
  }
  FreePinnedHost(p, size);
}

}  // namespace kvcg::store::gpu
