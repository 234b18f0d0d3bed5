// Byte ranges of a string value: SETRANGE, GETRANGE and its old name SUBSTR.
//
// GETRANGE is one store GET and Redis's index arithmetic on the value it
// returns. SETRANGE is a read-modify-write (cmd_rmw.h): the new value is the
// old one, grown with zero bytes to offset + len(value) when shorter, with
// `value` copied in at `offset`; a CAS stores it only if the key still holds
// what it was computed from, so concurrent SETRANGEs and APPENDs on one key
// never lose each other's bytes. A SETRANGE that would create a large value
// (over kEagerCreateBytes) reads the key first instead of building a padded
// value that is discarded when the key exists.
//
// Order of checks and error texts follow Redis 7.0's t_string.c: the offset
// is validated before the key is looked at, an empty value never writes (and
// answers the current length, 0 for a missing key, whatever the offset), and
// a result over proto-max-bulk-len is refused.
#include <algorithm>
#include <cstdint>
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

// `old` grown with zeros to at least offset + patch.size(), then `patch`
// written at `offset`.
std::string Patched(std::string_view old, uint64_t offset, std::string_view patch) {
  std::string out;
  size_t size = std::max<size_t>(old.size(), offset + patch.size());
  out.reserve(size);
  out.assign(old);
  out.resize(size, '\0');
  out.replace(offset, patch.size(), patch);
  return out;
}

}  // namespace

// --- SETRANGE key offset value
// cmd.i64 holds the offset.
void SetRange(CommandContext& ctx) {
  int64_t offset;
  if (!ParseInt64(ctx.arg(2), &offset)) {
    ctx.Error(kErrNotInteger);
    return;
  }
  if (offset < 0) {
    ctx.Error("ERR offset is out of range");
    return;
  }
  if (WrongType(ctx, ctx.arg(1))) return;  // before the length checks, as Redis
  ctx.cmd.i64 = offset;
  std::string_view key = ctx.arg(1), value = ctx.arg(3);
  if (value.empty()) {
    ReadFirst(ctx, key);  // answers the current length, writes nothing
    return;
  }
  // Redis's checkStringLength: offset + len, overflow included.
  uint64_t total = static_cast<uint64_t>(offset) + value.size();
  if (total > ctx.loop.settings().proto_max_bulk_len || total < static_cast<uint64_t>(offset)) {
    ctx.Error(kErrTooBig);
    return;
  }
  if (total <= kEagerCreateBytes) CasAbsent(ctx, key, Patched({}, static_cast<uint64_t>(offset), value));
  else ReadFirst(ctx, key);
}

bool SetRangeFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  const uint64_t offset = static_cast<uint64_t>(ctx.cmd.i64);
  std::string_view key = ctx.arg(1), value = ctx.arg(3);
  switch (RmwOutcome(ctx, res)) {
    case Rmw::kError:
      return true;
    case Rmw::kStored: {
      size_t before = ctx.cmd.phase == kPhaseEqual ? ctx.cmd.scratch.size() : 0;
      ctx.out.Integer(static_cast<int64_t>(std::max<uint64_t>(before, offset + value.size())));
      return true;
    }
    case Rmw::kCurrent:
      break;
  }
  if (value.empty()) {
    ctx.out.Integer(res.found() ? static_cast<int64_t>(res.value.size()) : 0);
    return true;
  }
  if (!res.found()) {
    CasAbsent(ctx, key, Patched({}, offset, value));
    return false;
  }
  // Equal bytes already in place: nothing to write (Redis would rewrite the
  // same bytes; no observable difference).
  if (offset + value.size() <= res.value.size() && res.value.substr(offset, value.size()) == value) {
    ctx.out.Integer(static_cast<int64_t>(res.value.size()));
    return true;
  }
  CasFrom(ctx, key, res.value, Patched(res.value, offset, value));
  return false;
}

// --- GETRANGE key start end, SUBSTR key start end
// Redis 7.0's getrangeCommand: both indexes parsed first (errors even for a
// missing key), a missing key is "", negative indexes count from the end,
// and a range that is empty after clamping is "".
void GetRange(CommandContext& ctx) {
  int64_t start, end;
  if (!ParseInt64(ctx.arg(2), &start) || !ParseInt64(ctx.arg(3), &end)) {
    ctx.Error(kErrNotInteger);
    return;
  }
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.OpGet(ctx.arg(1));
}

bool GetRangeFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (ReadFailed(ctx, res)) return true;
  int64_t start = 0, end = 0;
  ParseInt64(ctx.arg(2), &start);  // validated in GetRange
  ParseInt64(ctx.arg(3), &end);
  const int64_t len = static_cast<int64_t>(res.value.size());  // "" when missing
  if (start < 0 && end < 0 && start > end) {
    ctx.out.Bulk("");
    return true;
  }
  if (start < 0) start = len + start;
  if (end < 0) end = len + end;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (len == 0 || start > end) ctx.out.Bulk("");
  else ctx.out.Bulk(res.value.substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
  return true;
}

}  // namespace kvcg::server::cmd
