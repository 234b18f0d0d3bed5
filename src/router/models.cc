// The stock router models (kvcg/model.h). Each is immutable after
// construction, so IsHot needs no synchronization.
#include <algorithm>
#include <unordered_set>

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

class KeySetModel final : public Model {
 public:
  KeySetModel(std::vector<std::string> keys, std::string description)
      : keys_(std::make_move_iterator(keys.begin()), std::make_move_iterator(keys.end())),
        description_(std::move(description)) {}
  bool IsHot(std::string_view key, uint64_t) const override {
    return keys_.find(key) != keys_.end();
  }
  std::string Describe() const override {
    return description_ + "(" + std::to_string(keys_.size()) + " keys)";
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  const std::unordered_set<std::string, Hash, std::equal_to<>> keys_;
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
