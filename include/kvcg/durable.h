// kvcg/durable.h — persistence: an append-only log and point-in-time
// snapshots, the two mechanisms Redis users know (appendonly/appendfsync,
// SAVE/BGSAVE/BGREWRITEAOF).
//
//   kvcg::Config config;
//   config.durability.dir = "/var/lib/kvcg";
//   config.durability.append_only = true;                  // log every write
//   config.durability.fsync = kvcg::FsyncPolicy::kAlways;  // group commit
//   std::unique_ptr<kvcg::Store> store;
//   kvcg::Store::Open(config, &store);   // loads what the directory holds
//   kvcg::Durable* durable = kvcg::AsDurable(store.get());
//   durable->Save();                      // a snapshot, now
//
// Store::Open returns a Durable whenever Config::durability.dir is set. It
// is a Store with the same contract, wrapping the configured backend or
// engine (AsEngine looks through it), plus:
//  * Logging. With append_only, every write (PUT, DELETE, CAS; FLUSHALL as
//    Clear) is appended to the log before it executes, in an order that
//    replays to the same state (same-key order, DESIGN.md §2). A write's
//    completion is called only when the log policy allows: after the fsync
//    covering it (kAlways), or at once (kEverySec, kNo). If the log cannot be
//    written, the writes it holds are answered Code::kIoError (they took
//    effect in memory but are not acknowledged; under kEverySec/kNo they were
//    acknowledged already and are retried), new writes are refused with
//    kIoError until a retry of the write succeeds, and reads keep working.
//    After a failed fsync the file is abandoned by an automatic rewrite.
//  * Snapshots. Save() writes a point-in-time image (Store::OpenSnapshot) to
//    `dir/snapshot_file`; BackgroundSave() does so on a background thread
//    while the store keeps serving. A file is replaced atomically (written to
//    a temporary name, fsync'ed, renamed), so a crash never leaves a half
//    snapshot in its place.
//  * Log rewrite. RewriteLog() replaces the log by a snapshot of the current
//    state (the log's new base) plus the writes made since, so the log does
//    not grow without bound; it also runs by itself past the configured growth.
//  * Loading. Open loads the log (base + increments) when append_only, else
//    the snapshot; a torn final log record (a crash mid-write) is cut off
//    with a warning; any other damage fails Open with kIoError naming the
//    file and byte offset, and nothing is served from a damaged file.
//  * Threads: every method is thread-safe. Completions are never called
//    while this wrapper holds a lock, so a Completion may Submit and read
//    Persistence(). One exception on the GPU backend: a Completion (run on
//    its pipeline or delivery thread) must not Submit a write while Save, BackgroundSave,
//    RewriteLog (also automatic), SetAppendOnly or Clear takes its cut — the
//    cut holds every write lane until the pipeline reaches its marker, which
//    waits for that completion. Submit from another thread instead.
// File formats: docs/PERSISTENCE.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvcg/config.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace kvcg {

// What INFO persistence reports (field names follow Redis's).
struct PersistenceInfo {
  bool loading = false;
  uint64_t changes_since_last_save = 0;  // rdb_changes_since_last_save
  bool bgsave_in_progress = false;       // rdb_bgsave_in_progress
  int64_t last_save_time = 0;            // rdb_last_save_time (unix seconds)
  bool last_bgsave_ok = true;            // rdb_last_bgsave_status
  int64_t last_bgsave_time_sec = -1;     // rdb_last_bgsave_time_sec
  uint64_t saves = 0;                    // rdb_saves
  bool aof_enabled = false;
  bool aof_rewrite_in_progress = false;
  bool aof_rewrite_scheduled = false;
  bool aof_last_rewrite_ok = true;       // aof_last_bgrewrite_status
  int64_t aof_last_rewrite_time_sec = -1;
  bool aof_last_write_ok = true;         // aof_last_write_status
  std::string aof_last_write_error;      // strerror text of the last failed write, "" if none
  uint64_t aof_current_size = 0;         // bytes of the log (base + increments)
  uint64_t aof_base_size = 0;            // bytes of the base after the last rewrite
  uint64_t aof_fsyncs = 0;               // fsync calls on the log (group commits)
  uint64_t aof_delayed_fsync = 0;        // aof_delayed_fsync
  uint64_t loaded_keys = 0;              // keys loaded at Open
  double load_seconds = 0;               // time Open spent loading
  std::string load_source;               // "none", "snapshot <file>" or "log <dir>"
  // Lines worth a warning in the server's log, e.g. "appendonlydir/x.incr:
  // torn record at offset 123 (45 bytes) truncated". Empty when none.
  std::vector<std::string> load_warnings;
};

class Durable : public Store {
 public:
  // SAVE: writes a snapshot now and returns when it is on stable storage.
  // Errors: kIoError (message: file and errno text), kUnavailable when a
  // background save or rewrite is in progress ("Background save already in
  // progress"). Thread-safe; do not call from a Completion.
  virtual Status Save() = 0;

  // BGSAVE: starts writing a snapshot on a background thread and returns.
  // Errors: kUnavailable when one is already in progress. Thread-safe.
  virtual Status BackgroundSave() = 0;

  // BGREWRITEAOF: starts a log rewrite on a background thread and returns.
  // When a background save is running the rewrite is scheduled to start
  // after it (ok is returned, aof_rewrite_scheduled is set). Errors:
  // kUnavailable when a rewrite is already in progress, kInvalidArgument when
  // append_only is off. Thread-safe.
  virtual Status RewriteLog() = 0;

  // CONFIG SET appendonly yes|no. Turning it on writes a base snapshot and
  // starts logging (as Redis does with a rewrite); turning it off closes the
  // log (its files stay). Errors: kIoError when the base cannot be written.
  // Thread-safe; do not call from a Completion.
  virtual Status SetAppendOnly(bool on) = 0;

  // CONFIG SET appendfsync / save. Thread-safe.
  virtual void SetFsyncPolicy(FsyncPolicy policy) = 0;
  virtual void SetSaveRules(std::vector<SaveRule> rules) = 0;

  // Waits until every write submitted before the call is fsync'ed (whatever
  // the policy). kIoError when the log cannot be written. Thread-safe.
  virtual Status SyncLog() = 0;

  // The current counters and states. Thread-safe.
  virtual PersistenceInfo Persistence() const = 0;
  // The configuration in force (after SetAppendOnly etc.). Thread-safe.
  virtual DurabilityConfig durability_config() const = 0;

  // The wrapped store (backend or engine).
  virtual Store* inner() = 0;
};

// The Durable behind `store`, or null when persistence is off.
inline Durable* AsDurable(Store* store) { return dynamic_cast<Durable*>(store); }

}  // namespace kvcg
