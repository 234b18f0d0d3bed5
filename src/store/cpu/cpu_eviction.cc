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
// Eviction. Redis 7's performEvictions, with shards in place of databases:
// while the write does not fit, sample kSamples entries of a random shard
// (of one holding volatile keys for volatile-*), add them to a pool of the
// kPoolSize best candidates so far (kept across evictions, so good
// candidates seen earlier are not forgotten), and evict the pool's best.
// Before evicting, the candidate's score is recomputed under its shard's
// write lock: one read since it was sampled (its idle time reset) sends it
// back into the pool at its new place instead of out of the store — Redis
// evicts such a key anyway; this check is what keeps approximated LRU close
// to exact LRU with a pool. Random policies evict a random sampled entry.
// Scores: idle ms (LRU), 255 - decayed counter (LFU), and for volatile-ttl
// the nearest expire-at first. A candidate found expired is reclaimed as
// expired, not counted as evicted.
//
// Concurrency. One evictor at a time (evict_mu_, which also guards the
// pool); it takes shard locks one at a time and never while holding another,
// and writers call it holding no lock, so it cannot deadlock with them. An
// eviction is a write under the key's shard lock: a concurrent write to the
// same key is wholly before it (and loses its value to it, like any later
// DEL) or wholly after it (its result says the key was absent), never torn.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "store/cpu/cpu_store.h"

namespace kvcg::store::cpu {

namespace {

constexpr uint32_t kLfuInitVal = 5;     // Redis LFU_INIT_VAL
constexpr uint32_t kLfuLogFactor = 10;  // Redis lfu-log-factor default
constexpr uint32_t kLfuDecayMinutes = 1;  // Redis lfu-decay-time default

bool IsLfu(EvictionPolicy p) {
  return p == EvictionPolicy::kAllKeysLfu || p == EvictionPolicy::kVolatileLfu;
}
bool IsVolatile(EvictionPolicy p) {
  return p == EvictionPolicy::kVolatileLru || p == EvictionPolicy::kVolatileLfu ||
         p == EvictionPolicy::kVolatileRandom || p == EvictionPolicy::kVolatileTtl;
}
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
  if (IsLfu(p)) return 255 - LfuDecayed(word, now);
  return static_cast<uint32_t>(static_cast<uint32_t>(now) - word);  // idle ms
}

}  // namespace

uint32_t CpuStore::InitialAccess(uint64_t now) const {
  if (IsLfu(policy_.load(std::memory_order_relaxed))) return (Minutes16(now) << 8) | kLfuInitVal;
  return static_cast<uint32_t>(now);
}

void CpuStore::Touch(const ShardTable& table, int64_t index, uint64_t now) const {
  std::atomic<uint32_t>& word = table.access(index);
  const uint32_t old = word.load(std::memory_order_relaxed);
  uint32_t next;
  if (IsLfu(policy_.load(std::memory_order_relaxed))) {
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
  info->lfu = IsLfu(policy_.load(std::memory_order_relaxed));
  if (info->lfu) {
    info->frequency = LfuDecayed(word, now);
  } else {
    info->idle_ms = static_cast<uint32_t>(static_cast<uint32_t>(now) - word);
  }
  return Status::Ok();
}

void CpuStore::EnableAccounting() {
  if (limited_.load(std::memory_order_relaxed)) return;
  // Every shard's write lock at once (in index order; nothing else holds two
  // shard locks), so the sums are exact and no write is half counted.
  for (uint32_t s = 0; s < shard_count_; ++s) shards_[s].lock.lock();
  int64_t keys = 0, bytes = 0;
  for (uint32_t s = 0; s < shard_count_; ++s) {
    keys += static_cast<int64_t>(shards_[s].table.size());
    bytes += static_cast<int64_t>(shards_[s].bytes);
  }
  reserved_keys_.store(keys, std::memory_order_relaxed);
  reserved_bytes_.store(bytes, std::memory_order_relaxed);
  limited_.store(true, std::memory_order_relaxed);
  for (uint32_t s = shard_count_; s-- > 0;) shards_[s].lock.unlock();
}

Status CpuStore::SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) {
  std::lock_guard guard(limit_mu_);
  if (max_memory_bytes != 0) EnableAccounting();
  max_memory_bytes_.store(max_memory_bytes, std::memory_order_relaxed);
  const EvictionPolicy before = policy_.exchange(policy, std::memory_order_relaxed);
  if (IsLfu(before) != IsLfu(policy) || IsVolatile(before) != IsVolatile(policy) ||
      (before == EvictionPolicy::kVolatileTtl) != (policy == EvictionPolicy::kVolatileTtl)) {
    std::lock_guard evict(evict_mu_);
    pool_size_ = 0;  // scores of another kind
  }
  if (max_memory_bytes != 0 && policy != EvictionPolicy::kNoEviction) EnsureRoom(0, config_.clock());
  return Status::Ok();
}

bool CpuStore::EnsureRoom(uint64_t need, uint64_t now) {
  std::lock_guard guard(evict_mu_);
  for (;;) {
    const uint64_t max = max_memory_bytes_.load(std::memory_order_relaxed);
    const EvictionPolicy policy = policy_.load(std::memory_order_relaxed);
    if (max == 0) return true;  // the limit was lifted meanwhile
    if (policy == EvictionPolicy::kNoEviction || need > max) return false;
    const int64_t used = reserved_bytes_.load(std::memory_order_relaxed);
    if (used + static_cast<int64_t>(need) <= static_cast<int64_t>(max)) return true;
    if (!EvictOne(policy, now)) return false;
  }
}

bool CpuStore::EvictOne(EvictionPolicy policy, uint64_t now) {
  if (IsRandom(policy)) return EvictRandom(IsVolatile(policy), now);
  // Redis: populate, then take the pool's best that still exists; a pool
  // emptied by ghosts (keys deleted since) is populated again.
  for (int round = 0; round < 64; ++round) {
    if (!PopulatePool(policy, now) && pool_size_ == 0) return false;
    while (pool_size_ > 0) {
      PoolEntry& best = pool_[pool_size_ - 1];
      Shard& shard = ShardFor(best.hash);
      std::unique_lock lock(shard.lock);
      const int64_t index = shard.table.Find(best.hash, best.key);
      if (index < 0 || (IsVolatile(policy) && shard.table.at(index).expire_at == kNoExpiry)) {
        --pool_size_;  // a ghost: deleted (or persisted) since it was sampled
        continue;
      }
      const ShardTable::Entry& e = shard.table.at(index);
      if (IsExpired(e.expire_at, now)) {
        --pool_size_;
        RemoveAt(shard, index, /*expired=*/true);
        return true;
      }
      const uint64_t score =
          Score(policy, shard.table.access(index).load(std::memory_order_relaxed), e.expire_at, now);
      if (pool_size_ >= 2 && score < pool_[pool_size_ - 2].score) {
        // Accessed since it was sampled: back into the pool at its new rank.
        PoolEntry moved = std::move(best);
        moved.score = score;
        size_t k = pool_size_ - 1;
        while (k > 0 && pool_[k - 1].score > score) {
          std::swap(pool_[k], pool_[k - 1]);
          --k;
        }
        pool_[k] = std::move(moved);
        continue;
      }
      --pool_size_;
      RemoveAt(shard, index, /*expired=*/false);
      evicted_keys_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

bool CpuStore::PopulatePool(EvictionPolicy policy, uint64_t now) {
  const bool volatile_only = IsVolatile(policy);
  const uint32_t start = static_cast<uint32_t>(NextRandom(&evict_rng_) >> 32) & shard_mask_;
  for (uint32_t n = 0; n < shard_count_; ++n) {
    Shard& shard = shards_[(start + n) & shard_mask_];
    if (volatile_only && shard.volatile_keys.load(std::memory_order_relaxed) == 0) continue;
    std::shared_lock lock(shard.lock);
    const ShardTable& table = shard.table;
    if (table.size() == 0) continue;
    // Walk from a random slot until kSamples candidates (Redis's
    // dictGetSomeKeys walks buckets the same way); at most the whole table.
    const size_t slots = table.slot_count();
    size_t slot = NextRandom(&evict_rng_) & (slots - 1);
    size_t found = 0;
    for (size_t step = 0; step < slots && found < kSamples; ++step, slot = (slot + 1) & (slots - 1)) {
      if (!table.Occupied(slot)) continue;
      const ShardTable::Entry& e = table.at(int64_t(slot));
      if (volatile_only && e.expire_at == kNoExpiry) continue;
      ++found;
      const uint64_t score =
          Score(policy, table.access(int64_t(slot)).load(std::memory_order_relaxed), e.expire_at, now);
      const uint64_t hash = table.tag(slot);
      // Already pooled (sampled twice)? Refresh its score in place below.
      size_t k = 0;
      for (; k < pool_size_; ++k) {
        if (pool_[k].hash == hash && pool_[k].key == e.key) break;
      }
      if (k < pool_size_) {
        pool_[k].score = score;
        std::sort(pool_, pool_ + pool_size_, [](const PoolEntry& a, const PoolEntry& b) { return a.score < b.score; });
        continue;
      }
      if (pool_size_ == kPoolSize && score <= pool_[0].score) continue;  // worse than all pooled
      // Insert at its rank, dropping the worst when full (Redis's evictionPoolPopulate).
      size_t pos = pool_size_;
      if (pool_size_ == kPoolSize) {
        std::rotate(pool_, pool_ + 1, pool_ + kPoolSize);  // drop [0]; its buffer moves to the end
        pos = kPoolSize - 1;
      } else {
        ++pool_size_;
      }
      while (pos > 0 && pool_[pos - 1].score > score) {
        std::swap(pool_[pos], pool_[pos - 1]);
        --pos;
      }
      pool_[pos].score = score;
      pool_[pos].hash = hash;
      pool_[pos].key.assign(e.key);
    }
    return true;  // one shard per round, as Redis samples one database
  }
  return false;
}

bool CpuStore::EvictRandom(bool volatile_only, uint64_t now) {
  const uint32_t start = static_cast<uint32_t>(NextRandom(&evict_rng_) >> 32) & shard_mask_;
  for (uint32_t n = 0; n < shard_count_; ++n) {
    Shard& shard = shards_[(start + n) & shard_mask_];
    if (volatile_only && shard.volatile_keys.load(std::memory_order_relaxed) == 0) continue;
    std::unique_lock lock(shard.lock);
    ShardTable& table = shard.table;
    if (table.size() == 0) continue;
    const size_t slots = table.slot_count();
    size_t slot = NextRandom(&evict_rng_) & (slots - 1);
    for (size_t step = 0; step < slots; ++step, slot = (slot + 1) & (slots - 1)) {
      if (!table.Occupied(slot)) continue;
      const uint64_t at = table.at(int64_t(slot)).expire_at;
      if (volatile_only && at == kNoExpiry) continue;
      const bool expired = IsExpired(at, now);
      RemoveAt(shard, int64_t(slot), expired);
      if (!expired) evicted_keys_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

}  // namespace kvcg::store::cpu
