// Active expiry on the GPU: one sweep kernel over the whole L-Slab table
// that unlinks every entry whose expire-at is at or before `now`
// (Store::ReclaimExpired, Config::active_expiry_hz; kvcg/batch.h, Expiry).
//
// Cost. A warp walks each bucket's chain; per slab it reads the meta word,
// and only for a slab with the volatile hint (lslab_types.h) the record
// pointers and each record's expire-at word. A table without TTLs costs one
// 32-byte sector per slab (~8 MB per 1M buckets); a fully volatile table
// costs its slab value halves plus one sector per record — HBM-bound, a few
// ms for 100M keys. The hint of a slab left with no volatile key is cleared
// on the way, so later sweeps skip it.
//
// Memory. Unlinked records (device) and value blobs (host) are the host's
// to free (device_heaps.h): the kernel lists each one in `list`, page-locked
// host memory it writes over the bus. An expired entry that does not fit the
// list is left in place (still absent to every op: lazy expiry) and
// `more` is set; the caller sweeps again after freeing.
//
// Thread-safety: the caller guarantees that nothing else touches the table
// while the kernel runs (the pipeline runs it at a point where every earlier
// ARB has completed and no later one has started, pipeline_expiry.cc): the
// kernel takes no bucket locks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {

// Device-side totals of one sweep (device memory, 64 bytes).
struct SweepTotals {
  unsigned long long removed;  // entries unlinked
  unsigned long long listed;   // list entries handed out (may pass the capacity; empty ones have rec 0)
  unsigned long long more;     // nonzero: an expired entry did not fit the list
  double ttl_sum;              // sum of remaining ms of the volatile keys kept (a double: an
                               // expire-at may be 2^63 ms away, a u64 sum would overflow)
  unsigned long long ttl_n;    // how many those were
  unsigned long long slabs;    // slabs visited
  unsigned long long hinted;   // of which had the volatile hint
  unsigned long long pad;
};
static_assert(sizeof(SweepTotals) == 64);

// One unlinked entry: its key record (device) and what it held.
struct Reclaimed {
  uint64_t rec;   // the key record
  uint64_t blob;  // its ValueBlob* (host)
  uint64_t lens;  // key length (low 32) | value length (high 32)
};
static_assert(sizeof(Reclaimed) == 24);

// Zeroes *totals, then sweeps the whole table (general layout) at `now`:
// unlinks expired entries (counters: keys, mem_bytes, volatile_keys down,
// expired_keys up), lists them in `list` (device-accessible, `capacity`
// entries), clears stale volatile hints and sums the kept keys' TTLs.
// Enqueued on `stream`; returns the launch error.
cudaError_t SweepExpired(const TableView& table, uint64_t now, Reclaimed* list, uint64_t capacity,
                         SweepTotals* totals, cudaStream_t stream);

}  // namespace kvcg::store::gpu
