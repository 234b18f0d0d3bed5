// A client connection; see connection.h for the life of a read.
#include "server/connection.h"

#include <sys/socket.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "server/io_thread.h"
#include "server/server.h"
#include "server/stats.h"

namespace kvcg::server {

namespace {
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerTurn = 16;        // fairness between connections of a loop
constexpr size_t kIdleBufferKeep = 1 << 20;
constexpr size_t kSmallBlockedSet = 16;
}  // namespace

std::string_view CommandContext::arg(size_t i) const { return conn.Arg(cmd, i); }

Connection::Connection(IoThread* loop, int fd, uint64_t id, std::string addr, std::string laddr)
    : loop_(loop), server_(loop->server()), fd_(fd) {
  info_.id = id;
  info_.fd = fd;
  info_.addr = std::move(addr);
  info_.laddr = std::move(laddr);
  info_.created_ms = WallMs();
  info_.last_interaction_ms.store(info_.created_ms, std::memory_order_relaxed);
  authenticated = loop->settings().requirepass.empty();
  server_->clients().Add(&info_);
}

Connection::~Connection() {
  if (!dead_) Close("destroyed");
}

void Connection::Close(const char* why) {
  if (dead_) return;
  dead_ = true;
  spdlog::debug("event=client_closed id={} addr={} reason=\"{}\"", info_.id, info_.addr, why);
  loop_->Unwatch(fd_);
  ::close(fd_);
  fd_ = -1;
  server_->clients().Remove(&info_);
  server_->connected().fetch_sub(1, std::memory_order_relaxed);
  loop_->Retire(this);
}

bool Connection::idle() const { return commands_.empty() && !in_flight() && out_sent_ == out_.size(); }

void Connection::BeginDrain() {
  draining_ = true;
  Drive();
}

bool Connection::CanRead() const {
  return !dead_ && !close_after_reply_ && !draining_ && !saw_eof_ && !in_flight() && commands_.empty() &&
         out_.size() - out_sent_ < loop_->settings().client_output_high_water;
}

void Connection::OnEvents(uint32_t events) {
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) readable_ = true;
  // The FIN may arrive with the last data in one edge: read until 0 then.
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) peer_closed_ = true;
  if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) writable_ = true;
  Drive();
}

void Connection::Drive() {
  if (dead_) {
    // A round completed after the socket closed: the object may now go.
    if (round_ready_) {
      round_ready_ = false;
      loop_->Leave(std::exchange(round_of_, nullptr));  // nobody will read its results
    }
    return;
  }
  Connection* prev = loop_->driving;
  loop_->driving = this;
  int reads = 0;
  while (!dead_) {
    if (round_ready_) {
      round_ready_ = false;
      ProcessRound();
      continue;
    }
    FlushOutput();
    if (dead_) break;
    if (!in_flight() && next_ < commands_.size()) {
      // Commands left behind a round that finished early (ProcessEarly does
      // not dispatch: it runs inside the store's Submit).
      const size_t before = next_;
      Dispatch();
      if (next_ != before || in_flight()) continue;
    }
    if (!commands_.empty() && head_ == commands_.size() && !in_flight()) FinishRead();
    bool answered = commands_.empty() && !in_flight() && out_sent_ == out_.size();
    if (answered && (close_after_reply_ || draining_)) {
      Close(close_after_reply_ ? "close after reply" : "shutdown");
      break;
    }
    if (readable_ && CanRead()) {
      if (++reads > kReadsPerTurn) {
        loop_->ScheduleAgain(this);
        break;
      }
      ReadOnce();
      continue;
    }
    break;
  }
  loop_->driving = prev;
}

void Connection::ReadOnce() {
  size_t want = kReadChunk;
  size_t hint = parser_.bytes_hint();
  size_t have = in_.size() - parsed_;
  if (hint > have) want = std::max(want, hint - have);
  char* tail = in_.WritableTail(want);
  size_t room = in_.tail_room();
  ssize_t n = ::read(fd_, tail, room);
  if (n > 0) {
    in_.Commit(static_cast<size_t>(n));
    // A short read drained the socket; the next byte brings a new edge.
    if (static_cast<size_t>(n) < room && !peer_closed_) readable_ = false;
    ThreadStats& st = loop_->stats();
    Add(st.net_input_bytes, static_cast<uint64_t>(n));
    Add(st.reads, 1);
    info_.last_interaction_ms.store(WallMs(), std::memory_order_relaxed);
    ParseInput();
    if (!dead_) Dispatch();
    return;
  }
  if (n == 0) {
    // The client will send nothing more; answer what it sent, then close
    // (it may have only shut down its sending side).
    saw_eof_ = true;
    close_after_reply_ = true;
    return;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    readable_ = false;
  } else if (errno != EINTR) {
    Close(std::strerror(errno));
  }
}

void Connection::ParseInput() {
  const ServerConfig& s = loop_->settings();
  uint64_t t0 = NowNs();
  read_start_ns_ = t0;
  ParserLimits limits;
  limits.max_bulk_len = s.proto_max_bulk_len;
  limits.max_multibulk_len = s.proto_max_multibulk_len;
  limits.max_inline_len = s.proto_max_inline_len;
  for (;;) {
    const char* base = in_.data() + parsed_;
    RespParser::Result r = parser_.Parse(base, in_.size() - parsed_, limits);
    if (r == RespParser::Result::kCommand) {
      Command& c = commands_.emplace_back();
      c.argv_begin = static_cast<uint32_t>(argv_.size());
      c.argc = static_cast<uint32_t>(parser_.argc());
      for (size_t i = 0; i < parser_.argc(); ++i) {
        if (parser_.is_inline()) {
          inline_args_.emplace_back(parser_.arg(i, base));
          argv_.push_back(inline_args_.back());
        } else {
          argv_.push_back(parser_.arg(i, base));
        }
      }
      parsed_ += parser_.consumed();
    } else if (r == RespParser::Result::kEmpty) {
      parsed_ += parser_.consumed();
    } else if (r == RespParser::Result::kNeedMore) {
      uint64_t partial = in_.size() - parsed_;
      info_.query_buffer.store(partial, std::memory_order_relaxed);
      if (partial > s.client_query_buffer_limit) {
        spdlog::warn("event=client_closed id={} addr={} reason=\"query buffer limit ({} bytes)\"", info_.id,
                     info_.addr, s.client_query_buffer_limit);
        Close("query buffer limit");
      }
      break;
    } else {
      // Answer the commands before it, then the error, then close (as Redis).
      Command& c = commands_.emplace_back();
      c.preset_error = true;
      c.reply = "-ERR " + parser_.error() + "\r\n";
      Add(loop_->stats().protocol_errors, 1);
      spdlog::debug("event=protocol_error id={} addr={} error=\"{}\"", info_.id, info_.addr, parser_.error());
      parser_.Reset();
      parsed_ = in_.size();
      break;
    }
  }
  if (commands_.empty() && parsed_ > 0) {
    // Only empty commands (blank lines, "*0"): nothing holds views into them.
    in_.Consume(parsed_);
    parsed_ = 0;
  }
  Add(loop_->stats().parse_ns, NowNs() - t0);
}

void Connection::FinishRead() {
  loop_->stats().command_latency.Record(NowNs() - read_start_ns_);
  in_.Consume(parsed_);
  parsed_ = 0;
  argv_.clear();
  inline_args_.clear();
  commands_.clear();
  next_ = head_ = 0;
  if (in_.capacity() > kIdleBufferKeep) in_.ShrinkIfIdle(0);
}

RespWriter Connection::WriterFor(size_t index) {
  Command& c = commands_[index];
  return RespWriter(index == head_ ? &out_ : &c.reply, c.resp3);
}

void Connection::Dispatch() {
  const ServerConfig& s = loop_->settings();
  ThreadStats& st = loop_->stats();
  const char* last_name = nullptr;
  while (next_ < commands_.size() && !dead_) {
    Command& c = commands_[next_];
    if (c.preset_error) {
      c.state = Command::State::kDone;
      close_after_reply_ = true;
      CommandDone(next_++);
      break;
    }
    if (c.spec == nullptr) {
      c.resp3 = resp3;
      std::string_view name = Arg(c, 0);
      const CommandSpec* spec = FindCommand(name);
      if (spec == nullptr) {
        // Redis: "unknown command 'x', with args beginning with: 'a' 'b' "
        std::string args;
        for (size_t i = 1; i < c.argc && args.size() < 128; ++i) {
          std::string_view a = Arg(c, i).substr(0, 128 - args.size());
          args += "'";
          args += a;
          args += "' ";
        }
        WriterFor(next_).Error("ERR unknown command '" + std::string(name.substr(0, 128)) +
                               "', with args beginning with: " + args);
        c.state = Command::State::kDone;
        CommandDone(next_++);
        continue;
      }
      if ((spec->arity > 0 && c.argc != static_cast<uint32_t>(spec->arity)) ||
          (spec->arity < 0 && c.argc < static_cast<uint32_t>(-spec->arity))) {
        WriterFor(next_).Error(std::string("ERR wrong number of arguments for '") + spec->name + "' command");
        Add(st.failed_calls[spec->id], 1);
        c.state = Command::State::kDone;
        CommandDone(next_++);
        continue;
      }
      if (!authenticated && !(spec->flags & kCmdNoAuth) && !s.requirepass.empty()) {
        WriterFor(next_).Error("NOAUTH Authentication required.");
        Add(st.failed_calls[spec->id], 1);
        c.state = Command::State::kDone;
        CommandDone(next_++);
        continue;
      }
      if ((spec->flags & kCmdWrite) && server_->persistence().writes_denied()) {
        // Redis's stop-writes-on-bgsave-error: refused before touching the store.
        WriterFor(next_).Error(kErrMisconfRdb);
        Add(st.failed_calls[spec->id], 1);
        c.state = Command::State::kDone;
        CommandDone(next_++);
        continue;
      }
      c.spec = spec;
    }
    if (!round_.empty()) {
      if (adding_ && loop_->pending().size() - round_begin_ >= s.max_batch_ops) break;
      if (c.spec->flags & kCmdBarrier) break;
      if ((!blocked_small_.empty() || !blocked_large_.empty()) && TouchesBlocked(c)) break;
    }
    c.resp3 = resp3;
    last_name = c.spec->name;
    RunStart(next_++);
    if (close_after_reply_) {
      // QUIT / SHUTDOWN: nothing after it runs.
      commands_.resize(next_);
      parsed_ = in_.size();
      parser_.Reset();
      break;
    }
  }
  if (last_name != nullptr) info_.last_command.store(last_name, std::memory_order_relaxed);
  info_.resp.store(resp3 ? 3 : 2, std::memory_order_relaxed);
  JoinIfAdded();
  if (loop_->pending().size() >= s.max_batch_ops) loop_->SubmitPending();
}

void Connection::JoinIfAdded() {
  if (!adding_) return;
  adding_ = false;
  loop_->JoinRound(this, round_begin_);
}

void Connection::BeforeHandler() {
  if (adding_) return;
  // Ops this handler adds open the round; a handler that adds none leaves
  // adding_ unset again (RunStart/RunFinish).
  round_begin_ = static_cast<uint32_t>(loop_->pending().size());
}

void Connection::RunStart(size_t index) {
  Command& c = commands_[index];
  BeforeHandler();
  c.op_begin = static_cast<uint32_t>(loop_->pending().size());
  c.op_count = 0;
  CommandContext ctx{*server_, *loop_, *this, c, WriterFor(index), loop_->pending()};
  c.spec->start(ctx);
  ThreadStats& st = loop_->stats();
  Add(st.commands, 1);
  Add(st.calls[c.spec->id], 1);
  if (c.op_count > 0) {
    adding_ = true;
    c.state = Command::State::kWaiting;
    round_.push_back(static_cast<uint32_t>(index));
    if (c.spec->flags & kCmdRmw) BlockKeys(c);
  } else {
    c.state = Command::State::kDone;
    CommandDone(index);
  }
}

bool Connection::RunFinish(size_t index, ResultSpan results) {
  Command& c = commands_[index];
  BeforeHandler();
  c.op_begin = static_cast<uint32_t>(loop_->pending().size());
  c.op_count = 0;
  CommandContext ctx{*server_, *loop_, *this, c, WriterFor(index), loop_->pending()};
  bool done = c.spec->finish(ctx, results);
  if (c.op_count > 0) adding_ = true;
  if (!done && c.op_count == 0) {
    ctx.out.Error("ERR internal error: command neither finished nor retried");
    done = true;
  }
  if (!done) ++c.attempts;
  return done;
}

void Connection::BlockKeys(const Command& c) {
  ForEachKey(*c.spec, c.argc, [&](size_t i) {
    std::string_view key = Arg(c, i);
    if (blocked_large_.empty() && blocked_small_.size() < kSmallBlockedSet) {
      blocked_small_.push_back(key);
    } else {
      if (blocked_large_.empty()) blocked_large_.insert(blocked_small_.begin(), blocked_small_.end());
      blocked_large_.insert(key);
    }
  });
}

bool Connection::TouchesBlocked(const Command& c) const {
  bool hit = false;
  ForEachKey(*c.spec, c.argc, [&](size_t i) {
    if (hit) return;
    std::string_view key = Arg(c, i);
    if (!blocked_large_.empty()) {
      hit = blocked_large_.count(key) != 0;
    } else {
      for (std::string_view b : blocked_small_) {
        if (b == key) {
          hit = true;
          break;
        }
      }
    }
  });
  return hit;
}

void Connection::ProcessRound() {
  SharedRound* round = std::exchange(round_of_, nullptr);
  FinishRound(round->results);
  // Every value of the round is in a reply now (out_ or a held
  // Command::reply, both copies), so its views are no longer needed here.
  loop_->Leave(round);
  Dispatch();
}

void Connection::ProcessEarly(const Results& results, SharedRound* round) {
  round_of_ = nullptr;
  if (!dead_) FinishRound(results);
  loop_->Leave(round);
  JoinIfAdded();  // CAS losers; the rest is dispatched on the next Drive
}

void Connection::FinishRound(const Results& results) {
  std::vector<uint32_t>& finished = prev_round_;  // reused: no allocation per round
  finished.clear();
  finished.swap(round_);
  blocked_small_.clear();
  blocked_large_.clear();
  ThreadStats& st = loop_->stats();
  // The values of a GPU round are views into the store's host heap, one
  // random line each: start loading all of this round's first, so that its
  // replies take one miss's time instead of one per GET (on the H200 host
  // that miss was ~13 % of an I/O thread, stalled in the reply's memcpy).
  for (uint32_t index : finished) {
    const Command& c = commands_[index];
    results.Prefetch(c.op_begin, size_t(c.op_begin) + c.op_count);
  }
  for (uint32_t index : finished) {
    Command& c = commands_[index];
    bool done;
    if (results.size() < static_cast<size_t>(c.op_begin) + c.op_count) {
      WriterFor(index).Error("ERR internal error: the store returned too few results");
      done = true;
    } else {
      // The span is taken before RunFinish reuses c.op_begin for a retry.
      done = RunFinish(index, ResultSpan(&results, c.op_begin, c.op_count));
    }
    if (done) {
      c.state = Command::State::kDone;
      CommandDone(index);
    } else {
      Add(st.cas_retries, 1);
      round_.push_back(index);
      BlockKeys(c);
    }
  }
}

void Connection::CommandDone(size_t index) {
  if (index == head_) EmitReplies();
}

void Connection::EmitReplies() {
  while (head_ < commands_.size()) {
    Command& c = commands_[head_];
    if (c.state != Command::State::kDone) break;
    if (!c.reply.empty()) {
      out_.append(c.reply);
      c.reply.clear();
    }
    ++head_;
  }
}

void Connection::FlushOutput() {
  if (out_sent_ == out_.size()) return;
  uint64_t t0 = NowNs();
  ThreadStats& st = loop_->stats();
  while (writable_ && out_sent_ < out_.size()) {
    ssize_t n = ::send(fd_, out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL);
    if (n > 0) {
      out_sent_ += static_cast<size_t>(n);
      Add(st.net_output_bytes, static_cast<uint64_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      writable_ = false;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      Close(n == 0 ? "write returned 0" : std::strerror(errno));
      return;
    }
  }
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
    if (out_.capacity() > kIdleBufferKeep) std::string().swap(out_);
  }
  uint64_t pending = out_.size() - out_sent_;
  info_.output_buffer.store(pending, std::memory_order_relaxed);
  Add(st.reply_ns, NowNs() - t0);
  uint64_t limit = loop_->settings().client_output_buffer_limit;
  if (limit != 0 && pending > limit) {
    spdlog::warn("event=client_closed id={} addr={} reason=\"output buffer limit ({} bytes)\"", info_.id,
                 info_.addr, limit);
    Close("output buffer limit");
  }
}

}  // namespace kvcg::server
