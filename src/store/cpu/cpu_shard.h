// CpuShard: one shard of the CPU store — its lock, its table, the bytes its
// entries are charged, and the snapshot generation it was last captured for.
//
// A separate header because two parts of the CPU backend work on shards: the
// store's operations (cpu_store.h) and the snapshot machinery
// (cpu_snapshot.h), which copies a shard before the first write that follows
// a snapshot's instant.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "store/cpu/rw_spin_lock.h"
#include "store/cpu/shard_table.h"

namespace kvcg::store::cpu {

// A shard's eviction pool (cpu_eviction.cc): the best eviction candidates
// sampled from it so far, by ascending score (Redis's EVPOOL_SIZE entries).
struct EvictionPool {
  struct Candidate {
    uint64_t score = 0;  // higher = evict sooner
    uint64_t hash = 0;
    std::string key;     // its buffer is reused: no allocation per eviction once warm
  };
  static constexpr size_t kSize = 16;
  Candidate entries[kSize];
  size_t size = 0;
};

// Adds one to a counter only its shard's writer changes (the write lock
// held): a load and a store, no locked RMW.
inline void Bump(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

struct alignas(64) CpuShard {
  RwSpinLock lock;
  // Bytes this shard may still charge under the memory limit without
  // borrowing from the store's pool (cpu_budget.cc). Changed by the owner
  // under `lock`; DrainCredits may take it at any time. Beside the lock: the
  // writer owns this cache line already.
  std::atomic<int64_t> credit{0};
  ShardTable table;
  uint64_t bytes = 0;  // charged bytes of this shard's entries; under `lock`
  // Entries with an expire-at. Written under `lock`; read without it by the
  // active-expiry sweep (to skip shards with none) and Keyspace().
  std::atomic<uint64_t> volatile_keys{0};
  // Keys this shard evicted and reclaimed as expired (INFO stats). Per shard
  // so that a cache evicting on every insert shares no counter; written
  // under `lock`, summed without it by Keyspace().
  std::atomic<uint64_t> evicted_keys{0};
  std::atomic<uint64_t> expired_keys{0};
  // Under `lock`. Every snapshot of generation <= this one has its copy of
  // this shard (or no longer needs one), so a write whose snapshot
  // generation equals it may change the table without copying it first (see
  // SnapshotRegistry::BeforeWrite).
  uint64_t captured_generation = 0;
  EvictionPool pool;  // under `lock` (write)
};

}  // namespace kvcg::store::cpu
