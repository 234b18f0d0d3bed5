// Router implementation; see router.h.
#include "router/router.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

namespace kvcg::router {

Router::Router(const Config::RouterConfig& config, std::shared_ptr<const Model> initial,
               uint64_t hot_cache_capacity, HashFunction hash)
    : kind_(config.model),
      default_hash_(hash == &Xxh3Hash),
      min_hot_share_(config.min_hot_share),
      model_(std::move(initial)) {
  if (config.sample_rate <= 0) {
    sample_threshold_ = 0;
  } else if (config.sample_rate >= 1) {
    sample_threshold_ = std::numeric_limits<uint64_t>::max();
  } else {
    sample_threshold_ = static_cast<uint64_t>(config.sample_rate * 18446744073709551616.0);
    log_skip_ = std::log1p(-config.sample_rate);
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

std::shared_ptr<const Model> Router::BuildShadow() const {
  double hot_share = 0;
  std::shared_ptr<const Model> shadow = trainer_->Build(&hot_share);
  if (hot_share >= min_hot_share_ || shadow->KeyCount() == 0) return shadow;
  char why[160];
  std::snprintf(why, sizeof why, "all-cold (hot share %.2f%% < router.min_hot_share %.2f%%): ",
                hot_share * 100, min_hot_share_ * 100);
  return MakeAllColdModel(why + shadow->Describe());
}

namespace {

// One step of xorshift64* on `state`: the next random word.
uint64_t XorShiftStar(uint64_t& state) {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 2685821657736338717ull;
}

}  // namespace

uint64_t Router::NextRandom() {
  // One state per thread: sampling must not share a cache line.
  thread_local uint64_t state = std::random_device{}() | 1;
  return XorShiftStar(state);
}

template <class HashOf>
void Router::SampleBatch(const Batch& batch, HashOf hash_of) {
  // The same draw as Sample's per op — each op sampled with probability
  // sample_rate, independently — taken as the gaps between sampled ops: a
  // gap is geometric, floor(log(u) / log(1 - rate)) ops, one log per sample
  // instead of a random number per op. The distribution has no memory, so
  // each batch starts afresh.
  const size_t n = batch.size();
  if (log_skip_ == 0) {  // sample_rate >= 1: every op
    for (size_t i = 0; i < n; ++i) Train(batch.key(i), hash_of(i));
    return;
  }
  uint64_t state = NextRandom() | 1;  // a local state: no thread-local access per draw
  auto gap = [&]() -> double {
    // u in (0, 1]: never log(0).
    const double u = double((XorShiftStar(state) >> 11) + 1) * 0x1p-53;
    return std::floor(std::log(u) / log_skip_);
  };
  for (double i = gap(); i < double(n); i += 1 + gap()) Train(batch.key(size_t(i)), hash_of(size_t(i)));
}

void Router::Sample(const Batch& batch, const uint64_t* hashes) {
  if (sample_threshold_ != 0) SampleBatch(batch, [&](size_t i) { return hashes[i]; });
}

void Router::SampleUnhashed(const Batch& batch, HashFunction hash) {
  if (sample_threshold_ != 0) SampleBatch(batch, [&](size_t i) { return hash(batch.key(i)); });
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
