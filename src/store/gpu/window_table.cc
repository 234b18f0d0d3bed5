// WindowTable (window_table.h): one cudaMalloc for the windows, the side
// table, the counters and the access bytes, in that order, so a table costs
// 64 bytes per window plus one access byte per slot.
#include "store/gpu/window_table.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace kvcg::store::gpu {
namespace {

constexpr uint64_t kSpecialWords = 4;
// Side table, `used`, counters: one 128-byte-aligned block after the windows.
constexpr uint64_t kSideBytes = 128 + sizeof(DeviceCounters) + 128;

}  // namespace

WindowTable::WindowTable(uint64_t windows, uint64_t entry_overhead) {
  windows = NextPrime(windows);
  const uint64_t slot_bytes = windows * kWindowBytes;
  const uint64_t access_bytes = windows * kWindowSlots + 2;
  bytes_ = slot_bytes + kSideBytes + access_bytes;
  error_ = cudaMalloc(&mem_, bytes_);
  if (error_ != cudaSuccess) {
    mem_ = nullptr;
    return;
  }
  char* p = static_cast<char*>(mem_);
  view_.slots = reinterpret_cast<uint64_t*>(p);
  view_.windows = windows;
  view_.special = reinterpret_cast<uint64_t*>(p + slot_bytes);
  view_.used = reinterpret_cast<unsigned long long*>(p + slot_bytes + 8 * kSpecialWords);
  view_.counters = reinterpret_cast<DeviceCounters*>(p + slot_bytes + 128);
  view_.access = reinterpret_cast<uint8_t*>(p + slot_bytes + kSideBytes);
  view_.entry_overhead = entry_overhead;
  view_.access_mode = kAccessNone;
  view_.generation = 0;
  error_ = cudaMemset(view_.counters, 0, sizeof(DeviceCounters));
  if (error_ == cudaSuccess) error_ = Clear(nullptr);
}

WindowTable::~WindowTable() {
  if (mem_ != nullptr) cudaFree(mem_);
}

uint64_t WindowTable::ClaimableSlots(uint64_t used) const {
  const uint64_t limit = uint64_t(double(view_.windows * kWindowSlots) * kMaxWindowLoad);
  return used >= limit ? 0 : limit - used;
}

cudaError_t WindowTable::Clear(cudaStream_t stream) {
  const uint64_t slot_bytes = view_.windows * kWindowBytes;
  cudaError_t err = cudaMemsetAsync(view_.slots, 0xff, slot_bytes, stream);  // kEmptyKey
  // The side table and `used` (the counters' limits stay).
  if (err == cudaSuccess) err = cudaMemsetAsync(view_.special, 0, 128, stream);
  if (err == cudaSuccess) {
    err = cudaMemsetAsync(view_.counters, 0, offsetof(DeviceCounters, max_keys), stream);
  }
  if (err == cudaSuccess) {
    err = cudaMemsetAsync(view_.access, 0, view_.windows * kWindowSlots + 2, stream);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  return err;
}

cudaError_t WindowTable::SetLimits(uint64_t max_keys, uint64_t max_mem, cudaStream_t stream) {
  const unsigned long long limits[2] = {max_keys, max_mem};
  cudaError_t err = cudaMemcpyAsync(&view_.counters->max_keys, limits, sizeof(limits),
                                    cudaMemcpyHostToDevice, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  return err;
}

cudaError_t WindowTable::Stats(WindowTableStats* out, cudaStream_t stream) const {
  DeviceCounters c{};
  unsigned long long used = 0;
  cudaError_t err =
      cudaMemcpyAsync(&c, view_.counters, sizeof(c), cudaMemcpyDeviceToHost, stream);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&used, view_.used, sizeof(used), cudaMemcpyDeviceToHost, stream);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) return err;
  out->keys = c.keys;
  out->mem_bytes = c.mem_bytes;
  out->used = used;
  return cudaSuccess;
}

}  // namespace kvcg::store::gpu
