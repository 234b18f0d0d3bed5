// kvcg-loadgen: a closed-loop RESP load generator (any Redis-protocol server).
//
// Each of --threads threads drives its share of --connections connections
// with epoll. A connection sends --pipeline commands (GET or SET by
// --get-ratio, keys uniform or zipfian over --keys), waits for all their
// replies, records the round trip as the latency of each of them, and sends
// the next pipeline at once (closed loop). --preload SETs every key first;
// --preload-only does only that, so a benchmark can fill a server once and
// then measure several pipeline depths on it. Results (throughput, latency
// percentiles, preload time) are printed as one JSON object.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "resp_reply.h"
#include "server/stats.h"
#include "workload.h"

using kvcg::server::LatencyHistogram;
using kvcg::server::NowNs;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  int connections = 50;
  int threads = 4;
  int pipeline = 16;
  double duration_s = 10;
  double warmup_s = 1;
  uint64_t keys = 100000;
  std::string dist = "uniform";
  double theta = 0.99;
  double get_ratio = 0.9;
  size_t value_size = 8;
  bool preload = false;
  bool preload_only = false;
  std::string label;
};

int Connect(const Options& o) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &res) != 0) return -1;
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    freeaddrinfo(res);
    if (fd >= 0) close(fd);
    return -1;
  }
  freeaddrinfo(res);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

std::string Key(uint64_t k) {
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "key:%012llu", static_cast<unsigned long long>(k));
  return std::string(buf, static_cast<size_t>(n));
}

void AppendCommand(std::string* out, bool get, const std::string& key, const std::string& value) {
  if (get) {
    *out += "*2\r\n$3\r\nGET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n";
  } else {
    *out += "*3\r\n$3\r\nSET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n$" +
            std::to_string(value.size()) + "\r\n" + value + "\r\n";
  }
}

struct Conn {
  int fd;
  std::string out, in;
  size_t sent = 0;
  int outstanding = 0;
  uint64_t start_ns = 0;
};

struct ThreadResult {
  uint64_t ops = 0, errors = 0;
  LatencyHistogram latency;
};

// Blocking: send every SET of the key range [begin, end) pipelined.
bool Preload(const Options& o, uint64_t begin, uint64_t end) {
  int fd = Connect(o);
  if (fd < 0) return false;
  std::string value(o.value_size, 'v');
  const uint64_t chunk = 1000;
  std::string buf, in;
  for (uint64_t k = begin; k < end; k += chunk) {
    buf.clear();
    uint64_t n = std::min(chunk, end - k);
    for (uint64_t i = 0; i < n; ++i) AppendCommand(&buf, false, Key(k + i), value);
    if (send(fd, buf.data(), buf.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(buf.size())) return false;
    uint64_t got = 0;
    in.clear();
    char tmp[65536];
    while (got < n) {
      ssize_t r = recv(fd, tmp, sizeof(tmp), 0);
      if (r <= 0) return false;
      in.append(tmp, static_cast<size_t>(r));
      size_t pos = 0;
      bool err;
      long len;
      while ((len = kvcg::loadgen::ReplyLength(in.data() + pos, in.size() - pos, &err)) > 0) {
        pos += static_cast<size_t>(len);
        ++got;
      }
      in.erase(0, pos);
    }
  }
  close(fd);
  return true;
}

void Worker(const Options& o, int index, int nconns, std::atomic<int>* phase, ThreadResult* result) {
  std::mt19937_64 rng(0x9e3779b97f4a7c15ull * static_cast<uint64_t>(index + 1));
  kvcg::loadgen::KeyChooser chooser(o.keys, o.dist == "zipf" ? o.theta : 0,
                                    0x9e3779b97f4a7c15ull * static_cast<uint64_t>(index + 7));
  std::string value(o.value_size, 'v');
  int ep = epoll_create1(0);
  std::vector<Conn> conns(static_cast<size_t>(nconns));
  auto refill = [&](Conn& c) {
    c.out.clear();
    c.sent = 0;
    std::uniform_real_distribution<double> u(0, 1);
    for (int i = 0; i < o.pipeline; ++i) AppendCommand(&c.out, u(rng) < o.get_ratio, Key(chooser.Next()), value);
    c.outstanding = o.pipeline;
    c.start_ns = NowNs();
  };
  for (size_t i = 0; i < conns.size(); ++i) {
    conns[i].fd = Connect(o);
    if (conns[i].fd < 0) {
      std::fprintf(stderr, "kvcg-loadgen: cannot connect to %s:%d\n", o.host.c_str(), o.port);
      std::exit(1);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    refill(conns[i]);
  }
  auto flush = [&](Conn& c) {
    while (c.sent < c.out.size()) {
      ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n <= 0) std::exit(1);  // blocking socket: a failure is fatal
      c.sent += static_cast<size_t>(n);
    }
  };
  for (auto& c : conns) flush(c);
  epoll_event events[256];
  char tmp[65536];
  while (phase->load(std::memory_order_relaxed) < 2) {
    int n = epoll_wait(ep, events, 256, 100);
    bool measuring = phase->load(std::memory_order_relaxed) == 1;
    for (int e = 0; e < n; ++e) {
      Conn& c = conns[events[e].data.u64];
      ssize_t r = recv(c.fd, tmp, sizeof(tmp), 0);
      if (r <= 0) {
        std::fprintf(stderr, "kvcg-loadgen: server closed a connection\n");
        std::exit(1);
      }
      c.in.append(tmp, static_cast<size_t>(r));
      size_t pos = 0;
      long len;
      bool err;
      while (c.outstanding > 0 && (len = kvcg::loadgen::ReplyLength(c.in.data() + pos, c.in.size() - pos, &err)) > 0) {
        pos += static_cast<size_t>(len);
        --c.outstanding;
        if (measuring && err) ++result->errors;
      }
      c.in.erase(0, pos);
      if (c.outstanding == 0) {
        uint64_t lat = NowNs() - c.start_ns;
        if (measuring) {
          result->ops += static_cast<uint64_t>(o.pipeline);
          for (int i = 0; i < o.pipeline; ++i) result->latency.Record(lat);
        }
        refill(c);
        flush(c);
      }
    }
  }
  for (auto& c : conns) close(c.fd);
  close(ep);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"kvcg-loadgen: closed-loop RESP load generator"};
  app.add_option("--host", o.host);
  app.add_option("--port,-p", o.port);
  app.add_option("--connections,-c", o.connections, "connections in total");
  app.add_option("--threads,-t", o.threads, "client threads");
  app.add_option("--pipeline,-P", o.pipeline, "commands per pipeline (per round trip)");
  app.add_option("--duration,-d", o.duration_s, "measured seconds");
  app.add_option("--warmup", o.warmup_s, "unmeasured seconds first");
  app.add_option("--keys,-k", o.keys, "key space size");
  app.add_option("--dist", o.dist, "uniform | zipf")->check(CLI::IsMember({"uniform", "zipf"}));
  app.add_option("--theta", o.theta, "zipf skew");
  app.add_option("--get-ratio", o.get_ratio, "fraction of GETs (rest SETs)");
  app.add_option("--value-size", o.value_size, "SET value bytes");
  app.add_flag("--preload", o.preload, "SET every key before measuring");
  app.add_flag("--preload-only", o.preload_only, "SET every key, print the time it took, exit");
  app.add_option("--label", o.label, "free text copied into the JSON");
  CLI11_PARSE(app, argc, argv);
  if (o.threads > o.connections) o.threads = o.connections;
  if (o.keys == 0 || o.pipeline <= 0 || o.connections <= 0) {
    std::fprintf(stderr, "kvcg-loadgen: keys, pipeline and connections must be > 0\n");
    return 2;
  }

  double preload_s = 0;
  if (o.preload || o.preload_only) {
    uint64_t p0 = NowNs();
    std::vector<std::thread> ts;
    std::atomic<bool> ok{true};
    uint64_t per = (o.keys + static_cast<uint64_t>(o.threads) - 1) / static_cast<uint64_t>(o.threads);
    for (int t = 0; t < o.threads; ++t) {
      uint64_t b = per * static_cast<uint64_t>(t), e = std::min(o.keys, b + per);
      ts.emplace_back([&, b, e] {
        if (b < e && !Preload(o, b, e)) ok = false;
      });
    }
    for (auto& t : ts) t.join();
    if (!ok) {
      std::fprintf(stderr, "kvcg-loadgen: preload failed\n");
      return 1;
    }
    preload_s = static_cast<double>(NowNs() - p0) / 1e9;
  }
  if (o.preload_only) {
    std::printf("{\"tool\": \"kvcg-loadgen\", \"label\": \"%s\", \"keys\": %llu, \"value_size\": %zu, "
                "\"connections\": %d, \"preload_s\": %.3f, \"keys_per_sec\": %.1f}\n",
                o.label.c_str(), static_cast<unsigned long long>(o.keys), o.value_size, o.threads, preload_s,
                static_cast<double>(o.keys) / preload_s);
    return 0;
  }

  std::atomic<int> phase{0};
  std::vector<ThreadResult> results(static_cast<size_t>(o.threads));
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    int n = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    threads.emplace_back(Worker, std::cref(o), t, n, &phase, &results[static_cast<size_t>(t)]);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup_s));
  uint64_t t0 = NowNs();
  phase = 1;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration_s));
  phase = 2;
  uint64_t t1 = NowNs();
  for (auto& t : threads) t.join();

  LatencyHistogram all;
  uint64_t ops = 0, errors = 0;
  for (auto& r : results) {
    all.Merge(r.latency);
    ops += r.ops;
    errors += r.errors;
  }
  double secs = static_cast<double>(t1 - t0) / 1e9;
  auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  double mean = all.count() ? us(all.sum_ns()) / static_cast<double>(all.count()) : 0;
  std::printf(
      "{\"tool\": \"kvcg-loadgen\", \"label\": \"%s\", \"host\": \"%s\", \"port\": %d, \"connections\": %d, "
      "\"threads\": %d, \"pipeline\": %d, \"duration_s\": %.3f, \"keys\": %llu, \"dist\": \"%s\", \"theta\": %.3f, "
      "\"get_ratio\": %.3f, \"value_size\": %zu, \"ops\": %llu, \"errors\": %llu, \"ops_per_sec\": %.1f, "
      "\"latency_us\": {\"mean\": %.2f, \"p50\": %.2f, \"p90\": %.2f, \"p99\": %.2f, \"p999\": %.2f, \"max\": %.2f}}\n",
      o.label.c_str(), o.host.c_str(), o.port, o.connections, o.threads, o.pipeline, secs,
      static_cast<unsigned long long>(o.keys), o.dist.c_str(), o.dist == "zipf" ? o.theta : 0.0, o.get_ratio,
      o.value_size, static_cast<unsigned long long>(ops), static_cast<unsigned long long>(errors),
      static_cast<double>(ops) / secs, mean, us(all.Quantile(0.5)), us(all.Quantile(0.9)), us(all.Quantile(0.99)),
      us(all.Quantile(0.999)), us(all.Quantile(1.0)));
  return errors ? 3 : 0;
}
