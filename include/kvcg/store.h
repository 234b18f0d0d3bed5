// kvcg/store.h — the embedded, batch-first key-value store.
//
//   kvcg::Config config;                  // backend auto: GPU if present, else CPU
//   std::unique_ptr<kvcg::Store> store;
//   kvcg::Status s = kvcg::Store::Open(config, &store);
//   if (!s.ok()) { ...s.ToString()... }
//
//   kvcg::Batch batch;
//   batch.Put("user:1", "alice");
//   batch.Get("user:1");
//   std::vector<kvcg::OpResult> r = store->Execute(std::move(batch));
//   // r[0].code == kNotFound (no previous value), r[1].value == "alice"
//
// Semantics (DESIGN.md §2), on every backend:
//  * Keys and values are binary-safe byte strings, compared exactly; two keys
//    with equal hashes never alias.
//  * Every operation is linearizable: it takes effect atomically at one
//    instant between the Submit call and the call of its completion.
//  * Same-key order: operations on one key inside a batch take effect in
//    batch order; if one Submit call returns before another starts (e.g. two
//    successive calls from one thread), the first batch's operations on a key
//    take effect before the second's. Operations on different keys may take
//    effect in any order (a batch is elementwise, not atomic).
//  * Errors are per operation (see OpResult); an operation that fails changed
//    nothing, and nothing acknowledged earlier is lost.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "kvcg/status.h"

namespace kvcg {

// What a Store runs on, for start-up banners, INFO and benchmark records.
struct StoreInfo {
  Backend backend = Backend::kCpu;  // kCpu or kGpu, never kAuto.
  Layout layout = Layout::kGeneral;
  std::string device;  // e.g. "NVIDIA H100 80GB HBM3" or "CPU (16 hardware threads)".
  std::string detail;  // Backend-specific one-line description of its setup.
};

class Store {
 public:
  // Receives one result per operation, in batch order. Called exactly once per
  // Submit, either on the submitting thread (possibly before Submit returns) or
  // on an internal thread. It should be short; it may call Submit.
  using Completion = std::function<void(std::vector<OpResult>&& results)>;

  // Opens a new, empty store as `config` says. On success *store holds it and
  // the result is ok. Errors: kInvalidArgument for a contradictory Config;
  // kUnavailable when Backend::kGpu was asked for and no usable GPU exists (or
  // CUDA support was not compiled in); kInternal for device failures.
  static Status Open(const Config& config, std::unique_ptr<Store>* store);

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Waits for every submitted batch to complete (its completion is called),
  // then releases all memory. No Submit may start once destruction begins.
  virtual ~Store() = default;

  // Executes `batch` asynchronously and reports through `done`. Never throws
  // for bad input: over-limit keys/values, wrong sizes for Layout::kFixed8 and
  // exhausted capacity are per-operation error results. Thread-safe.
  virtual void Submit(Batch batch, Completion done) = 0;

  // Submit and wait: executes `batch` and returns one result per operation.
  // Thread-safe. Same semantics as Submit.
  std::vector<OpResult> Execute(const Batch& batch);

  // Execute into a caller-owned vector: *results is resized to batch.size()
  // and the capacity of its vector and strings is reused, so a loop over one
  // Batch and one results vector allocates nothing per operation (in the CPU
  // backend). The default implementation copies the batch into Submit;
  // backends override it to avoid the copy. Thread-safe.
  virtual void ExecuteInto(const Batch& batch, std::vector<OpResult>* results);

  // One-operation conveniences over Execute. Thread-safe.
  OpResult Get(std::string_view key);
  OpResult Put(std::string_view key, std::string_view value);
  OpResult Delete(std::string_view key);

  // Number of keys stored. Exact when no operation is in flight; otherwise
  // some value the count held during the call. Thread-safe.
  virtual uint64_t Size() const = 0;

  // Bytes charged against Config::max_memory_bytes (keys, values and
  // per-entry overhead). Same consistency as Size(). Thread-safe.
  virtual uint64_t MemoryBytes() const = 0;

  // Removes every key (FLUSHALL). Each key's removal is linearizable, but the
  // whole is not atomic: concurrent operations may see some keys gone and
  // others not yet. Thread-safe.
  virtual void Clear() = 0;

  // Static description of the backend. Thread-safe.
  virtual StoreInfo Info() const = 0;
};

}  // namespace kvcg
