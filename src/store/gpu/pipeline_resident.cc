// Pipeline, the host side of the resident kernel (resident_ring.h has the
// protocol and why): small ARBs are posted to a ring that a kernel staying
// on the device takes them from, instead of three or four CUDA calls and two
// kernel start-ups per ARB.
//
// Paths. An ARB goes to the ring when it moves its bytes inside the kernels
// anyway (staged input up to kKernelCopyInBytes, results up to
// kKernelCopyOutBytes), has at most kResidentMaxOps ops and no memory sample
// follows it (cache mode keeps the stream path: its eviction passes need the
// charged bytes after each ARB). Everything else is launched on a slot's
// stream as before. The two paths never overlap: before an ARB of one, the
// ARBs in flight on the other complete, which keeps same-key order across
// ARBs (the ring runs its ARBs in seq order, a stream ARB's table kernel
// waits for the earlier ones it must follow, WaitForTableKernels).
//
// Lifetime. The kernel is launched at the first post and whenever it ended
// (idle, its lifetime, or a stop) before taking an ARB that was posted. The
// pipeline stops it before anything that may allocate or free device memory
// on this thread (CompleteInFlight: markers, sweeps, ARBs that run alone, a
// stream ARB), so its own CUDA calls never wait for it.
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>

#include "store/gpu/arb_layout.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/pipeline.h"
#include "store/gpu/window_kernel.h"

namespace kvcg::store::gpu {
namespace {

// The kernel ends after this long without an ARB, or after this long at
// most (at an ARB boundary; relaunched if more are posted): the bounds on
// how long another thread's cudaFree can wait for it.
constexpr uint64_t kIdleNs = 1000000;  // 1 ms
constexpr uint64_t kLifeNs = 20000000;  // 20 ms: relaunches make the tail (H100: 512-op fixed8
                                         // p99 146 us with 4 ms, 37-39 us with 20 ms)
// Polls of the ring between looks at the stream for a device error.
constexpr uint32_t kPollsPerErrorCheck = 4096;

}  // namespace

cudaError_t Pipeline::StartResident() {
  res_blocks_ = store_->config().gpu_resident_blocks;
  if (res_blocks_ == 0) return cudaSuccess;
  cudaError_t err = cudaStreamCreateWithFlags(&res_stream_, cudaStreamNonBlocking);
  if (err == cudaSuccess) {
    err = cudaHostAlloc(reinterpret_cast<void**>(&res_host_), sizeof(ResidentHostWords),
                        cudaHostAllocMapped);
  }
  if (err == cudaSuccess) std::memset(static_cast<void*>(res_host_), 0, sizeof(ResidentHostWords));
  if (err == cudaSuccess) err = cudaMalloc(reinterpret_cast<void**>(&res_dev_), sizeof(ResidentDevWords));
  if (err == cudaSuccess) err = cudaMemset(res_dev_, 0, sizeof(ResidentDevWords));
  if (err == cudaSuccess) err = cudaDeviceSynchronize();  // the memset, before any launch
  // Every slot's buffers hold the largest ARB the ring takes, so posting one
  // never reallocates (a cudaFree would wait for the running kernel).
  const size_t work = WorkLayout(kResidentMaxOps, 0, general_).total;
  for (Slot& s : slots_) {
    if (err != cudaSuccess) break;
    if (!Ensure(s.in, kKernelCopyInBytes) || !Ensure(s.work, work) ||
        !Ensure(s.out, kKernelCopyOutBytes)) {
      err = cudaErrorMemoryAllocation;
      break;
    }
  }
  return err;
}

void Pipeline::FreeResident() {
  if (res_stream_ != nullptr) {
    cudaStreamSynchronize(res_stream_);  // it ends within kIdleNs: nothing is posted now
    cudaStreamDestroy(res_stream_);
  }
  if (res_host_ != nullptr) cudaFreeHost(res_host_);
  if (res_dev_ != nullptr) cudaFree(res_dev_);
  res_stream_ = nullptr;
  res_host_ = nullptr;
  res_dev_ = nullptr;
}

bool Pipeline::ResidentEligible(size_t n, bool in_kernel, bool publish) const {
  return res_blocks_ != 0 && n <= kResidentMaxOps && in_kernel && publish && evict_max_ == 0 &&
         (!general_ || LSlabTile() == kLSlabResidentTile);
}

void Pipeline::SwitchPath(bool resident) {
  if (!inflight_.empty() && inflight_.back()->resident != resident) CompleteInFlight();
  if (!resident) StopResident();
}

cudaError_t Pipeline::LaunchResident(uint64_t start_seq) {
  ResidentParams p;
  p.host = res_host_;
  p.dev = res_dev_;
  res_gen_ = NextResidentGen(res_gen_);
  p.gen = res_gen_;
  // A stop request left by the launch of this generation 2^24 launches
  // ago would end this one at once.
  if (res_host_->stop_gen == res_gen_) res_host_->stop_gen = 0;
  p.start_seq = start_seq;
  p.idle_ns = kIdleNs;
  p.life_ns = kLifeNs;
  p.profile = profile_ ? 1 : 0;
  const cudaError_t err = general_ ? LaunchLSlabResident(p, res_blocks_, res_stream_)
                                   : LaunchWindowResident(p, res_blocks_, res_stream_);
  res_running_ = err == cudaSuccess;
  if (res_running_) resident_launches_.fetch_add(1, std::memory_order_relaxed);
  return err;
}

cudaError_t Pipeline::NoteResidentExit(bool renew) {
  const uint64_t w = res_host_->exit_word;
  if (!res_running_ || (w >> kResidentGenShift) != res_gen_) return cudaSuccess;
  // The launch ended. When it did not take every ARB posted, a new one goes
  // on from the first it did not take (after the old one ends: stream
  // order); never from the next seq, which would skip them.
  // A renewal: its lifetime ended it at a poll for work while this thread,
  // idle too, polls for work: the store is in use, so the launch is made
  // now rather than by the next ARB (a launch costs that ARB ~10-30 us:
  // H200, 512-op batches one per ~110 us, ~0.7 % of them, most of the
  // slowest 1 %; BENCHMARKS 2z). A cudaFree waiting in another thread
  // should not be held longer for it (a waiting free holds a driver lock
  // the launch needs; reasoned, not tested), and the new launch ends
  // within kLifeNs again.
  res_running_ = false;
  const uint64_t first = w & kResidentSeqMask;
  const bool renewal = renew && first > res_posted_ && (w & kResidentEndedByLife) != 0;
  if (first > res_posted_ && !renewal) return cudaSuccess;
  const cudaError_t err = LaunchResident(first);
  if (renewal && err == cudaSuccess) resident_renewals_.fetch_add(1, std::memory_order_relaxed);
  return err;
}

cudaError_t Pipeline::PostResident(Slot& s, const ArbDev& a, ArbView v) {
  // A launch that ended is noticed here rather than at the first poll.
  cudaError_t err = NoteResidentExit();
  if (err != cudaSuccess) return err;
  const uint64_t seq = res_posted_ + 1;
  if (!res_running_) {
    err = LaunchResident(seq);
    if (err != cudaSuccess) return err;
  }
  // The input is in this seq's stage (Issue put it there).
  if (a.stage != res_host_->stage[seq % kResidentRing]) return cudaErrorInvalidValue;
  const uint32_t n = uint32_t(s.n);
  // Every block runs at once, so each tile may take its op by index
  // (arb_ops.cuh StaticClaim: no claims on one shared word, and block 0 is
  // free to prepare the next ARB) when the other blocks have a tile per op.
  // With two ops on some tiles the claims stay dynamic: a tile's second op
  // doubles the ARB's latency, which block 0's tiles avoid (H100, 512-op
  // general ARB on 16 blocks: ops 14.7 us static over 15 blocks, 10.5 us
  // claimed over 16).
  const uint32_t lanes = general_ ? uint32_t(kLSlabResidentTile) : uint32_t(kWindowTile);
  const uint32_t tiles_per_block = kResidentThreads / lanes;
  if ((res_blocks_ - 1) * tiles_per_block >= n) {
    v.cursor = nullptr;
    v.ops_per_warp = 1;
  } else {
    v.ops_per_warp = OpsPerTile(n, res_blocks_ * tiles_per_block, lanes);
  }
  ResidentDesc& d = res_host_->desc[seq % kResidentRing];
  d.prep = a;
  d.view = v;
  if (general_) {
    d.lslab = store_->table();
  } else {
    d.window = store_->window_view();
  }
  d.items = n <= 256 ? 1 : n <= 512 ? 2 : 4;
  // The descriptor and the staged input before the doorbell (the kernel
  // reads them after an acquire load of it).
  std::atomic_thread_fence(std::memory_order_release);
  if (profile_) s.posted_ns = NowNs();
  res_host_->doorbell = seq | uint64_t(a.stage_bytes) << kDoorbellBytesShift;
  res_posted_ = seq;
  s.seq = seq;
  resident_arbs_.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t Pipeline::Query(const Slot& s) {
  if (!s.resident) return cudaEventQuery(s.finished);
  if (res_host_->done_seq >= s.seq) {
    std::atomic_thread_fence(std::memory_order_acquire);  // its results after the word
    return cudaSuccess;
  }
  if (!res_running_ && sticky_ != cudaSuccess) return sticky_;  // a stop or launch failed
  if (res_running_ && (res_host_->exit_word >> kResidentGenShift) == res_gen_) {
    const cudaError_t err = NoteResidentExit();
    return err != cudaSuccess ? err : cudaErrorNotReady;
  }
  if (++res_polls_ % kPollsPerErrorCheck == 0) {
    const cudaError_t err = cudaStreamQuery(res_stream_);
    if (err != cudaSuccess && err != cudaErrorNotReady) return err;
  }
  return cudaErrorNotReady;
}

void Pipeline::StopResident() {
  // The kernel takes every ARB posted before it looks at stop_gen; but a
  // launch that already ended (its lifetime) may have left some: they run
  // in a new launch, which is stopped in turn. ARBs may still be in flight
  // (a heap's allocation during Launch): they complete on the device here
  // and are answered at their completion as usual.
  while (res_running_) {
    res_running_ = false;
    res_host_->stop_gen = res_gen_;
    cudaError_t err = cudaStreamSynchronize(res_stream_);
    const uint64_t first = res_host_->exit_word & kResidentSeqMask;
    if (err == cudaSuccess && first <= res_posted_) err = LaunchResident(first);
    if (err != cudaSuccess) {
      if (sticky_ == cudaSuccess) sticky_ = err;
      cudaGetLastError();
      res_running_ = false;
      return;
    }
  }
}

}  // namespace kvcg::store::gpu
