// DurableStore: the write path, Clear, loading and the log's start
// (durable_store.h). Background jobs are in durable_jobs.cc.
#include "durability/durable_store.h"

#include <cassert>
#include <chrono>
#include <utility>

#include "durability/frame_file.h"
#include "durability/log_format.h"
#include "durability/read_split.h"
#include "durability/snapshot_file.h"
#include "store/backends.h"

namespace kvcg::durability {

namespace {
// Completions the wrapped store ran inline while this thread held lanes;
// delivered once they are released (durable_store.h).
struct Deferred {
  Store::Completion done;
  Results results;
};
thread_local int tls_lanes_held = 0;
thread_local std::vector<Deferred>* tls_deferred = nullptr;

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Status OpenDurable(const Config& config, std::unique_ptr<Store> inner, std::unique_ptr<Store>* out,
                   std::unique_ptr<ReplayClock> clock) {
  auto store = std::make_unique<DurableStore>(config, std::move(inner), std::move(clock));
  Status s = store->Start();
  if (!s.ok()) return s;
  *out = std::move(store);
  return Status::Ok();
}

DurableStore::DurableStore(const Config& config, std::unique_ptr<Store> inner,
                           std::unique_ptr<ReplayClock> clock)
    : config_(config),
      replay_clock_(std::move(clock)),
      inner_(std::move(inner)),
      split_reads_(config.mode == Mode::kCanonical && inner_->Info().backend == Backend::kCpu),
      dcfg_(config.durability) {}

Status DurableStore::OpenImage(std::unique_ptr<SnapshotReader>* image) {
  const uint64_t taken_at = config_.clock();
  std::unique_ptr<SnapshotReader> raw;
  Status s = inner_->OpenSnapshot(&raw);
  if (!s.ok()) return s;
  *image = std::make_unique<TimedSnapshot>(std::move(raw), taken_at);
  return Status::Ok();
}

std::string DurableStore::SnapshotPath() const {
  std::lock_guard<std::mutex> lock(cfg_mu_);
  return JoinPath(dcfg_.dir, dcfg_.snapshot_file);
}
std::string DurableStore::LogDir() const {
  std::lock_guard<std::mutex> lock(cfg_mu_);
  return JoinPath(dcfg_.dir, dcfg_.log_dir);
}
std::string DurableStore::ManifestPath() const {
  std::lock_guard<std::mutex> lock(cfg_mu_);
  return JoinPath(JoinPath(dcfg_.dir, dcfg_.log_dir), dcfg_.log_name + ".manifest");
}

Status DurableStore::Start() {
  Status s = MakeDirs(dcfg_.dir);
  if (!s.ok()) return s;
  s = Load();
  if (!s.ok()) return s;
  last_save_time_ = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  if (dcfg_.append_only) {
    // Without a manifest the log starts from what was loaded (a snapshot):
    // that state becomes its base. An empty store needs none.
    const bool fresh = manifest_.base.empty() && manifest_.incrs.empty();
    s = StartLog(/*new_base=*/fresh && inner_->Size() > 0);
    if (!s.ok()) return s;
  }
  maintenance_ = std::thread([this] { Maintain(); });
  return Status::Ok();
}

Status DurableStore::Load() {
  if (!dcfg_.load_on_open) return Status::Ok();
  // The files replay on a frozen clock (replay_clock.h); serving reads the
  // configured clock again.
  struct Thaw {
    ReplayClock* clock;
    ~Thaw() {
      if (clock != nullptr) clock->Thaw();
    }
  } thaw{replay_clock_.get()};
  const auto t0 = std::chrono::steady_clock::now();
  const std::string manifest_path = ManifestPath();
  if (dcfg_.append_only && FileExists(manifest_path)) {
    Status s = LogManifest::Read(manifest_path, &manifest_);
    if (!s.ok()) return s;
    const std::string dir = LogDir();
    uint64_t keys = 0;
    if (!manifest_.base.empty()) {
      const std::string base = JoinPath(dir, manifest_.base);
      s = LoadSnapshotFile(base, inner_.get(), &keys, replay_clock_.get());
      if (!s.ok()) return s;
      base_size_ = FileSize(base);
    }
    uint64_t records = 0;
    for (size_t i = 0; i < manifest_.incrs.size(); ++i) {
      const std::string path = JoinPath(dir, manifest_.incrs[i]);
      uint64_t n = 0;
      std::string warning;
      s = ReplayLogFile(path, inner_.get(), i + 1 == manifest_.incrs.size(), &n, &warning,
                        replay_clock_.get());
      if (!s.ok()) return s;
      if (!warning.empty()) load_warnings_.push_back(warning);
      records += n;
      old_log_bytes_ += FileSize(path);
    }
    next_seq_ = manifest_.MaxSeq() + 1;
    load_source_ = "log " + dir + " (" + std::to_string(keys) + " base keys, " + std::to_string(records) +
                   " log records)";
  } else if (FileExists(SnapshotPath())) {
    uint64_t keys = 0;
    Status s = LoadSnapshotFile(SnapshotPath(), inner_.get(), &keys, replay_clock_.get());
    if (!s.ok()) return s;
    load_source_ = "snapshot " + SnapshotPath();
  } else {
    return Status::Ok();
  }
  // Keys the files hold that have expired by now are dropped at once (as
  // Redis does loading an RDB file), not left for the sweeper: the counts
  // below and Keyspace() then hold only live keys.
  if (replay_clock_ != nullptr) replay_clock_->Thaw();
  inner_->ReclaimExpired();
  loaded_keys_ = inner_->Size();
  load_seconds_ = SecondsSince(t0);
  return Status::Ok();
}

Status DurableStore::StartLog(bool new_base) {
  const std::string dir = LogDir();
  Status s = MakeDirs(dir);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> lock(manifest_mu_);
  const uint64_t seq = next_seq_++;
  const std::string incr = LogManifest::IncrName(dcfg_.log_name, seq);
  std::unique_ptr<AppendLog> log;
  s = AppendLog::Create(JoinPath(dir, incr), &lanes_, dcfg_.fsync, &log);
  if (!s.ok()) return s;
  LogManifest next = manifest_;
  if (new_base) {
    // The log starts from the current state: write it as the base first.
    std::unique_ptr<SnapshotReader> image;
    s = OpenImage(&image);
    if (!s.ok()) return s;
    const std::string base = LogManifest::BaseName(dcfg_.log_name, seq);
    uint64_t bytes = 0;
    s = WriteSnapshotFile(image.get(), JoinPath(dir, base), &bytes);
    if (!s.ok()) return s;
    base_size_ = bytes;
    next = LogManifest{};
    next.base = base;
    old_log_bytes_ = 0;
  }
  next.incrs.push_back(incr);
  s = next.Write(ManifestPath());
  if (!s.ok()) return s;
  manifest_ = std::move(next);
  AppendLog* raw = log.get();
  std::lock_guard<WriterGate> gate(gate_);  // (no writer yet either)
  raw->Barrier([&] {  // no writer yet; the barrier is for the locks AttachLanesLocked wants
    raw->AttachLanesLocked();
    log_view_.store(raw, std::memory_order_release);
    log_ = std::move(log);
    log_gen_.fetch_add(1, std::memory_order_relaxed);
  });
  return Status::Ok();
}

DurableStore::~DurableStore() {
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    stop_ = true;
  }
  job_cv_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
  {
    std::unique_lock<std::mutex> lock(job_mu_);
    job_cv_.wait(lock, [&] { return job_ == Job::kNone; });
  }
  if (job_thread_.joinable()) job_thread_.join();
  if (log_) log_->SetClosing();
  inner_.reset();  // completes every batch; parked completions are delivered at once
  log_view_.store(nullptr);
  log_.reset();
}

std::shared_ptr<AppendLog> DurableStore::CurrentLog() const {
  std::lock_guard<std::mutex> admin(admin_mu_);
  return log_;
}

void DurableStore::SubmitWithEarlyAnswers(Batch batch, Completion done, const EarlyCallback& early) {
  const size_t n = batch.size();
  uint64_t mask = 0;
  uint32_t writes = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!TypeIn(batch.type(i), kWritingTypes)) continue;  // GET, or a masked op
    mask |= uint64_t(1) << LogLanes::LaneOf(batch.key(i));
    ++writes;
  }
  if (writes == 0) {
    inner_->SubmitWithEarlyAnswers(std::move(batch), std::move(done), early);
    return;
  }
  // Without a log, the gate (writer_gate.h says why); with one, the lanes.
  // Neither may be taken again by a Submit inside this one's (a barrier
  // waiting in between would hang it).
  assert(tls_lanes_held == 0 && "DurableStore::Submit called inside its own Submit");
  bool gated = false;
  if (log_view_.load(std::memory_order_acquire) == nullptr) {
    gate_.lock_shared();
    gated = log_view_.load(std::memory_order_relaxed) == nullptr;  // not turned on meanwhile
    if (!gated) gate_.unlock_shared();
  }
  const EarlyCallback* early_answers = &early;
  ReadSplitPlan split;
  if (!gated && split_reads_ && writes < n && PlanReadSplit(batch, config_.hash, &split)) {
    // The plain CPU store runs the batch inside Submit: its reads of keys
    // it does not write run first, outside the lanes (read_split.h). The
    // copied part is one batch, the original with it masked the other.
    Batch copy = inner_->NewBatch();
    copy.Reserve(split.copied.size(), split.bytes, split.bytes);
    for (uint32_t i : split.copied) copy.AppendFrom(batch, i);
    for (uint32_t i : split.copied) batch.SetNoop(i);
    auto* join = new SplitJoin(std::move(split.copied), std::move(done));
    if (split.copies_written) {
      inner_->Submit(std::move(batch), [join](Results&& r) { join->ArriveBase(std::move(r)); });
      batch = std::move(copy);
      done = [join](Results&& r) { join->ArriveCopy(std::move(r)); };
    } else {
      inner_->Submit(std::move(copy), [join](Results&& r) { join->ArriveCopy(std::move(r)); });
      done = [join](Results&& r) { join->ArriveBase(std::move(r)); };
    }
    early_answers = nullptr;  // the plain CPU store gives none
  }
  const size_t ops = batch.size();
  if (!gated) lanes_.Lock(mask);
  AppendLog* log = gated ? nullptr : log_.get();  // stable while a lane is held
  if (log != nullptr && !log->healthy()) {
    lanes_.Unlock(mask);
    RefuseWrites(std::move(batch), std::move(done));
    return;
  }
  LogLanes::Lane& first = lanes_.lane(size_t(__builtin_ctzll(mask)));
  first.changes.fetch_add(writes, std::memory_order_relaxed);
  uint64_t gen = 0;
  std::vector<uint32_t> write_ops;
  std::shared_ptr<AppendLog> waits_on;  // kAlways: the log its completion is parked in
  if (log != nullptr) {
    if (log->policy() == FsyncPolicy::kAlways) {
      waits_on = log_;
      write_ops.reserve(writes);
    }
    // The clock these ops run at, for the replay (log_format.h): one TIME
    // record per lane when it moved since the lane's last one.
    const uint64_t now = config_.clock();
    const uint64_t log_gen = log_gen_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < ops; ++i) {
      if (!TypeIn(batch.type(i), kWritingTypes)) continue;  // GET, NOOP
      // An op the store will refuse changes nothing: it needs no record.
      if (store::CheckOperation(config_, batch, i) != Code::kOk) continue;
      LogLanes::Lane& lane = lanes_.lane(LogLanes::LaneOf(batch.key(i)));
      if (lane.last_time != now || lane.time_gen != log_gen) {
        LogLanes::AddRecord(lane, [&](std::string* out) { AppendTimeRecord(out, now); });
        lane.last_time = now;
        lane.time_gen = log_gen;
      }
      LogLanes::AddRecord(lane, [&](std::string* out) { AppendLogRecord(out, batch, i); });
      if (lane.gen > gen) gen = lane.gen;
      if (waits_on) write_ops.push_back(uint32_t(i));
    }
  }
  std::vector<Deferred> deferred;
  std::vector<Deferred>* outer = tls_deferred;
  tls_deferred = &deferred;
  ++tls_lanes_held;
  // Delivery: at once, or parked in the log until the fsync covering `gen`.
  auto deliver = [](const std::shared_ptr<AppendLog>& log, uint64_t gen, std::vector<uint32_t>& ops,
                    Completion& done, Results&& r) {
    if (log) {
      log->WhenDurable(gen, std::move(ops), std::move(done), std::move(r));
    } else {
      done(std::move(r));
    }
  };
  // Early answers are as durable as the completion (the records are in the
  // log already), except under kAlways, whose answers wait for an fsync.
  // (A reference either way: copying `early` would copy its captures.)
  static const EarlyCallback kNoEarlyAnswers;
  const EarlyCallback& pass_early = waits_on || early_answers == nullptr ? kNoEarlyAnswers : *early_answers;
  inner_->SubmitWithEarlyAnswers(std::move(batch), [gen, deliver, waits_on, write_ops = std::move(write_ops),
                                    done = std::move(done)](Results&& results) mutable {
    if (tls_lanes_held > 0 && tls_deferred != nullptr) {
      // Inline, under our lanes: deliver after they are released.
      Completion later = [gen, deliver, waits_on = std::move(waits_on), ops = std::move(write_ops),
                          done = std::move(done)](Results&& r) mutable {
        deliver(waits_on, gen, ops, done, std::move(r));
      };
      tls_deferred->push_back(Deferred{std::move(later), std::move(results)});
      return;
    }
    deliver(waits_on, gen, write_ops, done, std::move(results));
  }, pass_early);
  --tls_lanes_held;
  tls_deferred = outer;
  const bool notify = waits_on != nullptr;
  if (gated) {
    gate_.unlock_shared();
  } else {
    lanes_.Unlock(mask);
  }
  if (notify) waits_on->Notify();
  for (Deferred& d : deferred) d.done(std::move(d.results));
}

void DurableStore::RefuseWrites(Batch batch, Completion done) {
  const size_t n = batch.size();
  Batch reads = inner_->NewBatch();
  std::vector<uint32_t> at;
  for (size_t i = 0; i < n; ++i) {
    if (batch.type(i) != OpType::kGet) continue;
    reads.AppendFrom(batch, i);
    at.push_back(uint32_t(i));
  }
  std::vector<OpType> types(batch.types(), batch.types() + n);
  auto finish = [n, at = std::move(at), types = std::move(types),
                 done = std::move(done)](Results&& r) {
    ResultsBuilder b;
    b.Reset(n);
    // A masked op changes nothing: kNotFound, as on every store.
    for (size_t i = 0; i < n; ++i) {
      b.SetCode(i, types[i] == OpType::kNoop ? Code::kNotFound : Code::kIoError);
    }
    // Each read's answer as the store gave it, its expire-at included.
    for (size_t j = 0; j < at.size() && j < r.size(); ++j) b.SetView(at[j], r[j]);
    b.Keep(std::move(r));
    done(b.Finish());
  };
  if (reads.empty()) {
    finish(Results());
    return;
  }
  inner_->Submit(std::move(reads), std::move(finish));
}

void DurableStore::Clear() {
  std::lock_guard<std::mutex> admin(admin_mu_);  // log_ is stable under it
  AppendLog* log = log_.get();
  if (log == nullptr) {
    std::lock_guard<WriterGate> gate(gate_);  // no write batch inside Submit
    lanes_.Lock(LogLanes::kAll);
    lanes_.lane(0).changes.fetch_add(1, std::memory_order_relaxed);
    inner_->Clear();
    lanes_.Unlock(LogLanes::kAll);
    return;
  }
  // A barrier: the CLEAR record must follow every earlier record of every
  // lane in the file and precede every later one.
  log->Barrier([&] {
    std::string record, frame;
    AppendClearRecord(&record);
    AppendFrame(&frame, FrameKind::kLogRecords, 1, record);
    log->FlushLocked(frame);  // a failure leaves the log unhealthy: writes are refused
    lanes_.lane(0).changes.fetch_add(1, std::memory_order_relaxed);
    inner_->Clear();
  });
}

uint64_t DurableStore::Changes() const {
  uint64_t sum = 0;
  for (size_t i = 0; i < LogLanes::kLanes; ++i) {
    sum += const_cast<LogLanes&>(lanes_).lane(i).changes.load(std::memory_order_relaxed);
  }
  return sum;
}

}  // namespace kvcg::durability
