// Conformance rows for the engine modes (for tests/conformance/backend_params.h).
//
// Each row's Config is a canonical row's Config with an engine mode on top:
//  * cpu-only: every key is hot, so every operation runs on the hot cache
//    (after its compulsory miss);
//  * kvcg: the engine is opened and then given a model that makes about half
//    of the keys hot (by a hash of the key that ignores Config::hash, so rows
//    with a forced-collision hash still mix hot and cold keys in one bucket);
//    hot keys exercise the hot cache, cold ones the canonical store, in the
//    same batches.
// Periodic switching is off so the model stays the one installed here.
#pragma once

#include <memory>

#include "kvcg/config.h"
#include "kvcg/engine.h"
#include "kvcg/hash.h"
#include "kvcg/store.h"

namespace kvcg::engine_rows {

inline Config WithMode(Config c, Mode mode) {
  c.mode = mode;
  c.router.switch_period_ms = 0;
  return c;
}

inline std::shared_ptr<const Model> HalfHotModel() {
  return MakePredicateModel([](std::string_view key, uint64_t) { return (Xxh3Hash(key) >> 17) & 1; },
                            "half-hot (xxh3 bit 17 of the key)");
}

// Store::Open, then (for mode kvcg) the half-hot model.
inline Status OpenHalfHot(const Config& config, std::unique_ptr<Store>* out) {
  Status s = Store::Open(config, out);
  if (!s.ok() || config.mode != Mode::kKvcg) return s;
  s = AsEngine(out->get())->InstallModel(HalfHotModel(), "conformance", nullptr);
  if (!s.ok()) out->reset();
  return s;
}

}  // namespace kvcg::engine_rows
