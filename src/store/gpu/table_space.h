// TableSpace: what the pipeline reserves for a batch before it launches,
// so that a batch that reserved fully never runs out of room in the table
// (one slot, or slab, per op that may insert). Two kinds: the L-Slab
// table's slab pool (slab_pool.h, general layout) and the window table's
// EMPTY slots under its load limit (window_space.h, fixed8).
//
// The pipeline calls these from its own thread: Reserve before a launch
// while other batches are in flight; ReserveAvailable only with nothing in
// flight (a batch that could not reserve runs alone, and the table may then
// grow in ways that cannot overlap a kernel); Release when a batch's kernel
// is done, with how many it took (its allowance left over tells).
#pragma once

#include <cstdint>

namespace kvcg::store::gpu {

class TableSpace {
 public:
  virtual ~TableSpace() = default;
  // Reserves `n`, growing if that can be done beside running kernels. False
  // (nothing reserved) when it cannot.
  virtual bool Reserve(uint64_t n) = 0;
  // Nothing in flight: grows toward `want` as far as the budget allows,
  // then reserves whatever is free (possibly 0), returning it. *exhausted:
  // not a single unit is left even counting reservations of batches still
  // to be released (only then is the table really full).
  virtual uint64_t ReserveAvailable(uint64_t want, bool* exhausted) = 0;
  // A batch finished: it had reserved `reserved` and took `taken` of them.
  virtual void Release(uint64_t reserved, uint64_t taken) = 0;
};

}  // namespace kvcg::store::gpu
