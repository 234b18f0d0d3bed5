// Regressions from the review of the persistence layer (2026-11-23): each
// test failed (or hung) before its fix. The watchdog turns a deadlock into
// a failed test instead of a CI timeout.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "durability/durable_store.h"
#include "durability/log_format.h"
#include "durability/log_manifest.h"
#include "durable_test_util.h"
#include "forwarding_store.h"
#include "kvcg/durable.h"
#include "kvcg/store.h"
#include "temp_dir.h"

namespace kvcg {
namespace {
namespace fs = std::filesystem;
using testing::DurableConfig;
using testing::OpenDurableOver;
// Each test's files in a directory of its own (tests/support/temp_dir.h).
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("rv") {}
};
std::unique_ptr<Store> Open(const Config& c, Status* st = nullptr) {
  std::unique_ptr<Store> s;
  Status x = Store::Open(c, &s);
  if (st) *st = x;
  return s;
}

// Fails the binary after `secs` unless destroyed first (a hang would
// otherwise hold CI); it ends with its test, so tests can run under
// --gtest_repeat.
class ScopedWatchdog {
 public:
  ScopedWatchdog(int secs, const char* what)
      : thread_([this, secs, what] {
          std::unique_lock<std::mutex> l(mu_);
          if (!cv_.wait_for(l, std::chrono::seconds(secs), [&] { return done_; })) {
            fprintf(stderr, "WATCHDOG: %s: still running after %d s -> deadlock/hang\n", what, secs);
            _exit(3);
          }
        }) {}
  ~ScopedWatchdog() {
    { std::lock_guard<std::mutex> l(mu_); done_ = true; }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// A parked completion released inside Clear's barrier (every lane held by
// this thread) calls Submit: it must be delivered outside the barrier.
TEST(DurableRegression, ACompletionMaySubmitWhileClearHoldsEveryLane) {
  TempDir dir;
  auto store = Open(DurableConfig(dir.path(), true));
  ScopedWatchdog watchdog(20, "CompletionThatSubmitsDuringClear");
  for (int i = 0; i < 200; ++i) {
    std::promise<void> chained;
    Batch b = store->NewBatch();
    b.Put("k" + std::to_string(i), "v");
    Store* s = store.get();
    store->Submit(std::move(b), [s, &chained](Results&&) {
      Batch c = s->NewBatch();
      c.Put("chained", "x");
      s->Submit(std::move(c), [&chained](Results&&) { chained.set_value(); });
    });
    store->Clear();
    chained.get_future().wait();
  }
}

// 2. Clear while the log is failing: the CLEAR record is dropped (FlushLocked
// returns before writing `extra`), the store is cleared; once the disk has
// room again the log lacks the CLEAR and a restart brings flushed keys back.
TEST(DurableRegression, AClearWhileTheLogFailsIsWrittenOnceItCanBe) {
  TempDir dir;
  {
    auto store = Open(DurableConfig(dir.path(), true));
    Durable* d = AsDurable(store.get());
    ASSERT_EQ(store->Put("flushed", "1").code, Code::kNotFound);
    std::string incr;
    for (auto& e : fs::directory_iterator(fs::path(dir.path()) / "appendonlydir"))
      if (e.path().string().ends_with(".incr.kvcg")) incr = e.path().string();
    struct rlimit old; ::getrlimit(RLIMIT_FSIZE, &old);
    auto prev = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old; small.rlim_cur = fs::file_size(incr) + 4096;
    ::setrlimit(RLIMIT_FSIZE, &small);
    for (int i = 0; i < 100 && store->Put("big" + std::to_string(i), std::string(1000, 'x')).code != Code::kIoError; ++i) {}
    ASSERT_FALSE(d->Persistence().aof_last_write_ok);
    store->Clear();  // FLUSHALL while failing
    EXPECT_EQ(store->Get("flushed").code, Code::kNotFound);
    ::setrlimit(RLIMIT_FSIZE, &old); std::signal(SIGXFSZ, prev);
    ASSERT_TRUE(d->SyncLog().ok());
    // acknowledged after recovery, depends on the flush having happened:
    Batch b = store->NewBatch();
    b.CompareAndSwap("flushed", nullptr, "new");
    store->Execute(std::move(b));
    ASSERT_EQ(store->Get("flushed").value, "new");  // the CAS took effect and was acknowledged
  }
  auto store = Open(DurableConfig(dir.path(), true));
  EXPECT_EQ(store->Get("flushed").value, "new") << "acknowledged CAS diverged on replay";
  EXPECT_EQ(store->Get("big0").code, Code::kNotFound) << "flushed key came back";
}

// 3. A crash between CreateLogFile and the manifest write (StartLog at
// restart, StartRewrite's switch) leaves <seq>.incr.kvcg unnamed; the next
// Open picks the same seq and O_EXCL fails: the store never opens again.
TEST(DurableRegression, AnOrphanIncrFileFromACrashIsReplaced) {
  TempDir dir;
  { auto store = Open(DurableConfig(dir.path(), true)); store->Put("a", "1"); }
  // the manifest names seq 1; simulate the crash window of the next start:
  std::string orphan = dir.path() + "/appendonlydir/appendonly.kvcg.2.incr.kvcg";
  { std::ofstream f(orphan, std::ios::binary); f << durability::FileHeader(durability::kLogMagic); }
  Status st;
  auto store = Open(DurableConfig(dir.path(), true), &st);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

// 4. A write parked under kAlways when the policy turns to kNo is never
// released (durable_gen_ only advances after an fsync).
TEST(DurableRegression, ParkedWritesAreReleasedWhenThePolicyTurnsToNo) {
  TempDir dir;
  auto store = Open(DurableConfig(dir.path(), true));
  Durable* d = AsDurable(store.get());
  int hung = 0;
  for (int i = 0; i < 20; ++i) {
    d->SetFsyncPolicy(FsyncPolicy::kAlways);
    auto p = std::make_shared<std::promise<void>>();
    auto f = p->get_future();
    Batch b = store->NewBatch(); b.Put("k" + std::to_string(i), "v");
    store->Submit(std::move(b), [p](Results&&) { p->set_value(); });
    d->SetFsyncPolicy(FsyncPolicy::kNo);
    if (f.wait_for(std::chrono::seconds(2)) != std::future_status::ready) { ++hung; d->SyncLog(); f.wait(); }
  }
  EXPECT_EQ(hung, 0) << "completions that never came without SyncLog";
}
// 5. load_on_open=false on a dir that already has a log: "start empty and
// overwrite" (config.h) -> Open fails, seq 1 exists.
TEST(DurableRegression, LoadOnOpenFalseStartsEmptyOverAnExistingLog) {
  TempDir dir;
  { auto store = Open(DurableConfig(dir.path(), true)); store->Put("a", "1"); }
  Config c = DurableConfig(dir.path(), true); c.durability.load_on_open = false;
  Status st; auto store = Open(c, &st);
  EXPECT_TRUE(st.ok()) << st.ToString();
}
// 6. SetAppendOnly(true): writes are acknowledged (kAlways) into incr N
// before the manifest names it; a crash then loses them.
//
// The window is between the log's start (writes go to incr N from then on)
// and the manifest naming incr N, which is written after the base. The test
// used to hope that a loop of writes would land in it while a large base was
// written; under load it often did not (checked == 0). Here the base write
// stops at a gate (GateStore's image blocks in its first Next()) until the
// test has written inside the window, so every run tests it.

// Blocks the first Next() of the images opened while armed until Release().
class Gate {
 public:
  void Arm() { std::lock_guard<std::mutex> l(mu_); armed_ = true; }
  // Called by the image: parks the writing thread while armed.
  void Pass() {
    std::unique_lock<std::mutex> l(mu_);
    if (!armed_) return;
    armed_ = false;
    entered_ = true;
    cv_.notify_all();
    cv_.wait(l, [&] { return released_; });
  }
  void WaitEntered() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return entered_; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, entered_ = false, released_ = false;
};

// SetAppendOnly(true) on a thread, held by the gate inside its base write:
// the new log is on and no manifest names it yet. Finish (or the
// destructor, after a failed ASSERT) opens the gate and joins.
class HeldTurnOn {
 public:
  HeldTurnOn(Durable* d, Gate* gate) : gate_(gate) {
    gate_->Arm();
    thread_ = std::thread([d] { EXPECT_TRUE(d->SetAppendOnly(true).ok()); });
    gate_->WaitEntered();
  }
  ~HeldTurnOn() { Finish(); }
  void Finish() {
    gate_->Release();
    if (thread_.joinable()) thread_.join();
  }

 private:
  Gate* gate_;
  std::thread thread_;
};

// A CPU store whose snapshot images pass the gate before their first chunk.
class GateStore final : public testing::ForwardingStore {
 public:
  GateStore(std::unique_ptr<Store> inner, Gate* gate) : ForwardingStore(std::move(inner)), gate_(gate) {}
  Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out) override {
    std::unique_ptr<SnapshotReader> image;
    Status s = inner().OpenSnapshot(&image);
    if (s.ok()) *out = std::make_unique<Reader>(std::move(image), gate_);
    return s;
  }

 private:
  class Reader final : public SnapshotReader {
   public:
    Reader(std::unique_ptr<SnapshotReader> image, Gate* gate) : image_(std::move(image)), gate_(gate) {}
    bool Next(SnapshotChunk* chunk) override {
      if (first_) gate_->Pass();
      first_ = false;
      return image_->Next(chunk);
    }
    uint64_t size() const override { return image_->size(); }
    Status status() const override { return image_->status(); }

   private:
    std::unique_ptr<SnapshotReader> image_;
    Gate* gate_;
    bool first_ = true;
  };
  Gate* gate_;
};

TEST(DurableRegression, NoWriteIsAcknowledgedBeforeTheManifestNamesItsLog) {
  TempDir dir;
  ScopedWatchdog watchdog(60, "NoWriteIsAcknowledgedBeforeTheManifestNamesItsLog");
  Gate gate;
  // What the completions use, declared before the store: its destruction
  // delivers whatever is still parked (after a failed ASSERT).
  const fs::path log_dir = fs::path(dir.path()) / "appendonlydir";
  const fs::path manifest = log_dir / "appendonly.kvcg.manifest";
  std::string incr;  // the log's file
  std::mutex mu;
  std::condition_variable cv;
  int acked = 0, acked_unnamed = 0;
  const Config cfg = DurableConfig(dir.path(), false);
  std::unique_ptr<Store> store;
  ASSERT_TRUE(OpenDurableOver(cfg, [&](std::unique_ptr<Store> cpu) {
    return std::make_unique<GateStore>(std::move(cpu), &gate);
  }, &store).ok());
  Durable* d = AsDurable(store.get());
  constexpr int kBase = 1000, kWindow = 64;
  for (int i = 0; i < kBase; ++i) ASSERT_EQ(store->Put("k" + std::to_string(i), "v").code, Code::kNotFound);

  HeldTurnOn on(d, &gate);
  // Inside the window: the log is on (new writes go to its file), its base
  // is being written, and no manifest names the file yet.
  ASSERT_TRUE(d->Persistence().aof_enabled);
  ASSERT_FALSE(fs::exists(manifest));
  for (const auto& e : fs::directory_iterator(log_dir)) {
    if (e.path().string().ends_with(".incr.kvcg")) incr = e.path().filename().string();
  }
  ASSERT_FALSE(incr.empty()) << "the log's file is created before the log starts";

  // Under appendfsync always a write is acknowledged only once a restart
  // would find it, i.e. once the manifest names the file it is in. Each
  // completion records whether the manifest did when it was called.
  for (int i = 0; i < kWindow; ++i) {
    Batch b = store->NewBatch();
    b.Put("acked" + std::to_string(i), "x");
    store->Submit(std::move(b), [&](Results&& r) {
      EXPECT_EQ(r.code(0), Code::kNotFound);
      durability::LogManifest m;
      const bool named = durability::LogManifest::Read(manifest.string(), &m).ok() && !m.base.empty() &&
                         std::find(m.incrs.begin(), m.incrs.end(), incr) != m.incrs.end();
      std::lock_guard<std::mutex> l(mu);
      ++acked;
      if (!named) ++acked_unnamed;
      cv.notify_all();
    });
  }
  // SyncLog writes and fsyncs everything submitted: from then on only the
  // missing manifest may keep the writes waiting. A completion that a broken hold
  // lets the flusher thread deliver is waited for a moment (a passing run
  // pays that moment; it cannot make the test fail), and the check in each
  // completion catches any later one that still precedes the manifest.
  ASSERT_TRUE(d->SyncLog().ok());
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait_for(l, std::chrono::milliseconds(200), [&] { return acked > 0; });
    EXPECT_EQ(acked, 0) << "acknowledged under appendfsync always before any manifest named its log";
  }
  on.Finish();
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return acked == kWindow; });  // released with the manifest (watchdog if never)
    EXPECT_EQ(acked_unnamed, 0) << "acknowledged under appendfsync always before the manifest named its log";
  }
  store.reset();
  // And they are there after a restart.
  store = Open(DurableConfig(dir.path(), true));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Size(), uint64_t(kBase + kWindow));
  for (int i = 0; i < kWindow; ++i) EXPECT_EQ(store->Get("acked" + std::to_string(i)).value, "x");
}

// 7. appendonly on -> off -> on. The 64 write lanes outlive a log, and each
// is tagged with the number of the flush cycle that will write it; a write
// under kAlways waits for that cycle's fsync. The new log counted its cycles
// from 0 again while the lanes kept the old log's last number, so a write
// that reached a lane before the new log's first cycle waited for the new
// log to count up to it: at 10 idle cycles a second, 30 s after an old log
// of 300 writes. (Each SyncLog is one cycle: the old log runs thousands.)
// The gate holds the base write, so the write lands right after the new log
// starts, before any cycle of it.
TEST(DurableRegression, AWriteAsTheLogIsTurnedOnAgainIsAcknowledgedPromptly) {
  TempDir dir;
  ScopedWatchdog watchdog(120, "AWriteAsTheLogIsTurnedOnAgainIsAcknowledgedPromptly");
  Gate gate;
  std::mutex mu;  // completions: declared before the store, which delivers on close
  std::condition_variable cv;
  bool acked = false;
  Code code = Code::kOk;
  const Config cfg = DurableConfig(dir.path(), true);
  std::unique_ptr<Store> store;
  ASSERT_TRUE(OpenDurableOver(cfg, [&](std::unique_ptr<Store> cpu) {
    return std::make_unique<GateStore>(std::move(cpu), &gate);
  }, &store).ok());
  Durable* d = AsDurable(store.get());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(store->Put("k" + std::to_string(i), "v").code, Code::kNotFound);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(d->SyncLog().ok());  // the old log's cycles: > 2000
  ASSERT_TRUE(d->SetAppendOnly(false).ok());

  HeldTurnOn on(d, &gate);  // the new log is in place; its base is being written
  Batch b = store->NewBatch();
  b.Put("window", "x");
  store->Submit(std::move(b), [&](Results&& r) {
    std::lock_guard<std::mutex> l(mu);
    code = r.code(0);
    acked = true;
    cv.notify_all();
  });
  on.Finish();
  {
    // Acknowledged once the manifest names the new log, i.e. by the time
    // SetAppendOnly returns; 5 s is slack for a loaded machine. Before the
    // fix it took > 200 s (2000 cycles at 10 a second).
    std::unique_lock<std::mutex> l(mu);
    EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(5), [&] { return acked; }))
        << "a write made as the log was turned on again waits for the old log's cycle number";
    if (acked) {
      EXPECT_EQ(code, Code::kNotFound);
    }
  }
  store.reset();
  store = Open(cfg);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Get("window").value, "x");
  EXPECT_EQ(store->Size(), 101u);
}

// A CPU store that, while armed, keeps the completion of the next batch
// until Release(), as the GPU backend does until its pipeline answers.
class HoldStore final : public testing::ForwardingStore {
 public:
  explicit HoldStore(std::unique_ptr<Store> inner) : ForwardingStore(std::move(inner)) {}
  ~HoldStore() override { Release(); }  // a store completes every batch before it goes
  void Arm() { std::lock_guard<std::mutex> l(mu_); armed_ = true; }
  // Runs the kept completion on the calling thread.
  void Release() {
    Completion done;
    Results results;
    {
      std::lock_guard<std::mutex> l(mu_);
      done = std::move(held_);
      held_ = nullptr;
      results = std::move(results_);
    }
    if (done) done(std::move(results));
  }
  void Submit(Batch batch, Completion done) override {
    bool keep;
    {
      std::lock_guard<std::mutex> l(mu_);
      keep = armed_;
      armed_ = false;
    }
    if (!keep) {
      inner().Submit(std::move(batch), std::move(done));
      return;
    }
    // The CPU backend completes the batch inline: kept before Submit returns.
    inner().Submit(std::move(batch), [this, done = std::move(done)](Results&& r) mutable {
      std::lock_guard<std::mutex> l(mu_);
      held_ = std::move(done);
      results_ = std::move(r);
    });
  }

 private:
  std::mutex mu_;
  bool armed_ = false;
  Completion held_;
  Results results_;
};

// 8. A log turned off lives on while a write batch still in the wrapped
// store refers to it (its completion, which parks in that log, is not yet
// called; on the GPU backend, until the pipeline answers). Its cycles went
// on over the shared lanes: they retagged them with the old log's cycle
// numbers, so a write to the next log waited for one of those (as in 7),
// and they could take the next log's records into the old file, which no
// manifest names any more. Here the kept completion is called after the log
// is on again; the old log syncs on it (it is closing), which ran a cycle
// over the lanes just before the next write.
TEST(DurableRegression, ALogTurnedOffLeavesTheLanesToTheNextOne) {
  TempDir dir;
  ScopedWatchdog watchdog(120, "ALogTurnedOffLeavesTheLanesToTheNextOne");
  std::mutex mu;  // completions: declared before the store, which delivers on close
  std::condition_variable cv;
  int acked_old = 0, acked_new = 0;
  Code code_old = Code::kOk, code_new = Code::kOk;
  const Config cfg = DurableConfig(dir.path(), true);
  HoldStore* hold = nullptr;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(OpenDurableOver(cfg, [&](std::unique_ptr<Store> cpu) {
    auto h = std::make_unique<HoldStore>(std::move(cpu));
    hold = h.get();
    return h;
  }, &store).ok());
  Durable* d = AsDurable(store.get());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(store->Put("k" + std::to_string(i), "v").code, Code::kNotFound);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(d->SyncLog().ok());  // the old log's cycles: > 2000

  hold->Arm();
  Batch b = store->NewBatch();
  b.Put("old", "x");
  store->Submit(std::move(b), [&](Results&& r) {
    std::lock_guard<std::mutex> l(mu);
    code_old = r.code(0);
    ++acked_old;
    cv.notify_all();
  });
  ASSERT_TRUE(d->SetAppendOnly(false).ok());  // the old log lives on in the kept completion
  ASSERT_TRUE(d->SetAppendOnly(true).ok());
  hold->Release();  // the old log delivers it (and syncs, being closed)
  {
    std::lock_guard<std::mutex> l(mu);
    ASSERT_EQ(acked_old, 1);
    EXPECT_EQ(code_old, Code::kNotFound);
  }
  b = store->NewBatch();
  b.Put("new", "y");
  store->Submit(std::move(b), [&](Results&& r) {
    std::lock_guard<std::mutex> l(mu);
    code_new = r.code(0);
    ++acked_new;
    cv.notify_all();
  });
  {
    // Acknowledged by the new log's next cycle (one notify away); 5 s is
    // slack for a loaded machine. Before the fix it took > 200 s.
    std::unique_lock<std::mutex> l(mu);
    EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(5), [&] { return acked_new > 0; }))
        << "a write to the new log waits for a cycle number of the log turned off";
    if (acked_new > 0) {
      EXPECT_EQ(code_new, Code::kNotFound);
    }
  }
  store.reset();
  store = Open(cfg);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Get("old").value, "x");
  EXPECT_EQ(store->Get("new").value, "y");
  EXPECT_EQ(store->Size(), 102u);
}

}  // namespace
}  // namespace kvcg
