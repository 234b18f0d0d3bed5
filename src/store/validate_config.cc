// store::ValidateConfig: the checks every entry point (Store::Open, a
// backend's own Open) applies before allocating anything. In kvcg_common so
// that backends can call it without linking Store::Open's library.
#include <string>

#include "store/backends.h"

namespace kvcg {

namespace store {

Status ValidateConfig(const Config& config) {
  if (config.hash == nullptr) return Status::InvalidArgument("hash function must not be null");
  if (config.max_key_bytes == 0) return Status::InvalidArgument("max_key_bytes must be > 0");
  if (config.layout == Layout::kFixed8 && (config.max_key_bytes < 8 || config.max_value_bytes < 8)) {
    return Status::InvalidArgument("layout fixed8 needs max_key_bytes and max_value_bytes >= 8");
  }
  if (config.cpu_shards != 0 && (config.cpu_shards & (config.cpu_shards - 1)) != 0) {
    return Status::InvalidArgument("cpu_shards must be a power of two (or 0 for auto)");
  }
  if (config.backend != Backend::kCpu && config.gpu_orchestrators == 0) {
    return Status::InvalidArgument("gpu_orchestrators must be > 0");
  }
  // The router is ignored by canonical, so its settings cannot contradict anything there.
  if (config.mode != Mode::kCanonical) return ValidateRouterConfig(config.router);
  return Status::Ok();
}

Status ValidateRouterConfig(const Config::RouterConfig& r) {
  if (r.model != RouterModel::kHistogram && r.model != RouterModel::kHeavyHitters) {
    return Status::InvalidArgument("router.model must be histogram or heavy-hitters (got value " +
                                   std::to_string(static_cast<int>(r.model)) + ")");
  }
  if (r.model == RouterModel::kHistogram && r.bins == 0) {
    return Status::InvalidArgument("router.bins must be > 0 for the histogram model");
  }
  if (!(r.threshold >= 0 && r.threshold <= 1)) {
    return Status::InvalidArgument("router.threshold must be in [0, 1] (0 = the model's default)");
  }
  if (!(r.sample_rate >= 0 && r.sample_rate <= 1)) {
    return Status::InvalidArgument("router.sample_rate must be in [0, 1]");
  }
  if (!(r.min_hot_share >= 0 && r.min_hot_share <= 1)) {
    return Status::InvalidArgument("router.min_hot_share must be in [0, 1] (0 = no floor)");
  }
  if (r.hot_keys > kMaxRouterHotKeys) {
    return Status::InvalidArgument("router.hot_keys must be at most " +
                                   std::to_string(kMaxRouterHotKeys) + " (0 = the hot cache's capacity)");
  }
  return Status::Ok();
}

}  // namespace store

}  // namespace kvcg
