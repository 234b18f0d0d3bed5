// WritePlan: the memory a general-layout batch's writes need, taken on the
// thread that submits the batch (GpuStore::Submit), not on the pipeline's.
//
// Every PUT/CAS that passes the input check gets a value blob and a key
// record (device_heaps.h); every write op (PUT, CAS, DELETE, EXPIRE) gets a
// WriteRef, the pipeline's note for its frees when the batch completes.
// Why here: on the pipeline thread this pass cost ~200 ns per PUT on the
// H100 host (2026-11-25: the batch's columns are in the submitter's cache,
// not the pipeline's, plus an allocator call per op), which bounded general
// 50/50 at 9 M ops/s — below the CPU backend. On the submitting threads it
// runs in parallel on data still in their cache, and the heaps are locked
// once per size class per batch.
//
// A plan holds memory of one heap generation (Clear() starts new heaps,
// Pipeline::generation). The pipeline uses a plan whose generation is still
// current and re-plans on its own thread otherwise, and for a batch whose
// submitter could not plan it: the heaps would have needed a CUDA
// allocation (only the pipeline thread makes those), or a value is big.
#pragma once

#include <cstdint>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "store/gpu/arb_kernels.h"
#include "store/gpu/device_heaps.h"

namespace kvcg::store::gpu {

// One write op of a batch.
struct WriteRef {
  uint32_t op;     // index in the batch
  uint32_t klen;
  uint32_t vlen;   // PUT/CAS: the new value's size
  OpType type;
  bool stores;     // a PUT/CAS that passed the input check
  uint64_t* blob;  // PUT/CAS: the new value (null: none, or bad input)
  uint64_t rec;    // PUT/CAS: the new key record (0: none)
};

// The pipeline copies a plan's `puts` and `write_ops` into the ARB as they
// are (one memcpy each; the device adds the batch's first op), and reads
// `writes` in place at completion: it touches no plan entry one by one,
// because each would be a read of a line the submitting core wrote (~37 ns
// per PUT on the H100 host when it copied them, 2026-11-27).
struct WritePlan {
  std::vector<WriteRef> writes;  // op: index in the batch
  std::vector<uint32_t> write_ops;  // writes[j].op, as the device reads them
  std::vector<PutEntry> puts;  // op: index in the batch; blobs already filled
  uint64_t storing = 0;     // PUT/CAS ops that passed the input check
  uint64_t grow = 0;        // their bytes as eviction charges them: key + value + overhead
  uint64_t max_charge = 0;  // the largest of those charges
  uint64_t generation = 0;  // of the heaps the memory came from
  bool ready = false;       // built and not yet handed to an ARB
  bool placed = false;      // handed to an ARB, which owns its memory until FreeWrites
};

// Builds `plan` for the general-layout batch `b` with memory from the
// heaps. With `may_grow` (the pipeline thread) it always completes: a PUT
// for which no memory can be had gets a null blob and is answered
// kCapacityExhausted by the kernel. Without it (any thread) it returns
// false, holding nothing, when the heaps would need a CUDA allocation.
// Does not set plan->generation.
bool PlanWrites(const Batch& b, const Config& config, uint64_t entry_overhead, ValueHeap* values,
                KeyRecordHeap* records, bool may_grow, WritePlan* plan);

// The plan's charges counting only writes of at most `limit` bytes (a write
// larger than the eviction limit makes no room, pipeline_eviction.cc).
uint64_t GrowWithin(const WritePlan& plan, uint64_t entry_overhead, uint64_t limit);

}  // namespace kvcg::store::gpu
