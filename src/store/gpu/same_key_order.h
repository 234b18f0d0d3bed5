// SameKeyOrder: numbers the operations of one aggregated batch that share a
// key, so the kernel can run them in batch order (DESIGN.md §2).
//
// The kernel runs a batch's ops in parallel; two ops on one key must still
// take effect in batch order. For every key that occurs more than once the
// batch gets a group id (1, 2, ...); each op of the group gets `need`, the
// number of the group's ops that must be done before it starts:
//   a write (PUT, DELETE, CAS) waits for every earlier op of its key
//   (need = its rank in the group);
//   a GET waits only for the last earlier write (need = that write's rank + 1,
//   0 if none), so runs of GETs on a hot key still read in parallel.
// Waiting on a count is exact because every op ranked after a write waits for
// that write, so "need ops done" cannot be satisfied by later ops.
// Keys that occur once get group 0 and never wait.
//
// Not thread-safe; one instance per orchestrator, reused across batches
// (a generation number makes reuse O(1) instead of clearing the table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvcg::store::gpu {

class SameKeyOrder {
 public:
  // Starts a batch of at most `n` ops.
  void Begin(size_t n);

  // Adds op `index` (0, 1, 2, ... in batch order). `slot_hash` picks the
  // table slot (must be equal for equal keys); `same(j)` says whether op j
  // (an earlier op with the same slot_hash) has the same key. Writes the op's
  // group/need; may set the group of an earlier op (the key's first op),
  // so both output arrays must stay valid for the whole batch.
  template <typename Same>
  void Add(uint32_t index, uint64_t slot_hash, bool writer, Same&& same, uint32_t* group,
           uint32_t* need);

  // Groups assigned so far in this batch (the largest group id).
  uint32_t groups() const { return groups_; }

 private:
  // 16-byte slots keep the table cache-resident; the per-key ordering state
  // lives in keys_ and is only created for a key's second op.
  struct Slot {
    uint32_t gen;
    uint32_t first;  // first op of the key
    uint32_t tag;    // high 32 bits of the slot hash (cheap filter)
    uint32_t info;   // 0, or 1 + index into keys_
  };
  struct KeyState {
    uint32_t group;
    uint32_t count;        // ops so far
    uint32_t last_write1;  // rank of the last write + 1; 0 = none
  };
  std::vector<Slot> slots_;
  std::vector<KeyState> keys_;
  uint64_t mask_ = 0;
  uint32_t gen_ = 0;
  uint32_t groups_ = 0;
};

inline uint64_t MixSlot(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

template <typename Same>
void SameKeyOrder::Add(uint32_t index, uint64_t slot_hash, bool writer, Same&& same,
                       uint32_t* group, uint32_t* need) {
  const uint64_t mixed = MixSlot(slot_hash);
  const uint32_t tag = uint32_t(mixed >> 32);
  uint64_t s = mixed & mask_;
  group[index] = 0;
  need[index] = 0;
  while (true) {
    Slot& slot = slots_[s];
    if (slot.gen != gen_) {
      slot = Slot{gen_, index, tag, writer ? 1u : 0u};  // info bit 0 here: first op writes
      return;
    }
    if (slot.tag == tag && same(slot.first)) {
      if ((slot.info >> 1) == 0) {
        const bool first_writes = slot.info & 1;
        keys_.push_back(KeyState{++groups_, 1, first_writes ? 1u : 0u});
        slot.info = uint32_t(keys_.size()) << 1;
        group[slot.first] = groups_;
      }
      KeyState& k = keys_[(slot.info >> 1) - 1];
      const uint32_t rank = k.count++;
      group[index] = k.group;
      need[index] = writer ? rank : k.last_write1;
      if (writer) k.last_write1 = rank + 1;
      return;
    }
    s = (s + 1) & mask_;
  }
}

}  // namespace kvcg::store::gpu
