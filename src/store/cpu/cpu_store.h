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
// Capacity (cpu_budget.cc). Config::max_keys is enforced exactly with a
// global counter; the memory limit with per-shard credits borrowed from a
// global pool, so a write under the limit — and an insert that evicts in a
// full cache — touches no shared cache line. Nothing is counted until a
// limit is first configured (at Open or by SetMemoryLimit, which then sums
// the shards under all their locks).
//
// Eviction (cpu_eviction.cc). Each entry has a 32-bit access word beside its
// tag (ShardTable::access): the LRU clock, or under an LFU policy Redis's
// log counter with decay time. Reads update it under the shared lock,
// relaxed, and only when it changes. A write that would pass the memory
// limit under an evicting policy drops its shard lock, evicts Redis-style
// (sample keys of a random shard into a pool of the best candidates, evict
// the best, repeat until the write fits) and retries from the start.
//
// Expiry. Each entry keeps its expire-at. Lazy: an op reads the clock once
// per batch and treats an expired entry as absent (a write removes it under
// its lock, a read just skips it). Active (cpu_expiry.cc): a sweeper thread
// wakes Config::active_expiry_hz times a second and walks, slot by slot
// under the shard's write lock for at most a few thousand slots at a time,
// only the shards that hold keys with an expire-at, removing expired
// entries — like Redis's active expire cycle it stops after a quarter of its
// period and resumes where it stopped.
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
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kvcg/store.h"
#include "store/cpu/cpu_shard.h"
#include "store/cpu/cpu_snapshot.h"

namespace kvcg::store::cpu {

class CpuStore final : public Store {
 public:
  explicit CpuStore(const Config& config);
  ~CpuStore() override;

  void Submit(Batch batch, Completion done) override;
  uint64_t Size() const override;
  uint64_t MemoryBytes() const override;
  void Clear() override;
  StoreInfo Info() const override;
  Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out) override;
  // Store::Scan (cpu_scan.cc): shard by shard, home slots in Redis's
  // reverse-binary order.
  Status Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next) override;
  KeyspaceStats Keyspace() const override;
  // cpu_expiry.cc
  uint64_t ReclaimExpired() override;
  // cpu_eviction.cc
  Status SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) override;
  Status KeyAccess(std::string_view key, KeyAccessInfo* info) const override;

  // Bytes charged per entry beyond its key and value: the tag, two string
  // headers and the table's slack, rounded up. Public for tests.
  static constexpr uint64_t kEntryOverhead = 96;

 protected:
  // Store::SetActiveExpiryHz (cpu_expiry.cc).
  Status ApplyActiveExpiryHz(uint32_t hz) override;

 private:
  using Shard = CpuShard;

  // Where one op's result goes: slot i of a ResultsBuilder.
  struct Out {
    ResultsBuilder* b;
    size_t i;
    void Code(kvcg::Code c) const { b->SetCode(i, c); }
    // The value found (or replaced) and its expire-at.
    void Found(const ShardTable::Entry& e) const {
      b->SetValue(i, kvcg::Code::kOk, e.value());
      b->SetExpire(i, e.expire_at);
    }
  };
  // What one op works on: its key, hash and shard, and the batch's clock.
  struct Target {
    Shard& shard;
    uint64_t hash;
    std::string_view key;
    uint64_t now;
  };
  // Op i of `batch`, whose key hashes to `hash` (Config::hash).
  void ExecuteOne(const Batch& batch, size_t i, uint64_t hash, uint64_t now, Out out);
  void Get(const Target& t, Out out);
  void Delete(const Target& t, Out out);
  void CompareAndSwap(const Target& t, std::string_view value, const std::string_view* expected,
                      uint64_t expire_at, Out out);
  void Expire(const Target& t, uint64_t expire_at, ExpireCondition condition, Out out);
  // The live entry of t.key under the shard's write lock, or -1; an expired
  // entry is removed first (counted in expired_keys).
  int64_t FindLive(const Target& t);
  // Stores `value` at entry `index` (or inserts when index < 0) after
  // checking capacity; fills `out` with the previous value or an error and
  // returns 0 — or, when the memory limit is in the way and the policy
  // evicts, changes nothing, fills nothing and returns the bytes it needs.
  uint64_t Store(const Target& t, int64_t index, std::string_view value, uint64_t expire_at, Out out);
  // Removes entry `index` of `shard` (write lock held), releasing its charge
  // to the shard's credit (settled back to the pool unless `settle` is
  // false: an eviction that makes room for the caller's own write).
  void RemoveAt(Shard& shard, int64_t index, bool expired, bool settle = true);

  // --- Eviction (cpu_eviction.cc).
  // Marks an access to entry `index` (shard lock held, shared suffices).
  void Touch(const ShardTable& table, int64_t index, uint64_t now) const;
  // The access word a new entry starts with.
  uint32_t InitialAccess(uint64_t now) const;
  // Evicts one key of `shard` (its write lock held) by the policy, never
  // `keep` (the key its caller is writing), sampling from slot `near`
  // (mod the table's size; any random number); false when none qualifies.
  // The freed bytes stay in the shard's credit.
  bool EvictFromShard(Shard& shard, EvictionPolicy policy, uint64_t now, std::string_view keep, uint64_t near);
  // Samples up to `want` candidates of `shard` (write lock held) into its
  // pool, walking at most `max_walk` slots from slot `near` (mod the
  // table's size); returns how many it saw.
  size_t SampleShard(Shard& shard, EvictionPolicy policy, uint64_t now, size_t max_walk, size_t want,
                     uint64_t near);
  // Evicts from random shards until `need` more bytes fit under the limit;
  // false when the policy finds nothing (more) to evict. Takes shard locks
  // one at a time: the caller must hold none.
  bool EnsureRoom(uint64_t need, uint64_t now);
  // --- Capacity accounting (cpu_budget.cc).
  // Turns on the counters (see Capacity above); idempotent.
  void EnableAccounting();
  // Sets the limit (0 = none), moving the pool by the difference.
  void ChangeLimit(uint64_t max_memory_bytes);
  // Reserve room for `keys` more keys and `bytes` more bytes in `shard`
  // (its write lock held); nothing is reserved unless kReserved.
  enum class Reservation { kReserved, kKeysFull, kBytesFull };
  Reservation Reserve(Shard& shard, int64_t keys, int64_t bytes);
  // Gives back `keys` keys and `bytes` bytes (write lock held).
  void Release(Shard& shard, int64_t keys, int64_t bytes, bool settle = true);
  // Takes `bytes` from the shard's credit, borrowing from the pool; false
  // when the pool is empty too (after draining every credit if the policy
  // does not evict).
  bool TakeCredit(Shard& shard, int64_t bytes);
  // The largest credit a shard keeps after a release.
  int64_t HoardMax() const;
  // Moves a shard's credit (any lock or none) or every shard's to the pool.
  void ReturnCredit(Shard& shard);
  void DrainCredits();
  // Sets entry's expire-at, keeping the shard's volatile-key count.
  static void SetExpireAt(Shard& shard, ShardTable::Entry& entry, uint64_t expire_at);

  // Active expiry (cpu_expiry.cc): removes expired entries of slots
  // [*slot, *slot + max_slots) of `shard` under its write lock; advances
  // *slot (0 once the table's end is passed). Returns how many it removed
  // and adds the live volatile entries' remaining TTLs to *ttl_sum/*ttl_n.
  uint64_t SweepSlots(Shard& shard, size_t* slot, size_t max_slots, uint64_t now,
                      double* ttl_sum, uint64_t* ttl_n);
  void ActiveExpiryLoop();

  bool Evicting() const { return policy_.load(std::memory_order_relaxed) != EvictionPolicy::kNoEviction; }

  Shard& ShardFor(uint64_t hash) { return shards_[(hash >> shard_shift_) & shard_mask_]; }

  const Config config_;
  std::unique_ptr<Shard[]> shards_;
  uint32_t shard_count_;
  uint32_t shard_mask_;
  uint32_t shard_shift_;
  // The counters below are kept only while limited_ (set under every shard
  // lock, never cleared).
  std::atomic<bool> limited_;
  std::atomic<int64_t> reserved_keys_{0};  // only while config_.max_keys != 0
  // Bytes of the (effective) limit neither charged nor held as a shard's
  // credit; negative after the limit was lowered until eviction catches up.
  alignas(64) std::atomic<int64_t> pool_{0};
  alignas(64) std::atomic<uint64_t> max_memory_bytes_;  // read by every write: off pool_'s line
  std::atomic<EvictionPolicy> policy_;
  std::mutex limit_mu_;  // serialises SetMemoryLimit
  static constexpr size_t kSamples = 5;  // Redis's maxmemory-samples default
  SnapshotRegistry snapshots_;  // over shards_

  std::atomic<uint64_t> avg_ttl_ms_{0};  // running estimate, like Redis's stat_avg_ttl
  std::atomic<uint64_t> clears_{0};  // Clear() calls: a sweep pass that spans one is not blended in
  // The active-expiry sweeper: started by the first non-zero rate (at Open
  // or by SetActiveExpiryHz), idle while the rate is 0.
  std::mutex expiry_mu_;
  std::condition_variable expiry_cv_;
  bool stopping_ = false;  // under expiry_mu_
  uint32_t expiry_hz_;     // under expiry_mu_
  std::thread sweeper_;    // started under expiry_mu_
};

}  // namespace kvcg::store::cpu
