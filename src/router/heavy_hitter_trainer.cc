// The heavy-hitters trainer (see trainer.h): samples go into a Space-Saving
// sketch by key fingerprint; Build picks the hot keys from a copy of the
// sketch's counters, so sampling goes on (one stripe at a time waits for
// its copy, and meanwhile drops its samples, see space_saving.h).
#include <algorithm>
#include <memory>
#include <vector>

#include "router/space_saving.h"
#include "router/trainer.h"

namespace kvcg::router {

namespace {

class HeavyHitterTrainer final : public Trainer {
 public:
  HeavyHitterTrainer(uint64_t hot_keys, double threshold)
      : hot_keys_(hot_keys), threshold_(threshold), sketch_(hot_keys * kCountersPerHotKey) {}

  bool Add(std::string_view key, uint64_t) override { return sketch_.Add(KeyFingerprint(key)); }

  std::shared_ptr<const Model> Build(double* hot_share) const override {
    std::vector<SpaceSaving::Counter> candidates;
    const uint64_t total = sketch_.Collect(kMinHotKeySamples, &candidates);
    // "Exceeds the threshold": count > threshold x N, on the estimate (Space-
    // Saving never underestimates, so no key above the threshold is missed).
    const double cut = threshold_ * static_cast<double>(total);
    std::erase_if(candidates, [cut](const SpaceSaving::Counter& c) {
      return static_cast<double>(c.count) <= cut;
    });
    // Most frequent first; equal estimates by the larger guaranteed count,
    // then by fingerprint, so one set of counts always gives one model.
    auto more_frequent = [](const SpaceSaving::Counter& a, const SpaceSaving::Counter& b) {
      if (a.count != b.count) return a.count > b.count;
      if (a.error != b.error) return a.error < b.error;
      return a.fingerprint < b.fingerprint;
    };
    if (candidates.size() > hot_keys_) {
      std::nth_element(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(hot_keys_),
                       candidates.end(), more_frequent);
      candidates.resize(hot_keys_);
    }
    // The share from guaranteed counts (count - error): on a flat load every
    // counter's estimate is mostly the sketch's minimum, and the estimates of
    // the 4x counters add up to all the samples whatever the skew.
    std::vector<uint64_t> fingerprints;
    fingerprints.reserve(candidates.size());
    uint64_t hot_samples = 0;
    for (const SpaceSaving::Counter& c : candidates) {
      fingerprints.push_back(c.fingerprint);
      hot_samples += c.count - c.error;
    }
    *hot_share = total == 0 ? 0 : static_cast<double>(hot_samples) / static_cast<double>(total);
    return MakeFingerprintSetModel(std::move(fingerprints), "heavy-hitters");
  }

  void Reset() override { sketch_.Clear(); }

  std::string Describe() const override {
    return "heavy-hitters(" + std::to_string(hot_keys_) + " hot keys max; " +
           std::to_string(sketch_.counters()) + " counters in " +
           std::to_string(sketch_.stripes()) + " stripes)";
  }

 private:
  const uint64_t hot_keys_;
  const double threshold_;
  SpaceSaving sketch_;
};

}  // namespace

std::unique_ptr<Trainer> MakeHeavyHitterTrainer(uint64_t hot_keys, double threshold) {
  return std::make_unique<HeavyHitterTrainer>(std::max<uint64_t>(hot_keys, 1), threshold);
}

}  // namespace kvcg::router
