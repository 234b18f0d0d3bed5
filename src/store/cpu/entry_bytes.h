// EntryBytes: the key and value of a CPU shard table entry (shard_table.h),
// inside the entry when together they fit in kInlineBytes, else in one heap
// buffer (the key, then the value).
//
// Why not two std::strings: libstdc++ keeps at most 15 bytes of each
// inline, so a 16-byte key and a 32-byte value (the server benchmarks'
// "key:%012llu" keys, the general layout's) each lived on the heap, and a
// GET paid a cache miss for each after the entry's own: one to compare the
// key, one to copy the value out. A profile of kvcg-server on the CPU
// backend (95 % GET, 2-core VM, 2026-12-02) had 21 % of its samples in that
// compare and, with the key inline, 23 % in that copy. With both inline an
// entry is one 64-byte line (ShardTable::Entry: the expire-at and these 56
// bytes), smaller than the 72 bytes of two strings and an expire-at.
//
// The representation follows from the sizes: inline when key and value
// take at most kInlineBytes together, else on the heap (with its capacity,
// so an overwrite that fits reuses the buffer).
//
// Not thread-safe (the shard lock guards it, as it guards the table).
// Views returned by key() and value() are valid until the next change.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace kvcg::store::cpu {

class EntryBytes {
  // memcpy that accepts an empty range with a null pointer (an empty
  // string_view's data() may be null, which memcpy may not be given).
  static void Copy(char* to, const char* from, size_t n) {
    if (n != 0) std::memcpy(to, from, n);
  }

 public:
  static constexpr size_t kInlineBytes = 48;

  EntryBytes() = default;
  ~EntryBytes() { Release(); }
  EntryBytes(const EntryBytes& other) { Assign(other.key(), other.value()); }
  EntryBytes& operator=(const EntryBytes& other) {
    if (this != &other) Assign(other.key(), other.value());
    return *this;
  }
  // A moved-from EntryBytes is empty.
  EntryBytes(EntryBytes&& other) noexcept { Take(other); }
  EntryBytes& operator=(EntryBytes&& other) noexcept {
    if (this != &other) {
      Release();
      Take(other);
    }
    return *this;
  }

  std::string_view key() const { return {data(), key_size_}; }
  std::string_view value() const { return {data() + key_size_, value_size_}; }

  // Sets both (neither may point into this entry).
  void Assign(std::string_view key, std::string_view value) {
    char* at = Reserve(key.size(), value.size());
    Copy(at, key.data(), key.size());
    Copy(at + key.size(), value.data(), value.size());
  }
  // Replaces the value, keeping the key (`value` may not point into this
  // entry).
  void AssignValue(std::string_view value) {
    const uint32_t key_size = key_size_;
    if (InlineFor(key_size, value.size()) != on_heap()) {
      // Where it was (inline, or on the heap): the key stays in place.
      if (on_heap() && key_size + value.size() > u_.heap.capacity) {
        Grow(key_size + value.size());
      }
      Copy(mutable_data() + key_size, value.data(), value.size());
      value_size_ = static_cast<uint32_t>(value.size());
      return;
    }
    // Between inline and heap, so the key fits inline (it did, or will):
    // a copy of it on the stack meanwhile.
    char key_copy[kInlineBytes];
    Copy(key_copy, data(), key_size);
    Assign({key_copy, key_size}, value);
  }

 private:
  static bool InlineFor(size_t key_size, size_t value_size) {
    return key_size + value_size <= kInlineBytes;
  }
  bool on_heap() const { return !InlineFor(key_size_, value_size_); }
  const char* data() const { return on_heap() ? u_.heap.bytes : u_.inline_bytes; }
  char* mutable_data() { return on_heap() ? u_.heap.bytes : u_.inline_bytes; }

  // Room for a key and value of these sizes (contents undefined); returns
  // where the key goes.
  char* Reserve(size_t key_size, size_t value_size) {
    const size_t total = key_size + value_size;
    if (InlineFor(key_size, value_size)) {
      Release();
    } else if (!on_heap() || total > u_.heap.capacity) {
      Release();
      u_.heap.bytes = new char[total];
      u_.heap.capacity = total;
    }
    key_size_ = static_cast<uint32_t>(key_size);
    value_size_ = static_cast<uint32_t>(value_size);
    return mutable_data();
  }
  // A larger heap buffer keeping the key (on the heap already).
  void Grow(size_t total) {
    char* bytes = new char[total];
    Copy(bytes, u_.heap.bytes, key_size_);
    delete[] u_.heap.bytes;
    u_.heap.bytes = bytes;
    u_.heap.capacity = total;
  }
  // Frees a heap buffer; the entry is then empty and inline.
  void Release() {
    if (on_heap()) delete[] u_.heap.bytes;
    key_size_ = 0;
    value_size_ = 0;
  }
  // Takes other's bytes (other is empty after), this entry being empty.
  void Take(EntryBytes& other) {
    u_ = other.u_;
    key_size_ = other.key_size_;
    value_size_ = other.value_size_;
    other.key_size_ = 0;
    other.value_size_ = 0;
  }

  uint32_t key_size_ = 0;
  uint32_t value_size_ = 0;
  union Bytes {
    char inline_bytes[kInlineBytes];
    struct {
      char* bytes;
      size_t capacity;
    } heap;
  } u_{};
};

static_assert(sizeof(EntryBytes) == 56, "an entry (with its expire-at) is one cache line");

}  // namespace kvcg::store::cpu
