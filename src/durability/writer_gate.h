// WriterGate: what write batches hold while the append-only log is off, in
// place of the log's lanes; turning the log on and Clear close it.
//
// Why. With a log, a write batch holds its keys' lanes while it submits, so
// the log's per-key order is the store's (log_lanes.h). Without one there is
// no order to keep — but the CPU backend runs a batch inside Submit, so a
// batch of a few hundred ops held a third of the 64 lanes for its whole
// execution, and kvcg-server's I/O threads (one batch per loop pass, a few
// writes in each) queued behind one another: the CPU backend served 2.2 M
// ops/s with 256 connections against 6.0 M with 64 (H200 host, 8 I/O
// threads). Writes without a log now share this gate instead. What still
// needs them out of the way: turning the log on (its base image must hold
// every write that did not go to the log, so no such write may be inside
// Submit while the image is opened) and Clear (as before).
//
// Shared by writers, exclusive for those two; writer-first, so that a steady
// stream of batches cannot keep a barrier out: once a barrier waits, new
// batches wait behind it. A holder must not take it again: that would hang
// only while a barrier waits (a batch's completion that runs inline is
// deferred until the gate is released, as it is for lanes, and
// DurableStore asserts that no Submit runs inside another). One word; held
// for one Submit call.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/spin_wait.h"

namespace kvcg::durability {

class WriterGate {
 public:
  void lock_shared() {
    for (int spins = 0;; ++spins) {
      uint32_t w = word_.load(std::memory_order_relaxed);
      if ((w & (kClosed | kClosing)) == 0 &&
          word_.compare_exchange_weak(w, w + kWriter, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
      SpinBackoff(spins);
    }
  }
  void unlock_shared() { word_.fetch_sub(kWriter, std::memory_order_release); }

  void lock() {
    for (int spins = 0;; ++spins) {
      // Announce first: writers arriving from now on wait.
      uint32_t w = word_.fetch_or(kClosing, std::memory_order_relaxed) | kClosing;
      if (w == kClosing &&
          word_.compare_exchange_weak(w, kClosed, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
      SpinBackoff(spins);
    }
  }
  void unlock() { word_.fetch_and(~kClosed, std::memory_order_release); }

 private:
  static constexpr uint32_t kClosed = 1;   // a barrier holds it
  static constexpr uint32_t kClosing = 2;  // a barrier waits for the writers inside to leave
  static constexpr uint32_t kWriter = 4;   // one write batch inside

  std::atomic<uint32_t> word_{0};
};

}  // namespace kvcg::durability
