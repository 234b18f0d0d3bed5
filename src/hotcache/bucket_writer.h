// HotCache::BucketWriter, internal to the hot cache's .cc files: a
// bucket's write lock held for a scope, which on release republishes the
// lock-free fast copies of the entries the scope changed.
#pragma once

#include "hotcache/hot_cache.h"

namespace kvcg::hotcache {

class HotCache::BucketWriter {
 public:
  BucketWriter(const HotCache& cache, Bucket& bucket) : bucket_(bucket), lock_(cache.LockOf(bucket)) {
    lock_.lock();
  }
  // The section may have changed any entry of the bucket (a fill, a
  // removal's neighbours stay as they were): PublishFast leaves unchanged
  // copies alone, so only the entries the section changed move.
  ~BucketWriter() {
    for (Node* n = bucket_.head.load(std::memory_order_relaxed); n != nullptr;
         n = n->next.load(std::memory_order_relaxed)) {
      const uint8_t used = n->used.load(std::memory_order_relaxed);
      for (int i = 0; i < kNodeEntries; ++i) {
        if (used >> i & 1) PublishFast(n->entries[i]);
      }
    }
    lock_.unlock();
  }
  BucketWriter(const BucketWriter&) = delete;
  BucketWriter& operator=(const BucketWriter&) = delete;

 private:
  Bucket& bucket_;
  store::cpu::RwSpinLock& lock_;
};

}  // namespace kvcg::hotcache
