// The Durable wrapper end to end on the CPU backend (and the engine): what
// is acknowledged survives a restart, torn tails are cut, damage is refused
// with the file and offset, snapshots and log rewrites keep every key.
// (The GPU backend runs the same paths through the conformance rows and the
// server's crash test on the H100.)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "durability/log_format.h"
#include "durability/snapshot_file.h"
#include "durable_test_util.h"
#include "kvcg/durable.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"
#include "temp_dir.h"

namespace kvcg {
namespace {

namespace fs = std::filesystem;
using testing::DurableConfig;

// Each test's files in a directory of its own (tests/support/temp_dir.h).
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("durable") {}
};

// Damages the file at `offset` by flipping its byte. Flipped, not set to a
// fixed value: a log's first payload holds the clock, so a set byte was
// sometimes the byte already there and the file was not damaged at all.
void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(offset));
  const char was = char(f.get());
  f.seekp(std::streamoff(offset));
  f.put(char(was ^ 0xFF));
}

std::unique_ptr<Store> MustOpen(const Config& c) {
  std::unique_ptr<Store> s;
  Status st = Store::Open(c, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

using Model = std::map<std::string, std::string>;

void ExpectHolds(Store* store, const Model& model, const std::vector<std::string>& keys) {
  EXPECT_EQ(store->Size(), model.size());
  for (const std::string& k : keys) {
    OpResult r = store->Get(k);
    auto it = model.find(k);
    if (it == model.end()) {
      EXPECT_EQ(r.code, Code::kNotFound) << k;
    } else {
      ASSERT_EQ(r.code, Code::kOk) << k;
      EXPECT_EQ(r.value, it->second) << k;
    }
  }
}

std::vector<std::string> IncrFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "appendonlydir")) {
    if (e.path().string().ends_with(".incr.kvcg")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Random PUT/DELETE/CAS batches (binary keys and values), a Clear in the
// middle; the model follows the results the store returned.
void RandomWrites(Store* store, Model* model, std::vector<std::string>* keys, int batches, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int k = 0; k < 64; ++k) keys->push_back(std::string("key\0", 4) + std::to_string(k));
  for (int b = 0; b < batches; ++b) {
    if (b == batches / 2) {
      store->Clear();
      model->clear();
    }
    Batch batch;
    std::vector<std::pair<int, std::string>> ops;  // (type, key)
    for (int i = 0; i < 8; ++i) {
      const std::string& key = (*keys)[rng() % keys->size()];
      const std::string value = "v" + std::to_string(rng()) + std::string(rng() % 300, char(rng()));
      switch (rng() % 4) {
        case 0:
        case 1:
          batch.Put(key, value);
          break;
        case 2:
          batch.Delete(key);
          break;
        case 3: {
          auto it = model->find(key);
          std::string_view expected = it == model->end() ? std::string_view() : std::string_view(it->second);
          batch.CompareAndSwap(key, it == model->end() ? nullptr : &expected, value);
          break;
        }
      }
      ops.emplace_back(int(batch.type(batch.size() - 1)), key);
    }
    Results r = store->Execute(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      const std::string key(batch.key(i));
      switch (batch.type(i)) {
        case OpType::kPut:
          (*model)[key] = std::string(batch.value(i));
          break;
        case OpType::kDelete:
          model->erase(key);
          break;
        case OpType::kCompareAndSwap: {
          const bool stored = r.found(i) ? (!batch.expect_absent(i) && r.value(i) == batch.expected(i))
                                         : batch.expect_absent(i);
          if (stored) (*model)[key] = std::string(batch.value(i));
          break;
        }
        default:
          break;
      }
    }
  }
}

class LogPolicies : public ::testing::TestWithParam<FsyncPolicy> {};

TEST_P(LogPolicies, EveryAcknowledgedWriteIsThereAfterARestart) {
  TempDir dir;
  Model model;
  std::vector<std::string> keys;
  {
    auto store = MustOpen(DurableConfig(dir.path(), true, GetParam()));
    ASSERT_NE(AsDurable(store.get()), nullptr);
    RandomWrites(store.get(), &model, &keys, 200, 7);
  }
  auto store = MustOpen(DurableConfig(dir.path(), true, GetParam()));
  ExpectHolds(store.get(), model, keys);
  PersistenceInfo p = AsDurable(store.get())->Persistence();
  EXPECT_TRUE(p.aof_enabled);
  EXPECT_NE(p.load_source.find("log"), std::string::npos) << p.load_source;
  // And once more: the second life's log is replayed after the first's.
  Model more = model;
  RandomWrites(store.get(), &more, &keys, 50, 8);
  store.reset();
  store = MustOpen(DurableConfig(dir.path(), true, GetParam()));
  ExpectHolds(store.get(), more, keys);
}

INSTANTIATE_TEST_SUITE_P(Durable, LogPolicies,
                         ::testing::Values(FsyncPolicy::kAlways, FsyncPolicy::kEverySec, FsyncPolicy::kNo),
                         [](const auto& info) { return std::string(FsyncPolicyName(info.param)); });

TEST(Durable, InTheEngineModesTooHotWritesAreLogged) {
  TempDir dir;
  Config c = DurableConfig(dir.path(), true);
  c.mode = Mode::kHotOnly;  // every key hot: every write is a hot-cache write
  Model model;
  std::vector<std::string> keys;
  {
    auto store = MustOpen(c);
    ASSERT_NE(AsEngine(store.get()), nullptr) << "AsEngine looks through the Durable";
    RandomWrites(store.get(), &model, &keys, 100, 9);
  }
  auto store = MustOpen(c);
  ExpectHolds(store.get(), model, keys);
}

TEST(Durable, AnAcknowledgedWriteIsInTheLogFileBeforeItsCompletion) {
  TempDir dir;
  auto store = MustOpen(DurableConfig(dir.path(), true, FsyncPolicy::kAlways));
  for (int i = 0; i < 20; ++i) {
    const std::string key = "acked" + std::to_string(i);
    ASSERT_EQ(store->Put(key, "x").code, Code::kNotFound);
    // Replay what the file holds right now into a fresh, plain store.
    Config plain;
    plain.backend = Backend::kCpu;
    std::unique_ptr<Store> replica;
    ASSERT_TRUE(Store::Open(plain, &replica).ok());
    for (const std::string& f : IncrFiles(dir.path())) {
      uint64_t n = 0;
      std::string warning;
      ASSERT_TRUE(durability::ReplayLogFile(f, replica.get(), true, &n, &warning).ok());
    }
    EXPECT_EQ(replica->Get(key).code, Code::kOk) << key;
  }
  EXPECT_GE(AsDurable(store.get())->Persistence().aof_fsyncs, 1u);
}

TEST(Durable, GroupCommitSharesFsyncsAcrossThreads) {
  TempDir dir;
  auto store = MustOpen(DurableConfig(dir.path(), true, FsyncPolicy::kAlways));
  constexpr int kThreads = 8, kWrites = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) store->Put("t" + std::to_string(t) + ":" + std::to_string(i), "v");
    });
  }
  for (auto& th : threads) th.join();
  const uint64_t fsyncs = AsDurable(store.get())->Persistence().aof_fsyncs;
  EXPECT_GE(fsyncs, 1u);
  EXPECT_LT(fsyncs, uint64_t(kThreads * kWrites)) << "every write had its own fsync: no group commit";
  store.reset();
  store = MustOpen(DurableConfig(dir.path(), true));
  EXPECT_EQ(store->Size(), uint64_t(kThreads * kWrites));
}

TEST(Durable, ATornTailIsCutWithAWarningAndEarlierWritesStay) {
  TempDir dir;
  {
    auto store = MustOpen(DurableConfig(dir.path(), true, FsyncPolicy::kAlways));
    for (int i = 0; i < 50; ++i) store->Put("k" + std::to_string(i), std::string(100, 'v'));
  }
  const std::string last = IncrFiles(dir.path()).back();
  fs::resize_file(last, fs::file_size(last) - 10);  // a crash in the middle of the last frame
  auto store = MustOpen(DurableConfig(dir.path(), true));
  ASSERT_NE(store, nullptr);
  PersistenceInfo p = AsDurable(store.get())->Persistence();
  ASSERT_EQ(p.load_warnings.size(), 1u);
  EXPECT_NE(p.load_warnings[0].find("torn"), std::string::npos) << p.load_warnings[0];
  EXPECT_NE(p.load_warnings[0].find(last), std::string::npos) << p.load_warnings[0];
  EXPECT_GE(store->Size(), 49u);
  for (int i = 0; i < 49; ++i) EXPECT_EQ(store->Get("k" + std::to_string(i)).code, Code::kOk) << i;
  // The cut is permanent: the next start has nothing to warn about.
  store.reset();
  store = MustOpen(DurableConfig(dir.path(), true));
  EXPECT_TRUE(AsDurable(store.get())->Persistence().load_warnings.empty());
}

TEST(Durable, DamageInsideTheLogFailsOpenNamingTheFileAndOffset) {
  TempDir dir;
  {
    auto store = MustOpen(DurableConfig(dir.path(), true, FsyncPolicy::kAlways));
    for (int i = 0; i < 20; ++i) store->Put("k" + std::to_string(i), std::string(100, 'v'));
  }
  const std::string log = IncrFiles(dir.path()).back();
  FlipByte(log, durability::kFileHeaderBytes + durability::kFrameHeaderBytes + 3);  // inside the first frame's payload
  std::unique_ptr<Store> store;
  Status s = Store::Open(DurableConfig(dir.path(), true), &store);
  EXPECT_EQ(s.code(), Code::kIoError) << s.ToString();
  EXPECT_NE(s.message().find(log), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("offset 32"), std::string::npos) << s.message();
  EXPECT_EQ(store, nullptr);
}

// Disk full, in-process: a file-size limit makes the log's writes fail with
// EFBIG (SIGXFSZ ignored, as kvcg-server does).
TEST(Durable, AFullDiskRefusesWritesKeepsReadsAndLosesNothingAcknowledged) {
  TempDir dir;
  std::vector<std::string> acked;
  {
    auto store = MustOpen(DurableConfig(dir.path(), true, FsyncPolicy::kAlways));
    Durable* durable = AsDurable(store.get());
    ASSERT_EQ(store->Put("before", "1").code, Code::kNotFound);
    constexpr uint64_t kExpireAt = 4102444800000;  // 2100-01-01, in ms
    {
      Batch b = store->NewBatch();
      b.Put("with ttl", "2", kExpireAt);
      ASSERT_EQ(store->Execute(std::move(b)).code(0), Code::kNotFound);
    }
    struct rlimit old;
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    auto previous = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = rlim_t(fs::file_size(IncrFiles(dir.path()).back()) + 16 * 1024);
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    Code last = Code::kOk;
    for (int i = 0; i < 200; ++i) {
      const std::string key = "full" + std::to_string(i);
      last = store->Put(key, std::string(1000, 'x')).code;
      if (last == Code::kIoError) break;
      ASSERT_EQ(last, Code::kNotFound) << i;
      acked.push_back(key);
    }
    EXPECT_EQ(last, Code::kIoError) << "the limit was never hit";
    EXPECT_FALSE(durable->Persistence().aof_last_write_ok);
    EXPECT_FALSE(durable->Persistence().aof_last_write_error.empty());
    EXPECT_EQ(store->Put("refused", "x").code, Code::kIoError);  // refused up front
    {  // a masked op is answered as on every store, not refused; reads
       // answer as they would with room (value and expire-at), also a read
       // of a key the refused batch writes (it waits for the log's lanes)
      Batch b = store->NewBatch();
      b.Put("masked", "x");
      b.Get("before");
      b.Put("refused too", "x");
      b.Get("with ttl");
      b.Put("with ttl", "3");
      b.SetNoop(0);
      Results r = store->Execute(std::move(b));
      EXPECT_EQ(r.code(0), Code::kNotFound);
      EXPECT_EQ(r.code(1), Code::kOk);
      EXPECT_EQ(r.value(1), "1");
      EXPECT_EQ(r.expire_at(1), kNoExpiry);
      EXPECT_EQ(r.code(2), Code::kIoError);
      EXPECT_EQ(r.code(3), Code::kOk);
      EXPECT_EQ(r.value(3), "2");
      EXPECT_EQ(r.expire_at(3), kExpireAt);
      EXPECT_EQ(r.code(4), Code::kIoError);
    }
    EXPECT_EQ(store->Get("before").code, Code::kOk);             // reads keep working
    for (const std::string& k : acked) EXPECT_EQ(store->Get(k).code, Code::kOk) << k;
    // Room again: the kept bytes are retried and writes are accepted again.
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
    std::signal(SIGXFSZ, previous);
    ASSERT_TRUE(durable->SyncLog().ok());
    EXPECT_TRUE(durable->Persistence().aof_last_write_ok);
    EXPECT_EQ(store->Put("after", "1").code, Code::kNotFound);
    acked.push_back("after");
  }
  auto store = MustOpen(DurableConfig(dir.path(), true));
  EXPECT_EQ(store->Get("before").code, Code::kOk);
  for (const std::string& k : acked) EXPECT_EQ(store->Get(k).code, Code::kOk) << k;
  EXPECT_EQ(store->Get("refused").code, Code::kNotFound);
}

TEST(Durable, SaveThenRestartLoadsTheSnapshot) {
  TempDir dir;
  Model model;
  std::vector<std::string> keys;
  {
    auto store = MustOpen(DurableConfig(dir.path(), false));
    RandomWrites(store.get(), &model, &keys, 100, 11);
    Durable* d = AsDurable(store.get());
    ASSERT_TRUE(d->Save().ok());
    EXPECT_EQ(d->Persistence().changes_since_last_save, 0u);
    EXPECT_EQ(d->Persistence().saves, 1u);
    {  // masked ops change nothing, so they count as no change
      Batch b = store->NewBatch();
      b.Put("masked", "x");
      b.Delete(keys.front());
      b.SetNoop(0);
      b.SetNoop(1);
      Results r = store->Execute(std::move(b));
      EXPECT_EQ(r.code(0), Code::kNotFound);
      EXPECT_EQ(r.code(1), Code::kNotFound);
      EXPECT_EQ(d->Persistence().changes_since_last_save, 0u);
    }
    store->Put("after-save", "lost without a log");  // not in the snapshot
  }
  auto store = MustOpen(DurableConfig(dir.path(), false));
  ExpectHolds(store.get(), model, keys);
  EXPECT_EQ(store->Get("after-save").code, Code::kNotFound);
  EXPECT_NE(AsDurable(store.get())->Persistence().load_source.find("snapshot"), std::string::npos);
}

// Writers keep writing while the background jobs run; each writer records
// what was acknowledged. After a restart every acknowledged value is there.
void ConcurrentWritesDuring(const std::function<void(Durable*)>& job, const Config& config) {
  constexpr int kWriters = 4;
  std::vector<std::map<std::string, std::string>> acked(kWriters);
  {
    auto store = MustOpen(config);
    Durable* d = AsDurable(store.get());
    for (int i = 0; i < 2000; ++i) store->Put("pre" + std::to_string(i), "p");
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        for (uint64_t n = 0; !stop.load(); ++n) {
          const std::string key = "w" + std::to_string(w) + ":" + std::to_string(n % 300);
          const std::string value = std::to_string(n);
          if (store->Put(key, value).code != Code::kIoError) acked[w][key] = value;
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job(d);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
    for (auto& t : writers) t.join();
  }
  auto store = MustOpen(config);
  for (int i = 0; i < 2000; i += 97) EXPECT_EQ(store->Get("pre" + std::to_string(i)).code, Code::kOk);
  for (const auto& m : acked) {
    for (const auto& [k, v] : m) {
      OpResult r = store->Get(k);
      ASSERT_EQ(r.code, Code::kOk) << k;
      EXPECT_EQ(r.value, v) << k;
    }
  }
}

TEST(Durable, ALogRewriteUnderWritesKeepsEverythingAndDropsTheOldFiles) {
  TempDir dir;
  ConcurrentWritesDuring(
      [](Durable* d) {
        ASSERT_TRUE(d->RewriteLog().ok());
        for (int i = 0; i < 500 && (d->Persistence().aof_rewrite_in_progress); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT_TRUE(d->Persistence().aof_last_rewrite_ok);
        EXPECT_GT(d->Persistence().aof_base_size, 0u);
      },
      DurableConfig(dir.path(), true, FsyncPolicy::kEverySec));
  // After the rewrite and one restart: one base and the incrs since.
  int bases = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir.path()) / "appendonlydir")) {
    bases += e.path().string().ends_with(".base.kvcg");
  }
  EXPECT_EQ(bases, 1);
}

TEST(Durable, ABackgroundSaveUnderWritesIsAPointInTimeImage) {
  TempDir dir;
  // With the log on, the restart replays the log over the base; the image
  // itself is checked by loading the snapshot file alone afterwards.
  ConcurrentWritesDuring(
      [](Durable* d) {
        ASSERT_TRUE(d->BackgroundSave().ok());
        EXPECT_EQ(d->BackgroundSave().code(), Code::kUnavailable);  // one at a time
        for (int i = 0; i < 500 && d->Persistence().bgsave_in_progress; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT_TRUE(d->Persistence().last_bgsave_ok);
      },
      DurableConfig(dir.path(), true, FsyncPolicy::kNo));
  Config plain;
  plain.backend = Backend::kCpu;
  std::unique_ptr<Store> image;
  ASSERT_TRUE(Store::Open(plain, &image).ok());
  uint64_t keys = 0;
  ASSERT_TRUE(durability::LoadSnapshotFile(dir.path() + "/dump.kvcg", image.get(), &keys).ok());
  EXPECT_GE(keys, 2000u);
  EXPECT_EQ(image->Size(), keys);
}

TEST(Durable, TurningTheLogOnAtRuntimeKeepsWhatWasThere) {
  TempDir dir;
  {
    auto store = MustOpen(DurableConfig(dir.path(), false));
    for (int i = 0; i < 100; ++i) store->Put("old" + std::to_string(i), "o");
    ASSERT_TRUE(AsDurable(store.get())->SetAppendOnly(true).ok());
    EXPECT_TRUE(AsDurable(store.get())->Persistence().aof_enabled);
    for (int i = 0; i < 100; ++i) store->Put("new" + std::to_string(i), "n");
  }
  auto store = MustOpen(DurableConfig(dir.path(), true));
  EXPECT_EQ(store->Size(), 200u);
  EXPECT_EQ(store->Get("old7").value, "o");
  EXPECT_EQ(store->Get("new7").value, "n");
}

TEST(Durable, ADamagedSnapshotFailsOpenNamingTheFile) {
  TempDir dir;
  {
    auto store = MustOpen(DurableConfig(dir.path(), false));
    for (int i = 0; i < 1000; ++i) store->Put("k" + std::to_string(i), std::string(50, 'v'));
    ASSERT_TRUE(AsDurable(store.get())->Save().ok());
  }
  const std::string snap = dir.path() + "/dump.kvcg";
  FlipByte(snap, fs::file_size(snap) / 2);
  std::unique_ptr<Store> store;
  Status s = Store::Open(DurableConfig(dir.path(), false), &store);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find(snap), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("offset"), std::string::npos) << s.message();
  // Cut short (no end frame): also refused.
  fs::resize_file(snap, fs::file_size(snap) / 3);
  s = Store::Open(DurableConfig(dir.path(), false), &store);
  EXPECT_EQ(s.code(), Code::kIoError) << s.ToString();
}

}  // namespace
}  // namespace kvcg
