// L-Slab data layout shared by the host (g++) and the kernels (nvcc). The
// L-Slab table holds the general layout; fixed8 keeps its keys in the window
// table (window_types.h), whose batches take the same ARB columns (ArbView,
// below) and counters.
//
// Table. B buckets (a power of two); bucket b's head slab is slab b of one
// cudaMalloc'd array, overflow slabs come from the slab pool (below). A slab
// is 64 eight-byte words = 512 bytes, the paper's layout:
//   words  0..30  keys  (the key's 64-bit hash)
//   word   31     meta: next slab (pool index, high 32 bits; 0 = none) and
//                 the occupancy bitmap of slots 0..30 (low 31 bits). A bitmap
//                 instead of an "empty key" sentinel lets every hash value
//                 be stored.
//   words 32..62  values (a device pointer to the key record)
//   word  63      head slab only: the bucket's readers–writer spin lock (low
//                 32 bits), next to the data it guards.
// A probe reads the key half (keys + meta: one coalesced 256-byte read); the
// one value word needed is read after a match.
//
// Access bytes (eviction, docs/EVICTION.md): one byte per slot of every
// slab, 32 bytes per slab (slot 31's byte unused), kept outside the slabs so
// a probe's 256-byte key read stays one transaction: the head slabs' bytes
// follow the bucket array (bucket b: byte 32 * b + slot), a pool chunk's
// follow its slabs. Under an LRU policy a byte is the eviction generation of
// the key's last access, under LFU Redis's logarithmic access counter; with
// no evicting policy the kernel does not write them.
//
// Slab pool. Pool slab indices are 32 bits: chunk = idx >> kPoolChunkShift,
// slot = idx & mask; chunk pointers live in a device table. The device takes
// slabs with one atomicAdd on a bump counter (slabs are never freed one by
// one: an emptied slot is reused by later inserts into its bucket; Clear()
// resets the pool). The host grows the pool by adding zeroed chunks and then
// raising the capacity word.
//
// General layout key record (device memory, host-allocated, 16-byte aligned):
//   word 0: value handle = host pointer to a ValueBlob (pinned, mapped)
//   word 1: key length (low 32) | value length (high 32)
//   word 2: expire-at (kvcg/batch.h: ms since the epoch; 0 = none)
//   words 3..: key bytes, zero-padded to a multiple of 8
//   then 8 words: a copy of the value when it is at most kValueCopyBytes
//     long (garbage otherwise). Why: a large ARB's GET copies it into the
//     ARB's output, so its consumer reads the value from the results it
//     was handed, in order, instead of at a random line of the host value
//     heap (~20 ns per GET on the H100 host, docs/BENCHMARKS.md 2m). PUT
//     and CAS write it when they store (reading the new blob over PCIe);
//     the blob stays the value of record (snapshots, CAS compares, larger
//     values). KeyRecordBytes is the record without the copy (what a
//     snapshot image holds), KeyRecordAllocBytes with it.
// fixed8 stores no expiry (its ops with one are refused before the kernel).
// ValueBlob (pinned host memory, visible to the device through UVA): just
//   the value's bytes, 8-byte aligned, in a power-of-two class of at least 16
//   bytes (the tail of the last word is garbage: every compare masks it). Its
//   length lives in the key record (word 1), so the blob carries none: a
//   64-byte value is one cache line (BENCHMARKS 2j).
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define KVCG_HD __host__ __device__
#else
#define KVCG_HD
#endif

namespace kvcg::store::gpu {

constexpr uint32_t kSlabWords = 64;
constexpr uint32_t kSlotsPerSlab = 31;
constexpr uint32_t kMetaWord = 31;
constexpr uint32_t kLockWord = 63;
constexpr uint64_t kSlabBytes = kSlabWords * 8;
constexpr uint32_t kPoolChunkShift = 16;  // 65536 slabs = 32 MiB per chunk (+ 2 MiB of access bytes)
constexpr uint32_t kPoolChunkSlabs = 1u << kPoolChunkShift;
constexpr uint32_t kMaxPoolChunks = 1u << 15;  // 2^31 slabs = 1 TiB: never the limit
constexpr uint64_t kAccessBytesPerSlab = 32;
constexpr uint64_t kSlabAndAccessBytes = kSlabBytes + kAccessBytesPerSlab;  // device memory per slab
constexpr uint64_t kPoolChunkBytes = uint64_t(kPoolChunkSlabs) * kSlabAndAccessBytes;
constexpr uint64_t kVolatileBit = 1ull << 31;  // meta: the slab's volatile hint
constexpr uint32_t kRecordExpireWord = 2;      // general key record: expire-at
constexpr uint32_t kRecordKeyWord = 3;         // general key record: first key word
constexpr uint32_t kValueCopyBytes = 64;       // general key record: the value copy's size
// value_lens: the slot holds a ValueRef, not the value (= kvcg::
// kSlotHoldsView, kvcg/results.h; pipeline_delivery.cc checks both).
constexpr uint8_t kSlotHoldsView = 0xFF;

// Record bytes of a key of `key_bytes` (general layout), without the value
// copy: the header and the key.
KVCG_HD inline uint64_t KeyRecordBytes(uint32_t key_bytes) {
  return 8ull * kRecordKeyWord + ((uint64_t(key_bytes) + 7) & ~7ull);
}
// The bytes a record takes in device memory: with the value copy.
KVCG_HD inline uint64_t KeyRecordAllocBytes(uint32_t key_bytes) {
  return KeyRecordBytes(key_bytes) + kValueCopyBytes;
}
// The value copy's first word in a record of a key of `key_bytes`.
KVCG_HD inline uint32_t RecordCopyWord(uint32_t key_bytes) {
  return kRecordKeyWord + (key_bytes + 7) / 8;
}

enum OpCode : uint32_t { kOpGet = 0, kOpPut = 1, kOpDelete = 2, kOpCas = 3 };

// ctl word of an ARB op: type (bits 0..1) | flag (bit 2) |
// group (bits 3..31, 0 = the only op on its key in this batch) |
// need (bits 32..63: how many of the group's earlier ops must be done first).
// The flag is expect_absent for kOpCas and "kExpire" for kOpDelete: an
// EXPIRE is a writer that may delete, so it rides on DELETE's type instead
// of taking a third type bit (which would take a bit from the group field).
constexpr uint64_t MakeCtl(uint32_t type, bool expect_absent, uint32_t group, uint32_t need) {
  return uint64_t(type) | (uint64_t(expect_absent) << 2) | (uint64_t(group) << 3) |
         (uint64_t(need) << 32);
}
constexpr uint32_t kMaxGroups = (1u << 29) - 1;
// The group field of a ctl word (0: the only op on its key).
constexpr uint32_t CtlGroup(uint64_t ctl) { return uint32_t(ctl >> 3) & kMaxGroups; }

// Result code byte: low 7 bits the outcome, bit 7 = the op's new value was
// installed (PUT, or a CAS whose condition held).
enum ResCode : uint8_t {
  kResOk = 0,            // found: res_value holds the value (or handle) before the op
  kResNotFound = 1,
  kResCapacity = 2,      // max_keys / max_memory_bytes / no key record: nothing changed
  kResRetryNoSlab = 3,   // the slab pool was empty: nothing changed, retry after growth
  kResRetryPoisoned = 4, // an earlier op on this key in the batch must retry first
};
constexpr uint8_t kResStored = 0x80;

// Device-global counters (one per table, in device memory).
struct DeviceCounters {
  unsigned long long keys;            // stored keys
  unsigned long long mem_bytes;       // charged bytes (key + value + overhead)
  unsigned long long slabs_next;      // bump pointer of the slab pool (index 0 unused)
  unsigned long long slabs_capacity;  // pool indices < this are backed by memory
  unsigned long long max_keys;        // 0 = unlimited
  unsigned long long max_mem;         // 0 = unlimited
  unsigned long long volatile_keys;   // stored keys with an expire-at (general)
  unsigned long long expired_keys;    // reclaimed because expired, since the store opened
};

struct TableView {
  uint64_t* buckets;           // B head slabs
  uint32_t bucket_bits;        // B = 1 << bucket_bits (>= 1)
  uint64_t* const* chunks;     // pool chunk table (device)
  DeviceCounters* counters;
  uint64_t entry_overhead;     // bytes charged per entry beyond key + value
  // Eviction (access bytes above): what a hit or a store writes in the key's
  // access byte, and the LRU generation it writes.
  uint32_t access_mode;        // AccessMode
  uint32_t generation;         // LRU: the current generation (0..255)
};

enum AccessMode : uint32_t { kAccessNone = 0, kAccessLru = 1, kAccessLfu = 2 };
constexpr uint8_t kLfuInitCounter = 5;  // Redis's LFU_INIT_VAL

// One aggregated request batch (ARB) in device memory, structure of arrays.
struct ArbView {
  uint32_t n;
  uint32_t ops_per_warp;    // ops each tile claims at a time; set by LaunchLSlab
  // fixed8, launched ARBs: every op is a GET or runs as a skipped one (the
  // caller knows from its type columns: no op writes); LaunchWindowOps then
  // runs the window table's GET kernel (window_get_kernel.cu). 0: not known
  // to be, the general kernel.
  uint32_t gets_only;
  uint32_t* cursor;         // next op to claim (starts at 0); null: static claims
                            // (arb_ops.cuh StaticClaim), for the resident kernel only
  const uint64_t* hash;     // null: (GET kernel only) each key's hash is Xxh3Fixed8(key)
  const uint64_t* key;      // fixed8: the key; general: arena offset (low 32) | length (high 32)
  const uint64_t* ctl;
  const uint64_t* value;    // fixed8: the value; general: ValueBlob* (PUT/CAS)
  const uint64_t* expected; // fixed8: CAS expected; general: arena offset | length
  const uint64_t* rec;      // general: pre-allocated key record for a PUT/CAS that inserts
  const uint32_t* vlen;     // general: value length (PUT/CAS)
  uint32_t* done;           // per group: ops done (bit 31: an op asked to retry; index 0 unused)
  int* slab_allowance;      // pool slabs this batch may still take (the host reserved them)
  const uint64_t* arena;    // general: key and expected bytes, 8-byte aligned, zero-padded
  // Expiry (general layout). expire: per op, or null when no batch of the
  // ARB carries one (then every op's is kNoExpiry); PUT/CAS: the expire-at
  // to store (kKeepExpiry keeps the key's), EXPIRE: the one asked for (its
  // ExpireCondition travels in vlen, unused by EXPIRE). now: the store's
  // clock at launch; an entry with 0 < expire-at <= now is absent (lazy
  // expiry), and a writer that meets it unlinks it first.
  const uint64_t* expire;
  uint64_t now;
  uint64_t* out_expires;    // per op, or null: the expire-at of the value found
  const uint8_t* skip;      // per op, or null: nonzero = the kvcg::Code the op was
                            // answered with already (bad input); it only takes part
                            // in its group's order
  // Results in kvcg's form, written by the kernel itself (the pipeline); when
  // out_codes is null the raw res_* columns below are written instead (the
  // kernel benchmark).
  uint8_t* out_codes;       // kvcg::Code byte per op (0xFE/0xFD: retry)
  void* out_values;         // general: ValueRef {data, size} per op; fixed8: the value
  uint64_t* out_writes;     // general: 3 words per write op (old blob, old record,
                            // raw code | old length << 32)
  const uint32_t* wslot;    // general: per op, its index in out_writes or ~0
  // General, large ARBs: a found GET's value of at most kValueCopyBytes is
  // copied from its record into slot i (kValueCopyBytes each) of this output
  // area and value_lens[i] is its length; any other found op's slot holds
  // its view (ValueRef) and value_lens[i] is kSlotHoldsView. Such an ARB has
  // no view column (out_values unused): 66 bytes per op to the host instead
  // of 81. Null: views in out_values point at the blobs (small ARBs, whose
  // few values are not worth 64 bytes per op of output; the benchmark).
  uint64_t* value_slots;
  uint8_t* value_lens;
  uint32_t* retry_flag;     // set when an op must retry
  // Small ARBs: the kernel hands its results to the host itself. The last
  // block to finish copies publish_bytes from publish_src (the output
  // region, in device memory) to publish (page-locked host memory, mapped),
  // so no copy call follows the kernel (PublishOutputs, arb_ops.cuh).
  // publish null: the pipeline copies (large ARBs), or nothing (benchmark).
  char* publish;
  const char* publish_src;
  uint32_t publish_bytes;
  uint32_t* blocks_done;    // with publish: blocks finished (zeroed by the prepare kernel)
  uint8_t* res_code;
  uint64_t* res_value;      // fixed8: value; general: ValueBlob* before the op
  uint32_t* res_len;        // general: length of that value (found only)
  uint64_t* res_rec;        // general DELETE: the removed key record (host frees it)
};

// Ops each tile of a table kernel claims at a time, for an ARB of n ops over
// `tiles` tiles: a small batch is spread thin (down to one op per tile) so
// that its latency stays near one op's; a large one gives every tile `max`.
inline uint32_t OpsPerTile(uint32_t n, uint32_t tiles, uint32_t max) {
  const uint32_t per = (n + tiles - 1) / tiles;
  return per < 1 ? 1 : per > max ? max : per;
}

// The hash is mixed again so that weak injected hashes still spread buckets.
KVCG_HD inline uint32_t BucketOf(uint64_t hash, uint32_t bucket_bits) {
  return uint32_t((hash * 0x9E3779B97F4A7C15ull) >> (64 - bucket_bits));
}

}  // namespace kvcg::store::gpu
