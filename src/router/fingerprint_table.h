// FingerprintTable: the lookup structure of the key-set models, a set of
// 64-bit key fingerprints (KeyFingerprint, never 0) built once and then only
// read.
//
// Why this shape: the router asks the installed model about every request,
// so a lookup must cost one cache miss, and the engine overlaps the misses
// of a batch through Prefetch. A power-of-two array of bare fingerprints,
// at most half full, probed linearly from fp & mask: the first slot read is
// the one Prefetch loaded, and a probe runs on into the same or the next
// line in the rare case it continues (at load <= 1/2 the expected probe
// length of a miss is 2.5 slots, 20 bytes). std::unordered_set would chase
// a bucket and then a node, two or more misses.
//
// Thread safety: Insert only before the table is shared; Find, Contains and
// Prefetch are const and safe from any number of threads afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/prefetch.h"

namespace kvcg::router {

class FingerprintTable {
 public:
  static constexpr size_t kNotFound = ~size_t{0};

  // Room for `expected` fingerprints at load <= 1/2 (more may be inserted;
  // the table never grows, so keep to the estimate).
  explicit FingerprintTable(size_t expected) {
    size_t slots = 16;
    while (slots < expected * 2) slots *= 2;
    slots_.assign(slots, 0);
    mask_ = slots - 1;
  }

  // Inserts `fp` (!= 0). Returns its slot and whether it was not there yet.
  // The table must keep at least one free slot.
  std::pair<size_t, bool> Insert(uint64_t fp) {
    size_t i = fp & mask_;
    for (; slots_[i] != 0; i = (i + 1) & mask_) {
      if (slots_[i] == fp) return {i, false};
    }
    slots_[i] = fp;
    ++size_;
    return {i, true};
  }

  // The slot holding `fp`, or kNotFound.
  size_t Find(uint64_t fp) const {
    for (size_t i = fp & mask_;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == fp) return i;
      if (s == 0) return kNotFound;
    }
  }
  bool Contains(uint64_t fp) const { return Find(fp) != kNotFound; }
  void Prefetch(uint64_t fp) const { PrefetchLine(&slots_[fp & mask_]); }

  size_t size() const { return size_; }
  size_t slot_count() const { return slots_.size(); }

 private:
  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace kvcg::router
