// RouteProfile: where the engine's routing pass spends its time, per phase,
// summed over batches and printed to stderr when the engine closes — with
// KVCG_ENGINE_PROFILE=1 in the environment, else it costs one branch per
// batch. The engine benchmark's diagnosis tool, as KVCG_GPU_PROFILE is the
// GPU pipeline's.
//
// Why: a hot op is answered when its batch's routing pass ends, so the pass
// is the hot latency (docs/BENCHMARKS.md 3c), and on the engine's client
// threads it is also what kvcg mode adds to gpu-only's per-op cost. Its
// phases: hash every key; classify every op (model probe); run the hot ops on
// the hot cache; hand the rest to the canonical store (early answers, the
// masked batch's Submit — on the CPU backend that runs the cold ops inline).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "engine/engine_frame.h"
#include "engine/latency_histogram.h"

namespace kvcg::engine {

class RouteProfile {
 public:
  enum Phase { kHash, kClassify, kHot, kHandOff, kPhases };

  RouteProfile() {
    const char* e = std::getenv("KVCG_ENGINE_PROFILE");
    on_ = e != nullptr && e[0] != '\0' && e[0] != '0';
  }
  ~RouteProfile() {
    const uint64_t b = batches_.load();
    if (!on_ || b == 0) return;
    const double ops = double(ops_.load()), hot = double(hot_.load());
    std::fprintf(stderr,
                 "engine route profile: %llu batches, %.0f ops (%.1f%% hot); per batch (us) hash "
                 "%.2f classify %.2f hot %.2f hand-off %.2f; per op (ns) hash %.1f classify %.1f, "
                 "per hot op %.1f\n",
                 (unsigned long long)b, ops, ops > 0 ? 100.0 * hot / ops : 0.0, Us(kHash, b),
                 Us(kClassify, b), Us(kHot, b), Us(kHandOff, b), double(ns_[kHash].load()) / ops,
                 double(ns_[kClassify].load()) / ops,
                 hot > 0 ? double(ns_[kHot].load()) / hot : 0.0);
    // The tail: a hot op's latency is the pass up to the hot phase's end,
    // so which phase makes a slow pass slow is what its p99 needs.
    static constexpr const char* kNames[kPhases] = {"hash", "classify", "hot", "hand-off"};
    std::fprintf(stderr, "engine route profile: per batch p50 / p99 (us):");
    for (int p = 0; p < kPhases; ++p) {
      const LatencySummary s = phase_latency_[p].Summary();
      std::fprintf(stderr, " %s %.2f / %.2f;", kNames[p], s.p50_us, s.p99_us);
    }
    const LatencySummary s = to_hot_end_.Summary();
    std::fprintf(stderr, " start to hot end %.2f / %.2f\n", s.p50_us, s.p99_us);
  }
  bool on() const { return on_; }
  // One routing pass that began at `start` (NowNs): `end` holds when each
  // phase before the hand-off ended, which ends now; its ops and hot ops.
  void Record(uint64_t start, uint64_t (&end)[kPhases], uint32_t ops, uint32_t hot) {
    end[kHandOff] = NowNs();
    uint64_t before = start;
    for (int p = 0; p < kPhases; ++p) {
      ns_[p].fetch_add(end[p] - before, std::memory_order_relaxed);
      phase_latency_[p].Record(end[p] - before);
      before = end[p];
    }
    if (hot != 0) to_hot_end_.Record(end[kHot] - start);
    ops_.fetch_add(ops, std::memory_order_relaxed);
    hot_.fetch_add(hot, std::memory_order_relaxed);
    batches_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  double Us(Phase p, uint64_t batches) const { return double(ns_[p].load()) / 1e3 / double(batches); }

  bool on_ = false;
  std::atomic<uint64_t> ns_[kPhases] = {}, ops_{0}, hot_{0}, batches_{0};
  LatencyHistogram phase_latency_[kPhases];  // per batch
  LatencyHistogram to_hot_end_;              // per batch with hot ops
};

}  // namespace kvcg::engine
