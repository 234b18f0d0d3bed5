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
//
// Cache mode: reconcile. Under a limit with an evicting policy (noeviction
// evicts nothing, and there the limit bounds the canonical store's data,
// so a write is refused by what is stored, not by what the cache holds
// at the moment) the canonical store evicts by the
// accesses it sees, but a hot key's reads are answered by the cache and
// never reach it, and a key it evicts would go on being served by the
// cache. So once a reconcile period (the router's switch period; 1 s when
// switching is manual) the housekeeper
//  1. touches: one GET per key the cache holds, as one canonical batch, so
//     hot keys look as recently used as they are (to the period; under an
//     LFU policy one access a period, which understates their frequency);
//  2. drops the cache entries of the keys that GET found absent (evicted, or
//     expired, since the cache took them): from then on they miss, as in
//     Redis. Between two reconciles an evicted key may still be served by
//     the cache — a bounded lag of one period, stated in docs/EVICTION.md;
//  3. charges the cache: its entries are copies (write-through), so the
//     canonical store is given the limit less the cache's bytes (never less
//     than half the limit), re-set when that moved by over 1/64 of the
//     limit. Both together then stay within the limit, to one period.
// Dropping a clean entry is always safe — the next operation on its key is
// a miss that reads the canonical store — so the reconcile needs no block.
#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

#include "common/thread_name.h"
#include "engine/kvcg_engine.h"

namespace kvcg::engine {

namespace {

// What the canonical store is given under `limit` while the hot cache holds
// `hot_bytes` of copies: the rest, but never less than a quarter of the
// limit. Why a quarter: the floor keeps a cache full of large copies from
// starving the canonical store, but it must let the two settle within the
// limit when every key is in both (hot-only mode), and a small key's cache
// entry (with its lock-free fast copy, hot_cache.h) costs up to about twice
// the canonical store's.
uint64_t CanonicalLimit(uint64_t limit, uint64_t hot_bytes) {
  return limit - std::min(hot_bytes, limit - limit / 4);
}

}  // namespace

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
  Status s;
  {
    std::lock_guard limit_lock(limit_mu_);
    // The cache's copies are charged from the start (as of the last
    // reconcile; none before the first) while the policy evicts.
    const bool evicting = Evicts(max_memory_bytes, policy);
    const uint64_t hot = evicting ? hot_bytes_.load() : 0;
    const uint64_t canonical_limit = CanonicalLimit(max_memory_bytes, hot);
    s = Replay(&replayed, &error) ? canonical_->SetMemoryLimit(canonical_limit, policy)
                                  : Status(Code::kUnavailable, "write-back failed: " + error);
    if (s.ok()) {
      limit_bytes_ = max_memory_bytes;
      limit_policy_ = policy;
      canonical_limit_ = canonical_limit;
      if (!evicting) hot_bytes_.store(0);
    }
  }
  if (s.ok()) cache_.SetWriteThrough(max_memory_bytes != 0 || config_.max_keys != 0);
  Unblock();
  if (s.ok()) {
    std::lock_guard lock(periodic_mu_);
    cache_mode_ = Evicts(max_memory_bytes, policy);
    StartHousekeeperLocked();
  }
  periodic_cv_.notify_all();
  return s;
}

void KvcgEngine::ReconcileCacheMode() {
  Batch touch = canonical_->NewBatch();
  uint64_t hot = cache_.CollectPresent(&touch);
  if (!touch.empty()) {
    const Results r = canonical_->Execute(touch);
    std::vector<std::string_view> absent;
    for (size_t i = 0; i < r.size(); ++i) {
      if (r.code(i) == Code::kNotFound) absent.push_back(touch.key(i));
    }
    std::sort(absent.begin(), absent.end());
    hot -= std::min(hot, cache_.DropKeys(absent));
  }
  std::lock_guard limit_lock(limit_mu_);
  // The limit went away (or stopped evicting) meanwhile.
  if (!Evicts(limit_bytes_, limit_policy_)) return;
  hot_bytes_.store(hot, std::memory_order_relaxed);
  const uint64_t want = CanonicalLimit(limit_bytes_, hot);
  const uint64_t moved = want > canonical_limit_ ? want - canonical_limit_ : canonical_limit_ - want;
  if (moved * 64 <= limit_bytes_) return;
  if (canonical_->SetMemoryLimit(want, limit_policy_).ok()) canonical_limit_ = want;
}

Status KvcgEngine::ApplyActiveExpiryHz(uint32_t hz) {
  Status s = canonical_->SetActiveExpiryHz(hz);
  if (!s.ok()) return s;
  {
    std::lock_guard lock(periodic_mu_);
    expiry_hz_ = hz;
    StartHousekeeperLocked();
  }
  periodic_cv_.notify_all();  // a waiting housekeeper takes the new period now
  return s;
}

void KvcgEngine::StartHousekeeperLocked() {
  if ((expiry_hz_ != 0 || cache_mode_) && !stopping_ && !housekeeper_.joinable()) {
    housekeeper_ = std::thread([this] {
      SetCurrentThreadName("kvcg-housekeep");
      Housekeeper();
    });
  }
}

void KvcgEngine::Housekeeper() {
  using Clock = std::chrono::steady_clock;
  const auto reconcile_period = std::chrono::milliseconds(
      config_.router.switch_period_ms != 0 ? config_.router.switch_period_ms : 1000);
  auto next_reconcile = Clock::now() + reconcile_period;
  std::unique_lock lock(periodic_mu_);
  while (!stopping_) {
    // Nothing to do: idle until a rate or a limit is set; a change of
    // either restarts the wait.
    const uint32_t hz = expiry_hz_;
    const bool cache_mode = cache_mode_;
    if (hz == 0 && !cache_mode) {
      periodic_cv_.wait(lock, [&] { return stopping_ || expiry_hz_ != 0 || cache_mode_; });
      next_reconcile = Clock::now() + reconcile_period;
      continue;
    }
    const auto period = hz != 0 ? std::chrono::microseconds(1'000'000 / hz)
                                : std::chrono::duration_cast<std::chrono::microseconds>(reconcile_period);
    if (periodic_cv_.wait_for(lock, period, [&] {
          return stopping_ || expiry_hz_ != hz || cache_mode_ != cache_mode;
        })) {
      continue;
    }
    lock.unlock();
    if (hz != 0) cache_.DropExpired();
    if (cache_mode && Clock::now() >= next_reconcile) {
      ReconcileCacheMode();
      next_reconcile = Clock::now() + reconcile_period;
    }
    lock.lock();
  }
}

}  // namespace kvcg::engine
