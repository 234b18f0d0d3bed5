// Key choice for the load generator: uniform, or zipfian with YCSB's
// ScrambledZipfian (Gray et al.'s generator, ranks scattered over the key
// space by a hash so hot keys are not adjacent).
#pragma once

#include <cstdint>
#include <random>

namespace kvcg::loadgen {

class KeyChooser {
 public:
  // theta <= 0 means uniform.
  KeyChooser(uint64_t keys, double theta);
  uint64_t Next(std::mt19937_64& rng);

 private:
  uint64_t keys_;
  double theta_, alpha_ = 0, zetan_ = 0, eta_ = 0;
};

}  // namespace kvcg::loadgen
