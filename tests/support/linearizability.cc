// The WGL search behind lincheck::Check (see linearizability.h for the model).
//
// A key's events become compact Ops sorted by invocation time, with values
// interned to integers (0 = absent, 1 = "unknown" for windows that start
// mid-history). The search keeps one mutable configuration — a linearized
// flag per op, the register value, the 128-bit Zobrist hash of the flag set,
// and the frontier `first_` (the earliest required op not yet linearized) —
// and an explicit stack of frames that remember which candidate to try next,
// so backtracking is an undo, not a copy.
//
// Candidates at a configuration: unlinearized ops invoked no later than the
// earliest response among unlinearized required ops (an op invoked after
// some other op responded must follow it). Ops of three kinds take part:
// required (must be linearized), pending (still running at a cut-off: may
// take effect with any result, or not at all) and optional (an earlier op
// overlapping an explanation window: may take effect inside it, or not).
// Non-required ops never block others; that only relaxes the check, which
// keeps "window fails => history fails" true.
#include "linearizability.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace kvcg::lincheck {

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLinearizable: return "linearizable";
    case Verdict::kNotLinearizable: return "not linearizable";
    case Verdict::kUnknown: return "unknown";
  }
  return "?";
}

std::string Quote(std::string_view bytes) {
  constexpr size_t kShown = 40;
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size() && i < kShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  out += '"';
  if (bytes.size() > kShown) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string FormatEvent(const Event& e) {
  std::string out = "c" + std::to_string(e.client);
  if (e.batch != 0) out += " b" + std::to_string(e.batch) + "." + std::to_string(e.batch_index);
  out += " [" + std::to_string(e.invoke) + "," + std::to_string(e.response) + "] ";
  out += OpTypeName(e.type);
  out += " " + Quote(e.key);
  switch (e.type) {
    case OpType::kPut: out += " " + Quote(e.value); break;
    case OpType::kCompareAndSwap:
      out += e.expect_absent ? " expect absent" : " expect " + Quote(e.expected);
      out += " -> " + Quote(e.value);
      break;
    default: break;
  }
  out += " => ";
  if (e.code == Code::kOk) {
    out += "ok " + Quote(e.output);
  } else {
    out += CodeName(e.code);
  }
  return out;
}

namespace {

constexpr uint32_t kAbsent = 0;
constexpr uint32_t kWild = 1;  // Any value: fixed by the first op that observes it.
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

enum class Kind : uint8_t { kRequired, kOptional, kPending };

struct Op {
  uint64_t invoke = 0;
  uint64_t response = 0;
  OpType type = OpType::kGet;
  Kind kind = Kind::kRequired;
  bool found = false;
  bool expect_absent = false;
  uint32_t input = 0;     // Value stored by PUT / CAS.
  uint32_t expected = 0;  // CAS.
  uint32_t output = 0;    // Value observed when found.
  int32_t pred = -1;      // Op (index in the same vector) that must go first.
  uint32_t event = 0;     // Index into the key's event list.
};

// Can `op` take effect when the register holds `state`? If so, *next is the
// value afterwards.
bool Apply(const Op& op, uint32_t state, uint32_t* next) {
  if (op.kind == Kind::kPending) {
    if (state == kWild) {
      // Unknown before, unknown result: over-approximate (a CAS may or may
      // not have stored, so the value stays unknown).
      switch (op.type) {
        case OpType::kPut: *next = op.input; return true;
        case OpType::kDelete: *next = kAbsent; return true;
        default: *next = kWild; return true;
      }
    }
  } else {
    const uint32_t observed = op.found ? op.output : kAbsent;
    if (state == kWild) {
      state = observed;
    } else if (state != observed) {
      return false;
    }
  }
  switch (op.type) {
    case OpType::kGet: *next = state; return true;
    case OpType::kPut: *next = op.input; return true;
    case OpType::kDelete: *next = kAbsent; return true;
    case OpType::kCompareAndSwap: {
      const bool stores =
          state == kAbsent ? op.expect_absent : (!op.expect_absent && state == op.expected);
      *next = stores ? op.input : state;
      return true;
    }
  }
  return false;
}

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct MemoKey {
  uint64_t a, b;
  bool operator==(const MemoKey& o) const { return a == o.a && b == o.b; }
};
struct MemoHash {
  size_t operator()(const MemoKey& k) const { return static_cast<size_t>(k.a); }
};

struct SearchOutcome {
  Verdict verdict;
  uint64_t steps;
};

class Search {
 public:
  Search(const std::vector<Op>& ops, uint32_t initial, uint64_t max_steps)
      : ops_(ops), n_(ops.size()), state_(initial), max_steps_(max_steps) {}

  SearchOutcome Run() {
    lin_.assign(n_, 0);
    open_.assign((n_ + 63) / 64, ~uint64_t{0});
    if (n_ % 64 != 0) open_.back() = (uint64_t{1} << (n_ % 64)) - 1;
    z1_.resize(n_);
    z2_.resize(n_);
    for (size_t i = 0; i < n_; ++i) {
      z1_[i] = SplitMix(2 * i + 1);
      z2_[i] = SplitMix(2 * i + 2 + 0x5bd1e995ull);
      if (ops_[i].kind != Kind::kRequired) nonrequired_.push_back(static_cast<uint32_t>(i));
    }
    first_ = 0;
    AdvanceFirst();
    memo_.reserve(std::min<size_t>(n_ * 2 + 16, size_t{1} << 24));
    memo_.insert(Key(state_));
    stack_.push_back(Frame{-1, state_, 0, false});
    std::vector<uint32_t> cands;
    while (true) {
      if (first_ == n_) return {Verdict::kLinearizable, steps_};
      Frame& f = stack_.back();
      Candidates(&cands);
      int32_t child = -1;
      uint32_t child_state = 0;
      if (!f.greedy && f.cursor == 0) {
        // An op whose result pins the value it sees (any op but a pending
        // one; a pending GET changes nothing anyway), that fits the current
        // value and leaves it unchanged, can go first: wherever a
        // linearization puts it, the value there is this one.
        for (uint32_t c : cands) {
          uint32_t next;
          if (ops_[c].kind == Kind::kPending && ops_[c].type != OpType::kGet) continue;
          if (PredDone(c) && Apply(ops_[c], state_, &next) && next == state_) {
            f.greedy = true;
            if (memo_.insert(Key(next, c)).second) {
              child = static_cast<int32_t>(c);
              child_state = next;
            }
            break;
          }
        }
      }
      if (!f.greedy) {
        for (; f.cursor < cands.size() && child < 0; ++f.cursor) {
          const uint32_t c = cands[f.cursor];
          uint32_t next;
          if (!PredDone(c) || !Apply(ops_[c], state_, &next)) continue;
          if (!memo_.insert(Key(next, c)).second) continue;
          child = static_cast<int32_t>(c);
          child_state = next;
        }
      }
      if (child >= 0) {
        if (++steps_ > max_steps_) return {Verdict::kUnknown, steps_};
        const uint32_t prev = state_;
        Linearize(static_cast<uint32_t>(child));
        state_ = child_state;
        stack_.push_back(Frame{child, prev, 0, false});
        continue;
      }
      // Every choice from here failed: undo the op that led here.
      if (stack_.size() == 1) return {Verdict::kNotLinearizable, steps_};
      Undo(static_cast<uint32_t>(f.op));
      state_ = f.prev_state;
      stack_.pop_back();
      // A greedy frame's parent is itself exhausted only if it was greedy;
      // otherwise it goes on with its next candidate.
    }
  }

 private:
  struct Frame {
    int32_t op;           // Op linearized to reach this frame (-1 at the root).
    uint32_t prev_state;  // Register value before it.
    uint32_t cursor;      // Next candidate to try (non-greedy frames).
    bool greedy;          // Took its single state-preserving child.
  };

  // Memo key of the configuration reached by linearizing `added` (or the
  // current one when added < 0) with register value `state`.
  MemoKey Key(uint32_t state, int64_t added = -1) const {
    uint64_t a = h1_, b = h2_;
    if (added >= 0) {
      a ^= z1_[added];
      b ^= z2_[added];
    }
    const uint64_t s = SplitMix(state + 0x1234567ull);
    return MemoKey{a ^ s, b ^ SplitMix(s)};
  }

  bool PredDone(uint32_t c) const {
    const int32_t p = ops_[c].pred;
    return p < 0 || lin_[p] || ops_[p].kind != Kind::kRequired;
  }

  void AdvanceFirst() {
    while (first_ < n_ && (lin_[first_] || ops_[first_].kind != Kind::kRequired)) ++first_;
  }

  void Linearize(uint32_t c) {
    lin_[c] = 1;
    open_[c / 64] &= ~(uint64_t{1} << (c % 64));
    h1_ ^= z1_[c];
    h2_ ^= z2_[c];
    if (c == first_) AdvanceFirst();
  }

  void Undo(uint32_t c) {
    lin_[c] = 0;
    open_[c / 64] |= uint64_t{1} << (c % 64);
    h1_ ^= z1_[c];
    h2_ ^= z2_[c];
    if (ops_[c].kind == Kind::kRequired && c < first_) first_ = c;
  }

  // Unlinearized ops that may take effect next, in index order.
  void Candidates(std::vector<uint32_t>* out) {
    scan_.clear();
    uint64_t min_response = kNever;
    // Walk the unlinearized ops from the frontier a word of flags at a
    // time: behind a long-running op most of the window is already done.
    for (size_t w = first_ / 64; w < open_.size(); ++w) {
      uint64_t bits = open_[w];
      if (w == first_ / 64) bits &= ~uint64_t{0} << (first_ % 64);
      bool done = false;
      while (bits != 0) {
        const size_t i = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
        bits &= bits - 1;
        if (ops_[i].invoke > min_response) {
          done = true;
          break;
        }
        scan_.push_back(static_cast<uint32_t>(i));
        if (ops_[i].kind == Kind::kRequired) min_response = std::min(min_response, ops_[i].response);
      }
      if (done) break;
    }
    out->clear();
    for (uint32_t j : nonrequired_) {
      if (j >= first_) break;
      if (!lin_[j] && ops_[j].invoke <= min_response) out->push_back(j);
    }
    for (uint32_t j : scan_) {
      if (ops_[j].invoke <= min_response) out->push_back(j);
    }
  }

  const std::vector<Op>& ops_;
  const size_t n_;
  uint32_t state_;
  const uint64_t max_steps_;
  uint64_t steps_ = 0;
  size_t first_ = 0;
  uint64_t h1_ = 0, h2_ = 0;
  std::vector<uint8_t> lin_;
  std::vector<uint64_t> open_;  // Bit i set: op i not linearized.
  std::vector<uint64_t> z1_, z2_;
  std::vector<uint32_t> nonrequired_;  // Ascending.
  std::vector<uint32_t> scan_;
  std::vector<Frame> stack_;
  std::unordered_set<MemoKey, MemoHash> memo_;
};

// One key's events, compiled for the search.
class KeyHistory {
 public:
  KeyHistory(const std::vector<Event>& all, const std::vector<size_t>& indices) {
    events_.reserve(indices.size());
    for (size_t i : indices) events_.push_back(&all[i]);
    std::stable_sort(events_.begin(), events_.end(), [](const Event* a, const Event* b) {
      if (a->invoke != b->invoke) return a->invoke < b->invoke;
      if (a->order_group != b->order_group) return a->order_group < b->order_group;
      return a->order_seq < b->order_seq;
    });
    ops_.resize(events_.size());
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event& e = *events_[i];
      Op& op = ops_[i];
      op.invoke = e.invoke;
      op.response = e.response;
      op.type = e.type;
      op.found = e.code == Code::kOk;
      op.expect_absent = e.expect_absent;
      if (e.type == OpType::kPut || e.type == OpType::kCompareAndSwap) op.input = Intern(e.value);
      if (e.type == OpType::kCompareAndSwap && !e.expect_absent) op.expected = Intern(e.expected);
      if (op.found) op.output = Intern(e.output);
      op.event = static_cast<uint32_t>(i);
    }
    // Program order: chain each op to the latest op of its group with a
    // smaller order_seq.
    std::map<uint64_t, std::vector<uint32_t>> groups;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (events_[i]->order_group != 0) groups[events_[i]->order_group].push_back(static_cast<uint32_t>(i));
    }
    for (auto& [group, members] : groups) {
      std::stable_sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
        return events_[a]->order_seq < events_[b]->order_seq;
      });
      for (size_t j = 1; j < members.size(); ++j) {
        // Latest strictly smaller order_seq.
        size_t k = j;
        while (k > 0 && events_[members[k - 1]]->order_seq == events_[members[j]]->order_seq) --k;
        if (k > 0) ops_[members[j]].pred = static_cast<int32_t>(members[k - 1]);
      }
    }
  }

  size_t size() const { return ops_.size(); }

  SearchOutcome CheckAll(uint64_t max_steps) const {
    return Search(ops_, kAbsent, max_steps).Run();
  }

  // Finds the minimal offending window (call only when CheckAll failed).
  // Returns the window's event indices in invocation order, with a note per
  // event ("" / "maybe" / "pending"). *steps accumulates search effort.
  std::vector<std::pair<const Event*, const char*>> Explain(uint64_t max_steps, uint64_t* steps,
                                                            bool* from_absent) const {
    // 1. The earliest cut-off time t (a response time) at which the prefix
    //    invoked by t, with ops still running at t pending, is not
    //    linearizable. Prefix-closure makes this monotone in t.
    std::vector<uint64_t> cuts;
    for (const Op& op : ops_) cuts.push_back(op.response);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    size_t lo = 0, hi = cuts.size() - 1;  // cuts[hi] (everything complete) fails.
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (Fails(Window(0, cuts[mid]), kAbsent, max_steps, steps)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const uint64_t cut = cuts[hi];
    size_t end = 0;  // Ops [0, end) are invoked by the cut.
    while (end < ops_.size() && ops_[end].invoke <= cut) ++end;

    // 2. The latest start a such that ops [a, end) cannot be explained from
    //    any prior value, with earlier ops overlapping them optional.
    //    Galloping then bisection; a = 0 (from absent) always fails.
    auto fails_from = [&](size_t a) {
      return Fails(Window(a, cut), a == 0 ? kAbsent : kWild, max_steps, steps);
    };
    size_t good = end;  // Largest start known to pass (end: the empty window).
    size_t bad = 0;
    for (size_t width = 1;; width *= 2) {
      const size_t a = width >= end ? 0 : end - width;
      if (a == 0 || fails_from(a)) {
        bad = a;
        break;
      }
      good = a;
    }
    while (good - bad > 1) {
      const size_t mid = bad + (good - bad) / 2;
      if (fails_from(mid)) {
        bad = mid;
      } else {
        good = mid;
      }
    }
    *from_absent = bad == 0;
    std::vector<std::pair<const Event*, const char*>> out;
    for (const Op& op : Window(bad, cut)) {
      const char* note = op.kind == Kind::kPending ? "pending" : op.kind == Kind::kOptional ? "maybe" : "";
      out.emplace_back(events_[op.event], note);
    }
    return out;
  }

 private:
  uint32_t Intern(const std::string& value) {
    auto [it, inserted] = values_.try_emplace(value, static_cast<uint32_t>(values_.size() + 2));
    return it->second;
  }

  // Ops invoked by `cut` with index >= a (required, or pending if running at
  // `cut`), plus earlier ops overlapping ops_[a] (optional), re-indexed.
  std::vector<Op> Window(size_t a, uint64_t cut) const {
    std::vector<Op> out;
    std::vector<int32_t> remap(ops_.size(), -1);
    for (size_t i = 0; i < ops_.size() && ops_[i].invoke <= cut; ++i) {
      Op op = ops_[i];
      if (i < a) {
        if (op.response < ops_[a].invoke) continue;
        op.kind = Kind::kOptional;
      }
      if (op.response > cut) op.kind = Kind::kPending;
      remap[i] = static_cast<int32_t>(out.size());
      out.push_back(op);
    }
    for (Op& op : out) op.pred = op.pred >= 0 ? remap[op.pred] : -1;
    return out;
  }

  static bool Fails(const std::vector<Op>& ops, uint32_t initial, uint64_t max_steps,
                    uint64_t* steps) {
    SearchOutcome r = Search(ops, initial, max_steps).Run();
    *steps += r.steps;
    return r.verdict == Verdict::kNotLinearizable;
  }

  std::vector<const Event*> events_;  // By invocation time.
  std::vector<Op> ops_;
  std::unordered_map<std::string, uint32_t> values_;
};

}  // namespace

CheckResult Check(const std::vector<Event>& history, const CheckOptions& options) {
  CheckResult result;
  std::map<std::string, std::vector<size_t>> by_key;  // Ordered: deterministic reports.
  for (size_t i = 0; i < history.size(); ++i) {
    const Event& e = history[i];
    if (e.code != Code::kOk && e.code != Code::kNotFound) {
      ++result.excluded;
      continue;
    }
    if (e.response < e.invoke) {
      result.verdict = Verdict::kUnknown;
      result.failed_key = e.key;
      result.explanation = "malformed event (response before invocation): " + FormatEvent(e);
      return result;
    }
    by_key[e.key].push_back(i);
    ++result.operations;
  }
  result.keys = by_key.size();
  bool have_failure = false, have_unknown = false;
  for (const auto& [key, indices] : by_key) {
    KeyHistory kh(history, indices);
    SearchOutcome r = kh.CheckAll(options.max_steps_per_key);
    result.steps += r.steps;
    if (r.verdict == Verdict::kLinearizable) continue;
    if (r.verdict == Verdict::kUnknown) {
      if (!have_failure && !have_unknown) {
        result.failed_key = key;
        result.explanation = "key " + Quote(key) + ": gave up after " + std::to_string(r.steps) +
                             " search steps over " + std::to_string(kh.size()) +
                             " operations (raise CheckOptions::max_steps_per_key)";
      }
      have_unknown = true;
      continue;
    }
    if (have_failure) continue;
    have_failure = true;
    result.failed_key = key;
    result.window.clear();
    std::string text = "key " + Quote(key) + " is not linearizable (" +
                       std::to_string(kh.size()) + " operations on it).\n";
    if (options.explain) {
      bool from_absent = false;
      auto window = kh.Explain(options.max_steps_per_key, &result.steps, &from_absent);
      text += "No order of these " + std::to_string(window.size()) +
              " operations that respects real time explains every result, " +
              (from_absent ? std::string("starting from an absent key")
                           : std::string("whatever the key held before them")) +
              ":\n";
      bool notes = false;
      for (const auto& [event, note] : window) {
        result.window.push_back(*event);
        text += "  " + FormatEvent(*event);
        if (*note) {
          text += std::string("   (") + note + ")";
          notes = true;
        }
        text += "\n";
      }
      if (notes) {
        text +=
            "  (maybe: an earlier operation overlapping the window, free to take effect in it or "
            "not; pending: still running when the violation became certain, result unused)\n";
      }
    }
    result.explanation = text;
  }
  if (have_failure) {
    result.verdict = Verdict::kNotLinearizable;
  } else if (have_unknown) {
    result.verdict = Verdict::kUnknown;
  }
  return result;
}

}  // namespace kvcg::lincheck
