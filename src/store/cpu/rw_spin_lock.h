// A readers–writer spin lock in one 32-bit word, for the CPU store's shards.
//
// Why not std::shared_mutex: an uncontended pthread rwlock costs several
// times one atomic RMW, and a shard is held for well under a microsecond.
// Why it still yields: CI and laptops run more threads than cores; a pure
// spinner can burn its whole time slice while the holder is descheduled.
//
// Word layout: bit 0 = writer holds it, bits 1.. = reader count (×2).
// Readers that see a writer back off completely before retrying, so a writer
// waiting for readers to drain is not starved by a stream of new readers
// only as long as readers do not arrive back-to-back; shards are many and
// critical sections short, so this simple scheme is enough.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/spin_wait.h"

namespace kvcg::store::cpu {

class RwSpinLock {
 public:
  void lock_shared() {
    for (;;) {
      uint32_t prev = word_.fetch_add(kReader, std::memory_order_acquire);
      if ((prev & kWriter) == 0) return;
      word_.fetch_sub(kReader, std::memory_order_relaxed);
      WaitWhile([this] { return (word_.load(std::memory_order_relaxed) & kWriter) != 0; });
    }
  }

  void unlock_shared() { word_.fetch_sub(kReader, std::memory_order_release); }

  void lock() {
    for (;;) {
      uint32_t expected = 0;
      if (word_.compare_exchange_weak(expected, kWriter, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
        return;
      }
      WaitWhile([this] { return word_.load(std::memory_order_relaxed) != 0; });
    }
  }

  void unlock() { word_.fetch_and(~kWriter, std::memory_order_release); }

 private:
  static constexpr uint32_t kWriter = 1;
  static constexpr uint32_t kReader = 2;

  template <typename Busy>
  static void WaitWhile(Busy busy) {
    for (int spins = 0; busy(); ++spins) SpinBackoff(spins);
  }

  std::atomic<uint32_t> word_{0};
};

}  // namespace kvcg::store::cpu
