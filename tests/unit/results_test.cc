// Results, ResultSpan and ResultsBuilder (kvcg/results.h): the columnar
// results a completion receives. Values are views; what must hold is who keeps
// their bytes alive: a copied value (SetValue) lives in the builder's arena
// however the source changes, a borrowed one (SetView) lives as long as the
// inner Results handed to Keep(), and everything dies exactly once, at
// Release() or destruction. A view used after its release is caught by
// AddressSanitizer (the death tests at the end, in ASan builds).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kvcg/results.h"
#include "kvcg/store.h"

#if defined(__SANITIZE_ADDRESS__)
#define KVCG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVCG_TEST_ASAN 1
#endif
#endif
#ifndef KVCG_TEST_ASAN
#define KVCG_TEST_ASAN 0
#endif

namespace kvcg {
namespace {

using namespace std::literals;

// An Owner that counts its destructions.
class CountingOwner final : public Results::Owner {
 public:
  explicit CountingOwner(int* destroyed) : destroyed_(destroyed) {}
  ~CountingOwner() override { ++*destroyed_; }

 private:
  int* destroyed_;
};

TEST(OpResult, FoundAndSucceeded) {
  auto owned = [](Code c) { return OpResult{c, ""}; };
  auto view = [](Code c) { return OpResultView{c, ""}; };
  EXPECT_TRUE(owned(Code::kOk).found());
  EXPECT_TRUE(owned(Code::kOk).succeeded());
  EXPECT_FALSE(owned(Code::kNotFound).found());
  EXPECT_TRUE(owned(Code::kNotFound).succeeded());
  EXPECT_TRUE(view(Code::kOk).found());
  EXPECT_TRUE(view(Code::kOk).succeeded());
  EXPECT_FALSE(view(Code::kNotFound).found());
  EXPECT_TRUE(view(Code::kNotFound).succeeded());
  for (Code c : {Code::kInvalidArgument, Code::kKeyTooLarge, Code::kValueTooLarge,
                 Code::kCapacityExhausted, Code::kUnavailable, Code::kTimedOut, Code::kInternal}) {
    EXPECT_FALSE(owned(c).found()) << CodeName(c);
    EXPECT_FALSE(owned(c).succeeded()) << CodeName(c);
    EXPECT_FALSE(view(c).found()) << CodeName(c);
    EXPECT_FALSE(view(c).succeeded()) << CodeName(c);
  }
}

TEST(OpResultView, ToOwnedCopiesTheBytes) {
  std::string bytes = "value\0x"s;
  const OpResultView v{Code::kOk, bytes};
  const OpResult owned = v.ToOwned();
  bytes.assign("overwritten");
  EXPECT_EQ(owned.code, Code::kOk);
  EXPECT_EQ(owned.value, "value\0x"s);
}

TEST(Results, DefaultIsEmpty) {
  Results r;
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.size(), 0u);
  EXPECT_TRUE(r.ToOwned().empty());
  r.Release();
  EXPECT_TRUE(r.empty());
}

TEST(Results, ViewsAreReadOnlyForOk) {
  const Code codes[] = {Code::kOk, Code::kNotFound, Code::kKeyTooLarge, Code::kOk};
  const char bytes[] = "abcdefgh";
  const ValueRef views[] = {{bytes, 3}, {bytes, 5}, {bytes, 8}, {bytes + 3, 0}};
  const Results r(4, codes, views, nullptr);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r.codes(), codes);
  EXPECT_EQ(r.value(0), "abc");
  EXPECT_EQ(r[0].code, Code::kOk);
  EXPECT_EQ(r[0].value.data(), bytes) << "a view, not a copy";
  EXPECT_TRUE(r.found(0));
  EXPECT_EQ(r.value(1), "") << "not_found reads as empty whatever the view says";
  EXPECT_FALSE(r.found(1));
  EXPECT_EQ(r.code(2), Code::kKeyTooLarge);
  EXPECT_EQ(r[2].value, "") << "an error reads as empty";
  EXPECT_TRUE(r.found(3));
  EXPECT_EQ(r.value(3), "") << "an empty value is found, not absent";
}

TEST(Results, FixedWidthWords) {
  const Code codes[] = {Code::kOk, Code::kNotFound, Code::kOk};
  const uint64_t words[] = {0x0807060504030201ull, 0xffffffffffffffffull, 0};
  const Results r(3, codes, words, nullptr);
  EXPECT_EQ(r.value(0), "\x01\x02\x03\x04\x05\x06\x07\x08"s);
  EXPECT_EQ(r.value(1), "");
  EXPECT_EQ(r.value(2), std::string(8, '\0'));
  EXPECT_EQ(r[2].value.size(), 8u);
}

TEST(Results, ValueSlotsHoldTheValueOrItsView) {
  // Four ops: a value in its slot, a view in its slot, not found, a
  // zero-length value in its slot (found, empty).
  const Code codes[] = {Code::kOk, Code::kOk, Code::kNotFound, Code::kOk};
  const std::string far(100, 'x');  // longer than a slot: read through a view
  alignas(8) char slots[4 * kValueSlotBytes] = {};
  std::memcpy(slots, "sixty-four bytes at most", 24);
  const ValueRef ref{far.data(), far.size()};
  std::memcpy(slots + kValueSlotBytes, &ref, sizeof ref);
  std::memcpy(slots + 2 * kValueSlotBytes, "stale", 5);  // a not-found op's slot is never read
  const uint8_t lens[] = {24, kSlotHoldsView, 5, 0};
  const uint64_t expires[] = {7, 8, 9, 10};
  Results moved(4, codes, lens, slots, nullptr, expires);
  const Results r(std::move(moved));
  EXPECT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move)
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r.value(0), "sixty-four bytes at most");
  EXPECT_EQ(r.value(0).data(), slots) << "a view of the slot, not a copy";
  EXPECT_EQ(r.value(1).data(), far.data()) << "the slot's view is followed";
  EXPECT_EQ(r.value(1).size(), 100u);
  EXPECT_EQ(r.value(2), "") << "not found reads as empty whatever the slot holds";
  EXPECT_EQ(r.expire_at(2), 0u);
  EXPECT_TRUE(r.found(3));
  EXPECT_EQ(r.value(3), "");
  EXPECT_EQ(r.expire_at(0), 7u);
  EXPECT_EQ(r[1].expire_at, 8u);
}

// Prefetch is a hint: it reads only codes and views inside [0, size()) —
// the columns are exactly that long here, so a read past them is a
// heap-buffer-overflow under the ASan build — follows no view of an op
// that is not found (its pointer may be anything), and changes no result.
TEST(Results, PrefetchStaysInsideTheColumnsAndChangesNothing) {
  const std::string bytes = "value";
  auto codes = std::make_unique<Code[]>(3);
  auto views = std::make_unique<ValueRef[]>(3);
  codes[0] = Code::kOk;
  codes[1] = Code::kNotFound;
  codes[2] = Code::kOk;
  views[0] = {bytes.data(), 5};
  views[1] = {reinterpret_cast<const char*>(uintptr_t{8}), 3};  // never followed
  views[2] = {bytes.data() + 2, 3};
  const Results r(3, codes.get(), views.get(), nullptr);
  r.Prefetch(0, 3);
  r.Prefetch(1, 1000);  // clamped to size()
  r.Prefetch(3, 3);
  EXPECT_EQ(r.value(0), "value");
  EXPECT_EQ(r.value(1), "");
  EXPECT_EQ(r.value(2), "lue");

  auto slot_codes = std::make_unique<Code[]>(2);
  slot_codes[0] = Code::kOk;
  slot_codes[1] = Code::kNotFound;
  auto lens = std::make_unique<uint8_t[]>(2);
  lens[0] = 3;
  lens[1] = 0;
  alignas(64) static char slots[2 * kValueSlotBytes] = "abc";
  const Results s(2, slot_codes.get(), lens.get(), slots, nullptr);
  s.Prefetch(0, 99);
  EXPECT_EQ(s.value(0), "abc");
  EXPECT_EQ(s.value(1), "");
  const Results empty;
  empty.Prefetch(0, 10);  // no columns at all
  EXPECT_TRUE(empty.empty());
}

TEST(Results, ReleaseDestroysTheOwnerOnceAndIsIdempotent) {
  int destroyed = 0;
  const Code codes[] = {Code::kOk};
  const ValueRef views[] = {{"v", 1}};
  {
    Results r(1, codes, views, std::make_unique<CountingOwner>(&destroyed));
    EXPECT_EQ(r.size(), 1u);
    r.Release();
    EXPECT_EQ(destroyed, 1);
    EXPECT_TRUE(r.empty()) << "a released Results has no results";
    EXPECT_EQ(r.codes(), nullptr);
    r.Release();
    r.Release();
    EXPECT_EQ(destroyed, 1);
  }
  EXPECT_EQ(destroyed, 1) << "the destructor after Release destroys nothing more";
}

TEST(Results, MovesTransferTheOwner) {
  int a_destroyed = 0, b_destroyed = 0;
  const Code codes[] = {Code::kOk, Code::kNotFound};
  const ValueRef views[] = {{"abc", 3}, {nullptr, 0}};
  Results a(2, codes, views, std::make_unique<CountingOwner>(&a_destroyed));
  Results moved(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  a.Release();             // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a_destroyed, 0) << "releasing a moved-from Results releases nothing";
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved.value(0), "abc");

  Results b(1, codes, views, std::make_unique<CountingOwner>(&b_destroyed));
  b = std::move(moved);
  EXPECT_EQ(b_destroyed, 1) << "assignment releases what the target held";
  EXPECT_EQ(a_destroyed, 0);
  EXPECT_EQ(b.value(0), "abc");
  b.Release();
  EXPECT_EQ(a_destroyed, 1);
}

// Replace (the KVCG engine writes its hot-cache answers over the canonical
// store's Results): copies into words and short slots, views otherwise,
// and refuses what the Results cannot hold without changing anything.
TEST(Results, ReplaceWritesViewsWordsAndSlots) {
  const std::string answer = "from the hot cache";
  {
    Code codes[] = {Code::kNotFound, Code::kOk};
    ValueRef views[] = {{nullptr, 0}, {"old", 3}};
    uint64_t expires[] = {0, 0};
    Results r(2, codes, views, nullptr, expires);
    ASSERT_TRUE(r.Replace(0, Code::kOk, answer, 42));
    EXPECT_EQ(r.value(0), answer);
    EXPECT_EQ(r.value(0).data(), answer.data()) << "views the bytes: their owner is adopted";
    EXPECT_EQ(r.expire_at(0), 42u);
    ASSERT_TRUE(r.Replace(1, Code::kNotFound, "ignored", 0));
    EXPECT_FALSE(r.found(1));
    EXPECT_EQ(r.value(1), "");
    EXPECT_FALSE(r.Replace(2, Code::kNotFound, {}, 0)) << "past the last result";
    EXPECT_FALSE(r.Replace(size_t(-1), Code::kOk, answer, 0));
    EXPECT_EQ(r.code(1), Code::kNotFound) << "a refused Replace changes nothing";
  }
  {
    Code codes[] = {Code::kOk};
    ValueRef views[] = {{"old", 3}};
    Results r(1, codes, views, nullptr);  // no expire column
    EXPECT_FALSE(r.Replace(0, Code::kOk, answer, 42)) << "an expire-at with nowhere to go";
    EXPECT_EQ(r.value(0), "old") << "a refused Replace changes nothing";
    EXPECT_TRUE(r.Replace(0, Code::kKeyTooLarge, {}, 0));
    EXPECT_EQ(r.code(0), Code::kKeyTooLarge);
  }
  {
    Code codes[] = {Code::kNotFound, Code::kNotFound};
    uint64_t words[] = {0, 0};
    Results r(2, codes, words, nullptr);
    EXPECT_FALSE(r.Replace(0, Code::kOk, "seven", 0)) << "a word holds exactly 8 bytes";
    EXPECT_EQ(r.code(0), Code::kNotFound);
    ASSERT_TRUE(r.Replace(1, Code::kOk, "8 bytes!", 0));
    EXPECT_EQ(r.value(1), "8 bytes!");
    EXPECT_EQ(r.value(1).data(), reinterpret_cast<const char*>(words + 1)) << "copied in place";
  }
  {
    Code codes[] = {Code::kNotFound, Code::kNotFound};
    alignas(8) char slots[2 * kValueSlotBytes] = {};
    uint8_t lens[] = {0, 0};
    Results r(2, codes, lens, slots, nullptr);
    std::string short_value = "short";
    const std::string long_value(kValueSlotBytes + 1, 'L');
    ASSERT_TRUE(r.Replace(0, Code::kOk, short_value, 0));
    ASSERT_TRUE(r.Replace(1, Code::kOk, long_value, 0));
    short_value.assign("XXXXX");
    EXPECT_EQ(r.value(0), "short") << "a short value is copied into its slot";
    EXPECT_EQ(r.value(1).data(), long_value.data()) << "a long one is viewed";
    EXPECT_EQ(r.value(1).size(), long_value.size());
  }
}

TEST(Results, AdoptKeepsBothOwnersUntilRelease) {
  int store_destroyed = 0, extra_destroyed = 0, lone_destroyed = 0;
  const Code codes[] = {Code::kOk};
  const ValueRef views[] = {{"v", 1}};
  Results r(1, codes, views, std::make_unique<CountingOwner>(&store_destroyed));
  r.Adopt(std::make_unique<CountingOwner>(&extra_destroyed));
  r.Adopt(nullptr);
  Results moved = std::move(r);
  EXPECT_EQ(store_destroyed + extra_destroyed, 0);
  moved.Release();
  EXPECT_EQ(store_destroyed, 1);
  EXPECT_EQ(extra_destroyed, 1);
  Results lone(1, codes, views, nullptr);  // no owner of its own
  lone.Adopt(std::make_unique<CountingOwner>(&lone_destroyed));
  EXPECT_EQ(lone_destroyed, 0);
  lone.Release();
  EXPECT_EQ(lone_destroyed, 1);
}

TEST(Results, ToOwnedCopiesEverything) {
  ResultsBuilder builder;
  builder.Reset(3);
  builder.SetValue(0, Code::kOk, "one\0"s);
  builder.SetCode(2, Code::kValueTooLarge);
  Results r = builder.Finish();
  const std::vector<OpResult> owned = r.ToOwned();
  r.Release();
  ASSERT_EQ(owned.size(), 3u);
  EXPECT_EQ(owned[0].code, Code::kOk);
  EXPECT_EQ(owned[0].value, "one\0"s);
  EXPECT_EQ(owned[1].code, Code::kNotFound);
  EXPECT_EQ(owned[1].value, "");
  EXPECT_EQ(owned[2].code, Code::kValueTooLarge);
  EXPECT_EQ(owned[2].value, "");
}

TEST(ResultSpan, IteratesASubRange) {
  ResultsBuilder builder;
  builder.Reset(6);
  for (size_t i = 0; i < 6; ++i) {
    if (i % 2 == 0) builder.SetValue(i, Code::kOk, "v" + std::to_string(i));
  }
  const Results r = builder.Finish();
  const ResultSpan span(&r, 2, 3);
  EXPECT_EQ(span.size(), 3u);
  EXPECT_FALSE(span.empty());
  EXPECT_EQ(span[0].value, "v2");
  EXPECT_EQ(span[1].code, Code::kNotFound);
  EXPECT_EQ(span[2].value, "v4");
  std::vector<std::string> seen;
  for (OpResultView v : span) seen.push_back(std::string(CodeName(v.code)) + ":" + std::string(v.value));
  EXPECT_EQ(seen, (std::vector<std::string>{"ok:v2", "not_found:", "ok:v4"}));
  EXPECT_EQ(std::distance(span.begin(), span.end()), 3);

  const ResultSpan whole(&r, 0, r.size());
  size_t n = 0;
  for (OpResultView v : whole) n += v.found();
  EXPECT_EQ(n, 3u);
  const ResultSpan none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  const ResultSpan tail(&r, 6, 0);
  EXPECT_TRUE(tail.empty());
  for (OpResultView v : tail) ADD_FAILURE() << "an empty span yields " << CodeName(v.code);
}

TEST(ResultsBuilder, ResetStartsNotFoundAndEmpty) {
  ResultsBuilder builder;
  EXPECT_EQ(builder.size(), 0u);
  builder.Reset(4);
  EXPECT_EQ(builder.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(builder.code(i), Code::kNotFound);
  builder.SetCode(1, Code::kOk);
  EXPECT_EQ(builder.code(1), Code::kOk);
  const Results r = builder.Finish();
  EXPECT_EQ(builder.size(), 0u) << "the builder is empty after Finish";
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r.code(0), Code::kNotFound);
  EXPECT_EQ(r[1].code, Code::kOk);
  EXPECT_EQ(r.value(1), "") << "SetCode carries no value";
  // A finished builder can be reset and used again.
  builder.Reset(1);
  builder.SetValue(0, Code::kOk, "again");
  const Results again = builder.Finish();
  EXPECT_EQ(again.value(0), "again");
  EXPECT_EQ(r.size(), 4u) << "the first Results is independent of the reuse";
  // Finish without Reset: an empty Results.
  ResultsBuilder fresh;
  EXPECT_TRUE(fresh.Finish().empty());
}

TEST(ResultsBuilder, SetValueCopiesSurviveTheSource) {
  ResultsBuilder builder;
  constexpr size_t kN = 200;
  builder.Reset(kN);
  std::vector<std::string> want(kN);
  {
    std::vector<std::string> sources(kN);
    for (size_t i = 0; i < kN; ++i) {
      // Sizes up to ~8 KiB so the arena grows (and moves) many times.
      sources[i] = std::to_string(i) + std::string(i * 41, static_cast<char>(i)) + "\0end"s;
      want[i] = sources[i];
      builder.SetValue(i, Code::kOk, sources[i]);
      sources[i].assign(sources[i].size(), 'X');  // overwrite the source at once
    }
  }  // ... and destroy it
  builder.SetValue(7, Code::kOk, "replaced");  // the last SetValue wins
  want[7] = "replaced";
  builder.SetCode(9, Code::kCapacityExhausted);
  Results r = builder.Finish();
  ASSERT_EQ(r.size(), kN);
  for (size_t i = 0; i < kN; ++i) {
    SCOPED_TRACE(i);
    if (i == 9) {
      EXPECT_EQ(r.code(i), Code::kCapacityExhausted);
      EXPECT_EQ(r.value(i), "");
      continue;
    }
    EXPECT_EQ(r.code(i), Code::kOk);
    EXPECT_EQ(r.value(i), want[i]);
  }
  // Moving the Results moves no bytes: the views still point at the arena.
  const char* p = r.value(3).data();
  Results moved = std::move(r);
  EXPECT_EQ(moved.value(3).data(), p);
  EXPECT_EQ(moved.value(3), want[3]);
}

TEST(ResultsBuilder, SetViewWithKeepKeepsTheInnerResultsAlive) {
  int inner_destroyed = 0;
  // The inner results own their bytes through a counting owner.
  struct InnerOwner final : Results::Owner {
    explicit InnerOwner(int* d) : destroyed(d) {}
    ~InnerOwner() override { ++*destroyed; }
    int* destroyed;
    std::string bytes = "inner-value-bytes";
    Code codes[2] = {Code::kOk, Code::kOk};
    ValueRef views[2] = {};
  };
  auto owner = std::make_unique<InnerOwner>(&inner_destroyed);
  owner->views[0] = {owner->bytes.data(), 5};
  owner->views[1] = {owner->bytes.data() + 6, 11};
  const Code* codes = owner->codes;
  const ValueRef* views = owner->views;
  Results inner(2, codes, views, std::move(owner));
  const std::string_view first = inner.value(0), second = inner.value(1);
  ASSERT_EQ(first, "inner");
  ASSERT_EQ(second, "value-bytes");

  ResultsBuilder builder;
  builder.Reset(3);
  builder.SetView(0, Code::kOk, second);  // out of order: views are free
  builder.SetValue(1, Code::kOk, "copied");
  builder.SetView(2, Code::kOk, first);
  builder.Keep(std::move(inner));
  EXPECT_TRUE(inner.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(inner_destroyed, 0);
  Results outer = builder.Finish();
  EXPECT_EQ(inner_destroyed, 0) << "the outer Results keeps the inner one";
  EXPECT_EQ(outer.value(0), "value-bytes");
  EXPECT_EQ(outer.value(0).data(), second.data()) << "SetView borrows, it does not copy";
  EXPECT_EQ(outer.value(1), "copied");
  EXPECT_EQ(outer.value(2), "inner");
  Results moved = std::move(outer);
  EXPECT_EQ(inner_destroyed, 0);
  EXPECT_EQ(moved.value(2), "inner");
  moved.Release();
  EXPECT_EQ(inner_destroyed, 1) << "releasing the outer Results releases what it kept";
  moved.Release();
  EXPECT_EQ(inner_destroyed, 1);
}

// --- A view used after its Results is released is caught by ASan.
//
// The CPU backend's Results owns its value arena (a ResultsBuilder's), so
// reading a view after Release() reads freed heap memory. Only an ASan build
// can observe that; other builds skip these tests, saying so.

// Reads every byte of `v` through a volatile pointer, so the reads are not
// optimised away.
int Touch(std::string_view v) {
  const volatile char* p = v.data();
  int sum = 0;
  for (size_t i = 0; i < v.size(); ++i) sum += p[i];
  return sum;
}

class ResultsDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!KVCG_TEST_ASAN) {
      GTEST_SKIP() << "needs an AddressSanitizer build (-DKVCG_SANITIZE=address): only ASan "
                      "can observe a read of released result memory";
    }
    // The store's threads exist when the death statement forks.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(ResultsDeathTest, CpuStoreViewAfterReleaseIsHeapUseAfterFree) {
  Config config;
  config.backend = Backend::kCpu;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(config, &store).ok());
  const std::string value(100, 'v');
  ASSERT_EQ(store->Put("k", value).code, Code::kNotFound);
  Batch batch = store->NewBatch();
  batch.Get("k");
  Results r = store->Execute(std::move(batch));
  ASSERT_EQ(r.size(), 1u);
  const std::string_view view = r.value(0);
  ASSERT_EQ(view, value);
  EXPECT_EQ(Touch(view), 100 * 'v') << "the view is readable before Release";
  r.Release();
  EXPECT_DEATH(Touch(view), "heap-use-after-free");
}

TEST_F(ResultsDeathTest, CpuStoreViewAfterDestructionIsHeapUseAfterFree) {
  Config config;
  config.backend = Backend::kCpu;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::Open(config, &store).ok());
  Batch batch = store->NewBatch();
  batch.Put("k", "first-value");
  batch.Put("k", "second-value");  // returns "first-value"
  std::string_view view;
  {
    Results r = store->Execute(std::move(batch));
    ASSERT_EQ(r.size(), 2u);
    view = r.value(1);
    ASSERT_EQ(view, "first-value");
  }
  EXPECT_DEATH(Touch(view), "heap-use-after-free");
}

TEST_F(ResultsDeathTest, KeptInnerResultsDieWithTheOuterOnes) {
  ResultsBuilder inner_builder;
  inner_builder.Reset(1);
  inner_builder.SetValue(0, Code::kOk, std::string(64, 'i'));
  Results inner = inner_builder.Finish();
  const std::string_view view = inner.value(0);
  ResultsBuilder outer_builder;
  outer_builder.Reset(1);
  outer_builder.SetView(0, Code::kOk, view);
  outer_builder.Keep(std::move(inner));
  Results outer = outer_builder.Finish();
  EXPECT_EQ(Touch(outer.value(0)), 64 * 'i');
  outer.Release();
  EXPECT_DEATH(Touch(view), "heap-use-after-free");
}

}  // namespace
}  // namespace kvcg
