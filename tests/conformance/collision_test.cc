// Forced hash collisions (DESIGN.md §2): keys are compared exactly, so two
// distinct keys with equal hashes never alias. Config::hash is replaced by
// degenerate functions — everything to one value (including 0 and all-ones,
// which a table might mistake for an "empty" marker), to a few low values, and
// to a few values that differ only in the top bits — and thousands of keys
// must each keep their own value through overwrites, deletes and re-inserts.
#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

uint64_t HashSeven(std::string_view) { return 7; }
uint64_t HashZero(std::string_view) { return 0; }
uint64_t HashAllOnes(std::string_view) { return ~uint64_t{0}; }
uint64_t HashFourLow(std::string_view key) { return Xxh3Hash(key) & 3; }
uint64_t HashFourHigh(std::string_view key) { return (Xxh3Hash(key) & 3) << 62; }

struct NamedHash {
  const char* name;
  HashFunction hash;
};
const NamedHash kHashes[] = {{"seven", &HashSeven},         {"zero", &HashZero},
                             {"all-ones", &HashAllOnes},   {"four-low", &HashFourLow},
                             {"four-high", &HashFourHigh}};

// Every colliding key lands in one probe run, so the work is quadratic in the
// key count; sanitizer builds (5-15x slower per probe) check 500 keys, which
// still spans many slabs and table growths.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCollidingKeys = 500;
#else
constexpr int kCollidingKeys = 2000;
#endif

TEST_P(Conformance, CollidingKeysNeverAlias) {
  constexpr int kKeys = kCollidingKeys;
  constexpr int kChunk = 250;
  for (const NamedHash& h : kHashes) {
    SCOPED_TRACE(h.name);
    ASSERT_NO_FATAL_FAILURE(Reopen([&](Config& c) { c.hash = h.hash; }));
    // One operation per key, sent in chunks; results in key order.
    auto for_all = [&](auto&& add) {
      std::vector<OpResult> all;
      for (int begin = 0; begin < kKeys; begin += kChunk) {
        Batch batch = NewBatch();
        for (int i = begin; i < begin + kChunk; ++i) add(batch, i);
        // Copied out: each chunk's Results dies at the end of the iteration.
        for (OpResult& r : Run(std::move(batch)).ToOwned()) all.push_back(std::move(r));
      }
      return all;
    };
    std::vector<OpResult> r = for_all([&](Batch& b, int i) { b.Put(K(i), V(i)); });
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(NotFound(r[i])) << i;
    ASSERT_EQ(store_->Size(), static_cast<uint64_t>(kKeys));
    r = for_all([&](Batch& b, int i) { b.Get(K(i)); });
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(Found(r[i], V(i))) << i;

    // Overwrite every third key, then delete every fifth.
    r = for_all([&](Batch& b, int i) {
      if (i % 3 == 0) b.Put(K(i), V(i + kKeys));
      else b.Get(K(i));
    });
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(Found(r[i], V(i))) << i;
    auto current = [&](int i) { return i % 3 == 0 ? V(i + kKeys) : V(i); };
    r = for_all([&](Batch& b, int i) {
      if (i % 5 == 0) b.Delete(K(i));
      else b.Get(K(i));
    });
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(Found(r[i], current(i))) << i;
    ASSERT_EQ(store_->Size(), static_cast<uint64_t>(kKeys - kKeys / 5));
    r = for_all([&](Batch& b, int i) { b.Get(K(i)); });
    for (int i = 0; i < kKeys; ++i) {
      if (i % 5 == 0) ASSERT_TRUE(NotFound(r[i])) << i;
      else ASSERT_TRUE(Found(r[i], current(i))) << i;
    }

    // Re-insert the deleted keys; nobody else may have been touched.
    r = for_all([&](Batch& b, int i) {
      if (i % 5 == 0) b.Put(K(i), V(i + 2 * kKeys));
      else b.Get(K(i));
    });
    for (int i = 0; i < kKeys; ++i) {
      if (i % 5 == 0) ASSERT_TRUE(NotFound(r[i])) << i;
      else ASSERT_TRUE(Found(r[i], current(i))) << i;
    }
    r = for_all([&](Batch& b, int i) { b.Get(K(i)); });
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_TRUE(Found(r[i], i % 5 == 0 ? V(i + 2 * kKeys) : current(i))) << i;
    }
    EXPECT_EQ(store_->Size(), static_cast<uint64_t>(kKeys));
    EXPECT_TRUE(NotFound(Get(K(kKeys)))) << "a never-stored colliding key";
    EXPECT_TRUE(NotFound(Delete(K(kKeys + 1))));
  }
}

// Colliding keys of equal length that differ in one byte, and keys that are
// prefixes of each other: exact comparison, not by length or hash.
TEST_P(Conformance, CollidingNearIdenticalKeysNeverAlias) {
  ASSERT_NO_FATAL_FAILURE(Reopen([](Config& c) { c.hash = &HashSeven; }));
  std::vector<std::string> keys;
  if (fixed8()) {
    for (int pos = 0; pos < 8; ++pos) {
      std::string k = K(0);
      k[pos] ^= 1;
      keys.push_back(k);
    }
    keys.push_back(K(0));
  } else {
    using namespace std::string_literals;
    keys = {""s, "a"s, "a\0"s, "aa"s, "ab"s, "ba"s, "a\0\0"s, "\0a"s, std::string(100, 'x'),
            std::string(99, 'x') + "y", std::string(101, 'x')};
  }
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(NotFound(Put(keys[i], V(i)))) << Show(keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(Found(Get(keys[i]), V(i))) << Show(keys[i]);
  for (size_t i = 0; i < keys.size(); i += 2) ASSERT_TRUE(Found(Delete(keys[i]), V(i))) << Show(keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 2 == 0) EXPECT_TRUE(NotFound(Get(keys[i]))) << Show(keys[i]);
    else EXPECT_TRUE(Found(Get(keys[i]), V(i))) << Show(keys[i]);
  }
  EXPECT_EQ(store_->Size(), keys.size() / 2);
}

}  // namespace
}  // namespace kvcg::conformance
