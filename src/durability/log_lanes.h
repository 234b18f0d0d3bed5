// LogLanes: where writes queue their log records before the log writes them,
// and the locks that put the log in the same order as the store.
//
// While a log is attached, a write batch locks the lanes of its keys (lane =
// hash of the key, 64 lanes, always taken in ascending order), appends its
// records to those lanes' buffers, and submits to the store while still
// holding them (without a log it shares writer_gate.h's gate instead). Two
// batches that write one key therefore reach both the log and the store in
// the same order (the store keeps same-key order across successive Submit
// calls, DESIGN.md §2), so replaying the log rebuilds exactly the state the
// store reached — CAS outcomes included — without logging outcomes.
// Batches on different lanes never wait for each other. A lane's records
// reach the file in lane order; records of different lanes may interleave in
// any order, which is harmless because they concern different keys.
// Clear, a log rewrite and turning the log on take every lane (a barrier).
//
// `gen` tags a lane's current buffer with the flush cycle that will write
// it (append_log.h): a write waiting for fsync waits for that cycle. The
// numbers are those of the log attached to the lanes; a log retags them
// when it is attached (AppendLog::AttachLanesLocked).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/spin_wait.h"
#include "kvcg/hash.h"

namespace kvcg::durability {

class LogLanes {
 public:
  static constexpr size_t kLanes = 64;
  static constexpr size_t kFrameSplit = size_t(1) << 30;


  // A lane's lock. Not std::mutex: barriers hold all 64 lanes at once, more
  // locks than ThreadSanitizer's deadlock detector can track per thread
  // (64), and a lane is held for microseconds (one batch's Submit), so a
  // test-and-set spin that yields is as good.
  class LaneLock {
   public:
    void lock() {
      for (int spins = 0; flag_.exchange(true, std::memory_order_acquire); ++spins) {
        while (flag_.load(std::memory_order_relaxed)) SpinBackoff(++spins);
      }
    }
    void unlock() { flag_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool> flag_{false};
  };

  struct alignas(64) Lane {
    LaneLock mu;
    std::string records;  // whole log records, in append order
    uint32_t count = 0;   // records in `records`
    uint64_t gen = 1;     // the flush cycle that will write `records`
    // Frame boundaries inside `records` ({offset, records before it}): a new
    // frame starts whenever a frame would pass kFrameSplit bytes, so no
    // frame's 32-bit length can overflow (values may be 512 MiB each).
    std::vector<std::pair<size_t, uint32_t>> cuts;
    std::atomic<uint64_t> changes{0};  // writes counted here (for save rules); summed by readers
    // The last TIME record in this lane (log_format.h): its time and the
    // log it went to (DurableStore's log generation).
    uint64_t last_time = 0;
    uint64_t time_gen = 0;
  };

  // Appends a record (encoded by `append(std::string*)`) to a locked lane.
  template <typename AppendFn>
  static void AddRecord(Lane& lane, AppendFn&& append) {
    const size_t from = lane.cuts.empty() ? 0 : lane.cuts.back().first;
    if (lane.records.size() - from >= kFrameSplit) lane.cuts.emplace_back(lane.records.size(), lane.count);
    append(&lane.records);
    ++lane.count;
  }

  static uint32_t LaneOf(std::string_view key) {
    return uint32_t(Xxh3Hash(key) >> 58);  // top 6 bits: 64 lanes
  }

  Lane& lane(size_t i) { return lanes_[i]; }

  // Locks / unlocks the lanes whose bits are set in `mask`, in ascending order.
  void Lock(uint64_t mask) {
    for (uint64_t m = mask; m != 0; m &= m - 1) lanes_[__builtin_ctzll(m)].mu.lock();
  }
  void Unlock(uint64_t mask) {
    for (uint64_t m = mask; m != 0; m &= m - 1) lanes_[__builtin_ctzll(m)].mu.unlock();
  }
  static constexpr uint64_t kAll = ~uint64_t(0);

 private:
  Lane lanes_[kLanes];
};

}  // namespace kvcg::durability
