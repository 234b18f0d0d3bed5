// The window table: the fixed8 layout's open-addressing organisation
// (issue 16), shared by the host (g++) and its kernel (nvcc).
//
// Why not L-Slab for fixed8: an L-Slab GET reads a bucket's lock word, then
// its 256-byte key half, then a value word, then validates — four dependent
// round trips and 288+ bytes — and its slab-read bound (7.1 G/s on the H100)
// is below what an 8-byte table can do. Here a GET reads one 64-byte window
// in the common case, takes no lock and validates nothing.
//
// Layout. W windows of 64 bytes, W a prime (so that every probe step below
// visits every window). A window holds 4 slots of (key word, value word),
// read by a tile of 4 lanes, 16 bytes each, in one coalesced access. A
// slot's key word is the key, or kEmptyKey (never used) or kTombKey (a
// deleted key's slot, reusable). A key's probe visits windows home, home +
// step, home + 2 step, ... (mod W) — double hashing over windows: both come
// from the key's hash — up to the first window with an EMPTY slot. Why not
// linear probing over windows: at load 0.8 its clusters made the longest
// probe of 2^27 keys 103 windows (H100, 2026-11-24), and a batch ends only
// when its longest probe does; double hashing has no primary clustering.
// The two sentinel key values are still storable keys: they live in a side
// table (`special`: present flag and value for each) and never in a slot.
//
// Concurrency, and why no lock is needed. The pipeline never lets an op run
// beside a write on its key: inside a batch same-key ops wait for each
// other (ArbView ctl groups), and a batch's kernel starts after the
// previous one ends, except that kernels of batches of GETs only (which
// write nothing) run beside each other (Pipeline::WaitForTableKernels).
// So an op on key K is alone on K's slot, or beside other reads of it;
// other keys' ops change other slots only, and only in three ways: claim a free slot (atomicCAS on its
// key word), overwrite their own value word, turn their own key word into a
// tombstone. A slot never becomes EMPTY again (only a rebuild or a clear,
// with nothing in flight, writes EMPTY), so K's path from its home window to
// its slot, once free of EMPTY slots, stays so: a GET that scans to the first
// EMPTY slot finds K exactly when K is present, with one read per window and
// no validation. Writers claim with a CAS (two keys may race for one free
// slot; the loser moves on) and otherwise store plainly.
//
// Capacity. `used` counts slots ever claimed from EMPTY (live keys plus
// tombstones); a batch may claim at most its allowance (ArbView's
// slab_allowance) of EMPTY slots, which its owner keeps below the table's
// load limit (kMaxWindowLoad), so every probe meets an EMPTY slot. An insert
// past the allowance answers kResRetryNoSlab (retry after the table grows),
// past max_keys / max_mem kResCapacity. Reusing a tombstone costs no
// allowance.
//
// Access bytes (eviction, as lslab_types.h): one per slot, 4 W bytes after
// which the two sentinel keys' bytes follow; allocated only while a policy
// keeps them (null otherwise, and the access mode is then kAccessNone).
#pragma once

#include <cstdint>

#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {

constexpr uint32_t kWindowSlots = 4;
constexpr uint32_t kWindowWords = 2 * kWindowSlots;  // 64 bytes
constexpr uint64_t kWindowBytes = 8 * kWindowWords;
constexpr uint64_t kEmptyKey = ~0ull;
constexpr uint64_t kTombKey = ~0ull - 1;
// Slots in use (live + tombstones) / slots, at most: linear probing's
// expected probe length grows fast past it.
constexpr double kMaxWindowLoad = 0.8;

struct WindowTableView {
  uint64_t* slots;            // windows * kWindowWords words
  uint64_t windows;           // W, a prime
  uint8_t* access;            // 4 W + 2 access bytes, or null (access_mode none)
  uint64_t* special;          // [present, value] for kEmptyKey, then for kTombKey
  unsigned long long* used;   // slots claimed from EMPTY
  DeviceCounters* counters;   // keys, mem_bytes, max_keys, max_mem (the rest unused)
  uint64_t entry_overhead;    // bytes charged per key beyond its 16
  uint32_t access_mode;       // AccessMode
  uint32_t generation;        // LRU generation
};

KVCG_HD inline uint64_t MulHi64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return uint64_t((unsigned __int128)a * b >> 64);
#endif
}

// The window a key's probe starts at, and its step (1 .. W - 1; 0 when W
// is 1): two independent multiply-highs of the mixed hash.
KVCG_HD inline uint64_t HomeWindow(uint64_t hash, uint64_t windows) {
  return MulHi64(hash * 0x9E3779B97F4A7C15ull, windows);
}
KVCG_HD inline uint64_t ProbeStep(uint64_t hash, uint64_t windows) {
  return windows <= 1 ? 0 : 1 + MulHi64(hash * 0xC2B2AE3D27D4EB4Full, windows - 1);
}
// The window after w on a probe of step `step` (w, step < windows), on
// 64-bit window indices or the kernel's 32-bit ones (WindowTable keeps W
// below 2^32); written so that w + step cannot overflow the index type.
template <typename Index>
KVCG_HD inline Index NextWindow(Index w, Index step, Index windows) {
  return w >= windows - step ? w - (windows - step) : w + step;
}

// Which of the side table's two entries (`special`; and of the access
// bytes after the slots') holds a sentinel key: 0 kEmptyKey, 1 kTombKey.
KVCG_HD inline uint32_t SentinelEntry(uint64_t key) { return key == kEmptyKey ? 0 : 1; }

// The smallest prime >= n (n >= 2): a table's window count.
inline uint64_t NextPrime(uint64_t n) {
  if (n <= 2) return 2;
  for (uint64_t c = n | 1;; c += 2) {
    bool prime = true;
    for (uint64_t d = 3; d * d <= c; d += 2) {
      if (c % d == 0) {
        prime = false;
        break;
      }
    }
    if (prime) return c;
  }
}

// Windows for `keys` keys at load `load`: a prime (at least 2).
inline uint64_t WindowsFor(uint64_t keys, double load) {
  const uint64_t slots = uint64_t(double(keys) / load) + 1;
  return NextPrime((slots + kWindowSlots - 1) / kWindowSlots);
}

}  // namespace kvcg::store::gpu
