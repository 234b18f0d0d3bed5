// KvcgEngine: the model-switch protocol (paper §6–§7; kvcg_engine.h has
// the steps) — block and drain, replay the hot cache's log, install, then
// unblock in order — and what runs on it: InstallModel, the periodic
// shadow-model switch, Flush and OpenSnapshot. Kept apart from the request
// workflow (kvcg_engine.cc), with which it shares only the engine's state.
#include <algorithm>
#include <chrono>
#include <thread>

#include "common/thread_name.h"
#include "engine/engine_frame.h"
#include "engine/kvcg_engine.h"

namespace kvcg::engine {

namespace {

constexpr size_t kSwitchHistory = 64;  // switch records kept for Stats()

}  // namespace

void KvcgEngine::Block() {
  gate_.Close();
  // Drain: every admitted hot op has either run or sits behind a miss that
  // is in flight on the canonical store; wait for those to come back. The
  // fills run on canonical-store threads, which nothing here blocks.
  for (int spins = 0; cache_.pending() != 0; ++spins) {
    if (spins < 1000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

uint64_t KvcgEngine::Unblock() {
  {
    std::lock_guard lock(stash_mu_);
    stashing_ = true;
  }
  uint64_t ran = 0;
  for (;;) {
    std::deque<std::pair<Batch, Completion>> batches;
    {
      std::lock_guard lock(park_mu_);
      if (parked_.empty()) {
        gate_.Open();
        break;
      }
      batches.swap(parked_);
    }
    // Still closed to newcomers, who park behind these: submission order holds.
    for (auto& [batch, done] : batches) {
      inflight_batches_.fetch_add(1, std::memory_order_relaxed);  // until its stashed completion runs
      Route(std::move(batch), [this, done = std::move(done)](Results&& results) {
        {
          std::lock_guard lock(stash_mu_);
          if (stashing_) {
            stash_.emplace_back(done, std::move(results));
            return;
          }
        }
        done(std::move(results));
        FinishStashed(1);
      });
      ++ran;
    }
  }
  std::vector<std::pair<Completion, Results>> stashed;
  {
    std::lock_guard lock(stash_mu_);
    stashing_ = false;
    stashed.swap(stash_);
  }
  EngineFrame frame;  // users' completions: no switch may start from them
  for (auto& [done, results] : stashed) done(std::move(results));
  FinishStashed(stashed.size());
  return ran;
}

void KvcgEngine::FinishStashed(uint64_t count) {
  if (count == 0) return;
  if (inflight_batches_.fetch_sub(count, std::memory_order_acq_rel) == count) {
    std::lock_guard lock(inflight_mu_);
    inflight_cv_.notify_all();
  }
}

bool KvcgEngine::Replay(uint64_t* replayed, std::string* error) {
  // Size() = canonical size + the cache's presence delta; a replay changes
  // the first before CommitLog fixes the second, so Size() waits it out.
  std::lock_guard size_lock(size_mu_);
  Batch replay = canonical_->NewBatch();
  cache_.CollectLog(&replay);
  *replayed = replay.size();
  if (replay.empty()) return true;
  Results results = canonical_->Execute(std::move(replay));
  size_t failed = cache_.CommitLog(results);
  if (failed == 0) return true;
  // One retry of what failed (e.g. a transient device timeout).
  Batch again = canonical_->NewBatch();
  cache_.CollectLog(&again);
  results = canonical_->Execute(std::move(again));
  failed = cache_.CommitLog(results);
  if (failed == 0) return true;
  *error = std::to_string(failed) + " logged updates could not be replayed";
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].succeeded()) {
      *error += std::string(" (first error: ") + CodeName(results.code(i)) + ")";
      break;
    }
  }
  return false;
}

Status KvcgEngine::RunSwitch(std::shared_ptr<const Model> model, const std::string& reason,
                             SwitchRecord* out, std::unique_ptr<SnapshotReader>* snapshot) {
  if (tls_engine_depth != 0) {
    return Status::InvalidArgument(snapshot != nullptr
                                       ? "a snapshot cannot be opened inside a completion"
                                       : "a model switch or flush cannot run inside a completion");
  }
  std::lock_guard switch_lock(switch_mu_);
  SwitchRecord rec;
  rec.reason = reason;
  rec.start_unix_us = UnixUs();
  const uint64_t t0 = NowNs();
  Block();
  std::string error;
  rec.ok = Replay(&rec.replayed, &error);
  Status snapshot_status = Status::Ok();
  if (rec.ok && snapshot != nullptr) {
    snapshot_status = canonical_->OpenSnapshot(snapshot);
    if (!snapshot_status.ok()) error = "snapshot: " + snapshot_status.ToString();
  }
  if (rec.ok && model != nullptr) {
    router_.Install(model);
    std::lock_guard lock(stats_mu_);
    model_version_ = router_.version();
    model_desc_ = model->Describe();
    model_keys_ = model->KeyCount();
  }
  {
    std::lock_guard lock(stats_mu_);
    rec.version = model_version_;
    rec.model = model_desc_;
  }
  rec.deferred = Unblock();
  const uint64_t t1 = NowNs();
  rec.blocked_us = static_cast<double>(t1 - t0) / 1e3;
  if (rec.ok && model != nullptr) {
    rec.evicted = cache_.Evict(
        [&model](std::string_view key, uint64_t hash) { return model->IsHot(key, hash); });
  }
  rec.duration_us = static_cast<double>(NowNs() - t0) / 1e3;
  rec.error = error;
  RecordSwitch(rec);
  if (out != nullptr) *out = rec;
  if (!rec.ok) {
    return Status(Code::kUnavailable,
                  (snapshot != nullptr ? "snapshot aborted: " : "model switch aborted: ") + error);
  }
  return snapshot_status;
}

Status KvcgEngine::InstallModel(std::shared_ptr<const Model> model, const std::string& reason,
                                SwitchRecord* record) {
  if (cpu_only_) {
    return Status::InvalidArgument("hot-only mode has a fixed model (every key hot)");
  }
  if (model == nullptr) return Status::InvalidArgument("model must not be null");
  return RunSwitch(std::move(model), reason, record);
}

Status KvcgEngine::SwitchToShadowModel(SwitchRecord* record) {
  if (cpu_only_) {
    return Status::InvalidArgument("hot-only mode has a fixed model (every key hot)");
  }
  std::shared_ptr<const Model> model = router_.BuildShadow();
  router_.ResetTraining();
  return RunSwitch(std::move(model), "shadow", record);
}

Status KvcgEngine::Flush() { return RunSwitch(nullptr, "flush", nullptr); }

// Why inside the block and not Flush() then canonical_->OpenSnapshot(): after
// the unblock, hot hits change only the cache again (write-back) while misses
// and cold ops reach the canonical store, so that image could hold a cold
// write but not a hot one acknowledged before it was submitted (the
// conformance test SnapshotIsOneInstantWhileWritersRun caught that). Inside
// the block: batches arriving are parked until after the canonical call
// returns (out of the image); the drain has run every admitted hot op
// (misses and the ops queued behind them) and the replay has written every
// logged update to the canonical store, and nothing changes the cache until
// the unblock; what can still change the canonical store is cold ops in
// flight on it, which its OpenSnapshot puts wholly in or out at its instant
// T. So the image is the engine's state at T, with everything acknowledged
// before this call. After the replay the canonical store holds exactly the
// present keys (the cache only caches it, also in hot-only mode, where every
// key enters the cache through a miss the canonical store ran), so the size
// is exact. Write-through mode logs nothing; its hot updates are canonical
// ops the drain waits for. The block lasts the replay plus the canonical
// call (CPU: one shard lock each; GPU: copying the index).
Status KvcgEngine::OpenSnapshot(std::unique_ptr<SnapshotReader>* out) {
  out->reset();
  return RunSwitch(nullptr, "snapshot", nullptr, out);
}

void KvcgEngine::PeriodicSwitcher() {
  const auto period = std::chrono::milliseconds(config_.router.switch_period_ms);
  std::unique_lock lock(periodic_mu_);
  while (!periodic_cv_.wait_for(lock, period, [this] { return stopping_; })) {
    if (router_.samples() < std::max<uint64_t>(config_.router.min_samples, 1)) continue;
    lock.unlock();
    std::shared_ptr<const Model> model = router_.BuildShadow();
    router_.ResetTraining();
    RunSwitch(std::move(model), "periodic", nullptr);
    lock.lock();
  }
}

void KvcgEngine::RecordSwitch(const SwitchRecord& record) {
  std::lock_guard lock(stats_mu_);
  ++switch_count_;
  switches_.push_back(record);
  if (switches_.size() > kSwitchHistory) switches_.pop_front();
}

}  // namespace kvcg::engine
