// BatchResults: the Results of one engine batch, assembled from three
// sources without a std::string or an allocation per operation.
//
//  * Hits and input errors, on the routing (submitting) thread while it
//    routes: a hit's value is copied once, from the cache entry into the
//    builder's arena.
//  * Cold ops and misses, on the canonical store's completion thread, after
//    routing (the cold batch is submitted once routing is done, so the two
//    never overlap): views into the canonical store's Results, which is kept
//    alive with the batch's results, so nothing is copied.
//  * Ops that waited behind a miss (hotcache::Outcome::kWaiting), on
//    whichever thread completes that miss, possibly another batch's, and
//    possibly while this batch is still being routed. They go to a second
//    builder under a lock; hits never take it. Finish joins it to the first
//    by views (no second copy).
//
// Finish runs once every op is answered (the engine counts answers); the
// counter's acquire/release ordering makes every write above visible there.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "hotcache/hot_cache.h"
#include "kvcg/results.h"

namespace kvcg::engine {

class BatchResults : public hotcache::ResultSink {
 public:
  explicit BatchResults(uint32_t n) : n_(n) { results_.Reset(n); }

  // --- Routing thread, while routing.
  void SetError(uint32_t i, Code code) { results_.SetCode(i, code); }
  // Op i returned kWaiting: it is answered later through Answer(queued) or
  // AnswerLate.
  void Queued(uint32_t i) { queued_.push_back(i); }

  // --- The cold batch's completion (after routing). Keeps `cold` with the
  // results and returns it for reading; SetCold borrows values from it.
  const Results& TakeCold(Results&& cold) {
    cold_ = std::move(cold);
    return cold_;
  }
  void SetCold(uint32_t i, OpResultView r) {
    results_.SetView(i, r.code, r.value);
    if (r.expire_at != kNoExpiry) results_.SetExpire(i, r.expire_at);
  }

  // --- Any thread (hotcache::ResultSink). Unqueued answers come from the
  // routing thread's HotCache::Execute.
  void Answer(uint32_t index, Code code, std::string_view value, uint64_t expire_at,
              bool queued) override {
    ResultsBuilder* out = &results_;
    std::unique_lock<std::mutex> lock(late_mu_, std::defer_lock);
    if (queued) {
      lock.lock();
      out = &Late();
    }
    if (code == Code::kOk) {
      out->SetValue(index, code, value);
      if (expire_at != kNoExpiry) out->SetExpire(index, expire_at);
    } else {
      out->SetCode(index, code);
    }
  }
  // A queued op that had to run on the canonical store itself
  // (HotCache::Completion::next), with a one-op `inner` Results: borrowed,
  // and kept alive with the results.
  void AnswerLate(uint32_t index, Results&& inner) {
    std::lock_guard lock(late_mu_);
    ResultsBuilder& out = Late();
    out.SetView(index, inner.code(0), inner.value(0));
    if (inner.expire_at(0) != kNoExpiry) out.SetExpire(index, inner.expire_at(0));
    out.Keep(std::move(inner));
  }

  // --- Routing thread, after routing and before the cold batch is
  // submitted: the results so far (hits, errors), owning nothing.
  Results Peek() { return results_.Peek(); }
  const std::vector<uint32_t>& queued() const { return queued_; }

  // --- Once every op is answered. Hands the results over.
  Results Finish() {
    if (!queued_.empty()) {
      Results late = late_.Finish();
      for (uint32_t i : queued_) {
        results_.SetView(i, late.code(i), late.value(i));
        if (late.expire_at(i) != kNoExpiry) results_.SetExpire(i, late.expire_at(i));
      }
      results_.Keep(std::move(late));
    }
    if (!cold_.empty()) results_.Keep(std::move(cold_));
    return results_.Finish();
  }

 protected:
  ~BatchResults() = default;

 private:
  ResultsBuilder& Late() {  // under late_mu_
    if (late_.size() == 0) late_.Reset(n_);
    return late_;
  }

  const uint32_t n_;
  ResultsBuilder results_;         // routing thread, then the cold completion
  Results cold_;                   // what results_'s cold views point into
  std::vector<uint32_t> queued_;   // routing thread
  std::mutex late_mu_;
  ResultsBuilder late_;            // under late_mu_: the queued ops' results
};

}  // namespace kvcg::engine
