// kvcg/engine.h — the KVCG engine: hot cache + router in front of the
// canonical store, itself a kvcg::Store with exactly the same contract.
//
// Store::Open returns an Engine for Config::mode kKvcg and kHotOnly; reach
// the extra API with AsEngine(store.get()), which is null for canonical.
//
//   std::unique_ptr<kvcg::Store> store;
//   kvcg::Store::Open(config /* mode = kKvcg */, &store);
//   kvcg::Engine* engine = kvcg::AsEngine(store.get());
//   engine->InstallModel(kvcg::MakeKeySetModel({"user:1"}), "api", nullptr);
//   kvcg::EngineStats stats = engine->Stats();
//
// Model switches follow the paper's §7 protocol: block new requests, drain
// the hot cache's in-flight misses, replay the epoch's logged hot-cache
// updates on the canonical store, install the model, unblock, then evict the
// entries the new model calls cold (before any later switch may start).
// Requests submitted while blocked are not refused; they are held and run,
// in submission order, as soon as the new model is installed.
//
// Differences from a bare canonical store, all within the Store contract:
//  * Hot-cache updates reach the canonical store at the next switch (write-
//    back, as in the paper), or at once when a capacity limit is configured
//    (write-through, so that a replay can never be refused for lack of room).
//  * MemoryBytes() flushes logged hot-cache updates first (a short block),
//    except inside a completion, where it leaves them out.
//  * Clear() blocks like a switch; do not call it from a completion.
//  * OpenSnapshot() runs the switch protocol without a model change (block,
//    drain, replay) and opens the canonical store's snapshot inside the
//    block; from inside a completion it answers kInvalidArgument.
#pragma once

#include <memory>
#include <string>

#include "kvcg/engine_stats.h"
#include "kvcg/model.h"
#include "kvcg/store.h"

namespace kvcg {

class Engine : public Store {
 public:
  // Wraps `canonical` (any Store, e.g. the CPU or GPU backend opened with
  // mode canonical) in an engine configured by `config` (mode kKvcg or
  // kHotOnly; config.hash must be the canonical store's hash). The engine
  // hands `canonical` the client's batches with the ops it answered itself
  // turned into OpType::kNoop, and writes its answers over the Results
  // that come back (Results::Replace): `canonical` must answer a no-op
  // without touching its key, as every kvcg backend does, and produce
  // Results it may write into (the Store contract's; a wrapper that hands
  // out read-only or shared result memory cannot be wrapped). Errors:
  // kInvalidArgument for a bad router configuration or mode.
  static Status Open(const Config& config, std::unique_ptr<Store> canonical,
                     std::unique_ptr<Engine>* engine);

  // Installs `model` through the switch protocol and returns when the switch
  // (eviction included) is complete. Switches are serialized. `reason` is
  // recorded; *record (may be null) receives the switch's record. Errors:
  // kInvalidArgument in hot-only mode (whose model is fixed: every key hot)
  // or for a null model; the replay's error if it failed (the old model then
  // stays installed and nothing is lost); kInvalidArgument when called from
  // inside a Completion (the switch waits for completions). Thread-safe.
  virtual Status InstallModel(std::shared_ptr<const Model> model, const std::string& reason,
                              SwitchRecord* record) = 0;

  // Builds a model from the shadow trainer's samples (the model kind
  // Config::router.model picks: heavy-hitters or the paper's histogram),
  // installs it as InstallModel does, and restarts training.
  // Same errors and thread-safety as InstallModel.
  virtual Status SwitchToShadowModel(SwitchRecord* record) = 0;

  // Writes every logged hot-cache update to the canonical store (the switch
  // protocol without a model change). Afterwards the canonical store alone
  // holds every acknowledged value. Same thread-safety as InstallModel.
  virtual Status Flush() = 0;

  // A consistent snapshot of the counters; cheap enough for INFO. Thread-safe.
  virtual EngineStats Stats() const = 0;
  // Zeroes the operation counters and latency histograms (not the switch
  // history), e.g. between a benchmark's warm-up and its measurement.
  virtual void ResetStats() = 0;

  // The wrapped canonical store.
  virtual Store* canonical() = 0;
};

// The engine behind `store`, or null when it is a bare canonical store.
// Looks through a Durable (kvcg/durable.h), which wraps the engine.
Engine* AsEngine(Store* store);

}  // namespace kvcg
