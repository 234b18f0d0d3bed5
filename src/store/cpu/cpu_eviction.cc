// CpuStore's cache mode: eviction under a memory limit (Redis's maxmemory
// and maxmemory-policy), and the per-key access words behind it.
//
// Access words. Every entry has a 32-bit word beside its tag
// (ShardTable::access), read the way Redis reads its 24-bit robj.lru:
//  * not an LFU policy: the LRU clock — the low 32 bits of the store's clock
//    in milliseconds at the last access (Redis keeps seconds in 24 bits; a
//    millisecond clock matters here because a cache turns over in seconds in
//    a benchmark, and 32 bits wrap after 49 days, past any useful idle time);
//  * an LFU policy: Redis's word exactly — bits 8..23 the last decrement
//    time in minutes (mod 2^16), bits 0..7 a logarithmic counter that starts
//    at 5 (LFU_INIT_VAL), grows with probability 1/((c-5)*10+1)
//    (lfu-log-factor 10) and loses one per idle minute (lfu-decay-time 1).
// Reads touch the word under the shard's shared lock with a relaxed load and
// a store only when the word changes, so a hot key read by many threads is
// written at most once per millisecond (LRU) or on a counter step (LFU), not
// on every read. Racing touches may lose one of two updates; like Redis's
// approximation this only blurs the order.
//
// Eviction. Redis 7's performEvictions, with shards in place of databases
// and one pool per shard. A write that does not fit evicts from its own
// shard, under the write lock it already holds: it samples kSamples entries
// of the shard (a bounded walk from a random slot) into the shard's pool of
// the EvictionPool::kSize best candidates seen so far (kept across
// evictions, so good candidates are not forgotten), evicts the pool's best,
// and looks again. The shard is the written key's, i.e. random, so this is
// Redis's "sample a few random keys" without a second lock, a global pool
// or a global lock. Before evicting, the candidate's score is recomputed:
// one read since it was sampled (its idle time reset) sends it back into
// the pool at its new rank instead of out of the store — Redis evicts such
// a key anyway; the re-check is what keeps approximated LRU close to exact
// LRU. Random policies evict a random entry of the shard. Scores: idle ms
// (LRU), 255 - decayed counter (LFU), the nearest expire-at (volatile-ttl).
// A candidate found expired is reclaimed as expired, not counted as
// evicted. A shard with no candidate (empty, or no volatile key under a
// volatile policy) hands over to EnsureRoom: with no lock held, it evicts
// from the first shard with a candidate, from a random one on (also what
// SetMemoryLimit uses to get down to a lowered limit).
//
// Concurrency. Eviction holds one shard lock, never two, and EnsureRoom is
// called holding none, so it cannot deadlock with writers. An eviction is a
// write under the key's shard lock: a concurrent write to the same key is
// wholly before it (and loses its value to it, like any later DEL) or wholly
// after it (its result says the key was absent), never torn; a write never
// evicts the key it is writing.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "store/cpu/cpu_store.h"

namespace kvcg::store::cpu {

namespace {

constexpr uint32_t kLfuInitVal = 5;     // Redis LFU_INIT_VAL
constexpr uint32_t kLfuLogFactor = 10;  // Redis lfu-log-factor default
constexpr uint32_t kLfuDecayMinutes = 1;  // Redis lfu-decay-time default

bool IsRandom(EvictionPolicy p) {
  return p == EvictionPolicy::kAllKeysRandom || p == EvictionPolicy::kVolatileRandom;
}

uint32_t Minutes16(uint64_t now_ms) { return static_cast<uint32_t>((now_ms / 60000) & 0xFFFF); }

// Redis's LFUDecrAndReturn: the counter less one per decay period elapsed.
uint32_t LfuDecayed(uint32_t word, uint64_t now_ms) {
  const uint32_t ldt = (word >> 8) & 0xFFFF, counter = word & 0xFF;
  const uint32_t now = Minutes16(now_ms);
  const uint32_t elapsed = now >= ldt ? now - ldt : 65535 - ldt + now;
  const uint32_t periods = elapsed / kLfuDecayMinutes;
  return periods > counter ? 0 : counter - periods;
}

// A per-thread xorshift generator: LFU increments are probabilistic and
// taken on the read path, where a shared generator would be a shared write.
uint64_t NextRandom(uint64_t* state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}
uint64_t ThreadRandom() {
  thread_local uint64_t state = 0x2545F4914F6CDD1Dull ^ reinterpret_cast<uintptr_t>(&state);
  return NextRandom(&state);
}

// Redis's LFULogIncr.
uint32_t LfuIncremented(uint32_t counter) {
  if (counter >= 255) return 255;
  const uint32_t base = counter > kLfuInitVal ? counter - kLfuInitVal : 0;
  // r < 1/(base*factor+1)  <=>  r * (base*factor+1) < 1, with r in [0,1) as 32 bits.
  const uint64_t r = ThreadRandom() >> 32;
  return r * (uint64_t{base} * kLfuLogFactor + 1) < (uint64_t{1} << 32) ? counter + 1 : counter;
}

// Eviction score of an entry: higher is evicted first.
uint64_t Score(EvictionPolicy p, uint32_t word, uint64_t expire_at, uint64_t now) {
  if (p == EvictionPolicy::kVolatileTtl) return ~expire_at;
  if (IsLfuPolicy(p)) return 255 - LfuDecayed(word, now);
  return static_cast<uint32_t>(static_cast<uint32_t>(now) - word);  // idle ms
}

}  // namespace

uint32_t CpuStore::InitialAccess(uint64_t now) const {
  if (IsLfuPolicy(policy_.load(std::memory_order_relaxed))) return (Minutes16(now) << 8) | kLfuInitVal;
  return static_cast<uint32_t>(now);
}

void CpuStore::Touch(const ShardTable& table, int64_t index, uint64_t now) const {
  std::atomic<uint32_t>& word = table.access(index);
  const uint32_t old = word.load(std::memory_order_relaxed);
  uint32_t next;
  if (IsLfuPolicy(policy_.load(std::memory_order_relaxed))) {
    next = (Minutes16(now) << 8) | LfuIncremented(LfuDecayed(old, now));
  } else {
    next = static_cast<uint32_t>(now);
  }
  if (next != old) word.store(next, std::memory_order_relaxed);
}

Status CpuStore::KeyAccess(std::string_view key, KeyAccessInfo* info) const {
  const uint64_t now = config_.clock();
  const uint64_t hash = config_.hash(key);
  Shard& shard = shards_[(hash >> shard_shift_) & shard_mask_];
  std::shared_lock lock(shard.lock);
  const int64_t index = shard.table.Find(hash, key);
  if (index < 0 || IsExpired(shard.table.at(index).expire_at, now)) {
    return Status(Code::kNotFound, "no such key");
  }
  const uint32_t word = shard.table.access(index).load(std::memory_order_relaxed);
  *info = KeyAccessInfo{};
  info->lfu = IsLfuPolicy(policy_.load(std::memory_order_relaxed));
  if (info->lfu) {
    info->frequency = LfuDecayed(word, now);
  } else {
    info->idle_ms = static_cast<uint32_t>(static_cast<uint32_t>(now) - word);
  }
  return Status::Ok();
}

Status CpuStore::SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) {
  std::lock_guard guard(limit_mu_);
  ChangeLimit(max_memory_bytes);
  if (max_memory_bytes != 0) EnableAccounting();
  const EvictionPolicy before = policy_.exchange(policy, std::memory_order_relaxed);
  if (before != policy) {
    // Pooled scores are of the old kind (idle time, counter, expire-at).
    for (uint32_t s = 0; s < shard_count_; ++s) {
      std::unique_lock lock(shards_[s].lock);
      shards_[s].pool.size = 0;
    }
  }
  if (Evicts(max_memory_bytes, policy)) EnsureRoom(0, config_.clock());
  return Status::Ok();
}

bool CpuStore::EnsureRoom(uint64_t need, uint64_t now) {
  bool drained = false;
  for (;;) {
    const uint64_t max = max_memory_bytes_.load(std::memory_order_relaxed);
    const EvictionPolicy policy = policy_.load(std::memory_order_relaxed);
    if (max == 0) return true;  // the limit was lifted meanwhile
    if (policy == EvictionPolicy::kNoEviction || need > max) return false;
    if (pool_.load(std::memory_order_relaxed) >= static_cast<int64_t>(need)) return true;
    if (!drained) {  // other shards' credits first: room nobody is using
      DrainCredits();
      drained = true;
      continue;
    }
    // One eviction from the first shard, from a random one on, that has a
    // candidate; a whole pass without one means there is none. The bytes it
    // frees go to the pool, where the caller borrows them.
    const uint32_t start = static_cast<uint32_t>(ThreadRandom() >> 32) & shard_mask_;
    bool evicted = false;
    for (uint32_t n = 0; n < shard_count_ && !evicted; ++n) {
      Shard& shard = shards_[(start + n) & shard_mask_];
      if (IsVolatilePolicy(policy) && shard.volatile_keys.load(std::memory_order_relaxed) == 0) continue;
      std::unique_lock lock(shard.lock);
      evicted = EvictFromShard(shard, policy, now, {}, ThreadRandom());
      if (evicted) ReturnCredit(shard);
    }
    if (!evicted) return false;
  }
}

bool CpuStore::EvictFromShard(Shard& shard, EvictionPolicy policy, uint64_t now, std::string_view keep,
                              uint64_t near) {
  ShardTable& table = shard.table;
  const bool volatile_only = IsVolatilePolicy(policy);
  if (table.size() == 0 || (volatile_only && shard.volatile_keys.load(std::memory_order_relaxed) == 0)) {
    return false;
  }
  auto remove = [&](int64_t index) {
    const bool expired = IsExpired(table.at(index).expire_at, now);  // reclaimed, not evicted
    RemoveAt(shard, index, expired, /*settle=*/false);  // the room is for this shard's writer
    if (!expired) Bump(shard.evicted_keys);
    return true;
  };
  const size_t slots = table.slot_count();
  if (IsRandom(policy)) {
    size_t slot = near & (slots - 1);
    for (size_t step = 0; step < slots; ++step, slot = (slot + 1) & (slots - 1)) {
      if (!table.Occupied(slot)) continue;
      const ShardTable::Entry& e = table.at(int64_t(slot));
      if ((volatile_only && e.expire_at == kNoExpiry) || e.key() == keep) continue;
      return remove(int64_t(slot));
    }
    return false;
  }
  // Populate (a bounded walk; the whole table if that found nothing, as a
  // sparse table may need), then take the pool's best that still exists.
  constexpr size_t kMaxWalk = 128;
  if (SampleShard(shard, policy, now, kMaxWalk, kSamples, near) == 0) {
    SampleShard(shard, policy, now, SIZE_MAX, kSamples, ThreadRandom());
  }
  EvictionPool& pool = shard.pool;
  while (pool.size > 0) {
    EvictionPool::Candidate& best = pool.entries[pool.size - 1];
    const int64_t index = table.Find(best.hash, best.key);
    if (index < 0 || (volatile_only && table.at(index).expire_at == kNoExpiry) || best.key == keep) {
      --pool.size;  // a ghost (deleted or persisted since it was sampled), or the caller's key
      continue;
    }
    const ShardTable::Entry& e = table.at(index);
    const uint64_t score = Score(policy, table.access(index).load(std::memory_order_relaxed), e.expire_at, now);
    if (pool.size >= 2 && score < pool.entries[pool.size - 2].score) {
      // Accessed since it was sampled: back into the pool at its new rank.
      best.score = score;
      for (size_t k = pool.size - 1; k > 0 && pool.entries[k - 1].score > score; --k) {
        std::swap(pool.entries[k], pool.entries[k - 1]);
      }
      continue;
    }
    --pool.size;
    return remove(index);
  }
  return false;
}

size_t CpuStore::SampleShard(Shard& shard, EvictionPolicy policy, uint64_t now, size_t max_walk, size_t want,
                             uint64_t near) {
  const bool volatile_only = IsVolatilePolicy(policy);
  const ShardTable& table = shard.table;
  EvictionPool& pool = shard.pool;
  // Walk from a random slot (Redis's dictGetSomeKeys walks buckets the same
  // way); at most the whole table.
  const size_t slots = table.slot_count();
  const size_t walk = std::min(slots, max_walk);
  size_t slot = near & (slots - 1);
  size_t found = 0;
  // The entry itself (72 bytes, another cache line) is read only when it
  // matters: for its expire-at under volatile policies, and for its key
  // when it enters the pool. allkeys-lru/lfu rank by the access word alone.
  const bool need_entry = volatile_only;
  for (size_t step = 0; step < walk && found < want; ++step, slot = (slot + 1) & (slots - 1)) {
    if (!table.Occupied(slot)) continue;
    const ShardTable::Entry* e = need_entry ? &table.at(int64_t(slot)) : nullptr;
    if (volatile_only && e->expire_at == kNoExpiry) continue;
    ++found;
    const uint64_t score = Score(policy, table.access(int64_t(slot)).load(std::memory_order_relaxed),
                                 e != nullptr ? e->expire_at : kNoExpiry, now);
    const uint64_t hash = table.tag(slot);
    size_t pos;
    size_t k = 0;
    for (; k < pool.size; ++k) {
      if (pool.entries[k].hash != hash) continue;
      if (e == nullptr) e = &table.at(int64_t(slot));
      if (pool.entries[k].key == e->key()) break;
    }
    const bool known = k < pool.size;
    if (known) {
      pos = k;  // sampled again: refresh its score and re-rank it below
    } else if (pool.size < EvictionPool::kSize) {
      pos = pool.size++;
    } else if (score > pool.entries[0].score) {
      pos = 0;  // replaces the worst (Redis's evictionPoolPopulate drops it too)
    } else {
      continue;  // worse than everything pooled
    }
    if (!known) {
      if (e == nullptr) e = &table.at(int64_t(slot));
      pool.entries[pos].hash = hash;
      pool.entries[pos].key.assign(e->key());
    }
    pool.entries[pos].score = score;
    while (pos + 1 < pool.size && pool.entries[pos + 1].score < score) {
      std::swap(pool.entries[pos], pool.entries[pos + 1]);
      ++pos;
    }
    while (pos > 0 && pool.entries[pos - 1].score > score) {
      std::swap(pool.entries[pos], pool.entries[pos - 1]);
      --pos;
    }
  }
  return found;
}

}  // namespace kvcg::store::cpu
