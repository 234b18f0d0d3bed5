// The server's persistence policy over kvcg::Durable; see persistence_control.h.
#include "common/thread_name.h"
#include "server/persistence_control.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <thread>

#include <spdlog/spdlog.h>

namespace kvcg::server {

namespace {

constexpr auto kCronPeriod = std::chrono::milliseconds(100);
constexpr auto kBusyPoll = std::chrono::milliseconds(10);

bool SameRules(const std::vector<SaveRule>& a, const std::vector<SaveRule>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].seconds != b[i].seconds || a[i].changes != b[i].changes) return false;
  }
  return true;
}

std::string ConfigSetError(const char* option, const std::string& why) {
  return std::string("ERR CONFIG SET failed (possibly related to argument '") + option + "') - " + why;
}

}  // namespace

PersistenceControl::~PersistenceControl() { Stop(); }

void PersistenceControl::Start(Durable* durable, const ServerConfig& config) {
  durable_ = durable;
  stop_writes_on_bgsave_error_.store(config.stop_writes_on_bgsave_error, std::memory_order_relaxed);
  has_save_rules_.store(!config.store.durability.save_rules.empty(), std::memory_order_relaxed);
  if (durable_ == nullptr) return;
  Refresh();
  cron_ = std::thread([this] {
    SetCurrentThreadName("kvcg-cron");
    Cron();
  });
}

void PersistenceControl::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (cron_.joinable()) cron_.join();
}

void PersistenceControl::Cron() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, kCronPeriod, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    Refresh();
    if (bgsave_scheduled_.load(std::memory_order_relaxed)) {
      PersistenceInfo p = durable_->Persistence();
      if (!p.bgsave_in_progress && !p.aof_rewrite_in_progress && !p.aof_rewrite_scheduled) {
        Status s = durable_->BackgroundSave();
        if (s.ok()) {
          spdlog::info("event=bgsave_started by=schedule");
          bgsave_scheduled_.store(false, std::memory_order_relaxed);
        } else if (s.code() != Code::kUnavailable) {
          spdlog::error("event=bgsave_failed by=schedule error=\"{}\"", s.ToString());
          bgsave_scheduled_.store(false, std::memory_order_relaxed);
        }
      }
    }
    lock.lock();
  }
}

void PersistenceControl::Refresh() {
  bool deny = false;
  if (durable_ != nullptr && stop_writes_on_bgsave_error_.load(std::memory_order_relaxed) &&
      has_save_rules_.load(std::memory_order_relaxed)) {
    deny = !durable_->Persistence().last_bgsave_ok;
  }
  if (deny != writes_denied_.exchange(deny, std::memory_order_relaxed)) {
    if (deny) spdlog::warn("event=writes_refused reason=\"last background save failed (stop-writes-on-bgsave-error)\"");
    else spdlog::info("event=writes_accepted reason=\"background save succeeded\"");
  }
}

std::string PersistenceControl::Apply(const ServerConfig& from, const ServerConfig& to) {
  const DurabilityConfig& a = from.store.durability;
  const DurabilityConfig& b = to.store.durability;
  bool aof_changed = a.append_only != b.append_only;
  bool fsync_changed = a.fsync != b.fsync;
  bool save_changed = !SameRules(a.save_rules, b.save_rules);
  if (durable_ == nullptr) {
    const char* option = aof_changed ? "appendonly" : fsync_changed ? "appendfsync" : save_changed ? "save" : nullptr;
    if (option != nullptr) return ConfigSetError(option, "persistence is off (the store has no durability directory)");
  } else {
    // The only fallible change goes first, so a failure leaves everything as it was.
    if (aof_changed) {
      Status s = durable_->SetAppendOnly(b.append_only);
      if (!s.ok()) {
        spdlog::error("event=config_set_failed option=appendonly value={} error=\"{}\"", b.append_only ? "yes" : "no",
                      s.ToString());
        return ConfigSetError("appendonly", b.append_only ? "Unable to turn on AOF. Check server logs."
                                                          : "Unable to turn off AOF. Check server logs.");
      }
      spdlog::info("event=appendonly value={}", b.append_only ? "yes" : "no");
    }
    if (fsync_changed) durable_->SetFsyncPolicy(b.fsync);
    if (save_changed) durable_->SetSaveRules(b.save_rules);
  }
  stop_writes_on_bgsave_error_.store(to.stop_writes_on_bgsave_error, std::memory_order_relaxed);
  has_save_rules_.store(!b.save_rules.empty(), std::memory_order_relaxed);
  Refresh();
  return "";
}

void PersistenceControl::ScheduleBackgroundSave() { bgsave_scheduled_.store(true, std::memory_order_relaxed); }

bool PersistenceControl::WantsSave(ShutdownSave mode) const {
  if (durable_ == nullptr || mode == ShutdownSave::kNoSave) return false;
  return mode == ShutdownSave::kSave || !durable_->durability_config().save_rules.empty();
}

Status PersistenceControl::Save(bool wait_for_background_save) {
  if (durable_ == nullptr) return Status::Unavailable("persistence is off");
  // Save() refuses while a background save or log rewrite runs. Redis's SAVE
  // saves during an AOF rewrite (and SHUTDOWN kills a BGSAVE child and
  // saves): we wait for our background job to end instead.
  auto next_note = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int idle_refusals = 0;
  for (;;) {
    Status s = durable_->Save();
    if (s.code() != Code::kUnavailable) {
      Refresh();
      return s;
    }
    PersistenceInfo p = durable_->Persistence();
    bool rewrite = p.aof_rewrite_in_progress || p.aof_rewrite_scheduled;
    if (p.bgsave_in_progress && !wait_for_background_save) return s;
    // Neither is running any more: it just ended (try again), or the store
    // refuses for another reason (closing), which a few tries tell apart.
    if (!p.bgsave_in_progress && !rewrite && ++idle_refusals > 3) return s;
    if (std::chrono::steady_clock::now() >= next_note) {
      spdlog::info("event=save_waiting reason=\"background save or log rewrite in progress\"");
      next_note += std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(kBusyPoll);
  }
}

Status PersistenceControl::SaveBeforeShutdown(ShutdownSave mode) {
  if (!WantsSave(mode)) return Status::Ok();
  Status s = Save(/*wait_for_background_save=*/true);
  if (!s.ok()) {
    spdlog::error("event=shutdown_save_failed error=\"{}\"", s.ToString());
  } else {
    spdlog::info("event=saved by=shutdown");
  }
  Refresh();
  return s;
}

Status PersistenceControl::FinishAtShutdown(ShutdownSave mode) {
  if (durable_ == nullptr) return Status::Ok();
  Status first;
  if (WantsSave(mode)) {
    // A SHUTDOWN already saved before answering: save again only for writes
    // other clients made before the drain finished.
    PersistenceInfo p = durable_->Persistence();
    if (p.changes_since_last_save > 0 || p.saves == 0 || !p.last_bgsave_ok) {
      Status s = Save(/*wait_for_background_save=*/true);
      if (!s.ok()) {
        spdlog::error("event=shutdown_save_failed error=\"{}\"", s.ToString());
        first = s;
      } else {
        spdlog::info("event=saved by=shutdown");
      }
    }
  }
  if (durable_->durability_config().append_only) {
    Status s = durable_->SyncLog();
    if (!s.ok()) {
      spdlog::error("event=shutdown_log_sync_failed error=\"{}\"", s.ToString());
      if (first.ok()) first = s;
    }
  }
  return first;
}

std::string PersistenceControl::AofErrorReply() const {
  std::string why = durable_ != nullptr ? durable_->Persistence().aof_last_write_error : "";
  if (why.empty()) why = "unknown error";
  return "MISCONF Errors writing to the AOF file: " + why;
}

void PersistenceControl::AppendInfo(std::string* out) const {
  PersistenceInfo p;
  if (durable_ != nullptr) p = durable_->Persistence();
  if (p.load_source.empty()) p.load_source = "none";
  auto line = [out](const char* key, const std::string& value) {
    *out += key;
    *out += ':';
    *out += value;
    *out += "\r\n";
  };
  auto num = [&line](const char* key, auto v) { line(key, std::to_string(v)); };
  auto status = [&line](const char* key, bool ok) { line(key, ok ? "ok" : "err"); };
  num("loading", p.loading ? 1 : 0);
  num("rdb_changes_since_last_save", p.changes_since_last_save);
  num("rdb_bgsave_in_progress", p.bgsave_in_progress ? 1 : 0);
  num("rdb_last_save_time", p.last_save_time);
  status("rdb_last_bgsave_status", p.last_bgsave_ok);
  num("rdb_last_bgsave_time_sec", p.last_bgsave_time_sec);
  num("rdb_saves", p.saves);
  num("aof_enabled", p.aof_enabled ? 1 : 0);
  num("aof_rewrite_in_progress", p.aof_rewrite_in_progress ? 1 : 0);
  num("aof_rewrite_scheduled", p.aof_rewrite_scheduled ? 1 : 0);
  num("aof_last_rewrite_time_sec", p.aof_last_rewrite_time_sec);
  status("aof_last_bgrewrite_status", p.aof_last_rewrite_ok);
  status("aof_last_write_status", p.aof_last_write_ok);
  num("aof_current_size", p.aof_current_size);
  num("aof_base_size", p.aof_base_size);
  num("aof_delayed_fsync", p.aof_delayed_fsync);
  num("kvcg_persistence", durable_ != nullptr ? 1 : 0);
  num("kvcg_aof_fsyncs", p.aof_fsyncs);
  num("kvcg_loaded_keys", p.loaded_keys);
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3f", p.load_seconds);
  line("kvcg_load_seconds", seconds);
  // redis-py and others split INFO values at ',' (e.g. "(3 base keys, 5 log records)").
  for (char& ch : p.load_source) {
    if (ch == ',') ch = ';';
  }
  line("kvcg_load_source", p.load_source);
  num("kvcg_load_warnings", p.load_warnings.size());
}

}  // namespace kvcg::server
