// Server statistics and stage timers, for INFO and benchmarks.
//
// Counters live per I/O thread (ThreadStats) and are summed on read, so the
// hot path never writes a cache line another thread writes. Each counter
// has one writer, its loop's thread, so Add is a relaxed load and store, not
// a lock-prefixed add: on x86 that is also a full barrier, and the loop
// counts ~3 things per command between its cache misses. The atomics only
// make the concurrent INFO read well-defined. CONFIG RESETSTAT (any
// thread) therefore does not write the counters: it moves their zero
// (`base`), and a read is the counter minus its base. LatencyHistogram is a
// log-linear histogram (8 sub-buckets per power of two, ~12% resolution) over
// nanoseconds, cheap enough to record every batch.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "common/latency_histogram.h"

namespace kvcg::server {

inline constexpr size_t kMaxCommands = 128;

class LatencyHistogram {
 public:
  // Buckets of kvcg::LatencyHistogram (src/common), shared by every latency
  // histogram in kvcg; this one adds atomic recording from several threads.
  using Buckets = ::kvcg::LatencyHistogram;
  static constexpr int kBuckets = Buckets::kBuckets;

  void Record(uint64_t ns) {
    buckets_[Buckets::BucketOf(ns)].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(ns, std::memory_order_relaxed);
  }
  // Adds `other` into this (used to sum threads into a snapshot).
  void Merge(const LatencyHistogram& other);
  uint64_t count() const;
  uint64_t sum_ns() const { return sum_.load(std::memory_order_relaxed); }
  // The value below which `q` (0..1) of the samples fall; 0 when empty.
  uint64_t Quantile(double q) const;
  void Reset();

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> sum_{0};
};

struct StatCounters {
  std::atomic<uint64_t> connections_received{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> net_input_bytes{0};
  std::atomic<uint64_t> net_output_bytes{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> batches{0};       // store batches submitted (one per loop pass: shared_round.h)
  std::atomic<uint64_t> batch_ops{0};     // operations in them
  std::atomic<uint64_t> batch_members{0}; // connection rounds in them
  std::atomic<uint64_t> early_rounds{0};  // connection rounds finished from early answers
  // Extra rounds of read-modify-write commands: one per existing key is
  // normal (read, then CAS); more mean a CAS lost a race and was retried.
  std::atomic<uint64_t> cas_retries{0};
  std::atomic<uint64_t> reads{0};         // read() calls that returned data
  std::atomic<uint64_t> parse_ns{0};      // stage: parsing + dispatch
  std::atomic<uint64_t> reply_ns{0};      // stage: formatting replies + write()
  std::atomic<uint64_t> keyspace_hits{0};
  std::atomic<uint64_t> keyspace_misses{0};
  std::array<std::atomic<uint64_t>, kMaxCommands> calls{};
  std::array<std::atomic<uint64_t>, kMaxCommands> failed_calls{};

  // Every named counter above (not calls/failed_calls), for code that
  // treats them alike (sums, resets): fn(std::atomic<uint64_t> StatCounters::*).
  template <typename Fn>
  static void ForEachField(Fn&& fn);
  static constexpr size_t kNamedFields = 16;  // ForEachField's list; checked below
};
// A counter added above must be added to ForEachField's list too.
static_assert(sizeof(StatCounters) ==
                  (StatCounters::kNamedFields + 2 * kMaxCommands) * sizeof(std::atomic<uint64_t>),
              "StatCounters changed: update ForEachField and kNamedFields");

struct ThreadStats : StatCounters {
  StatCounters base;  // the counters' values at the last CONFIG RESETSTAT
  LatencyHistogram store_latency;    // stage: Submit -> completion, per batch
  LatencyHistogram command_latency;  // read -> reply queued, per command batch

  // Moves the counters' zero to now and empties the histograms (any thread).
  void Reset();
  // Adds this thread's counts since its last Reset into `out` (single-threaded).
  void SumInto(ThreadStats* out) const;
};

// Only the counter's owner (its loop thread) calls Add on it.
inline void Add(std::atomic<uint64_t>& c, uint64_t v) {
  c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
inline uint64_t Load(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }

template <typename Fn>
void StatCounters::ForEachField(Fn&& fn) {
  for (auto field : {&StatCounters::connections_received, &StatCounters::rejected_connections,
                     &StatCounters::commands, &StatCounters::net_input_bytes, &StatCounters::net_output_bytes,
                     &StatCounters::protocol_errors, &StatCounters::batches, &StatCounters::batch_ops,
                     &StatCounters::batch_members, &StatCounters::early_rounds, &StatCounters::cas_retries,
                     &StatCounters::reads, &StatCounters::parse_ns, &StatCounters::reply_ns,
                     &StatCounters::keyspace_hits, &StatCounters::keyspace_misses}) {
    fn(field);
  }
}

uint64_t NowNs();  // monotonic clock

}  // namespace kvcg::server
