// The GPU backend tests' differential driver: random ops over a small key
// space, many per batch (so keys repeat inside one aggregated batch),
// executed on a store and checked op by op against a host model that
// applies them in order. Shared by gpu_store_test and gpu_prepare_test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_test_util.h"
#include "kvcg/store.h"

namespace kvcg::gpu_test {

// A reference model applying ops in order; returns the expected result.
struct HostModel {
  std::unordered_map<std::string, std::string> map;
  OpResult Apply(OpType type, const std::string& key, const std::string& value,
                 const std::optional<std::string>& expected) {
    OpResult r;
    auto it = map.find(key);
    const bool found = it != map.end();
    r.code = found ? Code::kOk : Code::kNotFound;
    if (found) r.value = it->second;
    switch (type) {
      case OpType::kGet:
        break;
      case OpType::kPut:
        map[key] = value;
        break;
      case OpType::kDelete:
        if (found) map.erase(it);
        break;
      case OpType::kCompareAndSwap:
        if (found ? expected && *expected == it->second : !expected) map[key] = value;
        break;
    }
    return r;
  }
};

inline ::testing::AssertionResult Same(const OpResult& got, const OpResult& want) {
  if (got.code == want.code && got.value == want.value) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << CodeName(got.code) << " (" << got.value.size()
                                       << " bytes), want " << CodeName(want.code) << " ("
                                       << want.value.size() << " bytes)";
}

// Random ops over a small key space, many per batch (so keys repeat inside
// one aggregated batch), checked op by op against the model.
// pinned: batches from store->NewBatch() (page-locked: a batch of >= 1024
// ops is DMA'd as is), else heap batches (gathered into staging).
inline void RunDifferential(Store* store, bool fixed8, uint64_t seed, int batches, int batch_ops,
                     int keys, bool pinned = false) {
  std::mt19937_64 rng(seed);
  HostModel model;
  auto make_key = [&](uint64_t k) {
    if (fixed8) return gpu_test::Bytes8(k * 0x9E3779B97F4A7C15ull);
    std::string s = "k" + std::to_string(k);
    s.append(k % 23, char(k));  // lengths 2..30, binary bytes included
    return s;
  };
  auto make_value = [&](uint64_t v) {
    if (fixed8) return gpu_test::Bytes8(v);
    std::string s(v % 97, 'a' + char(v % 26));
    if (!s.empty()) s[0] = char(v);
    return s;
  };
  for (int b = 0; b < batches; ++b) {
    Batch batch = pinned ? store->NewBatch() : Batch();
    std::vector<OpResult> want;
    for (int i = 0; i < batch_ops; ++i) {
      const std::string key = make_key(rng() % keys);
      const std::string value = make_value(rng());
      const int kind = int(rng() % 10);
      if (kind < 4) {
        batch.Get(key);
        want.push_back(model.Apply(OpType::kGet, key, "", std::nullopt));
      } else if (kind < 7) {
        batch.Put(key, value);
        want.push_back(model.Apply(OpType::kPut, key, value, std::nullopt));
      } else if (kind < 9) {
        batch.Delete(key);
        want.push_back(model.Apply(OpType::kDelete, key, "", std::nullopt));
      } else {
        // CAS: half with the current value (when there is one), half absent/wrong.
        auto it = model.map.find(key);
        std::optional<std::string> expected;
        if (rng() % 2 == 0 && it != model.map.end()) expected = it->second;
        else if (rng() % 2 == 0) expected = make_value(rng());
        if (expected) {
          const std::string_view e = *expected;
          batch.CompareAndSwap(key, &e, value);
        } else {
          batch.CompareAndSwap(key, nullptr, value);
        }
        want.push_back(model.Apply(OpType::kCompareAndSwap, key, value, expected));
      }
    }
    std::vector<OpResult> got = store->Execute(batch).ToOwned();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(Same(got[i], want[i])) << "batch " << b << " op " << i << " "
                                         << OpTypeName(batch.type(i));
    }
  }
  EXPECT_EQ(store->Size(), model.map.size());
}

}  // namespace kvcg::gpu_test
