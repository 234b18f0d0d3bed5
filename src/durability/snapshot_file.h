// Snapshot files and log files, end to end: writing a point-in-time image to
// disk, loading one into a store, and replaying a log (formats:
// log_format.h, docs/PERSISTENCE.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kvcg/snapshot.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace kvcg::durability {

// Writes every entry of `image` to `path`, atomically (a temporary file in
// the same directory, fsync'ed, renamed over `path`, directory fsync'ed).
// *bytes (may be null) receives the file's size. kIoError naming the file on
// any failure, in which case `path` is untouched and no temporary is left.
// The file's header records the image's instant (a TimedSnapshot's, else
// the system clock now), which a load replays at (log_format.h).
Status WriteSnapshotFile(SnapshotReader* image, const std::string& path, uint64_t* bytes);

// An image with the store-clock time it was taken at: what
// WriteSnapshotFile records. Forwards everything else.
class TimedSnapshot final : public SnapshotReader {
 public:
  TimedSnapshot(std::unique_ptr<SnapshotReader> inner, uint64_t taken_at_ms)
      : inner_(std::move(inner)), taken_at_(taken_at_ms) {}
  bool Next(SnapshotChunk* chunk) override { return inner_->Next(chunk); }
  uint64_t size() const override { return inner_->size(); }
  Status status() const override { return inner_->status(); }
  uint64_t taken_at() const { return taken_at_; }

 private:
  std::unique_ptr<SnapshotReader> inner_;
  const uint64_t taken_at_;
};

class ReplayClock;

// Loads the snapshot at `path` into `store` (PUTs through the bulk path).
// *keys receives the entry count. kIoError naming the file and byte offset
// if any frame is damaged or the file is cut short (a snapshot is written
// whole or not at all, so there is no torn tail to forgive); the store may
// then hold part of the file and must not be served.
// With `clock` (may be null) the store's clock is frozen at the image's
// instant while it loads (version-2 files).
Status LoadSnapshotFile(const std::string& path, Store* store, uint64_t* keys,
                        ReplayClock* clock = nullptr);

// Replays the log at `path` on `store`. *records receives the number of
// records replayed. A torn tail (log_format.h) is allowed only when
// `last_file` (the log being written when the process stopped): the file is
// truncated to its last whole frame and *warning says so; anywhere else it
// is kIoError naming the file and offset, as is any damage.
// With `clock` (may be null) the store's clock is frozen at each TIME
// record's time from that record on (log_format.h).
Status ReplayLogFile(const std::string& path, Store* store, bool last_file, uint64_t* records,
                     std::string* warning, ReplayClock* clock = nullptr);

}  // namespace kvcg::durability
