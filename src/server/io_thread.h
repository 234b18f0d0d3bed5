// IoThread: one epoll event loop owning a set of connections (Redis's I/O
// threads, but each one parses, dispatches and replies for its own clients,
// so no connection is ever touched by two threads). The store operations of
// all its connections in one pass of the loop go to the store as one batch
// (shared_round.h).
//
// All loops wait on every listening socket with EPOLLEXCLUSIVE and accept for
// themselves, which spreads connections without an acceptor thread. Sockets
// are edge-triggered; a connection that stopped reading (fairness or
// backpressure) with bytes left is put on a run-again list. Store completions
// arriving from other threads are queued under a mutex and signalled with an
// eventfd; completions that run inline inside Submit on this thread just
// mark the round's connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/store.h"
#include "server/server_config.h"
#include "server/shared_round.h"
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

  // --- The shared round (shared_round.h); loop thread unless said.
  // The batch the connections of this loop add their ops to; sized on the
  // first op from the last round (ReserveRound).
  Batch& pending() { return pending_; }
  void ReserveRound();
  // `conn`'s ops [begin, pending().size()) are its round; it waits for the
  // round's results (Connection::ProcessRound) or its early answers.
  void JoinRound(Connection* conn, uint32_t begin);
  // Submits the pending round if any connection joined it.
  void SubmitPending();
  // The store completed `round` (any thread; its results are in it).
  void PostCompletion(SharedRound* round);
  // A member of `round` has written its replies (or is dead).
  void Leave(SharedRound* round);
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
  // Hands `round`'s results to its members that wait for them.
  void Deliver(SharedRound* round);
  // Early answers: members whose ops are all answered finish now.
  void FinishEarly(SharedRound* round, const Store::EarlyAnswers& answers);

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
  std::vector<Connection*> again_running_;  // the pass's turn of again_ (Run)
  std::vector<Connection*> retired_;
  Batch pending_;
  SharedRound* pending_round_ = nullptr;  // the members of pending_, once one joined
  std::vector<SharedRound*> free_rounds_;  // recycled
  size_t hint_ops_ = 0, hint_key_bytes_ = 0, hint_value_bytes_ = 0;  // recent rounds' sizes (SubmitPending)
  std::mutex mu_;
  std::vector<SharedRound*> completed_;  // guarded by mu_
  std::vector<SharedRound*> draining_;   // the loop's: completions being delivered
  // The loop is in (or about to enter) a blocking epoll_wait: a completion
  // must wake it through the eventfd (PostCompletion).
  std::atomic<bool> waiting_{false};
  std::vector<std::pair<int, bool>> adopted_;  // guarded by mu_: accepted sockets
  std::atomic<bool> stop_requested_{false};
  bool stopping_ = false;
  uint64_t stop_deadline_ns_ = 0;
  uint64_t last_timeout_check_ms_ = 0;
};

}  // namespace kvcg::server
