// LatencyHistogram (src/common): bucket bounds, percentile precision, merging
// and the extremes, which every benchmark and the engine's stats rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/latency_histogram.h"

namespace kvcg {
namespace {

TEST(LatencyHistogram, BucketsTileTheRangeWithoutGaps) {
  for (int b = 1; b < LatencyHistogram::kBuckets; ++b) {
    ASSERT_EQ(LatencyHistogram::LowerBoundOf(b), LatencyHistogram::UpperBoundOf(b - 1) + 1) << b;
    ASSERT_EQ(LatencyHistogram::BucketOf(LatencyHistogram::LowerBoundOf(b)), b) << b;
    ASSERT_EQ(LatencyHistogram::BucketOf(LatencyHistogram::UpperBoundOf(b)), b) << b;
  }
}

TEST(LatencyHistogram, ExtremeValuesLandInTheLastBucket) {
  EXPECT_EQ(LatencyHistogram::BucketOf(uint64_t{1} << 40), LatencyHistogram::kBuckets - 1);
  EXPECT_EQ(LatencyHistogram::BucketOf(~uint64_t{0}), LatencyHistogram::kBuckets - 1);
  LatencyHistogram h;
  h.Record(~uint64_t{0});
  h.Record(0);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.Percentile(1.0), ~uint64_t{0});
  EXPECT_EQ(h.Percentile(0.0), 0u);
}

TEST(LatencyHistogram, PercentilesWithinBucketPrecision) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(10.0, 1.5);  // ~22 µs median, long tail
  std::vector<uint64_t> samples(200'000);
  LatencyHistogram h;
  for (uint64_t& s : samples) {
    s = static_cast<uint64_t>(dist(rng));
    h.Record(s);
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = static_cast<double>(samples[static_cast<size_t>(q * samples.size())]);
    EXPECT_NEAR(static_cast<double>(h.Percentile(q)), exact, exact / 64 + 1) << q;
  }
  EXPECT_EQ(h.max(), samples.back());
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, all;
  for (uint64_t i = 1; i < 50'000; i += 7) {
    (i % 2 ? a : b).Record(i * 13);
    all.Record(i * 13);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double q : {0.1, 0.5, 0.99}) EXPECT_EQ(a.Percentile(q), all.Percentile(q));
}

}  // namespace
}  // namespace kvcg
