// One op on the L-Slab table (paper §5.1): lock-based, warp-cooperative
// slab lists. Included by lslab_kernel.cu only (nvcc), which claims the ops
// and runs ProcessOp for each; internal to it (anonymous namespace).
//
// Per op, a tile of lanes (the whole warp in the paper; by default 8 lanes,
// so that a warp has 4 ops in flight) works for one leader op at a time:
//   1. same-key order: lane 0 waits until done[group] >= need (the host
//      numbered the batch's ops on one key; waits only point to earlier ops,
//      which were claimed earlier by running warps, so no deadlock);
//   2. a writer's lane 0 takes the bucket's spin lock; a GET takes none and
//      validates what it read against the bucket's sequence instead (a
//      seqlock: ReadBegin / ReadValidate, retried when a writer intervened);
//   3. every lane reads its key words of the slab (32 / tile of them); the
//      meta word (word 31) is shuffled to all; ballots find the hash
//      matches, then an exact warp-wide compare of the key record's bytes
//      against the batch's copy of the key;
//   4. lane 0 performs the op and writes the result, then unlocks (a
//      writer's unlock advances the bucket's sequence).
// The table holds the general layout (fixed8 lives in the window table,
// window_kernel.cu). Expiry: a found key's expire-at is read only in a slab
// with the volatile hint (lslab_types.h); an expired key is absent to the op
// (lazy expiry) and a writer unlinks it first (the host frees its record
// and blob: WriteOut). PUT/CAS store the op's expire-at (kKeepExpiry keeps
// the key's; a past time deletes), EXPIRE (a flagged DELETE) sets it under
// its condition. The volatile-key and expired-key counters follow.
// Table words are read with ld.global.cg (L2, never a stale L1 line) and
// written with st.global.cg; locks use acquire/release atomics.
#pragma once

#include <cuda_runtime.h>

#include "store/gpu/arb_ops.cuh"
#include "store/gpu/lslab_device.cuh"

namespace kvcg::store::gpu {
namespace {

constexpr uint64_t kKeepExpiryAt = ~0ull;  // kvcg::kKeepExpiry

// Leader only: the counters' share of an unlinked entry.
__device__ void ReleaseEntry(const TableView& t, uint64_t rec_hdr, bool was_volatile) {
  const uint64_t charge = uint64_t(uint32_t(rec_hdr)) + (rec_hdr >> 32) + t.entry_overhead;
  ReleaseCounter(&t.counters->keys, 1);
  ReleaseCounter(&t.counters->mem_bytes, charge);
  if (was_volatile) ReleaseCounter(&t.counters->volatile_keys, 1);
}

// Leader only: key record `rec` in `slab` (meta word
// `meta`) now expires at `want` instead of `cur`; keeps the slab's volatile
// hint and the volatile-key count.
__device__ void SetExpire(const TableView& t, uint64_t* slab, uint64_t meta, uint64_t* rec,
                          uint64_t cur, uint64_t want) {
  if (want == cur) return;
  St(rec + kRecordExpireWord, want);
  if (want != 0 && (meta & kVolatileBit) == 0) St(slab + kMetaWord, meta | kVolatileBit);
  if (cur == 0) atomicAdd(&t.counters->volatile_keys, 1ull);
  else if (want == 0) ReleaseCounter(&t.counters->volatile_keys, 1);
}

// A PUT/CAS that stores: the record's value copy (lslab_types.h), one word
// per lane (ProcessOp loads it at the op's start).
template <int kTile>
__device__ void WriteValueCopy(uint64_t* copy, const Op& op, uint64_t word, const Tile<kTile>& tile) {
  if (op.value == 0 || op.vlen > kValueCopyBytes || tile.lane * 8 >= op.vlen) return;
  St(copy + tile.lane, word);
}

template <int kTile>
__device__ void ProcessOp(const TableView& t, const ArbView& a, const Op& op,
                          bool skip, const Tile<kTile>& tile, uint8_t* code_out,
                          uint64_t* value_out, uint32_t* len_out, uint64_t* rec_out,
                          uint64_t* exp_out, const uint64_t** copy_out) {
  constexpr int kW = Tile<kTile>::kWords;
  const bool leader = tile.lane == 0;
  const uint32_t type = uint32_t(op.ctl & 3);
  const bool flag = (op.ctl >> 2) & 1;  // CAS: expect_absent; DELETE: it is an EXPIRE
  const uint32_t group = CtlGroup(op.ctl);
  const uint32_t need = uint32_t(op.ctl >> 32);

  uint8_t code = kResNotFound;
  uint64_t rv = 0, rr = 0;
  uint64_t cur_exp = 0;  // the found key's expire-at (0 = none)
  uint32_t rlen = 0;
  const uint64_t* copy = nullptr;  // a found GET's value copy (ValueCopyOut)
  // PUT/CAS: the new value's words for the record's copy, one per lane,
  // loaded from the blob in host memory at the op's start so that the PCIe
  // round trip overlaps the group wait and the probe. (Loaded where it is
  // stored, the round trip fell inside the bucket's write lock: general
  // 95/5 through the Store API 381-390 -> 336-344 M ops/s, H100,
  // 2026-11-27; held here it costs registers: the kernel alone 1.57 ->
  // 1.29-1.39 G ops/s at 95/5.) Volatile, as BlobEquals: a reused blob's
  // line must not come from a cache.
  uint64_t vword = 0;
  if (!skip && (type == kOpPut || type == kOpCas) && op.value != 0 &&
      tile.lane * 8 < op.vlen && op.vlen <= kValueCopyBytes) {
    vword = reinterpret_cast<const volatile uint64_t*>(op.value)[tile.lane];
  }

  const bool poisoned = GroupWait(a, group, need, tile);
  if (poisoned) {
    code = kResRetryPoisoned;
  } else if (skip) {
    // Answered already (bad input, or a no-op): no table access; in a group
    // (large ARBs only, SmallPrepare leaves it in none) the order above
    // and the done count below still count it.
  } else {
    const uint64_t bucket = BucketOf(op.hash, t.bucket_bits);
    uint64_t* head = t.buckets + bucket * kSlabWords;
    uint64_t* lock = head + kLockWord;
    const bool writer = type != kOpGet;
    if (leader && writer) WriteLock(lock);
    tile.Sync();

    // Probe the chain. Lane l holds slots l, l + kTile, ... (word 31 = meta).
    // A writer probes once, under the lock. A GET probes without it and
    // retries when the bucket changed meanwhile (ReadValidate): see below.
    uint64_t* slab;
    uint32_t idx;  // slab's pool index (0: the head slab)
    uint32_t found_idx, free_idx;
    int found;
    uint64_t* found_slab;
    uint64_t found_meta, found_vw;
    int free_slot;
    uint64_t* free_slab;
    uint64_t free_meta;
    uint64_t* last_slab;
    uint64_t last_meta;
    uint64_t* rec;
    uint64_t rec_hdr;
    const uint64_t probe = op.hash;
    // Why a validated GET is linearizable: writers change a bucket only
    // while holding its write lock, and advance its sequence when they let
    // go (WriteLock / WriteUnlock). ReadBegin waits until no writer holds
    // the bucket and notes the sequence; ReadValidate succeeds only when the
    // word shows the same sequence and no writer after every load of the
    // probe. A writer's stores are ordered after its writer bit (the fence
    // in WriteLock) and before its unlock (release), so a validated GET saw
    // none of any writer's stores, or all of them: the bucket's state
    // between two writers' critical sections, at which point the GET takes
    // effect. Same-key order inside a batch is the group wait above (an
    // earlier writer on the key is done, so unlocked, before the GET reads);
    // across batches, kernel and stream order. Loads of a changing bucket
    // stay safe: a meta word is one 64-bit store (its next index is 0 or a
    // slab that exists: slabs are never freed while kernels run), and a
    // record pointer is one the host allocated (or 0, skipped),
    // whose memory stays mapped when it is freed and reused, in the same
    // size class, so a compare reads no further than the record's class.
    uint64_t seen = 0;
    do {
      if (!writer) {
        if (leader) seen = ReadBegin(lock);
        tile.Sync();
      }
      slab = head;
      idx = 0;
      found_idx = free_idx = 0;
      found = -1;
      found_slab = nullptr;
      found_meta = found_vw = 0;
      free_slot = -1;
      free_slab = nullptr;
      free_meta = 0;
      last_slab = nullptr;
      last_meta = 0;
      while (true) {
        // Keys and meta only: reading the value half too doubled the L2
        // traffic (ncu: L2 at 87% of peak), so the one value needed is read
        // after a match.
        uint64_t kw[kW];
#pragma unroll
        for (int j = 0; j < kW; ++j) kw[j] = Ld(slab + tile.lane + j * kTile);
        const uint64_t meta = tile.Shfl(kw[kW - 1], kTile - 1);
        uint32_t cand = 0, empty = 0;
#pragma unroll
        for (int j = 0; j < kW; ++j) {
          const uint32_t slot = tile.lane + j * kTile;
          const bool valid = slot < kSlotsPerSlab;
          const bool occupied = valid && ((meta >> slot) & 1);
          cand |= tile.Ballot(occupied && kw[j] == probe) << (j * kTile);
          empty |= tile.Ballot(valid && !occupied) << (j * kTile);
        }
        while (cand != 0) {
          const int c = __ffs(cand) - 1;
          cand &= cand - 1;
          // Lane 0's load, shuffled: lanes of a lock-free GET could see
          // different words while a writer changes the slab, and must not
          // part ways before the tile-wide compare.
          const uint64_t r = tile.Shfl(tile.lane == 0 ? Ld(slab + 32 + c) : 0ull, 0);
          if (r != 0 && KeyEquals<kTile>(reinterpret_cast<const uint64_t*>(r), op, a, tile)) {
            found = c;
            found_vw = r;
            break;
          }
        }
        if (found >= 0) {
          found_slab = slab;
          found_idx = idx;
          found_meta = meta;
          break;
        }
        if (free_slot < 0 && empty != 0) {
          free_slot = __ffs(empty) - 1;
          free_slab = slab;
          free_idx = idx;
          free_meta = meta;
        }
        const uint32_t next = uint32_t(meta >> 32);
        if (next == 0) {
          last_slab = slab;
          last_meta = meta;
          break;
        }
        slab = PoolSlab(t, next);
        idx = next;
      }
      // The value before the op (the record's blob handle) and, in a slab
      // with the volatile hint, the key's expire-at.
      rec = found >= 0 ? reinterpret_cast<uint64_t*>(found_vw) : nullptr;
      rec_hdr = 0;
      cur_exp = 0;
      rv = 0;
      if (rec != nullptr) {
        // Lane 0's loads for the whole tile (as above).
        if (tile.lane == 0) {
          rv = Ld(rec);
          rec_hdr = Ld(rec + 1);
          if (found_meta & kVolatileBit) cur_exp = Ld(rec + kRecordExpireWord);
        }
        rv = tile.Shfl(rv, 0);
        rec_hdr = tile.Shfl(rec_hdr, 0);
        cur_exp = tile.Shfl(cur_exp, 0);
      }
    } while (!writer && !ReadValidate<kTile>(lock, seen, tile));
    // The slot whose access byte this op updates (eviction): a hit, an
    // overwrite, an insert (lslab_types.h, access bytes).
    int touch_slot = -1;
    uint32_t touch_idx = 0;
    bool touch_new = false;

    DeviceCounters* ctr = t.counters;
    if (found >= 0) {
      code = kResOk;
      rlen = uint32_t(rec_hdr >> 32);
      if (Expired(cur_exp, a.now)) {
        // Lazy expiry: the key is absent to this op. A writer unlinks it
        // first (rr, rv, rlen tell the host what to free; the result is
        // "not found" all the same) and may insert into its slot.
        if (writer) {
          found_meta &= ~(1ull << found);
          if (leader) {
            St(found_slab + kMetaWord, found_meta);
            ReleaseEntry(t, rec_hdr, true);
            atomicAdd(&ctr->expired_keys, 1ull);
          }
          rr = found_vw;
          free_slot = found;
          free_slab = found_slab;
          free_idx = found_idx;
          free_meta = found_meta;
        } else {
          rv = 0;
          rlen = 0;
        }
        found = -1;
        code = kResNotFound;
        cur_exp = 0;
      }
    }

    if (type == kOpGet && found >= 0) {
      touch_slot = found;
      touch_idx = found_idx;
      if (rlen <= kValueCopyBytes) copy = rec + RecordCopyWord(uint32_t(rec_hdr));
    }
    if (type == kOpDelete) {
      if (found >= 0) {
        // DELETE unlinks; EXPIRE (flag) sets the expire-at when its
        // condition holds, and unlinks for a time already past.
        bool unlink = !flag;
        if (flag) {
          const uint64_t want = op.expire;
          if (want != kKeepExpiryAt && ConditionHolds(op.vlen, cur_exp, want)) {
            if (Expired(want, a.now)) {
              unlink = true;
            } else if (leader) {
              SetExpire(t, found_slab, found_meta, rec, cur_exp, want);
            }
          }
        }
        if (unlink) {
          if (leader) {
            St(found_slab + kMetaWord, found_meta & ~(1ull << found));
            ReleaseEntry(t, rec_hdr, cur_exp != 0);
          }
          rr = found_vw;
        }
      }
    } else if (type == kOpPut || type == kOpCas) {
      bool store = true;
      if (type == kOpCas) {
        if (found < 0) {
          store = flag;  // expect_absent
        } else if (flag) {
          store = false;
        } else {
          const uint32_t elen = uint32_t(op.expected >> 32);
          store = elen == uint32_t(rec_hdr >> 32) &&
                  BlobEquals<kTile>(reinterpret_cast<const uint64_t*>(rv), elen,
                                    a.arena + uint32_t(op.expected) / 8, tile);
        }
      }
      // The expire-at to store: kKeepExpiry keeps the key's.
      const uint64_t want = op.expire == kKeepExpiryAt ? cur_exp : op.expire;
      if (store && Expired(want, a.now)) {
        // Stored and expired at once: a present key goes (the result is its
        // previous value, as a PUT's), an absent one is never inserted.
        store = false;
        if (found >= 0) {
          if (leader) {
            St(found_slab + kMetaWord, found_meta & ~(1ull << found));
            ReleaseEntry(t, rec_hdr, cur_exp != 0);
          }
          rr = found_vw;
        }
      }
      if (store && found >= 0) {
        // Update in place.
        const uint64_t old_len = rec_hdr >> 32;
        int ok = 1;
        if (leader) {
          if (op.vlen > old_len) {
            ok = ReserveCounter(&ctr->mem_bytes, ctr->max_mem, op.vlen - old_len);
          } else if (op.vlen < old_len) {
            ReleaseCounter(&ctr->mem_bytes, old_len - op.vlen);
          }
          if (ok) {
            St(rec, op.value);
            St(rec + 1, uint64_t(uint32_t(rec_hdr)) | (uint64_t(op.vlen) << 32));
            SetExpire(t, found_slab, found_meta, rec, cur_exp, want);
          }
        }
        ok = tile.Shfl(ok, 0);
        if (ok) {
          WriteValueCopy(rec + RecordCopyWord(uint32_t(rec_hdr)), op, vword, tile);
          code |= kResStored;
          touch_slot = found;
          touch_idx = found_idx;
        } else {
          code = kResCapacity;
          rv = 0;
          rlen = 0;
        }
      } else if (store) {
        // Insert a new key.
        const uint32_t klen = uint32_t(op.key >> 32);
        const uint64_t charge = uint64_t(klen) + op.vlen + t.entry_overhead;
        int ok = 0;
        uint32_t new_slab = 0;
        if (leader) {
          if (op.rec == 0) {
            ok = 0;  // no device memory left for the key record
          } else if (ReserveCounter(&ctr->keys, ctr->max_keys, 1)) {
            if (ReserveCounter(&ctr->mem_bytes, ctr->max_mem, charge)) {
              ok = 1;
            } else {
              ReleaseCounter(&ctr->keys, 1);
            }
          }
          if (ok && free_slot < 0) {
            new_slab = AllocSlab(t, a);
            if (new_slab == 0) {
              ReleaseCounter(&ctr->keys, 1);
              ReleaseCounter(&ctr->mem_bytes, charge);
              ok = 2;  // retry after the pool grows
            }
          }
        }
        ok = tile.Shfl(ok, 0);
        if (ok == 0) {
          code = kResCapacity;
        } else if (ok == 2) {
          code = kResRetryNoSlab;
        } else {
          new_slab = tile.Shfl(new_slab, 0);
          uint64_t* slab_w = free_slab;
          int slot = free_slot;
          uint64_t meta_w = free_meta;
          touch_idx = free_idx;
          if (free_slot < 0) {
            slab_w = PoolSlab(t, new_slab);
            slot = 0;
            meta_w = 0;
            touch_idx = new_slab;
          }
          touch_slot = slot;
          touch_new = true;
          uint64_t* r = reinterpret_cast<uint64_t*>(op.rec);
          const uint64_t* src = a.arena + uint32_t(op.key) / 8;
          for (uint32_t w = tile.lane; w < (klen + 7) / 8; w += kTile) {
            St(r + kRecordKeyWord + w, src[w]);
          }
          WriteValueCopy(r + RecordCopyWord(klen), op, vword, tile);
          if (leader) {
            St(r, op.value);
            St(r + 1, uint64_t(klen) | (uint64_t(op.vlen) << 32));
            St(r + kRecordExpireWord, want);
            if (want != 0) {
              meta_w |= kVolatileBit;
              atomicAdd(&ctr->volatile_keys, 1ull);
            }
          }
          if (leader) {
            St(slab_w + slot, probe);
            St(slab_w + 32 + slot, op.rec);
            St(slab_w + kMetaWord, meta_w | (1ull << slot));
            if (free_slot < 0) {
              // Keeps the last slab's bitmap and volatile hint.
              St(last_slab + kMetaWord, (uint64_t(new_slab) << 32) | (last_meta & 0xffffffffull));
            }
          }
          code = kResNotFound | kResStored;
        }
      }
    }

    // A GET touches after it validated, without the lock: a writer that
    // replaces the key meanwhile may have its new key's byte touched once,
    // as approximate as the racing readers TouchAccess already allows.
    if (leader && touch_slot >= 0 && t.access_mode != kAccessNone) {
      TouchAccess(t, AccessByte(t, bucket, touch_idx, touch_slot), touch_new, op.hash);
    }
    // Lanes other than the leader wrote a key record (key words, value
    // copy): make it visible before the leader's release.
    if (writer) __threadfence();
    tile.Sync();
    if (leader && writer) WriteUnlock(lock);
  }

  // (The leader counts the op done in LSlabOps, after ValueCopyOut.)
  *code_out = code;
  *value_out = rv;
  *len_out = rlen;
  *rec_out = rr;
  *exp_out = cur_exp;
  *copy_out = copy;
}

}  // namespace
}  // namespace kvcg::store::gpu
