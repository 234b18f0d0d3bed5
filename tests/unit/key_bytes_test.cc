// KeyBytes (src/store/cpu/key_bytes.h), the CPU shard table's key: bytes
// inline up to 24, on the heap beyond; and the CPU backend with keys on both
// sides of that line while its tables grow and shift entries on delete.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvcg/store.h"
#include "store/cpu/key_bytes.h"

namespace kvcg {
namespace {

using store::cpu::KeyBytes;

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + 7 * i);
  return s;
}

TEST(KeyBytes, HoldsEverySizeInlineOrOnTheHeap) {
  for (const size_t n : {0u, 1u, 15u, 16u, 23u, 24u, 25u, 64u, 1000u}) {
    const std::string want = Bytes(n, 'a');
    KeyBytes k;
    k.assign(want);
    EXPECT_EQ(k.size(), n);
    EXPECT_EQ(k.view(), want) << n;
    EXPECT_TRUE(k == std::string_view(want));
    // Inline keys sit inside the object, longer ones elsewhere.
    const char* begin = reinterpret_cast<const char*>(&k);
    const bool inside = k.data() >= begin && k.data() < begin + sizeof k;
    EXPECT_EQ(inside, n <= KeyBytes::kInlineBytes) << n;
  }
}

TEST(KeyBytes, ReassignsAcrossTheInlineLine) {
  KeyBytes k;
  const std::string long_key = Bytes(100, 'x'), longer = Bytes(300, 'y');
  const std::string shorter = Bytes(40, 'z'), short_key = Bytes(8, 'q');
  k.assign(long_key);
  EXPECT_EQ(k.view(), long_key);
  k.assign(shorter);  // fits the heap buffer it has
  EXPECT_EQ(k.view(), shorter);
  k.assign(longer);  // needs a larger one
  EXPECT_EQ(k.view(), longer);
  k.assign(short_key);  // back inline
  EXPECT_EQ(k.view(), short_key);
  k.assign(std::string_view());
  EXPECT_EQ(k.size(), 0u);
}

TEST(KeyBytes, CopiesAndMoves) {
  for (const size_t n : {10u, 24u, 25u, 200u}) {
    const std::string want = Bytes(n, 'm');
    KeyBytes a;
    a.assign(want);
    KeyBytes b(a);  // copy
    EXPECT_EQ(b.view(), want);
    EXPECT_NE(a.data(), b.data());  // its own bytes, inline or on the heap
    KeyBytes c(std::move(a));  // move: a is left empty
    EXPECT_EQ(c.view(), want);
    EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): stated behaviour
    KeyBytes d;
    d.assign(Bytes(50, 'd'));
    d = std::move(c);  // frees d's own buffer, takes c's
    EXPECT_EQ(d.view(), want);
    EXPECT_EQ(c.size(), 0u);  // NOLINT(bugprone-use-after-move)
    d = d;  // self-assignment keeps the bytes
    EXPECT_EQ(d.view(), want);
    KeyBytes e;
    e = b;
    EXPECT_TRUE(e == b);
    std::vector<KeyBytes> v(3);
    v[1] = std::move(e);
    v.resize(100);  // moves them
    EXPECT_EQ(v[1].view(), want);
  }
}

// The CPU backend with keys of 1 to 200 bytes: inserts that grow its shard
// tables (entries moved), overwrites, deletes (backward shifts move later
// entries into the holes), and every key read back.
TEST(KeyBytes, CpuStoreKeepsKeysOfEveryLengthThroughGrowthAndDeletes) {
  Config c;
  c.backend = Backend::kCpu;
  c.layout = Layout::kGeneral;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(c, &store).ok());
  const size_t kLengths[] = {1, 8, 15, 16, 23, 24, 25, 40, 200};
  std::vector<std::string> keys;
  for (int i = 0; i < 4000; ++i) {
    // Distinct: the index, then filler up to the length (or the index alone).
    std::string k = std::to_string(i) + ".";
    const size_t want = kLengths[i % 9];
    if (k.size() < want) k += Bytes(want - k.size(), char(i));
    keys.push_back(k);
  }
  auto value_of = [](size_t i, int round) { return "v" + std::to_string(i) + "." + std::to_string(round); };
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(store->Put(keys[i], value_of(i, round)).succeeded()) << i;
    }
  }
  for (size_t i = 0; i < keys.size(); i += 3) ASSERT_TRUE(store->Delete(keys[i]).found()) << i;
  for (size_t i = 0; i < keys.size(); ++i) {
    const OpResult r = store->Get(keys[i]);
    if (i % 3 == 0) {
      EXPECT_FALSE(r.found()) << i;
    } else {
      ASSERT_TRUE(r.found()) << "key " << i << " of " << keys[i].size() << " bytes";
      EXPECT_EQ(r.value, value_of(i, 1)) << i;
    }
  }
  EXPECT_EQ(store->Size(), keys.size() - (keys.size() + 2) / 3);
}

}  // namespace
}  // namespace kvcg
