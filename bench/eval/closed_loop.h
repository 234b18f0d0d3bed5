// The closed-loop YCSB client of kvcg-ycsb.
//
// `threads` client threads each keep up to `pipeline` batches of `batch`
// YCSB operations in flight against one kvcg::Store, drawing operations from
// their own workload::OperationGenerator (seeded from `seed` and the thread
// number, so a run is the same sequence of operations for a given seed and
// operation count). A thread submits its next batch as soon as one of its
// batches completes — the paper's closed loop. In the engine modes the
// client threads are also the hot-cache threads (hot operations run inline
// in Submit).
//
// YCSB operations become store operations as follows: read = GET, update and
// insert = PUT, read-modify-write = GET then PUT of the same key in the same
// batch (same-key order inside a batch is guaranteed by the Store contract).
// Throughput counts YCSB operations; store operations are reported too.
//
// Client-side latency is per batch, Submit to completion. Per-operation
// latency by component (hot/cold) comes from the engine's own stats, which
// the driver reads; this loop knows nothing about the engine.
//
// A monitor thread calls `tick` every `tick_ms` while the load runs (for
// progress lines, engine-stat timelines and scheduled model switches).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/latency_histogram.h"
#include "kvcg/store.h"
#include "workload/ycsb.h"

namespace kvcg::eval {

struct LoadOptions {
  unsigned threads = 2;
  unsigned batch = 512;
  unsigned pipeline = 2;
  double seconds = 1;    // Run this long when ops == 0.
  uint64_t ops = 0;      // Otherwise: this many YCSB operations in total (split over threads).
  uint64_t seed = 1;
  double interval_ms = 0;  // Client-side timeline bucket width; 0 = no timeline.
  double tick_ms = 100;    // Monitor period.
};

// One timeline bucket: batches that completed in [i*interval, (i+1)*interval).
struct ClientInterval {
  uint64_t batches = 0;
  uint64_t store_ops = 0;
  uint64_t latency_sum_ns = 0;
};

struct LoadResult {
  uint64_t ycsb_ops = 0;
  uint64_t store_ops = 0;
  uint64_t batches = 0;
  uint64_t not_found = 0;  // Operations answered kNotFound (normal for GETs of absent keys).
  uint64_t errors = 0;     // Operations that failed (anything but kOk/kNotFound).
  double seconds = 0;      // First submit to last completion.
  LatencyHistogram batch_latency;
  std::vector<ClientInterval> timeline;
};

// `elapsed_s`: seconds since the load started; `completed_store_ops`: store
// operations completed so far. Called on the monitor thread.
using TickFn = std::function<void(double elapsed_s, uint64_t completed_store_ops)>;

// Runs the load and returns when every submitted batch has completed.
// `insert_counter` is the workload's shared insert counter (workload D); it
// may be null when spec.insert == 0. Thread-safe with respect to other users
// of `store`.
LoadResult RunClosedLoop(Store* store, const workload::WorkloadSpec& spec,
                         std::atomic<uint64_t>* insert_counter, const LoadOptions& options,
                         const TickFn& tick);

}  // namespace kvcg::eval
