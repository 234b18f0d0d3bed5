// Which key is how popular, under YCSB's scrambled zipfian.
//
// ScrambledZipfianGenerator draws a zipfian rank (0 = most popular) and
// folds FNV-1a(rank) into the key space, so the key index of rank r is known
// without drawing. Benchmarks use it to prefill the most popular keys first
// and to build the paper's prior-knowledge model ("the hottest x% of the key
// space", Fig. 3b). Distinct ranks may fold onto one index; callers that need
// distinct keys skip repeats.
#pragma once

#include <cstdint>

#include "workload/generators.h"

namespace kvcg::workload {

// Key index of zipfian popularity rank `rank` in a key space of `key_space` ids.
inline uint64_t ScrambledZipfianIndexOfRank(uint64_t rank, uint64_t key_space) {
  return FnvHash64(rank) % key_space;
}

}  // namespace kvcg::workload
