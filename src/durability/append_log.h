// AppendLog: the append-only log file of one incremental log and the thread
// that writes it — group commit, fsync policies and write errors.
//
// The flusher thread runs cycles. Cycle c takes every lane's buffer (lanes
// tagged c, see log_lanes.h) and retags the lanes c + 1, writes the taken
// records as one frame per lane, then — per policy — fsyncs: kAlways every
// cycle, kEverySec when a second has passed, kNo never (the OS decides).
// Under kAlways, writes wait: their completion is parked here with the
// cycle that holds their records and is called once that cycle's fsync is
// done. Every write parked while an fsync runs shares the next one, so one
// fsync covers many writes from many connections (group commit).
//
// Write errors (disk full, a file-size limit, EIO): the file is cut back to
// its last good size, the unwritten bytes are kept and retried every cycle,
// and healthy() is false until a retry succeeds. Parked writes of the failed
// cycles are answered Code::kIoError; DurableStore refuses new writes while
// unhealthy. So the log never has a hole: what reached memory reaches the
// file in order, or the writer was told it was not acknowledged.
//
// The lanes belong to DurableStore and outlive a log (appendonly off and on
// again), and a log can outlive its time as DurableStore's log (a write
// batch still in the wrapped store holds it until its completion is parked).
// So a log touches the lanes only while attached: DurableStore attaches the
// log it switches in and detaches the one it switches out, both inside a
// barrier. Attaching retags the lanes with this log's next cycle; a detached
// log's cycles only write what it already took (see AttachLanesLocked).
//
// Locks: io_mu_ is taken before any lane lock (the flusher holds it for a
// cycle's swap and write; barriers hold it and every lane). Completions are
// never called under io_mu_ or a lane: a cycle collects them and its caller
// delivers them after unlocking, so a completion may Submit or ask for
// Persistence().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "durability/log_lanes.h"
#include "kvcg/config.h"
#include "kvcg/results.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace kvcg::durability {

class AppendLog {
 public:
  // Creates `path` (which must not exist) with a log file header, fsync'ed
  // with its directory. kIoError on failure. The log starts detached from
  // the lanes (AttachLanesLocked).
  static Status Create(const std::string& path, LogLanes* lanes, FsyncPolicy policy,
                       std::unique_ptr<AppendLog>* out);
  // Writes and fsyncs what it holds (attached: and what the lanes hold),
  // stops the thread, closes the file.
  ~AppendLog();
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  FsyncPolicy policy() const { return policy_.load(std::memory_order_relaxed); }
  void SetPolicy(FsyncPolicy policy);
  bool healthy() const { return healthy_.load(std::memory_order_acquire); }
  std::string last_error() const;
  uint64_t file_bytes() const { return good_size_.load(std::memory_order_relaxed); }
  std::string path() const;
  uint64_t fsyncs() const { return fsyncs_.load(std::memory_order_relaxed); }
  uint64_t delayed_fsyncs() const { return delayed_fsyncs_.load(std::memory_order_relaxed); }

  // kAlways: records were appended to lanes; wake the flusher.
  void Notify();

  // Calls done(results) once cycle `gen` is fsync'ed (at once if it is), on
  // the flusher thread or the caller's. If the log fails first, the ops at
  // `write_ops` are answered kIoError instead.
  void WhenDurable(uint64_t gen, std::vector<uint32_t> write_ops, Store::Completion done,
                   Results results);

  // With io_mu_ and every lane held (see Barrier): writes and fsyncs what
  // the lanes hold, then `extra` (whole frames) if not empty. An error as
  // healthy() turns false.
  Status FlushLocked(std::string_view extra = {});
  // With io_mu_ and every lane held: FlushLocked, create `new_path` (empty,
  // with a header), call before_switch() (e.g. write a manifest naming it)
  // and, if that is ok, continue in the new file; otherwise delete it and go
  // on in the old one. Returns the first error.
  Status SwitchFileLocked(const std::string& new_path, const std::function<Status()>& before_switch);

  // With io_mu_ and every lane held, the lanes empty (the previous log, if
  // any, flushed and detached in this barrier or an earlier one): from now
  // on this log's cycles take the lanes. Each lane is retagged with this
  // log's next cycle. The tags count the cycles of the log that last ran
  // one, and a new log counts from 0: with the old tags, a write made
  // before this log's first cycle would wait for the fsync of a cycle
  // numbered as the old log's, which this log reaches only after as many
  // cycles (at 10 idle cycles a second under kAlways: minutes).
  void AttachLanesLocked();
  // With io_mu_ and every lane held, after FlushLocked: this log no longer
  // takes or retags the lanes (the next log owns them). It still writes,
  // fsyncs and delivers what it holds until it is destroyed.
  void DetachLanesLocked();

  // Runs fn with io_mu_ and every lane held: nothing is appended or written
  // meanwhile. Completions it releases are delivered by the flusher thread.
  void Barrier(const std::function<void()>& fn);

  // Waits until every record appended before the call is fsync'ed. kIoError
  // when the log is failing. Not under io_mu_ or a lane.
  Status Sync();

  // The store is closing: deliver every parked completion now and, from now
  // on, fsync and deliver at once inside WhenDurable (so every completion is
  // called before the wrapped store, whose memory results point into, goes).
  void SetClosing();

  // While held, writes are written and fsync'ed but no parked completion is
  // released: the file is not yet named by a manifest (appendonly turned on
  // at run time writes its base first). Releasing runs a sync cycle.
  void SetHold(bool hold);

  // An fsync failed: the kernel may have dropped written pages, so nothing
  // in this file can be trusted as durable again; only a switch to a new
  // file (a log rewrite) makes the log healthy again.
  bool broken() const { return broken_.load(std::memory_order_acquire); }

 private:
  struct Waiter {
    uint64_t gen;
    std::vector<uint32_t> write_ops;
    Store::Completion done;
    Results results;
  };
  struct Ready {
    Waiter waiter;
    bool failed;
  };

  AppendLog(std::string path, int fd, uint64_t size, LogLanes* lanes, FsyncPolicy policy);
  void Run();
  // One cycle; io_mu_ held by the caller. `force_sync` fsyncs whatever the
  // policy. Completions it releases go to ready_, delivered by the caller
  // once io_mu_ (and any lane) is released: user code never runs under them.
  void CycleLocked(bool force_sync, bool lanes_held);
  // Writes out_ (after any pending bytes); on failure keeps them pending.
  bool WriteLocked(uint64_t cycle);
  void Fail(int err, uint64_t upto_gen);
  void ReleaseWaiters();
  static void Deliver(std::deque<Ready>& ready);

  std::string path_;  // written under io_mu_ and wait_mu_ (a switch); read under either
  int fd_;
  LogLanes* const lanes_;
  std::atomic<FsyncPolicy> policy_;
  std::atomic<uint64_t> good_size_;
  std::atomic<bool> healthy_{true};
  std::atomic<bool> broken_{false};
  std::atomic<bool> hold_{false};
  std::atomic<uint64_t> fsyncs_{0}, delayed_fsyncs_{0};

  std::mutex io_mu_;        // a cycle or a barrier
  uint64_t cycle_ = 0;      // cycles started (io_mu_)
  bool attached_ = false;   // cycles take and retag the lanes (io_mu_ and every lane)
  std::string pending_;     // frames not yet in the file (after an error; io_mu_)
  bool needs_truncate_ = false;  // a failed write's tail is still in the file (io_mu_)
  std::string taken_[LogLanes::kLanes];  // lane buffers swapped out by a cycle (io_mu_)
  std::vector<std::pair<size_t, uint32_t>> taken_cuts_[LogLanes::kLanes];  // their frame cuts (io_mu_)
  std::string out_;         // the cycle's frames (io_mu_)
  uint64_t unsynced_gen_ = 0;  // newest cycle written but not fsync'ed (io_mu_)
  int64_t last_sync_ns_ = 0;   // (io_mu_)
  std::deque<Ready> ready_;    // released by a cycle, to deliver outside the locks (io_mu_)

  mutable std::mutex wait_mu_;  // waiters_, durable_gen_, failed_gen_, error_, closing_
  std::condition_variable wake_;  // the flusher: work or stop
  std::deque<Waiter> waiters_;
  std::deque<Ready> handoff_;  // released inside a Barrier: the flusher delivers them
  uint64_t durable_gen_ = 0;  // every cycle <= this is fsync'ed
  uint64_t failed_gen_ = 0;   // waiters <= this failed
  std::string error_;
  bool dirty_ = false, stop_ = false, closing_ = false;

  std::thread thread_;
};

}  // namespace kvcg::durability
