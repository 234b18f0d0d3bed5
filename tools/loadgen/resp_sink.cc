// kvcg-resp-sink: a RESP server with no store, the load generator's ceiling.
//
// It frames each request like a server does and answers at once from
// constants: GET with a --value-size bulk string, anything else with +OK. So
// kvcg-loadgen against it measures what the client, the loopback TCP stack
// and one read + one write per pipeline cost on this host; no real server
// under the same client settings can be measured above that
// (bench/server/compare.py reports it as the bound). Connections are spread
// round-robin over --threads epoll threads.
//
//   kvcg-resp-sink --port 0 --threads 8 --value-size 32
//   -> "kvcg-resp-sink ready: listening=127.0.0.1:PORT", then serves until killed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "resp_reply.h"

namespace {

struct Conn {
  int fd;
  std::string in, out;
};

// A request is an array of bulk strings; only the command name's first
// three bytes matter here ("GET" in any case, with 3 bytes exactly).
bool IsGet(const char* request, size_t size) {
  const char* name = static_cast<const char*>(std::memchr(request, '\n', size));
  if (name == nullptr || static_cast<size_t>(name - request) + 10 > size) return false;
  return std::memcmp(name + 1, "$3\r\n", 4) == 0 && (name[5] | 0x20) == 'g' && (name[6] | 0x20) == 'e' &&
         (name[7] | 0x20) == 't';
}

void Serve(int ep, const std::string& get_reply) {
  epoll_event events[256];
  char tmp[65536];
  for (;;) {
    int n = epoll_wait(ep, events, 256, -1);
    for (int e = 0; e < n; ++e) {
      auto* c = static_cast<Conn*>(events[e].data.ptr);
      ssize_t r = recv(c->fd, tmp, sizeof(tmp), 0);
      if (r <= 0) {
        close(c->fd);  // closing removes it from the epoll set
        delete c;
        continue;
      }
      c->in.append(tmp, static_cast<size_t>(r));
      size_t pos = 0;
      long len;
      bool err;
      while ((len = kvcg::loadgen::ReplyLength(c->in.data() + pos, c->in.size() - pos, &err)) > 0) {
        c->out += IsGet(c->in.data() + pos, static_cast<size_t>(len)) ? get_reply : "+OK\r\n";
        pos += static_cast<size_t>(len);
      }
      c->in.erase(0, pos);
      // Blocking send: a closed-loop client reads everything it asked for.
      for (size_t sent = 0; sent < c->out.size();) {
        ssize_t w = send(c->fd, c->out.data() + sent, c->out.size() - sent, MSG_NOSIGNAL);
        if (w <= 0) break;
        sent += static_cast<size_t>(w);
      }
      c->out.clear();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0, threads = 8;
  size_t value_size = 32;
  CLI::App app{"kvcg-resp-sink: a RESP server that answers from constants (the client's ceiling)"};
  app.add_option("--port,-p", port, "0: any free port (printed)");
  app.add_option("--threads,-t", threads, "epoll threads")->check(CLI::Range(1, 1024));
  app.add_option("--value-size", value_size, "bytes of every GET reply's value");
  CLI11_PARSE(app, argc, argv);

  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t alen = sizeof(addr);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(lfd, 1024) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) {
    std::perror("kvcg-resp-sink: listen");
    return 1;
  }
  const std::string get_reply = "$" + std::to_string(value_size) + "\r\n" + std::string(value_size, 'v') + "\r\n";
  std::vector<int> eps;
  for (int t = 0; t < threads; ++t) {
    eps.push_back(epoll_create1(0));
    std::thread(Serve, eps.back(), std::cref(get_reply)).detach();
  }
  std::printf("kvcg-resp-sink ready: threads=%d value_size=%zu listening=127.0.0.1:%d\n", threads, value_size,
              ntohs(addr.sin_port));
  std::fflush(stdout);
  for (size_t next = 0;; ++next) {
    int fd = accept(lfd, nullptr, nullptr);
    if (fd < 0) continue;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = new Conn{fd, {}, {}};
    epoll_ctl(eps[next % eps.size()], EPOLL_CTL_ADD, fd, &ev);
  }
}
