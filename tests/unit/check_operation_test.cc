// CheckOperation is the one input check every backend applies, so that all
// answer bad input identically. Its order matters and is part of the
// contract: op type, then key size, then value size, then the fixed8 sizes
// (an over-limit key in fixed8 is kKeyTooLarge, not kInvalidArgument).
// ValidateConfig is the matching check of a whole Config at Store::Open.
#include <gtest/gtest.h>

#include <string>

#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "store/backends.h"

namespace kvcg {
// gtest finds this through ADL, so failures print "key_too_large", not a byte.
inline void PrintTo(Code code, std::ostream* os) { *os << CodeName(code); }
}  // namespace kvcg

namespace kvcg::store {
namespace {

Config Limits(size_t key, size_t value, Layout layout = Layout::kGeneral) {
  Config c;
  c.max_key_bytes = key;
  c.max_value_bytes = value;
  c.layout = layout;
  return c;
}

TEST(CheckOperation, WithinLimitsIsOk) {
  const Config c = Limits(16, 32);
  for (OpType t : {OpType::kGet, OpType::kPut, OpType::kDelete, OpType::kCompareAndSwap}) {
    EXPECT_EQ(CheckOperation(c, t, std::string(16, 'k'), std::string(32, 'v')), Code::kOk) << OpTypeName(t);
    EXPECT_EQ(CheckOperation(c, t, "", ""), Code::kOk) << "empty key and value are valid";
  }
}

TEST(CheckOperation, KeyTooLargeForEveryType) {
  const Config c = Limits(16, 32);
  for (OpType t : {OpType::kGet, OpType::kPut, OpType::kDelete, OpType::kCompareAndSwap}) {
    EXPECT_EQ(CheckOperation(c, t, std::string(17, 'k'), "v"), Code::kKeyTooLarge) << OpTypeName(t);
  }
}

TEST(CheckOperation, ValueTooLargeOnlyForStoringTypes) {
  const Config c = Limits(16, 32);
  const std::string big(33, 'v');
  EXPECT_EQ(CheckOperation(c, OpType::kPut, "k", big), Code::kValueTooLarge);
  EXPECT_EQ(CheckOperation(c, OpType::kCompareAndSwap, "k", big), Code::kValueTooLarge);
  // GET and DELETE carry no value; whatever is in the field is ignored.
  EXPECT_EQ(CheckOperation(c, OpType::kGet, "k", big), Code::kOk);
  EXPECT_EQ(CheckOperation(c, OpType::kDelete, "k", big), Code::kOk);
  // Key first, then value.
  EXPECT_EQ(CheckOperation(c, OpType::kPut, std::string(17, 'k'), big), Code::kKeyTooLarge);
}

TEST(CheckOperation, UnknownTypeIsInvalid) {
  const Config c = Limits(16, 32);
  EXPECT_EQ(CheckOperation(c, static_cast<OpType>(9), "k", "v"), Code::kInvalidArgument);
  EXPECT_EQ(CheckOperation(c, static_cast<OpType>(9), std::string(17, 'k'), "v"), Code::kInvalidArgument);
}

TEST(CheckOperation, Fixed8SizesAfterLimits) {
  const Config c = Limits(16, 32, Layout::kFixed8);
  const std::string k8(8, 'k'), v8(8, 'v');
  EXPECT_EQ(CheckOperation(c, OpType::kPut, k8, v8), Code::kOk);
  EXPECT_EQ(CheckOperation(c, OpType::kGet, k8, ""), Code::kOk);
  EXPECT_EQ(CheckOperation(c, OpType::kDelete, k8, ""), Code::kOk);
  for (size_t n : {0, 7, 9, 16}) {
    const std::string k(n, 'k'), v(n, 'v');
    EXPECT_EQ(CheckOperation(c, OpType::kGet, k, ""), Code::kInvalidArgument) << n;
    EXPECT_EQ(CheckOperation(c, OpType::kPut, k, v8), Code::kInvalidArgument) << n;
    EXPECT_EQ(CheckOperation(c, OpType::kPut, k8, v), Code::kInvalidArgument) << n;
    EXPECT_EQ(CheckOperation(c, OpType::kCompareAndSwap, k8, v), Code::kInvalidArgument) << n;
  }
  EXPECT_EQ(CheckOperation(c, OpType::kPut, std::string(17, 'k'), v8), Code::kKeyTooLarge);
  EXPECT_EQ(CheckOperation(c, OpType::kPut, k8, std::string(33, 'v')), Code::kValueTooLarge);
}

TEST(CheckOperation, BatchOverloadChecksCasExpectedValue) {
  const Config c = Limits(16, 32);
  const std::string_view ok_expected = "old";
  const std::string big(33, 'e');
  const std::string_view big_expected = big;
  Batch b;
  b.CompareAndSwap("k", &ok_expected, "new");   // 0
  b.CompareAndSwap("k", &big_expected, "new");  // 1: expected over the value limit
  b.CompareAndSwap("k", nullptr, "new");        // 2
  b.Put("k", big);                              // 3
  b.Get(std::string(17, 'k'));                  // 4
  EXPECT_EQ(CheckOperation(c, b, 0), Code::kOk);
  EXPECT_EQ(CheckOperation(c, b, 1), Code::kValueTooLarge);
  EXPECT_EQ(CheckOperation(c, b, 2), Code::kOk);
  EXPECT_EQ(CheckOperation(c, b, 3), Code::kValueTooLarge);
  EXPECT_EQ(CheckOperation(c, b, 4), Code::kKeyTooLarge);
}

TEST(CheckOperation, BatchOverloadFixed8CasExpectedMustBe8Bytes) {
  const Config c = Limits(16, 32, Layout::kFixed8);
  const std::string k8(8, 'k'), v8(8, 'v');
  const std::string_view e8 = v8, e7 = std::string_view(v8).substr(0, 7), e0;
  Batch b;
  b.CompareAndSwap(k8, &e8, v8);
  b.CompareAndSwap(k8, &e7, v8);
  b.CompareAndSwap(k8, &e0, v8);
  b.CompareAndSwap(k8, nullptr, v8);  // expect-absent has no expected value to check
  EXPECT_EQ(CheckOperation(c, b, 0), Code::kOk);
  EXPECT_EQ(CheckOperation(c, b, 1), Code::kInvalidArgument);
  EXPECT_EQ(CheckOperation(c, b, 2), Code::kInvalidArgument);
  EXPECT_EQ(CheckOperation(c, b, 3), Code::kOk);
}

TEST(ValidateConfig, DefaultsAndExplicitBackendsAreValid) {
  for (Backend backend : {Backend::kAuto, Backend::kCpu, Backend::kGpu}) {
    Config c;
    c.backend = backend;
    EXPECT_TRUE(ValidateConfig(c).ok()) << BackendName(backend) << ": " << ValidateConfig(c).ToString();
    c.layout = Layout::kFixed8;
    EXPECT_TRUE(ValidateConfig(c).ok()) << BackendName(backend) << ": " << ValidateConfig(c).ToString();
  }
  Config c;
  c.cpu_shards = 1;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.cpu_shards = 1024;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ValidateConfig, RejectsContradictions) {
  auto rejected = [](const Config& c) {
    const Status s = ValidateConfig(c);
    return s.code() == Code::kInvalidArgument && !s.message().empty();
  };
  Config c;
  c.hash = nullptr;
  EXPECT_TRUE(rejected(c)) << "null hash";
  c = Config();
  c.max_key_bytes = 0;
  EXPECT_TRUE(rejected(c)) << "zero key limit";
  c = Config();
  c.layout = Layout::kFixed8;
  c.max_value_bytes = 7;
  EXPECT_TRUE(rejected(c)) << "fixed8 with a value limit below 8";
  c.max_value_bytes = 8;
  c.max_key_bytes = 7;
  EXPECT_TRUE(rejected(c)) << "fixed8 with a key limit below 8";
  c = Config();
  c.cpu_shards = 48;
  EXPECT_TRUE(rejected(c)) << "shards not a power of two";
  c = Config();
  c.backend = Backend::kGpu;
  c.gpu_orchestrators = 0;
  EXPECT_TRUE(rejected(c)) << "GPU with no orchestrator";
}

}  // namespace
}  // namespace kvcg::store
