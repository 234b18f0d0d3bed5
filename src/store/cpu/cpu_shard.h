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

struct alignas(64) CpuShard {
  RwSpinLock lock;
  ShardTable table;
  uint64_t bytes = 0;  // charged bytes of this shard's entries; under `lock`
  // Entries with an expire-at. Written under `lock`; read without it by the
  // active-expiry sweep (to skip shards with none) and Keyspace().
  std::atomic<uint64_t> volatile_keys{0};
  // Under `lock`. Every snapshot of generation <= this one has its copy of
  // this shard (or no longer needs one), so a write whose snapshot
  // generation equals it may change the table without copying it first (see
  // SnapshotRegistry::BeforeWrite).
  uint64_t captured_generation = 0;
  EvictionPool pool;  // under `lock` (write)
};

}  // namespace kvcg::store::cpu
