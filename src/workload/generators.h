// Key-choice generators of the YCSB benchmark, reimplemented so that kvcg's
// benchmarks draw exactly the distributions the KVCG paper (and every YCSB
// number) uses, deterministically from a seed, at tens of millions of draws
// per second per thread.
//
//  * Zipfian: Gray et al.'s "Quickly generating billion-record synthetic
//    databases" method, as in YCSB's ZipfianGenerator: item 0 is the most
//    popular, P(i) ∝ 1/(i+1)^θ, θ in (0, 1).
//  * ScrambledZipfian: YCSB's ScrambledZipfianGenerator — a zipfian draw over
//    10^10 items, FNV-1a hashed and folded into the key space, so popular
//    keys are spread over the whole space instead of clustered at 0.
//  * SkewedLatest: YCSB's "latest" — recently inserted keys are the popular ones.
//  * Uniform.
//
// Zeta sums over 10^10 items are not summed term by term (YCSB takes minutes
// for θ ≠ 0.99): the first 10^6 terms are summed exactly and the tail by the
// Euler–Maclaurin formula, accurate to ~1e-12 relative (a test checks YCSB's
// precomputed constant for θ = 0.99).
//
// Generators are not thread-safe: one per thread, seeded differently.
#pragma once

#include <cstdint>

namespace kvcg::workload {

// xoshiro256** — small, fast, and the same sequence on every platform.
class Random {
 public:
  explicit Random(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, 1).
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n); n > 0.
  uint64_t Below(uint64_t n);

 private:
  uint64_t s_[4];
};

// YCSB's Utils.fnvhash64 (FNV-1a over the 8 bytes, low byte first, absolute value).
uint64_t FnvHash64(uint64_t value);

// sum_{i=1..n} 1 / i^theta.
double Zeta(uint64_t n, double theta);

class ZipfianGenerator {
 public:
  // Items [0, items); theta in (0, 1).
  ZipfianGenerator(uint64_t items, double theta);
  ZipfianGenerator(uint64_t items, double theta, double zetan);
  uint64_t Next(Random& rng);
  // Grows the item count (YCSB "latest"), updating zeta incrementally.
  void SetItems(uint64_t items);
  uint64_t items() const { return items_; }

 private:
  void Derive();
  uint64_t items_;
  double theta_, zetan_, zeta2_, alpha_, eta_;
};

class ScrambledZipfianGenerator {
 public:
  static constexpr uint64_t kItemCount = 10'000'000'000ull;  // YCSB ITEM_COUNT
  ScrambledZipfianGenerator(uint64_t key_space, double theta);
  // Ranks drawn over `items` instead of YCSB's 10^10 (e.g. items = key_space,
  // so that folding does not flatten the popularity of the hottest keys).
  ScrambledZipfianGenerator(uint64_t key_space, double theta, uint64_t items);
  uint64_t Next(Random& rng) { return FnvHash64(zipf_.Next(rng)) % key_space_; }

 private:
  uint64_t key_space_;
  ZipfianGenerator zipf_;
};

class SkewedLatestGenerator {
 public:
  explicit SkewedLatestGenerator(uint64_t initial_items, double theta = 0.99);
  // `latest` = number of items inserted so far (keys 0..latest-1 exist).
  uint64_t Next(Random& rng, uint64_t latest);

 private:
  ZipfianGenerator zipf_;
};

}  // namespace kvcg::workload
