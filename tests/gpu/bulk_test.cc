// The columnar bulk path (kvcg/gpu_bulk.h) against the Store path: the same
// random ops (few keys, so many duplicates inside a chunk and across chunks)
// run through Store::Execute on one store and ExecuteFixed8 on another must
// give identical results op by op, and identical stores. Small chunks make
// the pipelined chunks' cross-chunk order matter. The device hash is checked
// against Xxh3Hash on the host (runs everywhere); the GPU tests skip with the
// reason without a usable GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kvcg/gpu_bulk.h"
#include "kvcg/hash.h"
#include "kvcg/store.h"
#include "gpu_test_util.h"
#include "store/backends.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg {
namespace {

using gpu_test::Bytes8;

TEST(Xxh3Fixed8, MatchesXxh3Hash) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t k = i < 1000 ? uint64_t(i) : rng();
    ASSERT_EQ(store::gpu::Xxh3Fixed8(k), Xxh3Hash(Bytes8(k))) << k;
  }
}

Config Fixed8Config() {
  Config c;
  c.backend = Backend::kGpu;
  c.layout = Layout::kFixed8;
  c.gpu_memory_bytes = 1ull << 30;
  return c;
}

std::unique_ptr<Store> OpenOrDie(const Config& c) {
  std::unique_ptr<Store> s;
  Status st = Store::Open(c, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

struct Ops {
  std::vector<OpType> types;
  std::vector<uint64_t> keys, values;
};

Ops RandomOps(std::mt19937_64& rng, size_t n, uint64_t key_space, uint32_t put_pct,
              uint32_t del_pct) {
  Ops o;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = uint32_t(rng() % 100);
    o.types.push_back(r < put_pct ? OpType::kPut
                                  : r < put_pct + del_pct ? OpType::kDelete : OpType::kGet);
    o.keys.push_back(rng() % key_space * 0x9E3779B97F4A7C15ull);
    o.values.push_back(rng());
  }
  return o;
}

// Runs `o` through the Store path on `a` and the bulk path on `b`; expects
// identical results.
void RunBoth(Store* a, Store* b, const Ops& o, size_t chunk_ops) {
  Batch batch;
  for (size_t i = 0; i < o.types.size(); ++i) {
    switch (o.types[i]) {
      case OpType::kGet: batch.Get(Bytes8(o.keys[i])); break;
      case OpType::kPut: batch.Put(Bytes8(o.keys[i]), Bytes8(o.values[i])); break;
      default: batch.Delete(Bytes8(o.keys[i])); break;
    }
  }
  const std::vector<OpResult> want = a->Execute(batch);
  const size_t n = o.types.size();
  std::vector<Code> codes(n, Code::kInternal);
  std::vector<uint64_t> results(n, 0xdeadbeef);
  gpu::Fixed8Ops ops;
  ops.n = n;
  ops.types = o.types.data();
  ops.keys = o.keys.data();
  ops.values = o.values.data();
  ops.codes = codes.data();
  ops.results = results.data();
  ops.chunk_ops = chunk_ops;
  Status s = gpu::ExecuteFixed8(b, ops);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(want.size(), n);
  size_t mismatches = 0;
  for (size_t i = 0; i < n && mismatches < 10; ++i) {
    const uint64_t want_value = want[i].value.size() == 8 ? [&] {
      uint64_t v;
      std::memcpy(&v, want[i].value.data(), 8);
      return v;
    }() : 0;
    if (codes[i] != want[i].code || results[i] != want_value) {
      ++mismatches;
      ADD_FAILURE() << "op " << i << " type " << int(o.types[i]) << ": store path code "
                    << int(want[i].code) << " value " << want_value << ", bulk code "
                    << int(codes[i]) << " value " << results[i];
    }
  }
  EXPECT_EQ(a->Size(), b->Size());
}

TEST(GpuBulk, MatchesStorePathWithDuplicatesAcrossChunks) {
  SKIP_WITHOUT_GPU();
  auto a = OpenOrDie(Fixed8Config());
  auto b = OpenOrDie(Fixed8Config());
  std::mt19937_64 rng(3);
  // Few keys: every chunk holds many ops per key, and keys span chunks.
  RunBoth(a.get(), b.get(), RandomOps(rng, 100000, 300, 30, 10), 4096);
  RunBoth(a.get(), b.get(), RandomOps(rng, 100000, 300, 5, 2), 777);
  // Many keys, default chunk: the table grows (slab pool) under the bulk path.
  RunBoth(a.get(), b.get(), RandomOps(rng, 300000, 200000, 50, 5), 0);
  RunBoth(a.get(), b.get(), RandomOps(rng, 300000, 200000, 5, 5), 65536);
}

TEST(GpuBulk, HotKeyAndOrderAcrossCalls) {
  SKIP_WITHOUT_GPU();
  auto a = OpenOrDie(Fixed8Config());
  auto b = OpenOrDie(Fixed8Config());
  std::mt19937_64 rng(5);
  // One key, every op in one chunk and across chunks.
  RunBoth(a.get(), b.get(), RandomOps(rng, 20000, 1, 40, 20), 0);
  RunBoth(a.get(), b.get(), RandomOps(rng, 20000, 1, 40, 20), 1000);
  // PUT, GET, DELETE, GET on one key, one op per call.
  const uint64_t key = 42;
  const OpType seq[] = {OpType::kPut, OpType::kGet, OpType::kDelete, OpType::kGet};
  const Code want[] = {Code::kNotFound, Code::kOk, Code::kOk, Code::kNotFound};
  for (int i = 0; i < 4; ++i) {
    const uint64_t value = 7;
    Code code = Code::kInternal;
    uint64_t result = 1;
    gpu::Fixed8Ops ops;
    ops.n = 1;
    ops.types = &seq[i];
    ops.keys = &key;
    ops.values = &value;
    ops.codes = &code;
    ops.results = &result;
    ASSERT_TRUE(gpu::ExecuteFixed8(b.get(), ops).ok());
    EXPECT_EQ(code, want[i]) << i;
    EXPECT_EQ(result, want[i] == Code::kOk ? 7u : 0u) << i;
  }
}

uint64_t Hash7(std::string_view) { return 7; }

TEST(GpuBulk, CustomHashAndCapacityMatchStorePath) {
  SKIP_WITHOUT_GPU();
  Config c = Fixed8Config();
  c.hash = &Hash7;  // every key in one bucket: long chains, host hashing
  {
    auto a = OpenOrDie(c);
    auto b = OpenOrDie(c);
    std::mt19937_64 rng(9);
    RunBoth(a.get(), b.get(), RandomOps(rng, 4000, 150, 40, 10), 512);
  }
  // Capacity: which of one call's concurrent inserts of different keys wins
  // the last slots is unordered (in both paths), so fill to the limit first;
  // then every new key must answer kCapacityExhausted on both paths.
  Config m = Fixed8Config();
  m.max_keys = 100;
  auto a = OpenOrDie(m);
  auto b = OpenOrDie(m);
  Ops fill;
  for (uint64_t i = 0; i < 100; ++i) {
    fill.types.push_back(OpType::kPut);
    fill.keys.push_back(i);
    fill.values.push_back(i + 1);
  }
  RunBoth(a.get(), b.get(), fill, 0);
  std::mt19937_64 rng(10);
  RunBoth(a.get(), b.get(), RandomOps(rng, 5000, 1000, 60, 0), 0);
  EXPECT_EQ(b->Size(), 100u);
}

TEST(GpuBulk, RejectsWhatItCannotRun) {
  SKIP_WITHOUT_GPU();
  auto b = OpenOrDie(Fixed8Config());
  const OpType cas = OpType::kCompareAndSwap;
  const uint64_t key = 1, value = 2;
  Code code = Code::kOk;
  uint64_t result = 0;
  gpu::Fixed8Ops ops;
  ops.n = 1;
  ops.types = &cas;
  ops.keys = &key;
  ops.values = &value;
  ops.codes = &code;
  ops.results = &result;
  EXPECT_EQ(gpu::ExecuteFixed8(b.get(), ops).code(), Code::kInvalidArgument);
  const OpType put = OpType::kPut;
  ops.types = &put;
  ops.values = nullptr;
  EXPECT_EQ(gpu::ExecuteFixed8(b.get(), ops).code(), Code::kInvalidArgument);
  EXPECT_EQ(b->Size(), 0u);
  Config g = Fixed8Config();
  g.layout = Layout::kGeneral;
  auto general = OpenOrDie(g);
  ops.values = &value;
  EXPECT_EQ(gpu::ExecuteFixed8(general.get(), ops).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace kvcg
