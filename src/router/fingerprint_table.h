// FingerprintTable: the lookup structure of the key-set models, a set of
// 64-bit key fingerprints (KeyFingerprint, never 0) built once and then only
// read.
//
// Why this shape: the router asks the installed model about every request,
// so a lookup must cost one cache line, no branch that depends on the
// answer, and the engine overlaps the lines of a batch through Prefetch.
// Fingerprints live in lines of eight (64 bytes, line-aligned), a power of
// two of them, at most half full; a fingerprint goes to the first line from
// its home line (fp & mask) with a free slot. A lookup compares the home
// line's eight slots at once (the compiler makes it a vector compare) and
// is done when the line holds the fingerprint or a free slot — at load
// <= 1/2 a full home line is rare (about 1 line in 30), so the common case
// reads one line whatever the answer. A slot array probed one slot at a
// time (the first design) cost ~12 ns per lookup on the routing pass, most
// of it a mispredicted branch: hot and cold keys alternate at random, and so
// did the probe's length.
//
// Thread safety: Insert only before the table is shared; Contains and
// Prefetch are const and safe from any number of threads afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/prefetch.h"

namespace kvcg::router {

class FingerprintTable {
 public:
  static constexpr size_t kSlotsPerLine = 8;

  // Room for `expected` fingerprints at load <= 1/2 (more may be inserted;
  // the table never grows, so keep to the estimate).
  explicit FingerprintTable(size_t expected) {
    size_t lines = 2;
    while (lines * kSlotsPerLine < expected * 2) lines *= 2;
    lines_.reset(new Line[lines]());
    mask_ = lines - 1;
  }
  // Inserts `fp` (!= 0). Returns whether it was not there yet. The table
  // must keep at least one free slot.
  bool Insert(uint64_t fp) {
    for (size_t l = fp & mask_;; l = (l + 1) & mask_) {
      for (uint64_t& slot : lines_[l].slots) {
        if (slot == fp) return false;
        if (slot == 0) {
          slot = fp;
          ++size_;
          return true;
        }
      }
    }
  }
  bool Contains(uint64_t fp) const {
    for (size_t l = fp & mask_;; l = (l + 1) & mask_) {
      // One branch per line, on "found or free", which is almost always
      // true; whether it was found is computed, not branched on (compilers
      // split `if (found | free)` into two branches, the first as random as
      // the answer).
      const uint32_t m = LineMatch(lines_[l], fp);
      if (m != 0) return (m & kFoundBit) != 0;
    }
  }
  void Prefetch(uint64_t fp) const { PrefetchLine(&lines_[fp & mask_]); }
  size_t size() const { return size_; }

 private:
  struct alignas(64) Line {
    uint64_t slots[kSlotsPerLine];
  };
  static constexpr uint32_t kFoundBit = 1, kFreeBit = 2;

  // kFoundBit if the line holds fp, kFreeBit if it has a free slot. SSE2
  // (every x86-64): the baseline has no 64-bit lane compare, so each one is
  // two 32-bit compares ANDed with their halves swapped.
  static uint32_t LineMatch(const Line& line, uint64_t fp) {
#if defined(__SSE2__)
    const __m128i want = _mm_set1_epi64x(static_cast<long long>(fp));
    const __m128i zero = _mm_setzero_si128();
    __m128i found = zero, free = zero;
    for (size_t k = 0; k < kSlotsPerLine; k += 2) {
      const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(&line.slots[k]));
      const __m128i eq = _mm_cmpeq_epi32(v, want);
      const __m128i z = _mm_cmpeq_epi32(v, zero);
      found = _mm_or_si128(found, _mm_and_si128(eq, _mm_shuffle_epi32(eq, 0xB1)));
      free = _mm_or_si128(free, _mm_and_si128(z, _mm_shuffle_epi32(z, 0xB1)));
    }
    return uint32_t(_mm_movemask_epi8(found) != 0) * kFoundBit |
           uint32_t(_mm_movemask_epi8(free) != 0) * kFreeBit;
#else
    uint32_t m = 0;
    for (uint64_t slot : line.slots) m |= uint32_t(slot == fp) * kFoundBit | uint32_t(slot == 0) * kFreeBit;
    return m;
#endif
  }

  std::unique_ptr<Line[]> lines_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace kvcg::router
