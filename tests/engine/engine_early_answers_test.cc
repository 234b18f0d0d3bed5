// Store::SubmitWithEarlyAnswers on the engine: hot-cache hits and input
// errors are readable before the batch completes, on the submitting thread,
// while cold ops and misses are not; the completion still has every result.
// A backend answers nothing early.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "engine_test_util.h"
#include "kvcg/engine.h"
#include "kvcg/model.h"
#include "kvcg/store.h"

namespace kvcg::testing {
namespace {

struct Seen {
  int calls = 0;
  std::thread::id thread;
  bool before_done = false;
  std::vector<uint8_t> answered;
  std::vector<OpResult> results;  // copied during the call
};

// Submits `batch` and waits; records what the early callback saw.
std::vector<OpResult> SubmitAndWait(Store* store, Batch batch, Seen* seen) {
  std::atomic<bool> done{false};
  std::vector<OpResult> final_results;
  const size_t n = batch.size();
  store->SubmitWithEarlyAnswers(
      std::move(batch),
      [&](Results&& r) {
        final_results = r.ToOwned();
        done.store(true, std::memory_order_release);
      },
      [&](const Store::EarlyAnswers& a) {
        ++seen->calls;
        seen->thread = std::this_thread::get_id();
        seen->before_done = !done.load(std::memory_order_acquire);
        seen->answered.assign(a.answered, a.answered + n);
        seen->results = a.results.ToOwned();
      });
  while (!done.load(std::memory_order_acquire)) std::this_thread::yield();
  return final_results;
}

class EarlyAnswersTest : public ::testing::TestWithParam<uint32_t> {  // canonical delay (µs)
 protected:
  std::unique_ptr<Engine> Open(Config c = EngineConfig()) { return OpenEngine(c, GetParam()); }
};

// Early answers are the hot ops the engine answers itself: hits and hot
// ops' input errors. A cold op's error, like its result, comes from the
// canonical store with the completion (the engine does not check cold ops).
TEST_P(EarlyAnswersTest, HitsAndErrorsAreAnsweredEarlyColdOpsAreNot) {
  Config c = EngineConfig();
  c.max_value_bytes = 64;
  auto e = Open(c);
  for (const char* k : {"h1", "h2", "c1"}) ASSERT_EQ(e->Put(k, std::string("v-") + k).code, Code::kNotFound);
  ASSERT_TRUE(e->InstallModel(MakeKeySetModel({"h1", "h2", "h3"}, "test"), "test", nullptr).ok());
  ASSERT_EQ(e->Get("h1").value, "v-h1");  // compulsory misses: now cached
  ASSERT_EQ(e->Get("h2").value, "v-h2");

  Batch b = e->NewBatch();
  b.Get("h1");                               // 0: hit
  b.Get("c1");                               // 1: cold
  b.Put("h2", "new");                        // 2: hit (write in the cache)
  b.Get(std::string(1u << 20, 'x'));         // 3: cold input error (key too large)
  b.Get("h3");                               // 4: hot, not cached: a miss
  b.Get("h3");                               // 5: queued behind the miss
  b.Put("h1", std::string(65, 'v'));         // 6: hot input error (value too large)
  Seen seen;
  const std::thread::id me = std::this_thread::get_id();
  std::vector<OpResult> out = SubmitAndWait(e.get(), std::move(b), &seen);

  ASSERT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.thread, me);
  EXPECT_EQ(seen.answered, (std::vector<uint8_t>{1, 0, 1, 0, 0, 0, 1}));
  if (GetParam() != 0) {
    EXPECT_TRUE(seen.before_done);  // the cold ops were still out
  }
  EXPECT_EQ(seen.results[0].value, "v-h1");
  EXPECT_EQ(seen.results[2].code, Code::kOk);
  EXPECT_EQ(seen.results[2].value, "v-h2");
  EXPECT_EQ(seen.results[6].code, Code::kValueTooLarge);
  // The completion has every result, the early ones again.
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(out[0].value, "v-h1");
  EXPECT_EQ(out[1].value, "v-c1");
  EXPECT_EQ(out[2].value, "v-h2");
  EXPECT_EQ(out[3].code, Code::kKeyTooLarge);
  EXPECT_EQ(out[4].code, Code::kNotFound);
  EXPECT_EQ(out[5].code, Code::kNotFound);
  EXPECT_EQ(out[6].code, Code::kValueTooLarge);
  EXPECT_EQ(e->Get("h2").value, "new");
  EXPECT_EQ(e->Get("h1").value, "v-h1") << "a refused PUT changes nothing";
}

TEST_P(EarlyAnswersTest, AllColdOrAllMissedBatchesAnswerNothingEarly) {
  auto e = Open();
  ASSERT_EQ(e->Put("c", "1").code, Code::kNotFound);
  Batch b = e->NewBatch();
  b.Get("c");
  b.Put("d", "2");
  Seen seen;
  std::vector<OpResult> out = SubmitAndWait(e.get(), std::move(b), &seen);
  EXPECT_EQ(seen.calls, 0);  // all cold: forwarded as it is
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].value, "1");

  ASSERT_TRUE(e->InstallModel(MakeKeySetModel({"c"}, "test"), "test", nullptr).ok());
  Batch m = e->NewBatch();
  m.Get("c");  // a compulsory miss
  out = SubmitAndWait(e.get(), std::move(m), &seen);
  EXPECT_EQ(seen.calls, 0);
  EXPECT_EQ(out[0].value, "1");
}

TEST_P(EarlyAnswersTest, AllHitBatchIsAnsweredEarlyAndCompletes) {
  auto e = Open(EngineConfig(Mode::kHotOnly));
  ASSERT_EQ(e->Put("a", "1").code, Code::kNotFound);  // miss, then cached
  Batch b = e->NewBatch();
  for (int i = 0; i < 100; ++i) b.Put("a", std::to_string(i));
  b.Get("a");
  Seen seen;
  std::vector<OpResult> out = SubmitAndWait(e.get(), std::move(b), &seen);
  ASSERT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.answered, std::vector<uint8_t>(101, 1));
  EXPECT_EQ(seen.results[0].value, "1");
  EXPECT_EQ(seen.results[100].value, "99");
  EXPECT_EQ(out[100].value, "99");
}

TEST_P(EarlyAnswersTest, BackendAnswersNothingEarly) {
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::Open(EngineConfig(Mode::kCanonical), &s).ok());
  Batch b = s->NewBatch();
  b.Put("k", "v");
  b.Get("k");
  Seen seen;
  std::vector<OpResult> out = SubmitAndWait(s.get(), std::move(b), &seen);
  EXPECT_EQ(seen.calls, 0);
  EXPECT_EQ(out[1].value, "v");
}

INSTANTIATE_TEST_SUITE_P(Canonical, EarlyAnswersTest, ::testing::Values(0u, 200u), CanonicalDelayName);

}  // namespace
}  // namespace kvcg::testing
