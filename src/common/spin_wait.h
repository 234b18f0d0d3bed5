// The waiting step of kvcg's spin locks and poll loops.
//
// CpuRelax: the pause instruction, for a loop that polls a word another
// core will write (it frees the core's pipeline for its sibling hyperthread
// and avoids the memory-order flush when the word changes).
// SpinBackoff(spins): a lock waiter's step — pause for the first 64 tries,
// then yield: CI and laptops run more threads than cores, and a pure
// spinner can burn its whole time slice while the holder is descheduled.
// Used by the CPU store's shard lock, the log lanes, the durability writer
// gate and the GPU pipeline's poll loops.
#pragma once

#include <thread>

namespace kvcg {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

inline void SpinBackoff(int spins) {
  if (spins < 64) {
    CpuRelax();
  } else {
    std::this_thread::yield();
  }
}

}  // namespace kvcg
