// The stock router models (kvcg/model.h). Each is immutable after
// construction, so IsHot needs no synchronization. The key-set models share
// router/fingerprint_table.h, whose design comment says why a lookup is one
// probe of a fingerprint array.
#include <algorithm>

#include "kvcg/hash.h"
#include "kvcg/model.h"
#include "router/bins.h"
#include "router/fingerprint_table.h"

namespace kvcg {

namespace {

// How many ops ahead Classify asks a model to start loading (Prefetch): a
// probe of a large key set misses the cache, and a batch's misses overlap.
constexpr uint32_t kClassifyAhead = 8;

// Model::Classify's loop, for a model's own probe: prefetch(fp) a few ops
// ahead, is_hot(j) for op j.
template <class PrefetchFn, class IsHotFn>
uint32_t ClassifyLoop(uint32_t n, const uint64_t* fingerprints, uint8_t* hot, PrefetchFn prefetch,
                      IsHotFn is_hot) {
  for (uint32_t j = 0; j < std::min(n, kClassifyAhead); ++j) prefetch(fingerprints[j]);
  uint32_t count = 0;
  for (uint32_t j = 0; j < n; ++j) {
    if (j + kClassifyAhead < n) prefetch(fingerprints[j + kClassifyAhead]);
    const uint8_t h = is_hot(j);
    hot[j] = h;
    count += h;
  }
  return count;
}

class ConstantModel final : public Model {
 public:
  ConstantModel(bool hot, std::string description)
      : hot_(hot), description_(std::move(description)) {}
  bool IsHot(std::string_view, uint64_t, uint64_t) const override { return hot_; }
  uint32_t Classify(const Batch& batch, const uint64_t*, const uint64_t*,
                    uint8_t* hot) const override {
    const uint32_t n = uint32_t(batch.size());
    std::fill(hot, hot + n, uint8_t{hot_});
    return hot_ ? n : 0;
  }
  std::string Describe() const override { return description_; }
  int64_t KeyCount() const override { return hot_ ? -1 : 0; }

 private:
  const bool hot_;
  const std::string description_;
};

class HistogramModel final : public Model {
 public:
  explicit HistogramModel(std::vector<bool> hot_bins)
      : hot_(std::move(hot_bins)),
        hot_count_(static_cast<size_t>(std::count(hot_.begin(), hot_.end(), true))) {}
  bool IsHot(std::string_view, uint64_t hash, uint64_t) const override {
    return hot_[router::BinOf(hash, hot_.size())];
  }
  std::string Describe() const override {
    return "histogram(" + std::to_string(hot_.size()) + " bins, " + std::to_string(hot_count_) +
           " hot)";
  }
  // Hash ranges cannot be counted in keys, unless there are none.
  int64_t KeyCount() const override { return hot_count_ == 0 ? 0 : -1; }

 private:
  const std::vector<bool> hot_;
  const size_t hot_count_;
};

// A key set by fingerprint only: one probe, no key bytes (see kvcg/model.h).
class FingerprintSetModel final : public Model {
 public:
  FingerprintSetModel(std::vector<uint64_t> fingerprints, std::string description)
      : table_(fingerprints.size()), description_(std::move(description)) {
    for (uint64_t fp : fingerprints) table_.Insert(fp == 0 ? 1 : fp);
  }
  bool IsHot(std::string_view, uint64_t, uint64_t fingerprint) const override {
    return table_.Contains(fingerprint);
  }
  void Prefetch(uint64_t fingerprint) const override { table_.Prefetch(fingerprint); }
  uint32_t Classify(const Batch& batch, const uint64_t*, const uint64_t* fingerprints,
                    uint8_t* hot) const override {
    return ClassifyLoop(
        uint32_t(batch.size()), fingerprints, hot, [&](uint64_t fp) { table_.Prefetch(fp); },
        [&](uint32_t j) { return table_.Contains(fingerprints[j]); });
  }
  std::string Describe() const override {
    return description_ + "(" + std::to_string(table_.size()) + " keys)";
  }
  int64_t KeyCount() const override { return static_cast<int64_t>(table_.size()); }

 private:
  router::FingerprintTable table_;
  const std::string description_;
};

class PredicateModel final : public Model {
 public:
  PredicateModel(std::function<bool(std::string_view, uint64_t)> is_hot, std::string description)
      : is_hot_(std::move(is_hot)), description_(std::move(description)) {}
  bool IsHot(std::string_view key, uint64_t hash, uint64_t) const override {
    return is_hot_(key, hash);
  }
  std::string Describe() const override { return description_; }

 private:
  const std::function<bool(std::string_view, uint64_t)> is_hot_;
  const std::string description_;
};

}  // namespace

uint32_t Model::Classify(const Batch& batch, const uint64_t* hashes, const uint64_t* fingerprints,
                         uint8_t* hot) const {
  return ClassifyLoop(
      uint32_t(batch.size()), fingerprints, hot, [&](uint64_t fp) { Prefetch(fp); },
      [&](uint32_t j) { return IsHot(batch.key(j), hashes[j], fingerprints[j]); });
}

std::shared_ptr<const Model> MakeAllColdModel(std::string description) {
  return std::make_shared<ConstantModel>(false, std::move(description));
}
std::shared_ptr<const Model> MakeAllHotModel() { return std::make_shared<ConstantModel>(true, "all-hot"); }

std::shared_ptr<const Model> MakeHistogramModel(std::vector<bool> hot_bins) {
  if (hot_bins.empty()) return MakeAllColdModel();
  return std::make_shared<HistogramModel>(std::move(hot_bins));
}

std::shared_ptr<const Model> MakeKeySetModel(std::vector<std::string> hot_keys,
                                             std::string description) {
  std::vector<uint64_t> fingerprints;
  fingerprints.reserve(hot_keys.size());
  for (const std::string& key : hot_keys) fingerprints.push_back(KeyFingerprint(key));
  return MakeFingerprintSetModel(std::move(fingerprints), std::move(description));
}

uint64_t KeyFingerprint(std::string_view key) {
  const uint64_t h = Xxh3Hash(key);
  return h != 0 ? h : 1;
}

std::shared_ptr<const Model> MakeFingerprintSetModel(std::vector<uint64_t> fingerprints,
                                                     std::string description) {
  return std::make_shared<FingerprintSetModel>(std::move(fingerprints), std::move(description));
}

std::shared_ptr<const Model> MakePredicateModel(
    std::function<bool(std::string_view, uint64_t)> is_hot, std::string description) {
  return std::make_shared<PredicateModel>(std::move(is_hot), std::move(description));
}

}  // namespace kvcg
