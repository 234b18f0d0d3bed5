// SpaceSaving: the heavy-hitter sketch behind the router's heavy-hitters
// model — Space-Saving (Metwally, Agrawal, El Abbadi, "Efficient computation
// of frequent and top-k elements in data streams", ICDT 2005) over 64-bit
// key fingerprints (KeyFingerprint), striped so that sampling threads rarely
// meet.
//
// Why Space-Saving and not count-min + a top-K heap:
//  * Space-Saving keeps the candidates themselves, each with its count; the
//    trainer needs exactly that (which keys, how often). Count-min keeps
//    only counts, so a top-K needs a second structure of candidate keys fed
//    on every update (a sketch query plus a heap operation per sample).
//  * Its bound is deterministic, and one-sided per key: with m counters over
//    N samples, a monitored key's count overestimates its true count by at
//    most its recorded error, error <= min count <= N/m, so count - error is
//    a guaranteed lower bound; and every key whose true count exceeds N/m is
//    monitored. Count-min's bound holds only with probability 1 - delta, and
//    collisions inflate cold keys, which then crowd into a top-K.
//  * On skewed streams (the workload a hot cache is for) its actual error is
//    far below N/m: the minimum counter only rises with the tail's mass.
//  * Memory is exactly m counters, allocated as distinct keys arrive, and
//    Clear costs O(keys seen), so retraining every millisecond is cheap.
//
// A stripe is one Space-Saving sketch: its counters in a binary min-heap by
// count (the minimum is what a new key replaces) and an open-addressing
// index fingerprint -> heap position (linear probing, backward-shift
// deletion, doubled as keys arrive up to 2x the stripe's counters). A repeat
// key costs a probe and a sift-down, O(log m) but usually a level or two: a
// frequent key's counter sits deep in a min-heap. A new key when the stripe
// is full takes over the minimum: count = min + 1, error = min.
//
// Striping: a fingerprint's top bits pick one of `stripes` independent
// sketches of counters/stripes counters each, with their own mutex. A key
// always lands in the same stripe, so the guarantees above hold per stripe
// with that stripe's N and m. Add never waits: a sample whose stripe is
// locked (by another sample, or by Collect copying it) is dropped and
// counted in dropped(); samples are an estimate anyway, and a request must
// not block on training.
//
// Thread safety: Add, Collect, Clear, total and dropped are thread-safe and
// may run concurrently. Clear concurrent with Add may keep a few samples.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace kvcg::router {

class SpaceSaving {
 public:
  struct Counter {
    uint64_t fingerprint = 0;
    uint64_t count = 0;  // Estimated samples of the key: true <= count.
    uint64_t error = 0;  // count - error <= true.
  };

  // About `counters` counters in all (at least one per stripe). `stripes` is
  // rounded up to a power of two; 0 = automatic (up to 16, keeping >= 1024
  // counters per stripe).
  explicit SpaceSaving(size_t counters, size_t stripes = 0);
  ~SpaceSaving();
  SpaceSaving(const SpaceSaving&) = delete;
  SpaceSaving& operator=(const SpaceSaving&) = delete;

  // Counts one sample of the key with fingerprint `fp` (!= 0). Returns false,
  // counting nothing, when its stripe was busy (see above).
  bool Add(uint64_t fp);

  // Appends every monitored key whose guaranteed count (count - error) is at
  // least `min_guaranteed` to `out`, in no particular order, and returns the
  // samples counted so far (N). Each stripe is copied under its lock, so
  // each stripe's part is one instant's; the stripes' instants differ.
  uint64_t Collect(uint64_t min_guaranteed, std::vector<Counter>* out) const;

  // Forgets every key and sample (the memory is kept for the next window).
  void Clear();

  uint64_t total() const;  // Samples counted since the last Clear.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t counters() const { return per_stripe_ * stripe_count_; }
  size_t stripes() const { return stripe_count_; }

 private:
  struct Stripe;

  size_t StripeOf(uint64_t fp) const { return stripe_shift_ == 64 ? 0 : fp >> stripe_shift_; }

  size_t stripe_count_ = 1;
  unsigned stripe_shift_ = 64;
  size_t per_stripe_ = 1;
  std::unique_ptr<Stripe[]> stripes_;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace kvcg::router
