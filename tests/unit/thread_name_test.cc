// SetCurrentThreadName: the name profilers and top -H show for a thread.
#include "common/thread_name.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <string>
#include <thread>

namespace kvcg {
namespace {

std::string NameOfThisThread() {
  char buf[32] = {};
  pthread_getname_np(pthread_self(), buf, sizeof(buf));
  return buf;
}

TEST(ThreadName, NamesTheCallingThreadOnly) {
  const std::string before = NameOfThisThread();
  std::string seen;
  std::thread t([&] {
    SetCurrentThreadName("kvcg-io-3");
    seen = NameOfThisThread();
  });
  t.join();
  EXPECT_EQ(seen, "kvcg-io-3");
  EXPECT_EQ(NameOfThisThread(), before);
}

TEST(ThreadName, LongNamesAreCutAtFifteenCharacters) {
  std::string seen;
  std::thread t([&] {
    SetCurrentThreadName("kvcg-a-very-long-thread-name");
    seen = NameOfThisThread();
  });
  t.join();
  EXPECT_EQ(seen, "kvcg-a-very-lon");
}

}  // namespace
}  // namespace kvcg
