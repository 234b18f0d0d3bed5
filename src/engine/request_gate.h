// RequestGate: lets the model-switch protocol "block new requests and wait
// for the ones being routed" without ever blocking a submitter.
//
// Routing passes enter and exit the gate (two seq_cst atomics, no lock);
// Close makes later TryEnter calls fail and waits until every pass inside has
// exited. A submitter that finds the gate closed does not wait — the engine
// parks its batch and runs it after the switch — because Submit may be
// called from a Completion running on a canonical-store thread that the
// switch itself is waiting on (the drain and the replay), and blocking there
// would deadlock.
//
// Dekker-style: TryEnter increments then reads `closed_`; Close writes
// `closed_` then reads the count; with sequential consistency at least one
// of the two sees the other, so no pass runs unseen by a closed gate.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace kvcg::engine {

class RequestGate {
 public:
  bool TryEnter() {
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (!closed_.load(std::memory_order_seq_cst)) return true;
    Exit();
    return false;
  }
  void Exit() { active_.fetch_sub(1, std::memory_order_seq_cst); }

  // Must not be called from inside the gate (it would wait for itself).
  void Close() {
    closed_.store(true, std::memory_order_seq_cst);
    for (int spins = 0; active_.load(std::memory_order_seq_cst) != 0; ++spins) {
      if (spins < 1000) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  void Open() { closed_.store(false, std::memory_order_seq_cst); }
  bool closed() const { return closed_.load(std::memory_order_seq_cst); }

 private:
  std::atomic<uint64_t> active_{0};
  std::atomic<bool> closed_{false};
};

}  // namespace kvcg::engine
