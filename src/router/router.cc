// Router implementation; see router.h.
#include "router/router.h"

#include <limits>
#include <random>

namespace kvcg::router {

Router::Router(const Config::RouterConfig& config, std::shared_ptr<const Model> initial)
    : bin_count_(std::max<uint32_t>(config.bins, 1)),
      threshold_(config.threshold),
      bins_(std::make_unique<std::atomic<uint64_t>[]>(bin_count_)),
      model_(std::move(initial)) {
  if (config.sample_rate <= 0) {
    sample_threshold_ = 0;
  } else if (config.sample_rate >= 1) {
    sample_threshold_ = std::numeric_limits<uint64_t>::max();
  } else {
    sample_threshold_ = static_cast<uint64_t>(config.sample_rate * 18446744073709551616.0);
  }
  for (size_t i = 0; i < bin_count_; ++i) bins_[i].store(0, std::memory_order_relaxed);
}

uint64_t Router::NextRandom() {
  // xorshift64*, one state per thread: sampling must not share a cache line.
  thread_local uint64_t state = std::random_device{}() | 1;
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 2685821657736338717ull;
}

std::shared_ptr<const Model> Router::BuildShadow() const {
  std::vector<uint64_t> counts(bin_count_);
  uint64_t total = 0;
  for (size_t i = 0; i < bin_count_; ++i) {
    counts[i] = bins_[i].load(std::memory_order_relaxed);
    total += counts[i];
  }
  std::vector<bool> hot(bin_count_, false);
  if (total == 0) return MakeHistogramModel(std::move(hot));
  for (size_t i = 0; i < bin_count_; ++i) {
    hot[i] = static_cast<double>(counts[i]) / static_cast<double>(total) > threshold_;
  }
  return MakeHistogramModel(std::move(hot));
}

void Router::ResetTraining() {
  for (size_t i = 0; i < bin_count_; ++i) bins_[i].store(0, std::memory_order_relaxed);
  samples_.store(0, std::memory_order_relaxed);
}

void Router::Install(std::shared_ptr<const Model> model) {
  model_ = std::move(model);
  ++version_;
}

}  // namespace kvcg::router
