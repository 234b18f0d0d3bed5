// WindowSpace (window_space.h).
#include "store/gpu/window_space.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <utility>

namespace kvcg::store::gpu {

WindowSpace::WindowSpace(WindowTable* table, DeviceBudget* budget,
                         std::function<uint64_t(uint64_t)> host_hash, cudaStream_t stream,
                         std::mutex* table_mu)
    : table_(table),
      budget_(budget),
      host_hash_(std::move(host_hash)),
      stream_(stream),
      table_mu_(table_mu) {}

bool WindowSpace::Reserve(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reserved_ + n > table_->ClaimableSlots(used_)) return false;
  reserved_ += n;
  return true;
}

uint64_t WindowSpace::ReserveAvailable(uint64_t want, bool* exhausted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reserved_ + want > table_->ClaimableSlots(used_)) RebuildLocked(want);
  const uint64_t claimable = table_->ClaimableSlots(used_);
  const uint64_t free = claimable > reserved_ ? claimable - reserved_ : 0;
  const uint64_t r = std::min(want, free);
  reserved_ += r;
  *exhausted = claimable == 0;
  return r;
}

void WindowSpace::Release(uint64_t reserved, uint64_t taken) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ -= std::min(reserved, reserved_);
  used_ += taken;
}

void WindowSpace::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  used_ = 0;
  images_.clear();  // Clear() empties the store: an old copy would bring keys back
}

uint64_t WindowSpace::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

uint64_t WindowSpace::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

cudaError_t WindowSpace::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

bool WindowSpace::KeepImageLocked() {
  const WindowTableView v = table_->view();
  Image img;
  img.generation = generation_;
  img.windows = v.windows;
  img.words.resize(v.windows * kWindowWords);
  img.made = std::chrono::steady_clock::now();
  cudaError_t err = cudaMemcpyAsync(img.words.data(), v.slots, img.words.size() * 8,
                                    cudaMemcpyDeviceToHost, stream_);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(img.special, v.special, sizeof(img.special), cudaMemcpyDeviceToHost,
                          stream_);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess) {
    error_ = err;
    return false;
  }
  images_.push_back(std::move(img));
  while (images_.size() > kKeptImages) images_.pop_front();
  return true;
}

const WindowSpace::Image* WindowSpace::FindImageLocked(uint64_t generation) {
  const auto now = std::chrono::steady_clock::now();
  while (!images_.empty() && now - images_.front().made > kImageLifetime) images_.pop_front();
  for (const Image& img : images_) {
    if (img.generation == generation) return &img;
  }
  return nullptr;
}

uint64_t WindowSpace::ScanImageWindows(uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  const Image* img = FindImageLocked(generation);
  return img != nullptr ? img->windows : 0;
}

bool WindowSpace::ScanImage(uint64_t generation, uint64_t begin, uint64_t end,
                            std::vector<uint64_t>* entries) {
  std::lock_guard<std::mutex> lock(mu_);
  const Image* img = FindImageLocked(generation);
  if (img == nullptr) return false;
  if (begin == 0 && end > 0) {
    if (img->special[0] != 0) entries->insert(entries->end(), {kEmptyKey, img->special[1]});
    if (img->special[2] != 0) entries->insert(entries->end(), {kTombKey, img->special[3]});
  }
  const uint64_t stop = std::min(end, img->windows) * kWindowSlots;
  for (uint64_t i = std::min(begin, img->windows) * kWindowSlots; i < stop; ++i) {
    const uint64_t key = img->words[2 * i];
    if (key < kTombKey) entries->insert(entries->end(), {key, img->words[2 * i + 1]});
  }
  return true;
}

void WindowSpace::RebuildLocked(uint64_t want) {
  if (error_ != cudaSuccess) return;
  std::lock_guard<std::mutex> table_lock(*table_mu_);
  WindowTableStats st;
  cudaError_t err = table_->Stats(&st, stream_);
  if (err != cudaSuccess) {
    error_ = err;
    return;
  }
  const uint64_t live = st.keys;  // (the two sentinel keys take no slot: at most 2 over)
  const uint64_t limit = table_->ClaimableSlots(0);
  // Tombstones took the room: the same windows, swept. Else about twice
  // what the live keys and this batch need.
  uint64_t target = live + want <= limit / 2 ? table_->windows()
                                             : WindowsFor(2 * (live + want), kMaxWindowLoad);
  const uint64_t minimal = WindowsFor(live + want, kMaxWindowLoad);
  const bool access = table_->view().access != nullptr;
  const uint64_t old_bytes = table_->device_bytes();
  for (uint64_t windows : {target, minimal}) {
    if (windows < minimal) windows = minimal;
    const uint64_t bytes = WindowTable::DeviceBytes(NextPrime(windows), access);
    if (!budget_->Take(bytes)) continue;
    // Scans begun before this rebuild read the table as it is now.
    if (!KeepImageLocked()) {
      budget_->Give(bytes);
      return;
    }
    err = table_->Grow(windows, host_hash_, stream_);
    if (err != cudaSuccess) images_.pop_back();
    if (err == cudaSuccess) {
      budget_->Give(old_bytes);
      WindowTableStats after;
      err = table_->Stats(&after, stream_);
      if (err != cudaSuccess) {
        error_ = err;
        return;
      }
      used_ = after.used;
      ++generation_;
      return;
    }
    budget_->Give(bytes);
    if (err != cudaErrorMemoryAllocation) {
      error_ = err;
      return;
    }
    cudaGetLastError();  // out of device memory is not sticky: try smaller
  }
}

}  // namespace kvcg::store::gpu
