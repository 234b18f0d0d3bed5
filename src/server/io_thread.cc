// The per-thread event loop; see io_thread.h.
#include "server/io_thread.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/thread_name.h"
#include "server/connection.h"
#include "server/server.h"

namespace kvcg::server {

namespace {

thread_local IoThread* t_current = nullptr;

// epoll data tags; connections are stored as (8-byte aligned) pointers.
constexpr uint64_t kEventFdTag = 1;
constexpr uint64_t kListenerTag = 2;  // | index << 2

std::string FormatAddress(const sockaddr_storage& sa, bool unix_socket) {
  if (unix_socket || sa.ss_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&sa);
    return std::string(un->sun_path) + ":0";
  }
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
  port = ntohs(in6->sin6_port);
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

IoThread* IoThread::Current() { return t_current; }

IoThread::IoThread(Server* server, int index) : server_(server), index_(index) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  eventfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kEventFdTag;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, eventfd_, &ev);
  settings_ = server_->ConfigSnapshot();
  settings_version_ = server_->config_version();
}

IoThread::~IoThread() {
  Join();
  for (Connection* c : conns_) delete c;
  // Every round was delivered and left before the loop ended (Run waits for
  // its connections), except one nobody joined.
  delete pending_round_;
  for (SharedRound* r : free_rounds_) delete r;
  for (auto& [fd, unix_socket] : adopted_) ::close(fd);
  if (epfd_ >= 0) ::close(epfd_);
  if (eventfd_ >= 0) ::close(eventfd_);
}

void IoThread::AddListener(int fd, bool unix_socket) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  ev.data.u64 = kListenerTag | (static_cast<uint64_t>(listeners_.size()) << 2);
  listeners_.emplace_back(fd, unix_socket);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
}

void IoThread::Start() {
  pending_ = server_->store()->NewBatch();
  thread_ = std::thread([this] {
    SetCurrentThreadName("kvcg-io-" + std::to_string(index_));
    Run();
  });
}

void IoThread::Join() {
  if (thread_.joinable()) thread_.join();
}

void IoThread::Wake() {
  uint64_t one = 1;
  ssize_t r = ::write(eventfd_, &one, sizeof(one));
  (void)r;
}

void IoThread::Stop() {
  stop_requested_.store(true, std::memory_order_release);
  Wake();
}

// ---------------------------------------------------------------------------
// The shared round (shared_round.h).

void IoThread::ReserveRound() { pending_.Reserve(hint_ops_, hint_key_bytes_, hint_value_bytes_); }

void IoThread::JoinRound(Connection* conn, uint32_t begin) {
  if (pending_round_ == nullptr) {
    if (free_rounds_.empty()) {
      pending_round_ = new SharedRound();
    } else {
      pending_round_ = free_rounds_.back();
      free_rounds_.pop_back();
    }
  }
  pending_round_->members.push_back({conn, begin, static_cast<uint32_t>(pending_.size()), false});
  conn->EnterRound(pending_round_);
}

void IoThread::SubmitPending() {
  if (pending_round_ == nullptr) return;
  SharedRound* round = std::exchange(pending_round_, nullptr);
  round->holds = static_cast<uint32_t>(round->members.size()) + 1;
  round->submit_ns = NowNs();
  Add(stats_.batches, 1);
  Add(stats_.batch_ops, pending_.size());
  Add(stats_.batch_members, round->members.size());
  // A slowly falling maximum of the recent rounds: a round larger than the
  // last one would otherwise grow its columns (a copy and a second pinned
  // lease) whenever the rounds' sizes vary (0.6 % of an I/O thread on the
  // H200 host at 256 connections with the last round's sizes as the hint).
  const auto hint = [](size_t& h, size_t now) { h = std::max(now, h - h / 8); };
  hint(hint_ops_, pending_.size());
  hint(hint_key_bytes_, pending_.key_bytes_size());
  hint(hint_value_bytes_, pending_.value_bytes_size());
  // The store keeps the batch; the next round gets a fresh one (empty, so it
  // allocates nothing until used), reserved on its first op from these hints.
  Batch batch = std::exchange(pending_, server_->store()->NewBatch());
  server_->store()->SubmitWithEarlyAnswers(
      std::move(batch),
      [this, round](Results&& results) {
        round->results = std::move(results);
        PostCompletion(round);
      },
      [this, round](const Store::EarlyAnswers& answers) { FinishEarly(round, answers); });
}

void IoThread::FinishEarly(SharedRound* round, const Store::EarlyAnswers& answers) {
  for (SharedRound::Member& m : round->members) {
    bool all = true;
    for (uint32_t i = m.begin; i < m.end && all; ++i) all = answers.answered[i] != 0;
    if (!all) continue;
    m.early = true;
    Add(stats_.early_rounds, 1);
    // Inside Submit: the connection writes its replies and, for CAS losers,
    // joins the next round; it reads and dispatches on its next turn.
    Connection* conn = std::exchange(m.conn, nullptr);  // it may be deleted before the round completes
    conn->ProcessEarly(answers.results, round);
    ScheduleAgain(conn);
  }
}

void IoThread::PostCompletion(SharedRound* round) {
  if (t_current == this) {
    // Inline completion (inside Submit on this thread): no hand-over needed.
    Deliver(round);
    return;
  }
  bool was_empty;
  {
    std::lock_guard lock(mu_);
    was_empty = completed_.empty();
    completed_.push_back(round);
  }
  // A write to the eventfd (a system call on the store's delivery thread,
  // per batch) only when the loop blocks or is about to: a busy loop drains
  // completions at the end of its pass anyway. The fence pairs with Run's:
  // either this sees waiting_, or Run's look at the queue sees the round.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (was_empty && waiting_.load(std::memory_order_relaxed)) Wake();
}

void IoThread::Deliver(SharedRound* round) {
  stats_.store_latency.Record(NowNs() - round->submit_ns);
  for (SharedRound::Member& m : round->members) {
    if (m.early) continue;
    m.conn->MarkRoundReady();
    if (driving != m.conn) ScheduleAgain(m.conn);
  }
  Leave(round);  // the delivery's hold
}

void IoThread::Leave(SharedRound* round) {
  if (--round->holds != 0) return;
  round->results.Release();
  round->members.clear();
  free_rounds_.push_back(round);
}

void IoThread::AdoptSocket(int fd, bool unix_socket) {
  {
    std::lock_guard lock(mu_);
    adopted_.emplace_back(fd, unix_socket);
  }
  Wake();
}

void IoThread::ScheduleAgain(Connection* conn) {
  if (conn->scheduled) return;
  conn->scheduled = true;
  again_.push_back(conn);
}

void IoThread::Unwatch(int fd) { epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

void IoThread::Retire(Connection* conn) { retired_.push_back(conn); }

void IoThread::RefreshSettings() {
  uint64_t v = server_->config_version();
  if (v != settings_version_) {
    settings_ = server_->ConfigSnapshot();
    settings_version_ = v;
  }
}

void IoThread::Accept(int listener, bool unix_socket) {
  // One connection per wake-up; handed round-robin to the loops so that a
  // burst of connects (redis-benchmark -c 50) spreads evenly.
  static std::atomic<uint64_t> next_loop{0};
  int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      spdlog::warn("event=accept_failed error=\"{}\"", std::strerror(errno));
    }
    return;
  }
  size_t n = server_->io_threads();
  size_t target = n ? next_loop.fetch_add(1, std::memory_order_relaxed) % n : 0;
  IoThread* loop = server_->loop(target);
  if (loop == this) AddConnection(fd, unix_socket);
  else loop->AdoptSocket(fd, unix_socket);
}

void IoThread::AddConnection(int fd, bool unix_socket) {
  Add(stats_.connections_received, 1);
  if (stopping_) {
    ::close(fd);
    return;
  }
  if (server_->connected().load(std::memory_order_relaxed) >= settings_.maxclients) {
    static const char kMsg[] = "-ERR max number of clients reached\r\n";
    ssize_t r = ::send(fd, kMsg, sizeof(kMsg) - 1, MSG_NOSIGNAL);
    (void)r;
    ::close(fd);
    Add(stats_.rejected_connections, 1);
    return;
  }
  if (!unix_socket) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  sockaddr_storage peer{}, local{};
  socklen_t len = sizeof(peer);
  getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len);
  len = sizeof(local);
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  server_->connected().fetch_add(1, std::memory_order_relaxed);
  // A Unix-socket peer is unnamed; Redis shows the socket path for both ends.
  std::string addr = unix_socket ? settings_.unixsocket + ":0" : FormatAddress(peer, false);
  std::string laddr = unix_socket ? settings_.unixsocket + ":0" : FormatAddress(local, false);
  auto* conn = new Connection(this, fd, server_->NextClientId(), std::move(addr), std::move(laddr));
  conns_.insert(conn);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = conn;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
  spdlog::debug("event=client_connected id={} addr={} loop={}", conn->id(), conn->info().addr, index_);
}

void IoThread::DrainCompletions() {
  // The queue and the scratch list trade buffers, so neither allocates once
  // warm.
  std::vector<std::pair<int, bool>> adopted;
  {
    std::lock_guard lock(mu_);
    draining_.swap(completed_);
    if (!adopted_.empty()) adopted.swap(adopted_);
  }
  for (auto& [fd, unix_socket] : adopted) AddConnection(fd, unix_socket);
  // Members are marked and run from the run-again list, which follows.
  for (SharedRound* r : draining_) Deliver(r);
  draining_.clear();
}

void IoThread::CheckTimeouts() {
  uint64_t now = WallMs();
  if (now - last_timeout_check_ms_ < 1000) return;
  last_timeout_check_ms_ = now;
  uint64_t timeout = settings_.timeout_s;
  if (timeout == 0) return;
  std::vector<Connection*> expired;
  for (Connection* c : conns_) {
    if (!c->dead() && c->idle() && now - c->last_interaction_ms() > timeout * 1000) expired.push_back(c);
  }
  for (Connection* c : expired) c->Close("idle timeout");
}

void IoThread::Sweep() {
  if (retired_.empty()) return;
  std::vector<Connection*> keep;
  for (Connection* c : retired_) {
    if (c->in_flight() || c->scheduled) {
      keep.push_back(c);
    } else {
      conns_.erase(c);
      delete c;
    }
  }
  retired_.swap(keep);
}

void IoThread::Run() {
  t_current = this;
  epoll_event events[256];
  for (;;) {
    RefreshSettings();
    int timeout_ms = again_.empty() ? 100 : 0;
    if (timeout_ms != 0) {
      // About to block: from here on PostCompletion wakes the loop; a round
      // posted before this point is in the queue, so the loop does not block.
      waiting_.store(true, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      std::lock_guard lock(mu_);
      if (!completed_.empty()) timeout_ms = 0;
    }
    int n = epoll_wait(epfd_, events, 256, timeout_ms);
    waiting_.store(false, std::memory_order_relaxed);
    if (n < 0 && errno != EINTR) {
      spdlog::error("event=epoll_failed error=\"{}\"", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == kEventFdTag) {
        uint64_t v;
        ssize_t r = ::read(eventfd_, &v, sizeof(v));
        (void)r;
      } else if ((tag & 3) == kListenerTag) {
        size_t index = tag >> 2;
        if (!stopping_ && index < listeners_.size()) Accept(listeners_[index].first, listeners_[index].second);
      } else {
        auto* conn = static_cast<Connection*>(events[i].data.ptr);
        if (!conn->dead()) conn->OnEvents(events[i].events);
      }
    }
    DrainCompletions();
    if (!again_.empty()) {
      // Two vectors taking turns keep their capacity (no allocation per pass).
      again_running_.swap(again_);
      for (Connection* c : again_running_) {
        c->scheduled = false;
        c->Drive();
      }
      again_running_.clear();
    }
    // The end of a pass: what the connections queued goes to the store now.
    SubmitPending();
    if (stop_requested_.load(std::memory_order_acquire) && !stopping_) {
      stopping_ = true;
      for (auto& [fd, unix_socket] : listeners_) epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
      stop_deadline_ns_ = NowNs() + settings_.shutdown_timeout_s * 1000000000ull;
      std::vector<Connection*> all(conns_.begin(), conns_.end());
      for (Connection* c : all) {
        if (!c->dead()) c->BeginDrain();
      }
    }
    if (stopping_ && NowNs() > stop_deadline_ns_) {
      std::vector<Connection*> all(conns_.begin(), conns_.end());
      for (Connection* c : all) {
        if (!c->dead()) c->Close("shutdown timeout");
      }
    }
    CheckTimeouts();
    Sweep();
    if (stopping_ && conns_.empty()) break;
  }
  t_current = nullptr;
}

}  // namespace kvcg::server
