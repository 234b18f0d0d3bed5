// PersistenceControl: the server's side of persistence — everything between
// the Redis-facing surface (CONFIG SET appendonly/appendfsync/save, BGSAVE
// SCHEDULE, stop-writes-on-bgsave-error, SHUTDOWN's save, INFO persistence)
// and the library's kvcg::Durable, which does the actual logging and
// snapshots (include/kvcg/durable.h).
//
// Why a separate object: the Durable is all a store needs, but a Redis
// server adds policy on top of it that must be shared by every I/O thread:
//  * Write refusal (MISCONF). Redis refuses write commands while the last
//    background save failed (with save rules set and the option on). That
//    check runs for every write command, so it must be one relaxed atomic
//    load, not a Persistence() call (which copies strings): a small cron
//    thread recomputes the flag every 100 ms, and SAVE/BGSAVE/CONFIG SET
//    recompute it at once.
//  * BGSAVE SCHEDULE: when a log rewrite holds the background slot, the save
//    is remembered and started by the cron once the slot is free.
//  * Shutdown: SHUTDOWN saves before it answers (so a failed save can be
//    reported and the server keeps running, as in Redis), and after the
//    drain the server saves once more if writes from other clients landed in
//    between, then fsyncs the log.
// Thread-safety: every method may be called from any thread; Durable calls
// that touch the disk (Save, SetAppendOnly, SyncLog) block the caller, so
// they are made from I/O threads or the main thread, never from a store
// Completion.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "kvcg/durable.h"
#include "kvcg/status.h"
#include "server/server_config.h"

namespace kvcg::server {

// What SHUTDOWN (or a signal) asked for.
enum class ShutdownSave : uint8_t {
  kDefault,  // save when save rules are set (Redis's default)
  kSave,     // SHUTDOWN SAVE: save even without save rules
  kNoSave,   // SHUTDOWN NOSAVE: do not save (the log is still fsync'ed)
};

class PersistenceControl {
 public:
  PersistenceControl() = default;
  ~PersistenceControl();
  PersistenceControl(const PersistenceControl&) = delete;
  PersistenceControl& operator=(const PersistenceControl&) = delete;

  // After Store::Open. `durable` is null when persistence is off (only a
  // store opened without a durability dir); it must outlive Stop().
  void Start(Durable* durable, const ServerConfig& config);
  // Stops the cron thread. Idempotent.
  void Stop();

  // Null when persistence is off.
  Durable* durable() const { return durable_; }

  // CONFIG SET: applies the persistence settings that differ between `from`
  // and `to` (appendonly, appendfsync, save, stop-writes-on-bgsave-error) to
  // the Durable. Returns "" or a CONFIG SET error reply ("ERR CONFIG SET
  // failed (possibly related to argument 'appendonly') - ..."); on error
  // nothing was changed. Called with CONFIG SETs serialized.
  std::string Apply(const ServerConfig& from, const ServerConfig& to);

  // True while write commands must be refused with kErrMisconfRdb. One
  // relaxed load: callable per command.
  bool writes_denied() const { return writes_denied_.load(std::memory_order_relaxed); }
  // Recomputes writes_denied() now (after a save or a config change).
  void Refresh();

  // SAVE: a snapshot now, on stable storage when this returns. Waits for a
  // running log rewrite (Redis saves during one); a running background save
  // is waited for only with `wait_for_background_save` (SHUTDOWN), else it
  // is kUnavailable "Background save already in progress" (SAVE).
  // kUnavailable when persistence is off; else Durable::Save's errors.
  Status Save(bool wait_for_background_save);

  // BGSAVE SCHEDULE: start a background save as soon as none and no log
  // rewrite is running.
  void ScheduleBackgroundSave();

  // SHUTDOWN, before it answers: saves now if `mode` asks for it (waiting
  // for a running background save first, as Redis kills its child and
  // saves). Errors: the Save() status; ok when persistence is off.
  Status SaveBeforeShutdown(ShutdownSave mode);
  // After the drain (no client is served any more): saves again if `mode`
  // asks for it and writes happened since the last save, then fsyncs the
  // log when appendonly. Returns the first error (also logged).
  Status FinishAtShutdown(ShutdownSave mode);

  // The "# Persistence" lines of INFO (Redis's field names).
  void AppendInfo(std::string* out) const;
  // The reply to a write answered Code::kIoError: Redis's AOF MISCONF
  // text with the log's last error.
  std::string AofErrorReply() const;

 private:
  bool WantsSave(ShutdownSave mode) const;
  void WaitForBackgroundWork() const;
  void Cron();

  Durable* durable_ = nullptr;
  std::atomic<bool> stop_writes_on_bgsave_error_{true};
  std::atomic<bool> has_save_rules_{false};
  std::atomic<bool> writes_denied_{false};
  std::atomic<bool> bgsave_scheduled_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread cron_;
};

// Redis's reply to writes while the last background save failed.
inline constexpr const char* kErrMisconfRdb =
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. "
    "Commands that may modify the data set are disabled, because this instance is configured to report "
    "errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the "
    "Redis logs for details about the RDB error.";
// Reply of the persistence commands when the store has no Durable.
inline constexpr const char* kErrNoPersistence =
    "ERR persistence is off: the store was opened without a durability directory";

}  // namespace kvcg::server
