// String and generic keyspace commands over the store's GET/PUT/DELETE/CAS.
//
// Plain reads and writes are one store operation each. Read-modify-write
// commands (SET NX/XX, SETNX, APPEND, INCR*, DECR*, INCRBYFLOAT) are
// compare-and-swap loops (cmd_rmw.h), which makes each atomic per key
// without locks: the first attempt is usually a CAS "only if absent" with
// the value the command would store on an absent key (so INCR on a new key
// is one round); a CAS that finds the key, or loses a race, is re-issued
// from the value it returned.
//
// A key holding a list or set (cmd_types.h): reads and read-modify-writes
// answer WRONGTYPE, MGET answers nil for it (the store does not hold it),
// MSET replaces it, SETNX counts it as existing, DEL/EXISTS count it.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "server/cmd_common.h"
#include "server/cmd_rmw.h"
#include "server/cmd_types.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/io_thread.h"
#include "server/resp_parser.h"

namespace kvcg::server::cmd {

namespace {

// Redis's getLongDoubleFromObject.
bool ParseLongDouble(std::string_view s, long double* out) {
  // Redis's string2ld copies into a MAX_LONG_DOUBLE_CHARS (5 KiB) buffer
  // with its terminator: 5120 bytes or more are not a number. The whole
  // string must be the number: "1\0" (e.g. after SETRANGE) is not one.
  char buf[5 * 1024];
  if (s.empty() || s.size() >= sizeof(buf)) return false;
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  if (std::isspace(static_cast<unsigned char>(buf[0]))) return false;
  char* end = nullptr;
  errno = 0;
  long double v = std::strtold(buf, &end);
  if (end != buf + s.size() || std::isnan(v)) return false;
  if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || std::fpclassify(v) == FP_ZERO)) return false;
  *out = v;
  return true;
}

// Redis's ld2string(LD_STR_HUMAN): %.17Lf without trailing zeros.
std::string FormatLongDouble(long double v) {
  char buf[5 * 1024 + 64];
  int n = std::snprintf(buf, sizeof(buf), "%.17Lf", v);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return "0";
  std::string s(buf, static_cast<size_t>(n));
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

// An integer's decimal text in a stack buffer: the batch copies the bytes,
// so INCR needs no heap string for the value it stores.
class IntText {
 public:
  explicit IntText(int64_t v) { n_ = static_cast<size_t>(std::to_chars(buf_, buf_ + sizeof(buf_), v).ptr - buf_); }
  operator std::string_view() const { return {buf_, n_}; }

 private:
  char buf_[24];
  size_t n_;
};

}  // namespace

// --- GET key
void Get(CommandContext& ctx) {
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.OpGet(ctx.arg(1));
}
bool GetFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  CountKeyspaceHit(ctx, res);
  if (res.found()) ctx.out.Bulk(res.value);  // from the store's memory into the reply
  else if (res.code == Code::kNotFound) ctx.out.Null();
  else ctx.StoreError(res);
  return true;
}

// SET (with its expiry options), SETEX, PSETEX, GETEX: cmd_expire.cc.

// --- SETNX key value
void SetNx(CommandContext& ctx) {
  if (HoldsCollection(ctx, ctx.arg(1))) return ctx.out.Integer(0);
  CasAbsent(ctx, ctx.arg(1), ctx.arg(2));
}
bool SetNxFinish(CommandContext& ctx, ResultSpan r) {
  if (!r[0].succeeded()) ctx.StoreError(r[0]);
  else ctx.out.Integer(CasStored(ctx.cmd, r[0]) ? 1 : 0);
  return true;
}

// --- GETSET key value: PUT returns the previous value.
void GetSet(CommandContext& ctx) {
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.OpPut(ctx.arg(1), ctx.arg(2));
}
bool GetSetFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (res.found()) ctx.out.Bulk(res.value);
  else if (res.code == Code::kNotFound) ctx.out.Null();
  else ctx.StoreError(res);
  return true;
}

// --- GETDEL key: DELETE returns the previous value.
void GetDel(CommandContext& ctx) {
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.OpDelete(ctx.arg(1));
}
bool GetDelFinish(CommandContext& ctx, ResultSpan r) { return GetSetFinish(ctx, r); }

// --- MGET key [key ...]
void MGet(CommandContext& ctx) {
  for (size_t i = 1; i < ctx.argc(); ++i) ctx.OpGet(ctx.arg(i));
}
bool MGetFinish(CommandContext& ctx, ResultSpan r) {
  for (OpResultView x : r) {
    if (!x.succeeded()) {
      ctx.StoreError(x);
      return true;
    }
  }
  ctx.out.ArrayHeader(r.size());
  for (OpResultView x : r) {
    CountKeyspaceHit(ctx, x);
    if (x.found()) ctx.out.Bulk(x.value);
    else ctx.out.Null();
  }
  return true;
}

// --- MSET key value [key value ...]: elementwise, not atomic across keys.
void MSet(CommandContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.Error("ERR wrong number of arguments for 'mset' command");
    return;
  }
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    DropCollection(ctx, ctx.arg(i));
    ctx.OpPut(ctx.arg(i), ctx.arg(i + 1));
  }
}
bool MSetFinish(CommandContext& ctx, ResultSpan r) {
  for (OpResultView x : r) {
    if (!x.succeeded()) {
      ctx.StoreError(x);
      return true;
    }
  }
  ctx.out.Ok();
  return true;
}

// --- DEL / UNLINK key [key ...]
// cmd.i64: the lists and sets removed (EXISTS: found), counted in start().
// Their keys still get a store DELETE: a key the store holds too (a race,
// collections.h) goes from both places.
void Del(CommandContext& ctx) {
  CollectionKeyspace& coll = ctx.server.collections();
  const bool active = coll.active();
  for (size_t i = 1; i < ctx.argc(); ++i) {
    if (active) ctx.cmd.i64 += coll.Erase(ctx.arg(i));
    ctx.OpDelete(ctx.arg(i));
  }
}
bool DelFinish(CommandContext& ctx, ResultSpan r) {
  int64_t n = ctx.cmd.i64;
  for (OpResultView x : r) {
    if (!x.succeeded()) {
      ctx.StoreError(x);
      return true;
    }
    n += x.found();
  }
  ctx.out.Integer(n);
  return true;
}

// --- EXISTS key [key ...]: counts repeated keys repeatedly, as Redis does.
// A key in both places (a race) counts once.
void Exists(CommandContext& ctx) {
  CollectionKeyspace& coll = ctx.server.collections();
  if (!coll.active()) return MGet(ctx);
  for (size_t i = 1; i < ctx.argc(); ++i) {
    if (coll.Contains(ctx.arg(i))) ++ctx.cmd.i64;
    else ctx.OpGet(ctx.arg(i));
  }
  if (ctx.cmd.op_count == 0) ctx.out.Integer(ctx.cmd.i64);  // only collections: answered here
}
bool ExistsFinish(CommandContext& ctx, ResultSpan r) { return DelFinish(ctx, r); }

// --- STRLEN key
void StrLen(CommandContext& ctx) {
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.OpGet(ctx.arg(1));
}
bool StrLenFinish(CommandContext& ctx, ResultSpan r) {
  if (!r[0].succeeded()) ctx.StoreError(r[0]);
  else ctx.out.Integer(static_cast<int64_t>(r[0].value.size()));
  return true;
}

// --- APPEND key value
void Append(CommandContext& ctx) {
  if (WrongType(ctx, ctx.arg(1))) return;
  CasAbsent(ctx, ctx.arg(1), ctx.arg(2));
}
bool AppendFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  std::string_view key = ctx.arg(1), suffix = ctx.arg(2);
  if (!res.succeeded()) {
    ctx.StoreError(res);
    return true;
  }
  if (CasStored(ctx.cmd, res)) {
    size_t before = ctx.cmd.phase == kPhaseAbsent ? 0 : ctx.cmd.scratch.size();
    ctx.out.Integer(static_cast<int64_t>(before + suffix.size()));
    return true;
  }
  if (!res.found()) {
    CasAbsent(ctx, key, suffix);  // deleted meanwhile
    return false;
  }
  if (res.value.size() + suffix.size() > ctx.loop.settings().proto_max_bulk_len) {
    ctx.Error(kErrTooBig);
    return true;
  }
  std::string desired;
  desired.reserve(res.value.size() + suffix.size());
  desired.append(res.value).append(suffix);
  CasFrom(ctx, key, res.value, desired);
  return false;
}

// --- INCR / DECR / INCRBY / DECRBY
void IncrBy(CommandContext& ctx) {
  std::string_view name = ctx.cmd.spec->name;
  int64_t delta = 1;
  if (name == "decr") {
    delta = -1;
  } else if (name == "incrby" || name == "decrby") {
    if (!ParseInt64(ctx.arg(2), &delta)) {
      ctx.Error(kErrNotInteger);
      return;
    }
    if (name == "decrby") {
      if (delta == INT64_MIN) {
        ctx.Error("ERR decrement would overflow");
        return;
      }
      delta = -delta;
    }
  }
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.cmd.i64 = delta;
  CasAbsent(ctx, ctx.arg(1), IntText(delta));
}

bool IncrByFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  int64_t delta = ctx.cmd.i64;
  if (!res.succeeded()) {
    ctx.StoreError(res);
    return true;
  }
  if (CasStored(ctx.cmd, res)) {
    int64_t before = 0;
    if (ctx.cmd.phase == kPhaseEqual) ParseInt64(ctx.cmd.scratch, &before);  // validated when it was issued
    ctx.out.Integer(before + delta);
    return true;
  }
  if (!res.found()) {
    CasAbsent(ctx, ctx.arg(1), IntText(delta));
    return false;
  }
  int64_t current;
  if (!ParseInt64(res.value, &current)) {
    ctx.Error(kErrNotInteger);
    return true;
  }
  if ((delta < 0 && current < 0 && delta < INT64_MIN - current) ||
      (delta > 0 && current > 0 && delta > INT64_MAX - current)) {
    ctx.Error(kErrOverflow);
    return true;
  }
  CasFrom(ctx, ctx.arg(1), res.value, IntText(current + delta));
  return false;
}

// --- INCRBYFLOAT key increment
// As Redis: the key's value is parsed before the sum is checked, so a key
// holding "abc" answers "not a valid float" even for an increment of "inf".
// An infinite increment can never store, so it only reads the key (never a
// CAS that would store "inf" on an absent key).
void IncrByFloat(CommandContext& ctx) {
  long double incr;
  if (!ParseLongDouble(ctx.arg(2), &incr)) {
    ctx.Error(kErrNotFloat);
    return;
  }
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.cmd.ld = incr;
  if (std::isinf(incr)) ReadFirst(ctx, ctx.arg(1));
  else CasAbsent(ctx, ctx.arg(1), FormatLongDouble(incr));
}

bool IncrByFloatFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  switch (RmwOutcome(ctx, res)) {
    case Rmw::kError:
      return true;
    case Rmw::kStored: {
      // The value stored is the one we computed; recompute it from what it replaced.
      long double before = 0;
      if (ctx.cmd.phase == kPhaseEqual) ParseLongDouble(ctx.cmd.scratch, &before);
      ctx.out.Bulk(FormatLongDouble(before + ctx.cmd.ld));
      return true;
    }
    case Rmw::kCurrent:
      break;
  }
  long double current = 0;
  if (res.found() && !ParseLongDouble(res.value, &current)) {
    ctx.Error(kErrNotFloat);
    return true;
  }
  long double next = current + ctx.cmd.ld;
  if (std::isnan(next) || std::isinf(next)) {
    ctx.Error("ERR increment would produce NaN or Infinity");
    return true;
  }
  if (res.found()) CasFrom(ctx, ctx.arg(1), res.value, FormatLongDouble(next));
  else CasAbsent(ctx, ctx.arg(1), FormatLongDouble(next));  // absent, or deleted meanwhile
  return false;
}

}  // namespace kvcg::server::cmd
