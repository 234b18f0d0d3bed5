// kvcg/snapshot.h — a point-in-time image of a store, read in chunks.
//
//   std::unique_ptr<kvcg::SnapshotReader> image;
//   kvcg::Status s = store->OpenSnapshot(&image);
//   kvcg::SnapshotChunk chunk;
//   while (image->Next(&chunk)) {
//     for (size_t i = 0; i < chunk.size(); ++i) Use(chunk.keys[i], chunk.values[i]);
//   }
//   if (!image->status().ok()) ...
//
// Snapshots are what SAVE/BGSAVE and the append-only log's rewrite write to
// disk (kvcg/durable.h); embedders may use them to copy a store's contents
// while it keeps serving.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kvcg/status.h"

namespace kvcg {

// Parallel columns: entry i maps keys[i] to values[i], which expires at
// expires[i] (kvcg/batch.h, Expiry; 0 = never). The views point into
// memory owned by the SnapshotReader that filled the chunk; they stay valid
// until that reader's next Next() call or its destruction, whichever comes
// first. Copy what must outlive them. An image may hold keys already expired
// at its instant (lazy expiry had not reclaimed them yet; backends that can
// filter them cheaply do), always with their expire-at: a reader that loads
// the image drops every entry with IsExpired(expires[i], now).
struct SnapshotChunk {
  std::vector<std::string_view> keys;
  std::vector<std::string_view> values;
  std::vector<uint64_t> expires;  // same length as keys

  size_t size() const { return keys.size(); }
  void clear() {
    keys.clear();
    values.clear();
    expires.clear();
  }
};

// Reads one image. Not thread-safe: one thread at a time. Must be destroyed
// before the Store that opened it (it may hold the store's memory alive).
class SnapshotReader {
 public:
  virtual ~SnapshotReader() = default;

  // Replaces *chunk's contents with the next entries of the image (at least
  // one) and returns true; returns false once every entry has been returned,
  // or on failure (then status() says why). Every key of the image is
  // returned exactly once, in no particular order.
  virtual bool Next(SnapshotChunk* chunk) = 0;

  // Number of keys in the image. Exact.
  virtual uint64_t size() const = 0;

  // Ok, or why Next stopped early (kInternal for a device failure).
  virtual Status status() const { return Status::Ok(); }
};

}  // namespace kvcg
