// Device side of one aggregated request batch (ARB) of the pipeline
// (pipeline.h): everything the host used to do per operation now runs here.
//
// Input. The host uploads each submitted batch's columns (kvcg/batch.h) as
// one *block* of the ARB's input region — either DMA'd straight from the
// batch's page-locked memory or gathered by one memcpy per column — plus a
// segment table (one ArbSegment per submitted batch) and, for the general
// layout, a put list (the value blob and key record the host allocated for
// each op that may store; values live in host memory, device_heaps.h).
//
// Prepare (per op, on the GPU):
//   1. normalize: find the op's segment, read its type and descriptors,
//      check it against the limits (the check every backend applies,
//      store/backends.h CheckOperation), build the L-Slab columns (ArbView),
//      hash the key (XXH3 on the device, equal to kvcg::Xxh3Hash; or the
//      host's hashes when Config::hash is a custom test hash); a kvcg
//      kExpire becomes an L-Slab DELETE with the ctl flag (lslab_types.h),
//      its condition in vlen and its time in the expire column;
//   2. number same-key ops (SameKeyOrder's rule, same_key_order of round 1):
//      a stable sort of (hash, index) puts each hash's ops together in batch
//      order; a segment of equal hashes is one group (ops on different keys
//      with equal hashes are ordered too — harmless, and collisions are
//      rare); op at sorted position p of a group starting at s gets
//      need = p - s (a write waits for all earlier ops) or, for a GET,
//      (last write at or before p) - s + 1 (0 if none).
//   ARBs of up to kMediumArbOps ops do both in one block (arb_prepare.cuh
//   OneBlockPrepare: the ops grouped by hash in a shared-memory table):
//   small ones (<= kSmallArbOps) as one kernel of 256 threads or inside the
//   resident kernel, numbered without a sort (each grouped op counts the
//   ones before it); medium ones as one kernel of 1,024 threads with the
//   table in dynamic shared memory, numbered by a block radix sort of the
//   ops' table slots and a max-scan (SortNumbering). Large
//   ARBs use device-wide cub sort (top 32 bits) and scans, sized for the
//   ARB's size class (ArbPrepareLarge): about a dozen kernel launches and
//   cub calls, which on the H200 host cost the pipeline thread ~80 µs per
//   ARB — the bound of the GPU store at a few thousand ops per ARB (many
//   clients with 512-op batches), hence the medium kernel.
//   Grouping by some of the hash's bits groups a superset of each key's
//   ops: still a correct order, at the price of rare extra waits.
// Results: the L-Slab kernel itself writes them in kvcg's form into the
// ARB's output region (arb_ops.cuh WriteOutputs) — a kvcg::Code byte per
// op, and a ValueRef per op (general: a view of the value blob in host
// memory, so the consumer reads it in place; large ARBs a value slot and a
// length byte instead, ArbView::value_slots) or the 8-byte value (fixed8) —
// plus, per write op, what the host needs to free memory.
#pragma once

#include <cuda_runtime_api.h>
#include <vector_types.h>

#include <cstddef>
#include <cstdint>

namespace kvcg::store::gpu {

constexpr uint32_t kSmallArbOps = 2048;   // 256 threads x 8 items
constexpr uint32_t kMediumArbOps = 8192;  // 1,024 threads x 8 items

// Codes of ops that must be re-run (only in a batch that ran alone on a
// partial slab allowance, slab_pool.h).
constexpr uint8_t kRetryNoSlabCode = 0xFE;
constexpr uint8_t kRetryPoisonedCode = 0xFD;

// One submitted batch inside the ARB. Offsets are bytes from the start of
// the input region; every column starts 64-byte aligned.
struct ArbSegment {
  uint32_t op_begin;  // index of its first op in the ARB
  uint32_t n;
  // General: the index of its first put / write op in the ARB's put list /
  // write-op list, whose entries name ops by their index in the batch.
  uint32_t put_begin;
  uint32_t write_begin;
  // A fixed-width batch (kvcg/batch.h): op i's key is the key_width bytes
  // at key_bytes + i key_width, its value slot value_width bytes at
  // value_bytes + i value_width, and keys, lens, values are not sent.
  // key_width 0: a general batch, described by those three columns.
  uint32_t key_width;
  uint32_t value_width;
  uint64_t keys;       // u64 per op: offset | length << 32 into its key bytes
  uint64_t lens;       // u32 per op: value length
  uint64_t types;      // u8 per op
  uint64_t expected;   // u64 per op, or ~0 when the batch has no CAS
  uint64_t values;     // u64 per op: offset into its value bytes (fixed8 only)
  uint64_t expire;     // u64 per op: expire-at, or ~0 when the batch has no expiry
  uint64_t cond;       // u8 per op: ExpireCondition, or ~0 when the batch has no expiry
  uint64_t key_bytes;  // its key arena
  uint64_t value_bytes;  // its value arena (fixed8 only: general values stay on the host)
};

// General layout: memory the host allocated for op `op` (PUT/CAS).
struct PutEntry {
  uint32_t op;  // index in its batch (ArbSegment::put_begin says which)
  uint32_t vlen;
  uint64_t blob;  // ValueBlob* in host memory; 0: none could be had (answer kCapacityExhausted)
  uint64_t rec;   // key record in device memory; 0: none (the kernel answers capacity)
};

// General layout, per write op (PUT, CAS, DELETE), for the host's frees
// (written by the L-Slab kernel as three words).
struct WriteOut {
  uint64_t old_blob;  // the value before the op (found)
  uint64_t old_rec;   // DELETE: the removed key record
  uint32_t raw;       // L-Slab ResCode byte (bit 7: stored)
  uint32_t old_len;   // length of the value before the op
};
static_assert(sizeof(WriteOut) == 24);

struct ArbDev {
  uint32_t n = 0;
  uint32_t segments = 0;
  bool general = false;
  uint64_t max_key = 0, max_value = 0;
  // Inputs.
  const char* input = nullptr;          // the input region (blocks)
  const ArbSegment* seg = nullptr;
  const PutEntry* puts = nullptr;
  uint32_t put_count = 0;
  const uint32_t* write_ops = nullptr;  // general: indices of write ops in their batches
  uint32_t write_count = 0;
  const uint64_t* host_hash = nullptr;  // per op, or null: hash on the device
  // Small ARBs: the input region's bytes, still in the page-locked staging
  // buffer (mapped); the prepare kernel copies them to `input` itself, so
  // no copy call precedes it. Null: the pipeline copied them.
  const char* stage = nullptr;
  uint32_t stage_bytes = 0;
  int allowance = 0;
  // Normalized columns (n each), the L-Slab kernel's input.
  uint8_t* type = nullptr;   // L-Slab OpCode
  uint8_t* check = nullptr;  // 0, or the kvcg::Code the op is answered with
  uint64_t* hash = nullptr;
  uint64_t* key = nullptr;
  uint64_t* ctl = nullptr;
  uint64_t* value = nullptr;
  uint64_t* expected = nullptr;
  uint64_t* rec = nullptr;
  uint32_t* vlen = nullptr;     // PUT/CAS: value length; EXPIRE: its ExpireCondition
  uint64_t* expire = nullptr;   // general, when a batch of the ARB has expiry; else null
  uint32_t* done = nullptr;  // n + 1
  uint32_t* wslot = nullptr; // general: per op, its write index or ~0
  uint32_t* hdr = nullptr;   // in the output region: [0] cursor [1] slab allowance
                             // left [2] retry flag [3] -
  // Large-ARB numbering scratch. Large ARBs group by the hash's high 32
  // bits (a superset of equal keys, so still a correct order; a radix sort
  // of half the bits is half the passes), and scan (segment start, last
  // write) pairs in one pass.
  uint32_t* hkey = nullptr;
  uint32_t* sorted_hkey = nullptr;
  uint32_t* idx_in = nullptr;
  uint32_t* idx_out = nullptr;
  int2* marks = nullptr;       // (segment start, last write) per sorted position
  int2* marks_scan = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;
};

// A large ARB's size class: its prepare runs on this many ops (the rest
// padding), so that cub's scratch is sized once per class (pipeline.h,
// LargeTempBytes).
uint32_t LargeArbCapacity(uint32_t n);

// cub scratch for a large ARB's prepare of `cap` ops.
cudaError_t ArbTempBytes(uint32_t cap, size_t* bytes);

// ARBs of n <= kMediumArbOps ops: normalize + number (+ scatter the put
// list and the write slots) in one single-block kernel, and reset the
// header; enqueued on `stream`. Only a small ARB (n <= kSmallArbOps) may
// have its input in the mapped staging buffer (ArbDev::stage).
cudaError_t ArbPrepare(const ArbDev& a, cudaStream_t stream);

// Large ARBs: the same, as a fixed sequence of grid kernels and cub calls
// for `cap` = LargeArbCapacity(n) ops, whose kernels read the ARB from
// `dev` (device memory holding a copy of `a` when they run); of `a` itself
// only the scratch pointers are read (hkey, sorted_hkey, idx_in, idx_out,
// marks, marks_scan, temp, temp_bytes).
cudaError_t ArbPrepareLarge(const ArbDev* dev, const ArbDev& a, uint32_t cap,
                            cudaStream_t stream);

}  // namespace kvcg::store::gpu
