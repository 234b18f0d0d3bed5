// kvcg/model.h — the router's model: which keys are hot (served by the hot
// cache on the CPU) and which are cold (served by the canonical store).
//
// A model is an immutable classifier of (key, hash) -> hot/cold. The engine
// holds exactly one installed model at a time and replaces it only through
// the switch protocol (kvcg/engine.h), so a model never changes under a
// request. A wrong classification never affects correctness, only speed.
//
// Models must be pure: the same (key, hash) must always give the same answer
// for the lifetime of the model, because the engine asks again when it evicts
// the keys that are no longer hot.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvcg/batch.h"

namespace kvcg {

// The 64-bit fingerprint that fingerprint-set models (and the heavy-hitter
// trainer) identify a key by: xxh3 of the key bytes, independent of
// Config::hash (so a degenerate test hash does not merge keys here), never 0.
uint64_t KeyFingerprint(std::string_view key);

class Model {
 public:
  virtual ~Model() = default;
  // True when requests on `key` should be served by the hot cache. `hash` is
  // the key's hash under Config::hash and `fingerprint` its KeyFingerprint:
  // the engine computes both once per request (one XXH3 when Config::hash is
  // the default), so no model hashes the key again. Thread-safe; called once
  // per request.
  virtual bool IsHot(std::string_view key, uint64_t hash, uint64_t fingerprint) const = 0;
  // The same, computing the fingerprint (tests, the switch's eviction).
  bool IsHot(std::string_view key, uint64_t hash) const {
    return IsHot(key, hash, KeyFingerprint(key));
  }
  // Optional hint that IsHot on the key with this fingerprint follows soon:
  // a model whose lookup misses the cache (a large key set) starts loading
  // what it will read, so the router can overlap the misses of several keys
  // of a batch.
  virtual void Prefetch(uint64_t fingerprint) const { (void)fingerprint; }
  // IsHot for every op of `batch` at once (columns in, a column out):
  // hot[i] = IsHot(batch.key(i), hashes[i], fingerprints[i]) as 0 or 1 for
  // i < batch.size(); returns how many are 1 (the engine does not rely on
  // it beyond "none": a wrong count only costs speed). Called once per
  // routing pass. The default asks IsHot op by op with Prefetch a few ops
  // ahead; a model with a cheap probe overrides it with a loop of its own
  // (one virtual call per batch instead of two per op). Thread-safe.
  virtual uint32_t Classify(const Batch& batch, const uint64_t* hashes,
                            const uint64_t* fingerprints, uint8_t* hot) const;
  // One line for INFO and switch records, e.g. "histogram(10000 bins, 12 hot)".
  virtual std::string Describe() const = 0;
  // How many keys the model calls hot when it is a finite set of keys (a
  // key-set, fingerprint-set or heavy-hitters model; all-cold: 0); -1 when it
  // classifies by hash ranges or a predicate and cannot count its keys. A
  // model that returns 0 is not asked at all: the engine forwards batches
  // without hashing or classifying them.
  virtual int64_t KeyCount() const { return -1; }
};

// Every key cold: the engine behaves like canonical (the initial kvcg model
// until the first switch, and the router's shadow model when its hot keys
// are too rare to pay, see RouterConfig::min_hot_share). Describe() is
// `description`.
std::shared_ptr<const Model> MakeAllColdModel(std::string description = "all-cold");
// Every key hot: the hot-only mode's model.
std::shared_ptr<const Model> MakeAllHotModel();

// The paper's histogram model: the 64-bit hash space is split into
// `hot_bins.size()` equal bins (bin = hash * bins >> 64); a key is hot when
// its bin is marked. Built by the histogram trainer, or by hand in tests.
std::shared_ptr<const Model> MakeHistogramModel(std::vector<bool> hot_bins);

// Prior knowledge of the workload (the paper's Fig. 3b, "the hottest x% of
// keys"): the keys in `hot_keys` are hot — kept as their fingerprints (the
// fingerprint-set model below, with its ~|set| / 2^64 chance per other key
// of being hot too), because comparing the key bytes cost a second cache
// miss per request on a large set.
std::shared_ptr<const Model> MakeKeySetModel(std::vector<std::string> hot_keys,
                                             std::string description = "key-set");

// A key set given by fingerprints: a key is hot when KeyFingerprint(key) is
// in `fingerprints`. IsHot is one probe of an array of fingerprints (no key
// bytes are kept), which Prefetch loads ahead. A key outside the set whose
// fingerprint equals a member's is hot too: about |set| / 2^64 per key, and a
// wrong classification costs only speed. The heavy-hitter trainer's model;
// Describe() is `description` + "(N keys)".
std::shared_ptr<const Model> MakeFingerprintSetModel(std::vector<uint64_t> fingerprints,
                                                     std::string description);

// Any predicate, e.g. a key-rank test when keys encode their popularity rank.
// `is_hot` must be pure and thread-safe.
std::shared_ptr<const Model> MakePredicateModel(
    std::function<bool(std::string_view key, uint64_t hash)> is_hot, std::string description);

}  // namespace kvcg
