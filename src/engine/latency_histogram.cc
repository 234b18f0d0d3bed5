// LatencyHistogram implementation; see latency_histogram.h.
#include "engine/latency_histogram.h"

namespace kvcg::engine {

namespace {
int ThreadShard(int shards) {
  static std::atomic<int> next{0};
  thread_local int shard = next.fetch_add(1, std::memory_order_relaxed);
  return shard % shards;
}
}  // namespace

LatencyHistogram::LatencyHistogram() : shards_(std::make_unique<Shard[]>(kShards)) { Reset(); }

double LatencyHistogram::BucketMid(int bucket) {
  const double low = static_cast<double>(Buckets::LowerBoundOf(bucket));
  const double high = static_cast<double>(Buckets::UpperBoundOf(bucket));
  return (low + high) / 2;
}

void LatencyHistogram::Record(uint64_t ns, uint64_t count) {
  Shard& s = shards_[ThreadShard(kShards)];
  s.buckets[Buckets::BucketOf(ns)].fetch_add(count, std::memory_order_relaxed);
  s.count.fetch_add(count, std::memory_order_relaxed);
  s.sum_ns.fetch_add(ns * count, std::memory_order_relaxed);
  uint64_t max = s.max_ns.load(std::memory_order_relaxed);
  while (ns > max && !s.max_ns.compare_exchange_weak(max, ns, std::memory_order_relaxed)) {
  }
}

LatencySummary LatencyHistogram::Summary() const {
  std::array<uint64_t, kBuckets> merged{};
  uint64_t count = 0, sum = 0, max = 0;
  for (int i = 0; i < kShards; ++i) {
    const Shard& s = shards_[i];
    for (int b = 0; b < kBuckets; ++b) merged[b] += s.buckets[b].load(std::memory_order_relaxed);
    sum += s.sum_ns.load(std::memory_order_relaxed);
    max = std::max(max, s.max_ns.load(std::memory_order_relaxed));
  }
  for (uint64_t c : merged) count += c;
  LatencySummary out;
  out.count = count;
  if (count == 0) return out;
  out.mean_us = static_cast<double>(sum) / static_cast<double>(count) / 1e3;
  out.max_us = static_cast<double>(max) / 1e3;
  auto percentile = [&](double p) {
    const uint64_t rank = static_cast<uint64_t>(p * static_cast<double>(count - 1)) + 1;
    uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += merged[b];
      if (seen >= rank) return std::min(BucketMid(b), static_cast<double>(max)) / 1e3;
    }
    return static_cast<double>(max) / 1e3;
  };
  out.p50_us = percentile(0.50);
  out.p90_us = percentile(0.90);
  out.p99_us = percentile(0.99);
  out.p999_us = percentile(0.999);
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    if (merged[b] == 0) continue;
    seen += merged[b];
    out.cdf.emplace_back(std::min(BucketMid(b), static_cast<double>(max)) / 1e3,
                         static_cast<double>(seen) / static_cast<double>(count));
  }
  return out;
}

void LatencyHistogram::Reset() {
  for (int i = 0; i < kShards; ++i) {
    Shard& s = shards_[i];
    for (auto& b : s.buckets) b.store(0, std::memory_order_relaxed);
    s.count.store(0, std::memory_order_relaxed);
    s.sum_ns.store(0, std::memory_order_relaxed);
    s.max_ns.store(0, std::memory_order_relaxed);
  }
}

}  // namespace kvcg::engine
