// Connection: one client socket — its query buffer, parsed commands, its
// round of store operations, and its reply buffer. Owned and only touched by
// one I/O thread.
//
// The life of a read (Redis's processInputBuffer, batched):
//   1. read() once into the query buffer and parse every complete command;
//      arguments stay views into the buffer, which is not touched again until
//      every one of those commands is answered.
//   2. Dispatch commands in order into ONE round: a contiguous range of the
//      loop's shared store batch (shared_round.h). Commands that do not touch
//      the store answer at once. A round stops early at a command that
//      touches a key of a read-modify-write command already in the round (so
//      a CAS retry can never reorder against it), at a barrier command
//      (FLUSHALL, DBSIZE, ...) unless the round is empty, or at
//      max-batch-ops operations.
//   3. Join the loop's round, which the loop submits at the end of its pass;
//      one round in flight per connection (its share of the store's queue is
//      bounded). On completion — or earlier, when the store answered all of
//      the round's ops while routing (hot-cache hits) — finish the round's
//      commands; CAS losers re-issue into the next round, which then
//      continues with the remaining commands.
//   4. Replies are emitted strictly in command order: a command at the head
//      writes straight into the reply buffer; one completed out of order
//      keeps its reply until the commands before it have answered.
// The round's Results (codes + value views into store memory, shared with
// the other members) is read until every finish of the round has written its
// reply, then the connection leaves the round, and the last member to leave
// releases it: values go from the store's memory into the reply buffer with
// no copy in between, and a Results held longer would pin the store's memory
// for replaced values (kvcg/results.h).
// The connection is read again only when all of that is done and the reply
// buffer is under the high-water mark (backpressure: nothing is dropped).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/results.h"
#include "server/client_registry.h"
#include "server/command_table.h"
#include "server/io_buffer.h"
#include "server/io_thread.h"
#include "server/resp_parser.h"
#include "server/resp_writer.h"
#include "server/shared_round.h"

namespace kvcg::server {

class IoThread;
class Server;
class Connection;

// One parsed command and its progress.
struct Command {
  enum class State : uint8_t { kQueued, kWaiting, kDone };
  const CommandSpec* spec = nullptr;
  uint32_t argv_begin = 0;  // into Connection::argv_
  uint32_t argc = 0;
  uint32_t op_begin = 0;  // its operations in the round's batch
  uint32_t op_count = 0;
  State state = State::kQueued;
  bool resp3 = false;
  bool preset_error = false;  // a protocol error record: reply already set
  uint32_t attempts = 0;      // CAS rounds so far
  // Scratch for read-modify-write handlers.
  int64_t i64 = 0;
  long double ld = 0;
  uint8_t phase = 0;
  // Expire-ats a handler carries between rounds (RENAME/COPY: the source's
  // and the replaced destination's; EXPIRE ... LT XX: the wanted time).
  uint64_t expire_at[2] = {0, 0};
  std::string scratch;
  std::string reply;  // held only while an earlier command is unanswered
};

// What a handler sees: the server, its connection, its arguments, a writer
// for its reply and the batch to add store operations to.
struct CommandContext {
  Server& server;
  IoThread& loop;
  Connection& conn;
  Command& cmd;
  RespWriter out;
  Batch& batch;

  size_t argc() const { return cmd.argc; }
  std::string_view arg(size_t i) const;

  // Store operations of this command (counted in cmd.op_count).
  void OpGet(std::string_view key) {
    BeforeOp();
    batch.Get(key);
    ++cmd.op_count;
  }
  // A PUT replaces the key's expiry with `expire_at` (kNoExpiry: none, as
  // Redis's SET; KeepTtl(): Redis's KEEPTTL).
  void OpPut(std::string_view key, std::string_view value, uint64_t expire_at = kNoExpiry) {
    BeforeOp();
    batch.Put(key, value, expire_at);
    ++cmd.op_count;
  }
  void OpDelete(std::string_view key) {
    BeforeOp();
    batch.Delete(key);
    ++cmd.op_count;
  }
  // A CAS that stores gives the key `expire_at`. Read-modify-write commands
  // (INCR, APPEND, SETRANGE, ...) keep the key's TTL, as in Redis: they pass
  // KeepTtl(). SET NX/XX pass their own.
  void OpCas(std::string_view key, const std::string_view* expected, std::string_view desired, uint64_t expire_at) {
    BeforeOp();
    batch.CompareAndSwap(key, expected, desired, expire_at);
    ++cmd.op_count;
  }
  // Sets only the key's expire-at when `condition` holds (OpType::kExpire).
  void OpExpire(std::string_view key, uint64_t expire_at, ExpireCondition condition) {
    BeforeOp();
    batch.Expire(key, expire_at, condition);
    ++cmd.op_count;
  }
  // The store's clock (ms since the Unix epoch): relative TTLs are added to it.
  uint64_t Now() const;
  // kKeepExpiry, or kNoExpiry where the store keeps no expiry at all
  // (Layout::kFixed8 refuses any expire-at, KEEPTTL included).
  uint64_t KeepTtl() const;
  // Replies with an error ("ERR ...", "WRONGPASS ...") and counts a failed call.
  void Error(std::string_view message);
  // Replies with the error for a failed store operation (cmd_common.cc).
  void StoreError(const OpResultView& r);
  // The first op of a loop's round sizes its batch (IoThread::ReserveRound).
  void BeforeOp();
};

class Connection {
 public:
  Connection(IoThread* loop, int fd, uint64_t id, std::string addr, std::string laddr);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Does all the work possible now: finish a completed round, write, read
  // and parse, dispatch. Called on socket events and completions.
  void Drive();
  // Epoll reported these events.
  void OnEvents(uint32_t events);
  // The loop put this connection's round into `round` (IoThread::JoinRound).
  void EnterRound(SharedRound* round) {
    round_of_ = round;
  }
  // The store completed the round; the connection finishes it on its next
  // Drive (called on the loop thread).
  void MarkRoundReady() { round_ready_ = true; }
  // The round's ops were all answered early, in `results` (Store::
  // EarlyAnswers, valid during the call): finish its commands now, inside
  // the store's Submit; retries join the next round. Reads and dispatches
  // wait for the next Drive (Submit may not be called from here).
  void ProcessEarly(const Results& results, SharedRound* round);

  // Closes the socket now (replies not yet written are dropped). The object
  // is deleted by its loop once no round is in flight.
  void Close(const char* why);
  bool dead() const { return dead_; }
  // In a round (pending in the loop's batch, or submitted) not yet finished.
  bool in_flight() const { return round_of_ != nullptr; }
  // Idle: nothing queued, nothing in flight, no reply pending.
  bool idle() const;
  uint64_t last_interaction_ms() const { return info_.last_interaction_ms.load(std::memory_order_relaxed); }
  // Shutdown drain: stop reading, close once everything read is answered.
  void BeginDrain();
  bool scheduled = false;  // in the loop's run-again list

  // --- State that handlers read and change.
  uint64_t id() const { return info_.id; }
  ClientInfo& info() { return info_; }
  bool resp3 = false;
  bool authenticated = false;
  void SetCloseAfterReply() { close_after_reply_ = true; }
  std::string_view Arg(const Command& c, size_t i) const { return argv_[c.argv_begin + i]; }

 private:
  friend struct CommandContext;
  bool CanRead() const;
  void ReadOnce();
  void ParseInput();
  void ProcessRound();     // the round in flight completed
  // Finishes the round's commands from `results`; CAS losers go into the next round.
  void FinishRound(const Results& results);
  void Dispatch();         // queued commands into the round
  void JoinIfAdded();      // the ops just added join the loop's round
  void RunStart(size_t index);
  bool RunFinish(size_t index, ResultSpan results);
  // Before a command's handler runs: notes where this connection's ops begin.
  void BeforeHandler();
  void BlockKeys(const Command& c);
  bool TouchesBlocked(const Command& c) const;
  void CommandDone(size_t index);
  void EmitReplies();
  void FlushOutput();
  void FinishRead();
  void ScheduleIfReadable();
  RespWriter WriterFor(size_t index);

  IoThread* loop_;
  Server* server_;
  int fd_;
  ClientInfo info_;
  bool dead_ = false;
  bool readable_ = true;  // edge-triggered: may have unread bytes
  bool writable_ = true;
  bool close_after_reply_ = false;  // QUIT, protocol error, SHUTDOWN
  bool draining_ = false;
  bool saw_eof_ = false;
  bool peer_closed_ = false;  // epoll reported RDHUP/HUP

  // Input.
  IoBuffer in_;
  size_t parsed_ = 0;  // bytes of in_ turned into commands
  RespParser parser_;
  std::vector<std::string_view> argv_;
  std::deque<std::string> inline_args_;  // unquoted inline arguments (stable addresses)
  std::vector<Command> commands_;
  size_t next_ = 0;  // first command not dispatched
  size_t head_ = 0;  // first command whose reply is not emitted
  uint64_t read_start_ns_ = 0;

  // The round: its ops are [round_begin_, ...) of the loop's pending batch
  // while adding_, then the loop's SharedRound round_of_ holds them.
  bool adding_ = false;
  uint32_t round_begin_ = 0;
  SharedRound* round_of_ = nullptr;
  std::vector<uint32_t> round_;  // commands with operations in the round
  std::vector<uint32_t> prev_round_;
  std::vector<std::string_view> blocked_small_;
  std::unordered_set<std::string_view> blocked_large_;
  bool round_ready_ = false;

  // Output.
  std::string out_;
  size_t out_sent_ = 0;
};

inline void CommandContext::BeforeOp() {
  if (batch.empty()) loop.ReserveRound();
}

}  // namespace kvcg::server
