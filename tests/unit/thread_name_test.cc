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

// The name a new thread reads back after SetCurrentThreadName(name).
std::string NameSetOnANewThread(const std::string& name) {
  std::string seen;
  std::thread t([&] {
    SetCurrentThreadName(name);
    seen = NameOfThisThread();
  });
  t.join();
  return seen;
}

TEST(ThreadName, NamesTheCallingThreadOnly) {
  const std::string before = NameOfThisThread();
  EXPECT_EQ(NameSetOnANewThread("kvcg-io-3"), "kvcg-io-3");
  EXPECT_EQ(NameOfThisThread(), before);
}

TEST(ThreadName, LongNamesAreCutAtFifteenCharacters) {
  EXPECT_EQ(NameSetOnANewThread("kvcg-a-very-long-thread-name"), "kvcg-a-very-lon");
}

}  // namespace
}  // namespace kvcg
