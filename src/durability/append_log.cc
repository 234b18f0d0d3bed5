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
  std::deque<Waiter> left;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    left.swap(waiters_);
  }
  for (Waiter& w : left) w.done(FailWrites(std::move(w.results), w.write_ops));
  ::close(fd_);
}

void AppendLog::SetPolicy(FsyncPolicy policy) {
  policy_.store(policy, std::memory_order_relaxed);
  wake_.notify_one();
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
  if (closing_.load(std::memory_order_acquire)) Sync();
  bool failed;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    if (gen > durable_gen_ && gen > failed_gen_) {
      waiters_.push_back(Waiter{gen, std::move(write_ops), std::move(done), std::move(results)});
      return;
    }
    failed = gen > durable_gen_;
  }
  if (failed) {
    done(FailWrites(std::move(results), write_ops));
  } else {
    done(std::move(results));
  }
}

void AppendLog::Run() {
  for (;;) {
    bool stop, sync;
    {
      std::unique_lock<std::mutex> lock(wait_mu_);
      if (policy() == FsyncPolicy::kAlways) {
        // Also wake now and then to retry a failed write.
        wake_.wait_for(lock, std::chrono::milliseconds(100),
                       [&] { return dirty_ || stop_ || sync_requests_ > 0; });
      } else {
        wake_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stop_ || sync_requests_ > 0; });
      }
      dirty_ = false;
      stop = stop_;
      sync = sync_requests_ > 0;
    }
    {
      std::lock_guard<std::mutex> io(io_mu_);
      CycleLocked(stop || sync, /*lanes_held=*/false);
    }
    if (stop) return;
  }
}

void AppendLog::CycleLocked(bool force_sync, bool lanes_held) {
  const uint64_t c = ++cycle_;
  out_.clear();
  if (!pending_.empty()) out_.swap(pending_);  // retried first: the log keeps its order
  uint32_t counts[LogLanes::kLanes];
  for (size_t i = 0; i < LogLanes::kLanes; ++i) {
    LogLanes::Lane& lane = lanes_->lane(i);
    if (!lanes_held) lane.mu.lock();
    taken_[i].swap(lane.records);  // the lane keeps the old buffer's capacity
    counts[i] = lane.count;
    lane.count = 0;
    lane.gen = c + 1;
    if (!lanes_held) lane.mu.unlock();
  }
  for (size_t i = 0; i < LogLanes::kLanes; ++i) {
    if (counts[i] == 0) continue;
    AppendFrame(&out_, FrameKind::kLogRecords, counts[i], taken_[i]);
    taken_[i].clear();
  }
  if (!out_.empty()) {
    const int err = WriteAll(fd_, out_);
    if (err != 0) {
      // Cut the file back to its last whole frame; keep the bytes for a retry.
      if (::ftruncate(fd_, off_t(good_size_.load())) != 0) {
        // The tail stays torn; the next successful write would follow it, so
        // keep failing until the truncation works.
      }
      pending_.swap(out_);
      Fail(err, c);
      return;
    }
    good_size_.fetch_add(out_.size(), std::memory_order_relaxed);
    unsynced_gen_ = c;
  }
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
      Fail(err, c);
      return;
    }
    fsyncs_.fetch_add(1, std::memory_order_relaxed);
    last_sync_ns_ = now;
    unsynced_gen_ = 0;
  }
  healthy_.store(true, std::memory_order_release);
  if (unsynced_gen_ == 0) {
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
  std::deque<Waiter> failed;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    error_ = std::strerror(err);
    if (upto_gen > failed_gen_) failed_gen_ = upto_gen;
    while (!waiters_.empty() && waiters_.front().gen <= failed_gen_) {
      failed.push_back(std::move(waiters_.front()));
      waiters_.pop_front();
    }
  }
  synced_.notify_all();
  for (Waiter& w : failed) w.done(FailWrites(std::move(w.results), w.write_ops));
}

void AppendLog::ReleaseWaiters() {
  std::deque<Waiter> ready;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    // Waiters are parked in nondecreasing gen order per lane but not overall;
    // take every one that is covered.
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->gen <= durable_gen_) {
        ready.push_back(std::move(*it));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  synced_.notify_all();
  for (Waiter& w : ready) w.done(std::move(w.results));
}

Status AppendLog::FlushLocked(std::string_view extra) {
  CycleLocked(/*force_sync=*/false, /*lanes_held=*/true);
  if (!extra.empty()) {
    if (!pending_.empty()) return Status(Code::kIoError, path_ + ": " + last_error());
    const int err = WriteAll(fd_, extra);
    if (err != 0) {
      if (::ftruncate(fd_, off_t(good_size_.load())) != 0) {
      }
      Fail(err, cycle_);
      return IoError(path_, err);
    }
    good_size_.fetch_add(extra.size(), std::memory_order_relaxed);
    unsynced_gen_ = cycle_;
  }
  CycleLocked(/*force_sync=*/true, /*lanes_held=*/true);
  if (!healthy()) return Status(Code::kIoError, path_ + ": " + last_error());
  return Status::Ok();
}

Status AppendLog::SwitchFileLocked(const std::string& new_path, const std::function<Status()>& before_switch) {
  Status s = FlushLocked();
  if (!s.ok()) return s;
  int fd;
  uint64_t size;
  s = CreateLogFile(new_path, &fd, &size);
  if (!s.ok()) return s;
  s = before_switch();
  if (!s.ok()) {
    ::close(fd);
    ::unlink(new_path.c_str());
    return s;
  }
  ::close(fd_);
  fd_ = fd;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    path_ = new_path;
  }
  good_size_.store(size, std::memory_order_relaxed);
  return Status::Ok();
}

void AppendLog::Barrier(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> io(io_mu_);
  lanes_->Lock(LogLanes::kAll);
  fn();
  lanes_->Unlock(LogLanes::kAll);
}

Status AppendLog::Sync() {
  std::lock_guard<std::mutex> io(io_mu_);
  CycleLocked(/*force_sync=*/true, /*lanes_held=*/false);
  if (!healthy()) return Status(Code::kIoError, path_ + ": " + last_error());
  return Status::Ok();
}

void AppendLog::SetClosing() {
  closing_.store(true, std::memory_order_release);
  Sync();
}

}  // namespace kvcg::durability
