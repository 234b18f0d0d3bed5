// Registry of connected clients; see client_registry.h.
#include "server/client_registry.h"

#include <chrono>

namespace kvcg::server {

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

void ClientRegistry::Add(ClientInfo* info) {
  std::lock_guard lock(mu_);
  clients_[info->id] = info;
}

void ClientRegistry::Remove(ClientInfo* info) {
  std::lock_guard lock(mu_);
  clients_.erase(info->id);
}

size_t ClientRegistry::size() const {
  std::lock_guard lock(mu_);
  return clients_.size();
}

std::string ClientRegistry::Describe(const ClientInfo& c, uint64_t now_ms) {
  uint64_t last = c.last_interaction_ms.load(std::memory_order_relaxed);
  uint64_t age = now_ms > c.created_ms ? (now_ms - c.created_ms) / 1000 : 0;
  uint64_t idle = now_ms > last ? (now_ms - last) / 1000 : 0;
  uint64_t qbuf = c.query_buffer.load(std::memory_order_relaxed);
  uint64_t omem = c.output_buffer.load(std::memory_order_relaxed);
  return "id=" + std::to_string(c.id) + " addr=" + c.addr + " laddr=" + c.laddr + " fd=" + std::to_string(c.fd) +
         " name=" + c.name + " age=" + std::to_string(age) + " idle=" + std::to_string(idle) +
         " flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=" + std::to_string(qbuf) +
         " qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=" + std::to_string(omem) +
         " tot-mem=" + std::to_string(qbuf + omem) + " events=r cmd=" + c.last_command.load(std::memory_order_relaxed) +
         " user=default redir=-1 resp=" + std::to_string(c.resp.load(std::memory_order_relaxed)) +
         " lib-name=" + c.lib_name + " lib-ver=" + c.lib_ver;
}

std::string ClientRegistry::List(uint64_t now_ms) {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [id, info] : clients_) {
    out += Describe(*info, now_ms);
    out += '\n';
  }
  return out;
}

}  // namespace kvcg::server
