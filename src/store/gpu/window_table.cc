// WindowTable (window_table.h): one cudaMalloc for the windows, the side
// table and the counters, another for the access bytes when a policy needs
// them, so a table costs 64 bytes per window (plus one access byte per
// slot under an eviction policy).
#include "store/gpu/window_table.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "store/gpu/window_rehash.h"

namespace kvcg::store::gpu {
namespace {

constexpr uint64_t kSpecialWords = 4;
// Side table, `used`, counters: one 128-byte-aligned block after the windows.
constexpr uint64_t kSideBytes = 128 + sizeof(DeviceCounters) + 128;

}  // namespace

uint64_t WindowTable::DeviceBytes(uint64_t windows, bool access_bytes) {
  return windows * kWindowBytes + kSideBytes + (access_bytes ? windows * kWindowSlots + 2 : 0);
}

cudaError_t WindowTable::Allocate(uint64_t windows, bool access_bytes, Block* out) {
  *out = Block{};
  // The kernel counts windows in 32 bits (window_kernel.cu); 2^32 windows
  // would be 256 GiB, more than any device has.
  if (windows >= (uint64_t(1) << 32)) return cudaErrorMemoryAllocation;
  const uint64_t slot_bytes = windows * kWindowBytes;
  cudaError_t err = cudaMalloc(&out->mem, slot_bytes + kSideBytes);
  if (err == cudaSuccess && access_bytes) {
    err = cudaMalloc(&out->access, windows * kWindowSlots + 2);
  }
  if (err != cudaSuccess) {
    Free(out);
    return err;
  }
  out->bytes = DeviceBytes(windows, access_bytes);
  char* p = static_cast<char*>(out->mem);
  WindowTableView& v = out->view;
  v.slots = reinterpret_cast<uint64_t*>(p);
  v.windows = windows;
  v.special = reinterpret_cast<uint64_t*>(p + slot_bytes);
  v.used = reinterpret_cast<unsigned long long*>(p + slot_bytes + 8 * kSpecialWords);
  v.counters = reinterpret_cast<DeviceCounters*>(p + slot_bytes + 128);
  v.access = static_cast<uint8_t*>(out->access);
  return cudaSuccess;
}

void WindowTable::Free(Block* b) {
  if (b->mem != nullptr) cudaFree(b->mem);
  if (b->access != nullptr) cudaFree(b->access);
  *b = Block{};
}

WindowTable::WindowTable(uint64_t windows, uint64_t entry_overhead, DeviceCounters* counters,
                         bool access_bytes) {
  error_ = Allocate(NextPrime(windows), access_bytes, &block_);
  if (error_ != cudaSuccess) return;
  view_ = block_.view;  // access_mode kAccessNone, generation 0: the owner's to set
  view_.entry_overhead = entry_overhead;
  if (counters != nullptr) {
    view_.counters = counters;
    own_counters_ = false;
  } else {
    error_ = cudaMemset(view_.counters, 0, sizeof(DeviceCounters));
  }
  if (error_ == cudaSuccess) error_ = Clear(nullptr);
}

WindowTable::~WindowTable() { Free(&block_); }

cudaError_t WindowTable::EnsureAccessBytes() {
  if (view_.access != nullptr) return cudaSuccess;
  const uint64_t n = view_.windows * kWindowSlots + 2;
  cudaError_t err = cudaMalloc(&block_.access, n);
  if (err == cudaSuccess) err = cudaMemset(block_.access, 0, n);
  if (err != cudaSuccess) {
    if (block_.access != nullptr) cudaFree(block_.access);
    block_.access = nullptr;
    return err;
  }
  block_.bytes += n;
  view_.access = static_cast<uint8_t*>(block_.access);
  return cudaSuccess;
}

uint64_t WindowTable::ClaimableSlots(uint64_t used) const {
  const uint64_t limit = uint64_t(double(view_.windows * kWindowSlots) * kMaxWindowLoad);
  return used >= limit ? 0 : limit - used;
}

cudaError_t WindowTable::ClearBlock(const WindowTableView& v, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(v.slots, 0xff, v.windows * kWindowBytes, stream);  // EMPTY
  // The side table and `used`.
  if (err == cudaSuccess) err = cudaMemsetAsync(v.special, 0, 128, stream);
  if (err == cudaSuccess && v.access != nullptr) {
    err = cudaMemsetAsync(v.access, 0, v.windows * kWindowSlots + 2, stream);
  }
  return err;
}

cudaError_t WindowTable::Clear(cudaStream_t stream) {
  cudaError_t err = ClearBlock(view_, stream);
  // The counters, their limits kept.
  if (err == cudaSuccess) {
    err = cudaMemsetAsync(view_.counters, 0, offsetof(DeviceCounters, max_keys), stream);
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

cudaError_t WindowTable::Grow(uint64_t windows, const std::function<uint64_t(uint64_t)>& host_hash,
                              cudaStream_t stream) {
  WindowTableStats st;
  cudaError_t err = Stats(&st, stream);
  if (err != cudaSuccess) return err;
  // Room for every live key under the load limit, whatever was asked.
  const uint64_t need = WindowsFor(st.keys + 1, kMaxWindowLoad);
  Block b;
  err = Allocate(NextPrime(windows > need ? windows : need), view_.access != nullptr, &b);
  if (err != cudaSuccess) return err;
  WindowTableView to = b.view;
  to.entry_overhead = view_.entry_overhead;
  if (own_counters_) {
    err = cudaMemcpyAsync(to.counters, view_.counters, sizeof(DeviceCounters),
                          cudaMemcpyDeviceToDevice, stream);
  } else {
    to.counters = view_.counters;
  }
  if (err == cudaSuccess) err = ClearBlock(to, stream);
  uint64_t* hashes = nullptr;
  if (err == cudaSuccess && host_hash) {
    // A custom hash: the host hashes a copy of the keys (tests' hashes).
    const uint64_t slots = view_.windows * kWindowSlots;
    std::vector<uint64_t> words(2 * slots), h(slots, 0);
    err = cudaMemcpyAsync(words.data(), view_.slots, words.size() * 8, cudaMemcpyDeviceToHost,
                          stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    for (uint64_t i = 0; err == cudaSuccess && i < slots; ++i) {
      if (words[2 * i] < kTombKey) h[i] = host_hash(words[2 * i]);
    }
    if (err == cudaSuccess) err = cudaMalloc(&hashes, slots * 8);
    if (err == cudaSuccess) {
      err = cudaMemcpyAsync(hashes, h.data(), slots * 8, cudaMemcpyHostToDevice, stream);
    }
  }
  if (err == cudaSuccess) err = WindowRehash(view_, to, hashes, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (hashes != nullptr) cudaFree(hashes);
  if (err != cudaSuccess) {
    Free(&b);
    return err;
  }
  Free(&block_);
  block_ = b;
  view_ = to;
  return cudaSuccess;
}

}  // namespace kvcg::store::gpu
