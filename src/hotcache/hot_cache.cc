// HotCache implementation, the per-op paths (lookups, the lock-free fast
// GET, execute and complete); the whole-cache passes are in
// hot_cache_passes.cc. See hot_cache.h for the design.
#include "hotcache/hot_cache.h"

#include "hotcache/bucket_writer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <shared_mutex>

namespace kvcg::hotcache {

namespace {

bool IsUpdate(OpType type) { return type != OpType::kGet; }

// Does a CAS store, given the key's current state?
bool CasMatches(const Batch& batch, uint32_t i, bool present, std::string_view current) {
  if (!present) return batch.expect_absent(i);
  return !batch.expect_absent(i) && current == batch.expected(i);
}

size_t Words(size_t bytes) { return (bytes + 7) / 8; }

}  // namespace

HotCache::HotCache(const Options& options)
    : write_through_(options.write_through),
      clock_(options.clock),
      bound_absent_(options.bound_absent),
      mask_(std::bit_ceil(std::max<uint64_t>(options.buckets, 1)) - 1),
      buckets_(std::make_unique<Bucket[]>(mask_ + 1)),
      locks_(std::make_unique<store::cpu::RwSpinLock[]>(mask_ + 1)) {}

HotCache::~HotCache() {
  for (uint64_t b = 0; b <= mask_; ++b) {
    for (Node* n = buckets_[b].head.load(); n != nullptr;) {
      Node* next = n->next.load();
      delete n;
      n = next;
    }
  }
}

HotCache::Entry* HotCache::Find(Bucket& bucket, uint64_t hash, std::string_view key) {
  for (Node* n = bucket.head.load(std::memory_order_relaxed); n != nullptr;
       n = n->next.load(std::memory_order_relaxed)) {
    const uint8_t used = n->used.load(std::memory_order_relaxed);
    for (int i = 0; i < kNodeEntries; ++i) {
      if ((used >> i & 1) && n->hashes[i].load(std::memory_order_relaxed) == hash &&
          n->entries[i].key == key) {
        return &n->entries[i];
      }
    }
  }
  return nullptr;
}

void HotCache::PublishFast(Entry& e) {
  const bool present = e.state == State::kValue;
  const bool settled = (present || e.state == State::kTombstone) && e.pending == nullptr &&
                       e.expire_at == kNoExpiry;
  const size_t key_words = Words(e.key.size());
  const size_t value_words = present ? Words(e.value.size()) : 0;
  if (!settled || key_words + value_words > kFastWords - 1) {
    if (e.fast[0].load(std::memory_order_relaxed) != 0) e.fast[0].store(0, std::memory_order_relaxed);
    return;
  }
  uint64_t words[kFastWords - 1] = {};
  std::memcpy(words, e.key.data(), e.key.size());
  if (present) std::memcpy(words + key_words, e.value.data(), e.value.size());
  const size_t n = key_words + value_words;
  const uint64_t value_len = present ? e.value.size() : 0;
  const uint64_t header = kFastValid | (present ? kFastPresent : 0) | uint64_t{e.key.size()} << 8 |
                          value_len << 16;
  // Unchanged (most sections change one entry of the bucket): no write, so
  // that readers' copies of the line stay valid.
  const uint64_t old = e.fast[0].load(std::memory_order_relaxed);
  bool same = old != 0 && (old & kFastShapeMask) == header;
  for (size_t w = 0; w < n && same; ++w) same = e.fast[1 + w].load(std::memory_order_relaxed) == words[w];
  if (same) return;
  // A seqlock write: a reader that sees any of the words below sees the
  // cleared header (the fence), or the new header with them (release).
  e.fast[0].store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t w = 0; w < n; ++w) e.fast[1 + w].store(words[w], std::memory_order_relaxed);
  ++e.version;
  e.fast[0].store(header | e.version << kFastVersionShift, std::memory_order_release);
}

namespace {

// A key as a fast copy holds it: whole words, the last zero-padded.
struct KeyWords {
  explicit KeyWords(std::string_view key) : size(key.size()), words(Words(key.size())) {
    const size_t full = key.size() / 8, tail = key.size() % 8;
    for (size_t w = 0; w < full; ++w) std::memcpy(&word[w], key.data() + 8 * w, 8);
    if (tail != 0) {
      char last[8] = {};
      for (size_t i = 0; i < tail; ++i) last[i] = key[8 * full + i];
      std::memcpy(&word[full], last, 8);
    }
  }
  size_t size, words;
  uint64_t word[6];
};

}  // namespace

// One entry's fast copy read as a seqlock reader: kHit with the header and
// value words when it holds `key` and its header did not move meanwhile;
// kOther when no readable copy of `key` is there (another key, a torn read,
// or a header of 0: a state that needs the lock, a writer inside, a free
// entry), so the caller looks on and, finding none, takes the lock — safe
// because a key has at most one readable copy (TryFastGet); kLocked when it
// holds `key` but kept changing.
enum class FastRead { kHit, kOther, kLocked };

template <class Entry, size_t kWords>
static FastRead ReadFast(const Entry& e, const KeyWords& key, uint64_t* header,
                         uint64_t (&value)[kWords]) {
  // A second try only: an entry that keeps changing is being written, and
  // the lock is then the cheaper wait.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint64_t h = e.fast[0].load(std::memory_order_acquire);
    // Its state needs the lock, a writer is rewriting it, or it is free
    // (Remove clears it): not a copy to read, whoever's entry it is.
    if ((h & 1) == 0) return FastRead::kOther;
    if ((h >> 8 & 0xff) != key.size) return FastRead::kOther;
    bool same = true;
    for (size_t w = 0; w < key.words && same; ++w) {
      same = e.fast[1 + w].load(std::memory_order_relaxed) == key.word[w];
    }
    if (!same) return FastRead::kOther;
    const size_t value_words = Words(h >> 16 & 0xff);
    for (size_t w = 0; w < value_words; ++w) {
      value[w] = e.fast[1 + key.words + w].load(std::memory_order_relaxed);
    }
    // Everything read above happened before the second look at the header.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.fast[0].load(std::memory_order_relaxed) != h) continue;
    *header = h;
    return FastRead::kHit;
  }
  return FastRead::kLocked;
}

bool HotCache::TryFastGet(Bucket& bucket, uint64_t hash, std::string_view key, const OpRef& op) {
  static_assert(kFastValid == 1 && kFastWords - 1 == 6);
  if (key.size() > kFastBytes) return false;
  const Node* head = bucket.head.load(std::memory_order_acquire);
  if (head == nullptr) return false;  // no entry: a miss, which takes the lock
  const KeyWords want(key);
  uint64_t header = 0;
  uint64_t value[kFastWords - 1];
  // The first node's entries through the bucket's tags, then later nodes
  // through their hashes. A key has at most one readable fast copy (Remove
  // clears an entry's before its key can be inserted again).
  const uint16_t tag = TagOf(hash);
  FastRead r = FastRead::kOther;
  for (int i = 0; i < kNodeEntries && r == FastRead::kOther; ++i) {
    if (bucket.tags[i].load(std::memory_order_relaxed) != tag) continue;
    r = ReadFast(head->entries[i], want, &header, value);
  }
  for (const Node* n = head->next.load(std::memory_order_acquire);
       n != nullptr && r == FastRead::kOther; n = n->next.load(std::memory_order_acquire)) {
    for (int i = 0; i < kNodeEntries && r == FastRead::kOther; ++i) {
      if (n->hashes[i].load(std::memory_order_relaxed) != hash) continue;
      r = ReadFast(n->entries[i], want, &header, value);
    }
  }
  // kOther: no readable copy of the key (absent, pending, expiring, too
  // big, being written, or a torn read): the locked path decides.
  if (r != FastRead::kHit) return false;
  const bool present = (header & kFastPresent) != 0;
  op.sink->Answer(op.index, present ? Code::kOk : Code::kNotFound,
                  std::string_view(reinterpret_cast<const char*>(value), header >> 16 & 0xff),
                  kNoExpiry, /*queued=*/false);
  return true;
}

HotCache::Entry* HotCache::Insert(Bucket& bucket, uint64_t hash, std::string_view key) {
  // The first node with a free entry; a new one goes at the end of the
  // chain, so that the bucket's first node (which its tags describe) stays.
  Node* node = bucket.head.load(std::memory_order_relaxed);
  Node* last = nullptr;
  while (node != nullptr && node->used.load(std::memory_order_relaxed) == 0xff) {
    last = node;
    node = node->next.load(std::memory_order_relaxed);
  }
  if (node == nullptr) {
    node = new Node;
    // Released: a reader that finds the node sees it initialised.
    (last == nullptr ? bucket.head : last->next).store(node, std::memory_order_release);
  }
  const uint8_t used = node->used.load(std::memory_order_relaxed);
  const int i = std::countr_one(used);
  node->hashes[i].store(hash, std::memory_order_relaxed);
  if (node == bucket.head.load(std::memory_order_relaxed)) {
    bucket.tags[i].store(TagOf(hash), std::memory_order_relaxed);
  }
  node->used.store(static_cast<uint8_t>(used | 1u << i), std::memory_order_relaxed);
  Entry* slot = &node->entries[i];
  slot->hash = hash;
  slot->key.assign(key);
  slot->state = State::kUnknown;
  slot->dirty = false;
  slot->canonical_present = false;
  slot->expire_at = kNoExpiry;
  entries_.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

void HotCache::Remove(Bucket& bucket, Entry* entry) {
  entry->state = State::kFree;
  // (the node's `used` bit is cleared below, once the node is found)
  entry->dirty = false;
  entry->pending.reset();
  SetEntryExpire(*entry, kNoExpiry);
  std::string().swap(entry->key);  // release the memory, not just the length
  std::string().swap(entry->value);
  entry->fast[0].store(0, std::memory_order_relaxed);  // its version stays: it only grows
  entries_.fetch_sub(1, std::memory_order_relaxed);
  for (Node* n = bucket.head.load(std::memory_order_relaxed); n != nullptr;
       n = n->next.load(std::memory_order_relaxed)) {
    if (entry < n->entries || entry >= n->entries + kNodeEntries) continue;
    n->hashes[entry - n->entries].store(0, std::memory_order_relaxed);
    if (n == bucket.head.load(std::memory_order_relaxed)) {
      bucket.tags[entry - n->entries].store(0, std::memory_order_relaxed);
    }
    n->used.fetch_and(static_cast<uint8_t>(~(1u << (entry - n->entries))),
                      std::memory_order_relaxed);
    return;
  }
}

bool HotCache::Changes(const Entry& entry, const OpRef& op) {
  const Batch& b = *op.batch;
  switch (b.type(op.index)) {
    case OpType::kGet:
      return false;
    case OpType::kPut:
      return true;
    case OpType::kDelete:
      return Present(entry);
    case OpType::kCompareAndSwap:
      return CasMatches(b, op.index, Present(entry), entry.value);
    case OpType::kExpire:
      return Present(entry) &&
             ExpireConditionHolds(b.condition(op.index), entry.expire_at, b.expire_at(op.index));
    case OpType::kNoop:  // never reaches the cache (the engine leaves it to the store)
      return false;
  }
  return false;
}

void HotCache::Store(Entry& entry, std::string_view value, uint64_t wanted, uint64_t previous) {
  entry.state = State::kValue;
  entry.value.assign(value);
  SetExpireAt(entry, wanted == kKeepExpiry ? previous : wanted);
}

void HotCache::SetExpireAt(Entry& entry, uint64_t at) {
  if (at != kNoExpiry && IsExpired(at, clock_())) {
    // Stored and expired at once (kvcg/batch.h): the key is gone.
    entry.state = State::kTombstone;
    entry.value.clear();
    SetEntryExpire(entry, kNoExpiry);
    return;
  }
  SetEntryExpire(entry, at);
}

HotCache::Entry* HotCache::ExpireIfDue(Bucket& bucket, Entry* e) {
  if (e->pending != nullptr || !Expired(*e)) return e;
  if (!e->dirty) {
    // The canonical store holds the same value and expire-at: it expires the
    // key itself; the op becomes a miss there.
    Remove(bucket, e);
    return nullptr;
  }
  e->state = State::kTombstone;
  e->value.clear();
  SetEntryExpire(*e, kNoExpiry);
  presence_delta_.fetch_sub(1, std::memory_order_relaxed);
  return e;
}

bool HotCache::Apply(Entry& entry, const OpRef& op, bool queued) {
  const Batch& b = *op.batch;
  const bool present = Present(entry);
  const OpType type = b.type(op.index);
  const Code code = present ? Code::kOk : Code::kNotFound;
  // GET, a CAS that does not store, or the previous value of an update: the
  // sink copies it before the entry changes below.
  const uint64_t previous = present ? entry.expire_at : kNoExpiry;
  op.sink->Answer(op.index, code, present ? std::string_view(entry.value) : std::string_view(),
                  previous, queued);
  if (type == OpType::kGet ||
      (type == OpType::kCompareAndSwap && !CasMatches(b, op.index, present, entry.value))) {
    return false;
  }
  if (type == OpType::kDelete) {
    entry.value.clear();
    entry.state = State::kTombstone;
    SetEntryExpire(entry, kNoExpiry);
    return present;
  }
  if (type == OpType::kExpire) {
    if (!present ||
        !ExpireConditionHolds(b.condition(op.index), previous, b.expire_at(op.index))) {
      return false;
    }
    // The value stays; only its expire-at changes (a past one deletes).
    SetExpireAt(entry, b.expire_at(op.index));
    return true;
  }
  Store(entry, b.value(op.index), b.expire_at(op.index), previous);
  return true;
}

void HotCache::Fill(Entry& entry, const OpRef& op, OpResultView r) {
  const Batch& b = *op.batch;
  if (!r.succeeded()) return;  // The op changed nothing: the state stays as it was.
  const bool found = r.found();
  const uint64_t previous = found ? r.expire_at : kNoExpiry;
  // The op left the key as the canonical store found it.
  auto keep_found = [&] {
    if (found) {
      Store(entry, r.value, previous, previous);
    } else {
      entry.state = State::kTombstone;
      entry.value.clear();
      SetEntryExpire(entry, kNoExpiry);
    }
  };
  switch (b.type(op.index)) {
    case OpType::kGet:
      keep_found();
      break;
    case OpType::kPut:
      Store(entry, b.value(op.index), b.expire_at(op.index), previous);
      break;
    case OpType::kDelete:
      entry.state = State::kTombstone;
      entry.value.clear();
      SetEntryExpire(entry, kNoExpiry);
      break;
    case OpType::kCompareAndSwap:
      if (CasMatches(b, op.index, found, r.value)) {
        Store(entry, b.value(op.index), b.expire_at(op.index), previous);
      } else {
        keep_found();
      }
      break;
    case OpType::kExpire:
      if (found && ExpireConditionHolds(b.condition(op.index), previous, b.expire_at(op.index))) {
        Store(entry, r.value, b.expire_at(op.index), previous);  // kNoExpiry persists
      } else {
        keep_found();
      }
      break;
    case OpType::kNoop:  // never reaches the cache
      break;
  }
  entry.canonical_present = Present(entry);  // The canonical store just agreed.
}

void HotCache::MarkDirty(Entry& entry) {
  if (entry.dirty) return;
  entry.dirty = true;
  std::lock_guard lock(log_mu_);
  log_.emplace_back(entry.hash, entry.key);
}

Outcome HotCache::Execute(const OpRef& op, uint64_t hash) {
  Bucket& bucket = BucketFor(hash);
  const std::string_view key = op.batch->key(op.index);
  const OpType type = op.batch->type(op.index);
  if (!IsUpdate(type)) {
    if (TryFastGet(bucket, hash, key, op)) return Outcome::kDone;
    // A known, settled entry without a fast copy is answered under the read lock.
    std::shared_lock lock(LockOf(bucket));
    Entry* e = Find(bucket, hash, key);
    if (e != nullptr && e->pending == nullptr && e->state != State::kUnknown && !Expired(*e)) {
      Apply(*e, op, /*queued=*/false);
      return Outcome::kDone;
    }
  }
  BucketWriter writer(*this, bucket);
  Entry* e = Find(bucket, hash, key);
  if (e != nullptr) e = ExpireIfDue(bucket, e);
  if (e == nullptr) {
    e = Insert(bucket, hash, key);
    e->pending = std::make_unique<Pending>();
    e->pending->inflight = op;
    pending_.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kMiss;
  }
  if (e->pending != nullptr) {
    e->pending->waiters.push_back(op);
    return Outcome::kWaiting;
  }
  if (write_through() && Changes(*e, op)) {
    e->pending = std::make_unique<Pending>();
    e->pending->inflight = op;
    pending_.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kMiss;
  }
  const bool before = Present(*e);
  if (Apply(*e, op, /*queued=*/false)) {
    MarkDirty(*e);
    AddPresence(int64_t{Present(*e)} - int64_t{before});
  }
  return Outcome::kDone;
}

void HotCache::Complete(const OpRef& op, uint64_t hash, OpResultView result, Completion* out) {
  out->done.clear();
  out->has_next = false;
  Bucket& bucket = BucketFor(hash);
  BucketWriter writer(*this, bucket);
  Entry* e = Find(bucket, hash, op.batch->key(op.index));
  // The entry cannot vanish while pending: only Evict/Clear remove entries
  // and both skip or exclude pending ones.
  Pending& p = *e->pending;
  Fill(*e, op, result);
  out->done.push_back(op);
  while (p.head < p.waiters.size()) {
    const OpRef w = p.waiters[p.head];
    const bool known = e->state == State::kValue || e->state == State::kTombstone;
    if (known && Expired(*e)) {
      // Lazily expired while pending: it cannot be removed (pending), so it
      // becomes a tombstone; the canonical store agrees once its clock
      // passes the same expire-at. A dirty entry's write-back deletes it.
      e->state = State::kTombstone;
      e->value.clear();
      SetEntryExpire(*e, kNoExpiry);
      if (e->dirty || !e->canonical_present) {
        presence_delta_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        e->canonical_present = false;  // the canonical copy is expired too
      }
    }
    if (!known || (write_through() && Changes(*e, w))) {
      // It must run on the canonical store; the entry stays pending on it.
      ++p.head;
      p.inflight = w;
      out->has_next = true;
      out->next = w;
      return;
    }
    ++p.head;
    const bool before = Present(*e);
    if (Apply(*e, w, /*queued=*/true)) {
      MarkDirty(*e);
      AddPresence(int64_t{Present(*e)} - int64_t{before});
    }
    out->done.push_back(w);
  }
  e->pending.reset();
  // A failed miss with nothing queued, or an absent key past the bound.
  if (e->state == State::kUnknown || DropsAbsent(*e)) Remove(bucket, e);
  pending_.fetch_sub(1, std::memory_order_release);
}

}  // namespace kvcg::hotcache
