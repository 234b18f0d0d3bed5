// Batch: operations stored as columns (types, keys, values, value_lens,
// expected) over two arenas (key bytes, value bytes) from a BatchMemory.
// Offsets (not pointers) must survive growth; key bytes start 8-byte aligned
// and are zero-padded (the GPU compares whole words); Clear() must allow reuse
// without stale data or new allocations; a CAS carries its expected value or
// kExpectAbsent; memory comes from, and goes back to, the batch's
// BatchMemory; bytes past the 4 GiB key arena are marked, never written.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kvcg/batch.h"

namespace kvcg {
namespace {

using namespace std::literals;

constexpr size_t Align8(size_t x) { return (x + 7) & ~size_t{7}; }
uint32_t OffsetOf(uint64_t d) { return static_cast<uint32_t>(d); }
uint32_t LengthOf(uint64_t d) { return static_cast<uint32_t>(d >> 32); }

TEST(Batch, AppendRecordsTypeKeyAndValue) {
  Batch b;
  EXPECT_TRUE(b.empty());
  b.Get("k1");
  b.Put("k2", "v2");
  b.Delete("k3");
  b.Append(OpType::kPut, "k4", "v4");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_FALSE(b.empty());
  EXPECT_EQ(b.type(0), OpType::kGet);
  EXPECT_EQ(b.type(1), OpType::kPut);
  EXPECT_EQ(b.type(2), OpType::kDelete);
  EXPECT_EQ(b.type(3), OpType::kPut);
  EXPECT_EQ(b.key(0), "k1");
  EXPECT_EQ(b.value(0), "");
  EXPECT_EQ(b.key(1), "k2");
  EXPECT_EQ(b.value(1), "v2");
  EXPECT_EQ(b.key(2), "k3");
  EXPECT_EQ(b.value(2), "");
  EXPECT_EQ(b.key(3), "k4");
  EXPECT_EQ(b.value(3), "v4");
  // Four 2-byte keys, each padded to 8; two 2-byte values, each padded to 8.
  EXPECT_EQ(b.key_bytes_size(), 4u * 8);
  EXPECT_EQ(b.value_bytes_size(), 2u * 8);
  // The columns say the same as the accessors.
  for (size_t i = 0; i < b.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(b.types()[i], b.type(i));
    EXPECT_EQ(LengthOf(b.keys()[i]), 2u);
    EXPECT_EQ(std::string_view(b.key_bytes() + OffsetOf(b.keys()[i]), 2), b.key(i));
    EXPECT_EQ(b.value_lens()[i], b.value(i).size());
    EXPECT_EQ(std::string_view(b.value_bytes() + b.values()[i], b.value_lens()[i]), b.value(i));
    EXPECT_EQ(b.expected_column()[i], 0u) << "no expected value outside CAS";
    EXPECT_FALSE(b.overflowed(i));
  }
  EXPECT_EQ(b.stores(), 2u);
  EXPECT_FALSE(b.has_cas());
}

TEST(Batch, CopiesItsInputs) {
  Batch b;
  {
    std::string key = "key", value = "value";
    b.Put(key, value);
    key.assign("XXX");
    value.assign("YYYYY");
  }
  EXPECT_EQ(b.key(0), "key");
  EXPECT_EQ(b.value(0), "value");
}

TEST(Batch, BinaryAndEmptyBytes) {
  Batch b;
  b.Put(""s, ""s);
  b.Put("\0a\0"s, "\0\0"s);
  EXPECT_EQ(b.key(0), "");
  EXPECT_EQ(b.value(0), "");
  EXPECT_EQ(b.key(1), "\0a\0"s);
  EXPECT_EQ(b.value(1), "\0\0"s);
  EXPECT_EQ(b.key_bytes_size(), 8u) << "an empty key takes no bytes";
}

// Every key (and expected value) starts on an 8-byte boundary of key_bytes
// and is followed by zeros up to the next boundary; values start 8-byte
// aligned too; every column and arena is 64-byte aligned.
TEST(Batch, KeyBytesAreAlignedAndZeroPadded) {
  Batch b;
  std::vector<std::string> keys, values;
  for (size_t n = 0; n <= 17; ++n) {
    keys.push_back(std::string(n, '\xff'));
    values.push_back(std::string(n * 3, static_cast<char>('a' + n)));
    b.Put(keys.back(), values.back());
  }
  const std::string expected(13, '\xee');
  const std::string_view e = expected;
  b.CompareAndSwap("cas", &e, "d");
  size_t key_total = 0, value_total = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    SCOPED_TRACE(i);
    const uint32_t off = OffsetOf(b.keys()[i]);
    EXPECT_EQ(off % 8, 0u);
    EXPECT_EQ(LengthOf(b.keys()[i]), keys[i].size());
    EXPECT_EQ(b.key(i), keys[i]);
    for (size_t p = off + keys[i].size(); p < off + Align8(keys[i].size()); ++p) {
      EXPECT_EQ(b.key_bytes()[p], '\0') << "padding byte " << p;
    }
    EXPECT_EQ(b.values()[i] % 8, 0u);
    EXPECT_EQ(b.value(i), values[i]);
    key_total += Align8(keys[i].size());
    value_total += Align8(values[i].size());
  }
  const size_t cas = keys.size();
  const uint64_t ed = b.expected_column()[cas];
  EXPECT_EQ(OffsetOf(ed) % 8, 0u);
  EXPECT_EQ(LengthOf(ed), 13u);
  EXPECT_EQ(std::string_view(b.key_bytes() + OffsetOf(ed), 13), expected);
  EXPECT_EQ(std::string_view(b.key_bytes() + OffsetOf(ed) + 13, 3), "\0\0\0"s);
  key_total += 8 + 16;  // "cas" and the expected value
  value_total += 8;     // "d"
  EXPECT_EQ(b.key_bytes_size(), key_total);
  EXPECT_EQ(b.value_bytes_size(), value_total);
  for (const void* p : {static_cast<const void*>(b.types()), static_cast<const void*>(b.keys()),
                        static_cast<const void*>(b.values()),
                        static_cast<const void*>(b.value_lens()),
                        static_cast<const void*>(b.expected_column()),
                        static_cast<const void*>(b.key_bytes()),
                        static_cast<const void*>(b.value_bytes())}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << p;
  }
}

// The arenas reallocate many times while large values are appended; every
// view must still point at the right bytes afterwards.
TEST(Batch, OffsetsSurviveArenaGrowthWithLargeValues) {
  Batch b;
  std::vector<std::string> values;
  for (int i = 0; i < 12; ++i) {
    values.push_back(std::string(size_t{1} << (i + 8), static_cast<char>('a' + i)));  // 256 B .. 512 KiB
    b.Put("key" + std::to_string(i), values.back());
    b.Get("get" + std::to_string(i));
  }
  ASSERT_EQ(b.size(), 24u);
  size_t key_total = 0, value_total = 0;
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(b.key(2 * i), "key" + std::to_string(i));
    EXPECT_TRUE(b.value(2 * i) == values[i]) << "value " << i << " has size " << b.value(2 * i).size();
    EXPECT_EQ(b.key(2 * i + 1), "get" + std::to_string(i));
    EXPECT_EQ(b.value(2 * i + 1), "");
    key_total += Align8(b.key(2 * i).size()) + Align8(b.key(2 * i + 1).size());
    value_total += values[i].size();  // powers of two >= 256: no padding
  }
  EXPECT_EQ(b.key_bytes_size(), key_total);
  EXPECT_EQ(b.value_bytes_size(), value_total);
}

TEST(Batch, CompareAndSwapFields) {
  Batch b;
  const std::string_view expected = "old";
  b.CompareAndSwap("k1", &expected, "new");
  b.CompareAndSwap("k2", nullptr, "fresh");
  const std::string_view empty;
  b.CompareAndSwap("k3", &empty, "x");
  b.Put("k4", "v");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.type(0), OpType::kCompareAndSwap);
  EXPECT_EQ(b.key(0), "k1");
  EXPECT_EQ(b.value(0), "new");
  EXPECT_EQ(b.expected(0), "old");
  EXPECT_TRUE(b.has_expected(0));
  EXPECT_FALSE(b.expect_absent(0));
  EXPECT_EQ(b.type(1), OpType::kCompareAndSwap);
  EXPECT_EQ(b.value(1), "fresh");
  EXPECT_TRUE(b.expect_absent(1));
  EXPECT_FALSE(b.has_expected(1));
  EXPECT_EQ(b.expected_column()[1], Batch::kExpectAbsent);
  EXPECT_EQ(b.expected(1), "");
  // Expecting the empty value is not the same as expecting absence.
  EXPECT_FALSE(b.expect_absent(2));
  EXPECT_TRUE(b.has_expected(2));
  EXPECT_NE(b.expected_column()[2], Batch::kExpectAbsent);
  EXPECT_EQ(LengthOf(b.expected_column()[2]), 0u);
  EXPECT_EQ(b.expected(2), "");
  EXPECT_EQ(b.value(2), "x");
  // Other operations carry no CAS state.
  EXPECT_FALSE(b.expect_absent(3));
  EXPECT_EQ(b.expected_column()[3], 0u);
  EXPECT_EQ(b.expected(3), "");
  EXPECT_EQ(b.value(3), "v");
  EXPECT_TRUE(b.has_cas());
  EXPECT_EQ(b.stores(), 4u) << "CAS and PUT may store";
  // Keys and the expected value share the key arena: k1, old, k2, k3, "", k4.
  EXPECT_EQ(b.key_bytes_size(), 5u * 8);
}

TEST(Batch, ClearThenReuse) {
  Batch b;
  const std::string_view e = "expected";
  for (int i = 0; i < 100; ++i) b.Put("key" + std::to_string(i) + "\xab\xcd\xef", std::string(100, 'v'));
  b.CompareAndSwap("c", &e, "d");
  const char* key_arena = b.key_bytes();
  const char* value_arena = b.value_bytes();
  const OpType* types = b.types();
  b.Clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.key_bytes_size(), 0u);
  EXPECT_EQ(b.value_bytes_size(), 0u);
  EXPECT_EQ(b.stores(), 0u);
  EXPECT_FALSE(b.has_cas());
  b.Get("other");
  b.Put("k", "w");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b.type(0), OpType::kGet);
  EXPECT_EQ(b.key(0), "other");
  EXPECT_EQ(b.value(0), "") << "no stale bytes from before Clear";
  EXPECT_EQ(b.key(1), "k");
  EXPECT_EQ(b.value(1), "w");
  EXPECT_EQ(b.expected_column()[0], 0u);
  EXPECT_EQ(b.key_bytes_size(), 16u);
  EXPECT_EQ(b.value_bytes_size(), 8u);
  EXPECT_EQ(b.stores(), 1u);
  // The old keys were non-zero where the new padding is: it must be zeroed.
  EXPECT_EQ(std::string_view(b.key_bytes(), 16), "other\0\0\0k\0\0\0\0\0\0\0"s);
  EXPECT_EQ(b.key_bytes(), key_arena) << "Clear keeps the key arena's memory for reuse";
  EXPECT_EQ(b.value_bytes(), value_arena) << "Clear keeps the value arena's memory for reuse";
  EXPECT_EQ(b.types(), types) << "Clear keeps the columns' memory for reuse";
}

TEST(Batch, ReserveChangesNothingVisible) {
  Batch b;
  b.Put("a", "1");
  b.Reserve(1000, 1000 * 8, 1 << 20);
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(b.key(0), "a");
  EXPECT_EQ(b.value(0), "1");
  const char* key_arena = b.key_bytes();
  const char* value_arena = b.value_bytes();
  const OpType* types = b.types();
  for (int i = 0; i < 999; ++i) b.Put("key", std::string(1000, 'x'));
  EXPECT_EQ(b.key_bytes(), key_arena) << "appending within the reservation does not reallocate";
  EXPECT_EQ(b.value_bytes(), value_arena);
  EXPECT_EQ(b.types(), types);
  EXPECT_EQ(b.key(0), "a");
  EXPECT_EQ(b.value(999), std::string(1000, 'x'));
}

// Both batches have the same operations, field by field.
void ExpectSameOps(const Batch& a, const Batch& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a.type(i), b.type(i));
    EXPECT_EQ(a.key(i), b.key(i));
    EXPECT_EQ(a.value(i), b.value(i));
    EXPECT_EQ(a.has_expected(i), b.has_expected(i));
    EXPECT_EQ(a.expected(i), b.expected(i));
    EXPECT_EQ(a.expect_absent(i), b.expect_absent(i));
    EXPECT_EQ(a.overflowed(i), b.overflowed(i));
  }
  EXPECT_EQ(a.stores(), b.stores());
  EXPECT_EQ(a.has_cas(), b.has_cas());
}

TEST(Batch, MovedAndCopiedBatchesKeepContent) {
  Batch a;
  a.Put("k", "v");
  const std::string_view expected = "e";
  a.CompareAndSwap("c", &expected, "d");
  a.CompareAndSwap("n", nullptr, "m");
  const Batch reference = a;
  Batch copy = a;
  EXPECT_NE(copy.key_bytes(), a.key_bytes()) << "a copy is deep";
  EXPECT_EQ(copy.memory(), a.memory());
  Batch assigned;
  assigned.Put("stale", "stale");
  assigned = a;
  const char* a_keys = a.key_bytes();
  Batch moved = std::move(a);
  EXPECT_EQ(moved.key_bytes(), a_keys) << "a move takes the memory, copying nothing";
  EXPECT_TRUE(a.empty()) << "a moved-from batch is empty";  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.key_bytes_size(), 0u);                         // NOLINT(bugprone-use-after-move)
  a.Put("again", "usable");                                  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.key(0), "again");
  Batch move_assigned;
  move_assigned.Get("stale");
  move_assigned = std::move(moved);
  for (const Batch* b : {&copy, &assigned, &move_assigned}) {
    ASSERT_EQ(b->size(), 3u);
    EXPECT_EQ(b->key(0), "k");
    EXPECT_EQ(b->value(0), "v");
    EXPECT_EQ(b->expected(1), "e");
    EXPECT_EQ(b->value(1), "d");
    EXPECT_TRUE(b->expect_absent(2));
    ExpectSameOps(*b, reference);
  }
}

TEST(Batch, AppendFromCopiesOneOpWithItsExpectedValue) {
  Batch src;
  const std::string_view old = "old\0value"sv;
  const std::string_view empty;
  src.Get("g");
  src.Put("p\0"s, "pv");
  src.Delete("d");
  src.CompareAndSwap("c1", &old, "new");
  src.CompareAndSwap("c2", nullptr, "fresh");
  src.CompareAndSwap("c3", &empty, "x");
  Batch dst;
  dst.Put("first", "1");
  for (size_t i = src.size(); i-- > 0;) dst.AppendFrom(src, i);  // reversed
  ASSERT_EQ(dst.size(), 1 + src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    SCOPED_TRACE(i);
    const size_t j = src.size() - i;
    EXPECT_EQ(dst.type(j), src.type(i));
    EXPECT_EQ(dst.key(j), src.key(i));
    EXPECT_EQ(dst.value(j), src.value(i));
    EXPECT_EQ(dst.has_expected(j), src.has_expected(i));
    EXPECT_EQ(dst.expected(j), src.expected(i));
    EXPECT_EQ(dst.expect_absent(j), src.expect_absent(i));
    EXPECT_EQ(OffsetOf(dst.keys()[j]) % 8, 0u);
  }
  EXPECT_EQ(dst.expected(3), old);
  EXPECT_TRUE(dst.expect_absent(2));
  EXPECT_FALSE(dst.expect_absent(1));
  EXPECT_EQ(dst.stores(), 1u + 1u + 3u);
  EXPECT_TRUE(dst.has_cas());
  EXPECT_EQ(src.size(), 6u) << "the source is left alone";
  EXPECT_EQ(src.key(0), "g");

  // Into a batch of other memory, one op at a time: same as a copy.
  Batch whole(nullptr);
  for (size_t i = 0; i < src.size(); ++i) whole.AppendFrom(src, i);
  ExpectSameOps(whole, src);
}

// A BatchMemory that counts its calls and checks that every Free matches an
// Allocate of the same size; `fail` makes Allocate return nullptr.
class CountingMemory final : public BatchMemory {
 public:
  explicit CountingMemory(bool pinned = true, bool fail = false) : pinned_(pinned), fail_(fail) {}
  ~CountingMemory() override { EXPECT_TRUE(live_.empty()) << live_.size() << " regions never freed"; }
  void* Allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocs_;
    if (fail_) return nullptr;
    void* p = HeapBatchMemory()->Allocate(bytes);
    live_[p] = bytes;
    return p;
  }
  void Free(void* p, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++frees_;
    auto it = live_.find(p);
    if (it == live_.end()) {
      ADD_FAILURE() << "Free of memory this BatchMemory did not allocate";
      return;
    }
    EXPECT_EQ(it->second, bytes) << "Free with another size than Allocate";
    live_.erase(it);
    HeapBatchMemory()->Free(p, bytes);
  }
  bool pinned() const override { return pinned_; }

  int allocs() const { return allocs_; }
  int frees() const { return frees_; }
  size_t live() const { return live_.size(); }

 private:
  const bool pinned_, fail_;
  std::mutex mu_;
  int allocs_ = 0, frees_ = 0;
  std::map<void*, size_t> live_;
};

void Fill(Batch& b, int n) {
  const std::string_view e = "exp";
  for (int i = 0; i < n; ++i) {
    b.Put("key" + std::to_string(i), std::string(40, 'v'));
    b.CompareAndSwap("cas" + std::to_string(i), &e, "d");
  }
}

TEST(BatchMemory, ColumnsAndArenasComeFromTheBatchMemory) {
  CountingMemory memory;
  {
    Batch b(&memory);
    EXPECT_EQ(b.memory(), &memory);
    EXPECT_EQ(memory.allocs(), 0) << "an empty batch allocates nothing";
    Fill(b, 100);
    EXPECT_GE(memory.allocs(), 3) << "columns, key arena, value arena";
    EXPECT_EQ(memory.live(), 3u) << "grown regions are returned as they are replaced";
    EXPECT_TRUE(b.pinned());

    // Reuse through Clear: refilling to the same size allocates nothing.
    const int allocs = memory.allocs();
    for (int round = 0; round < 5; ++round) {
      b.Clear();
      Fill(b, 100);
    }
    EXPECT_EQ(memory.allocs(), allocs);

    // A copy lives in the same memory; a move allocates nothing.
    Batch copy = b;
    EXPECT_EQ(copy.memory(), &memory);
    EXPECT_TRUE(copy.pinned());
    EXPECT_EQ(memory.live(), 6u);
    const int before_move = memory.allocs();
    Batch moved = std::move(copy);
    EXPECT_EQ(memory.allocs(), before_move);
    EXPECT_EQ(memory.live(), 6u);
    ExpectSameOps(moved, b);
  }
  EXPECT_EQ(memory.live(), 0u) << "destroyed batches return every region";
  EXPECT_EQ(memory.frees(), memory.allocs());
}

TEST(BatchMemory, PinnedReportsTheMemory) {
  CountingMemory unpinned(/*pinned=*/false);
  Batch b(&unpinned);
  Fill(b, 3);
  EXPECT_FALSE(b.pinned());
  Batch heap;
  Fill(heap, 3);
  EXPECT_EQ(heap.memory(), HeapBatchMemory());
  EXPECT_FALSE(heap.pinned());
  EXPECT_FALSE(HeapBatchMemory()->pinned());
  EXPECT_EQ(HeapBatchMemory(), HeapBatchMemory());
}

// A BatchMemory that cannot deliver: the batch falls back to the heap, is no
// longer pinned, works the same, and never hands heap memory to Free.
TEST(BatchMemory, FailingMemoryFallsBackToTheHeap) {
  CountingMemory failing(/*pinned=*/true, /*fail=*/true);
  {
    Batch b(&failing);
    Fill(b, 50);
    EXPECT_GT(failing.allocs(), 0);
    EXPECT_FALSE(b.pinned()) << "heap fallback is not page-locked";
    Batch reference;
    Fill(reference, 50);
    ExpectSameOps(b, reference);
  }
  EXPECT_EQ(failing.frees(), 0);
}

// --- Overflow of the 4 GiB key arena.
//
// A key of 2^32 - 1 bytes or more cannot be described by a 32-bit offset, so
// the batch marks it instead of copying it. The key is backed by an
// address-space reservation of never-touched zero pages (no RAM), which is
// all the batch may look at: it must not read the bytes of a key it rejects.
class HugeBytes {
 public:
  explicit HugeBytes(size_t size) : size_(size) {
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    p_ = p == MAP_FAILED ? nullptr : static_cast<const char*>(p);
  }
  ~HugeBytes() {
    if (p_ != nullptr) munmap(const_cast<char*>(p_), size_);
  }
  bool ok() const { return p_ != nullptr; }
  std::string_view view() const { return {p_, size_}; }

 private:
  size_t size_;
  const char* p_ = nullptr;
};

constexpr size_t kHuge = size_t{Batch::kOverflow};  // 2^32 - 1 bytes

TEST(Batch, OverlongKeyIsMarkedNotCopied) {
  HugeBytes huge(kHuge);
  if (!huge.ok()) GTEST_SKIP() << "could not reserve 4 GiB of address space";
  Batch b;
  b.Put("before", "1");
  const size_t key_bytes = b.key_bytes_size();
  b.Get(huge.view());
  b.Put(huge.view(), "v");
  b.Put("after", "2");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_FALSE(b.overflowed(0));
  for (size_t i : {1, 2}) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(b.overflowed(i));
    EXPECT_EQ(OffsetOf(b.keys()[i]), Batch::kOverflow);
    EXPECT_EQ(b.key(i), "") << "an overflowed key has no bytes";
    EXPECT_GT(LengthOf(b.keys()[i]), 64u * 1024) << "the recorded length is over every key limit";
  }
  EXPECT_EQ(b.value(2), "v") << "the value of an overflowed op is still there";
  EXPECT_FALSE(b.overflowed(3));
  EXPECT_EQ(b.key(3), "after");
  EXPECT_EQ(b.key_bytes_size(), key_bytes + 8) << "only \"after\" was added to the key arena";
}

TEST(Batch, OverlongExpectedValueIsMarked) {
  HugeBytes huge(kHuge);
  if (!huge.ok()) GTEST_SKIP() << "could not reserve 4 GiB of address space";
  Batch b;
  const std::string_view e = huge.view();
  b.CompareAndSwap("k", &e, "d");
  b.CompareAndSwap("k", nullptr, "d");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_TRUE(b.overflowed(0));
  EXPECT_EQ(b.key(0), "k") << "the key itself fitted";
  EXPECT_TRUE(b.has_expected(0));
  EXPECT_FALSE(b.expect_absent(0));
  EXPECT_EQ(b.expected(0), "");
  EXPECT_EQ(OffsetOf(b.keys()[0]), 0u);
  EXPECT_EQ(OffsetOf(b.expected_column()[0]), Batch::kOverflow);
  EXPECT_FALSE(b.overflowed(1)) << "expect-absent is not an overflow";
  EXPECT_EQ(b.key_bytes_size(), 16u) << "two keys \"k\", no expected bytes";
}

TEST(Batch, AppendFromKeepsOverflowMarks) {
  HugeBytes huge(kHuge);
  if (!huge.ok()) GTEST_SKIP() << "could not reserve 4 GiB of address space";
  Batch src;
  const std::string_view e = huge.view();
  src.Delete(huge.view());
  src.CompareAndSwap("k", &e, "d");
  src.CompareAndSwap(huge.view(), nullptr, "d");
  src.Get("fine");
  Batch dst;
  for (size_t i = 0; i < src.size(); ++i) dst.AppendFrom(src, i);
  ExpectSameOps(dst, src);
  EXPECT_TRUE(dst.overflowed(0));
  EXPECT_EQ(dst.keys()[0], src.keys()[0]) << "same mark, same recorded length";
  EXPECT_TRUE(dst.overflowed(1));
  EXPECT_EQ(OffsetOf(dst.keys()[1]) % 8, 0u);
  EXPECT_EQ(dst.expected_column()[1], src.expected_column()[1]);
  EXPECT_TRUE(dst.overflowed(2));
  EXPECT_TRUE(dst.expect_absent(2));
  EXPECT_FALSE(dst.overflowed(3));
  // Copies keep the marks too.
  const Batch copy = dst;
  ExpectSameOps(copy, dst);
}

// AppendBulk is n Appends in one call: same columns, same bytes, for key
// widths that are and are not multiples of 8, mixed with per-op appends.
TEST(Batch, AppendBulkEqualsAppendLoop) {
  for (size_t kw : {size_t(8), size_t(5), size_t(16), size_t(0)}) {
    for (size_t vw : {size_t(8), size_t(3)}) {
      SCOPED_TRACE("key width " + std::to_string(kw) + " value width " + std::to_string(vw));
      const size_t n = 37;
      std::vector<OpType> types(n);
      std::string keys(n * kw, '\0'), values(n * vw, '\0');
      for (size_t i = 0; i < n; ++i) {
        types[i] = OpType(i % 4);
        for (size_t b = 0; b < kw; ++b) keys[i * kw + b] = char(i * 7 + b);
        for (size_t b = 0; b < vw; ++b) values[i * vw + b] = char(200 + i + b);
      }
      Batch bulk, loop;
      bulk.Put("head", "h");
      loop.Put("head", "h");
      bulk.AppendBulk(types.data(), keys.data(), kw, values.data(), vw, n);
      for (size_t i = 0; i < n; ++i) {
        const std::string_view k(keys.data() + i * kw, kw);
        const std::string_view v(values.data() + i * vw, vw);
        if (types[i] == OpType::kCompareAndSwap) {
          loop.CompareAndSwap(k, nullptr, v);
        } else {
          loop.Append(types[i], k, types[i] == OpType::kPut ? v : std::string_view());
        }
      }
      bulk.Get("tail");
      loop.Get("tail");
      ASSERT_EQ(bulk.size(), loop.size());
      EXPECT_EQ(bulk.stores(), loop.stores());
      EXPECT_EQ(bulk.has_cas(), loop.has_cas());
      for (size_t i = 0; i < bulk.size(); ++i) {
        EXPECT_EQ(bulk.type(i), loop.type(i)) << i;
        EXPECT_EQ(bulk.key(i), loop.key(i)) << i;
        EXPECT_EQ(bulk.value(i), loop.value(i)) << i;
        EXPECT_EQ(bulk.expect_absent(i), loop.expect_absent(i)) << i;
        EXPECT_EQ(bulk.keys()[i] & 7, 0u) << "key offsets stay 8-byte aligned";
      }
      // Key padding is zeroed as Append does it.
      for (size_t i = 0; i < bulk.size(); ++i) {
        const uint64_t d = bulk.keys()[i];
        const size_t off = uint32_t(d), len = size_t(d >> 32);
        for (size_t b = len; b < ((len + 7) & ~size_t(7)); ++b) {
          EXPECT_EQ(bulk.key_bytes()[off + b], 0) << i;
        }
      }
    }
  }
}

// Fixed-width batches (batch.h): AppendBulk into an empty batch with one
// key width and a value width of at most 64 keeps no descriptors (slots
// wider than 8 bytes are written only for the ops that store); accessors,
// copies, moves, AppendFrom and a later Append all see the same ops as an
// Append loop builds.
TEST(Batch, FixedWidthBatchEqualsAppendLoop) {
  for (size_t kw : {size_t(8), size_t(16)}) {
    for (size_t vw : {size_t(8), size_t(0), size_t(16), size_t(64)}) {
      SCOPED_TRACE("key width " + std::to_string(kw) + " value width " + std::to_string(vw));
      const size_t n = 41;
      std::vector<OpType> types(n);
      std::string keys(n * kw, '\0');
      for (size_t i = 0; i < n; ++i) {
        types[i] = i % 3 == 0 ? OpType::kPut : i % 3 == 1 ? OpType::kGet : OpType::kDelete;
        for (size_t b = 0; b < kw; ++b) keys[i * kw + b] = char(i * 7 + b);
      }
      // Values up to the last PUT only (op 39): nothing past it is read.
      std::string values(40 * vw, '\0');
      for (size_t b = 0; b < values.size(); ++b) values[b] = char(200 + b);
      Batch bulk, loop;
      bulk.AppendBulk(types.data(), keys.data(), kw, values.data(), vw, 20);
      bulk.AppendBulk(types.data() + 20, keys.data() + 20 * kw, kw, values.data() + 20 * vw, vw,
                      n - 20);
      ASSERT_TRUE(bulk.fixed_width());
      EXPECT_EQ(bulk.fixed_key_width(), kw);
      EXPECT_EQ(bulk.fixed_value_width(), vw);
      EXPECT_EQ(bulk.keys(), nullptr);
      EXPECT_EQ(bulk.values(), nullptr);
      EXPECT_EQ(bulk.value_lens(), nullptr);
      EXPECT_EQ(bulk.expected_column(), nullptr);
      for (size_t i = 0; i < n; ++i) {
        loop.Append(types[i], std::string_view(keys.data() + i * kw, kw),
                    types[i] == OpType::kPut ? std::string_view(values.data() + i * vw, vw)
                                             : std::string_view());
      }
      auto same = [&](const Batch& b, const char* what) {
        SCOPED_TRACE(what);
        ASSERT_EQ(b.size(), loop.size());
        EXPECT_EQ(b.stores(), loop.stores());
        EXPECT_FALSE(b.has_cas());
        for (size_t i = 0; i < b.size(); ++i) {
          EXPECT_EQ(b.type(i), loop.type(i)) << i;
          EXPECT_EQ(b.key(i), loop.key(i)) << i;
          EXPECT_EQ(b.value(i), loop.value(i)) << i;
          EXPECT_FALSE(b.overflowed(i)) << i;
          EXPECT_FALSE(b.expect_absent(i)) << i;
          EXPECT_TRUE(b.expected(i).empty()) << i;
        }
      };
      same(bulk, "bulk");
      const Batch copy = bulk;
      EXPECT_TRUE(copy.fixed_width());
      same(copy, "copy");
      Batch moved = std::move(bulk);
      EXPECT_TRUE(moved.fixed_width());
      same(moved, "moved");
      Batch from;
      for (size_t i = 0; i < n; ++i) from.AppendFrom(moved, i);
      same(from, "AppendFrom");
      // An Append makes it general, with the descriptors of the ops so far.
      moved.Get("tail");
      loop.Get("tail");
      EXPECT_FALSE(moved.fixed_width());
      ASSERT_NE(moved.keys(), nullptr);
      same(moved, "after an Append");
      for (size_t i = 0; i < moved.size(); ++i) {
        const uint64_t d = moved.keys()[i];
        EXPECT_EQ(std::string_view(moved.key_bytes() + uint32_t(d), size_t(d >> 32)), moved.key(i));
        EXPECT_EQ(std::string_view(moved.value_bytes() + moved.values()[i], moved.value_lens()[i]),
                  moved.value(i));
      }
      moved.Clear();
      EXPECT_FALSE(moved.fixed_width());
    }
  }
}

// A wide fixed-width batch without a values column: each storing op's slot
// is zeroed (a PUT of value_width zero bytes), a GET's stays unused.
TEST(Batch, WideFixedWidthWithoutValuesStoresZeros) {
  const std::vector<OpType> types = {OpType::kPut, OpType::kGet, OpType::kPut, OpType::kGet};
  const std::string keys(4 * 16, 'k');
  for (size_t vw : {size_t(16), size_t(64)}) {
    Batch b;
    b.AppendBulk(types.data(), keys.data(), 16, nullptr, vw, types.size());
    ASSERT_TRUE(b.fixed_width());
    EXPECT_EQ(b.value(0), std::string(vw, '\0')) << vw;
    EXPECT_EQ(b.value(1), "") << vw;
    EXPECT_EQ(b.value(2), std::string(vw, '\0')) << vw;
    EXPECT_EQ(b.value(3), "") << vw;
    EXPECT_EQ(b.stores(), 2u);
  }
}

// What a fixed-width batch cannot hold makes AppendBulk write descriptors:
// values wider than kFixedMaxValueWidth, unpadded keys, CAS, a second width,
// a batch that is already general.
TEST(Batch, FixedWidthOnlyWhereItFits) {
  const std::vector<OpType> gets(4, OpType::kGet);
  const std::vector<OpType> cas = {OpType::kGet, OpType::kCompareAndSwap, OpType::kGet,
                                   OpType::kGet};
  const std::string keys(4 * 16, 'k'), values(4 * 72, 'v');
  auto fixed = [&](const std::vector<OpType>& t, size_t kw, size_t vw) {
    Batch b;
    b.AppendBulk(t.data(), keys.data(), kw, values.data(), vw, t.size());
    return b.fixed_width();
  };
  EXPECT_TRUE(fixed(gets, 8, 8));
  EXPECT_TRUE(fixed(gets, 16, 0));
  EXPECT_TRUE(fixed(gets, 8, 64));
  EXPECT_FALSE(fixed(gets, 8, 72)) << "value wider than kFixedMaxValueWidth";
  EXPECT_FALSE(fixed(gets, 8, 12)) << "value width not a multiple of 8";
  EXPECT_FALSE(fixed(gets, 5, 8)) << "key width not a multiple of 8";
  EXPECT_FALSE(fixed(gets, 0, 8)) << "empty keys";
  EXPECT_FALSE(fixed(cas, 8, 8)) << "compare-and-swap";
  Batch two;
  two.AppendBulk(gets.data(), keys.data(), 8, values.data(), 8, 4);
  two.AppendBulk(gets.data(), keys.data(), 16, values.data(), 8, 4);
  EXPECT_FALSE(two.fixed_width()) << "a second key width";
  ASSERT_EQ(two.size(), 8u);
  EXPECT_EQ(two.key(3), std::string(8, 'k'));
  EXPECT_EQ(two.key(4), std::string(16, 'k'));
  Batch general;
  general.Get("x");
  general.AppendBulk(gets.data(), keys.data(), 8, values.data(), 8, 4);
  EXPECT_FALSE(general.fixed_width()) << "the batch was general already";
  EXPECT_EQ(general.key(4), std::string(8, 'k'));
}

TEST(Batch, OpTypeNames) {
  EXPECT_STREQ(OpTypeName(OpType::kGet), "GET");
  EXPECT_STREQ(OpTypeName(OpType::kPut), "PUT");
  EXPECT_STREQ(OpTypeName(OpType::kDelete), "DELETE");
  EXPECT_STREQ(OpTypeName(OpType::kCompareAndSwap), "CAS");
  EXPECT_STREQ(OpTypeName(static_cast<OpType>(200)), "UNKNOWN");
}

}  // namespace
}  // namespace kvcg
