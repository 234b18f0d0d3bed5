// Router: the installed model plus the shadow model's trainer (paper §7).
//
// Routing asks the installed model; a sampled fraction of requests
// (RouterConfig::sample_rate) is also counted into a histogram of
// RouterConfig::bins bins over the hash space. BuildShadow turns the counts
// into the paper's histogram model: a bin is hot when its share of the
// sampled accesses exceeds RouterConfig::threshold.
//
// Thread safety: IsHot, Sample, samples and BuildShadow are thread-safe.
// Install must not run concurrently with IsHot; the engine calls it only
// while its request gate is closed (the switch protocol), so the model seen
// by one routing pass never changes under it. ResetTraining may race with
// Sample (a few samples may land in either window).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "kvcg/config.h"
#include "kvcg/model.h"
#include "router/bins.h"

namespace kvcg::router {

class Router {
 public:
  Router(const Config::RouterConfig& config, std::shared_ptr<const Model> initial);

  bool IsHot(std::string_view key, uint64_t hash) const { return model_->IsHot(key, hash); }
  void Prefetch(std::string_view key) const { model_->Prefetch(key); }

  // Counts the request into the shadow histogram with probability sample_rate.
  void Sample(uint64_t hash) {
    if (sample_threshold_ == 0 || NextRandom() >= sample_threshold_) return;
    bins_[BinOf(hash, bin_count_)].fetch_add(1, std::memory_order_relaxed);
    samples_.fetch_add(1, std::memory_order_relaxed);
  }
  bool sampling() const { return sample_threshold_ != 0; }

  uint64_t samples() const { return samples_.load(std::memory_order_relaxed); }
  std::shared_ptr<const Model> BuildShadow() const;
  void ResetTraining();

  const std::shared_ptr<const Model>& model() const { return model_; }
  uint64_t version() const { return version_; }
  // Installs `model` as the next version. See thread safety above.
  void Install(std::shared_ptr<const Model> model);

 private:
  static uint64_t NextRandom();

  const size_t bin_count_;
  const double threshold_;
  uint64_t sample_threshold_;  // sample when random < this; 0 = never, max = always
  std::unique_ptr<std::atomic<uint64_t>[]> bins_;
  std::atomic<uint64_t> samples_{0};
  std::shared_ptr<const Model> model_;
  uint64_t version_ = 1;
};

}  // namespace kvcg::router
