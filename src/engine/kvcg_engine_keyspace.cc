// KvcgEngine: expiry and memory — Keyspace, ReclaimExpired, SetMemoryLimit
// and the hot cache's active-expiry sweeper (kvcg_engine.h).
//
// Why write back first. The hot cache is write-back: a hot key's latest
// value and expire-at may live only in the cache until the next replay, so
// the canonical store's counts (keys, volatile keys, what expired) would be
// off by the dirty entries. A Flush (the switch protocol without a model)
// makes the canonical store hold every key's current state; its counts are
// then the engine's.
//
// Why write-through under a memory limit. The canonical store evicts by
// what it sees: a key updated only in the cache would be charged stale
// bytes and could be evicted while the cache still serves it. Write-through
// sends every state-changing hot op to the canonical store (and lets it
// refuse one under noeviction before it is acknowledged).
#include <chrono>

#include "engine/kvcg_engine.h"

namespace kvcg::engine {

KeyspaceStats KvcgEngine::Keyspace() const {
  // Inside a completion the flush is refused (it could wait on this very
  // thread); the counts then leave out the unreplayed hot updates.
  auto* self = const_cast<KvcgEngine*>(this);
  if (!InEngineFrame() && cache_.dirty() != 0) self->Flush();
  return canonical_->Keyspace();
}

uint64_t KvcgEngine::ReclaimExpired() {
  // Keys whose current value only the cache held (dirty) expire there: they
  // become dirty tombstones, counted here, and the flush deletes the older
  // values the canonical store holds. The rest is the canonical store's: the
  // flush leaves no dirty entry, clean expired entries leave the cache (the
  // canonical store holds the same expire-at) and its pass counts them.
  size_t dirty = 0;
  cache_.DropExpired(&dirty);
  if (!InEngineFrame()) Flush();
  cache_.DropExpired();
  return dirty + canonical_->ReclaimExpired();
}

Status KvcgEngine::SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) {
  if (InEngineFrame()) {
    return Status::InvalidArgument("the memory limit cannot change inside a completion");
  }
  std::lock_guard switch_lock(switch_mu_);
  Block();  // quiescent: nothing pending, so the cache may change mode
  uint64_t replayed = 0;
  std::string error;
  Status s = Replay(&replayed, &error) ? canonical_->SetMemoryLimit(max_memory_bytes, policy)
                                       : Status(Code::kUnavailable, "write-back failed: " + error);
  if (s.ok()) cache_.SetWriteThrough(max_memory_bytes != 0 || config_.max_keys != 0);
  Unblock();
  return s;
}

Status KvcgEngine::SetActiveExpiryHz(uint32_t hz) {
  if (hz > kMaxActiveExpiryHz) {
    return Status::InvalidArgument("active expiry rate above " + std::to_string(kMaxActiveExpiryHz));
  }
  Status s = canonical_->SetActiveExpiryHz(hz);
  if (!s.ok()) return s;
  {
    std::lock_guard lock(periodic_mu_);
    expiry_hz_ = hz;
    if (hz != 0 && !sweeper_.joinable()) sweeper_ = std::thread([this] { ExpirySweeper(); });
  }
  periodic_cv_.notify_all();  // a waiting sweeper takes the new period now
  return s;
}

void KvcgEngine::ExpirySweeper() {
  std::unique_lock lock(periodic_mu_);
  while (!stopping_) {
    // Rate 0: idle until a rate is set; a rate change restarts the wait.
    const uint32_t hz = expiry_hz_;
    if (hz == 0) {
      periodic_cv_.wait(lock, [&] { return stopping_ || expiry_hz_ != 0; });
      continue;
    }
    const auto period = std::chrono::microseconds(1'000'000 / hz);
    if (periodic_cv_.wait_for(lock, period, [&] { return stopping_ || expiry_hz_ != hz; })) continue;
    lock.unlock();
    cache_.DropExpired();
    lock.lock();
  }
}

}  // namespace kvcg::engine
