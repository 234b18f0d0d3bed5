// store::ValidateConfig: the checks every entry point (Store::Open, a
// backend's own Open) applies before allocating anything. In kvcg_common so
// that backends can call it without linking Store::Open's library.
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
  return Status::Ok();
}

}  // namespace store

}  // namespace kvcg
