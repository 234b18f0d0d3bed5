// The Store base class's blocking conveniences, built once on top of the
// asynchronous Submit every implementation provides. Kept apart from
// Store::Open (store.cc) so that backends can link the base class without
// linking each other.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kvcg/durable.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"

namespace kvcg {

namespace {

// One waiter. Spins briefly before sleeping: a GPU batch completes in tens
// of microseconds, about what a futex wake-up costs.
struct Waiter {
  std::atomic<bool> ready{false};
  std::mutex mu;
  std::condition_variable cv;
  bool sleeping = false;
  Results results;

  void Set(Results&& r) {
    results = std::move(r);
    std::lock_guard<std::mutex> lock(mu);
    ready.store(true, std::memory_order_release);
    if (sleeping) cv.notify_one();
  }
  Results Wait() {
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (!ready.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mu);
        sleeping = true;
        cv.wait(lock, [&] { return ready.load(std::memory_order_acquire); });
        break;
      }
      std::this_thread::yield();
    }
    // Set() holds mu until after `ready`: taking it here waits for Set to
    // finish touching the waiter before it is destroyed.
    std::lock_guard<std::mutex> lock(mu);
    return std::move(results);
  }
};

}  // namespace

Results Store::Execute(Batch&& batch) {
  Waiter w;
  Submit(std::move(batch), [&w](Results&& r) { w.Set(std::move(r)); });
  return w.Wait();
}

namespace {
OpResult ExecuteOne(Store* store, OpType type, std::string_view key, std::string_view value) {
  Batch batch = store->NewBatch();
  batch.Append(type, key, value);
  Results results = store->Execute(std::move(batch));
  return results[0].ToOwned();
}
}  // namespace

OpResult Store::Get(std::string_view key) { return ExecuteOne(this, OpType::kGet, key, {}); }
OpResult Store::Put(std::string_view key, std::string_view value) {
  return ExecuteOne(this, OpType::kPut, key, value);
}
OpResult Store::Delete(std::string_view key) { return ExecuteOne(this, OpType::kDelete, key, {}); }

Engine* AsEngine(Store* store) {
  if (Durable* durable = AsDurable(store)) store = durable->inner();
  return dynamic_cast<Engine*>(store);
}

Status Store::OpenSnapshot(std::unique_ptr<SnapshotReader>* out) {
  out->reset();
  return Status::Unavailable("this store cannot take snapshots");
}

Status Store::Scan(uint64_t, size_t, std::unique_ptr<SnapshotReader>* out, uint64_t* next) {
  out->reset();
  *next = 0;
  return Status::Unavailable("this store cannot iterate");
}

}  // namespace kvcg

namespace kvcg {

KeyspaceStats Store::Keyspace() const {
  KeyspaceStats stats;
  stats.keys = Size();
  return stats;
}

Status Store::SetMemoryLimit(uint64_t, EvictionPolicy) {
  return Status::Unavailable("this store cannot change its memory limit");
}

Status Store::SetActiveExpiryHz(uint32_t hz) {
  if (hz > kMaxActiveExpiryHz) {
    return Status::InvalidArgument("active expiry rate above " + std::to_string(kMaxActiveExpiryHz));
  }
  return ApplyActiveExpiryHz(hz);
}

Status Store::ApplyActiveExpiryHz(uint32_t) {
  return Status::Unavailable("this store cannot change its active expiry rate");
}

Status Store::KeyAccess(std::string_view, KeyAccessInfo*) const {
  return Status::Unavailable("this store does not track key access");
}

}  // namespace kvcg
