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
  // The owner keeps adding meanwhile: each base is the counter at some
  // instant during the reset, so a read never goes below zero.
  auto rebase = [](std::atomic<uint64_t>& base, const std::atomic<uint64_t>& c) {
    base.store(c.load(std::memory_order_relaxed), std::memory_order_release);
  };
  ForEachField([&](std::atomic<uint64_t> StatCounters::* f) { rebase(base.*f, this->*f); });
  for (size_t i = 0; i < kMaxCommands; ++i) {
    rebase(base.calls[i], calls[i]);
    rebase(base.failed_calls[i], failed_calls[i]);
  }
  store_latency.Reset();
  command_latency.Reset();
}

void ThreadStats::SumInto(ThreadStats* out) const {
  // The base first (acquire): the counter read after it is at least as large.
  auto since = [](const std::atomic<uint64_t>& base, const std::atomic<uint64_t>& c) {
    const uint64_t b = base.load(std::memory_order_acquire);
    return c.load(std::memory_order_relaxed) - b;
  };
  ForEachField([&](std::atomic<uint64_t> StatCounters::* f) { Add(out->*f, since(base.*f, this->*f)); });
  for (size_t i = 0; i < kMaxCommands; ++i) {
    Add(out->calls[i], since(base.calls[i], calls[i]));
    Add(out->failed_calls[i], since(base.failed_calls[i], failed_calls[i]));
  }
  out->store_latency.Merge(store_latency);
  out->command_latency.Merge(command_latency);
}

}  // namespace kvcg::server
