// ClientRegistry: what CLIENT LIST / CLIENT INFO / INFO clients see of every
// connection, across all I/O threads.
//
// A connection is owned by one I/O thread; only the fields here are shared.
// Strings change rarely (CLIENT SETNAME, HELLO) and are guarded by the
// registry mutex; counters are relaxed atomics written by the owner thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace kvcg::server {

struct ClientInfo {
  uint64_t id = 0;
  int fd = -1;
  std::string addr;   // "ip:port" or "path:0" for Unix sockets
  std::string laddr;  // local address
  uint64_t created_ms = 0;
  // Guarded by ClientRegistry::mu().
  std::string name, lib_name, lib_ver;
  std::atomic<const char*> last_command{"NULL"};  // a command table name
  std::atomic<uint64_t> last_interaction_ms{0};
  std::atomic<int> resp{2};
  std::atomic<uint64_t> query_buffer{0};
  std::atomic<uint64_t> output_buffer{0};
};

class ClientRegistry {
 public:
  void Add(ClientInfo* info);
  void Remove(ClientInfo* info);
  size_t size() const;
  std::mutex& mu() { return mu_; }
  // Redis CLIENT LIST line (without trailing newline) for one client; call with mu() held.
  static std::string Describe(const ClientInfo& info, uint64_t now_ms);
  // All clients, one line each, newline-terminated.
  std::string List(uint64_t now_ms);

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, ClientInfo*> clients_;
};

uint64_t WallMs();

}  // namespace kvcg::server
