// CpuStore: the canonical store's CPU backend — a sharded concurrent hash
// map holding every key under the full Store contract.
//
// Design. The key space is split by the high bits of the key's hash into a
// power-of-two number of shards (64 per hardware thread by default), each an
// open-addressing ShardTable behind its own readers–writer spin lock: there
// is no global lock, and with uniform keys two threads rarely meet on a
// shard. Every operation takes exactly one shard lock for its whole
// read-modify-write, which makes it linearizable; a batch runs its
// operations in order on the submitting thread, which gives same-key order
// inside a batch and across one submitter's batches for free. Submit
// therefore completes inline: the completion runs before Submit returns.
//
// Capacity. Config::max_keys and max_memory_bytes are enforced exactly with
// global reservation counters (reserve, then roll back on overshoot), used
// only when a limit is configured; otherwise only per-shard counters are
// touched, which keeps the read path free of shared writes.
//
// Snapshots. OpenSnapshot copies each shard at most once, the first time a
// write touches it after the snapshot's instant or when the reader gets to
// it (cpu_snapshot.h). A write's extra cost with no snapshot open is one
// relaxed atomic load under its shard lock.
//
// It is what runs when there is no GPU, and the reference the GPU backend
// must match (the conformance suite runs both).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvcg/store.h"
#include "store/cpu/cpu_shard.h"
#include "store/cpu/cpu_snapshot.h"

namespace kvcg::store::cpu {

class CpuStore final : public Store {
 public:
  explicit CpuStore(const Config& config);
  ~CpuStore() override = default;

  void Submit(Batch batch, Completion done) override;
  uint64_t Size() const override;
  uint64_t MemoryBytes() const override;
  void Clear() override;
  StoreInfo Info() const override;
  Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out) override;
  // Store::Scan (cpu_scan.cc): shard by shard, home slots in Redis's
  // reverse-binary order.
  Status Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next) override;

  // Bytes charged per entry beyond its key and value: the tag, two string
  // headers and the table's slack, rounded up. Public for tests.
  static constexpr uint64_t kEntryOverhead = 96;

 private:
  using Shard = CpuShard;

  // Where one op's result goes: slot i of a ResultsBuilder.
  struct Out {
    ResultsBuilder* b;
    size_t i;
    void Code(kvcg::Code c) const { b->SetCode(i, c); }
    void Value(kvcg::Code c, std::string_view v) const { b->SetValue(i, c, v); }
  };
  void ExecuteOne(const Batch& batch, size_t i, Out out);
  void Get(Shard& shard, uint64_t hash, std::string_view key, Out out);
  void Put(Shard& shard, uint64_t hash, std::string_view key, std::string_view value,
           Out out);
  void Delete(Shard& shard, uint64_t hash, std::string_view key, Out out);
  void CompareAndSwap(Shard& shard, uint64_t hash, std::string_view key, std::string_view value,
                      const std::string_view* expected, Out out);
  // Stores `value` at entry `index` (or inserts when index < 0) after
  // checking capacity; fills `result` with the previous value or an error.
  void Store(Shard& shard, uint64_t hash, int64_t index, std::string_view key,
             std::string_view value, Out out);

  // Reserve room for `keys` more keys and `bytes` more bytes; false (and
  // nothing reserved) when a configured limit would be exceeded.
  bool Reserve(int64_t keys, int64_t bytes);

  Shard& ShardFor(uint64_t hash) { return shards_[(hash >> shard_shift_) & shard_mask_]; }

  const Config config_;
  std::unique_ptr<Shard[]> shards_;
  uint32_t shard_count_;
  uint32_t shard_mask_;
  uint32_t shard_shift_;
  const bool limited_;
  std::atomic<int64_t> reserved_keys_{0};
  std::atomic<int64_t> reserved_bytes_{0};
  SnapshotRegistry snapshots_;  // over shards_
};

}  // namespace kvcg::store::cpu
