// ShardTable: one shard's open-addressing hash table of owned byte strings.
//
// Not thread-safe: CpuStore guards each table with its shard's lock.
//
// Layout: a dense array of 64-bit tags (the key's hash, 0 meaning empty)
// probed linearly, beside a parallel array of 64-byte entries (key and
// value inside the entry when they fit: entry_bytes.h). Probing
// touches only the tag array (eight tags per cache line); a key's bytes are
// compared only when its tag matches, and always compared exactly, so keys
// with equal hashes never alias — with a degenerate hash the table is merely
// slow. Deletion uses backward shifting, so there are no tombstones and a
// table under an endless insert/delete loop never needs rebuilding.
//
// Access words: beside each tag sits a 32-bit access word (the entry's LRU
// clock or LFU counter, see cpu_eviction.cc). Readers update it under the
// shard's *shared* lock, so it is a relaxed atomic in its own parallel array
// (entries move on Erase/Grow, which hold the write lock and carry the word
// along); a lost update between two racing readers only blurs the
// approximation, as Redis's own unsynchronised lru field would.
//
// Memory: an entry's key and value sit in the entry or in one heap buffer
// (EntryBytes); an overwrite writes into the place it has (reusing the
// buffer when it is large enough) and a delete frees it, so memory is
// reclaimed at once. Readers never see freed memory because
// they copy values out while holding the shard lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/prefetch.h"
#include "store/cpu/entry_bytes.h"

namespace kvcg::store::cpu {

class ShardTable {
 public:
  // One cache line: the key and value inline when they take at most 48
  // bytes together (entry_bytes.h says why), and the expire-at.
  struct alignas(64) Entry {
    EntryBytes bytes;
    uint64_t expire_at = 0;  // kvcg/batch.h Expiry: ms since the epoch, 0 = none

    std::string_view key() const { return bytes.key(); }
    std::string_view value() const { return bytes.value(); }
  };

  explicit ShardTable(size_t initial_capacity = 16) { Reset(initial_capacity); }

  // Index of `key`'s entry, or -1.
  int64_t Find(uint64_t hash, std::string_view key) const {
    const uint64_t tag = TagOf(hash);
    for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
      const uint64_t t = tags_[i];
      if (t == 0) return -1;
      if (t == tag && entries_[i].key() == key) return static_cast<int64_t>(i);
    }
  }

  Entry& at(int64_t index) { return entries_[static_cast<size_t>(index)]; }
  const Entry& at(int64_t index) const { return entries_[static_cast<size_t>(index)]; }

  // Inserts a key known to be absent; returns its entry. May grow the table
  // (invalidating indices and references from before the call).
  Entry& InsertAbsent(uint64_t hash, std::string_view key, std::string_view value, uint32_t access = 0) {
    if ((size_ + 1) * 4 > tags_.size() * 3) Grow();
    const uint64_t tag = TagOf(hash);
    size_t i = tag & mask_;
    while (tags_[i] != 0) i = (i + 1) & mask_;
    tags_[i] = tag;
    access_[i].store(access, std::memory_order_relaxed);
    entries_[i].bytes.Assign(key, value);
    entries_[i].expire_at = 0;
    ++size_;
    return entries_[i];
  }

  // Removes the entry at `index` (a caller that wants its value reads it
  // first).
  void Erase(int64_t index) {
    size_t hole = static_cast<size_t>(index);
    // Backward-shift: pull later members of the probe run into the hole when
    // the hole lies between their home slot and their current slot.
    for (size_t j = (hole + 1) & mask_; tags_[j] != 0; j = (j + 1) & mask_) {
      const size_t home = HomeOf(j);
      const bool movable = ((j - home) & mask_) >= ((j - hole) & mask_);
      if (movable) {
        tags_[hole] = tags_[j];
        access_[hole].store(access_[j].load(std::memory_order_relaxed), std::memory_order_relaxed);
        entries_[hole] = std::move(entries_[j]);
        hole = j;
      }
    }
    tags_[hole] = 0;
    entries_[hole] = Entry{};
    --size_;
  }

  size_t size() const { return size_; }

  // Drops every entry and shrinks back to `capacity` slots.
  void Reset(size_t capacity) {
    size_t slots = 16;
    while (slots < capacity * 4 / 3 + 1) slots <<= 1;
    std::vector<uint64_t>(slots, 0).swap(tags_);
    std::vector<Entry>(slots).swap(entries_);
    access_ = std::make_unique<std::atomic<uint32_t>[]>(slots);
    mask_ = slots - 1;
    size_ = 0;
    PublishHome();
  }

  size_t mask() const { return mask_; }

  // Starts loading the lines a lookup of `hash` reads first (its home tag
  // and home entry), for a caller that does not hold the shard's lock:
  // CpuStore::Submit requests them a few ops ahead of each op. The table
  // may be growing meanwhile, so the arrays' addresses come from relaxed
  // copies that may be stale or mixed (an old array with the new mask); a
  // prefetch never faults, so a wrong address costs only its request.
  void PrefetchHome(uint64_t hash) const {
    const uint64_t slot = TagOf(hash) & home_mask_.load(std::memory_order_relaxed);
    PrefetchLine(reinterpret_cast<const void*>(home_tags_.load(std::memory_order_relaxed) +
                                               slot * sizeof(uint64_t)));
    PrefetchLine(reinterpret_cast<const void*>(home_entries_.load(std::memory_order_relaxed) +
                                               slot * sizeof(Entry)));
  }

  // Calls f(entry) for every entry whose home slot is `home` (& mask):
  // they sit in the run of occupied slots that starts there (linear probing
  // never leaves a hole between an entry and its home). Store::Scan visits
  // home slots, which move only by doubling or halving with the table, never
  // by other writes (backward shifting moves entries, not their homes).
  template <typename F>
  void ForEachAtHome(size_t home, F&& f) const {
    home &= mask_;
    for (size_t i = home; tags_[i] != 0; i = (i + 1) & mask_) {
      if (HomeOf(i) == home) f(entries_[i]);
    }
  }

  // Calls f(entry) for every entry.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < tags_.size(); ++i) {
      if (tags_[i] != 0) f(entries_[i]);
    }
  }

  // Slots, for sweeps that walk the table by position (active expiry):
  // slot i holds an entry when Occupied(i); at(i) is that entry. Erase(i)
  // may pull a later entry into slot i (backward shift), so a sweep looks at
  // slot i again after erasing it.
  size_t slot_count() const { return tags_.size(); }
  bool Occupied(size_t slot) const { return tags_[slot] != 0; }

  // The access word of the entry at `index` (see the top of this file).
  // Readable and writable under the shared lock; relaxed.
  std::atomic<uint32_t>& access(int64_t index) const { return access_[static_cast<size_t>(index)]; }
  // The stored tag at an occupied slot (the key's hash, 0 remapped to 1).
  uint64_t tag(size_t slot) const { return tags_[slot]; }

 private:
  // The stored tag is the hash with 0 remapped to 1, so 0 can mean "empty".
  // Home slots are computed from the tag (not the hash) so that they can be
  // recomputed from the table alone when shifting and growing.
  static uint64_t TagOf(uint64_t hash) { return hash == 0 ? 1 : hash; }
  size_t HomeOf(size_t slot) const { return tags_[slot] & mask_; }

  void Grow() {
    std::vector<uint64_t> old_tags;
    std::vector<Entry> old_entries;
    old_tags.swap(tags_);
    old_entries.swap(entries_);
    std::unique_ptr<std::atomic<uint32_t>[]> old_access = std::move(access_);
    const size_t slots = old_tags.size() * 2;
    tags_.assign(slots, 0);
    entries_.resize(slots);
    access_ = std::make_unique<std::atomic<uint32_t>[]>(slots);
    mask_ = slots - 1;
    for (size_t i = 0; i < old_tags.size(); ++i) {
      if (old_tags[i] == 0) continue;
      size_t j = old_tags[i] & mask_;
      while (tags_[j] != 0) j = (j + 1) & mask_;
      tags_[j] = old_tags[i];
      access_[j].store(old_access[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
      entries_[j] = std::move(old_entries[i]);
    }
    PublishHome();
  }

  // The copies PrefetchHome reads (see there), after each change of arrays.
  void PublishHome() {
    home_tags_.store(reinterpret_cast<uintptr_t>(tags_.data()), std::memory_order_relaxed);
    home_entries_.store(reinterpret_cast<uintptr_t>(entries_.data()), std::memory_order_relaxed);
    home_mask_.store(mask_, std::memory_order_relaxed);
  }

  std::vector<uint64_t> tags_;
  std::vector<Entry> entries_;
  std::unique_ptr<std::atomic<uint32_t>[]> access_;  // parallel to tags_
  size_t mask_ = 0;
  size_t size_ = 0;
  std::atomic<uintptr_t> home_tags_{0}, home_entries_{0};  // PrefetchHome's copies
  std::atomic<uint64_t> home_mask_{0};
};

}  // namespace kvcg::store::cpu
