// Key distributions; see workload.h.
#include "workload.h"

namespace kvcg::loadgen {

KeyChooser::KeyChooser(uint64_t keys, double theta, uint64_t seed) : keys_(keys), rng_(seed) {
  if (theta > 0) zipf_ = std::make_unique<workload::ScrambledZipfianGenerator>(keys, theta, keys);
}

uint64_t KeyChooser::Next() { return zipf_ ? zipf_->Next(rng_) : rng_.Below(keys_); }

}  // namespace kvcg::loadgen
