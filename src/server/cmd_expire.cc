// Expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX|XX|GT|LT), TTL,
// PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, and the string commands that
// set a TTL: SET (EX|PX|EXAT|PXAT|KEEPTTL with NX|XX|GET), SETEX, PSETEX,
// GETEX (EX|PX|EXAT|PXAT|PERSIST).
//
// Each is one store operation (kvcg/batch.h, Expiry): the store keeps the
// absolute expire-at per key, applies NX/XX/GT/LT atomically in a kExpire,
// deletes a key given a time in the past, and returns the key's expire-at
// with every result, so TTL is a GET. Times are parsed in expire_args.cc
// (Redis's exact errors, no overflow) and made absolute with the store's
// clock (ctx.Now()).
//
// Two cases take two rounds:
//   * EXPIRE ... LT XX: the store has one condition per op, and LT alone
//     applies to a key without expiry. A GET first answers 0 for such a
//     key; otherwise a kExpire LT follows. (A PERSIST by another client
//     between the two rounds would let LT apply; the connection's own
//     commands are ordered after it: kCmdRmw.)
//   * GETEX with a bad time: Redis looks the key up first (a missing key
//     answers nil, not the error), so a GET decides which reply it gets.
//
// Writes keep or clear the TTL as Redis does: SET/GETSET/MSET/SETEX clear
// it (a PUT with the new expire-at or none), INCR/APPEND/SETRANGE/SETBIT
// keep it (their CAS loops pass KeepTtl(), cmd_rmw.h), RENAME/COPY carry
// the source's (cmd_keyspace.cc).
//
// Lists and sets (collections.h) take no TTL: EXPIRE and friends on one
// answer kErrCollectionTtl, TTL/PTTL -1, EXPIRETIME -1, PERSIST 0. SET
// replaces one (SET ... GET: WRONGTYPE, SET NX: nil), SETEX/PSETEX too,
// GETEX answers WRONGTYPE (cmd_types.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/cmd_common.h"
#include "server/cmd_rmw.h"
#include "server/cmd_types.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/expire_args.h"
#include "server/io_thread.h"
#include "server/server.h"

namespace kvcg::server {

uint64_t CommandContext::Now() const { return server.NowMs(); }
uint64_t CommandContext::KeepTtl() const { return server.has_expiry() ? kKeepExpiry : kNoExpiry; }

namespace cmd {

namespace {

enum SetFlags : int64_t { kNx = 1, kXx = 2, kGet = 4 };

constexpr const char* kErrCollectionTtl = "ERR kvcg: lists and sets do not take a TTL";

// Command::phase values of the two-round cases (see the top comment).
enum ExpirePhase : uint8_t { kOneOp = kPhaseCommandBase, kReadForLtXx, kApplyLtXx, kGetexBadTime };

// Replies the error of a time that did not parse.
void TimeErrorReply(CommandContext& ctx, TimeError e) {
  if (e == TimeError::kNotInteger) ctx.Error(kErrNotInteger);
  else ctx.Error(InvalidExpireTimeError(ctx.cmd.spec->name));
}

// The option words of a command, arguments [from, argc), as one array for
// the parsers: a short list (the usual case) on the stack — SET ... EX 10
// allocates nothing — a longer one (Redis lets an option repeat) on the heap.
class Words {
 public:
  Words(CommandContext& ctx, size_t from) {
    n_ = ctx.argc() > from ? ctx.argc() - from : 0;
    if (n_ > kSmall) many_.reserve(n_);
    for (size_t i = 0; i < n_; ++i) {
      if (n_ <= kSmall) small_[i] = ctx.arg(from + i);
      else many_.push_back(ctx.arg(from + i));
    }
  }
  const std::string_view* data() const { return n_ <= kSmall ? small_ : many_.data(); }
  size_t size() const { return n_; }

 private:
  static constexpr size_t kSmall = 16;
  std::string_view small_[kSmall];
  std::vector<std::string_view> many_;
  size_t n_;
};

bool ParseOptionsFrom(CommandContext& ctx, size_t from, bool getex, StringOptions* out) {
  Words w(ctx, from);
  return ParseStringOptions(w.data(), w.size(), getex, out);
}

bool ReplyValueOrNull(CommandContext& ctx, const OpResultView& res) {
  if (res.found()) ctx.out.Bulk(res.value);
  else if (res.code == Code::kNotFound) ctx.out.Null();
  else ctx.StoreError(res);
  return true;
}

}  // namespace

// --- SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]
// cmd.i64: SetFlags; cmd.expire_at[0]: the expire-at every attempt stores.
void Set(CommandContext& ctx) {
  StringOptions o;
  if (!ParseOptionsFrom(ctx, 3, /*getex=*/false, &o)) return ctx.Error(kErrSyntax);
  uint64_t expire_at = kNoExpiry;
  if (o.has_time) {
    if (TimeError e = ParseSetTime(o.time, o.unit, o.base, ctx.Now(), &expire_at); e != TimeError::kNone) {
      return TimeErrorReply(ctx, e);
    }
  } else if (o.keepttl) {
    expire_at = ctx.KeepTtl();
  }
  ctx.cmd.i64 = (o.nx ? int64_t{kNx} : 0) | (o.xx ? int64_t{kXx} : 0) | (o.get ? int64_t{kGet} : 0);
  ctx.cmd.expire_at[0] = expire_at;
  std::string_view key = ctx.arg(1), value = ctx.arg(2);
  if (HoldsCollection(ctx, key)) {
    // Redis: GET checks the old value's type first; NX finds the key
    // existing; otherwise (XX included) SET replaces a value of any type.
    if (o.get) return ctx.Error(kErrWrongType);
    if (o.nx) return ctx.out.Null();
    DropCollection(ctx, key);
    ctx.cmd.i64 &= ~int64_t{kXx};
    return ctx.OpPut(key, value, expire_at);
  }
  if (o.nx) CasAbsent(ctx, key, value, expire_at);
  else if (o.xx) CasFrom(ctx, key, value, value, expire_at);  // stores iff it exists with this value
  else ctx.OpPut(key, value, expire_at);
}

bool SetFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  int64_t flags = ctx.cmd.i64;
  if (!res.succeeded()) {
    ctx.StoreError(res);
    return true;
  }
  bool stored = true;
  if (flags & kNx) {
    stored = CasStored(ctx.cmd, res);
  } else if (flags & kXx) {
    stored = CasStored(ctx.cmd, res);
    if (!stored && res.found()) {
      CasFrom(ctx, ctx.arg(1), res.value, ctx.arg(2), ctx.cmd.expire_at[0]);  // lost to a different value: retry
      return false;
    }
  }
  if (flags & kGet) {
    if (res.found()) ctx.out.Bulk(res.value);
    else ctx.out.Null();
  } else if (stored) {
    ctx.out.Ok();
  } else {
    ctx.out.Null();
  }
  return true;
}

// --- SETEX key seconds value / PSETEX key milliseconds value
void SetEx(CommandContext& ctx) {
  const TimeUnit unit = ctx.cmd.spec->name[0] == 'p' ? TimeUnit::kMilliseconds : TimeUnit::kSeconds;
  uint64_t expire_at;
  if (TimeError e = ParseSetTime(ctx.arg(2), unit, TimeBase::kRelative, ctx.Now(), &expire_at); e != TimeError::kNone) {
    return TimeErrorReply(ctx, e);
  }
  DropCollection(ctx, ctx.arg(1));
  ctx.OpPut(ctx.arg(1), ctx.arg(3), expire_at);
}
bool SetExFinish(CommandContext& ctx, ResultSpan r) {
  if (!r[0].succeeded()) ctx.StoreError(r[0]);
  else ctx.out.Ok();
  return true;
}

// --- GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST]
// cmd.i64: the TimeError of a bad time (kGetexBadTime).
void GetEx(CommandContext& ctx) {
  StringOptions o;
  if (!ParseOptionsFrom(ctx, 2, /*getex=*/true, &o)) return ctx.Error(kErrSyntax);
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.cmd.phase = kOneOp;
  if (o.has_time) {
    uint64_t expire_at;
    if (TimeError e = ParseSetTime(o.time, o.unit, o.base, ctx.Now(), &expire_at); e != TimeError::kNone) {
      ctx.cmd.phase = kGetexBadTime;
      ctx.cmd.i64 = static_cast<int64_t>(e);
      ctx.OpGet(ctx.arg(1));
      return;
    }
    // An EXAT/PXAT in the past deletes the key after reading it (the kExpire
    // returns the value it had).
    ctx.OpExpire(ctx.arg(1), expire_at, ExpireCondition::kAlways);
  } else if (o.persist) {
    ctx.OpExpire(ctx.arg(1), kNoExpiry, ExpireCondition::kIfSet);  // no write when it has none
  } else {
    ctx.OpGet(ctx.arg(1));
  }
}
bool GetExFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (ReadFailed(ctx, res)) return true;
  if (ctx.cmd.phase == kGetexBadTime && res.found()) {
    TimeErrorReply(ctx, static_cast<TimeError>(ctx.cmd.i64));
    return true;
  }
  return ReplyValueOrNull(ctx, res);
}

// --- EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key time [NX|XX|GT|LT]
// cmd.expire_at[0]: the store expire-at asked for; cmd.i64: the condition.
void Expire(CommandContext& ctx) {
  const std::string_view name = ctx.cmd.spec->name;
  const TimeUnit unit = name[0] == 'p' ? TimeUnit::kMilliseconds : TimeUnit::kSeconds;
  const TimeBase base = name.size() > 2 && name.substr(name.size() - 2) == "at" ? TimeBase::kAbsolute
                                                                                 : TimeBase::kRelative;
  // Flags first, then the time: Redis reports a bad flag before a bad time.
  ExpireFlags flags;
  {
    Words w(ctx, 3);
    if (std::string e = ParseExpireFlags(w.data(), w.size(), &flags); !e.empty()) return ctx.Error(e);
  }
  int64_t when;
  if (TimeError e = ParseExpireTime(ctx.arg(2), unit, base, ctx.Now(), &when); e != TimeError::kNone) {
    return TimeErrorReply(ctx, e);
  }
  if (HoldsCollection(ctx, ctx.arg(1))) return ctx.Error(kErrCollectionTtl);
  const uint64_t expire_at = StoreExpireAt(when);
  ctx.cmd.expire_at[0] = expire_at;
  if (flags.requires_expiry()) {
    ctx.cmd.phase = kReadForLtXx;
    ctx.OpGet(ctx.arg(1));
    return;
  }
  ctx.cmd.phase = kOneOp;
  ctx.cmd.i64 = static_cast<int64_t>(flags.condition());
  ctx.OpExpire(ctx.arg(1), expire_at, flags.condition());
}

bool ExpireFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (!res.succeeded()) {
    ctx.StoreError(res);
    return true;
  }
  if (!res.found()) {
    ctx.out.Integer(0);
    return true;
  }
  const uint64_t wanted = ctx.cmd.expire_at[0];
  if (ctx.cmd.phase == kReadForLtXx) {
    // XX: a key without expiry is left alone; else LT decides in the store.
    if (res.expire_at == kNoExpiry) {
      ctx.out.Integer(0);
      return true;
    }
    ctx.cmd.phase = kApplyLtXx;
    ctx.cmd.i64 = static_cast<int64_t>(ExpireCondition::kIfLess);
    ctx.OpExpire(ctx.arg(1), wanted, ExpireCondition::kIfLess);
    return false;
  }
  const auto condition = static_cast<ExpireCondition>(ctx.cmd.i64);
  ctx.out.Integer(ExpireConditionHolds(condition, res.expire_at, wanted) ? 1 : 0);
  return true;
}

// --- TTL / PTTL / EXPIRETIME / PEXPIRETIME key
// -2: no such key; -1: no expiry. TTL rounds to the nearest second, as Redis.
void Ttl(CommandContext& ctx) {
  if (HoldsCollection(ctx, ctx.arg(1))) return ctx.out.Integer(-1);  // lists and sets have no TTL
  ctx.OpGet(ctx.arg(1));
}
bool TtlFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (ReadFailed(ctx, res)) return true;
  if (!res.found()) {
    ctx.out.Integer(-2);
    return true;
  }
  if (res.expire_at == kNoExpiry) {
    ctx.out.Integer(-1);
    return true;
  }
  const std::string_view name = ctx.cmd.spec->name;
  const bool ms = name[0] == 'p';
  // expire-ats come from int64 times (expire_args.h): the casts are exact.
  const int64_t at = static_cast<int64_t>(res.expire_at);
  if (name.size() > 4 && name.substr(name.size() - 4) == "time") {  // [P]EXPIRETIME
    ctx.out.Integer(ms ? at : at / 1000);
    return true;
  }
  const uint64_t now = ctx.Now();
  int64_t ttl = res.expire_at > now ? static_cast<int64_t>(res.expire_at - now) : 0;
  ctx.out.Integer(ms ? ttl : (ttl + 500) / 1000);
  return true;
}

// --- PERSIST key: 1 when the key had an expiry and it was removed.
void Persist(CommandContext& ctx) {
  if (HoldsCollection(ctx, ctx.arg(1))) return ctx.out.Integer(0);  // no TTL to remove
  ctx.OpExpire(ctx.arg(1), kNoExpiry, ExpireCondition::kIfSet);
}
bool PersistFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (!res.succeeded()) ctx.StoreError(res);
  else ctx.out.Integer(res.found() && res.expire_at != kNoExpiry ? 1 : 0);
  return true;
}

}  // namespace cmd
}  // namespace kvcg::server
