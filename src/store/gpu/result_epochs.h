// ResultEpochs: when may the GPU store reuse a replaced value's memory?
//
// Results hand out views straight into the host value heap (kvcg/results.h),
// so a blob that a PUT replaced or a DELETE removed may still be read by a
// consumer. Reclamation is by epochs, one per aggregated batch (ARB), in
// pipeline order: a blob unlinked by ARB k can be pointed at only by results
// of ARBs <= k (a later ARB's kernel runs after k's and cannot find it), so
// it is freed once every ARB <= k has been completed and all its Results
// released. Epochs rather than a reference count per blob because the
// count would cost an atomic per GET result on the consumer's side, while
// an epoch costs one atomic per batch; the price is that one long-held
// Results delays the reuse of everything replaced after it (documented in
// results.h: the store grows, it does not fail).
//
// Each Arb also owns the ARB's page-locked output buffer (codes and views),
// which the Results of its requests borrow.
//
// A snapshot (Store::OpenSnapshot) is an epoch too, begun at its marker in
// the pipeline with no output buffer: its image points at the blobs linked
// then, and every later unlink or Clear() retires with a later sequence
// number, so nothing the image points at is freed before its reader
// releases the epoch. Such an epoch may be held for a long time (a snapshot
// being written to disk), so an epoch released behind it is ended (its
// output buffer freed) without waiting for it; only the retired blobs wait.
//
// Threads: Begin, Retire, RetireHeap, Collect and the destructor run on the
// pipeline thread; Release on any thread (the consumer's).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>

#include "kvcg/results.h"
#include "store/gpu/device_heaps.h"
#include "store/gpu/pinned_memory.h"

namespace kvcg::store::gpu {

class ResultEpochs {
 public:
  struct Arb {
    uint64_t seq = 0;
    std::atomic<uint32_t> refs{1};  // the pipeline's own hold until delivery
    char* out = nullptr;            // page-locked output buffer
    size_t out_bytes = 0;
  };

  // The Results::Owner of one request's results: one reference on its Arb.
  class Lease final : public Results::Owner {
   public:
    explicit Lease(Arb* arb) : arb_(arb) {}
    ~Lease() override { Release(arb_); }

   private:
    Arb* arb_;
  };

  explicit ResultEpochs(PinnedMemory* memory) : memory_(memory) {}
  ~ResultEpochs();  // the store is closing: every Results must be gone
  ResultEpochs(const ResultEpochs&) = delete;
  ResultEpochs& operator=(const ResultEpochs&) = delete;

  // A new epoch with an output buffer of `out_bytes` (none when 0); null
  // when no pinned memory can be had.
  Arb* Begin(size_t out_bytes);
  // Drops one reference (a Results released, or the pipeline's hold).
  static void Release(Arb* arb) { arb->refs.fetch_sub(1, std::memory_order_acq_rel); }
  // `blob` (of `heap`) was unlinked by the newest epoch begun so far that
  // has completed, `seq`. Called once per replacing PUT, so a blob costs
  // 16 bytes in limbo; its epoch and heap are kept once per run of blobs.
  void Retire(uint64_t seq, ValueHeap* heap, uint64_t* blob, uint64_t size) {
    if (runs_.empty() || runs_.back().seq != seq || runs_.back().heap != heap) {
      runs_.push_back({seq, heap, 0, nullptr});
    }
    ++runs_.back().blobs;
    blobs_.push_back({blob, size});
  }
  // Clear(): the whole heap goes once every earlier epoch is released.
  void RetireHeap(uint64_t seq, std::unique_ptr<ValueHeap> heap) {
    runs_.push_back({seq, nullptr, 0, heap.release()});
  }
  // Ends fully released epochs and frees their output buffers, then frees
  // what was retired before the oldest epoch still held. Amortized O(1) per
  // epoch.
  void Collect();
  // Sequence number of the newest epoch begun (0 before the first).
  uint64_t last_seq() const { return next_seq_ - 1; }
  // Epochs begun and not yet ended (for tests).
  size_t live() const { return live_.size(); }

 private:
  // Retired in epoch `seq`: the next `blobs` entries of blobs_ (of `heap`),
  // or a `whole` heap (RetireHeap).
  struct Run {
    uint64_t seq;
    ValueHeap* heap;
    size_t blobs;
    ValueHeap* whole;
  };
  struct RetiredBlob {
    uint64_t* blob;
    uint64_t size;
  };
  void End(Arb* a);  // frees its output buffer and a

  PinnedMemory* const memory_;
  // Oldest first; ordered by seq (ended epochs are removed from anywhere).
  std::deque<Arb*> live_;
  std::deque<Run> runs_;  // by seq
  std::deque<RetiredBlob> blobs_;
  uint64_t next_seq_ = 1;
  // live_ is swept for released epochs behind a held one once it reaches
  // this size, which then becomes twice what is left.
  size_t sweep_at_ = kMinSweep;
  static constexpr size_t kMinSweep = 64;
};

}  // namespace kvcg::store::gpu
