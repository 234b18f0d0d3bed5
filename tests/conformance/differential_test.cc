// Differential test: thousands of random GET/PUT/DELETE/CAS operations on a
// small key space, in random-size batches, against a std::map reference model
// that applies the contract literally. Every result is compared, and Size()
// after every batch. Run once with the real hash and once with every key
// colliding, since a collision bug and an ordinary bug look alike here.
#include <map>
#include <optional>
#include <random>

#include "conformance_fixture.h"

namespace kvcg::conformance {
namespace {

uint64_t HashAllToOne(std::string_view) { return 42; }

TEST_P(Conformance, RandomOpsMatchMapModel) {
  constexpr int kOps = 4000;
  constexpr int kKeySpace = 24;
  for (HashFunction hash : {HashFunction{&Xxh3Hash}, HashFunction{&HashAllToOne}}) {
    SCOPED_TRACE(hash == &Xxh3Hash ? "xxh3" : "all-to-one");
    ASSERT_NO_FATAL_FAILURE(Reopen([&](Config& c) { c.hash = hash; }));
    const uint64_t seed = 20240601;
    std::mt19937_64 rng(seed);
    std::map<std::string, std::string> model;
    // A small pool of values so CAS expectations sometimes match by chance.
    auto random_value = [&]() -> std::string {
      const uint64_t id = rng() % 12;
      if (fixed8()) return V(id);
      const size_t sizes[] = {0, 1, 8, 31, 200, 5000};
      return V(id, sizes[rng() % 6]);
    };
    int done = 0;
    while (done < kOps) {
      const int n = 1 + static_cast<int>(rng() % 16);
      Batch batch = NewBatch();
      std::vector<std::string> what;                 // for failure messages
      std::vector<std::optional<std::string>> want;  // nullopt: kNotFound
      for (int i = 0; i < n; ++i) {
        const std::string key = K(rng() % kKeySpace);
        const auto it = model.find(key);
        const std::optional<std::string> before =
            it == model.end() ? std::nullopt : std::optional<std::string>(it->second);
        want.push_back(before);
        const int kind = static_cast<int>(rng() % 10);
        if (kind < 3) {
          batch.Get(key);
          what.push_back("GET " + Show(key));
        } else if (kind < 6) {
          const std::string value = random_value();
          batch.Put(key, value);
          model[key] = value;
          what.push_back("PUT " + Show(key));
        } else if (kind < 8) {
          batch.Delete(key);
          model.erase(key);
          what.push_back("DELETE " + Show(key));
        } else {
          const std::string desired = random_value();
          const int variant = static_cast<int>(rng() % 3);
          std::string expected_storage;
          bool stores;
          if (variant == 0) {
            batch.CompareAndSwap(key, nullptr, desired);
            stores = !before;
          } else {
            // Variant 1 expects the current value (a match when present).
            expected_storage = variant == 1 && before ? *before : random_value();
            const std::string_view expected = expected_storage;
            batch.CompareAndSwap(key, &expected, desired);
            stores = before && *before == expected_storage;
          }
          if (stores) model[key] = desired;
          what.push_back("CAS " + Show(key) + (variant == 0 ? " absent" : " expected"));
        }
      }
      Results r = Run(std::move(batch));
      for (int i = 0; i < n; ++i) {
        if (want[i]) ASSERT_TRUE(Found(r[i], *want[i])) << "op " << done + i << ": " << what[i];
        else ASSERT_TRUE(NotFound(r[i])) << "op " << done + i << ": " << what[i];
      }
      ASSERT_EQ(store_->Size(), model.size()) << "after op " << done + n - 1;
      done += n;
    }
    for (int k = 0; k < kKeySpace; ++k) {
      const auto it = model.find(K(k));
      if (it == model.end()) EXPECT_TRUE(NotFound(Get(K(k)))) << k;
      else EXPECT_TRUE(Found(Get(K(k)), it->second)) << k;
    }
  }
}

}  // namespace
}  // namespace kvcg::conformance
