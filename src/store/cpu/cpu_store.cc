// CpuStore implementation; see cpu_store.h for the design.
#include "store/cpu/cpu_store.h"

#include <bit>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "store/backends.h"

namespace kvcg::store::cpu {

namespace {

uint32_t ShardCountFor(const Config& config) {
  if (config.cpu_shards != 0) return config.cpu_shards;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  return std::bit_ceil(64u * threads);
}

uint64_t Charge(std::string_view key, std::string_view value) {
  return key.size() + value.size() + CpuStore::kEntryOverhead;
}

// Passed as `expected` to CompareAndSwap for "only if absent" (compared by
// address, never read).
const std::string_view kAbsentMarker;

}  // namespace

CpuStore::CpuStore(const Config& config)
    : config_(config),
      shards_(std::make_unique<Shard[]>(ShardCountFor(config))),
      shard_count_(ShardCountFor(config)),
      shard_mask_(shard_count_ - 1),
      shard_shift_(64 - std::countr_zero(shard_count_)),
      limited_(false),
      max_memory_bytes_(config.max_memory_bytes),
      policy_(config.eviction),
      snapshots_(shards_.get(), shard_count_) {
  if (shard_count_ == 1) shard_shift_ = 0;  // (hash >> 64) is undefined; mask is 0 anyway
  // A memory limit caps the pre-size: eviction samples walk the tables, and
  // a table sized far beyond what the limit lets it hold would be sparse.
  uint64_t expected = config.expected_keys;
  if (config.max_memory_bytes != 0) expected = std::min<uint64_t>(expected, config.max_memory_bytes / (kEntryOverhead + 16));
  const size_t per_shard = expected / shard_count_ + 1;
  for (uint32_t i = 0; i < shard_count_; ++i) shards_[i].table.Reset(per_shard);
  if (config.max_keys != 0 || config.max_memory_bytes != 0) EnableAccounting();
  expiry_hz_ = config.active_expiry_hz;
  if (expiry_hz_ > 0) sweeper_ = std::thread([this] { ActiveExpiryLoop(); });
}

CpuStore::~CpuStore() {
  {
    std::lock_guard lock(expiry_mu_);
    stopping_ = true;
  }
  expiry_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

void CpuStore::Submit(Batch batch, Completion done) {
  // One builder per batch: values are copied once, into its arena (no
  // allocation per op); the views handed out point there. The clock is read
  // once per batch (a batch's ops all execute within this call).
  ResultsBuilder results;
  const size_t n = batch.size();
  results.Reset(n);
  const uint64_t now = config_.clock();
  // Each op's hash is taken kAhead ops before the op runs, and its shard
  // table's home lines requested then (ShardTable::PrefetchHome), so that a
  // batch's cache misses overlap instead of each op waiting for its own
  // tag and entry lines in turn. hashes[] is a ring of kAhead.
  constexpr size_t kAhead = 4;
  uint64_t hashes[kAhead];
  auto ahead = [&](size_t j) {
    const uint64_t h = config_.hash(batch.key(j));
    hashes[j % kAhead] = h;
    ShardFor(h).table.PrefetchHome(h);
  };
  for (size_t j = 0; j < n && j < kAhead; ++j) ahead(j);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t hash = hashes[i % kAhead];
    if (i + kAhead < n) ahead(i + kAhead);  // takes the slot `hash` came from
    ExecuteOne(batch, i, hash, now, Out{&results, i});
  }
  done(results.Finish());
}

void CpuStore::ExecuteOne(const Batch& batch, size_t i, uint64_t hash, uint64_t now, Out out) {
  const OpType type = batch.type(i);
  if (type == OpType::kNoop) {
    out.Code(Code::kNotFound);
    return;
  }
  const std::string_view key = batch.key(i);
  const Code check = CheckOperation(config_, batch, i);
  if (check != Code::kOk) {
    out.Code(check);
    return;
  }
  const Target t{ShardFor(hash), hash, key, now};
  switch (type) {
    case OpType::kGet:
      Get(t, out);
      return;
    case OpType::kPut:
      CompareAndSwap(t, batch.value(i), nullptr, batch.expire_at(i), out);  // see CompareAndSwap
      return;
    case OpType::kDelete:
      Delete(t, out);
      return;
    case OpType::kCompareAndSwap: {
      const std::string_view expected = batch.expected(i);
      const std::string_view* want = batch.expect_absent(i) ? &kAbsentMarker : &expected;
      CompareAndSwap(t, batch.value(i), want, batch.expire_at(i), out);
      return;
    }
    case OpType::kExpire:
      Expire(t, batch.expire_at(i), batch.condition(i), out);
      return;
    case OpType::kNoop:  // answered above
      break;
  }
  out.Code(Code::kInvalidArgument);
}

void CpuStore::Get(const Target& t, Out out) {
  std::shared_lock lock(t.shard.lock);
  const int64_t index = t.shard.table.Find(t.hash, t.key);
  // An expired entry reads as absent; a write (or the sweeper) removes it.
  if (index < 0 || IsExpired(t.shard.table.at(index).expire_at, t.now)) {
    out.Code(Code::kNotFound);
    return;
  }
  Touch(t.shard.table, index, t.now);
  out.Found(t.shard.table.at(index));  // copied under the lock: see shard_table.h
}

int64_t CpuStore::FindLive(const Target& t) {
  const int64_t index = t.shard.table.Find(t.hash, t.key);
  if (index >= 0 && IsExpired(t.shard.table.at(index).expire_at, t.now)) {
    RemoveAt(t.shard, index, /*expired=*/true);
    return -1;
  }
  if (index >= 0) Touch(t.shard.table, index, t.now);  // Redis's lookupKeyWrite touches too
  return index;
}

// PUT is a CAS whose condition always holds (expected == nullptr); a CAS
// that asks for an absent key passes &kAbsentMarker.
//
// When the write needs room the policy can make, the attempt changed
// nothing. It first evicts from its own shard, under the lock it holds (the
// shard is random, so its candidates are as good as any: cpu_eviction.cc),
// and runs again from the lookup. If the shard has no candidate, the lock is
// dropped (eviction elsewhere takes other shards' locks one at a time —
// holding this one meanwhile could deadlock with a writer there), keys are
// evicted from other shards, and the whole CAS runs again. Either way its
// result reflects whatever the eviction removed before it.
void CpuStore::CompareAndSwap(const Target& t, std::string_view value,
                              const std::string_view* expected, uint64_t expire_at, Out out) {
  constexpr int kMaxAttempts = 64;  // others may take the room we made; bounded
  constexpr int kMaxLocalEvictions = 64;
  for (int attempt = 0;; ++attempt) {
    uint64_t need = 0;
    {
      std::unique_lock lock(t.shard.lock);
      for (int local = 0;; ++local) {
        const int64_t index = FindLive(t);
        bool matches = true;
        if (expected == &kAbsentMarker) {
          matches = index < 0;
        } else if (expected != nullptr) {
          matches = index >= 0 && t.shard.table.at(index).value() == *expected;
        }
        if (matches) {
          need = Store(t, index, value, expire_at, out);
        } else if (index < 0) {
          out.Code(Code::kNotFound);
        } else {
          out.Found(t.shard.table.at(index));
        }
        if (need == 0) return;
        if (local >= kMaxLocalEvictions || need > max_memory_bytes_.load(std::memory_order_relaxed) ||
            !EvictFromShard(t.shard, policy_.load(std::memory_order_relaxed), t.now, t.key, t.hash)) {
          break;
        }
      }
    }
    if (attempt + 1 >= kMaxAttempts || !EnsureRoom(need, t.now)) {
      out.Code(Code::kCapacityExhausted);
      return;
    }
  }
}

uint64_t CpuStore::Store(const Target& t, int64_t index, std::string_view value, uint64_t expire_at,
                         Out out) {
  Shard& shard = t.shard;
  if (index < 0) {
    if (expire_at == kKeepExpiry) expire_at = kNoExpiry;  // a new key has none to keep
    if (IsExpired(expire_at, t.now)) {  // stored and expired at once: nothing to keep
      out.Code(Code::kNotFound);
      return 0;
    }
    const uint64_t charge = Charge(t.key, value);
    const Reservation r = Reserve(shard, 1, static_cast<int64_t>(charge));
    if (r != Reservation::kReserved) {
      if (r == Reservation::kBytesFull && Evicting()) return charge;
      out.Code(Code::kCapacityExhausted);
      return 0;
    }
    snapshots_.BeforeWrite(shard);
    ShardTable::Entry& entry = shard.table.InsertAbsent(t.hash, t.key, value, InitialAccess(t.now));
    SetExpireAt(shard, entry, expire_at);
    shard.bytes += charge;
    out.Code(Code::kNotFound);
    return 0;
  }
  ShardTable::Entry& entry = shard.table.at(index);
  if (expire_at == kKeepExpiry) expire_at = entry.expire_at;
  if (IsExpired(expire_at, t.now)) {
    out.Found(entry);
    RemoveAt(shard, index, /*expired=*/false);
    return 0;
  }
  const int64_t delta = static_cast<int64_t>(value.size()) - static_cast<int64_t>(entry.value().size());
  if (delta > 0) {
    const Reservation r = Reserve(shard, 0, delta);
    if (r != Reservation::kReserved) {
      if (r == Reservation::kBytesFull && Evicting()) return static_cast<uint64_t>(delta);
      out.Code(Code::kCapacityExhausted);
      return 0;
    }
  }
  if (delta < 0) Release(shard, 0, -delta);
  snapshots_.BeforeWrite(shard);  // reads the table only: `entry` stays valid
  shard.bytes += delta;
  out.Found(entry);  // the previous value, copied into the results' arena
  entry.bytes.AssignValue(value);
  SetExpireAt(shard, entry, expire_at);
  return 0;
}

void CpuStore::Delete(const Target& t, Out out) {
  std::unique_lock lock(t.shard.lock);
  const int64_t index = FindLive(t);
  if (index < 0) {
    out.Code(Code::kNotFound);
    return;
  }
  out.Found(t.shard.table.at(index));
  RemoveAt(t.shard, index, /*expired=*/false);
}

void CpuStore::Expire(const Target& t, uint64_t expire_at, ExpireCondition condition, Out out) {
  std::unique_lock lock(t.shard.lock);
  const int64_t index = FindLive(t);
  if (index < 0) {
    out.Code(Code::kNotFound);
    return;
  }
  ShardTable::Entry& entry = t.shard.table.at(index);
  out.Found(entry);
  if (expire_at == kKeepExpiry || !ExpireConditionHolds(condition, entry.expire_at, expire_at)) return;
  if (IsExpired(expire_at, t.now)) {  // Redis: an expire in the past deletes the key
    RemoveAt(t.shard, index, /*expired=*/false);
    return;
  }
  snapshots_.BeforeWrite(t.shard);
  SetExpireAt(t.shard, entry, expire_at);
}

void CpuStore::RemoveAt(Shard& shard, int64_t index, bool expired, bool settle) {
  const ShardTable::Entry& entry = shard.table.at(index);
  const uint64_t charge = Charge(entry.key(), entry.value());
  if (entry.expire_at != kNoExpiry) shard.volatile_keys.fetch_sub(1, std::memory_order_relaxed);
  snapshots_.BeforeWrite(shard);
  shard.table.Erase(index);
  shard.bytes -= charge;
  Release(shard, 1, static_cast<int64_t>(charge), settle);
  if (expired) Bump(shard.expired_keys);
}

void CpuStore::SetExpireAt(Shard& shard, ShardTable::Entry& entry, uint64_t expire_at) {
  const bool was = entry.expire_at != kNoExpiry, is = expire_at != kNoExpiry;
  if (was != is) shard.volatile_keys.fetch_add(is ? 1 : uint64_t(-1), std::memory_order_relaxed);
  entry.expire_at = expire_at;
}

uint64_t CpuStore::Size() const {
  uint64_t total = 0;
  for (uint32_t i = 0; i < shard_count_; ++i) {
    std::shared_lock lock(shards_[i].lock);
    total += shards_[i].table.size();
  }
  return total;
}

uint64_t CpuStore::MemoryBytes() const {
  uint64_t total = 0;
  for (uint32_t i = 0; i < shard_count_; ++i) {
    std::shared_lock lock(shards_[i].lock);
    total += shards_[i].bytes;
  }
  return total;
}

void CpuStore::Clear() {
  for (uint32_t i = 0; i < shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::unique_lock lock(shard.lock);
    snapshots_.BeforeWrite(shard);
    Release(shard, static_cast<int64_t>(shard.table.size()), static_cast<int64_t>(shard.bytes));
    shard.table.Reset(16);
    shard.bytes = 0;
    shard.volatile_keys.store(0, std::memory_order_relaxed);
  }
  // The TTL estimate described the keys just removed (Redis's FLUSHALL
  // resets avg_ttl too); the next sweep pass starts a new one.
  clears_.fetch_add(1, std::memory_order_relaxed);
  avg_ttl_ms_.store(0, std::memory_order_relaxed);
}

Status CpuStore::OpenSnapshot(std::unique_ptr<SnapshotReader>* out) {
  return snapshots_.Open(out);
}

StoreInfo CpuStore::Info() const {
  StoreInfo info;
  info.backend = Backend::kCpu;
  info.layout = config_.layout;
  info.device = "CPU (" + std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
  info.detail = "sharded hash map, " + std::to_string(shard_count_) + " shards";
  return info;
}

}  // namespace kvcg::store::cpu

namespace kvcg::store {

Status OpenCpuStore(const Config& config, std::unique_ptr<Store>* store) {
  *store = std::make_unique<cpu::CpuStore>(config);
  return Status::Ok();
}

}  // namespace kvcg::store
