// KeyBytes: the key of a CPU shard table entry (shard_table.h) — its bytes
// inside the entry when they fit in kInlineBytes, else on the heap.
//
// Why not std::string: libstdc++ keeps at most 15 bytes inline, so a
// 16-byte key (the general layout's benchmarks, "key:" plus a 12-digit id
// from the loadgen and redis-benchmark) lived on the heap, and every GET
// paid one more dependent cache miss to compare it after its tag matched.
// A profile of kvcg-server on the CPU backend (95 % GET, 16-byte keys,
// 2-core VM, 2026-12-02) had 21 % of the server's samples in that memcmp.
// KeyBytes is as large as a std::string (32 bytes) and keeps up to 24
// bytes inline.
//
// Not thread-safe (the shard lock guards it, as it guards the table).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

namespace kvcg::store::cpu {

class KeyBytes {
 public:
  static constexpr size_t kInlineBytes = 24;

  KeyBytes() = default;
  ~KeyBytes() { Release(); }
  KeyBytes(const KeyBytes& other) { assign(other.view()); }
  KeyBytes& operator=(const KeyBytes& other) {
    if (this != &other) assign(other.view());
    return *this;
  }
  // A moved-from KeyBytes is empty.
  KeyBytes(KeyBytes&& other) noexcept { Take(other); }
  KeyBytes& operator=(KeyBytes&& other) noexcept {
    if (this != &other) {
      Release();
      Take(other);
    }
    return *this;
  }

  // Copies `bytes` (which may not point into this key).
  void assign(std::string_view bytes) {
    if (bytes.size() <= kInlineBytes) {
      Release();
      std::memcpy(u_.inline_bytes, bytes.data(), bytes.size());
    } else if (bytes.size() <= capacity_) {
      std::memcpy(u_.heap, bytes.data(), bytes.size());
    } else {
      Release();
      u_.heap = new char[bytes.size()];
      capacity_ = static_cast<uint32_t>(bytes.size());
      std::memcpy(u_.heap, bytes.data(), bytes.size());
    }
    size_ = static_cast<uint32_t>(bytes.size());
  }

  size_t size() const { return size_; }
  const char* data() const { return capacity_ != 0 ? u_.heap : u_.inline_bytes; }
  std::string_view view() const { return {data(), size_}; }
  operator std::string_view() const { return view(); }  // NOLINT: a key reads as its bytes

  friend bool operator==(const KeyBytes& a, std::string_view b) {
    return a.size_ == b.size() && std::memcmp(a.data(), b.data(), b.size()) == 0;
  }
  friend bool operator==(const KeyBytes& a, const KeyBytes& b) { return a == b.view(); }

 private:
  // Frees a heap buffer; the key is then empty and inline.
  void Release() {
    if (capacity_ != 0) delete[] u_.heap;
    capacity_ = 0;
    size_ = 0;
  }
  // Takes other's bytes (other is empty after), this key being empty.
  void Take(KeyBytes& other) {
    u_ = other.u_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.capacity_ = 0;
    other.size_ = 0;
  }

  union Bytes {
    char inline_bytes[kInlineBytes];
    char* heap;
  } u_{};
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;  // 0: the bytes are inline; else the heap buffer's size
};

static_assert(sizeof(KeyBytes) == 32, "a KeyBytes is as large as a std::string");

}  // namespace kvcg::store::cpu
