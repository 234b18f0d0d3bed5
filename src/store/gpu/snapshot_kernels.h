// Snapshot kernels: the L-Slab table (the general layout) copied to
// page-locked host memory, for Store::OpenSnapshot (kvcg/snapshot.h) and
// Scan steps. The fixed8 layout's table has its own
// (window_snapshot_kernels.h), with the same totals; its image's entries are
// 16 bytes, the key word and the value word.
//
// Two passes over every bucket's chain (head slab + overflow slabs), run by
// the pipeline at a snapshot marker, when no other kernel touches the table
// (pipeline.h), so both passes see the same table:
//   1. SnapshotCount: how many entries and how many image bytes;
//   2. SnapshotDump: every entry into one host buffer of exactly that size,
//      which the host allocated in between (mapped, so the kernel writes it
//      directly over the bus: no device staging buffer to fit in the budget).
//
// Image layout, entry after entry, in no particular order, 8-byte aligned:
// a copy of each entry's key record (lslab_types.h): word 0 the ValueBlob*
// (host pointer; the value is NOT copied, the reader reads it in place),
// word 1 key length (low 32) | value length (high 32), word 2 the expire-at
// (0 = none), then the key bytes zero-padded to a multiple of 8:
// SnapshotEntryBytes(true, key length) bytes.
// Expired entries (expire-at at or before `now`) are left out, as
// every op already reads them as absent; both passes take the same `now`.
// Thread-safety: the caller guarantees nothing else writes the table while
// the kernels run; the kernels themselves are race-free (see the .cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {

// Device-side totals of one snapshot (device memory, 64 bytes).
struct SnapshotTotals {
  unsigned long long entries;   // count pass: occupied slots
  unsigned long long bytes;     // count pass: image bytes they need
  unsigned long long cursor;    // dump pass: image bytes handed out
  unsigned long long dumped;    // dump pass: entries met
  unsigned long long overflow;  // dump pass: nonzero when an entry did not fit (a bug)
  unsigned long long pad[3];
};

// Bytes one entry takes in the image (general: the L-Slab table's; fixed8:
// the window table's).
KVCG_HD inline uint64_t SnapshotEntryBytes(bool general, uint32_t key_bytes) {
  return general ? KeyRecordBytes(key_bytes) : 16;
}

// Buckets [begin, end) of the table: all of them for a snapshot, a run of
// them for one Scan step (Store::Scan: entries never move between buckets,
// whose number is fixed, so a bucket cursor keeps SCAN's guarantee).
struct BucketRange {
  uint64_t begin;
  uint64_t end;
};

// Snapshot passes run blocks of this many threads (8 warps).
constexpr int kSnapshotBlockThreads = 256;

// Blocks for a grid-stride snapshot pass with `warps` warps' worth of work
// (a warp per unit): enough to cover the device a few times over (8 blocks
// per SM), at least 1; the kernel strides over the rest. Shared by the
// L-Slab passes (here) and the window table's (window_snapshot_kernels.h).
cudaError_t SnapshotBlocks(uint64_t warps, uint32_t* blocks);

// Zeroes *totals, then counts the range's entries and image bytes into it.
// Enqueued on `stream`; returns the first launch error.
cudaError_t SnapshotCount(const TableView& table, BucketRange range, uint64_t now,
                          SnapshotTotals* totals, cudaStream_t stream);

// Writes every entry of the range into `image` (`image_bytes`, device-accessible host
// memory), advancing totals->cursor / dumped; an entry that would pass
// image_bytes is not written and sets totals->overflow. Run after
// SnapshotCount on the same totals (cursor, dumped, overflow start at 0).
cudaError_t SnapshotDump(const TableView& table, BucketRange range, uint64_t now, char* image,
                         uint64_t image_bytes, SnapshotTotals* totals, cudaStream_t stream);

}  // namespace kvcg::store::gpu
