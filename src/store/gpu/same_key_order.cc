// SameKeyOrder sizing: open addressing at load <= 1/2, grown (never shrunk)
// to the largest batch seen, so steady state allocates nothing.
#include "store/gpu/same_key_order.h"

namespace kvcg::store::gpu {

void SameKeyOrder::Begin(size_t n) {
  size_t want = 16;
  while (want < 2 * n) want <<= 1;
  if (slots_.size() < want) {
    slots_.assign(want, Slot{0, 0, 0, 0});
    gen_ = 0;
  }
  // Use only as many slots as this batch needs: a small batch after a large
  // one must not scatter over the large table (cache misses cost more than
  // the whole rest of packing an op).
  mask_ = want - 1;
  if (++gen_ == 0) {  // wrapped: stale slots could look current
    for (Slot& s : slots_) s.gen = 0;
    gen_ = 1;
  }
  groups_ = 0;
  keys_.clear();
}

}  // namespace kvcg::store::gpu
