// Binary safety (DESIGN.md §2): keys and values are byte strings compared
// exactly. The empty value is a value (found, not absent); NUL and every other
// byte are data; a key that is a prefix of another is a different key; large
// values come back byte for byte.
#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

using namespace std::string_literals;

TEST_P(Conformance, EmptyValueIsFoundNotAbsent) {
  KVCG_SKIP_IF_FIXED8("values must be 8 bytes");
  ASSERT_TRUE(NotFound(Put("k", "")));
  EXPECT_TRUE(Found(Get("k"), ""));
  EXPECT_EQ(store_->Size(), 1u);
  EXPECT_TRUE(Found(Put("k", "x"), ""));
  EXPECT_TRUE(Found(Put("k", ""), "x"));
  EXPECT_TRUE(Found(Delete("k"), ""));
  EXPECT_TRUE(NotFound(Get("k")));
}

TEST_P(Conformance, CasDistinguishesEmptyValueFromAbsent) {
  KVCG_SKIP_IF_FIXED8("values must be 8 bytes");
  const std::string_view empty;
  EXPECT_TRUE(NotFound(Cas("k", &empty, "x"))) << "expected \"\" must not match an absent key";
  EXPECT_TRUE(NotFound(Get("k")));
  ASSERT_TRUE(NotFound(Put("k", "")));
  EXPECT_TRUE(Found(Cas("k", nullptr, "y"), "")) << "an empty value is present";
  EXPECT_TRUE(Found(Cas("k", &empty, "z"), ""));
  EXPECT_TRUE(Found(Get("k"), "z"));
}

TEST_P(Conformance, NulBytesInsideKeysAndValues) {
  KVCG_SKIP_IF_FIXED8("uses keys and values of several sizes; Fixed8SizedBinaryKeys covers fixed8");
  const std::string keys[] = {"a\0b"s, "a\0c"s, "\0"s, "\0\0"s, "\0\0\0"s, "x\0"s, "x"s};
  for (size_t i = 0; i < std::size(keys); ++i) {
    ASSERT_TRUE(NotFound(Put(keys[i], "v\0"s + std::to_string(i) + "\0\0"s))) << i;
  }
  for (size_t i = 0; i < std::size(keys); ++i) {
    EXPECT_TRUE(Found(Get(keys[i]), "v\0"s + std::to_string(i) + "\0\0"s)) << Show(keys[i]);
  }
  EXPECT_EQ(store_->Size(), std::size(keys));
  EXPECT_TRUE(NotFound(Get("a"))) << "a key must not be cut at its first NUL";
  EXPECT_TRUE(NotFound(Get("\0\0\0\0"s)));
}

TEST_P(Conformance, EveryByteValueInKeysAndValues) {
  KVCG_SKIP_IF_FIXED8("uses 1- and 256-byte keys; Fixed8SizedBinaryKeys covers fixed8");
  std::string all(256, '\0');
  for (int b = 0; b < 256; ++b) all[b] = static_cast<char>(b);
  // 256 one-byte keys, each with the 256 bytes rotated by its own byte.
  for (int b = 0; b < 256; ++b) {
    ASSERT_TRUE(NotFound(Put(std::string(1, static_cast<char>(b)), all.substr(b) + all.substr(0, b))));
  }
  ASSERT_TRUE(NotFound(Put(all, all)));
  for (int b = 0; b < 256; ++b) {
    EXPECT_TRUE(Found(Get(std::string(1, static_cast<char>(b))), all.substr(b) + all.substr(0, b))) << b;
  }
  EXPECT_TRUE(Found(Get(all), all));
  EXPECT_EQ(store_->Size(), 257u);
}

TEST_P(Conformance, KeysThatArePrefixesOfEachOtherAreDistinct) {
  KVCG_SKIP_IF_FIXED8("keys of different lengths");
  const std::string keys[] = {""s, "a"s, "a\0"s, "aa"s, "a\0\0"s, "aaa"s, "\0a"s, "b"s};
  for (size_t i = 0; i < std::size(keys); ++i) ASSERT_TRUE(NotFound(Put(keys[i], V(i)))) << i;
  for (size_t i = 0; i < std::size(keys); ++i) EXPECT_TRUE(Found(Get(keys[i]), V(i))) << i;
  // Removing one must leave its prefixes and extensions alone.
  ASSERT_TRUE(Found(Delete("a"), V(1)));
  ASSERT_TRUE(Found(Delete(""), V(0)));
  for (size_t i = 2; i < std::size(keys); ++i) EXPECT_TRUE(Found(Get(keys[i]), V(i))) << i;
  EXPECT_TRUE(NotFound(Get("a")));
  EXPECT_TRUE(NotFound(Get("")));
  EXPECT_EQ(store_->Size(), std::size(keys) - 2);
}

// Runs on every layout: 8-byte keys and values made of NUL and 0xff bytes and
// keys that differ in one byte only, at either end.
TEST_P(Conformance, Fixed8SizedBinaryKeys) {
  const std::string zeros(8, '\0'), ones(8, '\xff');
  std::vector<std::string> keys = {zeros, ones};
  for (int pos : {0, 7}) {
    for (int b : {0x01, 0x80, 0xff}) {
      std::string k = zeros;
      k[pos] = static_cast<char>(b);
      keys.push_back(k);
    }
  }
  std::vector<std::string> values;
  for (size_t i = 0; i < keys.size(); ++i) values.push_back(i == 0 ? ones : i == 1 ? zeros : V(i));
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(NotFound(Put(keys[i], values[i]))) << i;
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(Found(Get(keys[i]), values[i])) << Show(keys[i]);
  EXPECT_EQ(store_->Size(), keys.size());
  ASSERT_TRUE(Found(Delete(zeros), ones));
  EXPECT_TRUE(NotFound(Get(zeros)));
  for (size_t i = 1; i < keys.size(); ++i) EXPECT_TRUE(Found(Get(keys[i]), values[i])) << Show(keys[i]);
  EXPECT_TRUE(NotFound(Put(zeros, zeros))) << "the all-zero key must be an ordinary key";
  EXPECT_TRUE(Found(Get(zeros), zeros));
}

TEST_P(Conformance, LargeValuesRoundTripExactly) {
  KVCG_SKIP_IF_FIXED8("values must be 8 bytes");
  const std::string one_mib = RandomBytes(1 << 20, 1);
  const std::string sixteen_mib = RandomBytes(16 << 20, 2);
  ASSERT_TRUE(NotFound(Put("big", one_mib)));
  EXPECT_TRUE(Found(Get("big"), one_mib));
  EXPECT_TRUE(Found(Put("big", sixteen_mib), one_mib));
  EXPECT_TRUE(Found(Get("big"), sixteen_mib));
  // Several large values in one batch, and a large previous value returned.
  Batch batch = NewBatch();
  batch.Put("big2", sixteen_mib);
  batch.Put("big", one_mib);
  batch.Get("big2");
  batch.Delete("big");
  Results r = Run(std::move(batch));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(Found(r[1], sixteen_mib));
  EXPECT_TRUE(Found(r[2], sixteen_mib));
  EXPECT_TRUE(Found(r[3], one_mib));
  EXPECT_TRUE(Found(Get("big2"), sixteen_mib));
}

}  // namespace
}  // namespace kvcg::conformance
