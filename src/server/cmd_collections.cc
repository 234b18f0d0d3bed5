// List and set commands: LPUSH, RPUSH, LPOP, RPOP, LLEN, LRANGE, SADD,
// SREM, SCARD, SMEMBERS, SISMEMBER, over the server's CollectionKeyspace
// (collections.h: host memory, not the Store, not persisted).
//
// Each command checks its arguments first (Redis's order), then:
//   * the key holds a collection: the command runs at once, in start(),
//     under the keyspace's mutex (WRONGTYPE when it is the other kind);
//   * otherwise the key may hold a string in the Store: one store GET, and
//     finish() answers WRONGTYPE when it found one, or runs the command on
//     the collection side (a missing key: creates it for a push/add,
//     answers the empty reply otherwise).
// The commands are kCmdRmw, so while one waits on its store GET the
// connection holds back its later commands on the key (a pipeline
// "RPUSH k a; GET k" answers WRONGTYPE, as in Redis). The replies, error
// texts and argument checks are Redis 7.0's (t_list.c, t_set.c).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/cmd_common.h"
#include "server/collections.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/resp_parser.h"
#include "server/server.h"

namespace kvcg::server::cmd {

namespace {

using Access = CollectionKeyspace::Access;
using List = CollectionKeyspace::List;
using Set = CollectionKeyspace::Set;
using RunFn = void (*)(CommandContext&);

constexpr const char* kErrPositive = "ERR value is out of range, must be positive";

CollectionKeyspace& Coll(CommandContext& ctx) { return ctx.server.collections(); }

// Runs `run` now when the key holds a collection; otherwise asks the store
// whether it holds a string first (finished by CheckedFinish).
void StartChecked(CommandContext& ctx, RunFn run) {
  if (Coll(ctx).Contains(ctx.arg(1))) return run(ctx);
  ctx.OpGet(ctx.arg(1));
}

bool CheckedFinish(CommandContext& ctx, ResultSpan r, RunFn run) {
  const OpResultView res = r[0];
  if (res.found()) ctx.Error(kErrWrongType);
  else if (res.code == Code::kNotFound) run(ctx);
  else ctx.StoreError(res);
  return true;
}

// WRONGTYPE for an access that found the other kind; true when answered.
bool WrongKind(CommandContext& ctx, Access a) {
  if (a != Access::kWrongType) return false;
  ctx.Error(kErrWrongType);
  return true;
}

// LPOP/RPOP's count argument (cmd.i64 = -1 without one).
bool ParsePopCount(CommandContext& ctx) {
  ctx.cmd.i64 = -1;
  if (ctx.argc() > 3) {
    ctx.Error("ERR wrong number of arguments for '" + std::string(ctx.cmd.spec->name) + "' command");
    return false;
  }
  if (ctx.argc() == 3) {
    int64_t n;
    if (!ParseInt64(ctx.arg(2), &n) || n < 0) {
      ctx.Error(kErrPositive);
      return false;
    }
    ctx.cmd.i64 = n;
  }
  return true;
}

// --- LPUSH / RPUSH key element [element ...]
void RunPush(CommandContext& ctx) {
  const bool left = ctx.cmd.spec->name[0] == 'l';
  size_t len = 0;
  Access a = Coll(ctx).Update<List>(ctx.arg(1), /*create=*/true, [&](List& l) {
    for (size_t i = 2; i < ctx.argc(); ++i) {
      if (left) l.emplace_front(ctx.arg(i));
      else l.emplace_back(ctx.arg(i));
    }
    len = l.size();
  });
  if (!WrongKind(ctx, a)) ctx.out.Integer(static_cast<int64_t>(len));
}

// --- LPOP / RPOP key [count]
void RunPop(CommandContext& ctx) {
  const bool left = ctx.cmd.spec->name[0] == 'l';
  const int64_t count = ctx.cmd.i64;
  std::vector<std::string> popped;
  Access a = Coll(ctx).Update<List>(ctx.arg(1), /*create=*/false, [&](List& l) {
    const size_t n = count < 0 ? 1 : std::min(l.size(), static_cast<size_t>(count));
    popped.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (left) {
        popped.push_back(std::move(l.front()));
        l.pop_front();
      } else {
        popped.push_back(std::move(l.back()));
        l.pop_back();
      }
    }
  });
  if (WrongKind(ctx, a)) return;
  if (a == Access::kMissing) {
    if (count < 0) ctx.out.Null();
    else ctx.out.NullArray();  // Redis 7.0: a missing key with a count is a null array
    return;
  }
  if (count < 0) return ctx.out.Bulk(popped[0]);
  ctx.out.ArrayHeader(popped.size());
  for (const std::string& e : popped) ctx.out.Bulk(e);
}

// --- LLEN key
void RunLLen(CommandContext& ctx) {
  size_t n = 0;
  Access a = Coll(ctx).Read<List>(ctx.arg(1), [&](const List& l) { n = l.size(); });
  if (!WrongKind(ctx, a)) ctx.out.Integer(static_cast<int64_t>(n));
}

// --- LRANGE key start stop (indexes checked in start(), read again here)
void RunLRange(CommandContext& ctx) {
  int64_t start = 0, stop = 0;
  ParseInt64(ctx.arg(2), &start);
  ParseInt64(ctx.arg(3), &stop);
  std::string elements;
  RespWriter side(&elements, ctx.out.resp3());
  size_t n = 0;
  Access a = Coll(ctx).Read<List>(ctx.arg(1), [&](const List& l) {
    const int64_t len = static_cast<int64_t>(l.size());
    if (start < 0) start += len;
    if (stop < 0) stop += len;
    if (start < 0) start = 0;
    if (start > stop || start >= len) return;
    if (stop >= len) stop = len - 1;
    for (int64_t i = start; i <= stop; ++i) side.Bulk(l[static_cast<size_t>(i)]);
    n = static_cast<size_t>(stop - start + 1);
  });
  if (WrongKind(ctx, a)) return;
  ctx.out.ArrayHeader(n);
  ctx.out.Raw(elements);
}

// --- SADD key member [member ...]
void RunSAdd(CommandContext& ctx) {
  int64_t added = 0;
  Access a = Coll(ctx).Update<Set>(ctx.arg(1), /*create=*/true, [&](Set& s) {
    for (size_t i = 2; i < ctx.argc(); ++i) added += s.emplace(ctx.arg(i)).second;
  });
  if (!WrongKind(ctx, a)) ctx.out.Integer(added);
}

// --- SREM key member [member ...]
void RunSRem(CommandContext& ctx) {
  int64_t removed = 0;
  Access a = Coll(ctx).Update<Set>(ctx.arg(1), /*create=*/false, [&](Set& s) {
    for (size_t i = 2; i < ctx.argc(); ++i) {
      auto it = s.find(std::string(ctx.arg(i)));
      if (it != s.end()) {
        s.erase(it);
        ++removed;
      }
    }
  });
  if (!WrongKind(ctx, a)) ctx.out.Integer(removed);
}

// --- SCARD key
void RunSCard(CommandContext& ctx) {
  size_t n = 0;
  Access a = Coll(ctx).Read<Set>(ctx.arg(1), [&](const Set& s) { n = s.size(); });
  if (!WrongKind(ctx, a)) ctx.out.Integer(static_cast<int64_t>(n));
}

// --- SMEMBERS key (a RESP3 set; order unspecified, as Redis's hashtable)
void RunSMembers(CommandContext& ctx) {
  std::string elements;
  RespWriter side(&elements, ctx.out.resp3());
  size_t n = 0;
  Access a = Coll(ctx).Read<Set>(ctx.arg(1), [&](const Set& s) {
    for (const std::string& e : s) side.Bulk(e);
    n = s.size();
  });
  if (WrongKind(ctx, a)) return;
  ctx.out.SetHeader(n);
  ctx.out.Raw(elements);
}

// --- SISMEMBER key member
void RunSIsMember(CommandContext& ctx) {
  bool is = false;
  Access a = Coll(ctx).Read<Set>(ctx.arg(1), [&](const Set& s) { is = s.count(std::string(ctx.arg(2))) != 0; });
  if (!WrongKind(ctx, a)) ctx.out.Integer(is ? 1 : 0);
}

}  // namespace

void LPush(CommandContext& ctx) { StartChecked(ctx, RunPush); }
bool LPushFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunPush); }

void LPop(CommandContext& ctx) {
  if (ParsePopCount(ctx)) StartChecked(ctx, RunPop);
}
bool LPopFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunPop); }

void LLen(CommandContext& ctx) { StartChecked(ctx, RunLLen); }
bool LLenFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunLLen); }

void LRange(CommandContext& ctx) {
  int64_t v;
  if (!ParseInt64(ctx.arg(2), &v) || !ParseInt64(ctx.arg(3), &v)) return ctx.Error(kErrNotInteger);
  StartChecked(ctx, RunLRange);
}
bool LRangeFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunLRange); }

void SAdd(CommandContext& ctx) { StartChecked(ctx, RunSAdd); }
bool SAddFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunSAdd); }

void SRem(CommandContext& ctx) { StartChecked(ctx, RunSRem); }
bool SRemFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunSRem); }

void SCard(CommandContext& ctx) { StartChecked(ctx, RunSCard); }
bool SCardFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunSCard); }

void SMembers(CommandContext& ctx) { StartChecked(ctx, RunSMembers); }
bool SMembersFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunSMembers); }

void SIsMember(CommandContext& ctx) { StartChecked(ctx, RunSIsMember); }
bool SIsMemberFinish(CommandContext& ctx, ResultSpan r) { return CheckedFinish(ctx, r, RunSIsMember); }

}  // namespace kvcg::server::cmd
