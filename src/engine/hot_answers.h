// HotAnswers: the answers the engine gives one batch itself — hot-cache
// hits, input errors of hot ops, and hot ops that queued behind a miss —
// kept until the canonical store's Results for the same batch arrive, then
// written over them.
//
// Why over them. The engine hands the client's batch to the canonical store
// as it is, with the ops it answers itself turned into OpType::kNoop
// (Batch::SetNoop), instead of copying the cold ops into a batch of their
// own: the store's Results then line up with the client's batch, and the
// engine writes only its own answers into them (Results::Replace), one per
// answered op. Copying each cold op in and each cold result back out (a
// per-op view into a ResultsBuilder) had cost ~100–200 cycles per cold op,
// the merge on the store's one delivery thread, which capped kvcg mode at
// ~35 M ops/s on the H100 host whatever the skew (docs/BENCHMARKS.md 3b).
//
// Threads. Hits and errors are recorded by the routing (submitting) thread
// while it routes, before the batch reaches the canonical store. Ops queued
// behind a miss are answered by whichever thread completes that miss,
// possibly another batch's and possibly while this batch is still being
// routed: they go to a second list under a lock, which hits never take.
// ApplyTo and Merge run once every op is answered (the engine counts
// answers; the counter's acquire/release ordering makes every write above
// visible there). Values are copied into per-list arenas as bytes and
// referenced by offset, so an arena may grow while answers come in; the
// views handed out point into them, which is why the engine gives the
// whole object to the delivered Results as an owner (Results::Adopt).
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "hotcache/hot_cache.h"
#include "kvcg/results.h"

namespace kvcg::engine {

class HotAnswers : public hotcache::ResultSink, public Results::Owner {
 public:
  // `expected`: how many answers the routing thread may record (capacity
  // reserved once, so recording a hit does not reallocate).
  explicit HotAnswers(uint32_t expected) {
    own_.answers.reserve(expected);
    own_.bytes.reserve(size_t{expected} * 8);
  }

  // --- Routing thread, while routing.
  void SetError(uint32_t i, Code code) { own_.Add(i, code, {}, kNoExpiry); }
  // The ops answered so far by the routing thread (hits and errors).
  size_t own_answers() const { return own_.answers.size(); }

  // --- Any thread (hotcache::ResultSink): a hit from the routing thread's
  // HotCache::Execute (queued = false), or an op that waited behind a miss.
  void Answer(uint32_t index, Code code, std::string_view value, uint64_t expire_at,
              bool queued) override {
    if (!queued) {
      own_.Add(index, code, value, expire_at);
      return;
    }
    std::lock_guard lock(late_mu_);
    late_.Add(index, code, value, expire_at);
  }
  // A queued op that had to run on the canonical store itself
  // (HotCache::Completion::next), with its one-op Results.
  void AnswerLate(uint32_t index, const Results& inner) {
    std::lock_guard lock(late_mu_);
    late_.Add(index, inner.code(0), inner.value(0), inner.expire_at(0));
  }

  // --- Once every op is answered.
  // Writes every answer over `results` (the canonical store's, for the same
  // batch). False when `results` cannot hold one (Results::Replace); the
  // answers before it were written, so the caller rebuilds with Merge.
  bool ApplyTo(Results* results) const {
    return own_.ApplyTo(results) && late_.ApplyTo(results);
  }
  // The n results of a batch: the canonical store's (null: none ran there)
  // with these answers over them, in a builder's memory. `*canonical` is
  // kept alive by the returned Results.
  Results Merge(size_t n, Results* canonical) const;
  // The results answered so far by the routing thread (hits, errors), and in
  // answered[i] whether op i is one of them (n bytes): the early answers.
  Results Peek(size_t n, uint8_t* answered) const;

 protected:
  ~HotAnswers() override = default;

 private:
  struct Entry {
    uint32_t index;
    Code code;
    uint32_t len;
    uint64_t offset;  // into bytes
    uint64_t expire_at;
  };
  struct List {
    std::vector<Entry> answers;
    std::vector<char> bytes;

    void Add(uint32_t index, Code code, std::string_view value, uint64_t expire_at) {
      const bool found = code == Code::kOk;
      answers.push_back({index, code, found ? uint32_t(value.size()) : 0u, bytes.size(),
                         found ? expire_at : kNoExpiry});
      if (found) bytes.insert(bytes.end(), value.begin(), value.end());
    }
    std::string_view Value(const Entry& e) const { return {bytes.data() + e.offset, e.len}; }
    bool ApplyTo(Results* results) const {
      for (const Entry& e : answers) {
        if (!results->Replace(e.index, e.code, Value(e), e.expire_at)) return false;
      }
      return true;
    }
    void WriteTo(ResultsBuilder* out) const;
  };

  List own_;                // routing thread
  std::mutex late_mu_;
  List late_;               // under late_mu_ until every op is answered
};

}  // namespace kvcg::engine
