// The engine benchmark's runs (kvcg-bench-engine, engine_bench.cc): its
// parameters, the client threads' closed or paced loop over a store, the
// prefill and the prior-knowledge model.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/latency_histogram.h"
#include "engine_workload.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"

namespace kvcg::bench::engine {

using Clock = std::chrono::steady_clock;

// The command line's settings (engine_bench.cc's flags set them).
struct Params {
  std::string backend = "auto";
  std::string layout = "fixed8";
  std::vector<std::string> modes = {"kvcg", "gpu-only", "cpu-only"};
  std::vector<double> thetas = {0.5, 0.9, 0.99};
  uint64_t key_space = 1'000'000'000;
  uint64_t prefill = 10'000'000;
  double seconds = 5;
  double warmup_seconds = 2;
  unsigned threads = std::max(2u, std::thread::hardware_concurrency() / 2);
  unsigned batch = 512;
  unsigned pipeline = 4;
  double read_ratio = 0.95;
  uint64_t stream_ops = uint64_t{1} << 22;  // per client thread; 0 = draw inline
  std::string model = "prior";
  double hot_fraction = 0.001;
  std::string router_model = "histogram";  // the paper's baseline
  double threshold = 0;   // 0 = the router model's default
  uint64_t hot_keys = 0;  // heavy-hitters: 0 = the hot cache's capacity
  double sample_rate = 0.01;
  double min_hot_share = kvcg::Config().router.min_hot_share;
  uint32_t gpu_orchestrators = 4;
  uint64_t gpu_memory_mb = 0;
  uint64_t ycsb_items = 0;  // 0 = draw ranks over the key space
  std::vector<double> load_fractions;  // paced rows after each closed-loop row
  uint64_t hot_cache_buckets = 0;  // 0 = a quarter of the prior's keys (at least 4096)
  unsigned repeats = 1;  // the whole run over every mode, alternating the modes' order
  bool quick = false;
};

struct Totals {
  uint64_t ops = 0;
  uint64_t found = 0;  // results read with found(): the results are consumed
  double seconds = 0;
  kvcg::LatencyHistogram batch_latency;
};

// Closed loop: every thread keeps `pipeline` batches in flight for `seconds`.
// With `paced_mops` > 0, an open loop at that rate instead: each thread
// submits a batch at fixed intervals (its share of the rate), still with at
// most `pipeline` in flight — the latencies "at 50% of peak load".
// `streams`: each thread's pre-drawn requests (empty: draw inline from
// `zipf`); a run starts at a `seed`-dependent offset into them.
Totals RunLoad(kvcg::Store* store, const Params& p, const KeyChooser& zipf,
               const std::vector<RequestStream>& streams, double seconds, uint64_t seed,
               double paced_mops = 0);

// Loads the --prefill most popular ids (rank r's value is r), from as many
// threads as the host has.
void Prefill(kvcg::Store* store, const Params& p);

// The paper's prior-knowledge model: the hottest --hot-fraction of the key
// space.
std::shared_ptr<const kvcg::Model> PriorModel(const Params& p);

}  // namespace kvcg::bench::engine
