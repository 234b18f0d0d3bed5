// Single-operation semantics (DESIGN.md §2): GET, PUT and DELETE return the
// value read or the previous value, and CAS stores exactly when its rule says
// (found ? current == expected : expect_absent), returning the value before it.
#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

TEST_P(Conformance, GetAbsentIsNotFound) {
  EXPECT_TRUE(NotFound(Get(K(1))));
  ASSERT_TRUE(NotFound(Put(K(2), V(2))));
  EXPECT_TRUE(NotFound(Get(K(1)))) << "another key's PUT must not make this one visible";
  EXPECT_EQ(store_->Size(), 1u);
}

TEST_P(Conformance, PutNewThenGet) {
  EXPECT_TRUE(NotFound(Put(K(1), V(1))));
  EXPECT_TRUE(Found(Get(K(1)), V(1)));
  EXPECT_TRUE(Found(Get(K(1)), V(1))) << "a GET must not consume the value";
  EXPECT_EQ(store_->Size(), 1u);
}

TEST_P(Conformance, PutExistingReturnsPreviousValue) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  EXPECT_TRUE(Found(Put(K(1), V(2)), V(1)));
  EXPECT_TRUE(Found(Get(K(1)), V(2)));
  EXPECT_TRUE(Found(Put(K(1), V(3, 500)), V(2)));
  EXPECT_TRUE(Found(Put(K(1), V(4, 3)), V(3, 500))) << "shrinking a value";
  EXPECT_TRUE(Found(Get(K(1)), V(4, 3)));
  EXPECT_TRUE(Found(Put(K(1), V(4, 3)), V(4, 3))) << "rewriting the same value";
  EXPECT_EQ(store_->Size(), 1u);
}

TEST_P(Conformance, DeleteReturnsPreviousValueThenAbsent) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  EXPECT_TRUE(Found(Delete(K(1)), V(1)));
  EXPECT_TRUE(NotFound(Get(K(1))));
  EXPECT_TRUE(NotFound(Delete(K(1))));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, DeleteAbsentIsNotFound) {
  EXPECT_TRUE(NotFound(Delete(K(7))));
  EXPECT_TRUE(NotFound(Get(K(7))));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, PutAfterDeleteIsNew) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  ASSERT_TRUE(Found(Delete(K(1)), V(1)));
  EXPECT_TRUE(NotFound(Put(K(1), V(2)))) << "a deleted key must not report its old value";
  EXPECT_TRUE(Found(Get(K(1)), V(2)));
  EXPECT_EQ(store_->Size(), 1u);
}

TEST_P(Conformance, KeysAreIndependent) {
  constexpr int kKeys = 200;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(NotFound(Put(K(i), V(i))));
  for (int i = 0; i < kKeys; i += 2) ASSERT_TRUE(Found(Delete(K(i)), V(i)));
  for (int i = 1; i < kKeys; i += 4) ASSERT_TRUE(Found(Put(K(i), V(i + 1000)), V(i)));
  for (int i = 0; i < kKeys; ++i) {
    SCOPED_TRACE(i);
    if (i % 2 == 0) EXPECT_TRUE(NotFound(Get(K(i))));
    else if (i % 4 == 1) EXPECT_TRUE(Found(Get(K(i)), V(i + 1000)));
    else EXPECT_TRUE(Found(Get(K(i)), V(i)));
  }
  EXPECT_EQ(store_->Size(), static_cast<uint64_t>(kKeys / 2));
}

// --- Compare-and-swap -------------------------------------------------------

TEST_P(Conformance, CasExpectAbsentOnAbsentKeyStores) {
  EXPECT_TRUE(NotFound(Cas(K(1), nullptr, V(1))));
  EXPECT_TRUE(Found(Get(K(1)), V(1)));
  EXPECT_EQ(store_->Size(), 1u);
}

TEST_P(Conformance, CasExpectAbsentOnPresentKeyDoesNotStore) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  EXPECT_TRUE(Found(Cas(K(1), nullptr, V(2)), V(1)));
  EXPECT_TRUE(Found(Get(K(1)), V(1)));
}

TEST_P(Conformance, CasMatchingExpectedStores) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  const std::string expected = V(1);
  const std::string_view e = expected;
  EXPECT_TRUE(Found(Cas(K(1), &e, V(2)), V(1)));
  EXPECT_TRUE(Found(Get(K(1)), V(2)));
}

TEST_P(Conformance, CasMismatchingExpectedDoesNotStore) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  const std::string expected = V(9);
  const std::string_view e = expected;
  EXPECT_TRUE(Found(Cas(K(1), &e, V(2)), V(1))) << "CAS returns the current value either way";
  EXPECT_TRUE(Found(Get(K(1)), V(1)));
}

TEST_P(Conformance, CasExpectedValueOnAbsentKeyDoesNotStore) {
  const std::string expected = V(1);
  const std::string_view e = expected;
  EXPECT_TRUE(NotFound(Cas(K(1), &e, V(2))));
  EXPECT_TRUE(NotFound(Get(K(1))));
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, CasAfterDeleteSeesAbsentKey) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  ASSERT_TRUE(Found(Delete(K(1)), V(1)));
  const std::string old = V(1);
  const std::string_view e = old;
  EXPECT_TRUE(NotFound(Cas(K(1), &e, V(2)))) << "the deleted value must not match";
  EXPECT_TRUE(NotFound(Get(K(1))));
  EXPECT_TRUE(NotFound(Cas(K(1), nullptr, V(3))));
  EXPECT_TRUE(Found(Get(K(1)), V(3)));
}

// A sequence of CAS operations in one batch on one key: each sees the effect
// of the ones before it, and "stored" follows from the result alone.
TEST_P(Conformance, CasSequenceFollowsStoredRule) {
  const std::string a = V(1), b = V(2), c = V(3), d = V(4), e = V(5);
  const std::string_view av = a, cv = c;
  Batch batch = NewBatch();
  batch.CompareAndSwap(K(1), nullptr, a);  // absent -> stores a
  batch.CompareAndSwap(K(1), nullptr, b);  // present -> no
  batch.CompareAndSwap(K(1), &av, c);      // a == a -> stores c
  batch.CompareAndSwap(K(1), &av, d);      // c != a -> no
  batch.CompareAndSwap(K(1), &cv, e);      // c == c -> stores e
  batch.Get(K(1));
  Results r = Run(std::move(batch));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Found(r[1], a));
  EXPECT_TRUE(Found(r[2], a));
  EXPECT_TRUE(Found(r[3], c));
  EXPECT_TRUE(Found(r[4], c));
  EXPECT_TRUE(Found(r[5], e));
}

}  // namespace
}  // namespace kvcg::conformance
