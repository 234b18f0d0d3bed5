// DurableStore: kvcg::Durable (kvcg/durable.h) — the append-only log and
// snapshots around any Store (a backend or the engine).
//
// Writes take the lanes of their keys (log_lanes.h), append their records
// and submit to the wrapped store under them, so the log's per-key order is
// the store's; reads bypass all of it. While the log is off, writes only
// share a gate that turning it on and Clear close (writer_gate.h). Under
// FsyncPolicy::kAlways a write batch's completion is parked in the
// AppendLog until the fsync covering it (append_log.h). A completion that
// the wrapped store runs inline (the CPU backend runs batches on the
// submitting thread) is deferred until the lanes (or the gate) are
// released, so a completion may call Submit again.
//
// Snapshots are the wrapped store's OpenSnapshot (point-in-time by the
// Store contract), written by snapshot_file.h. A log rewrite cuts the log
// inside a barrier (every lane and the log's I/O lock held, so no write is
// between the store and the log): the log continues in a new incremental
// file, the manifest lists old files + the new one, and the image opened in
// the barrier becomes the new base on a background thread; only then does
// the manifest drop the old files. A crash at any point leaves a manifest
// whose files replay to the acknowledged state.
//
// Background work (BGSAVE, rewrite) runs one job at a time on its own
// thread; a maintenance thread applies the save rules and the automatic
// rewrite, and starts a rewrite scheduled behind a BGSAVE.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "durability/append_log.h"
#include "durability/log_lanes.h"
#include "durability/log_manifest.h"
#include "durability/replay_clock.h"
#include "durability/writer_gate.h"
#include "kvcg/config.h"
#include "kvcg/durable.h"
#include "kvcg/store.h"

namespace kvcg::durability {

// Wraps `inner` as config.durability says: loads the files, starts the log.
// Errors: kIoError for unreadable/damaged files or a directory that cannot
// be created (the message names the file and offset).
// `clock` (may be null) is the ReplayClock whose function `inner` was opened
// with as its Config::clock: the load replays on it (replay_clock.h).
Status OpenDurable(const Config& config, std::unique_ptr<Store> inner, std::unique_ptr<Store>* out,
                   std::unique_ptr<ReplayClock> clock = nullptr);

class DurableStore final : public Durable {
 public:
  DurableStore(const Config& config, std::unique_ptr<Store> inner,
               std::unique_ptr<ReplayClock> clock = nullptr);
  ~DurableStore() override;

  // Loads the files and starts logging; called once by OpenDurable.
  Status Start();

  // Store
  Batch NewBatch() override { return inner_->NewBatch(); }
  void Submit(Batch batch, Completion done) override { SubmitWithEarlyAnswers(std::move(batch), std::move(done), {}); }
  // Forwards the early answers of the wrapped store, except for a write
  // batch under FsyncPolicy::kAlways (its answers wait for the fsync).
  void SubmitWithEarlyAnswers(Batch batch, Completion done, const EarlyCallback& early) override;
  uint64_t Size() const override { return inner_->Size(); }
  uint64_t MemoryBytes() const override { return inner_->MemoryBytes(); }
  void Clear() override;
  StoreInfo Info() const override { return inner_->Info(); }
  KeyspaceStats Keyspace() const override { return inner_->Keyspace(); }
  // Expiry needs no log records of its own: the log holds each key's
  // absolute expire-at, so a replay expires the same keys (replay_clock.h).
  uint64_t ReclaimExpired() override { return inner_->ReclaimExpired(); }
  Status SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) override {
    return inner_->SetMemoryLimit(max_memory_bytes, policy);
  }
  Status KeyAccess(std::string_view key, KeyAccessInfo* info) const override {
    return inner_->KeyAccess(key, info);
  }
  Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out) override { return inner_->OpenSnapshot(out); }
  Status Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next) override {
    return inner_->Scan(cursor, count, out, next);
  }

  // Durable
  Status Save() override;
  Status BackgroundSave() override;
  Status RewriteLog() override;
  Status SetAppendOnly(bool on) override;
  void SetFsyncPolicy(FsyncPolicy policy) override;
  void SetSaveRules(std::vector<SaveRule> rules) override;
  Status SyncLog() override;
  PersistenceInfo Persistence() const override;
  DurabilityConfig durability_config() const override;
  Store* inner() override { return inner_.get(); }

 protected:
  Status ApplyActiveExpiryHz(uint32_t hz) override { return inner_->SetActiveExpiryHz(hz); }

 private:
  enum class Job { kNone, kSave, kRewrite, kAppendOnly };

  std::string SnapshotPath() const;
  std::string LogDir() const;
  std::string ManifestPath() const;
  Status Load();
  // Starts the log as a new incremental file of `manifest_` (or from a new
  // base of the current state when `new_base`). Lanes must be quiet.
  Status StartLog(bool new_base);
  void RefuseWrites(Batch batch, Completion done);
  // The log pointer for a reader outside the lanes (admin_mu_ briefly).
  std::shared_ptr<AppendLog> CurrentLog() const;
  // inner_->OpenSnapshot, the image tagged with the store-clock time it was
  // taken at (TimedSnapshot), which its file records.
  Status OpenImage(std::unique_ptr<SnapshotReader>* image);

  // Jobs (durable_jobs.cc).
  Status BeginJob(Job kind);  // kUnavailable with Redis's text when one runs
  void EndJob(Job kind, bool ok, int64_t started_s, double seconds, bool background);
  Status WriteSnapshot(std::unique_ptr<SnapshotReader> image, uint64_t changes_at_open, int64_t started_s,
                       bool background);
  Status StartRewrite();
  Status SetAppendOnlyJob(bool on);
  void FinishRewrite(std::unique_ptr<SnapshotReader> image, uint64_t seq, int64_t started_s);
  void Maintain();
  uint64_t Changes() const;

  const Config config_;  // clock: the configured one (TIME records read it)
  // Declared before inner_: the inner store reads it until it is destroyed.
  std::unique_ptr<ReplayClock> replay_clock_;
  std::unique_ptr<Store> inner_;
  LogLanes lanes_;
  WriterGate gate_;  // write batches while the log is off (writer_gate.h)
  // The wrapped store is the plain CPU store, which runs a batch inside
  // Submit: a write batch's reads of keys it does not write run outside
  // the lanes (read_split.h).
  const bool split_reads_;

  mutable std::mutex cfg_mu_;  // dcfg_
  DurabilityConfig dcfg_;

  mutable std::mutex admin_mu_;  // Clear, a rewrite's cut, SetAppendOnly: one at a time
  // Changed only under admin_mu_ with every lane held. A write batch that
  // waits for its fsync holds a reference until its completion is parked,
  // so turning the log off never frees it under one.
  std::shared_ptr<AppendLog> log_;
  // log_ for readers outside the lanes: the write path picks the gate or the
  // lanes by it (null: no log), Persistence and the jobs read it.
  std::atomic<AppendLog*> log_view_{nullptr};
  // Bumped whenever log_ changes (with every lane held): a lane writes a
  // TIME record before its first record in each new log file.
  std::atomic<uint64_t> log_gen_{1};

  std::mutex manifest_mu_;
  LogManifest manifest_;
  uint64_t next_seq_ = 1;

  mutable std::mutex job_mu_;
  std::condition_variable job_cv_;
  Job job_ = Job::kNone;
  std::thread job_thread_;
  bool rewrite_scheduled_ = false;
  uint64_t changes_base_ = 0;      // Changes() at the last successful save
  int64_t last_save_time_ = 0;     // unix seconds
  int64_t last_bgsave_try_ = 0;    // unix seconds of the last failed automatic save
  int64_t last_rewrite_try_ = 0;   // unix seconds of the last failed rewrite
  uint32_t rewrite_failures_ = 0;  // in a row (automatic rewrites back off)
  bool last_bgsave_ok_ = true, last_rewrite_ok_ = true;
  int64_t last_bgsave_secs_ = -1, last_rewrite_secs_ = -1;
  uint64_t saves_ = 0;
  std::atomic<uint64_t> base_size_{0};      // bytes of the log's base after the last rewrite
  std::atomic<uint64_t> old_log_bytes_{0};  // bytes of the incremental files before the current one
  bool stop_ = false;
  std::thread maintenance_;

  // Set once by Load.
  uint64_t loaded_keys_ = 0;
  double load_seconds_ = 0;
  std::string load_source_ = "none";
  std::vector<std::string> load_warnings_;
};

}  // namespace kvcg::durability
