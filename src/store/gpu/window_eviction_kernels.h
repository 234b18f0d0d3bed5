// The window table's eviction (cache mode for the fixed8 layout once it
// lives in a window table, window_types.h): the same pass as the L-Slab
// table's (eviction_kernels.h — histogram by score, the host's cutoff
// with ChooseCutoff, then the chosen keys go) and the OBJECT FREQ lookup,
// over the window table's slots and its two sentinel keys. Plain C++ so
// host code can call it.
//
// Same scores and semantics as eviction_kernels.h: LRU, LFU, random (both
// tables rate a key with RateKey, eviction_rating.cuh). fixed8 keys have
// no expire-at, so volatile-only policies find no candidate (and
// volatile-ttl's score never applies) and nothing counts as expired;
// nothing is listed for the host (fixed8 frees nothing there).
//
// Every call must run with nothing else in flight on the table (the
// pipeline drains first); stream order on `stream` is all they need. A
// table without access bytes (view.access null) can be ranked only by
// scores that read none (random): LRU / LFU passes on it answer
// cudaErrorInvalidValue.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "store/gpu/eviction_kernels.h"
#include "store/gpu/window_types.h"

namespace kvcg::store::gpu {

// Zeroes *hist (device memory), then counts every candidate — the live
// slots and the present sentinel keys — by score: keys and charged bytes
// (16 + entry_overhead each) per bin. p.cutoff and p.share are unused.
cudaError_t WindowEvictionHistogram(const WindowTableView& table, const EvictParams& p,
                                    EvictHistogram* hist, cudaStream_t stream);

// Zeroes *totals (device memory), then evicts the candidates the cutoff
// chooses (score below p.cutoff, or equal to it with the 16-bit key hash
// below p.share: as EvictChosen): a slot's key word becomes kTombKey (its
// slot stays counted in `used`, reusable by a later insert at no
// allowance), a sentinel key's present flag is cleared. The counters
// (keys, mem_bytes) drop by what went, totals->evicted and ->freed say
// how much (expired, listed and more stay 0). The keys kept age as in
// EvictChosen: LRU ages saturate at kMaxLruAge, LFU counters decay by
// p.lfu_decay. Pass the p the histogram was taken with (and the same
// generation in the view) so that the cutoff selects what it counted.
cudaError_t WindowEvictChosen(const WindowTableView& table, const EvictParams& p,
                              EvictTotals* totals, cudaStream_t stream);

// OBJECT FREQ (Store::KeyAccess): *out (device) := 0 when `key` is absent,
// else 1 << 32 | its access byte (0 in a table that keeps none), without
// touching it; the view's access_mode and generation are not read. `hash`:
// the key's hash, as its ops carry it (the probe starts from it; the
// sentinel keys are looked up in the side table).
cudaError_t WindowLookupAccessByte(const WindowTableView& table, uint64_t hash, uint64_t key,
                                   unsigned long long* out, cudaStream_t stream);

}  // namespace kvcg::store::gpu
