// kvcg/store.h — the embedded, batch-first key-value store.
//
//   kvcg::Config config;                  // backend auto: GPU if present, else CPU
//   std::unique_ptr<kvcg::Store> store;
//   kvcg::Status s = kvcg::Store::Open(config, &store);
//   if (!s.ok()) { ...s.ToString()... }
//
//   kvcg::Batch batch = store->NewBatch();   // memory the store can DMA as is
//   batch.Put("user:1", "alice");
//   batch.Get("user:1");
//   kvcg::Results r = store->Execute(std::move(batch));
//   // r.code(0) == kNotFound (no previous value), r.value(1) == "alice";
//   // the views in r stay valid until r is destroyed (kvcg/results.h).
//
// The native call is asynchronous and columnar: Submit(batch, completion)
// hands the batch's columns to the store and the completion receives a
// Results (codes + borrowed value views). Nothing is allocated or copied per
// operation between the two on the GPU backend (see kvcg/batch.h and
// kvcg/results.h for the memory and lifetime rules).
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
#include "kvcg/results.h"
#include "kvcg/snapshot.h"
#include "kvcg/status.h"

namespace kvcg {

// What a Store runs on, for start-up banners, INFO and benchmark records.
struct StoreInfo {
  Backend backend = Backend::kCpu;  // kCpu or kGpu, never kAuto.
  Layout layout = Layout::kGeneral;
  std::string device;  // e.g. "NVIDIA H100 80GB HBM3" or "CPU (16 hardware threads)".
  std::string detail;  // Backend-specific one-line description of its setup.
};

// Keyspace counters (Redis's INFO keyspace and stats). Each field holds some
// value it had during the call; they are not read at one instant together.
struct KeyspaceStats {
  uint64_t keys = 0;           // = Size(): keys stored, expired-not-yet-reclaimed included
  uint64_t volatile_keys = 0;  // of which have an expire-at (Redis "expires")
  uint64_t avg_ttl_ms = 0;     // estimated mean time to live of those; 0 = unknown/none
  uint64_t expired_keys = 0;   // reclaimed because they expired, since Open (lazily or actively)
  uint64_t evicted_keys = 0;   // removed by the eviction policy, since Open
};

// How recently / how often a key was accessed (Redis's OBJECT IDLETIME and
// OBJECT FREQ), as the eviction policy tracks it. Every key keeps one access
// word, read as Redis reads its 24-bit lru field: under an LFU policy it is
// Redis's logarithmic frequency counter (0..255; a new key starts at 5, an
// access raises it with probability 1/((c-5)*10+1), each idle minute lowers
// it by one), otherwise the time of the last access (docs/EVICTION.md).
// Switching between LRU and LFU policies reinterprets the words: they are
// meaningful again once keys are accessed under the new policy.
struct KeyAccessInfo {
  bool lfu = false;       // true: the store's policy is an LFU one and `frequency` is meaningful;
                          // false: `idle_ms` is.
  uint64_t idle_ms = 0;   // ms since the key was last read or written (approximate: at most one
                          // batch's clock reading late); 0 under an LFU policy
  uint32_t frequency = 0; // the LFU counter after decay (Redis's LFUDecrAndReturn); 0 unless lfu
};

class Store {
 public:
  // Receives one result per operation, in batch order. Called exactly once per
  // Submit, either on the submitting thread (possibly before Submit returns) or
  // on an internal thread. It should be short (on the GPU backend it runs on
  // the store's one pipeline thread); it may call Submit. It may keep the
  // Results (move it) beyond the call; the views stay valid until released.
  using Completion = std::function<void(Results&& results)>;

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

  // An empty batch in memory this store can use without copying it (GPU
  // backend: page-locked host memory from its pool; otherwise the heap).
  // Any Batch works with any store; this one only saves a copy. Thread-safe.
  virtual Batch NewBatch() { return Batch(); }

  // Executes `batch` asynchronously and reports through `done`. Never throws
  // for bad input: over-limit keys/values, wrong sizes for Layout::kFixed8 and
  // exhausted capacity are per-operation error results. The store owns the
  // batch until `done` is called. `done` runs on the submitting thread
  // (CPU backend, engine hot batches) or on a store thread (GPU backend:
  // its pipeline or delivery thread), once; it may Submit again but must
  // not wait for another batch of the store: completions after it wait for
  // it. Thread-safe.
  virtual void Submit(Batch batch, Completion done) = 0;

  // Early answers: Submit, and let the submitter read the ops that are
  // answered before the batch completes. On the engine (kvcg/engine.h) those
  // are hot-cache hits and the input errors of hot ops, answered while
  // Submit routes the batch (a cold op's error comes with `done`, from the
  // canonical store); a backend answers nothing early. `early` is called at most once,
  // on the submitting thread before this returns and before `done` is
  // called, with the batch's results
  // so far and answered[i] != 0 for every op i whose result there is final
  // (the others read as kNotFound and mean nothing). Views and flags are
  // valid during the call only. `done` is called as for Submit, with every
  // result, the early ones again. `early` must not call Submit or wait for
  // the store: the store may hold locks while it runs. Thread-safe.
  struct EarlyAnswers {
    const Results& results;
    const uint8_t* answered;
  };
  using EarlyCallback = std::function<void(const EarlyAnswers&)>;
  virtual void SubmitWithEarlyAnswers(Batch batch, Completion done, const EarlyCallback& early) {
    (void)early;
    Submit(std::move(batch), std::move(done));
  }

  // Submit and wait: executes `batch` and returns its results. Thread-safe.
  // Same semantics as Submit. (A const Batch& is copied first.)
  Results Execute(Batch&& batch);
  Results Execute(const Batch& batch) { return Execute(Batch(batch)); }

  // One-operation conveniences over Execute, returning owned values.
  // Thread-safe.
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

  // Keyspace counters (see KeyspaceStats). The default reports keys only.
  // Thread-safe.
  virtual KeyspaceStats Keyspace() const;

  // Runs one full active-expiry pass now: every key whose expire-at is at or
  // before the store's clock is removed. Returns how many were. The store
  // also does this by itself (Config::active_expiry_hz); this call is for
  // tests and for callers that turned that off. Thread-safe.
  virtual uint64_t ReclaimExpired() { return 0; }

  // Changes Config::max_memory_bytes (0 = unlimited) and Config::eviction at
  // run time (Redis CONFIG SET maxmemory / maxmemory-policy). Lowering the
  // limit below what is stored evicts down to it before returning under an
  // evicting policy (as far as the policy finds candidates: a volatile policy
  // with no volatile keys evicts nothing), and under noeviction refuses
  // writes that would grow the store from the next write on. A write that
  // would pass the limit evicts (allkeys-*: any key; volatile-*: keys with an
  // expire-at) until it fits; when nothing can be evicted it gets
  // kCapacityExhausted and changed nothing. Eviction takes a key's shard lock
  // like any write, so it is linearizable with the writes on that key: a
  // write's result (the previous value, a CAS's match) reflects an eviction
  // that happened before it, and a write never loses its own effect to one.
  // Errors: kUnavailable for a store that cannot change them. Thread-safe.
  virtual Status SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy);

  // Changes Config::active_expiry_hz at run time (Redis CONFIG SET hz): the
  // periodic active expiry runs `hz` times a second from the next period on;
  // 0 stops it (lazy expiry and ReclaimExpired still reclaim). Errors:
  // kInvalidArgument above kMaxActiveExpiryHz; kUnavailable for a store that
  // cannot change it. Thread-safe.
  static constexpr uint32_t kMaxActiveExpiryHz = 1000;
  Status SetActiveExpiryHz(uint32_t hz);

  // Reports how recently / often `key` was accessed (KeyAccessInfo) without
  // counting as an access itself (Redis's LOOKUP_NOTOUCH). Returns ok when
  // the key is live, kNotFound when it is absent or expired. Errors:
  // kUnavailable for a store that does not track access (the default), and
  // on the GPU backend for a live key under a non-LFU policy (its LRU time
  // is a count of eviction passes, not a clock). Thread-safe.
  virtual Status KeyAccess(std::string_view key, KeyAccessInfo* info) const;

  // Captures a point-in-time image of the store (kvcg/snapshot.h): it holds
  // the effect of every operation of every batch whose Submit returned before
  // this call started and of none submitted after this call returned; each
  // operation in flight meanwhile is wholly in or wholly out, consistently
  // with one instant. Submits may run concurrently and are never refused; the
  // image does not change after this call returns, whatever they do.
  // Costs: the CPU backend copies a shard the first time a write touches it
  // before the reader has read it (copy-on-write per shard); the GPU backend
  // pauses its pipeline while the table's index is copied to page-locked host
  // memory (~24 bytes a key) and keeps replaced values until the reader is
  // destroyed; the engine first writes its hot-cache updates back (Flush).
  // Errors: kUnavailable for a Store that cannot take snapshots (the default
  // for Store subclasses outside kvcg; every kvcg backend and mode can),
  // kInternal on device failure. Thread-safe; several readers may be open.
  virtual Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out);

  // One step of an iteration over every key (Redis SCAN). Start with
  // cursor 0; *next receives the cursor of the following step, 0 when the
  // iteration is over; *out receives this step's entries (keys and values,
  // read as a SnapshotReader: views valid until its next Next() or its
  // destruction; it must be destroyed before the store). `count` is a hint
  // of how many entries a step should return (any number may come back,
  // none included). The guarantee is Redis's: a key present from the start
  // of the iteration to its end is returned at least once, even while the
  // store grows, shrinks or is written meanwhile; a key may be returned more
  // than once, and keys added or removed meanwhile may or may not be. A
  // cursor is only meaningful to the store that returned it; an unknown
  // cursor ends the iteration or restarts part of it, never fails. Costs:
  // CPU backend: a step runs under one shard's lock; GPU backend: a step is
  // a marker in the pipeline (it waits for earlier batches) and a kernel over
  // a range of buckets; engine: step 0 writes the hot-cache updates back
  // (a Flush) so that every key is in the canonical store. Errors:
  // kUnavailable for a Store that cannot iterate, kInternal on device
  // failure. Thread-safe; iterations may run concurrently.
  virtual Status Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next);

 protected:
  // SetActiveExpiryHz after its range check: what a store that can change
  // its rate implements (the default answers kUnavailable).
  virtual Status ApplyActiveExpiryHz(uint32_t hz);
};

}  // namespace kvcg
