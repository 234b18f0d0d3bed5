// Engine-internal helpers shared by the kvcg_engine*.cc files: the clocks
// the stats use and the engine frame that marks engine code on a thread's
// stack. Not part of the engine's interface.
#pragma once

#include <chrono>
#include <cstdint>

namespace kvcg::engine {

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

inline uint64_t UnixUs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Depth of engine code on this thread's stack (routing, or a canonical-store
// completion running our callbacks, and through them users' completions).
// Blocking calls that wait for the canonical store must not run there
// (KvcgEngine::InEngineFrame).
inline thread_local int tls_engine_depth = 0;
struct EngineFrame {
  EngineFrame() { ++tls_engine_depth; }
  ~EngineFrame() { --tls_engine_depth; }
  EngineFrame(const EngineFrame&) = delete;
  EngineFrame& operator=(const EngineFrame&) = delete;
};

}  // namespace kvcg::engine
