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
//
// The client's own CPU per command bounds every benchmark run with it
// (kvcg-resp-sink measures that bound), so the per-command path allocates
// nothing: commands are written by hand (CommandWriter) into buffers sized
// once per connection, and replies are counted in place in a receive buffer
// that is only compacted when its tail runs short (InBuffer).
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
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

// Commands are formatted by hand, not with snprintf/std::to_string/string
// concatenation: that formatting was a quarter of the client's CPU, and the
// client's CPU is what limits the throughput this tool can measure. Keys are
// "key:%012llu" (the names redis-benchmark runs use too, bench/server/clients.py).
constexpr char kKeyPrefix[] = "key:";
constexpr size_t kKeyPrefixSize = sizeof(kKeyPrefix) - 1;
constexpr int kKeyDigits = 12;               // the zero-padded width
constexpr uint64_t kKeyFastLimit = 1000000000000ull;  // 10^kKeyDigits
constexpr size_t kMaxDecimal = 20;           // digits of UINT64_MAX

struct DigitPairs {
  char d[200];
  constexpr DigitPairs() : d() {
    for (int i = 0; i < 100; ++i) {
      d[2 * i] = static_cast<char>('0' + i / 10);
      d[2 * i + 1] = static_cast<char>('0' + i % 10);
    }
  }
};
constexpr DigitPairs kDigitPairs;

// Writes exactly kKeyDigits digits of v < kKeyFastLimit, two at a time.
inline char* WriteKeyDigits(char* p, uint64_t v) {
  static_assert(kKeyDigits % 2 == 0);
  for (int i = kKeyDigits - 2; i >= 0; i -= 2) {
    std::memcpy(p + i, kDigitPairs.d + 2 * (v % 100), 2);
    v /= 100;
  }
  return p + kKeyDigits;
}

// Writes GET and SET commands on key numbers into caller-owned buffers. The
// constant parts are built once: the command head up to and including the
// key's bulk length and "key:" for keys of kKeyDigits digits (the bulk length
// is computed, not assumed), and the SET value's whole bulk string. Keys
// with more digits take the general path (their bulk length is written out).
class CommandWriter {
 public:
  explicit CommandWriter(size_t value_size)
      : get_name_("*2\r\n$3\r\nGET\r\n$"),
        set_name_("*3\r\n$3\r\nSET\r\n$"),
        set_tail_("\r\n$" + std::to_string(value_size) + "\r\n" + std::string(value_size, 'v') + "\r\n") {
    const std::string key_len = std::to_string(kKeyPrefixSize + kKeyDigits) + "\r\n" + kKeyPrefix;
    get_head_ = get_name_ + key_len;
    set_head_ = set_name_ + key_len;
  }

  // The most bytes one command takes (any key number).
  size_t max_command_size() const {
    return set_name_.size() + kMaxDecimal + 2 + kKeyPrefixSize + kMaxDecimal + set_tail_.size();
  }

  char* Get(char* p, uint64_t key) const { return Command(p, get_name_, get_head_, key, kGetTail, 2); }
  char* Set(char* p, uint64_t key) const {
    return Command(p, set_name_, set_head_, key, set_tail_.data(), set_tail_.size());
  }

 private:
  static constexpr char kGetTail[] = "\r\n";

  static char* Command(char* p, const std::string& name, const std::string& head, uint64_t key, const char* tail,
                       size_t tail_size) {
    if (key < kKeyFastLimit) {
      std::memcpy(p, head.data(), head.size());
      p = WriteKeyDigits(p + head.size(), key);
    } else {  // more than kKeyDigits digits: the key's bulk length differs
      char digits[kMaxDecimal];
      const size_t n = static_cast<size_t>(std::to_chars(digits, digits + kMaxDecimal, key).ptr - digits);
      std::memcpy(p, name.data(), name.size());
      p = std::to_chars(p + name.size(), p + name.size() + kMaxDecimal, kKeyPrefixSize + n).ptr;
      std::memcpy(p, "\r\n", 2);
      std::memcpy(p + 2, kKeyPrefix, kKeyPrefixSize);
      p += 2 + kKeyPrefixSize;
      std::memcpy(p, digits, n);
      p += n;
    }
    std::memcpy(p, tail, tail_size);
    return p + tail_size;
  }

  std::string get_name_, set_name_;  // "*N\r\n$3\r\nCMD\r\n$"
  std::string get_head_, set_head_;  // ... + "16\r\nkey:"
  std::string set_tail_;             // "\r\n" ending the key, then the value's bulk string
};

// Received bytes [begin, end) of data not yet counted as replies. Replies are
// parsed where they lie; the buffer is reset when fully consumed and only
// compacted (or grown) when the free tail is shorter than kMinRecv.
struct InBuffer {
  static constexpr size_t kMinRecv = 4096;
  std::vector<char> data = std::vector<char>(size_t{1} << 16);
  size_t begin = 0, end = 0;

  const char* unread() const { return data.data() + begin; }
  size_t unread_size() const { return end - begin; }
  void Clear() { begin = end = 0; }

  // One recv() into the free tail; returns its result.
  ssize_t Recv(int fd) {
    if (begin == end) begin = end = 0;
    if (data.size() - end < kMinRecv) {
      std::memmove(data.data(), data.data() + begin, end - begin);
      end -= begin;
      begin = 0;
      if (data.size() - end < kMinRecv) data.resize(data.size() * 2);
    }
    ssize_t r = recv(fd, data.data() + end, data.size() - end, 0);
    if (r > 0) end += static_cast<size_t>(r);
    return r;
  }
};

// The GET/SET draw without a floating-point distribution per command: the
// original draw was std::uniform_real_distribution<double>(0, 1)(rng) <
// get_ratio, which is monotone in the one 64-bit rng() output it consumes, so
// it is a GET exactly when that output is below a threshold found once here
// (by evaluating the same distribution on fixed outputs). Same rng, same
// sequence of GETs and SETs as before.
class GetDraw {
 public:
  explicit GetDraw(double get_ratio) {
    auto is_set = [&](uint64_t r) {
      Fixed g{r};
      return !(std::uniform_real_distribution<double>(0, 1)(g) < get_ratio);
    };
    if (!is_set(std::numeric_limits<uint64_t>::max())) {
      all_ = true;
      return;
    }
    uint64_t lo = 0, hi = std::numeric_limits<uint64_t>::max();  // is_set(hi); first such in [lo, hi]
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (is_set(mid)) hi = mid; else lo = mid + 1;
    }
    threshold_ = lo;
  }
  bool IsGet(uint64_t r) const { return all_ || r < threshold_; }

 private:
  struct Fixed {  // a "generator" that returns one fixed output
    using result_type = uint64_t;
    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return std::numeric_limits<uint64_t>::max(); }
    result_type operator()() { return r; }
    uint64_t r;
  };
  uint64_t threshold_ = 0;
  bool all_ = false;
};

struct Conn {
  int fd;
  std::unique_ptr<char[]> out;  // one pipeline of commands, sized once
  size_t out_size = 0, sent = 0;
  InBuffer in;
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
  const CommandWriter writer(o.value_size);
  const uint64_t chunk = 1000;
  std::unique_ptr<char[]> buf(new char[chunk * writer.max_command_size()]);
  InBuffer in;
  for (uint64_t k = begin; k < end; k += chunk) {
    uint64_t n = std::min(chunk, end - k);
    char* p = buf.get();
    for (uint64_t i = 0; i < n; ++i) p = writer.Set(p, k + i);
    ssize_t size = p - buf.get();
    if (send(fd, buf.get(), static_cast<size_t>(size), MSG_NOSIGNAL) != size) {
      close(fd);
      return false;
    }
    uint64_t got = 0;
    in.Clear();
    while (got < n) {
      if (in.Recv(fd) <= 0) {
        close(fd);
        return false;
      }
      bool err;
      long len;
      while ((len = kvcg::loadgen::ReplyLength(in.unread(), in.unread_size(), &err)) > 0) {
        in.begin += static_cast<size_t>(len);
        ++got;
      }
    }
  }
  close(fd);
  return true;
}

void Worker(const Options& o, int index, int nconns, std::atomic<int>* phase, ThreadResult* result) {
  std::mt19937_64 rng(0x9e3779b97f4a7c15ull * static_cast<uint64_t>(index + 1));
  kvcg::loadgen::KeyChooser chooser(o.keys, o.dist == "zipf" ? o.theta : 0,
                                    0x9e3779b97f4a7c15ull * static_cast<uint64_t>(index + 7));
  const CommandWriter writer(o.value_size);
  const GetDraw get_draw(o.get_ratio);
  const size_t out_capacity = static_cast<size_t>(o.pipeline) * writer.max_command_size();
  int ep = epoll_create1(0);
  std::vector<Conn> conns(static_cast<size_t>(nconns));
  auto refill = [&](Conn& c) {
    char* p = c.out.get();
    for (int i = 0; i < o.pipeline; ++i) {
      bool get = get_draw.IsGet(rng());
      p = get ? writer.Get(p, chooser.Next()) : writer.Set(p, chooser.Next());
    }
    c.out_size = static_cast<size_t>(p - c.out.get());
    c.sent = 0;
    c.outstanding = o.pipeline;
    c.start_ns = NowNs();
  };
  for (size_t i = 0; i < conns.size(); ++i) {
    conns[i].fd = Connect(o);
    if (conns[i].fd < 0) {
      std::fprintf(stderr, "kvcg-loadgen: cannot connect to %s:%d\n", o.host.c_str(), o.port);
      std::exit(1);
    }
    conns[i].out.reset(new char[out_capacity]);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    refill(conns[i]);
  }
  auto flush = [&](Conn& c) {
    while (c.sent < c.out_size) {
      ssize_t n = send(c.fd, c.out.get() + c.sent, c.out_size - c.sent, MSG_NOSIGNAL);
      if (n <= 0) std::exit(1);  // blocking socket: a failure is fatal
      c.sent += static_cast<size_t>(n);
    }
  };
  for (auto& c : conns) flush(c);
  epoll_event events[256];
  while (phase->load(std::memory_order_relaxed) < 2) {
    int n = epoll_wait(ep, events, 256, 100);
    bool measuring = phase->load(std::memory_order_relaxed) == 1;
    for (int e = 0; e < n; ++e) {
      Conn& c = conns[events[e].data.u64];
      if (c.in.Recv(c.fd) <= 0) {
        std::fprintf(stderr, "kvcg-loadgen: server closed a connection\n");
        std::exit(1);
      }
      long len;
      bool err;
      while (c.outstanding > 0 && (len = kvcg::loadgen::ReplyLength(c.in.unread(), c.in.unread_size(), &err)) > 0) {
        c.in.begin += static_cast<size_t>(len);
        --c.outstanding;
        if (measuring && err) ++result->errors;
      }
      if (c.outstanding == 0) {
        uint64_t lat = NowNs() - c.start_ns;
        if (measuring) {
          result->ops += static_cast<uint64_t>(o.pipeline);
          // One sample per command; kvcg::server::LatencyHistogram has no
          // weighted Record, and this stays per round, not per reply.
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
