// CpuStore's active expiry: reclaiming expired keys nobody accesses.
//
// Lazy expiry (cpu_store.cc) keeps expired keys invisible; this sweep frees
// their memory. Redis samples 20 keys of its "expires" dictionary per round;
// kvcg has no second index of volatile keys (it would cost every write with
// a TTL a second hash-table update), so the sweep walks the table by slot
// instead, skipping every shard whose volatile-key count is zero — a store
// with no TTLs pays nothing. A step holds one shard's write lock for at most
// kSlotsPerStep slots (a few microseconds), so writers on that shard wait no
// longer than for a few ordinary ops. Each period (1000 / active_expiry_hz
// ms) the sweeper works for at most a quarter of it (Redis's
// ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC is 25) and resumes where it stopped, so
// a full pass over a large table spreads across periods.
//
// The average TTL reported in INFO keyspace is estimated on the way, as
// Redis does: each pass's mean remaining TTL of the volatile keys it saw is
// blended into a running average. The remaining TTLs are summed as doubles:
// an expire-at may be as late as 2^63 ms (PXAT accepts INT64_MAX), and a
// handful of such keys would overflow a 64-bit integer sum.
#include <chrono>
#include <mutex>

#include "store/cpu/cpu_store.h"

namespace kvcg::store::cpu {

namespace {
constexpr size_t kSlotsPerStep = 4096;

uint64_t MeanMs(double sum, uint64_t n) {
  const double mean = sum / double(n);
  return mean >= 9.2e18 ? uint64_t(9.2e18) : uint64_t(mean);  // (a uint64_t holds the clamp)
}
}  // namespace

uint64_t CpuStore::SweepSlots(Shard& shard, size_t* slot, size_t max_slots, uint64_t now,
                              double* ttl_sum, uint64_t* ttl_n) {
  std::unique_lock lock(shard.lock);
  ShardTable& table = shard.table;
  size_t i = *slot;
  if (i >= table.slot_count()) i = 0;  // the table shrank (Clear) since the last step
  const size_t end = std::min(table.slot_count(), i + max_slots);
  uint64_t removed = 0;
  while (i < end) {
    if (!table.Occupied(i)) {
      ++i;
      continue;
    }
    const uint64_t at = table.at(int64_t(i)).expire_at;
    if (IsExpired(at, now)) {
      RemoveAt(shard, int64_t(i), /*expired=*/true);
      ++removed;
      continue;  // Erase may have pulled a later entry into slot i
    }
    if (at != kNoExpiry) {
      *ttl_sum += double(at - now);
      ++*ttl_n;
    }
    ++i;
  }
  *slot = end >= table.slot_count() ? 0 : end;
  return removed;
}

uint64_t CpuStore::ReclaimExpired() {
  const uint64_t now = config_.clock();
  uint64_t removed = 0, ttl_n = 0;
  double ttl_sum = 0;
  for (uint32_t s = 0; s < shard_count_; ++s) {
    Shard& shard = shards_[s];
    if (shard.volatile_keys.load(std::memory_order_relaxed) == 0) continue;
    size_t slot = 0;
    do {
      removed += SweepSlots(shard, &slot, kSlotsPerStep, now, &ttl_sum, &ttl_n);
    } while (slot != 0);
  }
  avg_ttl_ms_.store(ttl_n == 0 ? 0 : MeanMs(ttl_sum, ttl_n), std::memory_order_relaxed);
  return removed;
}

Status CpuStore::ApplyActiveExpiryHz(uint32_t hz) {
  {
    std::lock_guard lock(expiry_mu_);
    expiry_hz_ = hz;
    if (hz != 0 && !sweeper_.joinable()) sweeper_ = std::thread([this] { ActiveExpiryLoop(); });
  }
  expiry_cv_.notify_all();  // a waiting sweeper takes the new period now
  return Status::Ok();
}

void CpuStore::ActiveExpiryLoop() {
  using Clock = std::chrono::steady_clock;
  uint32_t shard = 0;
  size_t slot = 0;
  double ttl_sum = 0;  // of the pass in progress
  uint64_t ttl_n = 0;
  uint64_t pass_clears = clears_.load(std::memory_order_relaxed);  // when it began
  std::unique_lock lock(expiry_mu_);
  while (!stopping_) {
    // Rate 0: idle until a rate is set. A rate change restarts the wait with
    // the new period.
    const uint32_t hz = expiry_hz_;
    if (hz == 0) {
      expiry_cv_.wait(lock, [&] { return stopping_ || expiry_hz_ != 0; });
      continue;
    }
    const auto period = std::chrono::microseconds(1000000 / hz);
    if (expiry_cv_.wait_for(lock, period, [&] { return stopping_ || expiry_hz_ != hz; })) continue;
    lock.unlock();
    const auto deadline = Clock::now() + period / 4;
    const uint64_t now = config_.clock();
    // At most one pass per period: visit each shard once, or stop at the
    // deadline and resume there next period.
    for (uint32_t visited = 0; visited < shard_count_ && Clock::now() < deadline; ++visited) {
      Shard& s = shards_[shard];
      if (s.volatile_keys.load(std::memory_order_relaxed) != 0) {
        do {
          SweepSlots(s, &slot, kSlotsPerStep, now, &ttl_sum, &ttl_n);
        } while (slot != 0 && Clock::now() < deadline);
        if (slot != 0) break;  // out of time inside this shard
      } else {
        slot = 0;  // (its keys expired or were deleted since the last step)
      }
      if (++shard == shard_count_) {  // a pass ended: blend its mean TTL in
        shard = 0;
        const uint64_t clears = clears_.load(std::memory_order_relaxed);
        if (clears != pass_clears) ttl_n = 0;  // it partly saw keys that are gone
        pass_clears = clears;
        if (ttl_n != 0) {
          const uint64_t mean = MeanMs(ttl_sum, ttl_n);
          const uint64_t old = avg_ttl_ms_.load(std::memory_order_relaxed);
          avg_ttl_ms_.store(old == 0 ? mean : (old / 50) * 49 + mean / 50, std::memory_order_relaxed);
        }
        ttl_sum = 0;
        ttl_n = 0;
      }
    }
    lock.lock();
  }
}

KeyspaceStats CpuStore::Keyspace() const {
  KeyspaceStats stats;
  stats.keys = Size();
  for (uint32_t s = 0; s < shard_count_; ++s) {
    stats.volatile_keys += shards_[s].volatile_keys.load(std::memory_order_relaxed);
  }
  stats.avg_ttl_ms = stats.volatile_keys == 0 ? 0 : avg_ttl_ms_.load(std::memory_order_relaxed);
  for (uint32_t s = 0; s < shard_count_; ++s) {
    stats.expired_keys += shards_[s].expired_keys.load(std::memory_order_relaxed);
    stats.evicted_keys += shards_[s].evicted_keys.load(std::memory_order_relaxed);
  }
  return stats;
}

}  // namespace kvcg::store::cpu
