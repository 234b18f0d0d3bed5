// Batch: the arena-backed list of operations. Offsets (not pointers) must
// survive arena growth, Clear() must allow reuse without stale data, and a CAS
// carries its expected value or the expect-absent flag.
#include <gtest/gtest.h>

#include <string>

#include "kvcg/batch.h"

namespace kvcg {
namespace {

using namespace std::string_literals;

TEST(Batch, AppendRecordsTypeKeyAndValue) {
  Batch b;
  EXPECT_TRUE(b.empty());
  b.Get("k1");
  b.Put("k2", "v2");
  b.Delete("k3");
  b.Append(OpType::kPut, "k4", "v4");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_FALSE(b.empty());
  EXPECT_EQ(b.type(0), OpType::kGet);
  EXPECT_EQ(b.type(1), OpType::kPut);
  EXPECT_EQ(b.type(2), OpType::kDelete);
  EXPECT_EQ(b.type(3), OpType::kPut);
  EXPECT_EQ(b.key(0), "k1");
  EXPECT_EQ(b.value(0), "");
  EXPECT_EQ(b.key(1), "k2");
  EXPECT_EQ(b.value(1), "v2");
  EXPECT_EQ(b.key(2), "k3");
  EXPECT_EQ(b.value(2), "");
  EXPECT_EQ(b.key(3), "k4");
  EXPECT_EQ(b.value(3), "v4");
  EXPECT_EQ(b.arena_bytes(), 2u + 4u + 2u + 4u);
  EXPECT_EQ(b.ops().size(), 4u);
}

TEST(Batch, CopiesItsInputs) {
  Batch b;
  {
    std::string key = "key", value = "value";
    b.Put(key, value);
    key.assign("XXX");
    value.assign("YYYYY");
  }
  EXPECT_EQ(b.key(0), "key");
  EXPECT_EQ(b.value(0), "value");
}

TEST(Batch, BinaryAndEmptyBytes) {
  Batch b;
  b.Put(""s, ""s);
  b.Put("\0a\0"s, "\0\0"s);
  EXPECT_EQ(b.key(0), "");
  EXPECT_EQ(b.value(0), "");
  EXPECT_EQ(b.key(1), "\0a\0"s);
  EXPECT_EQ(b.value(1), "\0\0"s);
}

// The arena reallocates many times while large values are appended; every
// view must still point at the right bytes afterwards.
TEST(Batch, OffsetsSurviveArenaGrowthWithLargeValues) {
  Batch b;
  std::vector<std::string> values;
  for (int i = 0; i < 12; ++i) {
    values.push_back(std::string(size_t{1} << (i + 8), static_cast<char>('a' + i)));  // 256 B .. 512 KiB
    b.Put("key" + std::to_string(i), values.back());
    b.Get("get" + std::to_string(i));
  }
  ASSERT_EQ(b.size(), 24u);
  size_t total = 0;
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(b.key(2 * i), "key" + std::to_string(i));
    EXPECT_TRUE(b.value(2 * i) == values[i]) << "value " << i << " has size " << b.value(2 * i).size();
    EXPECT_EQ(b.key(2 * i + 1), "get" + std::to_string(i));
    total += values[i].size() + b.key(2 * i).size() + b.key(2 * i + 1).size();
  }
  EXPECT_EQ(b.arena_bytes(), total);
}

TEST(Batch, CompareAndSwapFields) {
  Batch b;
  const std::string_view expected = "old";
  b.CompareAndSwap("k1", &expected, "new");
  b.CompareAndSwap("k2", nullptr, "fresh");
  const std::string_view empty;
  b.CompareAndSwap("k3", &empty, "x");
  b.Put("k4", "v");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.type(0), OpType::kCompareAndSwap);
  EXPECT_EQ(b.key(0), "k1");
  EXPECT_EQ(b.value(0), "new");
  EXPECT_EQ(b.expected(0), "old");
  EXPECT_FALSE(b.expect_absent(0));
  EXPECT_EQ(b.type(1), OpType::kCompareAndSwap);
  EXPECT_EQ(b.value(1), "fresh");
  EXPECT_TRUE(b.expect_absent(1));
  EXPECT_EQ(b.expected(1), "");
  // Expecting the empty value is not the same as expecting absence.
  EXPECT_FALSE(b.expect_absent(2));
  EXPECT_EQ(b.expected(2), "");
  EXPECT_EQ(b.value(2), "x");
  // Other operations carry no CAS state.
  EXPECT_FALSE(b.expect_absent(3));
  EXPECT_EQ(b.expected(3), "");
  EXPECT_EQ(b.value(3), "v");
}

TEST(Batch, ClearThenReuse) {
  Batch b;
  for (int i = 0; i < 100; ++i) b.Put("key" + std::to_string(i), std::string(100, 'v'));
  const char* arena = b.key(0).data();
  b.Clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.arena_bytes(), 0u);
  b.Get("other");
  b.Put("k", "w");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b.type(0), OpType::kGet);
  EXPECT_EQ(b.key(0), "other");
  EXPECT_EQ(b.value(0), "") << "no stale bytes from before Clear";
  EXPECT_EQ(b.key(1), "k");
  EXPECT_EQ(b.value(1), "w");
  EXPECT_EQ(b.arena_bytes(), 7u);
  EXPECT_EQ(b.key(0).data(), arena) << "Clear keeps the arena's memory for reuse";
}

TEST(Batch, ReserveChangesNothingVisible) {
  Batch b;
  b.Put("a", "1");
  b.Reserve(1000, 1 << 20);
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(b.key(0), "a");
  EXPECT_EQ(b.value(0), "1");
  const char* arena = b.key(0).data();
  for (int i = 0; i < 999; ++i) b.Put("key", std::string(1000, 'x'));
  EXPECT_EQ(b.key(0).data(), arena) << "appending within the reservation does not reallocate";
}

TEST(Batch, MovedAndCopiedBatchesKeepContent) {
  Batch a;
  a.Put("k", "v");
  const std::string_view expected = "e";
  a.CompareAndSwap("c", &expected, "d");
  Batch copy = a;
  Batch moved = std::move(a);
  for (const Batch* b : {&copy, &moved}) {
    ASSERT_EQ(b->size(), 2u);
    EXPECT_EQ(b->key(0), "k");
    EXPECT_EQ(b->value(0), "v");
    EXPECT_EQ(b->expected(1), "e");
    EXPECT_EQ(b->value(1), "d");
  }
}

TEST(Batch, OpTypeNames) {
  EXPECT_STREQ(OpTypeName(OpType::kGet), "GET");
  EXPECT_STREQ(OpTypeName(OpType::kPut), "PUT");
  EXPECT_STREQ(OpTypeName(OpType::kDelete), "DELETE");
  EXPECT_STREQ(OpTypeName(OpType::kCompareAndSwap), "CAS");
  EXPECT_STREQ(OpTypeName(static_cast<OpType>(200)), "UNKNOWN");
}

TEST(OpResult, FoundAndSucceeded) {
  auto result = [](Code c) { return OpResult{c, ""}; };
  EXPECT_TRUE(result(Code::kOk).found());
  EXPECT_TRUE(result(Code::kOk).succeeded());
  EXPECT_FALSE(result(Code::kNotFound).found());
  EXPECT_TRUE(result(Code::kNotFound).succeeded());
  for (Code c : {Code::kInvalidArgument, Code::kKeyTooLarge, Code::kValueTooLarge,
                 Code::kCapacityExhausted, Code::kUnavailable, Code::kTimedOut, Code::kInternal}) {
    EXPECT_FALSE(result(c).found()) << CodeName(c);
    EXPECT_FALSE(result(c).succeeded()) << CodeName(c);
  }
}

}  // namespace
}  // namespace kvcg
