// Unit tests of the Redis-style glob matcher (KEYS, CONFIG GET, COMMAND LIST
// patterns): the cases follow Redis 7.0's stringmatchlen.
#include "server/glob.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace kvcg::server {
namespace {

TEST(Glob, Literals) {
  EXPECT_TRUE(GlobMatch("hello", "hello", false));
  EXPECT_FALSE(GlobMatch("hello", "hell", false));
  EXPECT_FALSE(GlobMatch("hell", "hello", false));
  EXPECT_FALSE(GlobMatch("Hello", "hello", false));
  EXPECT_TRUE(GlobMatch("Hello", "hello", true));
  EXPECT_TRUE(GlobMatch("", "", false));
  EXPECT_FALSE(GlobMatch("", "a", false));
  EXPECT_TRUE(GlobMatch(std::string("a\0b", 3), std::string("a\0b", 3), false));
}

TEST(Glob, StarAndQuestionMark) {
  EXPECT_TRUE(GlobMatch("*", "", false));
  EXPECT_TRUE(GlobMatch("*", "anything", false));
  EXPECT_TRUE(GlobMatch("foo*", "foo", false));
  EXPECT_TRUE(GlobMatch("foo*", "foobar", false));
  EXPECT_FALSE(GlobMatch("foo*", "fo", false));
  EXPECT_TRUE(GlobMatch("*bar", "foobar", false));
  EXPECT_TRUE(GlobMatch("f*o*r", "foobar", false));
  EXPECT_FALSE(GlobMatch("f*o*x", "foobar", false));
  EXPECT_TRUE(GlobMatch("a**b", "axxb", false));
  EXPECT_TRUE(GlobMatch("h?llo", "hello", false));
  EXPECT_FALSE(GlobMatch("h?llo", "hllo", false));
  EXPECT_FALSE(GlobMatch("?", "", false));
  EXPECT_FALSE(GlobMatch("*a", "", false));
}

TEST(Glob, ClassesAndEscapes) {
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo", false));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hillo", false));
  EXPECT_TRUE(GlobMatch("h[^e]llo", "hallo", false));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello", false));
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hbllo", false));
  EXPECT_TRUE(GlobMatch("h[b-a]llo", "hbllo", false));  // reversed range
  EXPECT_FALSE(GlobMatch("h[a-b]llo", "hcllo", false));
  EXPECT_TRUE(GlobMatch("h[A-B]llo", "hbllo", true));
  EXPECT_TRUE(GlobMatch("h\\*llo", "h*llo", false));
  EXPECT_FALSE(GlobMatch("h\\*llo", "hello", false));
  EXPECT_TRUE(GlobMatch("h[\\]]llo", "h]llo", false));
}

// Redis's "Regression for pattern matching long nested loops": without the
// skip of longer matches this takes C(40,20) steps.
TEST(Glob, NestedStarsAreNotExponential) {
  std::string text(40, 'a');
  std::string pattern;
  for (int i = 0; i < 20; ++i) pattern += "a*";
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(GlobMatch(pattern + "b", text, false));
  EXPECT_TRUE(GlobMatch(pattern, text, false));
  EXPECT_TRUE(GlobMatch(pattern + "a", text, false));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

}  // namespace
}  // namespace kvcg::server
