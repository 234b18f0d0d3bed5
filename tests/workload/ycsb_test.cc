// Tests of the YCSB generators: the distributions' shapes, YCSB's constants,
// determinism, and the core workloads' operation mixes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "workload/generators.h"
#include "workload/ycsb.h"

namespace kvcg::workload {
namespace {

TEST(Zeta, MatchesYcsbPrecomputedConstant) {
  // YCSB's ScrambledZipfianGenerator.ZETAN = zeta(10^10, 0.99).
  EXPECT_NEAR(Zeta(10'000'000'000ull, 0.99), 26.46902820178302, 1e-9);
}

TEST(Zeta, TailApproximationAgreesWithExactSum) {
  for (double theta : {0.5, 0.9, 0.99}) {
    double exact = 0;
    const uint64_t n = 3'000'000;
    for (uint64_t i = 1; i <= n; ++i) exact += std::pow(static_cast<double>(i), -theta);
    EXPECT_NEAR(Zeta(n, theta), exact, exact * 1e-12) << "theta " << theta;
  }
}

TEST(Zipfian, RankZeroIsMostPopularAndFrequenciesFollowPowerLaw) {
  Random rng(1);
  const double theta = 0.99;
  ZipfianGenerator zipf(1000, theta);
  std::vector<uint64_t> counts(1000, 0);
  const int draws = 2'000'000;
  for (int i = 0; i < draws; ++i) ++counts[zipf.Next(rng)];
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], counts[10]);
  // P(0) = 1/zeta(n): check within 2%.
  const double p0 = 1.0 / Zeta(1000, theta);
  EXPECT_NEAR(counts[0] / static_cast<double>(draws), p0, p0 * 0.02);
  // P(0)/P(9) = 10^theta.
  EXPECT_NEAR(static_cast<double>(counts[0]) / counts[9], std::pow(10.0, theta), 0.6);
}

TEST(ScrambledZipfian, SpreadsPopularKeysAndStaysInRange) {
  Random rng(7);
  ScrambledZipfianGenerator gen(1'000'000, 0.99);
  std::map<uint64_t, uint64_t> counts;
  for (int i = 0; i < 200'000; ++i) {
    const uint64_t k = gen.Next(rng);
    ASSERT_LT(k, 1'000'000u);
    ++counts[k];
  }
  // The hottest key is not key 0 (scrambled) and is much hotter than average.
  uint64_t hottest = 0, hottest_count = 0;
  for (auto [k, c] : counts) {
    if (c > hottest_count) hottest = k, hottest_count = c;
  }
  EXPECT_EQ(hottest, FnvHash64(0) % 1'000'000);
  EXPECT_GT(hottest_count, 200'000u / counts.size() * 50);
}

TEST(FnvHash64, MatchesYcsbForKnownValues) {
  // FNV-1a over 8 zero bytes, from the offset basis; computed independently.
  uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; ++i) h = (h ^ 0) * 1099511628211ull;
  const int64_t s = static_cast<int64_t>(h);
  EXPECT_EQ(FnvHash64(0), static_cast<uint64_t>(s < 0 ? -s : s));
  EXPECT_NE(FnvHash64(1), FnvHash64(2));
}

TEST(SkewedLatest, FavoursRecentKeys) {
  Random rng(3);
  SkewedLatestGenerator gen(1000);
  uint64_t recent = 0;
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t k = gen.Next(rng, 1000);
    ASSERT_LT(k, 1000u);
    recent += k >= 990;
  }
  EXPECT_GT(recent, 30'000u);  // the newest 1% of keys take far more than 1% of draws
}

TEST(OperationGenerator, DeterministicForASeed) {
  WorkloadSpec spec;
  spec.key_space = 1'000'000;
  OperationGenerator a(spec, 42, nullptr), b(spec, 42, nullptr), c(spec, 43, nullptr);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const Operation x = a.Next(), y = b.Next(), z = c.Next();
    ASSERT_EQ(x.kind, y.kind);
    ASSERT_EQ(x.key_index, y.key_index);
    differs |= x.key_index != z.key_index;
  }
  EXPECT_TRUE(differs);
}

TEST(OperationGenerator, CoreWorkloadMixes) {
  for (const char* name : {"a", "b", "c", "d", "f"}) {
    WorkloadSpec spec;
    spec.key_space = 100'000;
    spec.prefill = 100'000;
    ASSERT_TRUE(ApplyCoreWorkload(name, &spec));
    std::atomic<uint64_t> counter{spec.prefill};
    OperationGenerator gen(spec, 1, &counter);
    std::map<OpKind, int> counts;
    const int n = 100'000;
    for (int i = 0; i < n; ++i) ++counts[gen.Next().kind];
    EXPECT_NEAR(counts[OpKind::kRead] / double(n), spec.read, 0.01) << name;
    EXPECT_NEAR(counts[OpKind::kUpdate] / double(n), spec.update, 0.01) << name;
    EXPECT_NEAR(counts[OpKind::kInsert] / double(n), spec.insert, 0.01) << name;
    EXPECT_NEAR(counts[OpKind::kReadModifyWrite] / double(n), spec.read_modify_write, 0.01) << name;
    if (spec.insert > 0) {
      EXPECT_EQ(counter.load(), spec.prefill + counts[OpKind::kInsert]);
    }
  }
  WorkloadSpec spec;
  EXPECT_FALSE(ApplyCoreWorkload("e", &spec));
}

TEST(FormatKey, EightByteAndDecimalForms) {
  std::string k;
  FormatKey(0x0102030405060708ull, 8, &k);
  ASSERT_EQ(k.size(), 8u);
  EXPECT_EQ(static_cast<unsigned char>(k[0]), 0x08);
  FormatKey(42, 16, &k);
  EXPECT_EQ(k, "user000000000042");
  FormatKey(42, 4, &k);
  EXPECT_EQ(k, "user42");
}

TEST(OperationGenerator, ValuesHaveRequestedSizeAndDifferByTag) {
  WorkloadSpec spec;
  spec.value_bytes = 100;
  OperationGenerator gen(spec, 1, nullptr);
  std::string v1, v2;
  gen.Value(1, &v1);
  gen.Value(2, &v2);
  EXPECT_EQ(v1.size(), 100u);
  EXPECT_NE(v1, v2);
  EXPECT_NE(v1, std::string(100, '\0'));
}

}  // namespace
}  // namespace kvcg::workload
