// The append-only log's flusher: cycles, group commit, errors (append_log.h).
#include "durability/append_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "durability/frame_file.h"

namespace kvcg::durability {

namespace {
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
constexpr int64_t kSecond = 1'000'000'000;

// The results of a write batch whose log write failed: its writes answered
// kIoError (they are in memory but were never acknowledged), its reads as
// they were.
Results FailWrites(Results results, const std::vector<uint32_t>& write_ops) {
  ResultsBuilder b;
  b.Reset(results.size());
  for (size_t i = 0; i < results.size(); ++i) b.SetView(i, results.code(i), results.value(i));
  for (uint32_t i : write_ops) b.SetCode(i, Code::kIoError);
  b.Keep(std::move(results));
  return b.Finish();
}

// Creates `path` (which must not exist) holding a log file header, fsync'ed
// with its directory; *fd is open for appending, *size the header's bytes.
Status CreateLogFile(const std::string& path, int* fd, uint64_t* size) {
  *fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (*fd < 0 && errno == EEXIST) {
    // An orphan: a crash between creating a log file and naming it in the
    // manifest. Callers pick sequence numbers past every file the manifest
    // names, so nothing refers to it.
    ::unlink(path.c_str());
    *fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  }
  if (*fd < 0) return IoError(path, errno);
  const std::string header = FileHeader(kLogMagic);
  int err = WriteAll(*fd, header);
  if (err == 0) err = SyncFile(*fd);
  if (err == 0) err = SyncDir(DirName(path));
  if (err != 0) {
    ::close(*fd);
    ::unlink(path.c_str());
    return IoError(path, err);
  }
  *size = header.size();
  return Status::Ok();
}
}  // namespace

Status AppendLog::Create(const std::string& path, LogLanes* lanes, FsyncPolicy policy,
                         std::unique_ptr<AppendLog>* out) {
  int fd;
  uint64_t size;
  Status s = CreateLogFile(path, &fd, &size);
  if (!s.ok()) return s;
  out->reset(new AppendLog(path, fd, size, lanes, policy));
  return Status::Ok();
}

AppendLog::AppendLog(std::string path, int fd, uint64_t size, LogLanes* lanes, FsyncPolicy policy)
    : path_(std::move(path)), fd_(fd), lanes_(lanes), policy_(policy), good_size_(size) {
  last_sync_ns_ = NowNs();
  thread_ = std::thread([this] { Run(); });
}

AppendLog::~AppendLog() {
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  // Whatever could not be written (a failing disk) is answered as failed.
  std::deque<Ready> left;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    left.swap(handoff_);
    for (Waiter& w : waiters_) left.push_back(Ready{std::move(w), true});
    waiters_.clear();
  }
  Deliver(left);
  ::close(fd_);
}

void AppendLog::Deliver(std::deque<Ready>& ready) {
  for (Ready& r : ready) {
    if (r.failed) {
      r.waiter.done(FailWrites(std::move(r.waiter.results), r.waiter.write_ops));
    } else {
      r.waiter.done(std::move(r.waiter.results));
    }
  }
  ready.clear();
}

void AppendLog::SetPolicy(FsyncPolicy policy) {
  policy_.store(policy, std::memory_order_relaxed);
  // Writes parked under kAlways are released by a sync, which kNo never does
  // by itself: sync once now.
  Sync();
}

std::string AppendLog::path() const {
  std::lock_guard<std::mutex> lock(wait_mu_);
  return path_;
}

std::string AppendLog::last_error() const {
  std::lock_guard<std::mutex> lock(wait_mu_);
  return error_;
}

void AppendLog::Notify() {
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    dirty_ = true;
  }
  wake_.notify_one();
}

void AppendLog::WhenDurable(uint64_t gen, std::vector<uint32_t> write_ops, Store::Completion done,
                            Results results) {
  bool closing;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    closing = closing_;
    if (!closing && gen > durable_gen_ && gen > failed_gen_) {
      waiters_.push_back(Waiter{gen, std::move(write_ops), std::move(done), std::move(results)});
      return;
    }
  }
  if (closing) Sync();  // closing: nothing may stay parked
  bool failed;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    failed = gen > durable_gen_;
  }
  std::deque<Ready> one;
  one.push_back(Ready{Waiter{gen, std::move(write_ops), std::move(done), std::move(results)}, failed});
  Deliver(one);
}

void AppendLog::Run() {
  std::deque<Ready> ready;
  for (;;) {
    bool stop;
    {
      std::unique_lock<std::mutex> lock(wait_mu_);
      if (policy() == FsyncPolicy::kAlways) {
        // Also wake now and then to retry a failed write.
        wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return dirty_ || stop_; });
      } else {
        wake_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stop_; });
      }
      dirty_ = false;
      stop = stop_;
      ready.swap(handoff_);
    }
    Deliver(ready);
    {
      std::lock_guard<std::mutex> io(io_mu_);
      CycleLocked(stop, /*lanes_held=*/false);
      ready.swap(ready_);
    }
    Deliver(ready);
    if (stop) return;
  }
}

bool AppendLog::WriteLocked(uint64_t cycle) {
  if (!pending_.empty()) {
    pending_.append(out_);  // the failed bytes first: the log keeps its order
    out_.swap(pending_);
    pending_.clear();
  }
  if (out_.empty()) return true;
  if (needs_truncate_) {
    // A failed write's partial tail is still in the file: cut it first, or
    // the next frame would follow torn bytes.
    if (::ftruncate(fd_, off_t(good_size_.load())) != 0) {
      const int err = errno;
      pending_.swap(out_);
      Fail(err, cycle);
      return false;
    }
    needs_truncate_ = false;
  }
  const int err = WriteAll(fd_, out_);
  if (err != 0) {
    // Cut the file back to its last whole frame; keep the bytes for a retry.
    needs_truncate_ = ::ftruncate(fd_, off_t(good_size_.load())) != 0;
    pending_.swap(out_);
    out_.clear();
    Fail(err, cycle);
    return false;
  }
  good_size_.fetch_add(out_.size(), std::memory_order_relaxed);
  unsynced_gen_ = cycle;
  out_.clear();
  return true;
}

void AppendLog::CycleLocked(bool force_sync, bool lanes_held) {
  const uint64_t c = ++cycle_;
  out_.clear();
  uint32_t counts[LogLanes::kLanes] = {};
  // A detached log leaves the lanes alone: they hold the next log's records
  // and its cycle numbers (AttachLanesLocked).
  for (size_t i = 0; attached_ && i < LogLanes::kLanes; ++i) {
    LogLanes::Lane& lane = lanes_->lane(i);
    if (!lanes_held) lane.mu.lock();
    taken_[i].swap(lane.records);  // the lane keeps the old buffer's capacity
    taken_cuts_[i].swap(lane.cuts);
    lane.cuts.clear();
    counts[i] = lane.count;
    lane.count = 0;
    lane.gen = c + 1;
    if (!lanes_held) lane.mu.unlock();
  }
  for (size_t i = 0; i < LogLanes::kLanes; ++i) {
    if (counts[i] == 0) continue;
    size_t at = 0;
    uint32_t done = 0;
    for (const auto& [cut, before] : taken_cuts_[i]) {
      AppendFrame(&out_, FrameKind::kLogRecords, before - done, std::string_view(taken_[i]).substr(at, cut - at));
      at = cut;
      done = before;
    }
    AppendFrame(&out_, FrameKind::kLogRecords, counts[i] - done, std::string_view(taken_[i]).substr(at));
    taken_[i].clear();
    taken_cuts_[i].clear();
  }
  if (!WriteLocked(c)) return;
  const FsyncPolicy policy = this->policy();
  const int64_t now = NowNs();
  const bool want_sync = unsynced_gen_ != 0 &&
                         (force_sync || policy == FsyncPolicy::kAlways ||
                          (policy == FsyncPolicy::kEverySec && now - last_sync_ns_ >= kSecond));
  if (want_sync) {
    const int err = SyncFile(fd_);
    const int64_t took = NowNs() - now;
    if (took > 2 * kSecond) delayed_fsyncs_.fetch_add(1, std::memory_order_relaxed);
    if (err != 0) {
      // Linux may drop the dirty pages of a failed fsync and report success
      // on the next: this file can no longer be trusted (broken()).
      broken_.store(true, std::memory_order_release);
    } else {
      fsyncs_.fetch_add(1, std::memory_order_relaxed);
      last_sync_ns_ = now;
      unsynced_gen_ = 0;
    }
  }
  if (broken()) {
    Fail(EIO, c);
    return;
  }
  healthy_.store(true, std::memory_order_release);
  if (unsynced_gen_ == 0 && !hold_.load(std::memory_order_acquire)) {
    {
      std::lock_guard<std::mutex> lock(wait_mu_);
      durable_gen_ = c;
      error_.clear();
    }
    ReleaseWaiters();
  }
}

void AppendLog::Fail(int err, uint64_t upto_gen) {
  healthy_.store(false, std::memory_order_release);
  std::lock_guard<std::mutex> lock(wait_mu_);
  error_ = broken() ? std::string("fsync failed earlier (") + std::strerror(err) +
                          "); a log rewrite (BGREWRITEAOF) starts a new file"
                    : std::strerror(err);
  if (upto_gen > failed_gen_) failed_gen_ = upto_gen;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->gen <= failed_gen_) {
      ready_.push_back(Ready{std::move(*it), true});
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

void AppendLog::ReleaseWaiters() {
  std::lock_guard<std::mutex> lock(wait_mu_);
  // Waiters are parked in nondecreasing gen order per lane but not overall.
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->gen <= durable_gen_) {
      ready_.push_back(Ready{std::move(*it), false});
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

Status AppendLog::FlushLocked(std::string_view extra) {
  CycleLocked(/*force_sync=*/false, /*lanes_held=*/true);
  if (!extra.empty()) {
    // Written after everything before it, or kept after it in pending_ if
    // the file cannot take it now (a CLEAR must not be dropped: replay
    // would resurrect what it removed).
    out_.assign(extra.data(), extra.size());
    WriteLocked(cycle_);
  }
  CycleLocked(/*force_sync=*/true, /*lanes_held=*/true);
  if (!healthy()) return Status(Code::kIoError, path_ + ": " + last_error());
  return Status::Ok();
}

Status AppendLog::SwitchFileLocked(const std::string& new_path, const std::function<Status()>& before_switch) {
  Status s = FlushLocked();
  // A broken or failing file is left behind: the rewrite's new base (an
  // image of memory, taken in the same barrier) covers what it lacks.
  if (!s.ok() && !broken() && pending_.empty()) return s;
  int fd;
  uint64_t size;
  s = CreateLogFile(new_path, &fd, &size);
  if (!s.ok()) return s;
  s = before_switch();
  if (!s.ok()) {
    // The file stays: if the manifest did reach the disk it names it (and
    // the old file too, which the log keeps appending to); if not, it is an
    // orphan the next CreateLogFile replaces.
    ::close(fd);
    return s;
  }
  ::close(fd_);
  fd_ = fd;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    path_ = new_path;
  }
  good_size_.store(size, std::memory_order_relaxed);
  pending_.clear();
  needs_truncate_ = false;
  unsynced_gen_ = 0;
  broken_.store(false, std::memory_order_release);
  healthy_.store(true, std::memory_order_release);
  return Status::Ok();
}

void AppendLog::AttachLanesLocked() {
  // cycle_ + 1 is the cycle that will take what the lanes get from now on.
  // Not a constant such as 1: this log's thread has been running cycles
  // (over nothing) since Create, and a tag below the cycle that takes a
  // record could acknowledge it before its fsync.
  for (size_t i = 0; i < LogLanes::kLanes; ++i) lanes_->lane(i).gen = cycle_ + 1;
  attached_ = true;
}

void AppendLog::DetachLanesLocked() { attached_ = false; }

void AppendLog::Barrier(const std::function<void()>& fn) {
  std::deque<Ready> ready;
  {
    std::lock_guard<std::mutex> io(io_mu_);
    lanes_->Lock(LogLanes::kAll);
    fn();
    lanes_->Unlock(LogLanes::kAll);
    ready.swap(ready_);
  }
  if (ready.empty()) return;
  // The caller may hold its own locks (DurableStore's admin_mu_): the
  // flusher thread delivers these.
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    for (Ready& r : ready) handoff_.push_back(std::move(r));
    dirty_ = true;
  }
  wake_.notify_one();
}

Status AppendLog::Sync() {
  std::deque<Ready> ready;
  Status s;
  {
    std::lock_guard<std::mutex> io(io_mu_);
    CycleLocked(/*force_sync=*/true, /*lanes_held=*/false);
    ready.swap(ready_);
    if (!healthy()) s = Status(Code::kIoError, path_ + ": " + last_error());
  }
  Deliver(ready);
  return s;
}

void AppendLog::SetClosing() {
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    closing_ = true;
  }
  Sync();
}

void AppendLog::SetHold(bool hold) {
  hold_.store(hold, std::memory_order_release);
  if (!hold) Sync();
}

}  // namespace kvcg::durability
