// Router: the installed model plus the shadow model's trainer (paper §7).
//
// Routing asks the installed model. A sampled fraction of requests
// (RouterConfig::sample_rate) also goes to the trainer RouterConfig::model
// picks (router/trainer.h): the paper's histogram of bins over the hash
// space, or the heavy-hitters sketch of the keys themselves. BuildShadow
// turns what the trainer saw into a model; the engine installs it with the
// switch protocol (kvcg_engine.h) and restarts training.
//
// Cost on the request path: an unsampled request pays one thread-local
// xorshift step and a compare; a sampled one an atomic add (histogram) or a
// fingerprint and a try-lock of one of the sketch's stripes (heavy-hitters).
//
// Thread safety: IsHot, Prefetch, Sample, samples and BuildShadow are
// thread-safe. Install must not run concurrently with IsHot; the engine calls
// it only while its request gate is closed (the switch protocol), so the
// model seen by one routing pass never changes under it. ResetTraining may
// race with Sample (a few samples may land in either window).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kvcg/config.h"
#include "kvcg/hash.h"
#include "kvcg/model.h"
#include "router/trainer.h"

namespace kvcg::router {

class Router {
 public:
  // `hot_cache_capacity` (> 0): the keys the hot cache holds, which bounds a
  // heavy-hitters model when RouterConfig::hot_keys is 0. `config` must have
  // passed store::ValidateRouterConfig.
  // `hash`: the store's Config::hash.
  Router(const Config::RouterConfig& config, std::shared_ptr<const Model> initial,
         uint64_t hot_cache_capacity, HashFunction hash = &Xxh3Hash);

  // `hash`: the key's Config::hash; `fingerprint`: Fingerprint(key, hash).
  bool IsHot(std::string_view key, uint64_t hash, uint64_t fingerprint) const {
    return model_->IsHot(key, hash, fingerprint);
  }
  void Prefetch(uint64_t fingerprint) const { model_->Prefetch(fingerprint); }
  // Every op of `batch` at once (Model::Classify): hot[i] is 0 or 1; returns
  // how many are hot.
  uint32_t Classify(const Batch& batch, const uint64_t* hashes, const uint64_t* fingerprints,
                    uint8_t* hot) const {
    return model_->Classify(batch, hashes, fingerprints, hot);
  }
  // KeyFingerprint(key), from `hash` when Config::hash is the default (the
  // same XXH3, so the key is hashed once per request).
  uint64_t Fingerprint(std::string_view key, uint64_t hash) const {
    return default_hash_ ? FingerprintOfHash(hash) : KeyFingerprint(key);
  }
  // Fingerprint of every op of `batch` (hashes[i]: op i's Config::hash).
  void Fingerprints(const Batch& batch, const uint64_t* hashes, uint64_t* out) const {
    const size_t n = batch.size();
    if (default_hash_) {
      for (size_t i = 0; i < n; ++i) out[i] = FingerprintOfHash(hashes[i]);
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = KeyFingerprint(batch.key(i));
    }
  }

  // Trains the shadow model on the request with probability sample_rate.
  // `key` is read during the call only.
  void Sample(std::string_view key, uint64_t hash) {
    if (sample_threshold_ == 0 || NextRandom() >= sample_threshold_) return;
    Train(key, hash);
  }
  // Sample for every op of `batch` (hashes[i]: op i's Config::hash): the
  // same draw per op, taken as geometric gaps between sampled ops (one log
  // per sample; a random number per op cost more than the model's probe).
  void Sample(const Batch& batch, const uint64_t* hashes);
  // The same for a batch whose hashes were not computed (routes_nothing):
  // only the sampled ops are hashed, with `hash` (Config::hash).
  void SampleUnhashed(const Batch& batch, HashFunction hash);
  bool sampling() const { return sample_threshold_ != 0; }

  // Samples the trainer counted since the last ResetTraining (dropped ones excluded).
  uint64_t samples() const { return samples_.load(std::memory_order_relaxed); }
  // The trainer's model, or an all-cold one that says why when its hot keys
  // had less than RouterConfig::min_hot_share of the samples.
  std::shared_ptr<const Model> BuildShadow() const;
  void ResetTraining();

  RouterModel model_kind() const { return kind_; }
  // The trainer, for INFO: e.g. "heavy-hitters(16384 hot keys max; 65536 counters in 16 stripes)".
  std::string TrainerDescription() const { return trainer_->Describe(); }
  // The heavy-hitters bound on hot keys (RouterConfig::hot_keys resolved); 0 for histogram.
  uint64_t hot_keys_limit() const { return hot_keys_limit_; }

  const std::shared_ptr<const Model>& model() const { return model_; }
  // The installed model calls no key hot (KeyCount() == 0: all-cold, or a
  // histogram without a hot bin), so routing a batch decides nothing.
  bool routes_nothing() const { return model_->KeyCount() == 0; }
  uint64_t version() const { return version_; }
  // Installs `model` as the next version. See thread safety above.
  void Install(std::shared_ptr<const Model> model);

 private:
  static uint64_t NextRandom();
  // KeyFingerprint from the key's default hash: the same XXH3, never 0.
  static uint64_t FingerprintOfHash(uint64_t hash) { return hash != 0 ? hash : 1; }
  // Sample's draw for every op of a batch; hash_of(i) is op i's hash.
  template <class HashOf>
  void SampleBatch(const Batch& batch, HashOf hash_of);
  // One sampled request to the trainer, counted when it took it.
  void Train(std::string_view key, uint64_t hash) {
    if (trainer_->Add(key, hash)) samples_.fetch_add(1, std::memory_order_relaxed);
  }

  const RouterModel kind_;
  const bool default_hash_;  // Config::hash is Xxh3Hash
  const double min_hot_share_;  // RouterConfig::min_hot_share
  uint64_t hot_keys_limit_ = 0;
  uint64_t sample_threshold_;  // sample when random < this; 0 = never, max = always
  double log_skip_ = 0;        // log(1 - sample_rate) when 0 < rate < 1, else 0
  std::unique_ptr<Trainer> trainer_;
  std::atomic<uint64_t> samples_{0};
  std::shared_ptr<const Model> model_;
  uint64_t version_ = 1;
};

}  // namespace kvcg::router
