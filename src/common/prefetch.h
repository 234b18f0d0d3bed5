// PrefetchLine: asks the core to start loading the cache line at `p`.
//
// Why not __builtin_prefetch: GCC deletes a loop whose body is only
// __builtin_prefetch calls (and the loads that compute their addresses) as
// a loop without side effects, silently: a connection's "prefetch this
// round's values" loop and the write plan's per-value prefetch were both
// missing from the optimized binary (found with objdump, 2026-11-29). An
// asm volatile prefetch is never removed. A prefetch does not fault, so `p`
// may be any address.
#pragma once

namespace kvcg {

inline void PrefetchLine(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace kvcg
