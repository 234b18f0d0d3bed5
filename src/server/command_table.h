// The command table: one data-driven entry per command, as in Redis's
// commands.def — name, arity, flags, key positions, documentation and the
// handler. The dispatcher, COMMAND COUNT/INFO/DOCS/LIST, per-command INFO
// statistics all read this one table (docs/COMMANDS.md is written by hand
// from it and must be kept in step).
//
// A handler runs in up to two phases on the connection's I/O thread:
//   start(ctx):  validate arguments, then either write the complete reply
//                (commands that do not touch the store) or append the
//                command's store operations to ctx.batch;
//   finish(ctx, results): given the results of those operations (in order),
//                write the reply and return true — or, for a read-modify-write
//                whose compare-and-swap lost a race, append the retry
//                operations and return false (it is called again next round).
//                The values in `results` are views into the round's Results:
//                valid only during the call, so a handler writes them into
//                its reply (no copy in between) and copies what it must keep
//                (a CAS loop's expected value, in cmd.scratch).
//                finish may run inside the store's Submit (early answers,
//                shared_round.h), where the store may hold locks: it must
//                not call Submit, Flush or anything that waits for the store.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/results.h"

namespace kvcg::server {

struct CommandContext;

enum CommandFlag : uint32_t {
  kCmdWrite = 1u << 0,     // may modify the store
  kCmdReadonly = 1u << 1,  // only reads the store
  kCmdFast = 1u << 2,      // O(1) or O(log N)
  kCmdNoAuth = 1u << 3,    // allowed before AUTH
  // Acts on the whole store or server (FLUSHALL, DBSIZE, SHUTDOWN, INFO):
  // runs only after every earlier command of the connection completed.
  kCmdBarrier = 1u << 4,
  // Read-modify-write over compare-and-swap: later commands of the same
  // connection on its keys wait until it has taken effect.
  kCmdRmw = 1u << 5,
  kCmdAdmin = 1u << 6,
  kCmdLoading = 1u << 7,  // reported for client compatibility only
  kCmdStale = 1u << 8,
};

using StartFn = void (*)(CommandContext& ctx);
using FinishFn = bool (*)(CommandContext& ctx, ResultSpan results);

struct CommandSpec {
  const char* name;  // lowercase
  int arity;         // Redis convention: N = exactly N args (incl. name), -N = at least N
  uint32_t flags;
  int first_key;  // 0 = no keys
  int last_key;   // negative: counted from the end (-1 = last argument)
  int key_step;
  const char* group;  // "string", "connection", "server", "generic"
  const char* since;  // Redis version the command appeared in
  const char* summary;
  const char* complexity;
  const char* acl_categories;  // space separated, e.g. "@write @string @fast"
  const char* subcommands;     // space separated, for container commands ("" if none)
  StartFn start;
  FinishFn finish;  // null for commands that never touch the store
  int id = 0;       // index in the table, set when the table is built
};

// All commands, in table order.
const std::vector<CommandSpec>& Commands();
// Lookup by name, case-insensitive; null when unknown.
const CommandSpec* FindCommand(std::string_view name);

// Calls fn(argument index) for every key argument of a command with `argc`
// arguments, following first_key/last_key/key_step.
template <typename Fn>
void ForEachKey(const CommandSpec& spec, size_t argc, Fn&& fn) {
  if (spec.first_key <= 0) return;
  int last = spec.last_key < 0 ? static_cast<int>(argc) + spec.last_key : spec.last_key;
  for (int i = spec.first_key; i <= last && i < static_cast<int>(argc); i += spec.key_step) fn(static_cast<size_t>(i));
}

// Handlers, grouped by family (cmd_*.cc).
namespace cmd {
// connection
void Ping(CommandContext&);
void Echo(CommandContext&);
void Hello(CommandContext&);
void Auth(CommandContext&);
void Select(CommandContext&);
void Quit(CommandContext&);
void Reset(CommandContext&);
void Client(CommandContext&);
// server
void Command(CommandContext&);
void ConfigCmd(CommandContext&);
void Info(CommandContext&);
void DbSize(CommandContext&);
void FlushAll(CommandContext&);
void Time(CommandContext&);
void Function(CommandContext&);
// persistence
void Save(CommandContext&);
void BgSave(CommandContext&);
void LastSave(CommandContext&);
void BgRewriteAof(CommandContext&);
void Shutdown(CommandContext&);
// strings / generic keyspace
void Get(CommandContext&);
bool GetFinish(CommandContext&, ResultSpan);
void Set(CommandContext&);
bool SetFinish(CommandContext&, ResultSpan);
void SetNx(CommandContext&);
bool SetNxFinish(CommandContext&, ResultSpan);
void GetSet(CommandContext&);
bool GetSetFinish(CommandContext&, ResultSpan);
void GetDel(CommandContext&);
bool GetDelFinish(CommandContext&, ResultSpan);
void MGet(CommandContext&);
bool MGetFinish(CommandContext&, ResultSpan);
void MSet(CommandContext&);
bool MSetFinish(CommandContext&, ResultSpan);
void Del(CommandContext&);
bool DelFinish(CommandContext&, ResultSpan);
void Exists(CommandContext&);
bool ExistsFinish(CommandContext&, ResultSpan);
void StrLen(CommandContext&);
bool StrLenFinish(CommandContext&, ResultSpan);
void Append(CommandContext&);
bool AppendFinish(CommandContext&, ResultSpan);
void IncrBy(CommandContext&);  // INCR, DECR, INCRBY, DECRBY
bool IncrByFinish(CommandContext&, ResultSpan);
void IncrByFloat(CommandContext&);
bool IncrByFloatFinish(CommandContext&, ResultSpan);
// strings: ranges (cmd_strings_range.cc), MSETNX (cmd_msetnx.cc), LCS (cmd_lcs.cc)
void SetRange(CommandContext&);
bool SetRangeFinish(CommandContext&, ResultSpan);
void GetRange(CommandContext&);  // GETRANGE, SUBSTR
bool GetRangeFinish(CommandContext&, ResultSpan);
void MSetNx(CommandContext&);
bool MSetNxFinish(CommandContext&, ResultSpan);
void Lcs(CommandContext&);
bool LcsFinish(CommandContext&, ResultSpan);
// bitmaps (cmd_bits.cc)
void SetBit(CommandContext&);
bool SetBitFinish(CommandContext&, ResultSpan);
void GetBit(CommandContext&);
bool GetBitFinish(CommandContext&, ResultSpan);
void BitCount(CommandContext&);
bool BitCountFinish(CommandContext&, ResultSpan);
void BitPos(CommandContext&);
bool BitPosFinish(CommandContext&, ResultSpan);
// keyspace (cmd_keyspace.cc); TOUCH uses Exists/ExistsFinish
void Type(CommandContext&);
bool TypeFinish(CommandContext&, ResultSpan);
void Rename(CommandContext&);  // RENAME, RENAMENX
bool RenameFinish(CommandContext&, ResultSpan);
void Copy(CommandContext&);
bool CopyFinish(CommandContext&, ResultSpan);
void Object(CommandContext&);
bool ObjectFinish(CommandContext&, ResultSpan);
void Memory(CommandContext&);
bool MemoryFinish(CommandContext&, ResultSpan);
void SwapDb(CommandContext&);
void Keys(CommandContext&);
void RandomKey(CommandContext&);
// expiry (cmd_expire.cc): SET with its options, SETEX/PSETEX, GETEX,
// EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT, TTL/PTTL/EXPIRETIME/PEXPIRETIME, PERSIST
void SetEx(CommandContext&);  // SETEX, PSETEX
bool SetExFinish(CommandContext&, ResultSpan);
void GetEx(CommandContext&);
bool GetExFinish(CommandContext&, ResultSpan);
void Expire(CommandContext&);  // EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT
bool ExpireFinish(CommandContext&, ResultSpan);
void Ttl(CommandContext&);  // TTL, PTTL, EXPIRETIME, PEXPIRETIME
bool TtlFinish(CommandContext&, ResultSpan);
void Persist(CommandContext&);
bool PersistFinish(CommandContext&, ResultSpan);
// lists and sets (cmd_collections.cc): LPUSH/RPUSH and LPOP/RPOP share a handler
void LPush(CommandContext&);
bool LPushFinish(CommandContext&, ResultSpan);
void LPop(CommandContext&);
bool LPopFinish(CommandContext&, ResultSpan);
void LLen(CommandContext&);
bool LLenFinish(CommandContext&, ResultSpan);
void LRange(CommandContext&);
bool LRangeFinish(CommandContext&, ResultSpan);
void SAdd(CommandContext&);
bool SAddFinish(CommandContext&, ResultSpan);
void SRem(CommandContext&);
bool SRemFinish(CommandContext&, ResultSpan);
void SCard(CommandContext&);
bool SCardFinish(CommandContext&, ResultSpan);
void SMembers(CommandContext&);
bool SMembersFinish(CommandContext&, ResultSpan);
void SIsMember(CommandContext&);
bool SIsMemberFinish(CommandContext&, ResultSpan);
// keyspace iteration (cmd_scan.cc)
void Scan(CommandContext&);
}  // namespace cmd

}  // namespace kvcg::server
