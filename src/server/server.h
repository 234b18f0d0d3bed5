// Server: kvcg-server as a library — the store, the listening sockets, the
// I/O threads, live configuration, client registry and statistics.
//
//   ServerConfig config;               // flags / file
//   Server server(config);
//   Status s = server.Start();         // opens the store, binds, starts threads
//   server.WaitForShutdown();          // until SIGTERM (RequestShutdown) or SHUTDOWN
//   server.Stop();                     // drain, save/fsync as asked, close, join
//
// The server talks to the store only through kvcg::Store (Submit with a
// completion), so the engine and both backends plug in unchanged. With
// persistence (store.durability.dir, "." by default) Store::Open returns a
// kvcg::Durable, driven through persistence() (persistence_control.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kvcg/status.h"
#include "kvcg/store.h"
#include "server/client_registry.h"
#include "server/collections.h"
#include "server/persistence_control.h"
#include "server/server_config.h"
#include "server/stats.h"

namespace kvcg::server {

class IoThread;

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  // Opens the store (loading what the durability dir holds) and the
  // listeners and starts the I/O threads. Errors: the store's Open status
  // (e.g. kInvalidArgument for a mode the build does not support,
  // kUnavailable for --backend gpu without a GPU, kIoError naming the file
  // and offset of a damaged snapshot or log), or kUnavailable with the
  // socket error when an address cannot be bound.
  Status Start();
  // Blocks until RequestShutdown is called.
  void WaitForShutdown();
  // Thread-safe; SHUTDOWN and the signal handler thread call it. The first
  // request's `save` decides what Stop saves.
  void RequestShutdown(ShutdownSave save = ShutdownSave::kDefault);
  // Drains (at most shutdown-timeout seconds), then saves and fsyncs the log
  // as the shutdown request asked, closes and joins. Idempotent.
  void Stop();
  // After Stop: ok, or the error of the final save / log fsync (logged).
  const Status& shutdown_status() const { return shutdown_status_; }

  Store* store() const { return store_.get(); }
  PersistenceControl& persistence() { return persistence_; }
  // Lists and sets (collections.h): host memory, beside the store's strings.
  CollectionKeyspace& collections() { return collections_; }
  const StoreInfo& store_info() const { return store_info_; }
  // The store's clock (Config::clock), which every expire-at is read against.
  uint64_t NowMs() const { return clock_(); }
  // Whether the store keeps expire-ats (every layout but fixed8).
  bool has_expiry() const { return store_info_.layout != Layout::kFixed8; }
  // The addresses actually bound ("127.0.0.1:6379", "/tmp/kvcg.sock").
  const std::vector<std::string>& listening() const { return listening_; }
  int bound_port() const { return bound_port_; }

  // Live configuration: a snapshot copy, and CONFIG SET (returns "" or an error).
  ServerConfig ConfigSnapshot() const;
  std::string ConfigSet(const std::vector<std::pair<std::string, std::string>>& changes);
  uint64_t config_version() const { return config_version_.load(std::memory_order_acquire); }

  ClientRegistry& clients() { return clients_; }
  uint64_t NextClientId() { return next_client_id_.fetch_add(1, std::memory_order_relaxed); }
  std::atomic<uint64_t>& connected() { return connected_; }

  // Statistics summed over the I/O threads (into *out, which should be fresh).
  void SumStats(ThreadStats* out) const;
  void ResetStats();
  // The store's keyspace counters (INFO keyspace).
  KeyspaceStats Keyspace() const;
  // Keys reclaimed because they expired, since start or CONFIG RESETSTAT
  // (INFO's expired_keys).
  uint64_t ExpiredKeys() const;
  uint64_t start_ms() const { return start_ms_; }
  size_t io_threads() const { return loops_.size(); }
  IoThread* loop(size_t i) const { return loops_[i].get(); }

 private:
  Status Listen();

  std::mutex config_set_mu_;  // serializes CONFIG SET (it may write a log base)
  mutable std::mutex config_mu_;
  ServerConfig config_;
  std::atomic<uint64_t> config_version_{0};
  std::unique_ptr<Store> store_;
  StoreInfo store_info_;
  ClockFunction clock_ = &SystemClockMs;
  PersistenceControl persistence_;
  CollectionKeyspace collections_;
  bool serving_ = false;  // Start succeeded: Stop saves as asked
  std::vector<std::unique_ptr<IoThread>> loops_;
  std::vector<int> listen_fds_;
  std::vector<std::string> listening_;
  std::string unix_path_;
  int bound_port_ = 0;
  ClientRegistry clients_;
  std::atomic<uint64_t> next_client_id_{1};
  std::atomic<uint64_t> connected_{0};
  std::atomic<uint64_t> expired_keys_base_{0};
  uint64_t start_ms_ = 0;

  std::mutex shutdown_mu_;
  std::condition_variable shutdown_cv_;
  bool shutdown_requested_ = false;
  ShutdownSave shutdown_save_ = ShutdownSave::kDefault;
  bool stopped_ = false;
  Status shutdown_status_;
};

}  // namespace kvcg::server
