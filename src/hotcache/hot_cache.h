// HotCache: the KVCG paper's Hot Cache (§6) — a readers–writer-locked hash
// map of 8-entry nodes holding the latest value of the keys the router calls
// hot, plus the log of this epoch's updates for replay at a model switch.
//
// Design.
//  * Buckets are a fixed power-of-two array (sized at construction), each a
//    chain of nodes of 8 entries guarded by a readers–writer spin lock (the
//    locks are an array of their own; see "GETs without the lock"); a chain
//    grows by a node when its nodes are full. Entries compare the full hash
//    first and then the key bytes exactly, so equal hashes never alias.
//  * An entry is in one of three states: a value, a tombstone (the key is
//    known absent, so a GET is answered without the canonical store), or
//    unknown. Every operation on a key with no entry is a miss: the entry is
//    created unknown and *pending*, and the operation itself is executed on
//    the canonical store by the caller ("flagged to fill the cache"); its
//    result becomes the entry's state (Complete). Misses include PUT and
//    DELETE, not only GET, because the contract returns the previous value,
//    which only the canonical store knows; the fill then creates the entry
//    (a DELETE leaves a tombstone), as in the paper.
//  * While an entry is pending, every later operation on that key queues on
//    it in arrival order and runs when the fill arrives (Complete returns
//    them as done). That gives same-key order (inside a batch and across
//    batches) across the hot path and the cold path, and it is why a fill can
//    never overwrite a newer value: nothing writes a pending entry.
//  * Expiry (kvcg/batch.h, Expiry): an entry keeps its value's expire-at.
//    Every hit reads the store's clock (Options::clock) when the entry has
//    one: an expired entry is absent (lazy expiry). A clean expired entry is
//    simply dropped and the op becomes a miss (the canonical store holds the
//    same expire-at and expires it itself); a dirty one becomes a dirty
//    tombstone, so the write-back deletes the older value the canonical
//    store may still hold. PUT/CAS honour kKeepExpiry, an expire-at already
//    past leaves a tombstone, kExpire applies under ExpireConditionHolds, and
//    every answer reports the expire-at of the value it returns. The
//    write-back carries each entry's expire-at. DropExpired is the engine's
//    active sweep.
//  * GETs without the lock (the hot path's common case). A GET that finds a
//    settled entry (a value or a tombstone, nothing pending, no expire-at)
//    whose key and value fit kFastBytes reads the entry's fast copy — the
//    key and value again, in atomic words, behind a header word that holds
//    the entry's version (a seqlock per entry: a writer clears the header,
//    rewrites the words and stores a header with the next version) — and
//    answers when the header did not move; it writes no shared memory. It
//    reads two lines: the bucket's (its first node and a 16-bit tag per
//    entry of that node) and the entry's fast copy. Only inserts and
//    removals write a bucket's line; an update writes only its entry's, and
//    the bucket locks writers take are an array of their own, which readers
//    never read. Why: under skew every thread reads the same few keys while
//    some write them; taking even a shared lock is two atomic writes to a
//    line that then bounces between cores (measured on the H100 host, 12
//    threads, zipf 0.99: ~680 cycles per hot op in Execute, against ~170
//    with 2 threads), and a bucket-wide sequence word next to the lock (the
//    previous design) made every write cost each reader of the bucket's
//    line, and of its neighbours', one more miss. Everything else (misses,
//    updates, big or expiring entries, a header that kept moving) takes the
//    lock. Nodes are therefore never freed while traffic may run (a
//    lock-free reader may be on one), and a bucket's first node, once
//    there, stays first (new nodes go at the end of the chain): empty
//    nodes are reused by Insert, and only Clear (quiescent) frees them.
//  * Write-back (default): a hit PUT/DELETE/CAS changes the entry in place,
//    marks it dirty and, the first time in the epoch, appends its key to the
//    log (a contiguous vector, cheap to scan). The canonical store is behind
//    until the log is replayed (CollectLog/CommitLog at a model switch).
//    Write-through (when the store has capacity limits, so that a replay can
//    never fail for lack of room): a state-changing update is executed on the
//    canonical store like a miss; entries are never dirty.
//
// Thread safety: Execute and Complete are thread-safe and may run
// concurrently. CollectLog/CommitLog/Clear need quiescence (no Execute or
// Complete in progress and nothing pending); the engine's switch protocol
// provides it. Evict may run concurrently with traffic on keys it keeps.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/prefetch.h"
#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "kvcg/results.h"
#include "store/cpu/rw_spin_lock.h"

namespace kvcg::hotcache {

// Where the cache writes the results it produces. The engine implements it
// over its per-batch ResultsBuilder, so an answer costs one copy of the value
// into the batch's arena and no allocation per operation.
class ResultSink {
 public:
  // Result of operation `index` of the sink's batch. `value` is the entry's
  // value, valid only during the call (the bucket lock is held): copy it.
  // `queued` is false when the answer comes from Execute, on its caller's
  // thread during the call; true when it comes from Complete (the op had
  // waited behind a miss), on the thread calling Complete, possibly while
  // other threads write other results of the same batch.
  // `expire_at` is that value's expire-at (kNoExpiry: none, or not found).
  // The answer must not reach the op's client before the Execute or
  // Complete call that gives it has returned: an update takes effect for
  // lock-free readers when the bucket's write section ends, at the end of
  // that call (see "GETs without the lock"), so a client that saw an
  // update's answer earlier could then read the older value. (The engine
  // delivers answers after its routing pass, or after Complete returns.)
  virtual void Answer(uint32_t index, Code code, std::string_view value, uint64_t expire_at,
                      bool queued) = 0;

 protected:
  ~ResultSink() = default;
};

// One operation of a batch being executed. The batch and the sink outlive
// the op (until its result has been written).
struct OpRef {
  const Batch* batch = nullptr;
  uint32_t index = 0;
  ResultSink* sink = nullptr;
};

enum class Outcome : uint8_t {
  kDone,     // The result was written to the sink.
  kWaiting,  // Queued behind an in-flight operation on the same key; a later
             // Complete answers it (queued = true) and returns it as done.
  kMiss,     // The caller must run the op on the canonical store, record its
             // result itself and call Complete(op, hash, result).
};

class HotCache {
 public:
  struct Options {
    uint64_t buckets = 1 << 16;  // Rounded up to a power of two.
    bool write_through = false;
    ClockFunction clock = &SystemClockMs;  // the store's clock (Config::clock)
    // A miss that finds the key absent leaves a tombstone, so the next op
    // on the key is answered here (a hot absent key costs no canonical
    // round trip). With bound_absent (hot-only mode, where every key a
    // client names comes through the cache) only while the cache holds at
    // most capacity() entries: past that, keys that do not exist are not
    // kept (after a miss's fill, or once a deleted key's tombstone has been
    // written back), so that a client asking for random keys, or creating
    // and deleting them, cannot grow the cache without bound.
    bool bound_absent = false;
  };

  explicit HotCache(const Options& options);
  ~HotCache();
  HotCache(const HotCache&) = delete;
  HotCache& operator=(const HotCache&) = delete;

  // Runs op (already input-checked) on the cache. See Outcome.
  Outcome Execute(const OpRef& op, uint64_t hash);

  // For a caller about to Execute many ops: requests the lines a GET of
  // `hash` reads, one stage at a time — the bucket; the matching entry's
  // fast copy (reads the bucket) — the second a few ops after the first,
  // so that the bucket's line has arrived. Hints only: thread-safe, no
  // effect on results.
  void PrefetchBucket(uint64_t hash) const { PrefetchLine(&BucketFor(hash)); }
  void PrefetchEntry(uint64_t hash) const;

  struct Completion {
    std::vector<OpRef> done;  // Ops now answered: the in-flight op and any that ran after it.
    bool has_next = false;    // Another queued op must now go to the canonical store
    OpRef next;               // (same contract as Outcome::kMiss).
  };
  // `op` (returned as kMiss, or as Completion::next) has finished on the
  // canonical store with `result` (read during the call only: the entry
  // keeps a copy of the value). Applies it to the entry and runs the
  // operations queued behind it, answering them through their sinks. `out`
  // is cleared first.
  void Complete(const OpRef& op, uint64_t hash, OpResultView result, Completion* out);

  // --- Switch support (see thread safety above).
  // Appends one PUT (entry holds a value) or DELETE (tombstone) per entry
  // logged this epoch to `replay`, in log order.
  void CollectLog(Batch* replay);
  // The replay batch built by CollectLog ran with `results` (codes only are
  // read): entries whose replay succeeded become clean; the others stay
  // dirty and logged. Returns how many failed.
  size_t CommitLog(const Results& results);
  // Removes every non-pending entry for which keep(key, hash) is false.
  // Entries must be clean (after a successful replay). Returns the count.
  size_t Evict(const std::function<bool(std::string_view key, uint64_t hash)>& keep);
  // Drops every entry and the log.
  void Clear();
  // Active expiry: every settled entry whose value has expired at the
  // store's clock is dropped (clean) or becomes a dirty tombstone (dirty; the
  // write-back deletes the key). Runs concurrently with traffic. Returns how
  // many entries it expired; *dirty (may be null) receives how many of them
  // were dirty (keys whose current value only the cache held).
  size_t DropExpired(size_t* dirty = nullptr);
  // Cache mode (the engine's reconcile, kvcg_engine_keyspace.cc). Appends a
  // GET of every key the cache holds a value for to `touch` and returns the
  // bytes those entries take (key + value + the entry itself). Runs
  // concurrently with traffic under shared bucket locks: the keys are each
  // as of some moment during the walk.
  uint64_t CollectPresent(Batch* touch) const;
  // Removes the clean, settled entries of the keys in `absent` (sorted).
  // Runs concurrently with traffic: a removed clean entry only turns the
  // next operation on its key into a miss. Returns the bytes removed (as
  // CollectPresent counts them).
  uint64_t DropKeys(const std::vector<std::string_view>& absent);
  // Switches write-through on or off (SetMemoryLimit). Needs the same
  // quiescence as CollectLog, and a clean cache when turning it on.
  void SetWriteThrough(bool on) { write_through_.store(on, std::memory_order_relaxed); }
  bool write_through() const { return write_through_.load(std::memory_order_relaxed); }

  // Keys the cache holds with one node per bucket (buckets x 8 entries);
  // more fit, in chained nodes. The router sizes its hot-key set by it.
  uint64_t capacity() const { return (mask_ + 1) * kNodeEntries; }
  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  uint64_t dirty() const;
  uint64_t pending() const { return pending_.load(std::memory_order_acquire); }
  // Keys present in the cache minus keys present in the canonical store,
  // over all entries: the canonical store's Size() plus this is the store's
  // size (exact when quiescent).
  int64_t presence_delta() const { return presence_delta_.load(std::memory_order_relaxed); }

 private:
  enum class State : uint8_t { kFree, kUnknown, kValue, kTombstone };
  struct Pending {
    OpRef inflight;
    std::vector<OpRef> waiters;  // FIFO from `head`; a deque would allocate on construction
    size_t head = 0;
  };
  // The fast copy (see "GETs without the lock"): fast[0] is the header
  // (kFastValid | kFastPresent | key length << 8 | value length << 16 |
  // version << 24; 0 = not readable without the lock, also while a writer
  // rewrites the words), then the key's words, then the value's, each
  // zero-padded to whole words. 40 bits of version: a reader would need to
  // stall across 2^40 updates of one entry to be fooled by a repeat.
  static constexpr size_t kFastBytes = 48;
  static constexpr int kFastWords = 1 + kFastBytes / 8;
  static constexpr uint64_t kFastValid = 1, kFastPresent = 2;
  static constexpr int kFastVersionShift = 24;
  static constexpr uint64_t kFastShapeMask = (uint64_t{1} << kFastVersionShift) - 1;
  // Cache-line aligned: a lock-free GET reads one line of the entry (its
  // fast copy, 56 bytes), not two.
  struct alignas(64) Entry {
    std::atomic<uint64_t> fast[kFastWords] = {};  // written under the bucket's write lock
    uint64_t hash = 0;
    State state = State::kFree;
    bool dirty = false;
    bool canonical_present = false;  // Meaningful when state is known.
    uint64_t version = 0;  // of the fast copy; only grows, so a header never repeats
    uint64_t expire_at = kNoExpiry;  // of `value`; kNoExpiry unless state is kValue
    std::string key;
    std::string value;
    std::unique_ptr<Pending> pending;
  };
  // A node's hashes fill its first cache line, so a lock-free probe of a
  // node after the first (whose entries the bucket's tags cover) reads one
  // line per node and touches an entry only on a match (it does not read
  // `used`, in the second line: a free entry's fast copy is 0).
  static constexpr int kNodeEntries = 8;
  // Atomics where a lock-free GET reads them (relaxed: they are hints, and
  // what a GET answers is checked against the entry's header).
  struct alignas(64) Node {  // its hashes in one line
    std::atomic<uint64_t> hashes[kNodeEntries] = {};
    std::atomic<uint8_t> used{0};  // bit i: entries[i] is not free
    std::atomic<Node*> next{nullptr};
    Entry entries[kNodeEntries];
  };
  // What a lock-free GET reads first, in 32 bytes (two buckets a line; only
  // inserts and removals write them): the first node, which stays first,
  // and a tag per entry of it (TagOf its hash; 0 = free), so that the GET
  // goes from here straight to the entry's line. Keys in later nodes (more
  // than 8 in a bucket: rare) are found through the nodes' hashes.
  struct alignas(32) Bucket {
    std::atomic<Node*> head{nullptr};
    std::atomic<uint16_t> tags[kNodeEntries] = {};
  };
  static uint16_t TagOf(uint64_t hash) { return static_cast<uint16_t>(hash >> 48) | 1; }
  // The exclusive lock of a bucket; on exit republishes the fast copy of
  // every entry in the bucket whose state the section changed.
  class BucketWriter;

  Bucket& BucketFor(uint64_t hash) const { return buckets_[(hash ^ (hash >> 29)) & mask_]; }
  store::cpu::RwSpinLock& LockOf(const Bucket& bucket) const {
    return locks_[&bucket - buckets_.get()];
  }
  static Entry* Find(Bucket& bucket, uint64_t hash, std::string_view key);
  // presence_delta_ += d, skipped when d is 0 (most writes: a PUT over a
  // value): the counter is one line that every thread's writes would
  // otherwise take turns owning.
  void AddPresence(int64_t d) {
    if (d != 0) presence_delta_.fetch_add(d, std::memory_order_relaxed);
  }
  // A GET answered from a fast copy without the lock; false when the locked
  // path must decide (no fast copy of the key, or its entry kept changing).
  static bool TryFastGet(Bucket& bucket, uint64_t hash, std::string_view key, const OpRef& op);
  // Writes entry's fast copy from its state (or 0 when it has none), under
  // the bucket's lock; a copy that would not change is left as it is, so
  // that readers' cached lines of it stay valid.
  static void PublishFast(Entry& entry);
  Entry* Insert(Bucket& bucket, uint64_t hash, std::string_view key);
  // Frees the entry's slot; its node stays in the bucket (see "GETs without
  // the lock").
  void Remove(Bucket& bucket, Entry* entry);
  // Calls visit(bucket, entry) for every entry under its bucket's exclusive
  // lock (empty buckets are passed over under a shared lock). Used by Evict,
  // DropKeys and DropExpired (hot_cache.cc).
  template <class Visit>
  void ForEachEntryLocked(Visit&& visit);

  // Runs op on a known, non-pending, unexpired entry and answers it through
  // its sink (`queued` as in ResultSink::Answer). Returns whether the state
  // changed.
  bool Apply(Entry& entry, const OpRef& op, bool queued);
  // Would op change a known entry's state?
  static bool Changes(const Entry& entry, const OpRef& op);
  // Sets a known entry's state from the canonical store's answer to op.
  void Fill(Entry& entry, const OpRef& op, OpResultView result);
  // Stores `value` with the op's expire-at (kKeepExpiry resolved against
  // `previous`); an expire-at already past leaves a tombstone.
  void Store(Entry& entry, std::string_view value, uint64_t wanted, uint64_t previous);
  // Sets a present entry's expire-at; one already past leaves a tombstone.
  void SetExpireAt(Entry& entry, uint64_t at);
  // Lazy expiry of a settled entry under the bucket's write lock: a clean
  // expired entry is removed (returns null), a dirty one becomes a dirty
  // tombstone. Returns the entry otherwise.
  Entry* ExpireIfDue(Bucket& bucket, Entry* entry);
  // Every change of an entry's expire-at goes through here, so that
  // volatile_entries_ counts the entries that have one.
  void SetEntryExpire(Entry& entry, uint64_t at) {
    const int64_t d = int64_t{at != kNoExpiry} - int64_t{entry.expire_at != kNoExpiry};
    if (d != 0) volatile_entries_.fetch_add(d, std::memory_order_relaxed);
    entry.expire_at = at;
  }
  bool Expired(const Entry& entry) const {
    return entry.state == State::kValue && entry.expire_at != kNoExpiry &&
           IsExpired(entry.expire_at, clock_());
  }
  void MarkDirty(Entry& entry);
  static bool Present(const Entry& entry) { return entry.state == State::kValue; }
  // bound_absent: a settled entry that only says its key is absent, in a
  // cache past its capacity — a clean tombstone, which the canonical store
  // agrees with, so removing it leaves the presence count as it is. The
  // count includes misses in flight and is read relaxed: the bound is kept
  // approximately, which is all it is for.
  bool DropsAbsent(const Entry& entry) const {
    return bound_absent_ && entry.state == State::kTombstone && !entry.dirty &&
           entry.pending == nullptr && entries() > capacity();
  }

  std::atomic<bool> write_through_;
  const ClockFunction clock_;
  const bool bound_absent_;
  uint64_t mask_;
  std::unique_ptr<Bucket[]> buckets_;
  std::unique_ptr<store::cpu::RwSpinLock[]> locks_;  // one per bucket, apart from them
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> pending_{0};
  std::atomic<int64_t> presence_delta_{0};
  std::atomic<int64_t> volatile_entries_{0};  // entries whose expire-at is set

  mutable std::mutex log_mu_;
  std::vector<std::pair<uint64_t, std::string>> log_;  // (hash, key), in dirtying order
};

// Inline: the routing pass calls it for every hot op, and a call cost about
// as much as the hint itself.
inline void HotCache::PrefetchEntry(uint64_t hash) const {
  // Nodes are never freed while traffic may run (see "GETs without the
  // lock"), so reading one here is safe whatever writers do; acquire, as
  // in TryFastGet, so that a new node's initialisation is visible.
  const Bucket& bucket = BucketFor(hash);
  const Node* n = bucket.head.load(std::memory_order_acquire);
  if (n == nullptr) return;
  const uint16_t tag = TagOf(hash);
  for (int i = 0; i < kNodeEntries; ++i) {
    if (bucket.tags[i].load(std::memory_order_relaxed) == tag) {
      PrefetchLine(&n->entries[i].fast[0]);
      return;
    }
  }
}

}  // namespace kvcg::hotcache
