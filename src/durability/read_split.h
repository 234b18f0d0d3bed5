// ReadSplit: a write batch's reads of keys it does not write, run apart from
// its writes, for a wrapped store that runs a batch inside Submit.
//
// Why. With a log, a write batch holds the log lanes of its keys from the
// append of its records until the wrapped store has taken its ops in order
// (log_lanes.h). The CPU backend takes them by running them — the whole
// batch, inside Submit — so a server round of 512 ops with ~25 SETs held a
// third of the 64 lanes while it ran ~490 GETs, and the I/O threads took
// turns: the same lanes, held the same way with the log off, cost the CPU
// backend 2.5× before writer_gate.h (docs/BENCHMARKS.md 4f). Reads of keys
// the batch does not write need no lane: nothing is logged for them, and no
// write of this batch has to come before or after them (same-key order is
// all a batch promises, DESIGN.md §2). So such a batch is split: the ops on
// a key that some write of the batch touches — in batch order, that key's
// reads too — are copied to a small batch that runs under the lanes; the
// others run first, outside them, in the original batch with those ops
// masked (Batch::SetNoop, in place). The two Results meet again in the
// original's (Results::Replace, or a rebuilt Results when a column is
// missing).
//
// Not used for a store whose Submit only queues the batch (the GPU backend):
// there the lanes are held for an enqueue, and a second Submit per batch
// would cost more than it saves.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/results.h"
#include "kvcg/store.h"

namespace kvcg::durability {

// The ops of `batch` on keys that one of its writes (PUT, DELETE, CAS,
// EXPIRE) touches, ascending, into *written (cleared first). Keys are
// compared by their bytes.
void OpsOnWrittenKeys(const Batch& batch, std::vector<uint32_t>* written);

// Where the two parts' answers meet. The original batch's part (its
// `written` ops masked) and the written keys' part (op k = original op
// written[k]) each hand their Results to Arrive, on any thread, in any
// order; the second arrival answers `done` with the original batch's
// Results, once.
class SplitJoin {
 public:
  SplitJoin(std::vector<uint32_t> written, Store::Completion done)
      : written_(std::move(written)), done_(std::move(done)) {}
  void ArriveReads(Results&& r) { Arrive(&reads_, std::move(r)); }
  void ArriveWrites(Results&& r) { Arrive(&writes_, std::move(r)); }

  // The merge on its own (tests): the original's results with op written[k]
  // answered by writes[k].
  static Results Merge(Results reads, Results writes, const std::vector<uint32_t>& written);

 private:
  void Arrive(Results* slot, Results&& r);

  const std::vector<uint32_t> written_;
  Store::Completion done_;
  Results reads_, writes_;
  std::atomic<int> left_{2};
};

}  // namespace kvcg::durability
