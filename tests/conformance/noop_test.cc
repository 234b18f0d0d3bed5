// OpType::kNoop and Batch::SetNoop (kvcg/batch.h): an op turned into a no-op
// does nothing and is answered kNotFound, whatever it was and whatever its
// key and value are (neither is checked nor read), and the ops around it
// keep their positions, order and effects. The KVCG engine relies on this:
// it answers hot-cache hits itself and hands the client's batch to the
// canonical store with those ops masked, so every backend must honour it on
// every path (a small batch, a large one, a fixed-width one).
#include <map>
#include <random>
#include <string>
#include <vector>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

TEST(BatchSetNoop, DropsStoresAndKeepsPositions) {
  Batch b;
  b.Put("a", "1");
  b.Get("b");
  const std::string_view expected = "x";
  b.CompareAndSwap("c", &expected, "y");
  b.Delete("d");
  ASSERT_EQ(b.stores(), 2u);
  b.SetNoop(0);
  b.SetNoop(2);
  b.SetNoop(3);
  EXPECT_EQ(b.stores(), 0u) << "a masked PUT or CAS no longer stores";
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.type(0), OpType::kNoop);
  EXPECT_EQ(b.type(1), OpType::kGet);
  EXPECT_EQ(b.type(2), OpType::kNoop);
  EXPECT_EQ(b.key(1), "b") << "the other ops' bytes stay where they are";
  EXPECT_STREQ(OpTypeName(OpType::kNoop), "NOOP");
}

TEST_P(Conformance, NoopChangesNothingAndIsNotFound) {
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  Batch b = NewBatch();
  b.Get(K(1));         // 0: V(1)
  b.Put(K(1), V(2));   // 1: masked: K(1) keeps V(1)
  b.Delete(K(1));      // 2: masked: K(1) stays
  b.Get(K(1));         // 3: V(1)
  b.Put(K(2), V(2));   // 4: stores
  const std::string v2 = V(2);
  const std::string_view expected = v2;
  b.CompareAndSwap(K(2), &expected, V(3));  // 5: masked
  b.Get(K(2));         // 6: V(2)
  b.Put(K(3), V(3));   // 7: masked: K(3) never exists
  if (!fixed8()) {
    b.Expire(K(1), 1);  // 8: masked: K(1) keeps no expiry
  }
  for (size_t i : {1, 2, 5, 7}) b.SetNoop(i);
  if (!fixed8()) b.SetNoop(8);
  const size_t n = b.size();
  Results r = Run(std::move(b));
  EXPECT_TRUE(Found(r[0], V(1)));
  for (size_t i : {size_t(1), size_t(2), size_t(5), size_t(7)}) {
    EXPECT_TRUE(NotFound(r[i])) << "op " << i;
  }
  EXPECT_TRUE(Found(r[3], V(1)));
  EXPECT_TRUE(NotFound(r[4]));
  EXPECT_TRUE(Found(r[6], V(2)));
  if (n > 8) {
    EXPECT_TRUE(NotFound(r[8]));
  }
  EXPECT_TRUE(Found(Get(K(1)), V(1)));
  EXPECT_TRUE(Found(Get(K(2)), V(2)));
  EXPECT_TRUE(NotFound(Get(K(3))));
  EXPECT_EQ(store_->Size(), 2u);
}

// A masked op's key and value may be anything: a key over the limit, or of
// the wrong width for fixed8, is neither refused nor looked at.
TEST_P(Conformance, NoopIsNotChecked) {
  Batch b = NewBatch();
  b.Get(std::string(config_.max_key_bytes + 1, 'k'));
  b.Put(std::string(3, 'k'), std::string(5, 'v'));
  b.Put(K(1), V(1));
  b.SetNoop(0);
  b.SetNoop(1);
  Results r = Run(std::move(b));
  EXPECT_TRUE(NotFound(r[0]));
  EXPECT_TRUE(NotFound(r[1]));
  EXPECT_TRUE(NotFound(r[2]));
  EXPECT_TRUE(Found(Get(K(1)), V(1)));
  EXPECT_EQ(store_->Size(), 1u);
}

// Every third op masked, in general and fixed-width batches of every size
// the GPU backend treats differently; the model sees only the others.
TEST_P(Conformance, NoopsInBatchesOfEverySize) {
  std::mt19937_64 rng(29);
  std::map<uint64_t, uint64_t> model;  // key -> value, both 8 bytes
  const auto bytes = [](const uint64_t& w) {
    return std::string_view(reinterpret_cast<const char*>(&w), 8);
  };
  uint64_t next_value = 1;
  for (bool fixed_width : {false, true}) {
    for (size_t n : {size_t(3), size_t(300), size_t(70000)}) {
      SCOPED_TRACE(std::string(fixed_width ? "fixed-width" : "general") + ", " +
                   std::to_string(n) + " ops");
      const uint64_t keys = n < 1000 ? 20 : 20000;
      std::vector<OpType> types(n);
      std::vector<uint64_t> key_words(n), values(n);
      for (size_t i = 0; i < n; ++i) {
        const uint64_t roll = rng() % 10;
        types[i] = roll < 5 ? OpType::kGet : roll < 9 ? OpType::kPut : OpType::kDelete;
        key_words[i] = 1 + rng() % keys;
        values[i] = next_value++;
      }
      Batch b = NewBatch();
      if (fixed_width) {
        b.AppendBulk(types.data(), key_words.data(), 8, values.data(), 8, n);
      } else {
        for (size_t i = 0; i < n; ++i) {
          b.Append(types[i], bytes(key_words[i]),
                   types[i] == OpType::kPut ? bytes(values[i]) : std::string_view());
        }
      }
      for (size_t i = 0; i < n; i += 3) b.SetNoop(i);
      Results r = Run(std::move(b));
      for (size_t i = 0; i < n; ++i) {
        if (i % 3 == 0) {
          ASSERT_TRUE(NotFound(r[i])) << "masked op " << i;
          continue;
        }
        const auto it = model.find(key_words[i]);
        const OpResultView want = it == model.end()
                                      ? OpResultView{Code::kNotFound, {}}
                                      : OpResultView{Code::kOk, bytes(it->second)};
        ASSERT_EQ(r[i].code, want.code) << "op " << i;
        ASSERT_EQ(r[i].value, want.value) << "op " << i;
        if (types[i] == OpType::kPut) model[key_words[i]] = values[i];
        if (types[i] == OpType::kDelete && it != model.end()) model.erase(it);
      }
    }
  }
  EXPECT_EQ(store_->Size(), model.size());
}

}  // namespace
}  // namespace kvcg::conformance
