// OpScan: the positions of the ops of some types in a batch's type column,
// found 64 ops at a time.
//
// Why: the host loops that visit only some ops of a batch (AppendBulk's copy
// of the values of the ops that store, the GPU store's write plan) tested
// every op's type with a branch. At 95/5 the storing ops are one in twenty at
// random places, so each one cost a mispredicted branch in every such loop
// (and AppendBulk's prefetch cursor, a second scan of the column, paid them
// again). Here a
// chunk of 64 types becomes one 64-bit mask (four 16-byte compares per type
// on x86-64) and the wanted ops are its set bits: no branch per skipped op.
// kvcg-bench-gpu e2e general (H100, 2026-11-27, same call): the submitters'
// fill time per op at 95/5 20.9-25.0 -> 14.9-16.4 ns, 95/5 333-394 -> 357-426
// M ops/s (docs/BENCHMARKS.md section 2n).
//
// Types are the OpType values 0..7 (a bit of `set` per type); a byte with
// any other value is in no set. Header-only: it sits inside hot loops.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "kvcg/batch.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kvcg {

// A set of op types, bit t for OpType t.
constexpr uint32_t TypeBit(OpType t) { return uint32_t(1) << uint8_t(t); }
// The ops that may store a value (PUT, CAS) and those that write (every op
// but GET: PUT, DELETE, CAS, EXPIRE).
constexpr uint32_t kStoringTypes = TypeBit(OpType::kPut) | TypeBit(OpType::kCompareAndSwap);
constexpr uint32_t kWritingTypes =
    kStoringTypes | TypeBit(OpType::kDelete) | TypeBit(OpType::kExpire);
// Whether `t` is in `set` (a byte outside 0..7 is in none).
constexpr bool TypeIn(OpType t, uint32_t set) {
  return uint8_t(t) < 8 && ((set >> uint8_t(t)) & 1) != 0;
}

// Bit j set when types[j] (j < count <= 64) is in `set`.
inline uint64_t TypeMask64(const OpType* types, size_t count, uint32_t set) {
  const auto* p = reinterpret_cast<const uint8_t*>(types);
  uint64_t m = 0;
  size_t j = 0;
#if defined(__SSE2__)
  for (; j + 16 <= count; j += 16) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + j));
    __m128i hit = _mm_setzero_si128();
    for (uint32_t s = set & 0xff; s != 0; s &= s - 1) {
      hit = _mm_or_si128(hit, _mm_cmpeq_epi8(t, _mm_set1_epi8(char(std::countr_zero(s)))));
    }
    m |= uint64_t(uint32_t(_mm_movemask_epi8(hit))) << j;
  }
#endif
  for (; j < count; ++j) {
    if (TypeIn(OpType(p[j]), set)) m |= uint64_t(1) << j;
  }
  return m;
}

// Walks the positions i in [0, n) with types[i] in `set`, in order.
//   for (OpScan s(types, n, kStoringTypes); s.Next(&i);) ...
class OpScan {
 public:
  OpScan(const OpType* types, size_t n, uint32_t set) : types_(types), n_(n), set_(set) {}
  // The next position into *i; false when none is left.
  bool Next(size_t* i) {
    while (mask_ == 0) {
      if (base_ >= n_) return false;
      const size_t count = n_ - base_ < 64 ? n_ - base_ : 64;
      mask_ = TypeMask64(types_ + base_, count, set_);
      chunk_ = base_;
      base_ += count;
    }
    *i = chunk_ + size_t(std::countr_zero(mask_));
    mask_ &= mask_ - 1;
    return true;
  }

 private:
  const OpType* types_;
  size_t n_;
  uint32_t set_;
  size_t base_ = 0, chunk_ = 0;
  uint64_t mask_ = 0;
};

}  // namespace kvcg
