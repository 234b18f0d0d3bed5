// Text forms of the Config enums, shared by the server's flags, the config
// file and the benchmarks so every tool spells them the same way.
#include "kvcg/config.h"

#include <ctime>

namespace kvcg {

bool ParseBackend(const std::string& text, Backend* out) {
  if (text == "auto") *out = Backend::kAuto;
  else if (text == "gpu") *out = Backend::kGpu;
  else if (text == "cpu") *out = Backend::kCpu;
  else return false;
  return true;
}

bool ParseLayout(const std::string& text, Layout* out) {
  if (text == "general") *out = Layout::kGeneral;
  else if (text == "fixed8") *out = Layout::kFixed8;
  else return false;
  return true;
}

bool ParseMode(const std::string& text, Mode* out) {
  if (text == "kvcg") *out = Mode::kKvcg;
  else if (text == "canonical" || text == "gpu-only") *out = Mode::kCanonical;
  else if (text == "hot-only" || text == "cpu-only") *out = Mode::kHotOnly;
  else return false;
  return true;
}

const char* ModeReplacement(const std::string& text) {
  if (text == "gpu-only") return "canonical";
  if (text == "cpu-only") return "hot-only";
  return nullptr;
}

bool ParseRouterModel(const std::string& text, RouterModel* out) {
  if (text == "heavy-hitters") *out = RouterModel::kHeavyHitters;
  else if (text == "histogram") *out = RouterModel::kHistogram;
  else return false;
  return true;
}

const char* RouterModelName(RouterModel model) {
  switch (model) {
    case RouterModel::kHistogram: return "histogram";
    case RouterModel::kHeavyHitters: return "heavy-hitters";
  }
  return "unknown";
}

bool ParseEvictionPolicy(const std::string& text, EvictionPolicy* out) {
  for (EvictionPolicy p :
       {EvictionPolicy::kNoEviction, EvictionPolicy::kAllKeysLru, EvictionPolicy::kAllKeysLfu,
        EvictionPolicy::kAllKeysRandom, EvictionPolicy::kVolatileLru, EvictionPolicy::kVolatileLfu,
        EvictionPolicy::kVolatileRandom, EvictionPolicy::kVolatileTtl}) {
    if (text == EvictionPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

const char* EvictionPolicyName(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kNoEviction: return "noeviction";
    case EvictionPolicy::kAllKeysLru: return "allkeys-lru";
    case EvictionPolicy::kAllKeysLfu: return "allkeys-lfu";
    case EvictionPolicy::kAllKeysRandom: return "allkeys-random";
    case EvictionPolicy::kVolatileLru: return "volatile-lru";
    case EvictionPolicy::kVolatileLfu: return "volatile-lfu";
    case EvictionPolicy::kVolatileRandom: return "volatile-random";
    case EvictionPolicy::kVolatileTtl: return "volatile-ttl";
  }
  return "unknown";
}

uint64_t SystemClockMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

double RouterThreshold(const Config::RouterConfig& router) {
  if (router.threshold != 0) return router.threshold;
  return router.model == RouterModel::kHistogram ? 0.001 : 0.0;
}

bool ParseFsyncPolicy(const std::string& text, FsyncPolicy* out) {
  if (text == "always") *out = FsyncPolicy::kAlways;
  else if (text == "everysec") *out = FsyncPolicy::kEverySec;
  else if (text == "no") *out = FsyncPolicy::kNo;
  else return false;
  return true;
}

const char* FsyncPolicyName(FsyncPolicy policy) {
  switch (policy) {
    case FsyncPolicy::kAlways: return "always";
    case FsyncPolicy::kEverySec: return "everysec";
    case FsyncPolicy::kNo: return "no";
  }
  return "unknown";
}

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kCanonical: return "canonical";
    case Mode::kKvcg: return "kvcg";
    case Mode::kHotOnly: return "hot-only";
  }
  return "unknown";
}

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kGpu: return "gpu";
    case Backend::kCpu: return "cpu";
  }
  return "unknown";
}

const char* LayoutName(Layout layout) {
  return layout == Layout::kFixed8 ? "fixed8" : "general";
}

}  // namespace kvcg
