// Snapshot kernels of the window table (window_types.h): the fixed8
// layout's entries copied out for Store::OpenSnapshot and for Scan steps,
// the window table's counterparts of SnapshotCount / SnapshotDump
// (snapshot_kernels.h), with the same totals (SnapshotTotals) and the same
// image: entry after entry, in no particular order, each 16 bytes — the key
// word, then the value word, as stored.
//
// Two passes over windows [begin, end), run when nothing else writes the
// table (the pipeline drains its in-flight batches first and launches none
// until both are done), so both passes see the same table:
//   1. WindowSnapshotCount: how many entries and how many image bytes;
//   2. WindowSnapshotDump: every entry into an image of that size, which the
//      caller allocates in between (mapped host memory, as for L-Slab).
// An entry is a slot whose key word is neither kEmptyKey (never used) nor
// kTombKey (deleted), or a sentinel key present in the side table
// (`special`). fixed8 keeps no expiry, so nothing is left out for age.
//
// Ranges and the sentinel keys. A range is windows [begin, end), both
// clamped to W. The two sentinel key values (kEmptyKey, kTombKey) are in no
// window; they belong to the range that contains window 0 (begin == 0 and
// end > 0 after clamping) and to no other. So any set of ranges that
// partitions [0, W) lists every entry of the table exactly once.
//
// The SCAN contract this enables. While the window count W is fixed, an
// entry never moves between windows: an insert claims a slot once, an
// overwrite writes the value word in place, a delete turns the key word into
// a tombstone, and nothing else writes a slot (window_types.h). So a cursor
// that is a window index — "windows [0, cursor) are done", each step a
// WindowRange [cursor, next) — keeps Redis's SCAN guarantee: a key present
// from the start to the end of a full iteration stays in one window
// throughout and is returned exactly once, the sentinel keys in the step
// that covers window 0 (the first); a key inserted or deleted meanwhile may
// or may not be returned, and one deleted and inserted again may land in
// another window and be returned twice. Across a rebuild into more windows
// (window_space.h) every entry moves, so the store's cursor carries the
// table's rebuild generation beside the window index (pipeline.h,
// kScanWindowBits), and a step whose cursor is from an older generation
// reads the host copy of that generation's windows that the rebuild kept
// (WindowSpace::ScanImage), or starts over at window 0 when none is kept
// (duplicates, nothing missed).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "store/gpu/snapshot_kernels.h"
#include "store/gpu/window_types.h"

namespace kvcg::store::gpu {

// Windows [begin, end) of a window table, each clamped to its window count
// W; the range that contains window 0 also holds the two sentinel keys.
struct WindowRange {
  uint64_t begin;
  uint64_t end;
};

// Zeroes *totals (device memory), then counts the range's entries into
// totals->entries and their image bytes (16 each) into totals->bytes.
// Enqueued on `stream`; returns the first error of enqueueing it. Nothing
// may write the table until it completes.
cudaError_t WindowSnapshotCount(const WindowTableView& table, WindowRange range,
                                SnapshotTotals* totals, cudaStream_t stream);

// Writes every entry of the range as (key word, value word) into `image`
// (`image_bytes` bytes, 8-byte aligned, device-accessible: mapped host
// memory, or device memory), taking its place from totals->cursor and
// counting it in totals->dumped. Entries are placed a warp's worth at a
// time; a warp's run that would pass image_bytes is not written at all and
// sets totals->overflow instead (its entries still count in dumped, and the
// cursor still advances past them), so nothing is ever written at or past
// image + image_bytes. Run after WindowSnapshotCount on the same totals
// (cursor, dumped and overflow start at 0). Enqueued on `stream`; returns
// the first error of enqueueing it. Nothing may write the table until it
// completes.
cudaError_t WindowSnapshotDump(const WindowTableView& table, WindowRange range, char* image,
                               uint64_t image_bytes, SnapshotTotals* totals, cudaStream_t stream);

}  // namespace kvcg::store::gpu
