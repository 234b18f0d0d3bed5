// ResultEpochs (result_epochs.h).
#include "store/gpu/result_epochs.h"

#include <algorithm>

namespace kvcg::store::gpu {

ResultEpochs::~ResultEpochs() {
  for (Arb* a : live_) End(a);
  for (Run& r : runs_) delete r.whole;
}

ResultEpochs::Arb* ResultEpochs::Begin(size_t out_bytes) {
  char* out = nullptr;
  if (out_bytes != 0) {
    out = static_cast<char*>(memory_->Allocate(out_bytes));
    if (out == nullptr) return nullptr;
  }
  Arb* a = new Arb;
  a->seq = next_seq_++;
  a->out = out;
  a->out_bytes = out_bytes;
  live_.push_back(a);
  return a;
}

void ResultEpochs::End(Arb* a) {
  if (a->out != nullptr) memory_->Free(a->out, a->out_bytes);
  delete a;
}

void ResultEpochs::Collect() {
  while (!live_.empty() && live_.front()->refs.load(std::memory_order_acquire) == 0) {
    End(live_.front());
    live_.pop_front();
  }
  if (live_.size() >= sweep_at_) {
    // Something old is held (a snapshot, a kept Results): end the released
    // epochs behind it, keeping the order of the rest.
    size_t kept = 0;
    for (size_t i = 0; i < live_.size(); ++i) {
      Arb* a = live_[i];
      if (a->refs.load(std::memory_order_acquire) == 0) {
        End(a);
      } else {
        live_[kept++] = a;
      }
    }
    live_.resize(kept);
    sweep_at_ = std::max(kMinSweep, 2 * kept);
  }
  // Everything retired by an epoch older than the oldest live one is free:
  // every epoch <= its seq has ended.
  const uint64_t min_live = live_.empty() ? next_seq_ : live_.front()->seq;
  while (!runs_.empty() && runs_.front().seq < min_live) {
    const Run r = runs_.front();
    runs_.pop_front();
    delete r.whole;
    for (size_t i = 0; i < r.blobs; ++i) {
      r.heap->Free(blobs_.front().blob, blobs_.front().size);
      blobs_.pop_front();
    }
  }
}

}  // namespace kvcg::store::gpu
