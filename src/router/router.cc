// Router implementation; see router.h.
#include "router/router.h"

#include <algorithm>
#include <limits>
#include <random>

namespace kvcg::router {

Router::Router(const Config::RouterConfig& config, std::shared_ptr<const Model> initial,
               uint64_t hot_cache_capacity, HashFunction hash)
    : kind_(config.model), default_hash_(hash == &Xxh3Hash), model_(std::move(initial)) {
  if (config.sample_rate <= 0) {
    sample_threshold_ = 0;
  } else if (config.sample_rate >= 1) {
    sample_threshold_ = std::numeric_limits<uint64_t>::max();
  } else {
    sample_threshold_ = static_cast<uint64_t>(config.sample_rate * 18446744073709551616.0);
  }
  const double threshold = RouterThreshold(config);
  if (kind_ == RouterModel::kHistogram) {
    trainer_ = MakeHistogramTrainer(std::max<uint32_t>(config.bins, 1), threshold);
  } else {
    hot_keys_limit_ = config.hot_keys != 0 ? config.hot_keys : hot_cache_capacity;
    hot_keys_limit_ = std::clamp<uint64_t>(hot_keys_limit_, 1, kMaxRouterHotKeys);
    trainer_ = MakeHeavyHitterTrainer(hot_keys_limit_, threshold);
  }
}

uint64_t Router::NextRandom() {
  // xorshift64*, one state per thread: sampling must not share a cache line.
  thread_local uint64_t state = std::random_device{}() | 1;
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 2685821657736338717ull;
}

void Router::SampleBatch(const Batch& batch, const uint64_t* hashes) {
  // xorshift64*, as NextRandom, on a local state.
  uint64_t state = NextRandom() | 1;
  for (size_t i = 0; i < batch.size(); ++i) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    if (state * 2685821657736338717ull >= sample_threshold_) continue;
    if (trainer_->Add(batch.key(i), hashes[i])) samples_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Router::ResetTraining() {
  trainer_->Reset();
  samples_.store(0, std::memory_order_relaxed);
}

void Router::Install(std::shared_ptr<const Model> model) {
  model_ = std::move(model);
  ++version_;
}

}  // namespace kvcg::router
