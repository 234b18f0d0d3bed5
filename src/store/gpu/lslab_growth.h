// Growing the L-Slab table (general layout): its bucket array is rebuilt
// with 2^s times as many buckets and every entry moves to its new bucket.
//
// Why: the bucket count was fixed at Open (expected_keys / 16), so a store
// that held more keys than the hint got longer chains instead of more
// buckets — at 100 M keys on the default 1 M hint, ~1,500 keys per bucket
// and a GET walked ~25 slabs (the server's 100 M-key rows of
// docs/BENCHMARKS.md 4a). A server cannot know its key count up front, so
// the table grows by itself, as the fixed8 window table does.
//
// How (GpuStore::GrowSlabTable, lslab_growth.cc, on the pipeline thread
// with nothing in flight): BucketOf takes the top bits of the mixed hash,
// so old bucket b becomes new buckets [b << s, (b + 1) << s). The kernels
// below (1) count the occupied slots, (2) copy every entry (hash, key
// record, access byte, the volatile hint of its slab) into flat columns,
// (3) count the entries of every new bucket, from which the host scans the
// overflow slabs each new chain needs; then, with the slab pool reset,
// (4) write every new chain's meta words (its slabs are laid out in order:
// the head, then its overflow slabs contiguously from the pool) and (5)
// place every entry in its chain. No entry's key record or value moves, so
// results, write plans and snapshots that point at them are unaffected.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {

// The flat copy of the table's entries (device memory, n of each).
struct GrowEntries {
  uint64_t* hash;     // the slot's key word (the key's 64-bit hash)
  uint64_t* record;   // the slot's value word (key record address), bit 0:
                      // its slab had the volatile hint (records are
                      // 16-byte aligned, so the bit is free)
  uint8_t* access;    // the slot's access byte
};

// (1) *count (device) := the table's occupied slots.
cudaError_t GrowCountEntries(const TableView& t, unsigned long long* count, cudaStream_t stream);
// (2) Copies them into e (room for `capacity`); *cursor (device) ends at
// the number copied.
cudaError_t GrowGatherEntries(const TableView& t, GrowEntries e, uint64_t capacity,
                              unsigned long long* cursor, cudaStream_t stream);
// (3) counts[b] (zeroed here, 2^new_bits + 1 of them) := entries whose new
// bucket is b.
cudaError_t GrowCountNewBuckets(GrowEntries e, uint64_t n, uint32_t new_bits, uint32_t* counts,
                                cudaStream_t stream);
// first[b] := the overflow slabs the chains of new buckets 0..b-1 need (31
// entries a slab, the head included), for b = 0 .. 2^new_bits, so
// first[2^new_bits] is their total. overflow: scratch of 2^new_bits + 1;
// temp: cub's scratch, GrowScanTempBytes(new_bits) bytes.
size_t GrowScanTempBytes(uint32_t new_bits);
cudaError_t GrowScanOverflow(const uint32_t* counts, uint32_t new_bits, uint32_t* overflow,
                             uint32_t* first, void* temp, size_t temp_bytes, cudaStream_t stream);
// (4) Every new chain's meta words: `t` is the new table (its head array
// zeroed); bucket b's overflow slabs are pool indices first_pool +
// first[b] ... (first: the exclusive scan of overflow).
cudaError_t GrowLinkChains(const TableView& t, const uint32_t* counts, const uint32_t* first,
                           uint32_t first_pool, cudaStream_t stream);
// (5) Places every entry; consumes counts (each new bucket's counter runs
// down to 0).
cudaError_t GrowPlaceEntries(const TableView& t, GrowEntries e, uint64_t n, uint32_t* counts,
                             const uint32_t* first, uint32_t first_pool, cudaStream_t stream);

}  // namespace kvcg::store::gpu
