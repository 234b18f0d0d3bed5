// Expiry across restarts (log_format.h, "Replay and the clock"): with an
// injected clock, a restart keeps every live key's absolute expire-at,
// never resurrects a key that had expired before the stop, and replays ops
// whose effect depended on the clock (CAS, KEEPTTL, EXPIRE on a key that
// had expired meanwhile) exactly as they ran — from the log (TIME records)
// and from snapshots (their instant), on the CPU backend and in the engine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "kvcg/durable.h"
#include "kvcg/store.h"
#include "temp_dir.h"

namespace kvcg {
namespace {

namespace fs = std::filesystem;

std::atomic<uint64_t> g_now{0};
uint64_t FakeClock() { return g_now.load(std::memory_order_relaxed); }
constexpr uint64_t kT = 1'700'000'000'000;

// Each test's files in a directory of its own (tests/support/temp_dir.h).
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("dexp") {}
};

struct Row {
  const char* name;
  Mode mode;
  bool log;
};

class DurableExpiry : public ::testing::TestWithParam<Row> {
 protected:
  void SetUp() override { g_now = kT; }
  std::unique_ptr<Store> Open() {
    Config c;
    c.backend = Backend::kCpu;
    c.mode = GetParam().mode;
    c.expected_keys = 1024;
    c.clock = &FakeClock;
    c.durability.dir = dir_.path();
    c.durability.append_only = GetParam().log;
    c.durability.fsync = FsyncPolicy::kAlways;
    std::unique_ptr<Store> s;
    Status st = Store::Open(c, &s);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s;
  }
  // Stops the store, persisting it: the log is written as it goes; without
  // it, a snapshot is taken now (SAVE).
  void Stop(std::unique_ptr<Store>& s) {
    if (!GetParam().log) {
      ASSERT_TRUE(AsDurable(s.get())->Save().ok());
    }
    s.reset();
  }
  static OpResult One(Store* s, const std::function<void(Batch&)>& add) {
    Batch b = s->NewBatch();
    add(b);
    return s->Execute(std::move(b))[0].ToOwned();
  }
  TempDir dir_;
};

TEST_P(DurableExpiry, LiveKeysKeepTheirAbsoluteExpireAtAndExpiredOnesStayGone) {
  auto s = Open();
  One(s.get(), [](Batch& b) { b.Put("short", "1", kT + 100); });
  One(s.get(), [](Batch& b) { b.Put("long", "2", kT + 10'000); });
  One(s.get(), [](Batch& b) { b.Put("plain", "3"); });
  One(s.get(), [](Batch& b) { b.Put("later", "4"); });
  g_now = kT + 50;
  One(s.get(), [](Batch& b) { b.Expire("later", kT + 5'000); });
  g_now = kT + 200;  // "short" has expired before the stop
  EXPECT_EQ(s->Get("short").code, Code::kNotFound);
  Stop(s);

  g_now = kT + 300;
  s = Open();
  EXPECT_EQ(s->Get("short").code, Code::kNotFound);  // not resurrected
  OpResult r = s->Get("long");
  EXPECT_EQ(r.value, "2");
  EXPECT_EQ(r.expire_at, kT + 10'000);  // absolute, not re-based on the restart
  r = s->Get("later");
  EXPECT_EQ(r.value, "4");
  EXPECT_EQ(r.expire_at, kT + 5'000);
  EXPECT_EQ(s->Get("plain").expire_at, kNoExpiry);
  EXPECT_EQ(s->Keyspace().volatile_keys, 2u);
  s.reset();

  g_now = kT + 20'000;  // restarting after every TTL ran out
  s = Open();
  EXPECT_EQ(s->Get("long").code, Code::kNotFound);
  EXPECT_EQ(s->Get("later").code, Code::kNotFound);
  EXPECT_EQ(s->Get("plain").value, "3");
}

// Ops that found a key expired (or not yet) replay against the same state:
// without the replay clock the restart at a later time would see "cas" as
// expired before its CAS (losing the persistent value), and an earlier
// clock would see "keep" and "absent" still live.
TEST_P(DurableExpiry, ClockDependentOpsReplayAsTheyRan) {
  auto s = Open();
  One(s.get(), [](Batch& b) { b.Put("cas", "v1", kT + 100); });
  One(s.get(), [](Batch& b) { b.Put("keep", "k1", kT + 100); });
  One(s.get(), [](Batch& b) { b.Put("absent", "a1", kT + 100); });
  g_now = kT + 50;  // "cas" is live: the CAS stores a persistent value
  const std::string_view v1 = "v1";
  EXPECT_TRUE(One(s.get(), [&](Batch& b) { b.CompareAndSwap("cas", &v1, "v2", kNoExpiry); }).found());
  g_now = kT + 150;  // "keep" and "absent" have expired
  // KEEPTTL on an expired key: a new key, with nothing to keep.
  EXPECT_EQ(One(s.get(), [](Batch& b) { b.Put("keep", "k2", kKeepExpiry); }).code, Code::kNotFound);
  // "only if absent" holds for an expired key.
  EXPECT_EQ(One(s.get(), [](Batch& b) { b.CompareAndSwap("absent", nullptr, "a2"); }).code,
            Code::kNotFound);
  Stop(s);

  g_now = kT + 60'000;
  s = Open();
  OpResult r = s->Get("cas");
  EXPECT_EQ(r.value, "v2");
  EXPECT_EQ(r.expire_at, kNoExpiry);
  r = s->Get("keep");
  EXPECT_EQ(r.value, "k2");
  EXPECT_EQ(r.expire_at, kNoExpiry);
  EXPECT_EQ(s->Get("absent").value, "a2");
}

TEST_P(DurableExpiry, PersistAndExpireInThePastSurviveARestart) {
  auto s = Open();
  One(s.get(), [](Batch& b) { b.Put("p", "1", kT + 100); });
  One(s.get(), [](Batch& b) { b.Put("gone", "2"); });
  One(s.get(), [](Batch& b) { b.Expire("p", kNoExpiry); });  // PERSIST
  One(s.get(), [](Batch& b) { b.Expire("gone", kT - 1); });  // deletes
  Stop(s);
  g_now = kT + 1'000;
  s = Open();
  OpResult r = s->Get("p");
  EXPECT_EQ(r.value, "1");
  EXPECT_EQ(r.expire_at, kNoExpiry);
  EXPECT_EQ(s->Get("gone").code, Code::kNotFound);
  EXPECT_EQ(s->Size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Rows, DurableExpiry,
                         ::testing::Values(Row{"cpu_log", Mode::kCanonical, true},
                                           Row{"cpu_snapshot", Mode::kCanonical, false},
                                           Row{"cpu_only_engine_log", Mode::kHotOnly, true},
                                           Row{"cpu_only_engine_snapshot", Mode::kHotOnly, false}),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

}  // namespace
}  // namespace kvcg
