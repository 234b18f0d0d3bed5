// Statistics; see stats.h.
#include "server/stats.h"

#include <ctime>

namespace kvcg::server {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) {
    uint64_t n = other.buckets_[i].load(std::memory_order_relaxed);
    if (n) buckets_[i].fetch_add(n, std::memory_order_relaxed);
  }
  sum_.fetch_add(other.sum_ns(), std::memory_order_relaxed);
}

uint64_t LatencyHistogram::count() const {
  uint64_t n = 0;
  for (const auto& b : buckets_) n += b.load(std::memory_order_relaxed);
  return n;
}

uint64_t LatencyHistogram::Quantile(double q) const {
  uint64_t total = count();
  if (total == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total));
  if (rank >= total) rank = total - 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen > rank) return Buckets::UpperBoundOf(i);
  }
  return Buckets::UpperBoundOf(kBuckets - 1);
}

void LatencyHistogram::Reset() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
}

void ThreadStats::Reset() {
  for (auto* c : {&connections_received, &rejected_connections, &commands, &net_input_bytes, &net_output_bytes,
                  &protocol_errors, &batches, &batch_ops, &batch_members, &early_rounds, &cas_retries, &reads, &parse_ns, &reply_ns,
                  &keyspace_hits, &keyspace_misses}) {
    c->store(0, std::memory_order_relaxed);
  }
  for (auto& c : calls) c.store(0, std::memory_order_relaxed);
  for (auto& c : failed_calls) c.store(0, std::memory_order_relaxed);
  store_latency.Reset();
  command_latency.Reset();
}

}  // namespace kvcg::server
