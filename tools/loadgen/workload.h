// Key choice for the load generator: uniform, or YCSB's scrambled zipfian
// from src/workload (the generator every kvcg benchmark uses), with ranks
// drawn over the key space itself so the hottest keys stay as hot as θ says.
#pragma once

#include <cstdint>
#include <memory>

#include "workload/generators.h"

namespace kvcg::loadgen {

class KeyChooser {
 public:
  // theta <= 0 means uniform. Deterministic for a seed.
  KeyChooser(uint64_t keys, double theta, uint64_t seed);
  uint64_t Next();

 private:
  uint64_t keys_;
  workload::Random rng_;
  std::unique_ptr<workload::ScrambledZipfianGenerator> zipf_;
};

}  // namespace kvcg::loadgen
