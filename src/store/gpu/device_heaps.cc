// Size-class heaps for key records (device) and value blobs (pinned host).
#include "store/gpu/device_heaps.h"

#include "store/gpu/pinned_memory.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvcg::store::gpu {

SizeClassArena::SizeClassArena(ChunkSource source, uint64_t first_chunk, uint64_t max_chunk)
    : source_(std::move(source)),
      first_chunk_(first_chunk),
      max_chunk_(max_chunk),
      next_chunk_(first_chunk) {}

SizeClassArena::~SizeClassArena() {
  for (auto& [base, bytes] : chunks_) source_.release(base, bytes);
}

uint32_t SizeClassArena::ClassOf(uint64_t bytes) {
  if (bytes < 16) bytes = 16;
  return uint32_t(std::bit_width(bytes - 1));
}

uint64_t SizeClassArena::CarveLocked(uint64_t size) {
  // Aligned to the class up to a cache line: a block of 64 bytes or more
  // then starts a line, so a 64-byte value is read in one (after a 16-byte
  // block, an unaligned cursor put the next 64 bytes across two).
  const uint64_t align = std::min<uint64_t>(size, 64);
  auto aligned = [&] { return std::min(end_, (cursor_ + align - 1) & ~(align - 1)); };
  cursor_ = aligned();
  if (end_ - cursor_ < size) {
    if (spare_ == 0 || spare_bytes_ < size) return 0;
    begin_ = cursor_ = spare_;
    end_ = spare_ + spare_bytes_;
    spare_ = spare_bytes_ = 0;
    cursor_ = aligned();  // (chunk bases are aligned; this keeps it so for any source)
    if (end_ - cursor_ < size) return 0;
  }
  const uint64_t a = cursor_;
  cursor_ += size;
  return a;
}

uint64_t SizeClassArena::NewChunk(uint64_t min_bytes, uint64_t* bytes) {
  uint64_t chunk_bytes = next_chunk_;
  while (chunk_bytes < min_bytes) chunk_bytes <<= 1;
  if (before_cuda_) before_cuda_();
  const uint64_t base = source_.allocate(chunk_bytes);
  if (base == 0) return 0;
  chunks_.emplace_back(base, chunk_bytes);
  if (next_chunk_ < max_chunk_) next_chunk_ <<= 1;
  *bytes = chunk_bytes;
  return base;
}

size_t SizeClassArena::Take(uint32_t c, size_t count, uint64_t* out, bool may_grow) {
  const uint64_t size = 1ull << c;
  size_t got = 0;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() <= c) free_.resize(c + 1);
      std::vector<uint64_t>& list = free_[c];
      const size_t from_list = std::min(count - got, list.size());
      std::copy(list.end() - ptrdiff_t(from_list), list.end(), out + got);
      list.resize(list.size() - from_list);
      got += from_list;
      while (got < count) {
        const uint64_t a = CarveLocked(size);
        if (a == 0) break;
        out[got++] = a;
      }
    }
    if (got == count || !may_grow) return got;
    // Owner: a new chunk. It becomes the spare when none is ready (the next
    // carve moves to it, abandoning what is left of the bump range: less
    // than one more block of this class and its alignment), else the bump
    // range at once.
    uint64_t bytes = 0;
    const uint64_t base = NewChunk(std::max(size, (count - got) * size), &bytes);
    if (base == 0) return got;
    std::lock_guard<std::mutex> lock(mu_);
    if (spare_ == 0) {
      spare_ = base;
      spare_bytes_ = bytes;
    } else {  // keep the spare: carve this chunk now
      begin_ = cursor_ = base;
      end_ = base + bytes;
    }
  }
}

void SizeClassArena::Return(uint32_t c, const uint64_t* addrs, size_t n) {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.size() <= c) free_.resize(c + 1);
  free_[c].insert(free_[c].end(), addrs, addrs + n);
}

void SizeClassArena::Flush() {
  if (pending_classes_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t m = pending_classes_; m != 0; m &= m - 1) {
    const uint32_t c = uint32_t(std::countr_zero(m));
    if (free_.size() <= c) free_.resize(c + 1);
    free_[c].insert(free_[c].end(), pending_[c].begin(), pending_[c].end());
    pending_[c].clear();
  }
  pending_classes_ = 0;
}

void SizeClassArena::Prepare() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (spare_ != 0 || begin_ == 0 || cursor_ - begin_ < (end_ - begin_) / 2) return;
  }
  uint64_t bytes = 0;
  const uint64_t base = NewChunk(next_chunk_, &bytes);
  if (base == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  spare_ = base;
  spare_bytes_ = bytes;
}

void SizeClassArena::Reset() {
  for (auto& [base, bytes] : chunks_) {
    if (before_cuda_) before_cuda_();
    source_.release(base, bytes);
  }
  chunks_.clear();
  for (std::vector<uint64_t>& q : pending_) q.clear();
  pending_classes_ = 0;
  std::lock_guard<std::mutex> lock(mu_);
  free_.clear();
  begin_ = cursor_ = end_ = 0;
  spare_ = spare_bytes_ = 0;
  next_chunk_ = first_chunk_;
}

KeyRecordHeap::KeyRecordHeap(DeviceBudget* budget)
    : budget_(budget),
      arena_(
          SizeClassArena::ChunkSource{
              [this](uint64_t bytes) -> uint64_t {
                if (!budget_->Take(bytes)) return 0;
                void* chunk = nullptr;
                if (cudaMalloc(&chunk, bytes) != cudaSuccess) {
                  cudaGetLastError();
                  budget_->Give(bytes);
                  return 0;
                }
                return reinterpret_cast<uint64_t>(chunk);
              },
              [this](uint64_t base, uint64_t bytes) {
                cudaFree(reinterpret_cast<void*>(base));
                budget_->Give(bytes);
              }},
          1 << 20, 64ull << 20) {}

namespace {

// A value chunk: blobs are read and written at random addresses by the
// consumers and planners, so chunks (multiples of 2 MiB past the first)
// get huge pages (AllocatePinnedHost).
uint64_t PinnedChunk(uint64_t bytes) { return reinterpret_cast<uint64_t>(AllocatePinnedHost(bytes)); }
void FreeChunk(uint64_t base, uint64_t bytes) { FreePinnedHost(reinterpret_cast<void*>(base), bytes); }

}  // namespace

ValueHeap::ValueHeap()
    : arena_(SizeClassArena::ChunkSource{PinnedChunk, FreeChunk},
             64 << 10, 64ull << 20) {}

ValueHeap::~ValueHeap() {
  for (const auto& [blob, bytes] : big_) FreePinnedHost(blob, bytes);
}

void ValueHeap::Fill(uint64_t* blob, std::string_view bytes) {
  size_t done = 0;
#if defined(__x86_64__)
  if (bytes.size() >= 64) {  // blobs of >= 64 bytes start a cache line (CarveLocked)
    __m128i* dst = reinterpret_cast<__m128i*>(blob);
    const char* src = bytes.data();
    for (; done + 16 <= bytes.size(); done += 16) {
      _mm_stream_si128(dst++, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + done)));
    }
    if (done < bytes.size()) {  // the last piece, padded: an ordinary store would read its line
      alignas(16) char last[16] = {};
      std::memcpy(last, src + done, bytes.size() - done);
      _mm_stream_si128(dst, _mm_load_si128(reinterpret_cast<const __m128i*>(last)));
      done = bytes.size();
    }
  }
#endif
  if (done < bytes.size()) {
    std::memcpy(reinterpret_cast<char*>(blob) + done, bytes.data() + done, bytes.size() - done);
  }
}

void ValueHeap::FillFence() {
#if defined(__x86_64__)
  _mm_sfence();  // the streaming stores are ordered before what follows
#endif
}

uint64_t* ValueHeap::Allocate(std::string_view bytes) {
  uint64_t* blob = nullptr;
  if (Big(bytes.size())) {
    BeforeCuda();
    // Rounded up to 16 bytes, as an arena block is: Fill writes whole pieces.
    const uint64_t rounded = (bytes.size() + 15) & ~uint64_t(15);
    blob = reinterpret_cast<uint64_t*>(PinnedChunk(rounded));
    if (blob != nullptr) big_.emplace(blob, rounded);
  } else {
    arena_.Flush();
    uint64_t a = 0;
    arena_.Take(ClassOf(bytes.size()), 1, &a, /*may_grow=*/true);
    blob = reinterpret_cast<uint64_t*>(a);
  }
  if (blob != nullptr) {
    Fill(blob, bytes);
    FillFence();
  }
  return blob;
}

void ValueHeap::Free(uint64_t* blob, uint64_t size) {
  if (blob == nullptr) return;
  if (Big(size)) {
    const auto it = big_.find(blob);
    if (it == big_.end()) return;
    const uint64_t bytes = it->second;
    big_.erase(it);
    BeforeCuda();
    FreePinnedHost(blob, bytes);
    return;
  }
  arena_.Free(reinterpret_cast<uint64_t>(blob), ClassOf(size));
}

}  // namespace kvcg::store::gpu
