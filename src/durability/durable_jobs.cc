// DurableStore's snapshots, log rewrites, runtime configuration and the
// maintenance thread (durable_store.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "durability/durable_store.h"
#include "durability/frame_file.h"
#include "durability/snapshot_file.h"

namespace kvcg::durability {

namespace {
int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
constexpr int64_t kSaveRetryDelay = 5;  // seconds after a failed automatic save (Redis's CONFIG_BGSAVE_RETRY_DELAY)
}  // namespace

Status DurableStore::BeginJob(Job kind) {
  std::lock_guard<std::mutex> lock(job_mu_);
  if (stop_) return Status::Unavailable("the store is closing");
  if (job_ == Job::kSave) return Status::Unavailable("Background save already in progress");
  if (job_ == Job::kAppendOnly) return Status::Unavailable("appendonly is being switched; try again");
  if (job_ == Job::kRewrite) {
    return Status::Unavailable(kind == Job::kRewrite
                                   ? "Background append only file rewriting already in progress"
                                   : "Another child process is active (AOF?): can't BGSAVE right now. Use "
                                     "BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.");
  }
  job_ = kind;
  if (job_thread_.joinable()) job_thread_.join();  // a finished job's thread
  return Status::Ok();
}

void DurableStore::EndJob(Job kind, bool ok, int64_t started_s, double seconds, bool background) {
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    if (kind == Job::kSave) {
      // Like Redis, only a background save's outcome is "the last bgsave".
      if (background) {
        last_bgsave_ok_ = ok;
        last_bgsave_secs_ = int64_t(seconds + 0.5);
      }
      if (ok) {
        last_save_time_ = started_s;
        ++saves_;
      } else if (background) {
        last_bgsave_try_ = UnixNow();
      }
    } else if (kind == Job::kRewrite) {
      last_rewrite_ok_ = ok;
      last_rewrite_secs_ = int64_t(seconds + 0.5);
      rewrite_failures_ = ok ? 0 : rewrite_failures_ + 1;
      if (!ok) last_rewrite_try_ = UnixNow();
    }
    job_ = Job::kNone;
  }
  job_cv_.notify_all();
}

Status DurableStore::WriteSnapshot(std::unique_ptr<SnapshotReader> image, uint64_t changes_at_open,
                                   int64_t started_s, bool background) {
  const auto t0 = std::chrono::steady_clock::now();
  Status s = WriteSnapshotFile(image.get(), SnapshotPath(), nullptr);
  image.reset();
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(job_mu_);
    changes_base_ = changes_at_open;
  }
  EndJob(Job::kSave, s.ok(), started_s, Seconds(t0), background);
  return s;
}

Status DurableStore::Save() {
  Status s = BeginJob(Job::kSave);
  if (!s.ok()) return s;
  const int64_t started = UnixNow();
  const uint64_t changes = Changes();
  std::unique_ptr<SnapshotReader> image;
  s = OpenImage(&image);
  if (!s.ok()) {
    EndJob(Job::kSave, false, started, 0, false);
    return s;
  }
  return WriteSnapshot(std::move(image), changes, started, false);
}

Status DurableStore::BackgroundSave() {
  Status s = BeginJob(Job::kSave);
  if (!s.ok()) return s;
  const int64_t started = UnixNow();
  const uint64_t changes = Changes();
  std::unique_ptr<SnapshotReader> image;
  s = OpenImage(&image);  // the image's instant is now
  if (!s.ok()) {
    EndJob(Job::kSave, false, started, 0, true);
    return s;
  }
  std::lock_guard<std::mutex> lock(job_mu_);
  job_thread_ = std::thread([this, image = image.release(), changes, started]() mutable {
    WriteSnapshot(std::unique_ptr<SnapshotReader>(image), changes, started, true);
  });
  return Status::Ok();
}

Status DurableStore::RewriteLog() {
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    if (log_view_.load() == nullptr) {
      return Status::InvalidArgument("the append-only log is off (appendonly no)");
    }
    if (job_ == Job::kSave) {
      rewrite_scheduled_ = true;  // started by Maintain once the save ends
      return Status::Ok();
    }
  }
  return StartRewrite();
}

Status DurableStore::StartRewrite() {
  Status s = BeginJob(Job::kRewrite);
  if (!s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    rewrite_scheduled_ = false;
  }
  const int64_t started = UnixNow();
  std::unique_ptr<SnapshotReader> image;
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> admin(admin_mu_);
    AppendLog* log = log_.get();
    if (log == nullptr) {
      EndJob(Job::kRewrite, false, started, 0, true);
      return Status::InvalidArgument("the append-only log is off (appendonly no)");
    }
    std::lock_guard<std::mutex> m(manifest_mu_);
    seq = next_seq_++;
    const std::string dir = LogDir();
    const std::string incr = LogManifest::IncrName(dcfg_.log_name, seq);
    // The cut: nothing is between the store and the log while every lane is
    // held, so the image opened here is exactly the state the old files
    // replay to, and the new file holds exactly what follows it.
    log->Barrier([&] {
      LogManifest next = manifest_;
      next.incrs.push_back(incr);
      // The manifest names the new file before the log moves to it; if it
      // cannot be written the log goes on in the old file, nothing changed.
      s = log->SwitchFileLocked(JoinPath(dir, incr), [&] { return next.Write(ManifestPath()); });
      if (!s.ok()) return;
      manifest_ = std::move(next);
      uint64_t old_bytes = 0;
      for (size_t i = 0; i + 1 < manifest_.incrs.size(); ++i) old_bytes += FileSize(JoinPath(dir, manifest_.incrs[i]));
      old_log_bytes_ = old_bytes;
      s = OpenImage(&image);
    });
  }
  if (!s.ok()) {
    EndJob(Job::kRewrite, false, started, 0, true);
    return s;
  }
  std::lock_guard<std::mutex> lock(job_mu_);
  job_thread_ = std::thread([this, image = image.release(), seq, started]() mutable {
    FinishRewrite(std::unique_ptr<SnapshotReader>(image), seq, started);
  });
  return Status::Ok();
}

void DurableStore::FinishRewrite(std::unique_ptr<SnapshotReader> image, uint64_t seq, int64_t started) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = LogDir();
  const std::string base = LogManifest::BaseName(dcfg_.log_name, seq);
  uint64_t bytes = 0;
  Status s = WriteSnapshotFile(image.get(), JoinPath(dir, base), &bytes);
  image.reset();
  if (s.ok()) {
    std::lock_guard<std::mutex> m(manifest_mu_);
    LogManifest next;
    next.base = base;
    next.incrs.push_back(manifest_.incrs.back());  // the file the log writes now
    s = next.Write(ManifestPath());
    if (s.ok()) {
      std::vector<std::string> old;
      if (!manifest_.base.empty()) old.push_back(manifest_.base);
      for (size_t i = 0; i + 1 < manifest_.incrs.size(); ++i) old.push_back(manifest_.incrs[i]);
      manifest_ = std::move(next);
      for (const std::string& f : old) ::unlink(JoinPath(dir, f).c_str());
      base_size_ = bytes;
      old_log_bytes_ = 0;
    } else {
      ::unlink(JoinPath(dir, base).c_str());
    }
  }
  EndJob(Job::kRewrite, s.ok(), started, Seconds(t0), true);
}

Status DurableStore::SetAppendOnly(bool on) {
  // A job of its own, so no rewrite or save runs meanwhile (both use the log
  // and the manifest): wait for a running one, then hold the slot.
  for (;;) {
    Status s = BeginJob(Job::kAppendOnly);
    if (s.ok()) break;
    std::unique_lock<std::mutex> lock(job_mu_);
    if (stop_) return Status::Unavailable("the store is closing");
    job_cv_.wait(lock, [&] { return job_ == Job::kNone || stop_; });
  }
  const int64_t started = UnixNow();
  Status s = SetAppendOnlyJob(on);
  EndJob(Job::kAppendOnly, s.ok(), started, 0, false);
  return s;
}

Status DurableStore::SetAppendOnlyJob(bool on) {
  std::shared_ptr<AppendLog> old;
  {
    std::lock_guard<std::mutex> admin(admin_mu_);
    if ((log_ != nullptr) == on) {
      std::lock_guard<std::mutex> lock(cfg_mu_);
      dcfg_.append_only = on;
      return Status::Ok();
    }
    if (!on) {
      log_->Barrier([&] {
        log_->FlushLocked();
        // The log may outlive this (a write batch in flight holds it): it
        // must not take or retag the lanes the next log will use.
        log_->DetachLanesLocked();
        log_view_.store(nullptr, std::memory_order_release);
        old = std::move(log_);
      });
    }
  }
  if (!on) {
    old->SetClosing();  // parked writes are delivered; in-flight ones deliver at once
    old.reset();        // freed when the last in-flight write batch lets go of it
    std::lock_guard<std::mutex> lock(cfg_mu_);
    dcfg_.append_only = false;
    return Status::Ok();
  }
  // On: a new log whose base is the state at the instant it starts (as Redis
  // does with a rewrite). Writes go on into the new file while the base is
  // written; none of them is acknowledged under kAlways until the manifest
  // names both files (the log is held), so a crash before that loses only
  // writes that were never acknowledged.
  const std::string dir = LogDir();
  Status s = MakeDirs(dir);
  if (!s.ok()) return s;
  uint64_t seq;
  {
    std::lock_guard<std::mutex> m(manifest_mu_);
    seq = next_seq_++;
  }
  const std::string incr = LogManifest::IncrName(dcfg_.log_name, seq);
  const std::string base = LogManifest::BaseName(dcfg_.log_name, seq);
  std::unique_ptr<AppendLog> created;
  s = AppendLog::Create(JoinPath(dir, incr), &lanes_, durability_config().fsync, &created);
  if (!s.ok()) return s;
  std::shared_ptr<AppendLog> log(std::move(created));
  log->SetHold(true);
  std::unique_ptr<SnapshotReader> image;
  {
    std::lock_guard<std::mutex> admin(admin_mu_);
    // The writes made without a log are out of Submit (the image has them).
    std::lock_guard<WriterGate> gate(gate_);
    log->Barrier([&] {
      s = OpenImage(&image);
      if (!s.ok()) return;
      // The lanes still carry the cycle numbers of the log turned off,
      // while this one counts from 0: retag them with this log's, or a
      // write made before its first cycle waits for the old number (a
      // wait that grows with the old log's cycle count).
      log->AttachLanesLocked();
      log_view_.store(log.get(), std::memory_order_release);
      log_ = log;
      log_gen_.fetch_add(1, std::memory_order_relaxed);
    });
  }
  if (!s.ok()) return s;
  uint64_t bytes = 0;
  s = WriteSnapshotFile(image.get(), JoinPath(dir, base), &bytes);
  image.reset();
  if (s.ok()) {
    std::lock_guard<std::mutex> m(manifest_mu_);
    LogManifest next;
    next.base = base;
    next.incrs.push_back(incr);
    s = next.Write(ManifestPath());
    if (s.ok()) {
      manifest_ = std::move(next);
      base_size_ = bytes;
      old_log_bytes_ = 0;
    }
  }
  if (!s.ok()) {
    // Back to no log: the held writes are answered kIoError (they are in
    // memory, not in any log a restart would read).
    {
      std::lock_guard<std::mutex> admin(admin_mu_);
      log_->Barrier([&] {
        // What the lanes hold goes to this file (as it would have before it
        // let go of them); from now on the log leaves them alone.
        log_->FlushLocked();
        log_->DetachLanesLocked();
        log_view_.store(nullptr, std::memory_order_release);
        log_.reset();
      });
    }
    log->SetHold(false);  // (delivers what the file did make durable)
    log->SetClosing();
    log.reset();
    ::unlink(JoinPath(dir, base).c_str());
    return s;
  }
  log->SetHold(false);
  std::lock_guard<std::mutex> lock(cfg_mu_);
  dcfg_.append_only = true;
  return Status::Ok();
}

void DurableStore::SetFsyncPolicy(FsyncPolicy policy) {
  {
    std::lock_guard<std::mutex> lock(cfg_mu_);
    dcfg_.fsync = policy;
  }
  // Not under admin_mu_: a policy change syncs once, which delivers parked
  // completions, and a completion may call Persistence().
  if (std::shared_ptr<AppendLog> log = CurrentLog()) log->SetPolicy(policy);
}

void DurableStore::SetSaveRules(std::vector<SaveRule> rules) {
  std::lock_guard<std::mutex> lock(cfg_mu_);
  dcfg_.save_rules = std::move(rules);
}

Status DurableStore::SyncLog() {
  std::shared_ptr<AppendLog> log = CurrentLog();
  return log != nullptr ? log->Sync() : Status::Ok();
}

DurabilityConfig DurableStore::durability_config() const {
  std::lock_guard<std::mutex> lock(cfg_mu_);
  return dcfg_;
}

PersistenceInfo DurableStore::Persistence() const {
  PersistenceInfo p;
  const uint64_t changes = Changes();
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    p.changes_since_last_save = changes - changes_base_;
    p.bgsave_in_progress = job_ == Job::kSave;
    p.last_save_time = last_save_time_;
    p.last_bgsave_ok = last_bgsave_ok_;
    p.last_bgsave_time_sec = last_bgsave_secs_;
    p.saves = saves_;
    p.aof_rewrite_in_progress = job_ == Job::kRewrite;
    p.aof_rewrite_scheduled = rewrite_scheduled_;
    p.aof_last_rewrite_ok = last_rewrite_ok_;
    p.aof_last_rewrite_time_sec = last_rewrite_secs_;
    p.aof_base_size = base_size_;
    p.aof_current_size = base_size_ + old_log_bytes_;
  }
  if (std::shared_ptr<AppendLog> log = CurrentLog()) {
    p.aof_enabled = true;
    p.aof_last_write_ok = log->healthy();
    p.aof_last_write_error = log->last_error();
    p.aof_current_size += log->file_bytes();
    p.aof_fsyncs = log->fsyncs();
    p.aof_delayed_fsync = log->delayed_fsyncs();
  }
  p.loaded_keys = loaded_keys_;
  p.load_seconds = load_seconds_;
  p.load_source = load_source_;
  p.load_warnings = load_warnings_;
  return p;
}

void DurableStore::Maintain() {
  std::unique_lock<std::mutex> lock(job_mu_);
  while (!stop_) {
    job_cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_ || job_ != Job::kNone) continue;
    if (rewrite_scheduled_) {
      lock.unlock();
      StartRewrite();
      lock.lock();
      continue;
    }
    const int64_t now = UnixNow();
    const uint64_t changes = Changes() - changes_base_;
    bool save = false;
    if (last_bgsave_ok_ || now - last_bgsave_try_ >= kSaveRetryDelay) {
      for (const SaveRule& r : durability_config().save_rules) {  // cfg_mu_ after job_mu_
        if (changes >= r.changes && changes > 0 && now - last_save_time_ >= int64_t(r.seconds)) save = true;
      }
    }
    // A failed rewrite is retried with a growing delay (5 s, 10 s, ... up to
    // an hour, as Redis 7 limits AOF rewrites), so a full disk is not
    // hammered with base files.
    const int64_t backoff = rewrite_failures_ == 0 ? 0 : std::min<int64_t>(3600, int64_t(5) << std::min<uint32_t>(rewrite_failures_ - 1, 10));
    const bool may_rewrite = now - last_rewrite_try_ >= backoff;
    lock.unlock();
    bool rewrite = false;
    const DurabilityConfig cfg = durability_config();
    if (!save && may_rewrite) {
      if (std::shared_ptr<AppendLog> log = CurrentLog()) {
        // A file an fsync failed on can only be left by a rewrite.
        rewrite = log->broken();
        if (cfg.auto_rewrite_percentage > 0) {
          const uint64_t base = base_size_;
          const uint64_t size = base + old_log_bytes_ + log->file_bytes();
          const uint64_t since = base == 0 ? 1 : base;
          rewrite = rewrite || (size >= cfg.auto_rewrite_min_bytes &&
                                (size - since) * 100 >= uint64_t(cfg.auto_rewrite_percentage) * since);
        }
      }
    }
    if (save) BackgroundSave();
    else if (rewrite) StartRewrite();
    lock.lock();
  }
}

}  // namespace kvcg::durability
