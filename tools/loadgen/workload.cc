// Key distributions; see workload.h.
#include "workload.h"

#include <cmath>

namespace kvcg::loadgen {

namespace {
double Zeta(uint64_t n, double theta) {
  double sum = 0;
  for (uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}
uint64_t Fnv64(uint64_t v) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    h *= 0x100000001b3ull;
    v >>= 8;
  }
  return h;
}
}  // namespace

KeyChooser::KeyChooser(uint64_t keys, double theta) : keys_(keys), theta_(theta) {
  if (theta_ > 0) {
    zetan_ = Zeta(keys_, theta_);
    double zeta2 = Zeta(2, theta_);
    alpha_ = 1.0 / (1.0 - theta_);
    eta_ = (1 - std::pow(2.0 / static_cast<double>(keys_), 1 - theta_)) / (1 - zeta2 / zetan_);
  }
}

uint64_t KeyChooser::Next(std::mt19937_64& rng) {
  if (theta_ <= 0) return rng() % keys_;
  double u = std::uniform_real_distribution<double>(0, 1)(rng);
  double uz = u * zetan_;
  uint64_t rank;
  if (uz < 1.0) rank = 0;
  else if (uz < 1.0 + std::pow(0.5, theta_)) rank = 1;
  else rank = static_cast<uint64_t>(static_cast<double>(keys_) * std::pow(eta_ * u - eta_ + 1, alpha_));
  if (rank >= keys_) rank = keys_ - 1;
  return Fnv64(rank) % keys_;
}

}  // namespace kvcg::loadgen
