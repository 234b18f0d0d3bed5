// Point-in-time snapshots of the CPU store (Store::OpenSnapshot): per-shard
// copy-on-write, without stopping the world.
//
// Design.
//  * The store keeps one atomic snapshot generation. OpenSnapshot registers a
//    new image (one slot per shard) and bumps the generation to the image's
//    own, both under the registry's mutex. That bump is the image's instant.
//  * Every write that changes a shard (PUT, DELETE, a CAS that stores, Clear)
//    calls BeforeWrite under the shard's exclusive lock, before it changes the
//    table. When the generation it loads equals the shard's
//    captured_generation nothing is open that lacks this shard: one relaxed
//    load is the whole cost. Otherwise it copies the table once into every
//    registered image that has not captured the shard yet (one copy, shared),
//    marks them captured and records the generation it saw.
//  * The reader walks the shards in order. For each, under the shard's shared
//    lock, it takes the writer's copy if there is one, otherwise it copies
//    the entries into its own buffer and marks the shard captured; from then
//    on writers leave this image alone for that shard.
//
// Why this is point-in-time. Every write to a shard runs under its exclusive
// lock and acts on one generation g: the value its fast-path load returned,
// or on the slow path the value it read under the registry mutex. It
// linearizes at that read (the lock hides the stretch from there to the
// write from everyone else). Claim: the write is in every image of
// generation > g and in none of generation <= g.
//  - Image G <= g: G was registered when g was read (registration and bump
//    are one step under the mutex). The fast path is taken only when g equals
//    the shard's captured_generation, so G already holds its copy; the slow
//    path copies the shard into G before the write unless G holds a copy
//    already. Copies are never redone, so G keeps the shard as it was before.
//  - Image G > g: G's bump follows the read in the generation's modification
//    order. G cannot have captured the shard before the write: that capture
//    ran under the shard lock after the bump, so the bump would have
//    happened-before the write's read (through the lock), and coherence would
//    have made the read return G or later. So G captures the shard (reader or
//    later writer, under the lock) after the write, with the write in it.
// Image G thus holds exactly the writes that linearize before its bump, an
// instant inside the OpenSnapshot call: everything acknowledged before the
// call is in, nothing submitted after it returned is. Reads change nothing.
// Several images may be open at once: each has its own generation and its
// own captured flags, and a writer serves all of them with one copy.
//
// Lifetimes. Images are shared (registry, reader, writers copying into them).
// A reader unregisters its image when it has returned every entry or is
// destroyed, whichever comes first; afterwards writers skip it, and each
// shard's next write pays one slow-path visit to advance its
// captured_generation, then none. Lock order: shard lock, then registry mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "kvcg/snapshot.h"
#include "kvcg/status.h"
#include "store/cpu/cpu_shard.h"
#include "store/cpu/shard_table.h"

namespace kvcg::store::cpu {

// A flat copy of one shard's entries: keys and values back to back in one
// buffer, so a copy is a few memcpy calls and at most two allocations.
class ShardImage {
 public:
  // Replaces the contents with `table`'s entries; reuses the buffers.
  void CopyFrom(const ShardTable& table);

  size_t size() const { return items_.size(); }
  std::string_view key(size_t i) const { return {bytes_.get() + items_[i].offset, items_[i].key_size}; }
  uint64_t expire_at(size_t i) const { return items_[i].expire_at; }
  std::string_view value(size_t i) const {
    return {bytes_.get() + items_[i].offset + items_[i].key_size, items_[i].value_size};
  }

 private:
  struct Item {
    uint64_t offset;  // of the key; the value follows it
    uint64_t key_size;
    uint64_t value_size;
    uint64_t expire_at;
  };
  std::unique_ptr<char[]> bytes_;
  size_t capacity_ = 0;
  std::vector<Item> items_;
};

struct SnapshotImage;

// The store's open snapshots. Thread-safe.
class SnapshotRegistry {
 public:
  SnapshotRegistry(CpuShard* shards, uint32_t shard_count);
  ~SnapshotRegistry();

  // Called by every write that is about to change `shard`, under its
  // exclusive lock (see the design above).
  void BeforeWrite(CpuShard& shard) {
    if (generation_.load(std::memory_order_relaxed) != shard.captured_generation) [[unlikely]] {
      CaptureForOpenImages(shard);
    }
  }

  // Store::OpenSnapshot for the shards given at construction.
  Status Open(std::unique_ptr<SnapshotReader>* out);

 private:
  friend class CpuSnapshotReader;

  void CaptureForOpenImages(CpuShard& shard);
  // Writers stop copying into `image`. Idempotent.
  void Unregister(const SnapshotImage* image);

  CpuShard* const shards_;
  const uint32_t shard_count_;
  // Read by every write; written only by Open. Own cache line: the store's
  // reservation counters, written by writes, sit just before it.
  alignas(64) std::atomic<uint64_t> generation_{0};  // written under mu_
  std::mutex mu_;
  std::vector<std::shared_ptr<SnapshotImage>> open_;  // under mu_
};

}  // namespace kvcg::store::cpu
