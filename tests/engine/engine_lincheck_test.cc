// Linearizability of the engine under frequent model switches.
//
// Several clients run random GET/PUT/DELETE/CAS batches (pipelined, two in
// flight each) on a dozen keys while a switcher installs a new model every
// couple of milliseconds. The models move keys between hot and cold in every
// pattern, including the paper's m1 hot -> m2 cold -> m3 hot (§6.2): the
// "even"/"odd" models alternate, so every key goes hot -> cold -> hot over
// and over, and random subsets and all-hot/all-cold models mix in. Hashes are
// forced to collide (one value for every key, or three values) in some rows.
// The recorded history (with same-key program order) must pass the
// Wing–Gong checker, and after a final flush the canonical store must agree
// with the engine on every key.
//
// Rows: the CPU backend inline (its completions run inside Submit) and made
// asynchronous by DelayedStore (misses stay in flight across switches, like
// the GPU); the same on the GPU backend, skipped with the reason when there
// is no usable GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "engine_test_util.h"
#include "history_recorder.h"
#include "kvcg/hash.h"
#include "linearizability.h"

namespace kvcg::testing {
namespace {

uint64_t ConstantHash(std::string_view) { return 7; }
uint64_t ThreeHashes(std::string_view key) { return Xxh3Hash(key) % 3 * 0x5555555555555555ull; }

struct Row {
  const char* name;
  Backend backend;
  Mode mode;
  uint32_t delay_us;
  HashFunction hash;
};

// gtest prints a row by its name.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class EngineLincheckTest : public ::testing::TestWithParam<Row> {};

constexpr int kKeys = 12;

std::string Key(int i) { return "k" + std::to_string(i); }

std::shared_ptr<const Model> PickModel(std::mt19937_64& rng, uint64_t round) {
  switch (round % 6) {
    case 0:
    case 2: {  // even/odd alternate: each key hot -> cold -> hot
      std::vector<std::string> keys;
      for (int i = (round % 4 == 0) ? 0 : 1; i < kKeys; i += 2) keys.push_back(Key(i));
      return MakeKeySetModel(std::move(keys), round % 4 == 0 ? "even" : "odd");
    }
    case 1:
    case 3: {
      std::vector<std::string> keys;
      for (int i = (round % 4 == 1) ? 1 : 0; i < kKeys; i += 2) keys.push_back(Key(i));
      return MakeKeySetModel(std::move(keys), round % 4 == 1 ? "odd" : "even");
    }
    case 4: {
      std::vector<std::string> keys;
      for (int i = 0; i < kKeys; ++i) {
        if (rng() & 1) keys.push_back(Key(i));
      }
      return MakeKeySetModel(std::move(keys), "random");
    }
    default:
      return (rng() & 1) ? MakeAllHotModel() : MakeAllColdModel();
  }
}

TEST_P(EngineLincheckTest, LinearizableUnderFrequentSwitches) {
  const Row row = GetParam();
  if (row.backend == Backend::kGpu) {
    std::string why;
    if (NoGpu(&why)) GTEST_SKIP() << why;
  }
  Config config = EngineConfig(row.mode, row.backend);
  config.hash = row.hash;
  std::unique_ptr<Engine> engine = OpenEngine(config, row.delay_us);
  ASSERT_NE(engine, nullptr);

  lincheck::HistoryRecorder recorder;
  std::atomic<bool> stop{false};
  constexpr int kClients = 4;
  const auto run_for = std::chrono::milliseconds(1200);

  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      lincheck::HistoryRecorder::Client* client = recorder.NewClient();
      std::mt19937_64 rng(1000 + c);
      std::atomic<int> outstanding{0};
      uint64_t seq = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        while (outstanding.load() >= 2) std::this_thread::yield();
        Batch batch;
        const int ops = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < ops; ++i) {
          const std::string key = Key(static_cast<int>(rng() % kKeys));
          const std::string value = "c" + std::to_string(c) + "-" + std::to_string(++seq);
          const int dice = static_cast<int>(rng() % 100);
          if (dice < 40) {
            batch.Get(key);
          } else if (dice < 70) {
            batch.Put(key, value);
          } else if (dice < 85) {
            batch.Delete(key);
          } else {
            // Expect a value some client may have written recently, or absence.
            const std::string expected = "c" + std::to_string(rng() % kClients) + "-" +
                                         std::to_string(seq > 8 ? seq - rng() % 8 : seq);
            const std::string_view ev = expected;
            batch.CompareAndSwap(key, (rng() % 3 == 0) ? nullptr : &ev, value);
          }
        }
        ++outstanding;
        client->Submit(engine.get(), std::move(batch),
                       [&outstanding](Results&&) { --outstanding; });
      }
      while (outstanding.load() != 0) std::this_thread::yield();
    });
  }

  uint64_t switches = 0, failed = 0;
  std::mt19937_64 rng(7);
  const auto deadline = std::chrono::steady_clock::now() + run_for;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    Status s = row.mode == Mode::kHotOnly
                   ? engine->Flush()
                   : engine->InstallModel(PickModel(rng, switches), "lincheck", nullptr);
    if (!s.ok()) ++failed;
    ++switches;
  }
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_EQ(failed, 0u);

  const std::vector<lincheck::Event> history = recorder.History();
  const lincheck::CheckResult result = lincheck::Check(history);
  EngineStats stats = engine->Stats();
  uint64_t deferred = 0, replayed = 0, evicted = 0;
  for (const SwitchRecord& r : stats.recent_switches) {
    deferred += r.deferred;
    replayed += r.replayed;
    evicted += r.evicted;
  }
  std::printf(
      "[ INFO     ] %s: %zu ops on %zu keys, %llu switches; hot hits %llu, misses %llu, "
      "waited %llu, cold %llu; last %zu switches: replayed %llu, evicted %llu, parked "
      "batches %llu; checker steps %llu\n",
      row.name, result.operations, result.keys, static_cast<unsigned long long>(switches),
      static_cast<unsigned long long>(stats.hot.hits),
      static_cast<unsigned long long>(stats.hot.misses),
      static_cast<unsigned long long>(stats.hot.waited),
      static_cast<unsigned long long>(stats.cold.ops), stats.recent_switches.size(),
      static_cast<unsigned long long>(replayed), static_cast<unsigned long long>(evicted),
      static_cast<unsigned long long>(deferred), static_cast<unsigned long long>(result.steps));
  ASSERT_TRUE(result.linearizable()) << lincheck::VerdictName(result.verdict) << "\n"
                                     << result.explanation;
  EXPECT_GT(result.operations, 1000u);
  if (row.mode == Mode::kKvcg) {
    EXPECT_GT(stats.hot.hits, 0u);   // the hot path really ran
    EXPECT_GT(stats.cold.ops, 0u);   // and so did the cold one
    EXPECT_GT(replayed, 0u);         // switches had logged updates to replay
    EXPECT_GT(evicted, 0u);          // and keys to evict
  }

  // After a final flush the canonical store alone must hold what the engine serves.
  ASSERT_TRUE(engine->Flush().ok());
  for (int i = 0; i < kKeys; ++i) {
    OpResult via_engine = engine->Get(Key(i));
    OpResult via_canonical = engine->canonical()->Get(Key(i));
    EXPECT_EQ(via_engine.code, via_canonical.code) << Key(i);
    EXPECT_EQ(via_engine.value, via_canonical.value) << Key(i);
  }
  EXPECT_EQ(engine->Size(), engine->canonical()->Size());
}

INSTANTIATE_TEST_SUITE_P(
    Rows, EngineLincheckTest,
    ::testing::Values(Row{"cpu_inline_xxh3", Backend::kCpu, Mode::kKvcg, 0, &Xxh3Hash},
                      Row{"cpu_inline_onehash", Backend::kCpu, Mode::kKvcg, 0, &ConstantHash},
                      Row{"cpu_async_xxh3", Backend::kCpu, Mode::kKvcg, 100, &Xxh3Hash},
                      Row{"cpu_async_onehash", Backend::kCpu, Mode::kKvcg, 100, &ConstantHash},
                      Row{"cpu_async_threehashes", Backend::kCpu, Mode::kKvcg, 100, &ThreeHashes},
                      Row{"cpu_only_async_onehash", Backend::kCpu, Mode::kHotOnly, 100,
                          &ConstantHash},
                      Row{"gpu_xxh3", Backend::kGpu, Mode::kKvcg, 0, &Xxh3Hash},
                      Row{"gpu_onehash", Backend::kGpu, Mode::kKvcg, 0, &ConstantHash},
                      Row{"gpu_cpu_only_onehash", Backend::kGpu, Mode::kHotOnly, 0,
                          &ConstantHash}),
    [](const ::testing::TestParamInfo<Row>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kvcg::testing
