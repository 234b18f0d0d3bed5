// HotCache's GETs without the lock (hot_cache.h, "GETs without the lock"):
// a GET answered from an entry's fast copy sees one whole value that some
// writer stored, never a torn one, never an older one than a GET before it
// on the same thread saw, and never a key it did not ask for; entries the
// fast copy cannot hold (long values, tombstones, keys sharing a hash) are
// answered exactly as before.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "hotcache/hot_cache.h"

namespace kvcg::hotcache {
namespace {

// One answer, copied (the value view dies with the call).
struct OneSink final : ResultSink {
  void Answer(uint32_t, Code c, std::string_view v, uint64_t, bool) override {
    code = c;
    value.assign(v);
  }
  Code code = Code::kInternal;
  std::string value;
};

// Runs one op on the cache from this thread's own batch; a miss is filled
// with `canonical` (what the canonical store would answer).
struct Client {
  HotCache& cache;
  Batch batch;
  OneSink sink;
  Outcome Run(OpType type, std::string_view key, std::string_view value, uint64_t hash,
              OpResultView canonical = {Code::kNotFound, {}}) {
    batch.Clear();
    batch.Append(type, key, value);
    const OpRef op{&batch, 0, &sink};
    const Outcome out = cache.Execute(op, hash);
    if (out == Outcome::kMiss) {
      HotCache::Completion c;
      cache.Complete(op, hash, canonical, &c);
      sink.code = canonical.code;
      sink.value.assign(canonical.value);
    }
    return out;
  }
};

// A 40-byte value (fits the fast copy) that says `n` five times over, so a
// torn read shows as copies that differ.
std::string Stamp(uint64_t n) {
  char part[9];
  std::snprintf(part, sizeof part, "%08llu", static_cast<unsigned long long>(n % 100000000));
  std::string v;
  for (int i = 0; i < 5; ++i) v += part;
  return v;
}

TEST(HotCacheFastRead, ReadersSeeWholeValuesInOrderWhileAWriterUpdates) {
  HotCache cache({64, false});
  constexpr uint64_t kHash = 7;
  Client setup{cache};
  ASSERT_EQ(setup.Run(OpType::kPut, "k", Stamp(0), kHash), Outcome::kMiss);
  // A neighbour in the same bucket that keeps changing too.
  ASSERT_EQ(setup.Run(OpType::kPut, "n", Stamp(0), kHash), Outcome::kMiss);

  constexpr uint64_t kWrites = 100000;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      Client c{cache};
      uint64_t last = 0;
      while (!done.load(std::memory_order_acquire)) {
        if (c.Run(OpType::kGet, "k", {}, kHash) != Outcome::kDone || c.sink.code != Code::kOk ||
            c.sink.value.size() != 40 || c.sink.value != std::string(c.sink.value, 0, 8) +
                                                             c.sink.value.substr(0, 8) +
                                                             c.sink.value.substr(0, 8) +
                                                             c.sink.value.substr(0, 8) +
                                                             c.sink.value.substr(0, 8)) {
          bad.fetch_add(1);
          continue;
        }
        const uint64_t n = std::stoull(c.sink.value.substr(0, 8));
        if (n < last) bad.fetch_add(1);  // older than what this thread saw before
        last = n;
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  Client writer{cache};
  for (uint64_t i = 1; i <= kWrites; ++i) {
    ASSERT_EQ(writer.Run(OpType::kPut, "k", Stamp(i), kHash), Outcome::kDone);
    ASSERT_EQ(writer.Run(OpType::kPut, "n", Stamp(i), kHash), Outcome::kDone);
  }
  done.store(true, std::memory_order_release);
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  Client check{cache};
  ASSERT_EQ(check.Run(OpType::kGet, "k", {}, kHash), Outcome::kDone);
  EXPECT_EQ(check.sink.value, Stamp(kWrites));
}

TEST(HotCacheFastRead, TombstonesLongValuesAndSharedHashesAnswerExactly) {
  HotCache cache({4, false});
  constexpr uint64_t kHash = 42;  // one bucket, one hash for every key
  Client c{cache};
  const std::string long_value(300, 'L');
  ASSERT_EQ(c.Run(OpType::kPut, "long", long_value, kHash), Outcome::kMiss);
  ASSERT_EQ(c.Run(OpType::kPut, "short", "s", kHash), Outcome::kMiss);
  ASSERT_EQ(c.Run(OpType::kDelete, "gone", {}, kHash, {Code::kOk, "old"}), Outcome::kMiss);
  // Keys of every length the fast copy holds (the empty one too), and one past it.
  for (size_t len = 0; len <= 49; ++len) {
    const std::string key(len, char('a' + len % 26));
    ASSERT_EQ(c.Run(OpType::kPut, key, key + "!", kHash), Outcome::kMiss) << len;
  }
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(c.Run(OpType::kGet, "long", {}, kHash), Outcome::kDone);
    EXPECT_EQ(c.sink.value, long_value);
    ASSERT_EQ(c.Run(OpType::kGet, "short", {}, kHash), Outcome::kDone);
    EXPECT_EQ(c.sink.value, "s");
    ASSERT_EQ(c.Run(OpType::kGet, "gone", {}, kHash), Outcome::kDone);
    EXPECT_EQ(c.sink.code, Code::kNotFound);
    for (size_t len = 0; len <= 49; ++len) {
      const std::string key(len, char('a' + len % 26));
      ASSERT_EQ(c.Run(OpType::kGet, key, {}, kHash), Outcome::kDone) << len;
      EXPECT_EQ(c.sink.value, key + "!") << len;
    }
    // A key with the same hash that the cache never saw is a miss, not a
    // neighbour's value.
    const std::string never = "never" + std::to_string(round);
    EXPECT_EQ(c.Run(OpType::kGet, never, {}, kHash), Outcome::kMiss);
    ASSERT_EQ(c.Run(OpType::kGet, never, {}, kHash), Outcome::kDone);  // its tombstone now
    EXPECT_EQ(c.sink.code, Code::kNotFound);
    // Second round: after every entry changed (and the bucket was rewritten).
    ASSERT_EQ(c.Run(OpType::kPut, "short", "t", kHash), Outcome::kDone);
    ASSERT_EQ(c.Run(OpType::kPut, "short", "s", kHash), Outcome::kDone);
  }
  // An evicted entry's fast copy is gone with it: the next GET misses.
  EXPECT_EQ(cache.Evict([](std::string_view key, uint64_t) { return key != "short"; }), 0u)
      << "dirty entries are not evicted";
  Batch replay;
  cache.CollectLog(&replay);
  ResultsBuilder ok;
  ok.Reset(replay.size());
  for (size_t i = 0; i < replay.size(); ++i) ok.SetCode(i, Code::kOk);
  ASSERT_EQ(cache.CommitLog(ok.Finish()), 0u);
  EXPECT_EQ(cache.Evict([](std::string_view key, uint64_t) { return key != "short"; }), 1u);
  EXPECT_EQ(c.Run(OpType::kGet, "short", {}, kHash, {Code::kOk, "canon"}), Outcome::kMiss);
  ASSERT_EQ(c.Run(OpType::kGet, "short", {}, kHash), Outcome::kDone);
  EXPECT_EQ(c.sink.value, "canon");
}


// The lock-free path's structure (hot_cache.h): the bucket's tags lead to
// its first node's entries, later nodes are searched by hash, and inserts
// and removals change both while readers look. Four other keys and twenty
// read ones, all with one hash, fill three nodes of one bucket; a writer
// updates the twenty while a churn thread removes and inserts the four
// (entries of the first node freed and reused, its tags rewritten). Every answer must be the
// asked key's own whole value, never older than one this reader saw.
std::string KeyedStamp(const std::string& key, uint64_t n) {
  char part[13];
  std::snprintf(part, sizeof part, "%s:%08llu", key.c_str(), static_cast<unsigned long long>(n % 100000000));
  return std::string(part) + part + part;
}

TEST(HotCacheFastRead, ChainedNodesAndChurningNeighboursKeepAnswersWhole) {
  HotCache cache({4, false});
  constexpr uint64_t kHash = 99;
  constexpr int kKeys = 20;
  auto key_of = [](int i) {
    char k[4];
    std::snprintf(k, sizeof k, "k%02d", i);
    return std::string(k);
  };
  Client setup{cache};
  // Four clean tombstones first, in the first node: the churn below frees
  // and refills its entries, so that node's tags change under the readers.
  for (int j = 0; j < 4; ++j) {
    ASSERT_EQ(setup.Run(OpType::kGet, "x" + std::to_string(j), {}, kHash), Outcome::kMiss);
  }
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(setup.Run(OpType::kPut, key_of(i), KeyedStamp(key_of(i), 0), kHash), Outcome::kMiss);
  }
  std::atomic<bool> done{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      Client c{cache};
      std::vector<uint64_t> last(kKeys, 0);
      for (uint64_t step = r; !done.load(std::memory_order_acquire); step += 7) {
        const int i = int(step % kKeys);
        const std::string key = key_of(i);
        if (c.Run(OpType::kGet, key, {}, kHash) != Outcome::kDone || c.sink.code != Code::kOk ||
            c.sink.value.size() != 36 || c.sink.value.substr(0, 4) != key + ":" ||
            c.sink.value.substr(0, 12) != c.sink.value.substr(12, 12) ||
            c.sink.value.substr(0, 12) != c.sink.value.substr(24, 12)) {
          bad.fetch_add(1);
          continue;
        }
        const uint64_t n = std::stoull(c.sink.value.substr(4, 8));
        if (n < last[i]) bad.fetch_add(1);
        last[i] = n;
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  threads.emplace_back([&] {
    Client c{cache};
    for (uint64_t j = 0; !done.load(std::memory_order_acquire); ++j) {
      const std::string key = "x" + std::to_string(j % 4);
      c.Run(OpType::kGet, key, {}, kHash);  // a miss the first time: an entry, a tombstone
      std::vector<std::string_view> absent{key};
      cache.DropKeys(absent);  // clean: removed, its slot free again
    }
  });
  Client writer{cache};
  for (uint64_t n = 1; n <= 20000; ++n) {
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_EQ(writer.Run(OpType::kPut, key_of(i), KeyedStamp(key_of(i), n), kHash), Outcome::kDone);
    }
  }
  done.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(setup.Run(OpType::kGet, key_of(i), {}, kHash), Outcome::kDone);
    EXPECT_EQ(setup.sink.value, KeyedStamp(key_of(i), 20000));
  }
}


// Real-time order: an update whose answer another thread has seen (handed
// over with release/acquire, as a client sees its completion) is what every
// later lock-free GET of that thread returns, or something newer, while
// first-node entries of the same bucket are freed and reused. The fast
// copy changes at the end of the update's write section, before Execute
// returns (ResultSink's contract).
TEST(HotCacheFastRead, AcknowledgedUpdatesAreSeenByLaterLockFreeGets) {
  HotCache cache({2, false});
  constexpr uint64_t kHash = 0xABCD000000000007ull;  // one bucket, one tag
  constexpr int kKeys = 6;
  Client setup{cache};
  for (int j = 0; j < 3; ++j) {
    ASSERT_EQ(setup.Run(OpType::kGet, "x" + std::to_string(j), {}, kHash), Outcome::kMiss);
  }
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(setup.Run(OpType::kPut, "k" + std::to_string(i), Stamp(0), kHash), Outcome::kMiss);
  }
  std::atomic<uint64_t> acked[kKeys];
  for (auto& a : acked) a.store(0);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> bad{0}, stale{0}, reads{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    Client c{cache};
    for (uint64_t step = 0; !done.load(std::memory_order_acquire); ++step) {
      const int i = int(step % kKeys);
      const uint64_t seen = acked[i].load(std::memory_order_acquire);
      if (c.Run(OpType::kGet, "k" + std::to_string(i), {}, kHash) != Outcome::kDone ||
          c.sink.code != Code::kOk || c.sink.value.size() != 40 ||
          c.sink.value != Stamp(std::stoull(c.sink.value.substr(0, 8)))) {
        bad.fetch_add(1);
        continue;
      }
      if (std::stoull(c.sink.value.substr(0, 8)) < seen) stale.fetch_add(1);
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });
  threads.emplace_back([&] {
    Client c{cache};
    for (uint64_t j = 0; !done.load(std::memory_order_acquire); ++j) {
      const std::string key = "x" + std::to_string(j % 3);
      c.Run(OpType::kGet, key, {}, kHash);
      std::vector<std::string_view> absent{key};
      cache.DropKeys(absent);
    }
  });
  Client writer{cache};
  for (uint64_t n = 1; n <= 100000; ++n) {
    const int i = int(n % kKeys);
    ASSERT_EQ(writer.Run(OpType::kPut, "k" + std::to_string(i), Stamp(n), kHash), Outcome::kDone);
    acked[i].store(n, std::memory_order_release);
  }
  done.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(stale.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
}

}  // namespace
}  // namespace kvcg::hotcache
