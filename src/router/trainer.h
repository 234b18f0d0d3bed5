// Trainer: the router's shadow model in the making (paper §7). The router
// hands it the sampled fraction of requests; BuildShadow asks it for the
// model those samples suggest; a switch installs that model and restarts
// training (Reset).
//
// Two trainers, chosen by RouterConfig::model:
//  * histogram (the paper's): a count per bin of the hash space; a bin is hot
//    when its share of the samples exceeds the threshold, and with it every
//    key of the bin. With 10,000 bins over millions of keys a bin holds
//    hundreds of keys, so a hot bin is mostly cold keys and a cold bin may
//    hide a hot one: it is kept as the evaluation's baseline.
//  * heavy-hitters: a Space-Saving sketch of the sampled keys
//    (router/space_saving.h) with kCountersPerHotKey counters per hot key;
//    Build selects the keys seen at least kMinHotKeySamples times whose share
//    exceeds the threshold, most frequent first, at most `hot_keys` of them,
//    as a fingerprint-set model (one probe per request).
//
// Thread safety: Add, Build and Describe are thread-safe and may run
// concurrently; Reset may race with Add (a few samples land in either window).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kvcg/config.h"
#include "kvcg/model.h"

namespace kvcg::router {

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Counts one sampled request on `key` (hash = Config::hash(key)). Returns
  // false when the trainer dropped it instead (a busy sketch stripe).
  virtual bool Add(std::string_view key, uint64_t hash) = 0;
  // The model the samples since the last Reset suggest. *hot_share: the
  // share of those samples that the model's hot keys surely had (0 when
  // there were none), which the router weighs against
  // RouterConfig::min_hot_share.
  virtual std::shared_ptr<const Model> Build(double* hot_share) const = 0;
  virtual void Reset() = 0;
  // One line for INFO, e.g. "heavy-hitters(16384 hot keys max; 65536 counters in 16 stripes)".
  virtual std::string Describe() const = 0;
};

// The heavy-hitters sketch's counters per key it may call hot: enough that on
// skewed streams the sketch's minimum counter stays below the counts of the
// keys ranked up to hot_keys (see docs/ARCHITECTURE.md "Router").
constexpr uint64_t kCountersPerHotKey = 4;
// A key seen fewer times (guaranteed count, count - error) is noise, never hot.
constexpr uint64_t kMinHotKeySamples = 2;

// `threshold` is RouterThreshold(config), bins > 0.
std::unique_ptr<Trainer> MakeHistogramTrainer(uint32_t bins, double threshold);
// hot_keys > 0.
std::unique_ptr<Trainer> MakeHeavyHitterTrainer(uint64_t hot_keys, double threshold);

}  // namespace kvcg::router
