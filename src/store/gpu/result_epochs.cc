// ResultEpochs (result_epochs.h).
#include "store/gpu/result_epochs.h"

namespace kvcg::store::gpu {

ResultEpochs::~ResultEpochs() {
  for (Arb* a : live_) {
    memory_->Free(a->out, a->out_bytes);
    delete a;
  }
  for (Retired& r : limbo_) delete r.whole;
}

ResultEpochs::Arb* ResultEpochs::Begin(size_t out_bytes) {
  char* out = static_cast<char*>(memory_->Allocate(out_bytes));
  if (out == nullptr) return nullptr;
  Arb* a = new Arb;
  a->seq = next_seq_++;
  a->out = out;
  a->out_bytes = out_bytes;
  live_.push_back(a);
  return a;
}

void ResultEpochs::Collect() {
  while (!live_.empty() && live_.front()->refs.load(std::memory_order_acquire) == 0) {
    Arb* a = live_.front();
    live_.pop_front();
    memory_->Free(a->out, a->out_bytes);
    delete a;
  }
  // Everything retired by an epoch older than the oldest live one is free.
  const uint64_t min_live = live_.empty() ? next_seq_ : live_.front()->seq;
  while (!limbo_.empty() && limbo_.front().seq < min_live) {
    Retired r = limbo_.front();
    limbo_.pop_front();
    if (r.whole != nullptr) {
      delete r.whole;
    } else {
      r.heap->Free(r.blob, r.size);
    }
  }
}

}  // namespace kvcg::store::gpu
