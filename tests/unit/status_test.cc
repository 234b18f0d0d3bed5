// Status and CodeName: stable, distinct, lowercase names (they appear in the
// server's error replies and in benchmark records) and Status's text form.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "kvcg/status.h"

namespace kvcg {
namespace {

const Code kAllCodes[] = {Code::kOk,          Code::kNotFound,          Code::kInvalidArgument,
                          Code::kKeyTooLarge, Code::kValueTooLarge,     Code::kCapacityExhausted,
                          Code::kUnavailable, Code::kTimedOut,          Code::kInternal};

TEST(CodeName, StableNames) {
  EXPECT_STREQ(CodeName(Code::kOk), "ok");
  EXPECT_STREQ(CodeName(Code::kNotFound), "not_found");
  EXPECT_STREQ(CodeName(Code::kInvalidArgument), "invalid_argument");
  EXPECT_STREQ(CodeName(Code::kKeyTooLarge), "key_too_large");
  EXPECT_STREQ(CodeName(Code::kValueTooLarge), "value_too_large");
  EXPECT_STREQ(CodeName(Code::kCapacityExhausted), "capacity_exhausted");
  EXPECT_STREQ(CodeName(Code::kUnavailable), "unavailable");
  EXPECT_STREQ(CodeName(Code::kTimedOut), "timed_out");
  EXPECT_STREQ(CodeName(Code::kInternal), "internal");
}

TEST(CodeName, DistinctLowercaseAndNeverNull) {
  std::set<std::string> names;
  for (Code c : kAllCodes) {
    const char* name = CodeName(c);
    ASSERT_NE(name, nullptr);
    for (const char* p = name; *p; ++p) {
      EXPECT_TRUE(std::islower(static_cast<unsigned char>(*p)) || *p == '_') << name;
    }
    names.insert(name);
  }
  EXPECT_EQ(names.size(), std::size(kAllCodes));
  const char* unknown = CodeName(static_cast<Code>(250));
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(names.count(unknown), 0u);
}

TEST(Status, DefaultIsOk) {
  const Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "ok");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(Status, FactoriesCarryCodeAndMessage) {
  const Status a = Status::InvalidArgument("bad hash");
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.code(), Code::kInvalidArgument);
  EXPECT_EQ(a.message(), "bad hash");
  EXPECT_EQ(a.ToString(), "invalid_argument: bad hash");
  EXPECT_EQ(Status::Unavailable("no GPU").ToString(), "unavailable: no GPU");
  EXPECT_EQ(Status::Internal("boom").code(), Code::kInternal);
  const Status c(Code::kCapacityExhausted, "");
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.ToString(), "capacity_exhausted") << "no dangling separator without a message";
}

TEST(Status, CopiesAreIndependent) {
  Status a = Status::Internal("first");
  Status b = a;
  a = Status::Ok();
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(b.ToString(), "internal: first");
}

}  // namespace
}  // namespace kvcg
