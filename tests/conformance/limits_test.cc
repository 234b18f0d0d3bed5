// Limits (DESIGN.md §2): input larger than Config::max_key_bytes /
// max_value_bytes gets kKeyTooLarge / kValueTooLarge, never truncation; the
// failing operation changes nothing and the rest of its batch still runs.
// The fixed8 layout additionally rejects any other key/value size with
// kInvalidArgument (the size limits are checked first, as CheckOperation does).
#include <sys/mman.h>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

constexpr size_t kLimit = 1024;

void SmallLimits(Config& c) {
  c.max_key_bytes = kLimit;
  c.max_value_bytes = kLimit;
}

TEST_P(Conformance, KeyOneOverLimitRejected) {
  ASSERT_NO_FATAL_FAILURE(Reopen(SmallLimits));
  const std::string over(kLimit + 1, 'k');
  const std::string_view e = "x";
  for (OpType type : {OpType::kGet, OpType::kPut, OpType::kDelete}) {
    Batch batch = NewBatch();
    batch.Append(type, over, V(1));
    EXPECT_TRUE(Failed(Run(std::move(batch))[0], Code::kKeyTooLarge)) << OpTypeName(type);
  }
  EXPECT_TRUE(Failed(Cas(over, nullptr, V(1)), Code::kKeyTooLarge));
  EXPECT_TRUE(Failed(Cas(over, &e, V(1)), Code::kKeyTooLarge));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, KeyAtLimitAccepted) {
  KVCG_SKIP_IF_FIXED8("keys must be 8 bytes, so a key at the limit is not valid");
  ASSERT_NO_FATAL_FAILURE(Reopen(SmallLimits));
  const std::string at(kLimit, 'k');
  const std::string over = at + "k";
  EXPECT_TRUE(Failed(Put(over, "v"), Code::kKeyTooLarge));
  EXPECT_TRUE(NotFound(Get(at))) << "the over-limit PUT must not have stored a truncated key";
  EXPECT_TRUE(NotFound(Put(at, "v")));
  EXPECT_TRUE(Found(Get(at), "v"));
  EXPECT_TRUE(Failed(Get(over), Code::kKeyTooLarge));
  EXPECT_TRUE(Found(Delete(at), "v"));
}

TEST_P(Conformance, ValueOneOverLimitRejected) {
  ASSERT_NO_FATAL_FAILURE(Reopen(SmallLimits));
  const std::string over(kLimit + 1, 'v');
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  EXPECT_TRUE(Failed(Put(K(1), over), Code::kValueTooLarge));
  EXPECT_TRUE(Failed(Put(K(2), over), Code::kValueTooLarge));
  EXPECT_TRUE(Failed(Cas(K(2), nullptr, over), Code::kValueTooLarge));
  const std::string old = V(1);
  const std::string_view e = old;
  EXPECT_TRUE(Failed(Cas(K(1), &e, over), Code::kValueTooLarge));
  const std::string_view over_expected = over;
  EXPECT_TRUE(Failed(Cas(K(1), &over_expected, V(3)), Code::kValueTooLarge))
      << "an expected value over the limit can never match and is rejected like a value";
  EXPECT_TRUE(Found(Get(K(1)), V(1))) << "a rejected PUT/CAS must leave the old value";
  EXPECT_TRUE(NotFound(Get(K(2))));
  EXPECT_EQ(store_->Size(), 1u);
}

TEST_P(Conformance, ValueAtLimitAccepted) {
  KVCG_SKIP_IF_FIXED8("values must be 8 bytes, so a value at the limit is not valid");
  ASSERT_NO_FATAL_FAILURE(Reopen(SmallLimits));
  const std::string at(kLimit, 'v');
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  EXPECT_TRUE(Failed(Put(K(1), at + "v"), Code::kValueTooLarge));
  EXPECT_TRUE(Found(Put(K(1), at), V(1)));
  EXPECT_TRUE(Found(Get(K(1)), at));
  // Values do not count against the key limit and vice versa.
  const std::string key_at(kLimit, 'k');
  EXPECT_TRUE(NotFound(Put(key_at, at)));
  EXPECT_TRUE(Found(Get(key_at), at));
}

TEST_P(Conformance, DefaultLimitsAcceptLargeKeys) {
  KVCG_SKIP_IF_FIXED8("keys must be 8 bytes");
  ASSERT_EQ(config_.max_key_bytes, 64u * 1024) << "the documented default";
  const std::string at(config_.max_key_bytes, 'k');
  EXPECT_TRUE(NotFound(Put(at, "v")));
  EXPECT_TRUE(Found(Get(at), "v"));
  EXPECT_TRUE(Failed(Put(at + "k", "v"), Code::kKeyTooLarge));
}

TEST_P(Conformance, OverLimitOperationChangesNothingRestOfBatchRuns) {
  ASSERT_NO_FATAL_FAILURE(Reopen(SmallLimits));
  ASSERT_TRUE(NotFound(Put(K(2), V(2))));
  const std::string big_key(kLimit + 1, 'k');
  const std::string big_value(kLimit + 1, 'v');
  Batch batch = NewBatch();
  batch.Put(K(1), V(1));        // 0: ok
  batch.Put(big_key, V(3));     // 1: key too large
  batch.Put(K(2), big_value);   // 2: value too large, K(2) keeps V(2)
  batch.Get(K(2));              // 3
  batch.Delete(big_key);        // 4: key too large
  batch.Get(K(1));              // 5
  batch.Put(K(2), V(4));        // 6
  batch.Get(big_key);           // 7: key too large
  batch.Get(K(2));              // 8
  Results r = Run(std::move(batch));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Failed(r[1], Code::kKeyTooLarge));
  EXPECT_TRUE(Failed(r[2], Code::kValueTooLarge));
  EXPECT_TRUE(Found(r[3], V(2)));
  EXPECT_TRUE(Failed(r[4], Code::kKeyTooLarge));
  EXPECT_TRUE(Found(r[5], V(1)));
  EXPECT_TRUE(Found(r[6], V(2)));
  EXPECT_TRUE(Failed(r[7], Code::kKeyTooLarge));
  EXPECT_TRUE(Found(r[8], V(4)));
  EXPECT_EQ(store_->Size(), 2u);
}

// A key or CAS expected value of 2^32 - 1 bytes does not fit a batch's key
// arena: the batch marks it (Batch::overflowed) without copying it, and the
// store answers kKeyTooLarge / kValueTooLarge for that op alone. The bytes
// are an address-space reservation of untouched zero pages, so no RAM is
// spent and nothing may read them.
TEST_P(Conformance, OverflowedBatchBytesAreRejected) {
  struct Reservation {
    size_t size = size_t{Batch::kOverflow};
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ~Reservation() {
      if (p != MAP_FAILED) munmap(p, size);
    }
  } reservation;
  if (reservation.p == MAP_FAILED) GTEST_SKIP() << "could not reserve 4 GiB of address space";
  const std::string_view huge(static_cast<const char*>(reservation.p), reservation.size);
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  Batch batch = NewBatch();
  batch.Get(huge);                         // 0: key too large
  batch.Put(huge, V(2));                   // 1: key too large
  batch.CompareAndSwap(K(1), &huge, V(3));  // 2: expected value too large
  batch.Delete(huge);                      // 3: key too large
  batch.Get(K(1));                         // 4
  batch.CompareAndSwap(huge, nullptr, V(4));  // 5: key too large
  batch.Put(K(2), V(5));                   // 6
  ASSERT_TRUE(batch.overflowed(0) && batch.overflowed(2) && !batch.overflowed(4));
  Results r = Run(std::move(batch));
  EXPECT_TRUE(Failed(r[0], Code::kKeyTooLarge));
  EXPECT_TRUE(Failed(r[1], Code::kKeyTooLarge));
  EXPECT_TRUE(Failed(r[2], Code::kValueTooLarge));
  EXPECT_TRUE(Failed(r[3], Code::kKeyTooLarge));
  EXPECT_TRUE(Found(r[4], V(1)));
  EXPECT_TRUE(Failed(r[5], Code::kKeyTooLarge));
  EXPECT_TRUE(NotFound(r[6]));
  EXPECT_TRUE(Found(Get(K(1)), V(1))) << "the rejected CAS must leave the old value";
  if (!fixed8()) {
    EXPECT_TRUE(NotFound(Get(""))) << "an overflowed key must not act as the empty key";
  }
  EXPECT_EQ(store_->Size(), 2u);
}

TEST_P(Conformance, Fixed8RejectsOtherSizes) {
  if (!fixed8()) GTEST_SKIP() << "only the fixed8 layout restricts sizes";
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  for (size_t key_size : {0, 1, 7, 9, 16}) {
    SCOPED_TRACE(key_size);
    const std::string key = K(1).substr(0, key_size) + std::string(key_size > 8 ? key_size - 8 : 0, '\0');
    ASSERT_EQ(key.size(), key_size);
    EXPECT_TRUE(Failed(Get(key), Code::kInvalidArgument));
    EXPECT_TRUE(Failed(Put(key, V(2)), Code::kInvalidArgument));
    EXPECT_TRUE(Failed(Delete(key), Code::kInvalidArgument));
    EXPECT_TRUE(Failed(Cas(key, nullptr, V(2)), Code::kInvalidArgument));
  }
  for (size_t value_size : {0, 1, 7, 9, 16}) {
    SCOPED_TRACE(value_size);
    const std::string value(value_size, 'v');
    EXPECT_TRUE(Failed(Put(K(1), value), Code::kInvalidArgument));
    EXPECT_TRUE(Failed(Put(K(2), value), Code::kInvalidArgument));
    EXPECT_TRUE(Failed(Cas(K(2), nullptr, value), Code::kInvalidArgument));
    const std::string_view expected = value;
    EXPECT_TRUE(Failed(Cas(K(1), &expected, V(2)), Code::kInvalidArgument)) << "CAS expected value";
  }
  EXPECT_TRUE(Found(Get(K(1)), V(1)));
  EXPECT_TRUE(NotFound(Get(K(2))));
  EXPECT_EQ(store_->Size(), 1u);
}

}  // namespace
}  // namespace kvcg::conformance
