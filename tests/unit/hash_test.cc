// Xxh3Hash must be exactly xxHash3-64 with seed 0: the GPU backend, the hot
// cache, the router and client-side sharding all hash independently and must
// agree. Known answers come from calling the xxHash library directly, over
// lengths that cover each of XXH3's code paths (0, 1-3, 4-8, 9-16, 17-128,
// 129-240, > 240 bytes).
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <gtest/gtest.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "common/batch_hash.h"
#include "kvcg/batch.h"
#include "kvcg/hash.h"

namespace kvcg {
namespace {

using namespace std::string_literals;

std::string Bytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

TEST(Xxh3Hash, MatchesXxh3_64bitsWithSeedZero) {
  for (size_t n = 0; n <= 1100; n += (n < 260 ? 1 : 37)) {
    const std::string key = Bytes(n, n);
    ASSERT_EQ(Xxh3Hash(key), XXH3_64bits(key.data(), key.size())) << "length " << n;
    ASSERT_EQ(Xxh3Hash(key), XXH3_64bits_withSeed(key.data(), key.size(), 0)) << "length " << n;
  }
  const std::string big = Bytes(1 << 20, 7);
  EXPECT_EQ(Xxh3Hash(big), XXH3_64bits(big.data(), big.size()));
}

// A fixed known answer as well, so that a change of library version or seed
// that changes both sides of the comparison above is still caught.
TEST(Xxh3Hash, EmptyKeyKnownAnswer) {
  EXPECT_EQ(Xxh3Hash(""), 0x2D06800538D394C2ull);  // XXH3_64bits("", 0), xxHash spec
}

TEST(Xxh3Hash, UsesEveryByte) {
  EXPECT_NE(Xxh3Hash("a"), Xxh3Hash("a\0"s));
  EXPECT_NE(Xxh3Hash("a"), Xxh3Hash("aa"));
  EXPECT_NE(Xxh3Hash(""), Xxh3Hash("\0"s));
  EXPECT_NE(Xxh3Hash("\0"s), Xxh3Hash("\0\0"s));
  // Flipping any single bit of a key changes its hash.
  const std::string key = Bytes(40, 3);
  const uint64_t h = Xxh3Hash(key);
  for (size_t bit = 0; bit < key.size() * 8; ++bit) {
    std::string flipped = key;
    flipped[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_NE(Xxh3Hash(flipped), h) << "bit " << bit;
  }
}

// 200k distinct keys: a 64-bit hash collides among them with probability
// ~1e-9, so any collision here is a bug (e.g. a truncated or ignored input).
TEST(Xxh3Hash, DistinctKeysGetDistinctHashes) {
  std::unordered_set<uint64_t> seen;
  std::unordered_set<uint64_t> low_bits;
  for (int i = 0; i < 200000; ++i) {
    const std::string key = "user:" + std::to_string(i);
    EXPECT_TRUE(seen.insert(Xxh3Hash(key)).second) << key;
    low_bits.insert(Xxh3Hash(key) & 0xFFFF);
  }
  // Sequential keys spread over the low 16 bits too (~95% of 65536 expected).
  EXPECT_GT(low_bits.size(), 60000u);
}

TEST(Xxh3Hash, IsAPureFunctionOfTheBytes) {
  std::string a = "some key";
  std::string b = a;
  EXPECT_EQ(Xxh3Hash(a), Xxh3Hash(b));
  EXPECT_EQ(Xxh3Hash(std::string_view(a).substr(0, 4)), Xxh3Hash("some"));
}


// HashKeys (common/batch_hash.h) must give every op what the batch's hash
// gives its key, on each of its paths: the default hash over a general
// batch (keys of many lengths), over a fixed-width batch of 8-byte keys and
// of wider keys, and any other hash through its pointer.
uint64_t SevenHash(std::string_view) { return 7; }
uint64_t LengthHash(std::string_view key) { return key.size() * 31 + 1; }

void ExpectHashKeysMatches(const Batch& batch, HashFunction hash) {
  std::vector<uint64_t> out(batch.size() + 1, 0xABCD);
  HashKeys(batch, hash, out.data());
  for (size_t i = 0; i < batch.size(); ++i) {
    ASSERT_EQ(out[i], hash(batch.key(i))) << "op " << i;
  }
  EXPECT_EQ(out[batch.size()], 0xABCDu) << "wrote past the batch";
}

TEST(HashKeys, GeneralBatchMatchesEachKeysHash) {
  Batch batch;
  for (size_t n = 0; n <= 300; n += (n < 40 ? 1 : 13)) {
    const std::string key = Bytes(n, n + 100);
    if (n % 3 == 0) {
      batch.Put(key, "v");
    } else {
      batch.Get(key);
    }
  }
  ASSERT_FALSE(batch.fixed_width());
  ExpectHashKeysMatches(batch, &Xxh3Hash);
  ExpectHashKeysMatches(batch, &SevenHash);
  ExpectHashKeysMatches(batch, &LengthHash);
}

TEST(HashKeys, FixedWidthBatchesMatchEachKeysHash) {
  for (size_t width : {size_t{8}, size_t{16}, size_t{24}}) {
    const size_t n = 37;
    std::vector<OpType> types(n);
    std::string keys, values(n * 8, 'v');
    for (size_t i = 0; i < n; ++i) {
      types[i] = i % 4 == 0 ? OpType::kPut : OpType::kGet;
      keys += Bytes(width, i * 1000 + width);
    }
    Batch batch;
    batch.AppendBulk(types.data(), keys.data(), width, values.data(), 8, n);
    ASSERT_TRUE(batch.fixed_width());
    ASSERT_EQ(batch.fixed_key_width(), width);
    ExpectHashKeysMatches(batch, &Xxh3Hash);
    ExpectHashKeysMatches(batch, &LengthHash);
  }
}

TEST(HashKeys, EmptyBatchWritesNothing) {
  Batch batch;
  uint64_t out = 0xABCD;
  HashKeys(batch, &Xxh3Hash, &out);
  EXPECT_EQ(out, 0xABCDu);
}

}  // namespace
}  // namespace kvcg
