// HotCache's whole-cache passes: the epoch's update log (replayed to the
// canonical store and committed, the paper's switch protocol), eviction,
// dropping keys the canonical store lost, clearing, and the expiry sweep.
// Each walks the buckets under their locks; see hot_cache.h for when each
// may run. The per-op paths are in hot_cache.cc.
#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "hotcache/bucket_writer.h"
#include "hotcache/hot_cache.h"

namespace kvcg::hotcache {

void HotCache::CollectLog(Batch* replay) {
  std::lock_guard log_lock(log_mu_);
  for (const auto& [hash, key] : log_) {
    Bucket& bucket = BucketFor(hash);
    std::shared_lock lock(LockOf(bucket));
    Entry* e = Find(bucket, hash, key);
    if (e == nullptr || !e->dirty) continue;  // cannot happen under quiescence; be safe
    if (e->state == State::kValue) replay->Put(key, e->value, e->expire_at);
    else replay->Delete(key);
  }
}

size_t HotCache::CommitLog(const Results& results) {
  std::lock_guard log_lock(log_mu_);
  std::vector<std::pair<uint64_t, std::string>> kept;
  size_t next = 0, failed = 0;
  for (auto& item : log_) {
    Bucket& bucket = BucketFor(item.first);
    BucketWriter writer(*this, bucket);
    Entry* e = Find(bucket, item.first, item.second);
    if (e == nullptr || !e->dirty) continue;  // mirrors CollectLog's skip
    const bool ok = next < results.size() && results[next].succeeded();
    ++next;
    if (!ok) {
      ++failed;
      kept.push_back(std::move(item));
      continue;
    }
    e->dirty = false;
    presence_delta_.fetch_sub(int64_t{Present(*e)} - int64_t{e->canonical_present},
                              std::memory_order_relaxed);
    e->canonical_present = Present(*e);
    // A deleted key's tombstone, now clean: past the bound it goes like an
    // absent key's after a fill, or keys created and deleted one after
    // another would each keep an entry.
    if (DropsAbsent(*e)) Remove(bucket, e);
  }
  log_ = std::move(kept);
  return failed;
}

template <class Visit>
void HotCache::ForEachEntryLocked(Visit&& visit) {
  for (uint64_t b = 0; b <= mask_; ++b) {
    Bucket& bucket = buckets_[b];
    {
      std::shared_lock lock(LockOf(bucket));
      if (bucket.head.load(std::memory_order_relaxed) == nullptr) continue;
    }
    BucketWriter writer(*this, bucket);
    for (Node* n = bucket.head.load(std::memory_order_relaxed); n != nullptr;
         n = n->next.load(std::memory_order_relaxed)) {
      for (Entry& e : n->entries) visit(bucket, e);
    }
  }
}

size_t HotCache::Evict(const std::function<bool(std::string_view, uint64_t)>& keep) {
  size_t evicted = 0;
  ForEachEntryLocked([&](Bucket& bucket, Entry& e) {
    if (e.state == State::kFree || e.pending != nullptr || e.dirty) return;
    if (keep(e.key, e.hash)) return;
    Remove(bucket, &e);
    ++evicted;
  });
  return evicted;
}

uint64_t HotCache::CollectPresent(Batch* touch) const {
  uint64_t bytes = 0;
  for (uint64_t b = 0; b <= mask_; ++b) {
    Bucket& bucket = buckets_[b];
    std::shared_lock lock(LockOf(bucket));
    for (const Node* n = bucket.head.load(std::memory_order_relaxed); n != nullptr;
         n = n->next.load(std::memory_order_relaxed)) {
      for (const Entry& e : n->entries) {
        if (e.state != State::kValue || e.pending != nullptr) continue;
        touch->Get(e.key);
        bytes += e.key.size() + e.value.size() + sizeof(Entry);
      }
    }
  }
  return bytes;
}

uint64_t HotCache::DropKeys(const std::vector<std::string_view>& absent) {
  if (absent.empty()) return 0;
  uint64_t dropped = 0;
  ForEachEntryLocked([&](Bucket& bucket, Entry& e) {
    if (e.state == State::kFree || e.pending != nullptr || e.dirty) return;
    if (!std::binary_search(absent.begin(), absent.end(), std::string_view(e.key))) return;
    if (e.state == State::kValue) dropped += e.key.size() + e.value.size() + sizeof(Entry);
    Remove(bucket, &e);
  });
  return dropped;
}

void HotCache::Clear() {
  for (uint64_t b = 0; b <= mask_; ++b) {
    Bucket& bucket = buckets_[b];
    BucketWriter writer(*this, bucket);
    for (Node* n = bucket.head.load(std::memory_order_relaxed); n != nullptr;) {
      Node* next = n->next.load(std::memory_order_relaxed);
      delete n;  // quiescent (see thread safety): no lock-free reader is on it
      n = next;
    }
    bucket.head.store(nullptr, std::memory_order_relaxed);
    for (auto& tag : bucket.tags) tag.store(0, std::memory_order_relaxed);
  }
  entries_.store(0, std::memory_order_relaxed);
  presence_delta_.store(0, std::memory_order_relaxed);
  volatile_entries_.store(0, std::memory_order_relaxed);
  std::lock_guard log_lock(log_mu_);
  log_.clear();
}

size_t HotCache::DropExpired(size_t* dirty) {
  size_t expired = 0, dirty_expired = 0;
  if (dirty != nullptr) *dirty = 0;
  // Most caches hold no key with an expire-at: skip the walk over every
  // bucket (the sweeper runs it several times a second).
  if (volatile_entries_.load(std::memory_order_relaxed) == 0) return 0;
  ForEachEntryLocked([&](Bucket& bucket, Entry& e) {
    if (e.state != State::kValue || e.pending != nullptr || !Expired(e)) return;
    if (e.dirty) ++dirty_expired;
    ExpireIfDue(bucket, &e);
    ++expired;
  });
  if (dirty != nullptr) *dirty = dirty_expired;
  return expired;
}

uint64_t HotCache::dirty() const {
  std::lock_guard lock(log_mu_);
  return log_.size();
}

}  // namespace kvcg::hotcache
