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

}  // namespace

CpuStore::CpuStore(const Config& config)
    : config_(config),
      shards_(std::make_unique<Shard[]>(ShardCountFor(config))),
      shard_count_(ShardCountFor(config)),
      shard_mask_(shard_count_ - 1),
      shard_shift_(64 - std::countr_zero(shard_count_)),
      limited_(config.max_keys != 0 || config.max_memory_bytes != 0),
      snapshots_(shards_.get(), shard_count_) {
  if (shard_count_ == 1) shard_shift_ = 0;  // (hash >> 64) is undefined; mask is 0 anyway
  const size_t per_shard = config.expected_keys / shard_count_ + 1;
  for (uint32_t i = 0; i < shard_count_; ++i) shards_[i].table.Reset(per_shard);
}

void CpuStore::Submit(Batch batch, Completion done) {
  // One builder per batch: values are copied once, into its arena (no
  // allocation per op); the views handed out point there.
  ResultsBuilder results;
  results.Reset(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) ExecuteOne(batch, i, Out{&results, i});
  done(results.Finish());
}

void CpuStore::ExecuteOne(const Batch& batch, size_t i, Out out) {
  const OpType type = batch.type(i);
  const std::string_view key = batch.key(i);
  const std::string_view value = batch.value(i);
  const Code check = CheckOperation(config_, batch, i);
  if (check != Code::kOk) {
    out.Code(check);
    return;
  }
  const uint64_t hash = config_.hash(key);
  Shard& shard = ShardFor(hash);
  switch (type) {
    case OpType::kGet:
      Get(shard, hash, key, out);
      return;
    case OpType::kPut:
      Put(shard, hash, key, value, out);
      return;
    case OpType::kDelete:
      Delete(shard, hash, key, out);
      return;
    case OpType::kCompareAndSwap: {
      const std::string_view expected = batch.expected(i);
      CompareAndSwap(shard, hash, key, value, batch.expect_absent(i) ? nullptr : &expected, out);
      return;
    }
  }
  out.Code(Code::kInvalidArgument);
}

void CpuStore::Get(Shard& shard, uint64_t hash, std::string_view key, Out out) {
  std::shared_lock lock(shard.lock);
  const int64_t index = shard.table.Find(hash, key);
  if (index < 0) {
    out.Code(Code::kNotFound);
    return;
  }
  out.Value(Code::kOk, shard.table.at(index).value);  // copied under the lock: see shard_table.h
}

void CpuStore::Put(Shard& shard, uint64_t hash, std::string_view key, std::string_view value,
                   Out out) {
  std::unique_lock lock(shard.lock);
  Store(shard, hash, shard.table.Find(hash, key), key, value, out);
}

void CpuStore::CompareAndSwap(Shard& shard, uint64_t hash, std::string_view key,
                              std::string_view value, const std::string_view* expected,
                              Out out) {
  std::unique_lock lock(shard.lock);
  const int64_t index = shard.table.Find(hash, key);
  const bool matches = index < 0 ? expected == nullptr
                                 : expected != nullptr && shard.table.at(index).value == *expected;
  if (matches) {
    Store(shard, hash, index, key, value, out);
  } else if (index < 0) {
    out.Code(Code::kNotFound);
  } else {
    out.Value(Code::kOk, shard.table.at(index).value);
  }
}

void CpuStore::Store(Shard& shard, uint64_t hash, int64_t index, std::string_view key,
                     std::string_view value, Out out) {
  if (index < 0) {
    const uint64_t charge = Charge(key, value);
    if (!Reserve(1, static_cast<int64_t>(charge))) {
      out.Code(Code::kCapacityExhausted);
      return;
    }
    snapshots_.BeforeWrite(shard);
    shard.table.InsertAbsent(hash, key, value);
    shard.bytes += charge;
    out.Code(Code::kNotFound);
    return;
  }
  ShardTable::Entry& entry = shard.table.at(index);
  const int64_t delta = static_cast<int64_t>(value.size()) - static_cast<int64_t>(entry.value.size());
  if (delta > 0 && !Reserve(0, delta)) {
    out.Code(Code::kCapacityExhausted);
    return;
  }
  if (delta < 0) Reserve(0, delta);  // releasing never fails
  snapshots_.BeforeWrite(shard);  // reads the table only: `entry` stays valid
  shard.bytes += delta;
  out.Value(Code::kOk, entry.value);  // the previous value, copied into the results' arena
  entry.value.assign(value);
}

void CpuStore::Delete(Shard& shard, uint64_t hash, std::string_view key, Out out) {
  std::unique_lock lock(shard.lock);
  const int64_t index = shard.table.Find(hash, key);
  if (index < 0) {
    out.Code(Code::kNotFound);
    return;
  }
  const uint64_t charge = Charge(shard.table.at(index).key, shard.table.at(index).value);
  out.Value(Code::kOk, shard.table.at(index).value);
  snapshots_.BeforeWrite(shard);
  shard.table.Erase(index, nullptr);
  shard.bytes -= charge;
  Reserve(-1, -static_cast<int64_t>(charge));
}

bool CpuStore::Reserve(int64_t keys, int64_t bytes) {
  if (!limited_) return true;
  if (keys != 0) {
    const int64_t before = reserved_keys_.fetch_add(keys, std::memory_order_relaxed);
    if (keys > 0 && config_.max_keys != 0 &&
        before + keys > static_cast<int64_t>(config_.max_keys)) {
      reserved_keys_.fetch_sub(keys, std::memory_order_relaxed);
      return false;
    }
  }
  if (bytes != 0) {
    const int64_t before = reserved_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    if (bytes > 0 && config_.max_memory_bytes != 0 &&
        before + bytes > static_cast<int64_t>(config_.max_memory_bytes)) {
      reserved_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
      if (keys != 0) reserved_keys_.fetch_sub(keys, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
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
    Reserve(-static_cast<int64_t>(shard.table.size()), -static_cast<int64_t>(shard.bytes));
    shard.table.Reset(16);
    shard.bytes = 0;
  }
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
