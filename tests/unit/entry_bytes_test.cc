// EntryBytes (src/store/cpu/entry_bytes.h), the key and value of a CPU
// shard table entry: inline up to 48 bytes together, one heap buffer
// beyond; and the CPU backend with keys and values on both sides of that
// line while its tables grow, shift entries on delete and overwrite values
// across it.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvcg/store.h"
#include "store/cpu/entry_bytes.h"
#include "store/cpu/shard_table.h"

namespace kvcg {
namespace {

using store::cpu::EntryBytes;

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + 7 * i);
  return s;
}

bool Inside(const EntryBytes& e) {
  const char* begin = reinterpret_cast<const char*>(&e);
  return e.key().data() >= begin && e.key().data() < begin + sizeof e;
}

TEST(EntryBytes, AnEntryIsOneCacheLine) {
  EXPECT_EQ(sizeof(store::cpu::ShardTable::Entry), 64u);
  EXPECT_EQ(alignof(store::cpu::ShardTable::Entry), 64u);
}

TEST(EntryBytes, HoldsEverySizeInlineOrOnTheHeap) {
  for (const size_t k : {0u, 1u, 16u, 24u, 47u, 48u, 49u, 300u}) {
    for (const size_t v : {0u, 1u, 8u, 32u, 48u, 64u, 1000u}) {
      const std::string key = Bytes(k, 'a'), value = Bytes(v, 'b');
      EntryBytes e;
      e.Assign(key, value);
      EXPECT_EQ(e.key(), key) << k << " " << v;
      EXPECT_EQ(e.value(), value) << k << " " << v;
      EXPECT_EQ(Inside(e), k + v <= EntryBytes::kInlineBytes) << k << " " << v;
    }
  }
}

// Every change of value keeps the key, inline to inline, inline to heap,
// heap to a larger heap buffer, heap to a smaller value, heap to inline.
TEST(EntryBytes, ValuesChangeAcrossTheInlineLineAndKeepTheKey) {
  for (const size_t k : {0u, 16u, 40u, 48u, 60u}) {
    const std::string key = Bytes(k, 'k');
    EntryBytes e;
    e.Assign(key, "v");
    for (const size_t v : {8u, 32u, 100u, 20u, 500u, 3u, 0u, 40u, 1000u, 8u}) {
      const std::string value = Bytes(v, char('a' + v));
      e.AssignValue(value);
      ASSERT_EQ(e.key(), key) << k << " " << v;
      ASSERT_EQ(e.value(), value) << k << " " << v;
      EXPECT_EQ(Inside(e), k + v <= EntryBytes::kInlineBytes) << k << " " << v;
    }
  }
}

TEST(EntryBytes, CopiesAndMoves) {
  for (const size_t v : {8u, 32u, 33u, 200u}) {
    const std::string key = Bytes(16, 'K'), value = Bytes(v, 'V');
    EntryBytes a;
    a.Assign(key, value);
    EntryBytes b(a);  // copy: its own bytes
    EXPECT_EQ(b.key(), key);
    EXPECT_EQ(b.value(), value);
    EXPECT_NE(a.key().data(), b.key().data());
    EntryBytes c(std::move(a));  // move: a is left empty
    EXPECT_EQ(c.value(), value);
    EXPECT_TRUE(a.key().empty() && a.value().empty());  // NOLINT(bugprone-use-after-move)
    EntryBytes d;
    d.Assign(Bytes(30, 'x'), Bytes(90, 'y'));
    d = std::move(c);  // frees d's buffer, takes c's
    EXPECT_EQ(d.key(), key);
    EXPECT_EQ(d.value(), value);
    EXPECT_TRUE(c.value().empty());  // NOLINT(bugprone-use-after-move)
    EntryBytes& self = d;
    d = self;  // self-assignment keeps the bytes
    EXPECT_EQ(d.value(), value);
    EntryBytes e;
    e = b;
    EXPECT_EQ(e.key(), key);
    EXPECT_EQ(e.value(), value);
    std::vector<EntryBytes> many(3);
    many[1] = std::move(e);
    many.resize(100);  // moves them
    EXPECT_EQ(many[1].value(), value);
  }
}

// The CPU backend with keys of 1 to 200 bytes and values of 0 to 300:
// inserts that grow its shard tables (entries moved), overwrites that move
// values between the entry and the heap, deletes (backward shifts move later
// entries into the holes), and every key read back.
TEST(EntryBytes, CpuStoreKeepsEveryKeyAndValueThroughGrowthOverwritesAndDeletes) {
  Config c;
  c.backend = Backend::kCpu;
  c.layout = Layout::kGeneral;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(c, &store).ok());
  const size_t kKeyLengths[] = {1, 8, 15, 16, 23, 24, 25, 40, 47, 48, 49, 200};
  const size_t kValueLengths[] = {0, 1, 8, 16, 24, 32, 33, 47, 48, 64, 300};
  std::vector<std::string> keys;
  for (int i = 0; i < 4000; ++i) {
    // Distinct: the index, then filler up to the length.
    std::string k = std::to_string(i) + ".";
    const size_t want = kKeyLengths[i % 12];
    if (k.size() < want) k += Bytes(want - k.size(), char(i));
    keys.push_back(k);
  }
  auto value_of = [&](size_t i, int round) {
    std::string v = std::to_string(i) + "/" + std::to_string(round) + ":";
    const size_t want = kValueLengths[(i + 5 * round) % 11];
    if (v.size() < want) v += Bytes(want - v.size(), char(round));
    return v;
  };
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(store->Put(keys[i], value_of(i, round)).succeeded()) << i;
    }
  }
  for (size_t i = 0; i < keys.size(); i += 3) {
    const OpResult r = store->Delete(keys[i]);
    ASSERT_TRUE(r.found()) << i;
    EXPECT_EQ(r.value, value_of(i, 2)) << i;  // the value it had
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const OpResult r = store->Get(keys[i]);
    if (i % 3 == 0) {
      EXPECT_FALSE(r.found()) << i;
    } else {
      ASSERT_TRUE(r.found()) << "key " << i << " of " << keys[i].size() << " bytes";
      EXPECT_EQ(r.value, value_of(i, 2)) << i;
    }
  }
  EXPECT_EQ(store->Size(), keys.size() - (keys.size() + 2) / 3);
}

}  // namespace
}  // namespace kvcg
