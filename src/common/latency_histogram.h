// LatencyHistogram: a fixed-size log-linear histogram of nanosecond
// latencies, for benchmarks and the engine's/server's stats.
//
// Why our own: recording must be a few instructions with no allocation (it
// sits on every operation's path), and merging per-thread copies must be a
// plain sum. Buckets: values below 2^kSubBits are exact; above, each power of
// two is split into 2^kSubBits linear sub-buckets, so any reported
// percentile is within 1/2^kSubBits (≈1.6%) of the true value. Covers up to
// 2^kMaxExp ns (about 9 minutes).
//
// Not thread-safe: give each thread its own and Merge them. The bucket
// mapping (BucketOf, LowerBoundOf, UpperBoundOf) is public so that the
// engine's concurrent histogram (src/engine/latency_histogram.h) shares it.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace kvcg {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kMaxExp = 40;
  static constexpr int kBuckets = (kMaxExp - kSubBits + 1) << kSubBits;

  // Bucket of a latency of `ns` nanoseconds.
  static int BucketOf(uint64_t ns) {
    if (ns < (uint64_t{1} << kSubBits)) return static_cast<int>(ns);
    const int exp = 63 - std::countl_zero(ns);  // >= kSubBits
    if (exp >= kMaxExp) return kBuckets - 1;  // 2^kMaxExp ns and beyond: the last bucket
    const int sub = static_cast<int>((ns >> (exp - kSubBits)) & ((1 << kSubBits) - 1));
    return ((exp - kSubBits + 1) << kSubBits) + sub;
  }

  // Smallest value in `bucket`.
  static uint64_t LowerBoundOf(int bucket) {
    return bucket == 0 ? 0 : UpperBoundOf(bucket - 1) + 1;
  }

  // Largest value in `bucket`.
  static uint64_t UpperBoundOf(int bucket) {
    if (bucket < (1 << kSubBits)) return static_cast<uint64_t>(bucket);
    const int exp = (bucket >> kSubBits) + kSubBits - 1;
    const uint64_t sub = static_cast<uint64_t>(bucket & ((1 << kSubBits) - 1));
    const uint64_t base = uint64_t{1} << exp;
    const uint64_t step = base >> kSubBits;
    return base + (sub + 1) * step - 1;
  }

  void Record(uint64_t ns) {
    ++counts_[BucketOf(ns)];
    ++count_;
    sum_ += ns;
    if (ns > max_) max_ = ns;
  }

  void Merge(const LatencyHistogram& other) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    sum_ += other.sum_;
    if (other.max_ > max_) max_ = other.max_;
  }

  void Reset() { *this = LatencyHistogram(); }

  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }

  // The smallest recorded-bucket upper bound at or below which a fraction q
  // (0..1) of the samples lie; 0 when empty.
  uint64_t Percentile(double q) const {
    if (count_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count_));
    if (rank >= count_) rank = count_ - 1;
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen > rank) {
        if (i == kBuckets - 1) return max_;  // the open-ended last bucket
        const uint64_t upper = UpperBoundOf(i);
        return upper < max_ ? upper : max_;
      }
    }
    return max_;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace kvcg
