// Exhausted capacity (DESIGN.md §2, Config::max_keys / max_memory_bytes): a
// PUT that would exceed the limit gets kCapacityExhausted and changes nothing;
// everything stored before stays readable and unchanged; updates of existing
// keys that fit still work; DELETE and Clear free room again.
#include <set>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

TEST_P(Conformance, MaxKeysRejectsTheNextNewKeyAndLosesNothing) {
  constexpr uint64_t kMax = 100;
  ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) { c.max_keys = kMax; }));
  for (uint64_t i = 0; i < kMax; ++i) ASSERT_TRUE(NotFound(Put(K(i), V(i)))) << i;
  EXPECT_EQ(store_->Size(), kMax);

  EXPECT_TRUE(Failed(Put(K(kMax), V(kMax)), Code::kCapacityExhausted));
  EXPECT_TRUE(Failed(Cas(K(kMax), nullptr, V(kMax)), Code::kCapacityExhausted))
      << "a CAS that would insert a new key needs room too";
  EXPECT_TRUE(NotFound(Get(K(kMax))));
  EXPECT_TRUE(NotFound(Delete(K(kMax + 1))));
  EXPECT_EQ(store_->Size(), kMax);

  // Updating existing keys needs no new room.
  EXPECT_TRUE(Found(Put(K(5), V(1005)), V(5)));
  const std::string old = V(6);
  const std::string_view e = old;
  EXPECT_TRUE(Found(Cas(K(6), &e, V(1006)), V(6)));
  for (uint64_t i = 0; i < kMax; ++i) {
    const uint64_t want = i == 5 || i == 6 ? i + 1000 : i;
    ASSERT_TRUE(Found(Get(K(i)), V(want))) << i;
  }

  // DELETE frees exactly one slot.
  ASSERT_TRUE(Found(Delete(K(0)), V(0)));
  EXPECT_TRUE(NotFound(Put(K(kMax), V(kMax))));
  EXPECT_TRUE(Failed(Put(K(kMax + 1), V(kMax + 1)), Code::kCapacityExhausted));
  EXPECT_TRUE(Found(Get(K(kMax)), V(kMax)));
  EXPECT_EQ(store_->Size(), kMax);
}

// With room for 5 more keys, a batch of 10 new keys stores exactly 5 of them
// (which 5 is up to the backend: ops on different keys are unordered).
TEST_P(Conformance, MaxKeysInsideOneBatch) {
  constexpr uint64_t kMax = 20;
  ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) { c.max_keys = kMax; }));
  for (uint64_t i = 0; i < kMax - 5; ++i) ASSERT_TRUE(NotFound(Put(K(i), V(i))));
  Batch batch = NewBatch();
  for (uint64_t i = 100; i < 110; ++i) batch.Put(K(i), V(i));
  batch.Put(K(3), V(1003));  // an update always fits
  Results r = Run(std::move(batch));
  std::set<uint64_t> stored;
  for (uint64_t i = 100; i < 110; ++i) {
    const OpResultView result = r[i - 100];
    if (result.code == Code::kNotFound) stored.insert(i);
    else EXPECT_TRUE(Failed(result, Code::kCapacityExhausted)) << i;
  }
  EXPECT_TRUE(Found(r[10], V(3)));
  EXPECT_EQ(stored.size(), 5u);
  EXPECT_EQ(store_->Size(), kMax);
  for (uint64_t i = 100; i < 110; ++i) {
    if (stored.count(i)) EXPECT_TRUE(Found(Get(K(i)), V(i))) << i;
    else EXPECT_TRUE(NotFound(Get(K(i)))) << i;
  }
  for (uint64_t i = 0; i < kMax - 5; ++i) EXPECT_TRUE(Found(Get(K(i)), V(i == 3 ? 1003 : i))) << i;
}

TEST_P(Conformance, MaxMemoryRejectsWhatDoesNotFitAndLosesNothing) {
  constexpr uint64_t kLimit = 64 * 1024;
  constexpr size_t kValueSize = 200;
  ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) { c.max_memory_bytes = kLimit; }));
  uint64_t n = 0;
  while (true) {
    ASSERT_LT(n, kLimit) << "no kCapacityExhausted although every entry costs at least a byte";
    const OpResult r = Put(K(n), V(n, kValueSize));
    if (r.code == Code::kCapacityExhausted) {
      EXPECT_TRUE(r.value.empty());
      break;
    }
    ASSERT_TRUE(NotFound(r)) << n;
    ++n;
  }
  const uint64_t entry_bytes = K(0).size() + V(0, kValueSize).size();
  ASSERT_GT(n, 0u) << "not even one entry fit in " << kLimit << " bytes";
  EXPECT_LE(n * entry_bytes, kLimit) << "stored more than the limit allows";
  EXPECT_LE(store_->MemoryBytes(), kLimit);
  EXPECT_GE(store_->MemoryBytes(), n * entry_bytes) << "keys and values must be charged";
  EXPECT_EQ(store_->Size(), n);
  EXPECT_TRUE(NotFound(Get(K(n))));

  // Replacing a value with one of the same size fits; everything is intact.
  EXPECT_TRUE(Found(Put(K(1), V(1001, kValueSize)), V(1, kValueSize)));
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(Found(Get(K(i)), V(i == 1 ? 1001 : i, kValueSize))) << i;
  }
  // DELETE frees room for a new entry of the same size.
  ASSERT_TRUE(Found(Delete(K(0)), V(0, kValueSize)));
  EXPECT_TRUE(NotFound(Put(K(n), V(n, kValueSize))));
  EXPECT_TRUE(Found(Get(K(n)), V(n, kValueSize)));
  EXPECT_EQ(store_->Size(), n);
}

TEST_P(Conformance, MaxMemoryRejectsGrowingAValue) {
  KVCG_SKIP_IF_FIXED8("values must be 8 bytes, so no update can grow");
  constexpr uint64_t kLimit = 64 * 1024;
  ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) { c.max_memory_bytes = kLimit; }));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(NotFound(Put(K(i), V(i, 100))));
  const uint64_t before = store_->MemoryBytes();
  // A value as large as the whole budget cannot fit beside anything else.
  EXPECT_TRUE(Failed(Put(K(2), std::string(kLimit, 'g')), Code::kCapacityExhausted));
  EXPECT_TRUE(Found(Get(K(2)), V(2, 100))) << "a rejected update keeps the old value";
  EXPECT_EQ(store_->MemoryBytes(), before);
  // Growing within the budget works.
  EXPECT_TRUE(Found(Put(K(2), std::string(kLimit / 4, 'g')), V(2, 100)));
  EXPECT_TRUE(Found(Get(K(2)), std::string(kLimit / 4, 'g')));
  EXPECT_EQ(store_->Size(), 10u);
}

TEST_P(Conformance, ClearFreesCapacity) {
  constexpr uint64_t kMax = 50;
  ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) { c.max_keys = kMax; }));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    for (uint64_t i = 0; i < kMax; ++i) ASSERT_TRUE(NotFound(Put(K(i + round), V(i)))) << i;
    ASSERT_TRUE(Failed(Put(K(kMax + 10), V(0)), Code::kCapacityExhausted));
    store_->Clear();
    EXPECT_EQ(store_->Size(), 0u);
  }
}

}  // namespace
}  // namespace kvcg::conformance
