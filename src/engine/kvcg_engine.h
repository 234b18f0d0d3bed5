// KvcgEngine: the request workflow of the KVCG paper (§4) over any
// canonical store, and the model-switch protocol (§6–§7).
//
// Workflow of one Submit (the paper's CRB):
//  1. The batch enters the request gate and is partitioned by the router's
//     installed model, one model for the whole batch. Every operation on one
//     key therefore takes the same path in one batch.
//  2. Hot operations run inline on the submitting thread on the hot cache.
//     A hit is answered at once; a miss (no entry) makes the entry pending
//     and stays in the batch for the canonical store; an operation on a
//     pending key queues behind the in-flight one (see hotcache/hot_cache.h).
//  3. The batch goes on to the canonical store (the paper's GRB) as it is,
//     with the ops answered here turned into no-ops (Batch::SetNoop): cold
//     ops and misses keep their places, so nothing is copied per op on the
//     way in or out. The canonical store's pipeline plays the paper's
//     orchestrators. Misses fill the cache when they return, then the
//     operations queued behind them run.
//  4. The batch's completion fires when its last operation is answered.
//
// Results (kvcg/results.h). The canonical store's Results for the batch are
// the batch's results: the engine writes its own answers over the no-ops'
// (engine/hot_answers.h), one Replace per answered op, and hands them on
// with the answers' memory added as an owner. An all-cold batch goes to the
// canonical store untouched and so do its Results. When the batch still has
// ops the cache will refer to later (a miss, or an op queued behind one),
// the canonical store gets a copy and the engine keeps the original until
// they are answered. A batch answered wholly here (no op for the canonical
// store) gets Results built from the answers alone.
//
// Same-key order. Inside one batch a key's operations all go one way, and
// each way keeps batch order: the canonical store keeps it for cold keys;
// for hot keys the cache runs them in order, and once one has missed, the
// rest queue behind it in order (so "GET miss, then PUT of the same key in
// the same batch" runs the PUT after the GET's fill, never before). Across
// batches, the canonical store orders one key's operations by Submit order,
// and a key that turns hot starts with a miss that the canonical store
// orders after every cold operation already submitted for it.
//
// Switch protocol (InstallModel; serialized by switch_mu_):
//  block (close the gate: new batches are parked, in order) → drain (wait
//  until no hot-cache miss is in flight, so every admitted hot operation has
//  taken effect) → replay the epoch's log on the canonical store and wait
//  for it → install the model → unblock (run the parked batches, then open
//  the gate) → evict the entries the new model calls cold. Eviction finishes
//  before the switch lock is released, so the m1 hot → m2 cold → m3 hot case
//  (§6.2) can never see an m1-era value. A failed replay keeps the old model
//  (nothing acknowledged is lost) and reports the error. OpenSnapshot runs
//  the same protocol without a model and opens the canonical store's
//  snapshot between the replay and the unblock.
//
// Thread safety: everything in kvcg::Store and kvcg::Engine is thread-safe
// as documented there.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/hot_answers.h"
#include "engine/latency_histogram.h"
#include "engine/request_gate.h"
#include "engine/route_profile.h"
#include "hotcache/hot_cache.h"
#include "kvcg/engine.h"
#include "router/router.h"

namespace kvcg::engine {

class KvcgEngine final : public Engine {
 public:
  KvcgEngine(const Config& config, std::unique_ptr<Store> canonical);
  ~KvcgEngine() override;

  // Batches for the engine go to the canonical store as they are when every
  // op is cold, so they are made in its memory.
  Batch NewBatch() override { return canonical_->NewBatch(); }
  void Submit(Batch batch, Completion done) override { SubmitWithEarlyAnswers(std::move(batch), std::move(done), {}); }
  // Hits and hot ops' input errors are the early answers, given after the
  // routing pass and before the batch goes to the canonical store (so
  // nothing else writes its results meanwhile). A parked batch (during a
  // switch) and an all-cold batch give none.
  void SubmitWithEarlyAnswers(Batch batch, Completion done, const EarlyCallback& early) override;
  uint64_t Size() const override;
  uint64_t MemoryBytes() const override;
  void Clear() override;
  StoreInfo Info() const override;
  // Taken inside the switch protocol's block; see kvcg_engine.cc for why
  // flushing first and snapshotting after the block would not do.
  Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out) override;
  // Step 0 writes the hot-cache updates back first (Flush), so that every
  // key present at the start of the iteration is in the canonical store,
  // whose Scan gives the guarantee from then on: keys only leave it by a
  // delete (written back later), which means they were not present for the
  // whole iteration. Values may be older than the hot cache's.
  Status Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next) override {
    if (cursor == 0) {
      Status s = Flush();
      if (!s.ok()) return s;
    }
    return canonical_->Scan(cursor, count, out, next);
  }

  // Expiry and memory (kvcg_engine_keyspace.cc). Keyspace and
  // ReclaimExpired write the hot cache's updates back first (a Flush), so
  // the canonical store's counts are exact, then forward to it.
  // SetMemoryLimit forwards and switches the hot cache to write-through while
  // a limit is set, so that the canonical store's eviction sees every key;
  // the housekeeper then reconciles the cache with the canonical store once
  // a switch period (ReconcileCacheMode) while the policy evicts, and
  // MemoryBytes then counts the hot cache's copies.
  KeyspaceStats Keyspace() const override;
  uint64_t ReclaimExpired() override;
  Status SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) override;
  // The canonical store's answer: a hot key's accesses reach it once a
  // reconcile period while a limit is set (ReconcileCacheMode), not at all
  // otherwise, so its idle time may be that much too long.
  Status KeyAccess(std::string_view key, KeyAccessInfo* info) const override {
    return canonical_->KeyAccess(key, info);
  }

  Status InstallModel(std::shared_ptr<const Model> model, const std::string& reason,
                      SwitchRecord* record) override;
  Status SwitchToShadowModel(SwitchRecord* record) override;
  Status Flush() override;
  EngineStats Stats() const override;
  void ResetStats() override;
  Store* canonical() override { return canonical_.get(); }

 protected:
  // Store::SetActiveExpiryHz: the canonical store's rate, then the
  // housekeeper's (kvcg_engine_keyspace.cc).
  Status ApplyActiveExpiryHz(uint32_t hz) override;

 private:
  struct BatchCtx;
  struct Fill {
    uint32_t index;
    uint64_t hash;
  };

  // Routes and executes one batch (steps 1–3). Called inside the gate, or by
  // the switching thread for parked batches while the gate is closed.
  void Route(Batch batch, Completion done, const EarlyCallback* early = nullptr);
  // A batch none of whose ops is hot, to the canonical store as it is;
  // ends the routing pass that began at `start` (its profile: phase_end,
  // where the phases it skipped are still 0).
  void ForwardCold(Batch batch, Completion done, uint64_t start,
                   uint64_t (&phase_end)[RouteProfile::kPhases]);
  void OnCold(BatchCtx* ctx, Results&& results);
  // A miss (or the op queued behind it) returned from the canonical store
  // with `result` (already recorded in the op's results).
  void OnFill(const hotcache::OpRef& op, uint64_t hash, OpResultView result);
  void Finish(BatchCtx* ctx, uint32_t ops);

  // The switch protocol's block/drain and unblock halves.
  void Block();
  // Runs parked batches in order until none is left, then opens the gate and
  // delivers their completions. Returns how many ran.
  uint64_t Unblock();
  // Releases the extra in-flight holds Unblock took for parked batches.
  void FinishStashed(uint64_t count);
  // Replays the log; false (and *error) when some entry could not be written.
  bool Replay(uint64_t* replayed, std::string* error);
  // The switch protocol. With a null model it only replays (Flush); with
  // `snapshot` non-null it also opens the canonical store's snapshot there,
  // after the replay and before unblocking (OpenSnapshot).
  Status RunSwitch(std::shared_ptr<const Model> model, const std::string& reason,
                   SwitchRecord* record, std::unique_ptr<SnapshotReader>* snapshot = nullptr);
  void RecordSwitch(const SwitchRecord& record);
  void PeriodicSwitcher();
  // The hot cache's housekeeping thread: active expiry at
  // Config::active_expiry_hz (the canonical store sweeps itself) and, while
  // a memory limit is set, ReconcileCacheMode once a reconcile period.
  // Started by the first non-zero rate or limit (under periodic_mu_).
  void Housekeeper();
  void StartHousekeeperLocked();
  // Cache mode (kvcg_engine_keyspace.cc): touches every hot key in the
  // canonical store, drops the entries of keys it evicted, and charges the
  // cache's bytes against the limit by lowering the canonical store's.
  void ReconcileCacheMode();
  // Whether this thread runs engine code (a completion): blocking calls that
  // wait for the canonical store must not run there.
  static bool InEngineFrame();

  const Config config_;
  const bool cpu_only_;
  std::unique_ptr<Store> canonical_;
  hotcache::HotCache cache_;
  router::Router router_;

  RequestGate gate_;
  std::mutex park_mu_;
  std::deque<std::pair<Batch, Completion>> parked_;  // under park_mu_
  // While Unblock drains parked_, the completions of the batches it runs are
  // held here and delivered after the gate opens. Otherwise a closed-loop
  // client whose completion submits its next batch would refill parked_ as
  // fast as it drains and keep the gate closed for good.
  std::mutex stash_mu_;
  bool stashing_ = false;  // under stash_mu_
  std::vector<std::pair<Completion, Results>> stash_;  // under stash_mu_

  std::mutex switch_mu_;  // one switch (or flush, or clear) at a time
  // Held across a replay and its CommitLog (and Clear), when the canonical
  // store and the cache's presence delta disagree; Size() takes it.
  mutable std::mutex size_mu_;

  std::mutex inflight_mu_;
  std::condition_variable inflight_cv_;
  std::atomic<uint64_t> inflight_batches_{0};

  // Stats.
  std::atomic<uint64_t> hot_hits_{0}, hot_misses_{0}, hot_waited_{0}, cold_ops_{0}, errors_{0};
  LatencyHistogram hot_latency_;
  LatencyHistogram cold_latency_;
  RouteProfile profile_;
  mutable std::mutex stats_mu_;
  std::deque<SwitchRecord> switches_;  // under stats_mu_
  uint64_t switch_count_ = 0;          // under stats_mu_
  uint64_t model_version_ = 1;         // under stats_mu_
  std::string model_desc_;             // under stats_mu_
  int64_t model_keys_ = -1;            // under stats_mu_: Model::KeyCount() of the installed model

  std::mutex periodic_mu_;
  std::condition_variable periodic_cv_;
  bool stopping_ = false;  // under periodic_mu_
  uint32_t expiry_hz_ = 0;  // under periodic_mu_: the hot cache sweeper's rate
  bool cache_mode_ = false;  // under periodic_mu_: a memory limit is set
  std::thread periodic_;
  std::thread housekeeper_;  // see Housekeeper

  // Cache mode. The user's limit and policy, and what the canonical store
  // was last given (the limit less the hot cache's bytes), under limit_mu_.
  std::mutex limit_mu_;
  uint64_t limit_bytes_ = 0;
  EvictionPolicy limit_policy_ = EvictionPolicy::kNoEviction;
  uint64_t canonical_limit_ = 0;
  std::atomic<uint64_t> hot_bytes_{0};  // the hot cache's bytes at the last reconcile
};

}  // namespace kvcg::engine
