// Connection: one client socket — its query buffer, parsed commands, the
// engine batch in flight, and its reply buffer. Owned and only touched by one
// I/O thread (except the store completion, which hands results over through
// IoThread::PostCompletion).
//
// The life of a read (Redis's processInputBuffer, batched):
//   1. read() once into the query buffer and parse every complete command;
//      arguments stay views into the buffer, which is not touched again until
//      every one of those commands is answered.
//   2. Dispatch commands in order into ONE engine batch (a round). Commands
//      that do not touch the store answer at once. A round stops early at a
//      command that touches a key of a read-modify-write command already in
//      the round (so a CAS retry can never reorder against it), at a barrier
//      command (FLUSHALL, DBSIZE, ...) unless the round is empty, or at
//      max-batch-ops operations.
//   3. Submit; one round in flight per connection (its share of the engine
//      queue is bounded). On completion, finish the round's commands; CAS
//      losers re-issue into the next round, which then continues with the
//      remaining commands.
//   4. Replies are emitted strictly in command order: a command at the head
//      writes straight into the reply buffer; one completed out of order
//      keeps its reply until the commands before it have answered.
// The round's Results (codes + value views into store memory) is kept from
// the completion until every finish of the round has written its reply, then
// released at once: values go from the store's memory into the reply buffer
// with no copy in between, and a Results held longer would pin the store's
// memory for replaced values (kvcg/results.h).
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
#include "server/resp_parser.h"
#include "server/resp_writer.h"

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
  // The first op of a round sizes the batch (Connection::StartBatch).
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
  // The store completed this connection's round (called on the loop thread).
  void MarkRoundReady() { round_ready_ = true; }
  void SetRoundResults(Results&& results) { results_ = std::move(results); }

  // Closes the socket now (replies not yet written are dropped). The object
  // is deleted by its loop once no round is in flight.
  void Close(const char* why);
  bool dead() const { return dead_; }
  bool in_flight() const { return in_flight_; }
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
  void ProcessRound();     // results of the round in flight are here
  void Dispatch();         // queued commands into the round
  void SubmitRound();
  void RunStart(size_t index);
  bool RunFinish(size_t index, ResultSpan results);
  void StartBatch();  // before the first op of a round
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

  // The round. batch_ always comes from store->NewBatch() (memory the store
  // uses without a copy: pinned on the GPU backend). Submit takes it and the
  // store never hands it back, so clearing and reusing one batch is not
  // possible; instead SubmitRound takes a fresh, empty NewBatch() (which
  // allocates nothing until used) and the first op of the next round
  // reserves what the last round used, so a steady pipeline costs one
  // allocation per region per round instead of a doubling per growth step.
  Batch batch_;
  size_t hint_ops_ = 0, hint_key_bytes_ = 0, hint_value_bytes_ = 0;
  std::vector<uint32_t> round_;  // commands with operations in batch_
  std::vector<uint32_t> prev_round_;
  std::vector<std::string_view> blocked_small_;
  std::unordered_set<std::string_view> blocked_large_;
  bool in_flight_ = false;
  bool round_ready_ = false;
  uint64_t submit_ns_ = 0;
  Results results_;  // of the round just completed; see the top comment

  // Output.
  std::string out_;
  size_t out_sent_ = 0;
};

inline void CommandContext::BeforeOp() {
  if (batch.empty()) conn.StartBatch();
}

}  // namespace kvcg::server
