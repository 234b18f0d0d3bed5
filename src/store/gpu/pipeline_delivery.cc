// Pipeline delivery: a completed ARB's Results to its requests'
// completions — inline when the pipeline is idle, else on the delivery
// thread (pipeline.h, "Delivery", says why and argues the order).
//
// The hand-off is a ring of kDeliveryRing entries under one mutex; an
// entry takes the slot's request list by swapping vectors, so nothing is
// allocated per ARB. A full ring makes the pipeline wait (backpressure: the
// delivery thread is then the slower stage). The delivery thread spins a
// little before it sleeps, and the pipeline wakes it only when it sleeps.
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "kvcg/results.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/pipeline.h"

namespace kvcg::store::gpu {
namespace {

// The kernel writes value slots in the form Results reads them.
static_assert(kValueCopyBytes == kValueSlotBytes, "a value slot holds a key record's copy");
static_assert(kSlotHoldsView == kvcg::kSlotHoldsView, "one marker for a slot holding a view");

// How long the delivery thread polls for the next ARB before it sleeps.
// Under load ARBs complete every few tens of µs: it should not sleep then
// (a wake-up costs the pipeline thread a futex call); idle, it should.
constexpr int kDeliverySpinUs = 100;

}  // namespace

void Pipeline::DeliverResults(Delivery& d) {
  ResultEpochs::Arb* const arb = d.arb;
  if (arb == nullptr) {  // nothing was launched (only empty batches)
    for (Request* r : d.reqs) {
      Store::Completion done = std::move(r->done);
      delete r;
      done(Results());
    }
  } else {
    const Code* codes = reinterpret_cast<const Code*>(arb->out + d.out_codes);
    const char* values = arb->out + d.out_values;
    const uint64_t* expires = d.expires();
    arb->refs.fetch_add(uint32_t(d.reqs.size()), std::memory_order_relaxed);
    for (size_t r = 0; r < d.reqs.size(); ++r) {
      Request* req = d.reqs[r];
      const size_t b = d.begin[r];
      const size_t n = req->batch.size();
      auto lease = std::make_unique<ResultEpochs::Lease>(arb);
      const uint64_t* exp = expires != nullptr ? expires + b : nullptr;
      Results res =
          d.value_slots
              ? Results(n, codes + b,
                        reinterpret_cast<const uint8_t*>(arb->out + d.out_value_lens) + b,
                        arb->out + d.out_value_slots + b * kValueSlotBytes, std::move(lease), exp)
          : general_ ? Results(n, codes + b, reinterpret_cast<const ValueRef*>(values) + b,
                               std::move(lease), exp)
                     : Results(n, codes + b, reinterpret_cast<const uint64_t*>(values) + b,
                               std::move(lease));
      if (profile_ && req->enqueued_ns != 0) {  // (a retry's own request was never queued)
        prof_.answered += NowNs() - req->enqueued_ns;  // one thread delivers at a time
        ++prof_.timed_batches;
      }
      Store::Completion done = std::move(req->done);
      delete req;  // the batch's memory goes back to its pool before the callback
      done(std::move(res));
    }
    ResultEpochs::Release(arb);  // the pipeline's hold
  }
  d.reqs.clear();
  d.begin.clear();
  d.arb = nullptr;
}

void Pipeline::Deliver(Slot& s) {
  StageTimer t(profile_, &prof_.deliver);
  DeliverResults(s);
}

void Pipeline::Hand(Slot& s) {
  // Idle (nothing queued, pending or in flight behind this ARB) and nothing
  // left with the delivery thread: deliver here, without a hand-off.
  const bool busy = queued_.load(std::memory_order_acquire) != 0 || pending_ != nullptr ||
                    !inflight_.empty();
  if (!busy && ring_pending_.load(std::memory_order_acquire) == 0) {
    Deliver(s);
    return;
  }
  StageTimer t(profile_, &prof_.hand);
  if (profile_) ++prof_.handed;
  std::unique_lock<std::mutex> lock(ring_mu_);
  while (ring_count_ == kDeliveryRing) {  // the delivery thread is behind: wait for it
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  // The entry is empty (delivered): the slot takes its emptied vectors for
  // its next ARB and is left empty too (arb null).
  std::swap(ring_[(ring_head_ + ring_count_) % kDeliveryRing], static_cast<Delivery&>(s));
  ++ring_count_;
  ring_pending_.store(ring_count_, std::memory_order_release);
  const bool wake = ring_sleeping_.load(std::memory_order_acquire);
  lock.unlock();
  if (wake) ring_cv_.notify_one();
}

void Pipeline::DeliveryRun() {
  while (true) {
    const auto spin_until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(kDeliverySpinUs);
    while (ring_pending_.load(std::memory_order_acquire) == 0 &&
           std::chrono::steady_clock::now() < spin_until) {
      CpuRelax();
    }
    Delivery* d;
    {
      std::unique_lock<std::mutex> lock(ring_mu_);
      if (ring_count_ == 0) {
        ring_sleeping_.store(true, std::memory_order_seq_cst);
        ring_cv_.wait(lock, [&] { return ring_stop_ || ring_count_ != 0; });
        ring_sleeping_.store(false, std::memory_order_relaxed);
        if (ring_count_ == 0) return;  // stopping, and everything is delivered
      }
      d = &ring_[ring_head_];  // stays ours: the pipeline fills only past the count
    }
    {
      StageTimer t(profile_, &prof_.offloaded);
      DeliverResults(*d);
    }
    std::lock_guard<std::mutex> lock(ring_mu_);
    ring_head_ = (ring_head_ + 1) % kDeliveryRing;
    --ring_count_;
    ring_pending_.store(ring_count_, std::memory_order_release);
  }
}

void Pipeline::DrainDeliveries() {
  while (ring_pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

}  // namespace kvcg::store::gpu
