// SpaceSaving implementation; see space_saving.h for the design.
#include "router/space_saving.h"

#include <bit>

namespace kvcg::router {

// One Space-Saving sketch. Everything below is under `mu`.
struct alignas(64) SpaceSaving::Stripe {
  struct Node {  // a counter, in the min-heap
    uint64_t count;
    uint64_t error;
    uint32_t slot;  // its index slot
  };
  struct Slot {  // an index entry; fp 0 = empty
    uint64_t fp;
    uint32_t node;  // its heap position
  };

  mutable std::mutex mu;
  uint64_t total = 0;
  std::vector<Node> heap;
  std::vector<Slot> index;
  size_t mask = 0;

  // The slot holding fp, or the empty slot where it would go.
  size_t Probe(uint64_t fp) const {
    size_t i = fp & mask;
    while (index[i].fp != 0 && index[i].fp != fp) i = (i + 1) & mask;
    return i;
  }

  void Place(size_t n, const Node& x) {
    heap[n] = x;
    index[x.slot].node = static_cast<uint32_t>(n);
  }

  void SiftDown(size_t n) {
    const Node x = heap[n];
    const size_t size = heap.size();
    for (;;) {
      size_t c = 2 * n + 1;
      if (c >= size) break;
      if (c + 1 < size && heap[c + 1].count < heap[c].count) ++c;
      if (heap[c].count >= x.count) break;
      Place(n, heap[c]);
      n = c;
    }
    Place(n, x);
  }

  void SiftUp(size_t n) {
    const Node x = heap[n];
    while (n > 0) {
      const size_t parent = (n - 1) / 2;
      if (heap[parent].count <= x.count) break;
      Place(n, heap[parent]);
      n = parent;
    }
    Place(n, x);
  }

  // Backward-shift deletion: later entries of the probe run move into the
  // hole when that keeps them reachable from their home slot.
  void EraseSlot(size_t hole) {
    for (size_t j = (hole + 1) & mask; index[j].fp != 0; j = (j + 1) & mask) {
      const size_t home = index[j].fp & mask;
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        index[hole] = index[j];
        heap[index[hole].node].slot = static_cast<uint32_t>(hole);
        hole = j;
      }
    }
    index[hole].fp = 0;
  }

  // Doubles the index (an allocation once per doubling, not per sample).
  void Grow() {
    std::vector<Slot> old = std::move(index);
    index.assign(old.empty() ? 16 : old.size() * 2, Slot{0, 0});
    mask = index.size() - 1;
    for (Node& node : heap) {
      const uint64_t fp = old[node.slot].fp;
      const size_t i = Probe(fp);
      index[i] = {fp, old[node.slot].node};
      node.slot = static_cast<uint32_t>(i);
    }
  }

  void Add(uint64_t fp, size_t capacity) {
    ++total;
    if (index.empty()) Grow();
    size_t i = Probe(fp);
    if (index[i].fp == fp) {  // monitored: one more
      const size_t n = index[i].node;
      ++heap[n].count;
      SiftDown(n);
      return;
    }
    if (heap.size() < capacity) {  // a free counter
      if ((heap.size() + 1) * 2 > index.size()) {
        Grow();
        i = Probe(fp);
      }
      index[i] = {fp, static_cast<uint32_t>(heap.size())};
      heap.push_back({1, 0, static_cast<uint32_t>(i)});
      SiftUp(heap.size() - 1);
      return;
    }
    // Full: the new key takes over the minimum counter, inheriting its count
    // as its error.
    const uint64_t min = heap[0].count;
    EraseSlot(heap[0].slot);
    i = Probe(fp);
    index[i] = {fp, 0};
    heap[0] = {min + 1, min, static_cast<uint32_t>(i)};
    SiftDown(0);
  }

  void Clear() {
    for (const Node& node : heap) index[node.slot].fp = 0;
    heap.clear();
    total = 0;
  }
};

SpaceSaving::SpaceSaving(size_t counters, size_t stripes) {
  counters = std::max<size_t>(counters, 1);
  if (stripes == 0) {
    stripes = 1;
    while (stripes < 16 && counters / (stripes * 2) >= 1024) stripes *= 2;
  }
  stripe_count_ = std::bit_ceil(stripes);
  stripe_shift_ = 64 - static_cast<unsigned>(std::countr_zero(stripe_count_));
  per_stripe_ = std::max<size_t>((counters + stripe_count_ - 1) / stripe_count_, 1);
  stripes_ = std::make_unique<Stripe[]>(stripe_count_);
}

SpaceSaving::~SpaceSaving() = default;

bool SpaceSaving::Add(uint64_t fp) {
  Stripe& s = stripes_[StripeOf(fp)];
  std::unique_lock lock(s.mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  s.Add(fp, per_stripe_);
  return true;
}

uint64_t SpaceSaving::Collect(uint64_t min_guaranteed, std::vector<Counter>* out) const {
  uint64_t total = 0;
  for (size_t k = 0; k < stripe_count_; ++k) {
    const Stripe& s = stripes_[k];
    std::lock_guard lock(s.mu);
    total += s.total;
    for (const Stripe::Node& node : s.heap) {
      if (node.count - node.error < min_guaranteed) continue;
      out->push_back({s.index[node.slot].fp, node.count, node.error});
    }
  }
  return total;
}

void SpaceSaving::Clear() {
  for (size_t k = 0; k < stripe_count_; ++k) {
    std::lock_guard lock(stripes_[k].mu);
    stripes_[k].Clear();
  }
}

uint64_t SpaceSaving::total() const {
  uint64_t total = 0;
  for (size_t k = 0; k < stripe_count_; ++k) {
    std::lock_guard lock(stripes_[k].mu);
    total += stripes_[k].total;
  }
  return total;
}

}  // namespace kvcg::router
