// BatchLoader: feeds a stream of operations into a Store as large batches,
// a few in flight, for loading snapshots and replaying logs at the speed of
// the store's bulk path (the GPU backend takes whole batches straight into
// its pipeline). One thread calls Add*/Flush; same-key order holds because
// successive Submit calls from one thread keep it (DESIGN.md §2).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "kvcg/store.h"

namespace kvcg::durability {

class BatchLoader {
 public:
  // strict: any per-op result other than ok/not-found fails the load (a
  // snapshot must load whole); otherwise only kInternal/kUnavailable do (a
  // replayed op may fail as it did the first time, e.g. capacity).
  BatchLoader(Store* store, bool strict) : store_(store), strict_(strict), batch_(store->NewBatch()) {}
  ~BatchLoader() { Wait(); }

  void Add(OpType type, std::string_view key, std::string_view value,
           uint64_t expire_at = kNoExpiry);
  void AddCas(std::string_view key, const std::string_view* expected, std::string_view value,
              uint64_t expire_at = kNoExpiry);
  void AddExpire(std::string_view key, uint64_t expire_at, ExpireCondition condition);
  // Whether an op added since the last Flush has an effect that depends on
  // the store's clock (CAS, EXPIRE, PUT with kKeepExpiry): a replay must
  // let it run before moving its frozen clock (replay_clock.h).
  bool clock_sensitive() const { return clock_sensitive_; }
  // Submits what is batched and waits for every batch. The first error, if any.
  Status Flush();
  uint64_t ops() const { return ops_; }
  // Ops the store refused without failing the load (not strict). After Flush.
  uint64_t refused() const { return refused_; }

 private:
  void SubmitCurrent();
  void Wait();

  static constexpr size_t kBatchOps = 65536;
  static constexpr size_t kBatchBytes = 32 << 20;
  static constexpr int kInFlight = 4;

  Store* const store_;
  const bool strict_;
  Batch batch_;
  size_t bytes_ = 0;
  uint64_t ops_ = 0;
  bool clock_sensitive_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  uint64_t refused_ = 0;
  Status error_;
};

}  // namespace kvcg::durability
