// The histogram's bin of a hash: the hash space split into `bins` equal
// ranges (multiply-high, so every bin covers the same share of 2^64 and no
// division runs per request). Shared by the trainer and the model so both
// always agree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvcg::router {

inline size_t BinOf(uint64_t hash, size_t bins) {
  return static_cast<size_t>((static_cast<unsigned __int128>(hash) * bins) >> 64);
}

}  // namespace kvcg::router
