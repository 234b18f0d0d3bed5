// ReplayClock: the clock a durable store's inner store reads, which the
// loader can freeze while it replays the files (log_format.h, "Replay and
// the clock").
//
// Why. Expiry makes a replayed op's effect depend on the clock: a CAS on a
// key whose expire-at passed between the original run and the replay would
// find nothing and diverge, and loading at today's time versus the logged
// time decides which keys exist. So while loading, the store runs at the
// time the files record (the snapshot's instant, then each TIME record);
// afterwards it reads the configured clock again.
//
// How. Config::clock is a plain function pointer (no context), so a clock
// per store is one of a fixed set of functions, each reading its own slot:
// Acquire takes a free slot and Release (the destructor) gives it back. When
// every slot is taken, Acquire returns null and the store runs on the real
// clock (the replay is then exact only for logs without expiry).
//
// Thread safety: the clock function may be called from any thread while
// Freeze/Thaw run; the slot must outlive every store that reads it.
#pragma once

#include <cstdint>
#include <memory>

#include "kvcg/config.h"

namespace kvcg::durability {

class ReplayClock {
 public:
  // A free slot reading `real` while not frozen, or null when none is free.
  static std::unique_ptr<ReplayClock> Acquire(ClockFunction real);
  ~ReplayClock();
  ReplayClock(const ReplayClock&) = delete;
  ReplayClock& operator=(const ReplayClock&) = delete;

  // The function to put in the inner store's Config::clock.
  ClockFunction function() const;
  // From now on the function returns `now_ms` (not 0).
  void Freeze(uint64_t now_ms);
  // Back to the real clock.
  void Thaw();
  bool frozen() const;

 private:
  explicit ReplayClock(int slot) : slot_(slot) {}
  const int slot_;
};

}  // namespace kvcg::durability
