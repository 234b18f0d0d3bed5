// The resident kernel's loop (resident_ring.h has the protocol and why):
// each table kernel's .cu instantiates ResidentLoop with its table and ops
// (lslab_kernel.cu, window_kernel.cu), so one kernel prepares and runs
// small ARBs for as long as they keep coming. Included by those files only
// (nvcc); internal to each (anonymous namespace).
//
// Order. ARB seq's ops start (go) only once ARB seq - 1's ops have all run
// (finished), which is the per-ARB kernel's stream order; inside an ARB the
// prepare's numbering orders ops on one key as before. Block 0 prepares ARB
// seq + 1 while the other blocks still run ARB seq: prepare touches only
// seq + 1's own buffers (the pipeline reuses a slot only after its ARB
// completed), never the table.
//
// Memory order: the host's descriptor and staged input are written before
// the doorbell (x86 stores stay in order) and read after an acquire load of
// it at system scope (by thread 0; the barrier after it orders the block's
// reads); each block fences its table writes before counting
// itself done, the last block fences system-wide after publishing before it
// writes done_seq, and go/finished are release/acquire at device scope, so
// ARB seq sees every write of ARB seq - 1 (the chain the per-ARB kernels
// got from their stream order).
#pragma once

#include <cuda_runtime.h>

#include "store/gpu/arb_prepare.cuh"
#include "store/gpu/lslab_device.cuh"
#include "store/gpu/resident_ring.h"

namespace kvcg::store::gpu {
namespace {

__device__ __forceinline__ uint64_t LdAcquireSys64(const volatile uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t LdRelaxedGpu64(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void StReleaseGpu64(uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void StReleaseSys64(volatile uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// The block copies `bytes` (a multiple of 16) from src to dst.
__device__ __forceinline__ void BlockCopy16(void* dst, const void* src, uint32_t bytes) {
  const uint4* s = reinterpret_cast<const uint4*>(src);
  uint4* d = reinterpret_cast<uint4*>(dst);
  for (uint32_t w = threadIdx.x; w < bytes / 16; w += blockDim.x) d[w] = s[w];
}

__device__ __forceinline__ void PrepareResident(const ResidentDesc& d, volatile uint64_t* marks) {
  switch (d.items) {
    case 1: SmallPrepare<1>(d.prep, marks); break;
    case 2: SmallPrepare<2>(d.prep, marks); break;
    default: SmallPrepare<4>(d.prep, marks); break;
  }
}

constexpr uint32_t kNoBytesHint = ~0u;

// Block 0: ARB seq's descriptor into d and its input region (the mapped
// stage) into device memory (d.prep.input), after which d.prep.stage is
// null (ArbDev: the input is in device memory; the prepare copies nothing).
// bytes_hint: the region's size as the doorbell gave it; then the
// descriptor and the region are read in one round trip over PCIe rather
// than one after the other, every load issued before any is used (so not
// arb_prepare.cuh's CopyStage, which needs the destination first) (H200,
// 512-op ARBs: the two stages took 3.4-3.7 us, now 2.4-3.1; BENCHMARKS 2x).
__device__ __forceinline__ void ReadResidentArb(ResidentDesc& d, const ResidentDesc& host_desc,
                                                const char* stage, uint32_t bytes_hint,
                                                volatile uint64_t* marks) {
  constexpr uint32_t kDescWords = sizeof(ResidentDesc) / 16;
  constexpr uint32_t kPerThread = kResidentStageBytes / 16 / kResidentThreads;
  static_assert(kDescWords <= kResidentThreads, "one descriptor word per thread");
  uint32_t bytes = bytes_hint;
  if (bytes == kNoBytesHint) {
    BlockCopy16(&d, &host_desc, sizeof(ResidentDesc));
    __syncthreads();
    bytes = d.prep.stage_bytes;
  }
  const bool desc_word = bytes_hint != kNoBytesHint && threadIdx.x < kDescWords;
  uint4 dv;
  if (desc_word) dv = reinterpret_cast<const uint4*>(&host_desc)[threadIdx.x];
  const uint4* src = reinterpret_cast<const uint4*>(stage);
  const uint32_t words = (bytes + 15) / 16;
  uint4 v[kPerThread];
#pragma unroll
  for (uint32_t u = 0; u < kPerThread; ++u) {
    const uint32_t w = threadIdx.x + u * kResidentThreads;
    if (w < words) v[u] = src[w];
  }
  if (desc_word) reinterpret_cast<uint4*>(&d)[threadIdx.x] = dv;
  __syncthreads();  // d is whole: where the region goes
  if (marks != nullptr && threadIdx.x == 0) marks[kMarkDesc] = GlobalNs();
  uint4* dst = reinterpret_cast<uint4*>(const_cast<char*>(d.prep.input));
#pragma unroll
  for (uint32_t u = 0; u < kPerThread; ++u) {
    const uint32_t w = threadIdx.x + u * kResidentThreads;
    if (w < words) dst[w] = v[u];
  }
  if (threadIdx.x == 0) d.prep.stage = nullptr;  // (the prepare marks kMarkStaged)
  __syncthreads();
}

// Ops(table, view) runs an ARB's ops with the whole block (the table
// kernel's body: claims from view.cursor, or static claims when the
// pipeline gave every op its own tile outside block 0, arb_ops.cuh). Launched with gridDim.x
// blocks of 256 threads (the prepare's block size).
template <class Ops>
__device__ void ResidentLoop(const ResidentParams& p, Ops ops) {
  __shared__ alignas(16) unsigned char d_raw[sizeof(ResidentDesc)];
  __shared__ int cmd;  // block 0: 1 = take the ARB, 0 = end
  __shared__ uint32_t bytes_hint;  // block 0: the ARB's input bytes from the doorbell
  __shared__ bool last;
  ResidentDesc& d = *reinterpret_cast<ResidentDesc*>(d_raw);
  const uint64_t gen_bits = p.gen << kResidentGenShift;
  const uint64_t t_start = GlobalNs();
  uint64_t t_last = t_start;
  uint64_t t_go = 0;  // thread 0: when this block saw go (the profile)
  uint64_t finished = 0;  // block 0, thread 0: `finished` as read at the doorbell
  for (uint64_t seq = p.start_seq;; ++seq) {
    ResidentDesc& dev_desc = p.dev->desc[seq % kResidentRing];
    volatile uint64_t* marks = p.profile != 0 ? p.host->prof[seq % kResidentRing] : nullptr;
    if (blockIdx.x == 0) {
      if (threadIdx.x == 0) {
        int c = 0;
        uint64_t ended_by_life = 0;  // exit_word's kResidentEndedByLife
        // One read of host memory per poll: stop_gen is host memory too, and
        // reading it in every poll (after the doorbell's acquire) would make
        // each poll two PCIe round trips, so the doorbell would be seen
        // half a round trip later on average; it is read every 16th poll.
        for (uint32_t polls = 1;; ++polls) {
          const uint64_t db = LdAcquireSys64(&p.host->doorbell);
          if ((db & kResidentSeqMask) >= seq) {
            c = 1;
            bytes_hint = (db & kResidentSeqMask) == seq ? uint32_t(db >> kDoorbellBytesShift)
                                                        : kNoBytesHint;
            break;
          }
          const uint64_t now = GlobalNs();
          const bool idle = now - t_last > p.idle_ns;
          if (!idle && now - t_start > p.life_ns) {
            ended_by_life = kResidentEndedByLife;
            break;
          }
          if (idle || (polls % 16 == 0 && p.host->stop_gen == p.gen)) break;
        }
        // Whether ARB seq - 1 has finished, read now (relaxed) so that at low
        // load the wait before go below costs no L2 round trip; the fence
        // there makes it an acquire.
        if (c != 0) finished = LdRelaxedGpu64(&p.dev->finished);
        if (c == 0) {
          // Ending: the other blocks leave once they ran every ARB before
          // seq; the host learns where to resume.
          StReleaseGpu64(&p.dev->go, gen_bits | kResidentExitBit | seq);
          StReleaseSys64(&p.host->exit_word, gen_bits | ended_by_life | seq);
        }
        cmd = c;
        t_last = GlobalNs();
        if (c != 0 && marks != nullptr) marks[kMarkDoorbell] = t_last;
      }
      __syncthreads();
      if (cmd == 0) return;
      ReadResidentArb(d, p.host->desc[seq % kResidentRing], p.host->stage[seq % kResidentRing],
                      bytes_hint, marks);
      // The other blocks' copy first: its stores drain while the prepare
      // runs (the prepare only reads d), and the fence before go covers them.
      BlockCopy16(&dev_desc, &d, sizeof(ResidentDesc));
      PrepareResident(d, marks);
      __syncthreads();
      if (threadIdx.x == 0) {
        if (marks != nullptr) marks[kMarkNumbered] = GlobalNs();
        __threadfence();
        // ARB seq - 1's ops all ran (the first ARB of a launch: the
        // previous launch ended before this one began, stream order). When
        // the read at the doorbell saw it, the fence above (after that
        // relaxed read) orders what ARB seq - 1 wrote before go.
        if (seq != p.start_seq && finished < seq - 1) {
          while (LdAcquire64(&p.dev->finished) < seq - 1) {
          }
        }
        StReleaseGpu64(&p.dev->go, gen_bits | seq);
        if (marks != nullptr) marks[kMarkGo] = t_go = GlobalNs();
      }
      __syncthreads();
    } else {
      if (threadIdx.x == 0) {
        // go(seq), or an exit at a later seq (ARBs before it were posted;
        // block 0 does not wait for this block to read go before it ends).
        int c;
        while (true) {
          const uint64_t g = LdAcquire64(&p.dev->go);
          if ((g >> kResidentGenShift) != p.gen) continue;  // an earlier launch's word
          const uint64_t s = g & kResidentSeqMask;
          if (s > seq || (s == seq && (g & kResidentExitBit) == 0)) {
            c = 1;
            break;
          }
          if (s == seq) {
            c = 0;
            break;
          }
        }
        cmd = c;
        if (marks != nullptr) t_go = GlobalNs();
      }
      __syncthreads();
      if (cmd == 0) return;
      BlockCopy16(&d, &dev_desc, sizeof(ResidentDesc));
      __syncthreads();
    }
    ops(d);
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      last = atomicAdd(d.view.blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
      __threadfence();
      if (marks != nullptr && threadIdx.x == 0) {
        marks[kMarkLastGo] = t_go;
        marks[kMarkOpsDone] = GlobalNs();
      }
      const uint4* src = reinterpret_cast<const uint4*>(d.view.publish_src);
      uint4* dst = reinterpret_cast<uint4*>(d.view.publish);
      const uint32_t words = (d.view.publish_bytes + 15) / 16;
      for (uint32_t w = threadIdx.x; w < words; w += blockDim.x) dst[w] = __ldcg(src + w);
      __syncthreads();
      if (threadIdx.x == 0) {
        if (marks != nullptr) marks[kMarkPublished] = GlobalNs();
        __threadfence_system();
        StReleaseSys64(&p.host->done_seq, seq);
        StReleaseGpu64(&p.dev->finished, seq);
      }
    }
    __syncthreads();  // d is overwritten next round
  }
}

}  // namespace
}  // namespace kvcg::store::gpu
