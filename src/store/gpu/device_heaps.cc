// Size-class heaps for key records (device) and value blobs (pinned host).
#include "store/gpu/device_heaps.h"

#include <cuda_runtime.h>

#include <bit>
#include <cstring>

namespace kvcg::store::gpu {
namespace {

// Smallest power-of-two class >= bytes (>= 16), as an exponent.
uint32_t ClassOf(uint64_t bytes) {
  if (bytes < 16) bytes = 16;
  return uint32_t(std::bit_width(bytes - 1));
}

}  // namespace

uint64_t KeyRecordHeap::Allocate(uint32_t key_bytes) {
  const uint32_t c = ClassOf(RecordBytes(key_bytes));
  if (free_.size() <= c) free_.resize(c + 1);
  if (!free_[c].empty()) {
    const uint64_t r = free_[c].back();
    free_[c].pop_back();
    return r;
  }
  const uint64_t size = 1ull << c;
  if (end_ - cursor_ < size) {
    uint64_t chunk_bytes = next_chunk_;
    while (chunk_bytes < size) chunk_bytes <<= 1;
    if (!budget_->Take(chunk_bytes)) return 0;
    void* chunk = nullptr;
    BeforeCuda();
    if (cudaMalloc(&chunk, chunk_bytes) != cudaSuccess) {
      cudaGetLastError();
      budget_->Give(chunk_bytes);
      return 0;
    }
    chunks_.emplace_back(chunk, chunk_bytes);
    cursor_ = reinterpret_cast<uint64_t>(chunk);
    end_ = cursor_ + chunk_bytes;
    if (next_chunk_ < (64ull << 20)) next_chunk_ <<= 1;
  }
  const uint64_t r = cursor_;
  cursor_ += size;
  return r;
}

void KeyRecordHeap::Free(uint64_t record, uint32_t key_bytes) {
  if (record == 0) return;
  free_[ClassOf(RecordBytes(key_bytes))].push_back(record);
}

void KeyRecordHeap::Reset() {
  for (auto& [chunk, bytes] : chunks_) {
    BeforeCuda();
    cudaFree(chunk);
    budget_->Give(bytes);
  }
  chunks_.clear();
  free_.clear();
  cursor_ = end_ = 0;
  next_chunk_ = 1 << 20;
}

uint64_t* ValueHeap::Allocate(std::string_view bytes) {
  uint64_t* blob = Reserve(bytes.size());
  if (blob == nullptr) return nullptr;
  blob[0] = bytes.size();
  if (!bytes.empty()) std::memcpy(blob + 1, bytes.data(), bytes.size());
  return blob;
}

uint64_t* ValueHeap::Reserve(uint64_t value_bytes) {
  const uint64_t need = 8 + value_bytes;
  uint64_t* blob = nullptr;
  if (need > kBigBlob) {
    void* p = nullptr;
    BeforeCuda();
    if (cudaHostAlloc(&p, need, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    blob = static_cast<uint64_t*>(p);
    big_.insert(blob);
  } else {
    const uint32_t c = ClassOf(need);
    if (free_.size() <= c) free_.resize(c + 1);
    if (!free_[c].empty()) {
      blob = free_[c].back();
      free_[c].pop_back();
    } else {
      const uint64_t size = 1ull << c;
      if (uint64_t(end_ - cursor_) < size) {
        uint64_t chunk_bytes = next_chunk_;
        while (chunk_bytes < size) chunk_bytes <<= 1;
        void* chunk = nullptr;
        BeforeCuda();
        if (cudaHostAlloc(&chunk, chunk_bytes, cudaHostAllocMapped | cudaHostAllocPortable) !=
            cudaSuccess) {
          cudaGetLastError();
          return nullptr;
        }
        chunks_.push_back(chunk);
        cursor_ = static_cast<char*>(chunk);
        end_ = cursor_ + chunk_bytes;
        if (next_chunk_ < (16ull << 20)) next_chunk_ <<= 1;
      }
      blob = reinterpret_cast<uint64_t*>(cursor_);
      cursor_ += size;
    }
  }
  return blob;
}

void ValueHeap::Free(uint64_t* blob, uint64_t size) {
  if (blob == nullptr) return;
  const uint64_t need = 8 + size;
  if (need > kBigBlob) {
    big_.erase(blob);
    BeforeCuda();
    cudaFreeHost(blob);
    return;
  }
  free_[ClassOf(need)].push_back(blob);
}

void ValueHeap::Reset() {
  for (uint64_t* blob : big_) cudaFreeHost(blob);
  big_.clear();
  for (void* chunk : chunks_) cudaFreeHost(chunk);
  chunks_.clear();
  free_.clear();
  cursor_ = end_ = nullptr;
  next_chunk_ = 64 << 10;
}

}  // namespace kvcg::store::gpu
