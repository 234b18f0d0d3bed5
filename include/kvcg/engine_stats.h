// kvcg/engine_stats.h — what the engine reports about itself, for the
// server's INFO and for benchmarks.
//
// Latency of an operation is measured from the start of the Submit call that
// carried it to the moment its result is known inside the engine: for a hot
// hit, right after it ran on the hot cache; for everything else, when the
// canonical store's completion delivered it. (The batch's completion fires
// when its last operation is done.) As in the paper, an operation that missed
// the hot cache, or waited behind such a miss, counts as a cold operation.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvcg {

struct LatencySummary {
  uint64_t count = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
  // The distribution itself: (latency in µs, fraction of operations at or
  // below it), one point per non-empty histogram bucket (bucket midpoints,
  // within 6.25%), increasing in both; empty when count == 0. For CDF plots.
  std::vector<std::pair<double, double>> cdf;
};

struct ComponentStats {
  uint64_t ops = 0;       // Operations this component answered.
  uint64_t hits = 0;      // hot: answered from a cache entry on the submitting thread.
  uint64_t misses = 0;    // hot: sent to the canonical store to fill the cache.
  uint64_t waited = 0;    // hot: queued behind a miss on the same key, answered at its fill.
  // From Submit to the answer: a hit's is its batch's routing pass (hits
  // reach the caller when it ends); a cold op's is its canonical batch's.
  LatencySummary latency;
};

// One model switch (the paper's §7 protocol).
struct SwitchRecord {
  uint64_t version = 0;      // Model version installed (the first model is 1).
  std::string model;         // Model::Describe() of the installed model.
  std::string reason;        // "periodic", "api", "flush" (no model change), ...
  bool ok = true;            // False when the replay failed and the old model was kept.
  std::string error;         // Why, when !ok.
  uint64_t start_unix_us = 0;
  double duration_us = 0;    // Whole switch, including eviction.
  double blocked_us = 0;     // Time new requests were held back (block .. unblock).
  uint64_t replayed = 0;     // Logged hot-cache updates written to the canonical store.
  uint64_t evicted = 0;      // Hot-cache entries removed because they are no longer hot.
  uint64_t deferred = 0;     // Batches that arrived while blocked and ran afterwards.
};

struct EngineStats {
  std::string mode;          // "kvcg" or "hot-only".
  ComponentStats hot;
  ComponentStats cold;       // Includes hot misses and the operations that waited on them.
  uint64_t errors = 0;       // Hot operations rejected by the input check (a cold
                             // operation's error is the canonical store's, not counted here).
  uint64_t hot_cache_entries = 0;  // Entries (values and tombstones) now in the hot cache.
  uint64_t hot_cache_dirty = 0;    // Entries logged this epoch (replayed at the next switch).
  uint64_t model_version = 0;
  std::string model;         // Model::Describe() of the installed model.
  int64_t model_hot_keys = -1;  // Keys the installed model calls hot (Model::KeyCount); -1 = not a key set.
  std::string router_model;  // The shadow model's kind (RouterConfig::model): "histogram" or "heavy-hitters".
  std::string router_trainer;  // Its trainer in one line, e.g. "heavy-hitters(16384 hot keys max; ...)".
  uint64_t hot_keys_limit = 0;  // heavy-hitters: the most keys a shadow model may call hot; 0 for histogram.
  uint64_t samples = 0;      // Requests the shadow model has been trained on since the last switch.
  uint64_t switches = 0;     // Completed switches (including failed ones).
  std::vector<SwitchRecord> recent_switches;  // The most recent switches, oldest first.
};

}  // namespace kvcg
