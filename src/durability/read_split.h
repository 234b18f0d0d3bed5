// ReadSplit: a write batch's reads of keys it does not write, run apart from
// its writes, for a wrapped store that runs a batch inside Submit.
//
// Why. With a log, a write batch holds the log lanes of its keys from the
// append of its records until the wrapped store has taken its ops in order
// (log_lanes.h). The CPU backend takes them by running them — the whole
// batch, inside Submit — so a server round of 512 ops with ~25 SETs held a
// third of the 64 lanes while it ran ~490 GETs, and the I/O threads took
// turns: 1.6–2.0 M ops/s instead of 5.0–5.7 M on the H200 host
// (docs/BENCHMARKS.md 4g). Reads of keys the batch does not write need no
// lane: nothing is logged for them, and no write of this batch has to come
// before or after them (same-key order is all a batch promises, DESIGN.md
// §2). So such a batch is split in two: the ops on a key that some write of
// the batch touches — in batch order, that key's reads too — run under the
// lanes; the others run first, outside them. One part is the original batch
// with the other part's ops masked (Batch::SetNoop, in place); the other is
// a copy of those ops, whichever copies fewer bytes (a round of small SETs
// copies its writes; one GET next to large SETs copies the GET). The two
// Results meet again in the original's (Results::Replace, or a rebuilt
// Results when a column is missing).
//
// Only over the plain CPU store (mode canonical): its Submit runs the batch
// and completes on the calling thread, so both parts are done, in order,
// when Submit returns, and it gives no early answers to keep. A store whose
// Submit only queues (the GPU backend) holds the lanes for an enqueue; the
// engine may park a batch or answer it on another thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "kvcg/results.h"
#include "kvcg/store.h"

namespace kvcg::durability {

// The ops of `batch` on keys that one of its writes (PUT, DELETE, CAS,
// EXPIRE) touches, ascending, into *written (cleared first). Keys are
// grouped by `hash` and compared by their bytes.
void OpsOnWrittenKeys(const Batch& batch, HashFunction hash, std::vector<uint32_t>* written);

// How a write batch splits: `copied`, ascending, are the ops of the part
// that is copied — whichever has fewer key, value and expected bytes
// (`bytes`) — and `copies_written` says whether that part is the ops on
// written keys (they run under the lanes) or the other ops (they run first,
// outside them). False, leaving *plan unset, when there is nothing to run
// outside the lanes (every op off the written keys is a no-op).
struct ReadSplitPlan {
  std::vector<uint32_t> copied;
  bool copies_written = false;
  uint64_t bytes = 0;
};
bool PlanReadSplit(const Batch& batch, HashFunction hash, ReadSplitPlan* plan);

// Where the two parts' answers meet. The base part (the original batch, the
// copied ops masked) and the copy (op k = original op copied[k]) each hand
// their Results to Arrive, on any thread, in any order; the second arrival
// answers `done` with the original batch's Results, once, and deletes the
// join.
class SplitJoin {
 public:
  SplitJoin(std::vector<uint32_t> copied, Store::Completion done)
      : copied_(std::move(copied)), done_(std::move(done)) {}
  void ArriveBase(Results&& r) { Arrive(&base_, std::move(r)); }
  void ArriveCopy(Results&& r) { Arrive(&copy_, std::move(r)); }

  // The merge on its own (tests): base's results with op copied[k]
  // answered by copy[k].
  static Results Merge(Results base, Results copy, const std::vector<uint32_t>& copied);

 private:
  void Arrive(Results* slot, Results&& r);

  const std::vector<uint32_t> copied_;
  Store::Completion done_;
  Results base_, copy_;
  std::atomic<int> left_{2};
};

}  // namespace kvcg::durability
