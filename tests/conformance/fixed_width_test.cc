// Fixed-width batches (kvcg/batch.h): a batch filled by AppendBulk with one
// key and one value width carries no per-op descriptors, and every store
// must answer it exactly as the same ops appended one by one — alone, next
// to general batches in the same aggregated request, small and large, and
// after an Append has turned it back into a general batch.
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

// Ops on `keys` distinct keys of `key_width` bytes with `value_width`-byte
// values, as columns, with the model's expected answer per op (nullopt: kNotFound).
struct Columns {
  std::vector<OpType> types;
  std::string keys, values;
  std::vector<std::optional<std::string>> want;
};

std::string FixedKey(uint64_t k, size_t width) {
  std::string key(width, '\0');
  for (size_t b = 0; b < width; ++b) key[b] = char((k * 131 + b * 7 + 1) & 0xff);
  std::memcpy(key.data(), &k, 8);  // distinct for distinct k
  return key;
}

std::string FixedValue(uint64_t i, size_t width = 8) {
  std::string v(width, '\0');
  for (size_t w = 0; w < width / 8; ++w) {
    const uint64_t x = (i + w) * 0x9E3779B97F4A7C15ull + 1;
    std::memcpy(v.data() + w * 8, &x, 8);
  }
  return v;
}

// n random GET / PUT / DELETE ops; the value array ends at the last PUT (a
// caller need not pass value slots past it, and ASan checks we read none).
Columns MakeOps(std::mt19937_64& rng, size_t n, uint64_t keys, size_t key_width,
                std::map<std::string, std::string>& model, size_t value_width = 8) {
  Columns c;
  size_t last_put = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string key = FixedKey(rng() % keys, key_width);
    const auto it = model.find(key);
    c.want.push_back(it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
    const int kind = int(rng() % 4);
    const OpType t = kind == 0 ? OpType::kDelete : kind == 1 ? OpType::kPut : OpType::kGet;
    std::string value = FixedValue(rng(), value_width);
    if (t == OpType::kPut) {
      model[key] = value;
      last_put = i + 1;
    } else if (t == OpType::kDelete) {
      model.erase(key);
    }
    c.types.push_back(t);
    c.keys += key;
    c.values += value;
  }
  c.values.resize(last_put * value_width);
  return c;
}

void Expect(const Results& r, const Columns& c, size_t first, const char* what) {
  SCOPED_TRACE(what);
  for (size_t i = 0; i < c.want.size(); ++i) {
    if (c.want[i]) {
      ASSERT_TRUE(Found(r[first + i], *c.want[i])) << "op " << i;
    } else {
      ASSERT_TRUE(NotFound(r[first + i])) << "op " << i;
    }
  }
}

size_t KeyWidth(bool fixed8) { return fixed8 ? 8 : 16; }

// Small and large batches (the GPU's one-block prepare, its device-wide
// prepare, and its direct DMA of page-locked batches), each op against the
// model, the batch checked to be fixed-width. The general layout also takes
// values of up to a cache line in fixed-width batches (16 and 64 bytes:
// slots written only for the ops that store).
TEST_P(Conformance, FixedWidthBatchesAnswerLikeTheModel) {
  std::mt19937_64 rng(7);
  std::map<std::string, std::string> model;
  const size_t kw = KeyWidth(fixed8());
  std::vector<size_t> widths = {8};
  if (!fixed8()) widths = {8, 16, 64};
  for (size_t vw : widths) {
    for (size_t n : {size_t(1), size_t(300), size_t(5000), size_t(70000)}) {
      SCOPED_TRACE("value width " + std::to_string(vw) + ", " + std::to_string(n) + " ops");
      // Few keys for the small batches (same-key order inside one), many for
      // the large one.
      const uint64_t keys = n < 1000 ? 40 : 20000;
      Columns c = MakeOps(rng, n, keys, kw, model, vw);
      Batch b = NewBatch();
      b.AppendBulk(c.types.data(), c.keys.data(), kw, c.values.data(), vw, n);
      ASSERT_TRUE(b.fixed_width());
      ASSERT_EQ(b.keys(), nullptr);
      Results r = Run(std::move(b));
      ASSERT_NO_FATAL_FAILURE(Expect(r, c, 0, "fixed-width batch"));
    }
  }
  EXPECT_EQ(store_->Size(), model.size());
}

// One submitter's fixed-width and general batches in flight together (the
// GPU pipeline aggregates them into one request) keep same-key order
// between them.
TEST_P(Conformance, FixedWidthAndGeneralBatchesInterleaveInOrder) {
  std::mt19937_64 rng(11);
  std::map<std::string, std::string> model;
  const size_t kw = KeyWidth(fixed8());
  constexpr int kBatches = 40;
  std::vector<Columns> cols;
  std::vector<Results> results(kBatches);
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  for (int j = 0; j < kBatches; ++j) {
    cols.push_back(MakeOps(rng, 50 + size_t(rng() % 200), 30, kw, model));
    const Columns& c = cols.back();
    Batch b = NewBatch();
    if (j % 2 == 0) {
      b.AppendBulk(c.types.data(), c.keys.data(), kw, c.values.data(), 8, c.types.size());
      ASSERT_TRUE(b.fixed_width());
    } else {
      for (size_t i = 0; i < c.types.size(); ++i) {
        const std::string_view k(c.keys.data() + i * kw, kw);
        b.Append(c.types[i], k,
                 c.types[i] == OpType::kPut ? std::string_view(c.values.data() + i * 8, 8)
                                            : std::string_view());
      }
      ASSERT_FALSE(b.fixed_width());
    }
    store_->Submit(std::move(b), [&, j](Results&& r) {
      std::lock_guard<std::mutex> lock(mu);
      results[size_t(j)] = std::move(r);
      ++done;
      cv.notify_one();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done == kBatches; });
  for (int j = 0; j < kBatches; ++j) {
    ASSERT_EQ(results[size_t(j)].size(), cols[size_t(j)].types.size());
    ASSERT_NO_FATAL_FAILURE(Expect(results[size_t(j)], cols[size_t(j)], 0,
                                   j % 2 == 0 ? "fixed-width" : "general"));
  }
}

// An Append after AppendBulk turns the batch general; every op still
// answers as the model says.
TEST_P(Conformance, FixedWidthBatchStaysCorrectAfterAnAppend) {
  std::mt19937_64 rng(13);
  std::map<std::string, std::string> model;
  const size_t kw = KeyWidth(fixed8());
  Columns c = MakeOps(rng, 2000, 50, kw, model);
  Batch b = NewBatch();
  b.AppendBulk(c.types.data(), c.keys.data(), kw, c.values.data(), 8, c.types.size());
  ASSERT_TRUE(b.fixed_width());
  const std::string key = FixedKey(1, kw);
  const auto it = model.find(key);
  const std::optional<std::string> before =
      it == model.end() ? std::nullopt : std::optional<std::string>(it->second);
  b.Put(key, FixedValue(99));
  b.Get(key);
  ASSERT_FALSE(b.fixed_width());
  Results r = Run(std::move(b));
  ASSERT_NO_FATAL_FAILURE(Expect(r, c, 0, "bulk part"));
  if (before) EXPECT_TRUE(Found(r[c.types.size()], *before));
  else EXPECT_TRUE(NotFound(r[c.types.size()]));
  EXPECT_TRUE(Found(r[c.types.size() + 1], FixedValue(99)));
}

// Widths the layout does not take are refused per op, as for any batch:
// 16-byte keys in a fixed8 store, and 64-byte values (a PUT's only).
TEST_P(Conformance, FixedWidthBatchWithWrongWidthsIsRefusedPerOp) {
  if (!fixed8()) GTEST_SKIP() << "only fixed8 limits key and value widths";
  std::vector<OpType> types = {OpType::kPut, OpType::kGet, OpType::kDelete};
  const std::string keys = FixedKey(1, 16) + FixedKey(2, 16) + FixedKey(3, 16);
  const std::string values(3 * 8, 'v');
  Batch b = NewBatch();
  b.AppendBulk(types.data(), keys.data(), 16, values.data(), 8, types.size());
  ASSERT_TRUE(b.fixed_width());
  Results r = Run(std::move(b));
  for (size_t i = 0; i < types.size(); ++i) {
    EXPECT_TRUE(Failed(r[i], Code::kInvalidArgument)) << i;
  }
  const std::string keys8 = FixedKey(1, 8) + FixedKey(2, 8) + FixedKey(3, 8);
  const std::string wide(3 * 64, 'w');
  Batch w = NewBatch();
  w.AppendBulk(types.data(), keys8.data(), 8, wide.data(), 64, types.size());
  ASSERT_TRUE(w.fixed_width());
  Results rw = Run(std::move(w));
  EXPECT_TRUE(Failed(rw[0], Code::kInvalidArgument)) << "a 64-byte value in fixed8";
  EXPECT_TRUE(NotFound(rw[1]));
  EXPECT_TRUE(NotFound(rw[2]));
  EXPECT_EQ(store_->Size(), 0u);
}

}  // namespace
}  // namespace kvcg::conformance
