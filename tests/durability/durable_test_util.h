// What the durability tests share: a durable CPU-backend Config and a
// durable store over a volatile CPU store that a test wraps (to hold a
// Submit, gate a snapshot, ...).
#pragma once

#include <memory>
#include <string>

#include "durability/durable_store.h"
#include "kvcg/config.h"
#include "kvcg/store.h"

namespace kvcg::testing {

// The CPU backend with its files in `dir`: the append-only log on or off.
inline Config DurableConfig(const std::string& dir, bool log, FsyncPolicy policy = FsyncPolicy::kAlways) {
  Config c;
  c.backend = Backend::kCpu;
  c.expected_keys = 1024;
  c.durability.dir = dir;
  c.durability.append_only = log;
  c.durability.fsync = policy;
  return c;
}

// A durable store (cfg) over a volatile CPU store wrapped by `wrap`
// (unique_ptr<Store> -> unique_ptr<Store>).
template <class Wrap>
Status OpenDurableOver(const Config& cfg, Wrap wrap, std::unique_ptr<Store>* out) {
  Config volatile_cfg = cfg;
  volatile_cfg.durability = DurabilityConfig{};
  std::unique_ptr<Store> cpu;
  Status st = Store::Open(volatile_cfg, &cpu);
  if (!st.ok()) return st;
  return durability::OpenDurable(cfg, wrap(std::move(cpu)), out);
}

}  // namespace kvcg::testing
