// The server object: store, listeners, I/O threads, live config; see server.h.
#include "server/server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include <spdlog/spdlog.h>

#include "kvcg/durable.h"
#include "server/io_thread.h"
#include "server/resp_parser.h"

namespace kvcg::server {

Server::Server(ServerConfig config) : config_(std::move(config)) {}

Server::~Server() { Stop(); }

ServerConfig Server::ConfigSnapshot() const {
  std::lock_guard lock(config_mu_);
  return config_;
}

std::string Server::ConfigSet(const std::vector<std::pair<std::string, std::string>>& changes) {
  std::lock_guard set_lock(config_set_mu_);
  ServerConfig current = ConfigSnapshot();
  ServerConfig next = current;
  for (const auto& [name, value] : changes) {
    const OptionSpec* opt = FindOption(name);
    if (opt == nullptr) return "ERR Unknown option or number of arguments for CONFIG SET - '" + name + "'";
    if (!opt->runtime) return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config";
    std::vector<std::string> args{value};
    std::string e = opt->set(next, args);
    if (!e.empty()) return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + e;
  }
  if (std::string e = ValidateServerConfig(next); !e.empty()) return "ERR CONFIG SET failed - " + e;
  // maxmemory / maxmemory-policy reach the store first (lowering the limit
  // evicts at once), then persistence changes reach the Durable (turning
  // appendonly on writes a log base and may fail); the live config changes
  // only if they did, and the memory limit is put back if persistence failed.
  const bool memory_changed = next.store.max_memory_bytes != current.store.max_memory_bytes ||
                              next.store.eviction != current.store.eviction;
  if (memory_changed && store_ != nullptr) {
    Status s = store_->SetMemoryLimit(next.store.max_memory_bytes, next.store.eviction);
    if (!s.ok()) {
      const char* name = next.store.eviction != current.store.eviction ? "maxmemory-policy" : "maxmemory";
      return std::string("ERR CONFIG SET failed (possibly related to argument '") + name + "') - " + s.message();
    }
  }
  // hz reaches every sweeper (the engine's and the canonical store's).
  const bool hz_changed = next.store.active_expiry_hz != current.store.active_expiry_hz;
  if (hz_changed && store_ != nullptr) {
    if (Status s = store_->SetActiveExpiryHz(next.store.active_expiry_hz); !s.ok()) {
      if (memory_changed) store_->SetMemoryLimit(current.store.max_memory_bytes, current.store.eviction);
      return "ERR CONFIG SET failed (possibly related to argument 'hz') - " + s.message();
    }
  }
  if (std::string e = persistence_.Apply(current, next); !e.empty()) {
    if (memory_changed && store_ != nullptr) {
      store_->SetMemoryLimit(current.store.max_memory_bytes, current.store.eviction);
    }
    if (hz_changed && store_ != nullptr) store_->SetActiveExpiryHz(current.store.active_expiry_hz);
    return e;
  }
  std::lock_guard lock(config_mu_);
  config_ = std::move(next);
  if (config_.loglevel == "debug") spdlog::set_level(spdlog::level::debug);
  else if (config_.loglevel == "warning") spdlog::set_level(spdlog::level::warn);
  else if (config_.loglevel == "nothing") spdlog::set_level(spdlog::level::off);
  else spdlog::set_level(spdlog::level::info);
  config_version_.fetch_add(1, std::memory_order_acq_rel);
  return "";
}

Status Server::Listen() {
  ServerConfig c = ConfigSnapshot();
  {
    std::vector<std::string> addrs;
    SplitInlineArgs(c.bind, &addrs);
    for (const std::string& addr : addrs) {
      addrinfo hints{}, *res = nullptr;
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
      std::string host = addr == "*" ? "0.0.0.0" : addr;
      int port = bound_port_ ? bound_port_ : c.port;  // port 0: every address gets the first one's port
      int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
      if (rc != 0) return Status::Unavailable("cannot resolve bind address '" + addr + "': " + gai_strerror(rc));
      int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (res->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
      if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, c.tcp_backlog) != 0) {
        std::string why = std::strerror(errno);
        freeaddrinfo(res);
        if (fd >= 0) ::close(fd);
        return Status::Unavailable("cannot listen on " + addr + ":" + std::to_string(c.port) + ": " + why);
      }
      freeaddrinfo(res);
      sockaddr_storage sa{};
      socklen_t len = sizeof(sa);
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
      int actual = sa.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&sa)->sin_port)
                                           : ntohs(reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port);
      bound_port_ = actual;
      listen_fds_.push_back(fd);
      listening_.push_back((host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                           std::to_string(actual));
    }
  }
  if (!c.unixsocket.empty()) {
    sockaddr_un un{};
    if (c.unixsocket.size() >= sizeof(un.sun_path)) return Status::InvalidArgument("unixsocket path too long");
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, c.unixsocket.c_str(), c.unixsocket.size() + 1);
    ::unlink(c.unixsocket.c_str());
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&un), sizeof(un)) != 0 || listen(fd, c.tcp_backlog) != 0) {
      std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return Status::Unavailable("cannot listen on unix socket " + c.unixsocket + ": " + why);
    }
    unix_path_ = c.unixsocket;
    listen_fds_.push_back(-fd - 1);  // negative: a Unix socket (decoded in Start)
    listening_.push_back(c.unixsocket);
  }
  return Status::Ok();
}

Status Server::Start() {
  start_ms_ = WallMs();
  ServerConfig c = ConfigSnapshot();
  if (std::string e = ValidateServerConfig(c); !e.empty()) return Status::InvalidArgument(e);
  Config store_config = c.store;
  store_config.max_value_bytes = c.proto_max_bulk_len;
  {
    // Redis chdirs into `dir`; we pass it on made absolute (CONFIG GET dir
    // shows the absolute path, as in Redis).
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::absolute(c.store.durability.dir, ec);
    if (ec) return Status::InvalidArgument("dir '" + c.store.durability.dir + "': " + ec.message());
    store_config.durability.dir = dir.lexically_normal().string();
    if (store_config.durability.dir.size() > 1 && store_config.durability.dir.back() == '/') {
      store_config.durability.dir.pop_back();
    }
    std::lock_guard lock(config_mu_);
    config_.store.durability.dir = store_config.durability.dir;
  }
  Status s = Store::Open(store_config, &store_);
  if (!s.ok()) return s;
  store_info_ = store_->Info();
  clock_ = store_config.clock;
  persistence_.Start(AsDurable(store_.get()), c);
  s = Listen();
  if (!s.ok()) return s;
  size_t threads = c.io_threads > 0 ? static_cast<size_t>(c.io_threads) : std::thread::hardware_concurrency();
  if (threads == 0) threads = 1;
  for (size_t i = 0; i < threads; ++i) loops_.push_back(std::make_unique<IoThread>(this, static_cast<int>(i)));
  for (auto& loop : loops_) {
    for (int fd : listen_fds_) loop->AddListener(fd < 0 ? -fd - 1 : fd, fd < 0);
  }
  for (auto& loop : loops_) loop->Start();
  serving_ = true;
  return Status::Ok();
}

void Server::RequestShutdown(ShutdownSave save) {
  std::lock_guard lock(shutdown_mu_);
  if (!shutdown_requested_) shutdown_save_ = save;
  shutdown_requested_ = true;
  shutdown_cv_.notify_all();
}

void Server::WaitForShutdown() {
  std::unique_lock lock(shutdown_mu_);
  shutdown_cv_.wait(lock, [this] { return shutdown_requested_; });
}

void Server::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& loop : loops_) loop->Stop();
  for (auto& loop : loops_) loop->Join();
  loops_.clear();
  for (int fd : listen_fds_) ::close(fd < 0 ? -fd - 1 : fd);
  listen_fds_.clear();
  if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
  persistence_.Stop();
  if (serving_) {
    // Every client is gone: what was acknowledged is in the store.
    ShutdownSave save;
    {
      std::lock_guard lock(shutdown_mu_);
      save = shutdown_save_;
    }
    shutdown_status_ = persistence_.FinishAtShutdown(save);
  }
  store_.reset();  // waits for every submitted batch
}

void Server::SumStats(ThreadStats* out) const {
  for (const auto& loop : loops_) loop->stats().SumInto(out);
}

void Server::ResetStats() {
  for (const auto& loop : loops_) loop->stats().Reset();
  // The store counts expired keys since Open; INFO shows them since this.
  expired_keys_base_.store(Keyspace().expired_keys, std::memory_order_relaxed);
}

KeyspaceStats Server::Keyspace() const {
  // The persistence layer wraps the store without forwarding Keyspace()
  // (its default reports keys only): ask the store it wraps.
  Store* s = store_.get();
  if (Durable* d = AsDurable(s)) s = d->inner();
  return s->Keyspace();
}

uint64_t Server::ExpiredKeys() const {
  const uint64_t total = Keyspace().expired_keys;
  const uint64_t base = expired_keys_base_.load(std::memory_order_relaxed);
  return total > base ? total - base : 0;
}

}  // namespace kvcg::server
