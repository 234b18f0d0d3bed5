// The L-Slab kernel (paper §5.1): lock-based, warp-cooperative slab lists.
//
// Per op, the whole warp works for one leader op at a time:
//   1. same-key order: lane 0 waits until done[group] >= need (the host
//      numbered the batch's ops on one key; waits only point to earlier ops,
//      which were claimed earlier by running warps, so no deadlock);
//   2. lane 0 takes the bucket's readers–writer spin lock (GET: read,
//      everything else: write; the writer announces itself first, so readers
//      cannot starve it);
//   3. every lane reads its key word and its value word of the slab; the
//      meta word (lane 31) is shuffled to all; a ballot finds the matches
//      (general layout: hash matches, then an exact warp-wide compare of the
//      key record's bytes against the batch's copy of the key);
//   4. lane 0 performs the op and writes the result, then unlocks.
// Table words are read with ld.global.cg (L2, never a stale L1 line) and
// written with st.global.cg; locks use acquire/release atomics.
#include <cuda_runtime.h>

#include "store/gpu/lslab_kernel.h"

namespace kvcg::store::gpu {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr uint32_t kWriterBit = 0x80000000u;
constexpr uint32_t kPoisonBit = 0x80000000u;

__device__ __forceinline__ uint64_t Ld(const uint64_t* p) {
  return __ldcg(reinterpret_cast<const unsigned long long*>(p));
}
__device__ __forceinline__ void St(uint64_t* p, uint64_t v) {
  __stcg(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ uint32_t LdVolatile(const uint32_t* p) {
  return *reinterpret_cast<const volatile uint32_t*>(p);
}
__device__ __forceinline__ unsigned long long LdVolatile64(const unsigned long long* p) {
  return *reinterpret_cast<const volatile unsigned long long*>(p);
}

// Acquire/release atomics (PTX scope gpu) instead of relaxed atomics plus
// __threadfence(): a full fence waits for every outstanding memory access of
// the thread, which costs a round trip per lock operation.
__device__ __forceinline__ uint32_t AtomAddAcquire(uint32_t* p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.acquire.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ uint32_t AtomOrAcquire(uint32_t* p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.acquire.gpu.global.or.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ void RedAddRelease(uint32_t* p, uint32_t v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void RedAndRelease(uint32_t* p, uint32_t v) {
  asm volatile("red.release.gpu.global.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void RedOrRelease(uint32_t* p, uint32_t v) {
  asm volatile("red.release.gpu.global.or.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t LdAcquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ void ReadLock(uint32_t* lock) {
  while (true) {
    const uint32_t v = AtomAddAcquire(lock, 1u);
    if ((v & kWriterBit) == 0) return;
    atomicSub(lock, 1u);
    while (LdVolatile(lock) & kWriterBit) __nanosleep(64);
  }
}
__device__ void ReadUnlock(uint32_t* lock) { RedAddRelease(lock, 0xffffffffu); }
__device__ void WriteLock(uint32_t* lock) {
  while (AtomOrAcquire(lock, kWriterBit) & kWriterBit) __nanosleep(64);
  while (LdAcquire(lock) != kWriterBit) __nanosleep(32);  // wait for readers to drain
}
__device__ void WriteUnlock(uint32_t* lock) { RedAndRelease(lock, ~kWriterBit); }

// Counter reservations: exact against the configured limits (CAS loop),
// a plain atomicAdd when there is no limit.
__device__ bool ReserveCounter(unsigned long long* counter, unsigned long long max,
                               unsigned long long amount) {
  if (max == 0) {
    atomicAdd(counter, amount);
    return true;
  }
  unsigned long long cur = LdVolatile64(counter);
  while (true) {
    if (cur + amount > max || cur + amount < cur) return false;
    const unsigned long long prev = atomicCAS(counter, cur, cur + amount);
    if (prev == cur) return true;
    cur = prev;
  }
}
__device__ void ReleaseCounter(unsigned long long* counter, unsigned long long amount) {
  atomicAdd(counter, 0ull - amount);
}

__device__ uint64_t* PoolSlab(const TableView& t, uint32_t idx) {
  uint64_t* chunk =
      *reinterpret_cast<uint64_t* const volatile*>(t.chunks + (idx >> kPoolChunkShift));
  return chunk + uint64_t(idx & (kPoolChunkSlabs - 1)) * kSlabWords;
}

// Lane 0 only. A slab from this batch's allowance, then from the pool; 0 when
// either is spent.
__device__ uint32_t AllocSlab(const TableView& t, const ArbView& a) {
  if (atomicSub(a.slab_allowance, 1) <= 0) {
    atomicAdd(a.slab_allowance, 1);
    return 0;
  }
  DeviceCounters* c = t.counters;
  unsigned long long cur = LdVolatile64(&c->slabs_next);
  while (true) {
    if (cur >= LdVolatile64(&c->slabs_capacity)) {
      atomicAdd(a.slab_allowance, 1);
      return 0;
    }
    const unsigned long long prev = atomicCAS(&c->slabs_next, cur, cur + 1);
    if (prev == cur) return uint32_t(cur);
    cur = prev;
  }
}

struct Op {
  uint64_t hash, key, ctl, value, expected, rec;
  uint32_t vlen;
};

// General layout: does key record `rec` hold exactly the op's key? Warp-wide.
__device__ bool KeyEquals(const uint64_t* rec, const Op& op, const ArbView& a, uint32_t lane) {
  const uint32_t klen = uint32_t(op.key >> 32);
  if (uint32_t(Ld(rec + 1)) != klen) return false;
  const uint32_t words = (klen + 7) / 8;
  const uint64_t* mine = a.arena + uint32_t(op.key) / 8;
  bool eq = true;
  for (uint32_t w = lane; w < words; w += 32) eq &= Ld(rec + 2 + w) == mine[w];
  return __all_sync(kFull, eq);
}

// General layout: does ValueBlob `blob` (pinned host memory) hold exactly the
// expected bytes? Warp-wide; the caller checked the lengths.
__device__ bool BlobEquals(const uint64_t* blob, uint32_t len, const uint64_t* want,
                           uint32_t lane) {
  const uint32_t words = (len + 7) / 8;
  bool eq = true;
  for (uint32_t w = lane; w < words; w += 32) {
    uint64_t x = *reinterpret_cast<const volatile uint64_t*>(blob + 1 + w) ^ want[w];
    if (w == words - 1 && (len & 7) != 0) x &= (1ull << (8 * (len & 7))) - 1;
    eq &= x == 0;
  }
  return __all_sync(kFull, eq);
}

template <bool kGeneral>
__device__ void ProcessOp(const TableView& t, const ArbView& a, const Op& op, uint32_t lane,
                          uint8_t* code_out, uint64_t* value_out, uint64_t* rec_out) {
  const uint32_t type = uint32_t(op.ctl & 3);
  const bool expect_absent = (op.ctl >> 2) & 1;
  const uint32_t group = uint32_t(op.ctl >> 3) & kMaxGroups;
  const uint32_t need = uint32_t(op.ctl >> 32);

  uint8_t code = kResNotFound;
  uint64_t rv = 0, rr = 0;

  int poisoned = 0;
  if (group != 0) {
    if (lane == 0) {
      const uint32_t* done = a.done + group;
      uint32_t d;
      while (((d = LdAcquire(done)) & ~kPoisonBit) < need) __nanosleep(32);
      poisoned = (d & kPoisonBit) != 0;
    }
    poisoned = __shfl_sync(kFull, poisoned, 0);
  }

  if (poisoned) {
    code = kResRetryPoisoned;
  } else {
    uint64_t* head = t.buckets + uint64_t(BucketOf(op.hash, t.bucket_bits)) * kSlabWords;
    uint32_t* lock = reinterpret_cast<uint32_t*>(head + kLockWord);
    const bool writer = type != kOpGet;
    if (lane == 0) {
      if (writer) WriteLock(lock);
      else ReadLock(lock);
    }
    __syncwarp();

    // Probe the chain.
    uint64_t* slab = head;
    int found = -1;
    uint64_t* found_slab = nullptr;
    uint64_t found_meta = 0, found_vw = 0;
    int free_lane = -1;
    uint64_t* free_slab = nullptr;
    uint64_t free_meta = 0;
    uint64_t* last_slab = nullptr;
    uint64_t last_meta = 0;
    const uint64_t probe = kGeneral ? op.hash : op.key;
    while (true) {
      const uint64_t kw = Ld(slab + lane);
      const uint64_t vw = Ld(slab + 32 + lane);
      const uint64_t meta = __shfl_sync(kFull, kw, kMetaWord);
      const bool occupied = lane < kSlotsPerSlab && ((meta >> lane) & 1);
      uint32_t cand = __ballot_sync(kFull, occupied && kw == probe);
      while (cand != 0) {
        const int c = __ffs(cand) - 1;
        cand &= cand - 1;
        if (!kGeneral) {
          found = c;
          break;
        }
        const uint64_t rec = __shfl_sync(kFull, vw, c);
        if (KeyEquals(reinterpret_cast<const uint64_t*>(rec), op, a, lane)) {
          found = c;
          break;
        }
      }
      if (found >= 0) {
        found_slab = slab;
        found_meta = meta;
        found_vw = __shfl_sync(kFull, vw, found);
        break;
      }
      if (free_lane < 0) {
        const uint32_t fr = __ballot_sync(kFull, lane < kSlotsPerSlab && !occupied);
        if (fr != 0) {
          free_lane = __ffs(fr) - 1;
          free_slab = slab;
          free_meta = meta;
        }
      }
      const uint32_t next = uint32_t(meta >> 32);
      if (next == 0) {
        last_slab = slab;
        last_meta = meta;
        break;
      }
      slab = PoolSlab(t, next);
    }

    // The value before the op (general: the record's blob handle).
    uint64_t* rec = kGeneral && found >= 0 ? reinterpret_cast<uint64_t*>(found_vw) : nullptr;
    uint64_t rec_hdr = 0;
    if (found >= 0) {
      code = kResOk;
      if (kGeneral) {
        rv = Ld(rec);
        rec_hdr = Ld(rec + 1);
      } else {
        rv = found_vw;
      }
    }
    DeviceCounters* ctr = t.counters;

    if (type == kOpDelete) {
      if (found >= 0) {
        if (lane == 0) {
          St(found_slab + kMetaWord, found_meta & ~(1ull << found));
          const uint64_t charge =
              kGeneral ? uint64_t(uint32_t(rec_hdr)) + (rec_hdr >> 32) + t.entry_overhead
                       : 16 + t.entry_overhead;
          ReleaseCounter(&ctr->keys, 1);
          ReleaseCounter(&ctr->mem_bytes, charge);
        }
        if (kGeneral) rr = found_vw;
      }
    } else if (type == kOpPut || type == kOpCas) {
      bool store = true;
      if (type == kOpCas) {
        if (found < 0) {
          store = expect_absent;
        } else if (expect_absent) {
          store = false;
        } else if (!kGeneral) {
          store = rv == op.expected;
        } else {
          const uint32_t elen = uint32_t(op.expected >> 32);
          store = elen == uint32_t(rec_hdr >> 32) &&
                  BlobEquals(reinterpret_cast<const uint64_t*>(rv), elen,
                             a.arena + uint32_t(op.expected) / 8, lane);
        }
      }
      if (store && found >= 0) {
        // Update in place; fixed8 sizes never change the charge.
        if (kGeneral) {
          const uint64_t old_len = rec_hdr >> 32;
          int ok = 1;
          if (lane == 0) {
            if (op.vlen > old_len) {
              ok = ReserveCounter(&ctr->mem_bytes, ctr->max_mem, op.vlen - old_len);
            } else if (op.vlen < old_len) {
              ReleaseCounter(&ctr->mem_bytes, old_len - op.vlen);
            }
            if (ok) {
              St(rec, op.value);
              St(rec + 1, uint64_t(uint32_t(rec_hdr)) | (uint64_t(op.vlen) << 32));
            }
          }
          ok = __shfl_sync(kFull, ok, 0);
          if (ok) {
            code |= kResStored;
          } else {
            code = kResCapacity;
            rv = 0;
          }
        } else {
          if (lane == 0) St(found_slab + 32 + found, op.value);
          code |= kResStored;
        }
      } else if (store) {
        // Insert a new key.
        const uint32_t klen = kGeneral ? uint32_t(op.key >> 32) : 8;
        const uint64_t charge =
            kGeneral ? uint64_t(klen) + op.vlen + t.entry_overhead : 16 + t.entry_overhead;
        int ok = 0;
        uint32_t new_slab = 0;
        if (lane == 0) {
          if (kGeneral && op.rec == 0) {
            ok = 0;  // no device memory left for the key record
          } else if (ReserveCounter(&ctr->keys, ctr->max_keys, 1)) {
            if (ReserveCounter(&ctr->mem_bytes, ctr->max_mem, charge)) {
              ok = 1;
            } else {
              ReleaseCounter(&ctr->keys, 1);
            }
          }
          if (ok && free_lane < 0) {
            new_slab = AllocSlab(t, a);
            if (new_slab == 0) {
              ReleaseCounter(&ctr->keys, 1);
              ReleaseCounter(&ctr->mem_bytes, charge);
              ok = 2;  // retry after the pool grows
            }
          }
        }
        ok = __shfl_sync(kFull, ok, 0);
        if (ok == 0) {
          code = kResCapacity;
        } else if (ok == 2) {
          code = kResRetryNoSlab;
        } else {
          new_slab = __shfl_sync(kFull, new_slab, 0);
          uint64_t* slab_w = free_slab;
          int slot = free_lane;
          uint64_t meta_w = free_meta;
          if (free_lane < 0) {
            slab_w = PoolSlab(t, new_slab);
            slot = 0;
            meta_w = 0;
          }
          if (kGeneral) {
            uint64_t* r = reinterpret_cast<uint64_t*>(op.rec);
            const uint64_t* src = a.arena + uint32_t(op.key) / 8;
            for (uint32_t w = lane; w < (klen + 7) / 8; w += 32) St(r + 2 + w, src[w]);
            if (lane == 0) {
              St(r, op.value);
              St(r + 1, uint64_t(klen) | (uint64_t(op.vlen) << 32));
            }
          }
          if (lane == 0) {
            St(slab_w + slot, probe);
            St(slab_w + 32 + slot, kGeneral ? op.rec : op.value);
            St(slab_w + kMetaWord, meta_w | (1ull << slot));
            if (free_lane < 0) {
              St(last_slab + kMetaWord, (uint64_t(new_slab) << 32) | (last_meta & 0x7fffffffull));
            }
          }
          code = kResNotFound | kResStored;
        }
      }
    }

    // Lanes other than 0 wrote a key record: make it visible before lane 0's
    // release (fixed8 writes come from lane 0 only, ordered by the release).
    if (kGeneral && writer) __threadfence();
    __syncwarp();
    if (lane == 0) {
      if (writer) WriteUnlock(lock);
      else ReadUnlock(lock);
    }
  }

  if (group != 0 && lane == 0) {
    const uint8_t c = code & 0x7f;
    if (c == kResRetryNoSlab || c == kResRetryPoisoned) RedOrRelease(a.done + group, kPoisonBit);
    RedAddRelease(a.done + group, 1u);
  }
  *code_out = code;
  *value_out = rv;
  *rec_out = rr;
}

// kMinBlocks > 1 caps registers so that many blocks fit per SM: more warps
// in flight hide more of each op's dependent memory round trips, at the
// price of some spilling (the benchmark measures which wins).
template <bool kGeneral, int kMinBlocks>
__global__ void __launch_bounds__(kLSlabBlockThreads, kMinBlocks) LSlabKernel(TableView t, ArbView a) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t per_warp = a.ops_per_warp;
  while (true) {
    uint32_t base = 0;
    if (lane == 0) base = atomicAdd(a.cursor, per_warp);
    base = __shfl_sync(kFull, base, 0);
    if (base >= a.n) return;
    const uint32_t i = base + lane;
    const bool active = lane < per_warp && i < a.n;
    Op mine{};
    if (active) {
      mine.hash = a.hash[i];
      mine.key = a.key[i];
      mine.ctl = a.ctl[i];
      mine.value = a.value[i];
      if (a.expected != nullptr) mine.expected = a.expected[i];
      if (kGeneral) {
        mine.rec = a.rec[i];
        mine.vlen = a.vlen[i];
      }
    }
    uint32_t todo = __ballot_sync(kFull, active);
    while (todo != 0) {
      const int leader = __ffs(todo) - 1;
      todo &= todo - 1;
      Op op;
      op.hash = __shfl_sync(kFull, mine.hash, leader);
      op.key = __shfl_sync(kFull, mine.key, leader);
      op.ctl = __shfl_sync(kFull, mine.ctl, leader);
      op.value = __shfl_sync(kFull, mine.value, leader);
      op.expected = __shfl_sync(kFull, mine.expected, leader);
      op.rec = __shfl_sync(kFull, mine.rec, leader);
      op.vlen = __shfl_sync(kFull, mine.vlen, leader);
      uint8_t code;
      uint64_t rv, rr;
      ProcessOp<kGeneral>(t, a, op, lane, &code, &rv, &rr);
      if (lane == 0) {
        const uint32_t idx = base + leader;
        a.res_code[idx] = code;
        a.res_value[idx] = rv;
        if (kGeneral) a.res_rec[idx] = rr;
      }
    }
  }
}

int g_min_blocks = 4;
int g_resident_blocks[2][5] = {};

template <bool kGeneral>
cudaError_t Occupancy(int min_blocks, int* per_sm) {
  switch (min_blocks) {
    case 3:
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, LSlabKernel<kGeneral, 3>,
                                                           kLSlabBlockThreads, 0);
    case 4:
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, LSlabKernel<kGeneral, 4>,
                                                           kLSlabBlockThreads, 0);
    default:
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, LSlabKernel<kGeneral, 1>,
                                                           kLSlabBlockThreads, 0);
  }
}

template <bool kGeneral>
void Launch(int min_blocks, uint32_t blocks, cudaStream_t stream, const TableView& t,
            const ArbView& a) {
  switch (min_blocks) {
    case 3: LSlabKernel<kGeneral, 3><<<blocks, kLSlabBlockThreads, 0, stream>>>(t, a); break;
    case 4: LSlabKernel<kGeneral, 4><<<blocks, kLSlabBlockThreads, 0, stream>>>(t, a); break;
    default: LSlabKernel<kGeneral, 1><<<blocks, kLSlabBlockThreads, 0, stream>>>(t, a); break;
  }
}

}  // namespace

void SetLSlabMinBlocks(int min_blocks) {
  g_min_blocks = min_blocks == 3 || min_blocks == 4 ? min_blocks : 1;
}
int LSlabMinBlocks() { return g_min_blocks; }

cudaError_t LSlabResidentBlocks(bool general, int* blocks) {
  *blocks = 0;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  int per_sm = 0;
  err = general ? Occupancy<true>(g_min_blocks, &per_sm) : Occupancy<false>(g_min_blocks, &per_sm);
  if (err != cudaSuccess) return err;
  int sms = 0;
  err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  *blocks = per_sm * sms;
  g_resident_blocks[general ? 1 : 0][g_min_blocks] = *blocks;
  return cudaSuccess;
}

cudaError_t LaunchLSlab(bool general, const TableView& table, const ArbView& arb,
                        uint32_t max_blocks, cudaStream_t stream) {
  int resident = g_resident_blocks[general ? 1 : 0][g_min_blocks];
  if (resident == 0) {
    cudaError_t err = LSlabResidentBlocks(general, &resident);
    if (err != cudaSuccess) return err;
  }
  // A warp leads its ops one after another, so a small batch is spread thin
  // (down to one op per warp) to keep its latency near one op's; a large one
  // gives every resident warp 32.
  uint32_t warps_avail = uint32_t(resident) * (kLSlabBlockThreads / 32);
  if (max_blocks != 0 && max_blocks < uint32_t(resident)) {
    warps_avail = max_blocks * (kLSlabBlockThreads / 32);
  }
  ArbView a = arb;
  uint32_t per = (arb.n + warps_avail - 1) / warps_avail;
  a.ops_per_warp = per < 1 ? 1 : per > 32 ? 32 : per;
  const uint32_t warps = (arb.n + a.ops_per_warp - 1) / a.ops_per_warp;
  uint32_t blocks = (warps + kLSlabBlockThreads / 32 - 1) / (kLSlabBlockThreads / 32);
  if (blocks > uint32_t(resident)) blocks = uint32_t(resident);
  if (max_blocks != 0 && blocks > max_blocks) blocks = max_blocks;
  if (blocks == 0) blocks = 1;
  if (general) Launch<true>(g_min_blocks, blocks, stream, table, a);
  else Launch<false>(g_min_blocks, blocks, stream, table, a);
  return cudaGetLastError();
}

}  // namespace kvcg::store::gpu
