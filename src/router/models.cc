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

class ConstantModel final : public Model {
 public:
  explicit ConstantModel(bool hot) : hot_(hot) {}
  bool IsHot(std::string_view, uint64_t) const override { return hot_; }
  std::string Describe() const override { return hot_ ? "all-hot" : "all-cold"; }
  int64_t KeyCount() const override { return hot_ ? -1 : 0; }

 private:
  const bool hot_;
};

class HistogramModel final : public Model {
 public:
  explicit HistogramModel(std::vector<bool> hot_bins)
      : hot_(std::move(hot_bins)),
        hot_count_(static_cast<size_t>(std::count(hot_.begin(), hot_.end(), true))) {}
  bool IsHot(std::string_view, uint64_t hash) const override {
    return hot_[router::BinOf(hash, hot_.size())];
  }
  std::string Describe() const override {
    return "histogram(" + std::to_string(hot_.size()) + " bins, " + std::to_string(hot_count_) +
           " hot)";
  }

 private:
  const std::vector<bool> hot_;
  const size_t hot_count_;
};

// An exact key set: the fingerprint table finds the slot (one probe, see
// router/fingerprint_table.h) and the key bytes, kept per slot, confirm it.
class KeySetModel final : public Model {
 public:
  KeySetModel(std::vector<std::string> keys, std::string description)
      : table_(keys.size()), description_(std::move(description)) {
    keys_.resize(table_.slot_count());
    for (std::string& key : keys) {
      // Two distinct keys with one fingerprint (~2^-64 a pair) would share a
      // slot; the second is then left out, never confused with the first.
      const auto [slot, fresh] = table_.Insert(KeyFingerprint(key));
      if (fresh) keys_[slot] = std::move(key);
    }
  }
  bool IsHot(std::string_view key, uint64_t) const override {
    const size_t slot = table_.Find(KeyFingerprint(key));
    return slot != router::FingerprintTable::kNotFound && keys_[slot] == key;
  }
  void Prefetch(std::string_view key) const override { table_.Prefetch(KeyFingerprint(key)); }
  std::string Describe() const override {
    return description_ + "(" + std::to_string(table_.size()) + " keys)";
  }
  int64_t KeyCount() const override { return static_cast<int64_t>(table_.size()); }

 private:
  router::FingerprintTable table_;
  std::vector<std::string> keys_;  // by slot
  const std::string description_;
};

// A key set by fingerprint only: one probe, no key bytes (see kvcg/model.h).
class FingerprintSetModel final : public Model {
 public:
  FingerprintSetModel(std::vector<uint64_t> fingerprints, std::string description)
      : table_(fingerprints.size()), description_(std::move(description)) {
    for (uint64_t fp : fingerprints) table_.Insert(fp == 0 ? 1 : fp);
  }
  bool IsHot(std::string_view key, uint64_t) const override {
    return table_.Contains(KeyFingerprint(key));
  }
  void Prefetch(std::string_view key) const override { table_.Prefetch(KeyFingerprint(key)); }
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
  bool IsHot(std::string_view key, uint64_t hash) const override { return is_hot_(key, hash); }
  std::string Describe() const override { return description_; }

 private:
  const std::function<bool(std::string_view, uint64_t)> is_hot_;
  const std::string description_;
};

}  // namespace

std::shared_ptr<const Model> MakeAllColdModel() { return std::make_shared<ConstantModel>(false); }
std::shared_ptr<const Model> MakeAllHotModel() { return std::make_shared<ConstantModel>(true); }

std::shared_ptr<const Model> MakeHistogramModel(std::vector<bool> hot_bins) {
  if (hot_bins.empty()) return MakeAllColdModel();
  return std::make_shared<HistogramModel>(std::move(hot_bins));
}

std::shared_ptr<const Model> MakeKeySetModel(std::vector<std::string> hot_keys,
                                             std::string description) {
  return std::make_shared<KeySetModel>(std::move(hot_keys), std::move(description));
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
