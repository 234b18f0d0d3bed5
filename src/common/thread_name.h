// Names the calling thread for top -H, perf and /proc/<pid>/task/*/comm, so
// a profile of kvcg-server says which of its threads (I/O loop, GPU
// pipeline, delivery, cron) is busy. Linux keeps at most 15 characters; a
// longer name is cut there. Elsewhere it does nothing.
#pragma once

#include <string_view>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace kvcg {

inline void SetCurrentThreadName(std::string_view name) {
#if defined(__linux__)
  char buf[16] = {};
  name.copy(buf, sizeof(buf) - 1);
  pthread_setname_np(pthread_self(), buf);
#else
  (void)name;
#endif
}

}  // namespace kvcg
