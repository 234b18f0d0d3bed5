// Records what clients of a kvcg::Store saw, for lincheck::Check.
//
// Each client thread gets its own HistoryRecorder::Client (its own buffer
// and lock, so recording adds no shared contention beyond one atomic clock);
// History() merges the buffers once the run is over.
//
// Times come from a logical clock: one atomic counter bumped for every
// invocation and response. Its order agrees with real time (an operation
// that responded before another was invoked got a smaller tick), it is
// strictly increasing, and it costs far less than reading a clock. The
// invocation tick is taken before Submit and the response tick in the
// completion, so every operation of a batch takes effect inside the batch's
// [invoke, response] window; all ops of a batch share it, which is exact for
// an elementwise-linearizable batch.
//
// Program order: each recorded op carries order_group = client id + 1 and
// order_seq = (Submit sequence number << 24) + index in the batch, so the
// checker also enforces kvcg's same-key order inside a batch and across one
// client's successive Submit calls (which the store promises even when the
// calls overlap, i.e. with pipelining).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/results.h"
#include "kvcg/store.h"
#include "linearizability.h"

namespace kvcg::lincheck {

class HistoryRecorder {
 public:
  // One submitter. Execute/Submit must be called from one thread at a time
  // (the point is that its calls are ordered); completions may record from
  // any thread.
  class Client {
   public:
    uint32_t id() const { return id_; }

    // Store::Execute, recording every op of the batch. The store runs a copy
    // of `batch`, so the caller may still read its ops against the results.
    Results Execute(Store* store, const Batch& batch);

    // Store::Submit, recording every op when the completion runs (the values
    // are copied into the history there), then calling `done` (may be empty)
    // with the results.
    void Submit(Store* store, Batch batch, Store::Completion done);

    // For stores reached some other way (e.g. through a server): take an
    // invocation tick, run the batch, then Record it with a response tick.
    uint64_t Invoke() { return recorder_->Tick(); }
    void Record(const Batch& batch, const Results& results, uint64_t invoke);

   private:
    friend class HistoryRecorder;
    Client(HistoryRecorder* recorder, uint32_t id) : recorder_(recorder), id_(id) {}

    // Event templates for `batch` (no results yet) under a fresh Submit number.
    std::vector<Event> Describe(const Batch& batch, uint64_t invoke);
    void Complete(std::vector<Event>&& events, const Results& results);

    HistoryRecorder* const recorder_;
    const uint32_t id_;
    uint64_t submits_ = 0;  // Only touched by the submitting thread.
    std::mutex mu_;
    std::vector<Event> events_;  // Guarded by mu_.
  };

  HistoryRecorder() = default;
  HistoryRecorder(const HistoryRecorder&) = delete;
  HistoryRecorder& operator=(const HistoryRecorder&) = delete;

  // A new client with the next id (0, 1, ...). Thread-safe. The pointer stays
  // valid for the recorder's lifetime.
  Client* NewClient();

  // All events recorded so far, merged. Call when no recording is in flight
  // (after joining the client threads and draining their completions).
  std::vector<Event> History() const;

  // The next tick of the logical clock. Thread-safe.
  uint64_t Tick() { return clock_.fetch_add(1, std::memory_order_seq_cst) + 1; }

 private:
  std::atomic<uint64_t> clock_{0};
  std::atomic<uint64_t> batches_{0};  // Global batch numbers for explanations.
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Client>> clients_;  // Guarded by mu_.
};

}  // namespace kvcg::lincheck
