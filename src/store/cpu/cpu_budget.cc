// CpuStore's capacity accounting: Config::max_keys and the memory limit
// (max_memory_bytes / SetMemoryLimit) with no shared write on the common
// path.
//
// Keys. max_keys is exact: a global counter (reserved_keys_), reserved
// before a new key is stored and rolled back on overshoot — touched only
// when max_keys is set.
//
// Bytes. A write that would keep one global byte counter exact pays a
// contended atomic on every insert, delete and eviction: with 16 threads
// evicting, that one cache line was what stopped the store scaling past
// four threads (docs/BENCHMARKS.md 4c). So the limit is split like a
// per-CPU counter: each shard holds a *credit* (bytes it may still charge
// without asking anyone), and the global pool_ holds the rest, so that
//     pool_ + sum(shard.credit) + sum(shard.bytes) == limit
// at every instant a shard lock is not held mid-update. MemoryBytes()
// (sum of shard.bytes) therefore never passes the limit.
//  * Charging (Reserve) takes the shard's credit; only when that is short
//    does it borrow from pool_, with one CAS, the shortfall plus a refill
//    while pool_ is large, the exact shortfall near the limit.
//  * Releasing (Release: a delete, an eviction, a value that shrinks) adds
//    to the credit; a credit grown past the hoard (limit / (shards * 64):
//    all hoards together are at most 1/64 of the limit) goes back to pool_
//    down to half of it. A hoard under 4 KiB (a limit under 256 KiB per
//    shard) is 0: no refills, every release goes back whole, so the limit
//    is used exactly — it is one CAS per insert or delete under the limit,
//    which is the cost of exactness, and none in a full cache (below).
//  * A cache in steady state touches no shared line: an insert finds no
//    credit and an empty pool (one read of a line nobody writes), evicts
//    from its own shard (cpu_eviction.cc) into that shard's credit, and is
//    paid from it. Eviction for room keeps the freed bytes in the shard
//    (Release with settle = false) for exactly that reason.
//  * Exactness where it is a contract: under noeviction a write is refused
//    only when the whole limit is in use — a failed borrow first drains
//    every shard's credit into the pool (DrainCredits; lock-free, so it may
//    run under a shard lock) and tries once more. Under an evicting policy a
//    cache may start evicting while up to 1/64 of the limit sits in other
//    shards' credits (Redis, too, evicts by an approximate measure).
//  * Credits are atomics in the shard's first cache line (beside its lock,
//    already owned by the writer): the owner changes its credit under the
//    shard lock with one uncontended RMW; DrainCredits may take it at any
//    time with an exchange.
// An unlimited store keeps counting the same way, against an effective
// limit of 2^62, so a limit set later (SetMemoryLimit) is a change of the
// pool by the difference, never a recount racing with writers.
#include <algorithm>
#include <mutex>

#include "store/cpu/cpu_store.h"

namespace kvcg::store::cpu {

namespace {
constexpr int64_t kUnlimited = int64_t{1} << 62;
// Below this a shard keeps no credit at all (a small limit is then exact;
// see the top of the file).
constexpr int64_t kMinHoard = 4096;
int64_t Effective(uint64_t max) { return max == 0 ? kUnlimited : static_cast<int64_t>(max); }
}  // namespace

int64_t CpuStore::HoardMax() const {
  const int64_t hoard = Effective(max_memory_bytes_.load(std::memory_order_relaxed)) / (int64_t{shard_count_} * 64);
  return hoard >= kMinHoard ? hoard : 0;
}

void CpuStore::EnableAccounting() {
  if (limited_.load(std::memory_order_relaxed)) return;
  // Every shard's write lock at once (in index order; nothing else holds two
  // shard locks), so the sums are exact and no write is half counted; no
  // credit exists yet (Reserve charges none while !limited_).
  for (uint32_t s = 0; s < shard_count_; ++s) shards_[s].lock.lock();
  int64_t keys = 0, bytes = 0;
  for (uint32_t s = 0; s < shard_count_; ++s) {
    keys += static_cast<int64_t>(shards_[s].table.size());
    bytes += static_cast<int64_t>(shards_[s].bytes);
  }
  reserved_keys_.store(keys, std::memory_order_relaxed);
  pool_.store(Effective(max_memory_bytes_.load(std::memory_order_relaxed)) - bytes, std::memory_order_relaxed);
  limited_.store(true, std::memory_order_relaxed);
  for (uint32_t s = shard_count_; s-- > 0;) shards_[s].lock.unlock();
}

void CpuStore::ChangeLimit(uint64_t max_memory_bytes) {
  const uint64_t before = max_memory_bytes_.exchange(max_memory_bytes, std::memory_order_relaxed);
  if (!limited_.load(std::memory_order_relaxed)) return;  // EnableAccounting reads the new limit
  pool_.fetch_add(Effective(max_memory_bytes) - Effective(before), std::memory_order_relaxed);
  // Credits were sized for the old limit (and are huge after none).
  DrainCredits();
}

CpuStore::Reservation CpuStore::Reserve(Shard& shard, int64_t keys, int64_t bytes) {
  if (!limited_.load(std::memory_order_relaxed)) return Reservation::kReserved;
  if (keys > 0 && config_.max_keys != 0) {
    const int64_t before = reserved_keys_.fetch_add(keys, std::memory_order_relaxed);
    if (before + keys > static_cast<int64_t>(config_.max_keys)) {
      reserved_keys_.fetch_sub(keys, std::memory_order_relaxed);
      return Reservation::kKeysFull;
    }
  }
  if (bytes > 0 && !TakeCredit(shard, bytes)) {
    if (keys > 0 && config_.max_keys != 0) reserved_keys_.fetch_sub(keys, std::memory_order_relaxed);
    return Reservation::kBytesFull;
  }
  return Reservation::kReserved;
}

bool CpuStore::TakeCredit(Shard& shard, int64_t bytes) {
  for (bool drained = false;;) {
    int64_t credit = shard.credit.load(std::memory_order_relaxed);
    while (credit >= bytes) {
      if (shard.credit.compare_exchange_weak(credit, credit - bytes, std::memory_order_relaxed)) return true;
    }
    // Borrow the shortfall (plus a refill while the pool is far from empty).
    const int64_t hoard = HoardMax();
    int64_t avail = pool_.load(std::memory_order_relaxed);
    bool borrowed = false;
    while (avail > 0) {
      const int64_t refill = hoard > 0 && avail > 16 * hoard ? hoard / 2 : 0;
      const int64_t take = std::min(avail, bytes - credit + refill);
      if (pool_.compare_exchange_weak(avail, avail - take, std::memory_order_relaxed)) {
        shard.credit.fetch_add(take, std::memory_order_relaxed);
        borrowed = true;
        break;
      }
    }
    if (borrowed) continue;  // enough now, unless a drain took the credit meanwhile
    // Nothing to borrow. An evicting store makes room in this shard (the
    // caller evicts); a refusing one first gathers every shard's credit, so
    // it refuses only when the whole limit is in use.
    if (Evicting() || drained) return false;
    DrainCredits();
    drained = true;
  }
}

void CpuStore::Release(Shard& shard, int64_t keys, int64_t bytes, bool settle) {
  if (!limited_.load(std::memory_order_relaxed)) return;
  if (keys > 0 && config_.max_keys != 0) reserved_keys_.fetch_sub(keys, std::memory_order_relaxed);
  if (bytes <= 0) return;
  int64_t credit = shard.credit.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (!settle) return;
  const int64_t hoard = HoardMax();
  while (credit > hoard) {
    if (shard.credit.compare_exchange_weak(credit, hoard / 2, std::memory_order_relaxed)) {
      pool_.fetch_add(credit - hoard / 2, std::memory_order_relaxed);
      return;
    }
  }
}

void CpuStore::ReturnCredit(Shard& shard) {
  const int64_t credit = shard.credit.exchange(0, std::memory_order_relaxed);
  if (credit != 0) pool_.fetch_add(credit, std::memory_order_relaxed);
}

void CpuStore::DrainCredits() {
  for (uint32_t s = 0; s < shard_count_; ++s) {
    if (shards_[s].credit.load(std::memory_order_relaxed) != 0) ReturnCredit(shards_[s]);
  }
}

}  // namespace kvcg::store::cpu
