// See generators.h. Formulas follow YCSB's ZipfianGenerator.java.
#include "workload/generators.h"

#include <cmath>

namespace kvcg::workload {

namespace {
uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr uint64_t kExactTerms = 1'000'000;
}  // namespace

Random::Random(uint64_t seed) {
  for (uint64_t& s : s_) s = SplitMix64(seed);
}

uint64_t Random::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t Random::Below(uint64_t n) {
  // Lemire's multiply-shift; the bias for n << 2^64 is far below anything measurable.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
}

uint64_t FnvHash64(uint64_t value) {
  int64_t hash = static_cast<int64_t>(0xCBF29CE484222325ull);
  for (int i = 0; i < 8; ++i) {
    const int64_t octet = static_cast<int64_t>(value & 0xff);
    value >>= 8;
    hash ^= octet;
    hash = static_cast<int64_t>(static_cast<uint64_t>(hash) * 1099511628211ull);
  }
  // Java's Math.abs; Long.MIN_VALUE stays as is (then the unsigned modulo applies).
  return hash < 0 && hash != INT64_MIN ? static_cast<uint64_t>(-hash) : static_cast<uint64_t>(hash);
}

double Zeta(uint64_t n, double theta) {
  const uint64_t exact = n < kExactTerms ? n : kExactTerms;
  double sum = 0;
  for (uint64_t i = exact; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);
  if (n == exact) return sum;
  // Euler–Maclaurin for sum_{i=m+1}^{n} f(i), f(x) = x^-θ:
  //   ∫_m^n f + (f(n) - f(m))/2 + (f'(n) - f'(m))/12 - (f'''(n) - f'''(m))/720
  const double m = static_cast<double>(exact), N = static_cast<double>(n);
  auto f = [&](double x) { return std::pow(x, -theta); };
  auto f1 = [&](double x) { return -theta * std::pow(x, -theta - 1); };
  auto f3 = [&](double x) { return -theta * (theta + 1) * (theta + 2) * std::pow(x, -theta - 3); };
  const double integral = (std::pow(N, 1 - theta) - std::pow(m, 1 - theta)) / (1 - theta);
  return sum + integral + (f(N) - f(m)) / 2 + (f1(N) - f1(m)) / 12 - (f3(N) - f3(m)) / 720;
}

ZipfianGenerator::ZipfianGenerator(uint64_t items, double theta)
    : ZipfianGenerator(items, theta, Zeta(items, theta)) {}

ZipfianGenerator::ZipfianGenerator(uint64_t items, double theta, double zetan)
    : items_(items), theta_(theta), zetan_(zetan) {
  zeta2_ = Zeta(2, theta_);
  alpha_ = 1.0 / (1.0 - theta_);
  Derive();
}

void ZipfianGenerator::Derive() {
  eta_ = (1 - std::pow(2.0 / static_cast<double>(items_), 1 - theta_)) / (1 - zeta2_ / zetan_);
}

void ZipfianGenerator::SetItems(uint64_t items) {
  if (items == items_) return;
  if (items > items_ && items - items_ < kExactTerms) {
    for (uint64_t i = items_ + 1; i <= items; ++i) zetan_ += std::pow(static_cast<double>(i), -theta_);
  } else {
    zetan_ = Zeta(items, theta_);
  }
  items_ = items;
  Derive();
}

uint64_t ZipfianGenerator::Next(Random& rng) {
  const double u = rng.NextDouble();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
  const uint64_t ret = static_cast<uint64_t>(static_cast<double>(items_) *
                                             std::pow(eta_ * u - eta_ + 1, alpha_));
  return ret < items_ ? ret : items_ - 1;
}

ScrambledZipfianGenerator::ScrambledZipfianGenerator(uint64_t key_space, double theta)
    : key_space_(key_space),
      // YCSB hard-codes zeta(10^10, 0.99) = 26.46902820178302; Zeta() matches it.
      zipf_(kItemCount, theta, theta == 0.99 ? 26.46902820178302 : Zeta(kItemCount, theta)) {}

ScrambledZipfianGenerator::ScrambledZipfianGenerator(uint64_t key_space, double theta,
                                                     uint64_t items)
    : key_space_(key_space), zipf_(items, theta) {}

SkewedLatestGenerator::SkewedLatestGenerator(uint64_t initial_items, double theta)
    : zipf_(initial_items == 0 ? 1 : initial_items, theta) {}

uint64_t SkewedLatestGenerator::Next(Random& rng, uint64_t latest) {
  if (latest == 0) return 0;
  zipf_.SetItems(latest);
  return latest - 1 - zipf_.Next(rng);
}

}  // namespace kvcg::workload
