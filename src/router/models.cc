// The stock router models (kvcg/model.h). Each is immutable after
// construction, so IsHot needs no synchronization.
#include <algorithm>

#include "kvcg/hash.h"
#include "kvcg/model.h"
#include "router/bins.h"

namespace kvcg {

namespace {

class ConstantModel final : public Model {
 public:
  explicit ConstantModel(bool hot) : hot_(hot) {}
  bool IsHot(std::string_view, uint64_t) const override { return hot_; }
  std::string Describe() const override { return hot_ ? "all-hot" : "all-cold"; }

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

// Open addressing over a power-of-two table at most half full: a probe reads
// the 64-bit tag array (the key's own xxh3, independent of Config::hash, so a
// degenerate test hash does not make every key collide here) and compares
// key bytes only on a tag match. One or two cache misses per lookup instead
// of std::unordered_set's bucket-then-node chase: this runs once per request.
class KeySetModel final : public Model {
 public:
  KeySetModel(std::vector<std::string> keys, std::string description)
      : description_(std::move(description)) {
    size_t capacity = 16;
    while (capacity < keys.size() * 2) capacity *= 2;
    mask_ = capacity - 1;
    tags_.assign(capacity, 0);
    keys_.resize(capacity);
    for (std::string& key : keys) {
      const uint64_t tag = Tag(key);
      size_t i = tag & mask_;
      for (; tags_[i] != 0; i = (i + 1) & mask_) {
        if (tags_[i] == tag && keys_[i] == key) break;  // duplicate
      }
      if (tags_[i] == 0) ++size_;
      tags_[i] = tag;
      keys_[i] = std::move(key);
    }
  }
  bool IsHot(std::string_view key, uint64_t) const override {
    const uint64_t tag = Tag(key);
    for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
      const uint64_t t = tags_[i];
      if (t == 0) return false;
      if (t == tag && keys_[i] == key) return true;
    }
  }
  void Prefetch(std::string_view key) const override {
    __builtin_prefetch(&tags_[Tag(key) & mask_]);
  }
  std::string Describe() const override {
    return description_ + "(" + std::to_string(size_) + " keys)";
  }

 private:
  static uint64_t Tag(std::string_view key) { return Xxh3Hash(key) | 1; }  // 0 = empty
  std::vector<uint64_t> tags_;
  std::vector<std::string> keys_;
  size_t mask_ = 0;
  size_t size_ = 0;
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

std::shared_ptr<const Model> MakePredicateModel(
    std::function<bool(std::string_view, uint64_t)> is_hot, std::string description) {
  return std::make_shared<PredicateModel>(std::move(is_hot), std::move(description));
}

}  // namespace kvcg
