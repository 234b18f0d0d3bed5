// IoThread: one epoll event loop owning a set of connections (Redis's I/O
// threads, but each one parses, dispatches and replies for its own clients,
// so no connection is ever touched by two threads).
//
// All loops wait on every listening socket with EPOLLEXCLUSIVE and accept for
// themselves, which spreads connections without an acceptor thread. Sockets
// are edge-triggered; a connection that stopped reading (fairness or
// backpressure) with bytes left is put on a run-again list. Store completions
// arriving from other threads are queued under a mutex and signalled with an
// eventfd; completions that run inline inside Submit on this thread just
// mark the connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "server/server_config.h"
#include "server/stats.h"

namespace kvcg::server {

class Connection;
class Server;

class IoThread {
 public:
  IoThread(Server* server, int index);
  ~IoThread();

  // Before Start: listen on `fd` too (shared by all loops).
  void AddListener(int fd, bool unix_socket);
  void Start();
  void Join();
  // Begin the shutdown drain (any thread).
  void Stop();

  // A round of `conn` completed (any thread; results already handed over).
  void PostCompletion(Connection* conn);
  // Run `conn` again at the next loop iteration (loop thread).
  void ScheduleAgain(Connection* conn);
  // Connection closed: stop polling it, delete it when safe (loop thread).
  void Retire(Connection* conn);
  void Unwatch(int fd);

  Server* server() const { return server_; }
  int index() const { return index_; }
  ThreadStats& stats() { return stats_; }
  // This loop's copy of the live settings, refreshed when CONFIG SET changes them.
  const ServerConfig& settings() const { return settings_; }
  bool stopping() const { return stopping_; }
  size_t connections() const { return conns_.size(); }
  // The loop whose thread is running the caller, or null.
  static IoThread* Current();
  // Hand an accepted socket to this loop (any thread).
  void AdoptSocket(int fd, bool unix_socket);

  Connection* driving = nullptr;  // the connection whose Drive() is on the stack

 private:
  void Run();
  void Accept(int listener, bool unix_socket);
  void RefreshSettings();
  void CheckTimeouts();
  void DrainCompletions();
  void AddConnection(int fd, bool unix_socket);
  void Wake();
  void Sweep();

  Server* server_;
  int index_;
  int epfd_ = -1;
  int eventfd_ = -1;
  std::thread thread_;
  std::vector<std::pair<int, bool>> listeners_;
  ServerConfig settings_;
  uint64_t settings_version_ = ~0ull;
  ThreadStats stats_;

  std::unordered_set<Connection*> conns_;
  std::vector<Connection*> again_;
  std::vector<Connection*> retired_;
  std::mutex mu_;
  std::vector<Connection*> completed_;  // guarded by mu_
  std::vector<std::pair<int, bool>> adopted_;  // guarded by mu_: accepted sockets
  std::atomic<bool> stop_requested_{false};
  bool stopping_ = false;
  uint64_t stop_deadline_ns_ = 0;
  uint64_t last_timeout_check_ms_ = 0;
};

}  // namespace kvcg::server
