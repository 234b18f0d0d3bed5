// The non-operation parts of the Store contract: Size(), MemoryBytes(),
// Clear(), Info(), and Store::Open's errors.
#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

TEST_P(Conformance, SizeCountsDistinctKeys) {
  EXPECT_EQ(store_->Size(), 0u);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(NotFound(Put(K(i), V(i))));
  EXPECT_EQ(store_->Size(), 50u);
  for (int i = 0; i < 50; i += 2) ASSERT_TRUE(Found(Put(K(i), V(i + 100)), V(i)));
  EXPECT_EQ(store_->Size(), 50u) << "overwrites add no keys";
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Found(Delete(K(i)), V(i % 2 == 0 ? i + 100 : i)));
  EXPECT_EQ(store_->Size(), 40u);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(NotFound(Delete(K(i))));
  EXPECT_EQ(store_->Size(), 40u) << "deleting absent keys removes nothing";
}

TEST_P(Conformance, MemoryBytesFollowsContent) {
  EXPECT_EQ(store_->MemoryBytes(), 0u);
  ASSERT_TRUE(NotFound(Put(K(1), V(1))));
  const uint64_t one = store_->MemoryBytes();
  EXPECT_GE(one, K(1).size() + V(1).size());
  ASSERT_TRUE(NotFound(Put(K(2), V(2))));
  EXPECT_GT(store_->MemoryBytes(), one);
  ASSERT_TRUE(Found(Delete(K(2)), V(2)));
  EXPECT_EQ(store_->MemoryBytes(), one) << "a delete gives back what its insert charged";
  if (!fixed8()) {
    ASSERT_TRUE(Found(Put(K(1), V(1, 4000)), V(1)));
    EXPECT_GE(store_->MemoryBytes(), one + 4000 - V(1).size()) << "a larger value costs more";
    ASSERT_TRUE(Found(Put(K(1), V(1)), V(1, 4000)));
    EXPECT_EQ(store_->MemoryBytes(), one) << "shrinking back restores the charge";
  }
  ASSERT_TRUE(Found(Delete(K(1)), V(1)));
  EXPECT_EQ(store_->MemoryBytes(), 0u);
}

TEST_P(Conformance, ClearRemovesEverythingAndStoreStaysUsable) {
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(NotFound(Put(K(i), V(i))));
  store_->Clear();
  EXPECT_EQ(store_->Size(), 0u);
  EXPECT_EQ(store_->MemoryBytes(), 0u);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(NotFound(Get(K(i)))) << i;
  EXPECT_TRUE(NotFound(Put(K(1), V(2)))) << "no previous value survives Clear";
  EXPECT_TRUE(Found(Get(K(1)), V(2)));
  EXPECT_EQ(store_->Size(), 1u);
  store_->Clear();
  store_->Clear();
  EXPECT_EQ(store_->Size(), 0u);
}

TEST_P(Conformance, InfoNamesTheConcreteBackend) {
  const StoreInfo info = store_->Info();
  EXPECT_NE(info.backend, Backend::kAuto);
  if (config_.backend != Backend::kAuto) {
    EXPECT_EQ(info.backend, config_.backend);
  }
  EXPECT_EQ(info.layout, config_.layout);
  EXPECT_FALSE(info.device.empty());
}

TEST_P(Conformance, OpenRejectsNullHash) {
  Config config = GetParam().make_config();
  config.hash = nullptr;
  std::unique_ptr<Store> store;
  const Status s = GetParam().open(config, &store);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(store, nullptr);
}

// --- Store::Open, independent of the rows -----------------------------------

Config WithBackend(Backend backend) {
  Config c;
  c.backend = backend;
  return c;
}

TEST(StoreOpen, InvalidConfigsAreRejected) {
  for (Backend backend : {Backend::kCpu, Backend::kGpu, Backend::kAuto}) {
    SCOPED_TRACE(BackendName(backend));
    std::vector<Config> bad;
    bad.push_back(WithBackend(backend));
    bad.back().hash = nullptr;
    bad.push_back(WithBackend(backend));
    bad.back().max_key_bytes = 0;
    bad.push_back(WithBackend(backend));
    bad.back().layout = Layout::kFixed8;
    bad.back().max_value_bytes = 4;
    bad.push_back(WithBackend(backend));
    bad.back().cpu_shards = 3;
    for (size_t i = 0; i < bad.size(); ++i) {
      std::unique_ptr<Store> store;
      const Status s = Store::Open(bad[i], &store);
      EXPECT_EQ(s.code(), Code::kInvalidArgument) << "config " << i << ": " << s.ToString();
      EXPECT_FALSE(s.message().empty());
      EXPECT_EQ(store, nullptr);
    }
  }
}

TEST(StoreOpen, GpuWithoutAGpuIsUnavailable) {
  const Config config = WithBackend(Backend::kGpu);
  std::string why;
  if (store::GpuAvailable(config, &why)) GTEST_SKIP() << "a usable GPU is present";
  EXPECT_FALSE(why.empty()) << "GpuAvailable must say why not";
  std::unique_ptr<Store> store;
  const Status s = Store::Open(config, &store);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_FALSE(s.message().empty());
  EXPECT_EQ(store, nullptr);
}

TEST(StoreOpen, AutoPicksGpuOnlyWhenAvailable) {
  const Config config = WithBackend(Backend::kAuto);
  std::unique_ptr<Store> store;
  const Status s = Store::Open(config, &store);
  ASSERT_TRUE(s.ok()) << "auto never fails for lack of a GPU: " << s.ToString();
  ASSERT_NE(store, nullptr);
  const Backend want = store::GpuAvailable(config, nullptr) ? Backend::kGpu : Backend::kCpu;
  EXPECT_EQ(store->Info().backend, want);
  EXPECT_TRUE(NotFound(store->Put("k", "v")));
  EXPECT_TRUE(Found(store->Get("k"), "v"));
}

}  // namespace
}  // namespace kvcg::conformance
