// LatencyHistogram: a concurrent log-linear histogram of nanosecond
// latencies, cheap enough to record every operation. Its buckets are those of
// kvcg::LatencyHistogram (src/common/latency_histogram.h; any percentile is
// within 1.6% of the truth); this one adds concurrent recording.
//
// Recording is one relaxed atomic add into one of a few cache-line-separated
// shards chosen per thread, so threads on different cores rarely share a
// line. Summaries merge the shards; they are a consistent-enough snapshot
// (counts recorded during the merge may or may not be included).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "common/latency_histogram.h"
#include "kvcg/engine_stats.h"

namespace kvcg::engine {

class LatencyHistogram {
 public:
  LatencyHistogram();
  // Records `count` operations that each took `ns`.
  void Record(uint64_t ns, uint64_t count = 1);
  LatencySummary Summary() const;
  void Reset();

 private:
  using Buckets = kvcg::LatencyHistogram;
  static constexpr int kBuckets = Buckets::kBuckets;
  // One per thread up to 32 (a server's I/O threads, a benchmark's clients
  // and the store's completion threads): two threads on one shard make its
  // counters bounce between their cores.
  static constexpr int kShards = 32;
  static double BucketMid(int bucket);

  struct alignas(64) Shard {
    std::array<std::atomic<uint64_t>, kBuckets> buckets;
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_ns{0};
    std::atomic<uint64_t> max_ns{0};
  };
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace kvcg::engine
