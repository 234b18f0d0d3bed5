// Store::Open validates the Config and picks the backend (and, for modes
// other than canonical, wraps it in the engine; with persistence configured,
// wraps that in a Durable).
#include "durability/durable_store.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"
#include "store/backends.h"

namespace kvcg {

namespace {
Status OpenCanonical(const Config& config, std::unique_ptr<Store>* out) {
  switch (config.backend) {
    case Backend::kCpu:
      return store::OpenCpuStore(config, out);
    case Backend::kGpu:
      return store::OpenGpuStore(config, out);
    case Backend::kAuto:
      if (store::GpuAvailable(config, nullptr)) return store::OpenGpuStore(config, out);
      return store::OpenCpuStore(config, out);
  }
  return Status::InvalidArgument("unknown backend");
}

Status OpenVolatile(const Config& config, std::unique_ptr<Store>* out) {
  if (config.mode == Mode::kCanonical) return OpenCanonical(config, out);
  // kvcg and hot-only: the engine (hot cache + router) over the canonical store.
  Config canonical_config = config;
  canonical_config.mode = Mode::kCanonical;
  std::unique_ptr<Store> canonical;
  Status s = OpenCanonical(canonical_config, &canonical);
  if (!s.ok()) return s;
  std::unique_ptr<Engine> engine;
  s = Engine::Open(config, std::move(canonical), &engine);
  if (s.ok()) *out = std::move(engine);
  return s;
}
}  // namespace

Status Store::Open(const Config& config, std::unique_ptr<Store>* out) {
  out->reset();
  Status s = store::ValidateConfig(config);
  if (!s.ok()) return s;
  if (config.durability.dir.empty()) return OpenVolatile(config, out);
  // Persistence wraps whatever serves requests (kvcg/durable.h). What it
  // wraps runs on a clock the load can freeze while it replays the files
  // (durability/replay_clock.h); declared first, it outlives the store.
  std::unique_ptr<durability::ReplayClock> clock = durability::ReplayClock::Acquire(config.clock);
  Config inner_config = config;
  if (clock != nullptr) inner_config.clock = clock->function();
  std::unique_ptr<Store> store;
  s = OpenVolatile(inner_config, &store);
  if (!s.ok()) return s;
  return durability::OpenDurable(config, std::move(store), out, std::move(clock));
}

}  // namespace kvcg
