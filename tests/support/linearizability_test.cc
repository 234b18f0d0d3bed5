// Tests of the linearizability checker itself, on hand-made histories whose
// verdict is known, and on large generated ones (a hidden linearization
// point per op gives histories that are linearizable by construction).
#include "linearizability.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kvcg::lincheck {
namespace {

// The generated-history tests are single-threaded, so sanitizers find little
// in them but slow them 10-30x; they shrink there to keep CI fast.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kShrink = 10;
#else
constexpr int kShrink = 1;
#endif

using Value = std::optional<std::string>;
const Value kNone = std::nullopt;

Event Make(OpType type, std::string key, uint64_t invoke, uint64_t response, Value result) {
  Event e;
  e.type = type;
  e.key = std::move(key);
  e.invoke = invoke;
  e.response = response;
  e.code = result ? Code::kOk : Code::kNotFound;
  e.output = result.value_or("");
  return e;
}
Event Get(std::string key, uint64_t inv, uint64_t resp, Value result) {
  return Make(OpType::kGet, std::move(key), inv, resp, std::move(result));
}
Event Put(std::string key, std::string value, uint64_t inv, uint64_t resp, Value prev) {
  Event e = Make(OpType::kPut, std::move(key), inv, resp, std::move(prev));
  e.value = std::move(value);
  return e;
}
Event Del(std::string key, uint64_t inv, uint64_t resp, Value prev) {
  return Make(OpType::kDelete, std::move(key), inv, resp, std::move(prev));
}
// expected == kNone: "only if absent".
Event Cas(std::string key, Value expected, std::string desired, uint64_t inv, uint64_t resp,
          Value prev) {
  Event e = Make(OpType::kCompareAndSwap, std::move(key), inv, resp, std::move(prev));
  e.expect_absent = !expected;
  e.expected = expected.value_or("");
  e.value = std::move(desired);
  return e;
}

void ExpectLinearizable(const std::vector<Event>& h) {
  CheckResult r = Check(h);
  EXPECT_EQ(r.verdict, Verdict::kLinearizable) << r.explanation;
}

CheckResult ExpectViolation(const std::vector<Event>& h) {
  CheckResult r = Check(h);
  EXPECT_EQ(r.verdict, Verdict::kNotLinearizable) << "history was accepted";
  EXPECT_FALSE(r.explanation.empty());
  EXPECT_FALSE(r.window.empty());
  return r;
}

bool WindowHas(const CheckResult& r, uint64_t invoke, OpType type) {
  for (const Event& e : r.window) {
    if (e.invoke == invoke && e.type == type) return true;
  }
  return false;
}

// ---------------------------------------------------------------- accepted

TEST(LinearizabilityTest, EmptyHistory) {
  CheckResult r = Check({});
  EXPECT_TRUE(r.linearizable());
  EXPECT_EQ(r.keys, 0u);
}

TEST(LinearizabilityTest, SequentialSingleKey) {
  ExpectLinearizable({
      Get("k", 1, 2, kNone),
      Put("k", "a", 3, 4, kNone),
      Get("k", 5, 6, "a"),
      Put("k", "b", 7, 8, "a"),
      Del("k", 9, 10, "b"),
      Get("k", 11, 12, kNone),
      Del("k", 13, 14, kNone),
      Put("k", "", 15, 16, kNone),  // The empty value is a value, not absence.
      Get("k", 17, 18, ""),
  });
}

TEST(LinearizabilityTest, OverlappingWritesInEitherOrder) {
  // PUT a and PUT b overlap; either may go first, as long as the previous
  // values and the later read agree on which.
  ExpectLinearizable({Put("k", "a", 1, 10, kNone), Put("k", "b", 2, 9, "a"), Get("k", 11, 12, "b")});
  ExpectLinearizable({Put("k", "a", 1, 10, "b"), Put("k", "b", 2, 9, kNone), Get("k", 11, 12, "a")});
}

TEST(LinearizabilityTest, ReadsOfEitherConcurrentValue) {
  // A read overlapping a write may see the old or the new value...
  for (const char* seen : {"x", "y"}) {
    ExpectLinearizable({Put("k", "x", 1, 2, kNone), Put("k", "y", 3, 10, "x"), Get("k", 4, 5, seen),
                        Get("k", 11, 12, "y")});
  }
  // ...and two reads in a row may see old then new.
  ExpectLinearizable({Put("k", "x", 1, 2, kNone), Put("k", "y", 3, 10, "x"), Get("k", 4, 5, "x"),
                      Get("k", 6, 7, "y")});
}

TEST(LinearizabilityTest, EqualTimesAreConcurrent) {
  // The GET's invocation tick equals the PUT's response tick: no real-time
  // order between them, so seeing the old value is fine.
  ExpectLinearizable({Put("k", "a", 1, 5, kNone), Get("k", 5, 6, kNone)});
}

TEST(LinearizabilityTest, CompareAndSwapSemantics) {
  ExpectLinearizable({
      Cas("k", kNone, "a", 1, 2, kNone),  // absent -> stores a
      Cas("k", kNone, "b", 3, 4, "a"),    // present: does not store
      Cas("k", "x", "c", 5, 6, "a"),      // mismatch: does not store
      Get("k", 7, 8, "a"),
      Cas("k", "a", "d", 9, 10, "a"),  // match: stores d
      Get("k", 11, 12, "d"),
      Del("k", 13, 14, "d"),
      Cas("k", "d", "e", 15, 16, kNone),  // absent, not expect_absent: no store
      Get("k", 17, 18, kNone),
  });
}

TEST(LinearizabilityTest, ConcurrentCasOnlyOneWins) {
  ExpectLinearizable({Put("k", "0", 1, 2, kNone), Cas("k", "0", "1", 3, 10, "0"),
                      Cas("k", "0", "2", 4, 9, "1"), Get("k", 11, 12, "1")});
}

TEST(LinearizabilityTest, KeysAreIndependent) {
  // Per key each sub-history is fine, even though a global order would need
  // k2's write before k1's read and vice versa — which is allowed because
  // the operations overlap.
  ExpectLinearizable({Put("k1", "a", 1, 10, kNone), Get("k2", 2, 9, "b"), Put("k2", "b", 3, 8, kNone),
                      Get("k1", 4, 7, "a")});
}

TEST(LinearizabilityTest, ErrorResultsAreExcluded) {
  Event failed = Del("k", 5, 6, kNone);
  failed.code = Code::kTimedOut;  // Took no effect.
  Event failed_put = Put("k", "zzz", 7, 8, kNone);
  failed_put.code = Code::kCapacityExhausted;
  CheckResult r = Check({Put("k", "a", 1, 2, kNone), failed, failed_put, Get("k", 9, 10, "a")});
  EXPECT_TRUE(r.linearizable()) << r.explanation;
  EXPECT_EQ(r.excluded, 2u);
  EXPECT_EQ(r.operations, 2u);
}

TEST(LinearizabilityTest, BatchOrderIsEnforcedOnlyWhenDeclared) {
  // One batch, both ops share its window. The GET comes first in the batch
  // but claims to see the PUT that comes after it.
  std::vector<Event> h = {Get("k", 1, 10, "a"), Put("k", "a", 1, 10, kNone)};
  ExpectLinearizable(h);  // As two unrelated concurrent ops: fine.
  h[0].order_group = h[1].order_group = 3;
  h[0].order_seq = 0;
  h[1].order_seq = 1;
  ExpectViolation(h);
  // In declared order with consistent results it passes.
  std::swap(h[0].order_seq, h[1].order_seq);
  ExpectLinearizable(h);
}

// ---------------------------------------------------------------- rejected

TEST(LinearizabilityTest, StaleReadAfterCompletedWrite) {
  CheckResult r = ExpectViolation({Put("k", "a", 1, 2, kNone), Put("k", "b", 3, 4, "a"),
                                   Get("k", 5, 6, "a")});
  EXPECT_EQ(r.failed_key, "k");
  // The earlier PUT is not needed to see the problem.
  EXPECT_EQ(r.window.size(), 2u) << r.explanation;
  EXPECT_TRUE(WindowHas(r, 3, OpType::kPut)) << r.explanation;
  EXPECT_TRUE(WindowHas(r, 5, OpType::kGet)) << r.explanation;
}

TEST(LinearizabilityTest, ReadOfValueNeverWritten) {
  CheckResult r = ExpectViolation({Put("k", "a", 1, 2, kNone), Get("k", 3, 4, "ghost")});
  EXPECT_TRUE(WindowHas(r, 3, OpType::kGet));
  // Also against an empty store.
  ExpectViolation({Get("k", 1, 2, "ghost")});
}

TEST(LinearizabilityTest, TwoSequentialPutsReturnSamePrevious) {
  CheckResult r = ExpectViolation(
      {Put("k", "a", 1, 2, kNone), Put("k", "b", 3, 4, "a"), Put("k", "c", 5, 6, "a")});
  EXPECT_EQ(r.window.size(), 2u) << r.explanation;
}

TEST(LinearizabilityTest, LostUpdateInCas) {
  // Both CASes claim to have seen "0" (so both stored): one update is lost.
  ExpectViolation({Put("k", "0", 1, 2, kNone), Cas("k", "0", "1", 3, 10, "0"),
                   Cas("k", "0", "2", 4, 9, "0")});
}

TEST(LinearizabilityTest, CasThatMatchedMustHaveStored) {
  ExpectViolation({Put("k", "0", 1, 2, kNone), Cas("k", "0", "1", 3, 4, "0"), Get("k", 5, 6, "0")});
  ExpectViolation({Cas("k", kNone, "a", 1, 2, kNone), Get("k", 3, 4, kNone)});
}

TEST(LinearizabilityTest, CasThatMismatchedMustNotStore) {
  ExpectViolation({Put("k", "0", 1, 2, kNone), Cas("k", "9", "1", 3, 4, "0"), Get("k", 5, 6, "1")});
}

TEST(LinearizabilityTest, DeleteReturnsValueAfterCompletedDelete) {
  ExpectViolation({Put("k", "a", 1, 2, kNone), Del("k", 3, 4, "a"), Del("k", 5, 6, "a")});
}

TEST(LinearizabilityTest, ReadFromTheFuture) {
  // The GET completed before the PUT was invoked.
  ExpectViolation({Get("k", 1, 2, "a"), Put("k", "a", 3, 4, kNone)});
}

TEST(LinearizabilityTest, NewThenOldInversion) {
  // Once a read saw the new value, a later read may not see the old one,
  // even while the write is still running.
  CheckResult r = ExpectViolation({Put("k", "x", 1, 2, kNone), Put("k", "y", 3, 20, "x"),
                                   Get("k", 4, 5, "y"), Get("k", 6, 7, "x")});
  EXPECT_TRUE(WindowHas(r, 4, OpType::kGet)) << r.explanation;
  EXPECT_TRUE(WindowHas(r, 6, OpType::kGet)) << r.explanation;
  // The long PUT is still running at the violation: shown as pending.
  EXPECT_NE(r.explanation.find("pending"), std::string::npos) << r.explanation;
}

TEST(LinearizabilityTest, ExplanationNamesKeyAndMinimalWindow) {
  // Lots of good history on two keys, then one bad read on "bad".
  std::vector<Event> h;
  uint64_t t = 1;
  Value prev_good = kNone, prev_bad = kNone;
  for (int i = 0; i < 200; ++i) {
    const std::string v = "v" + std::to_string(i);
    h.push_back(Put("good", v, t, t + 1, prev_good));
    h.push_back(Put("bad", v, t + 2, t + 3, prev_bad));
    prev_good = prev_bad = v;
    t += 4;
  }
  h.push_back(Get("bad", t, t + 1, "v3"));  // Stale.
  h.push_back(Get("good", t + 2, t + 3, "v199"));
  CheckResult r = ExpectViolation(h);
  EXPECT_EQ(r.failed_key, "bad");
  EXPECT_EQ(r.keys, 2u);
  ASSERT_EQ(r.window.size(), 2u) << r.explanation;
  EXPECT_EQ(r.window[0].value, "v199");
  EXPECT_EQ(r.window[1].output, "v3");
  EXPECT_NE(r.explanation.find("\"bad\""), std::string::npos) << r.explanation;
  EXPECT_NE(r.explanation.find(FormatEvent(h[h.size() - 2])), std::string::npos) << r.explanation;
}

TEST(LinearizabilityTest, FormatEscapesBinary) {
  Event e = Put(std::string("k\0\xff", 3), std::string(100, 'v'), 1, 2, "\"q\"");
  const std::string s = FormatEvent(e);
  EXPECT_NE(s.find(R"("k\x00\xff")"), std::string::npos) << s;
  EXPECT_NE(s.find("(100 bytes)"), std::string::npos) << s;
  EXPECT_NE(s.find(R"(ok "\"q\"")"), std::string::npos) << s;
}

// Exhaustive reference: tries every order of the (few) ops that respects
// real time, replaying the register. Small histories only.
bool BruteForceLinearizable(const std::vector<Event>& h) {
  std::vector<size_t> order(h.size());
  for (size_t i = 0; i < h.size(); ++i) order[i] = i;
  do {
    bool ok = true;
    for (size_t i = 0; i < order.size() && ok; ++i) {
      for (size_t j = i + 1; j < order.size() && ok; ++j) {
        ok = !(h[order[j]].response < h[order[i]].invoke);  // j must not precede i
      }
    }
    Value state = kNone;
    for (size_t i = 0; i < order.size() && ok; ++i) {
      const Event& e = h[order[i]];
      const Value seen = e.code == Code::kOk ? Value(e.output) : kNone;
      ok = seen == state;
      if (!ok) break;
      switch (e.type) {
        case OpType::kGet: break;
        case OpType::kPut: state = e.value; break;
        case OpType::kDelete: state = kNone; break;
        case OpType::kCompareAndSwap:
          if (state ? (!e.expect_absent && *state == e.expected) : e.expect_absent) state = e.value;
          break;
      }
    }
    if (ok) return true;
  } while (std::next_permutation(order.begin(), order.end()));
  return false;
}

TEST(LinearizabilityTest, AgreesWithBruteForceOnSmallHistories) {
  std::mt19937_64 rng(42);
  const char* values[] = {"a", "b", "c"};
  int accepted = 0, rejected = 0;
  for (int round = 0; round < 5000 / kShrink; ++round) {
    const int n = 1 + static_cast<int>(rng() % 6);
    std::vector<Event> h;
    for (int i = 0; i < n; ++i) {
      const uint64_t inv = rng() % 12;
      const uint64_t resp = inv + rng() % 6;
      const Value result = rng() % 3 == 0 ? kNone : Value(values[rng() % 3]);
      const std::string v = values[rng() % 3];
      switch (rng() % 4) {
        case 0: h.push_back(Get("k", inv, resp, result)); break;
        case 1: h.push_back(Put("k", v, inv, resp, result)); break;
        case 2: h.push_back(Del("k", inv, resp, result)); break;
        default:
          h.push_back(Cas("k", rng() % 3 == 0 ? kNone : Value(values[rng() % 3]), v, inv, resp, result));
      }
    }
    const bool expected = BruteForceLinearizable(h);
    CheckResult r = Check(h);
    ASSERT_EQ(r.verdict, expected ? Verdict::kLinearizable : Verdict::kNotLinearizable)
        << "round " << round << "\n" << r.explanation;
    (expected ? accepted : rejected)++;
  }
  // The generator must produce both kinds, or the comparison proves little.
  EXPECT_GT(accepted, 200 / kShrink);
  EXPECT_GT(rejected, 200 / kShrink);
}

// ------------------------------------------------------ generated histories

// A random history of `clients` concurrent clients over `keys` keys: every
// op gets an invocation time, a hidden linearization point after it and a
// response after that; results come from applying the ops in
// linearization-point order, so the history is linearizable by construction.
std::vector<Event> GenerateLinearizable(uint32_t seed, int clients, int ops_per_client, int keys,
                                        uint64_t max_latency) {
  std::mt19937_64 rng(seed);
  struct Pending {
    Event event;
    uint64_t point;
  };
  std::vector<Pending> all;
  int unique = 0;
  for (int c = 0; c < clients; ++c) {
    uint64_t t = rng() % 8;
    for (int i = 0; i < ops_per_client; ++i) {
      Pending p;
      Event& e = p.event;
      e.client = static_cast<uint32_t>(c);
      e.key = "key" + std::to_string(rng() % keys);
      const int dice = static_cast<int>(rng() % 100);
      e.type = dice < 40 ? OpType::kGet : dice < 70 ? OpType::kPut : dice < 80 ? OpType::kDelete
                                                                    : OpType::kCompareAndSwap;
      e.value = "c" + std::to_string(c) + "-" + std::to_string(unique++);
      if (e.type == OpType::kCompareAndSwap) e.expect_absent = rng() % 4 == 0;
      e.invoke = t;
      p.point = t + 1 + rng() % max_latency;
      e.response = p.point + rng() % max_latency;
      t = e.response + 1 + rng() % 4;  // Each client is sequential.
      all.push_back(std::move(p));
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Pending& a, const Pending& b) { return a.point < b.point; });
  std::map<std::string, std::string> state;
  std::vector<Event> out;
  for (Pending& p : all) {
    Event& e = p.event;
    auto it = state.find(e.key);
    const bool found = it != state.end();
    e.code = found ? Code::kOk : Code::kNotFound;
    e.output = found ? it->second : "";
    switch (e.type) {
      case OpType::kGet: break;
      case OpType::kPut: state[e.key] = e.value; break;
      case OpType::kDelete: state.erase(e.key); break;
      case OpType::kCompareAndSwap:
        // Expected values are picked here, so most CASes see a real value and
        // many succeed.
        if (!e.expect_absent) e.expected = found && rng() % 4 != 0 ? it->second : "stale";
        if (found ? (!e.expect_absent && it->second == e.expected) : e.expect_absent) {
          state[e.key] = e.value;
        }
        break;
    }
    out.push_back(std::move(e));
  }
  std::shuffle(out.begin(), out.end(), rng);  // Check() must not rely on input order.
  return out;
}

TEST(LinearizabilityTest, LargeSequentialHistoryIsQuick) {
  // One client: no overlap at all. With the state-preserving shortcut and no
  // wrong turns, the search linearizes each op exactly once.
  std::vector<Event> h = GenerateLinearizable(1, 1, 200'000 / kShrink, 16, 3);
  const auto start = std::chrono::steady_clock::now();
  CheckResult r = Check(h);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.linearizable()) << r.explanation;
  EXPECT_EQ(r.operations, h.size());
  EXPECT_EQ(r.steps, h.size());
  RecordProperty("check_seconds", std::to_string(seconds));
  std::printf("checked %zu sequential ops in %.3f s\n", h.size(), seconds);
}

TEST(LinearizabilityTest, LargeConcurrentHistoriesPass) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    std::vector<Event> h = GenerateLinearizable(seed, 16, 3'000 / kShrink, 4, 40);
    CheckResult r = Check(h);
    ASSERT_TRUE(r.linearizable()) << "seed " << seed << ": " << r.explanation;
    // Heavy overlap (16 clients on 4 keys) but the search stays near linear.
    EXPECT_LT(r.steps, 20 * h.size()) << "seed " << seed;
  }
}

TEST(LinearizabilityTest, CorruptedConcurrentHistoryFails) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    std::vector<Event> h = GenerateLinearizable(seed, 16, 1'000 / kShrink, 4, 40);
    // Make one successful GET return a value no one ever wrote.
    size_t victim = h.size();
    for (size_t i = h.size() / 2; i < h.size(); ++i) {
      if (h[i].type == OpType::kGet && h[i].code == Code::kOk) {
        victim = i;
        break;
      }
    }
    ASSERT_LT(victim, h.size());
    h[victim].output = "never-written";
    CheckResult r = Check(h);
    ASSERT_EQ(r.verdict, Verdict::kNotLinearizable) << "seed " << seed;
    EXPECT_EQ(r.failed_key, h[victim].key);
    bool has_victim = false;
    for (const Event& e : r.window) has_victim |= e.output == "never-written";
    EXPECT_TRUE(has_victim) << r.explanation;
    EXPECT_LE(r.window.size(), 40u) << r.explanation;
  }
}

TEST(LinearizabilityTest, StepBudgetGivesUnknownNotHang) {
  std::vector<Event> h = GenerateLinearizable(7, 16, 500, 1, 40);
  CheckOptions options;
  options.max_steps_per_key = 10;
  CheckResult r = Check(h, options);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.failed_key, "key0");
  EXPECT_NE(r.explanation.find("gave up"), std::string::npos) << r.explanation;
}

}  // namespace
}  // namespace kvcg::lincheck
