// Bitmap commands over string values: SETBIT, GETBIT, BITCOUNT, BITPOS.
//
// Bits are numbered as in Redis: bit 0 is the most significant bit of byte
// 0. GETBIT, BITCOUNT and BITPOS are one store GET and arithmetic on the
// value it returns. SETBIT is a read-modify-write (cmd_rmw.h): the value,
// grown with zero bytes to cover the bit, is CASed in only if the key still
// holds what it was computed from; a SETBIT that changes nothing (the bit
// already has that value inside the string) answers without writing. A
// SETBIT that would create a large value reads the key first (see SETRANGE).
//
// Argument checks, their order and error texts are Redis 7.0's bitops.c,
// including its quirks: BITCOUNT looks at the key before parsing anything
// else (a missing key answers 0 even with bad arguments), BITPOS parses its
// bit argument first and then answers a missing key at once; a bit offset
// must be below proto-max-bulk-len * 8.
#include <algorithm>
#include <cstdint>
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

constexpr const char* kErrBitOffset = "ERR bit offset is not an integer or out of range";
constexpr const char* kErrBitValue = "ERR bit is not an integer or out of range";

// Redis's getBitOffsetFromArgument (without the "#" form, which only
// BITFIELD takes): the argument up to its first NUL byte (Redis reads it as
// a C string) must be a strict decimal in [0, proto-max-bulk-len * 8).
bool ParseBitOffset(CommandContext& ctx, std::string_view arg, uint64_t* out) {
  size_t nul = arg.find('\0');
  if (nul != std::string_view::npos) arg = arg.substr(0, nul);
  int64_t v;
  if (!ParseInt64(arg, &v) || v < 0 || (static_cast<uint64_t>(v) >> 3) >= ctx.loop.settings().proto_max_bulk_len) {
    ctx.Error(kErrBitOffset);
    return false;
  }
  *out = static_cast<uint64_t>(v);
  return true;
}

int BitAt(std::string_view s, uint64_t bit) {
  uint64_t byte = bit >> 3;
  if (byte >= s.size()) return 0;
  return (static_cast<unsigned char>(s[byte]) >> (7 - (bit & 7))) & 1;
}

// `old` grown with zeros to cover `bit`, with that bit set to `on`.
std::string WithBit(std::string_view old, uint64_t bit, int on) {
  uint64_t byte = bit >> 3;
  std::string out;
  size_t size = std::max<size_t>(old.size(), byte + 1);
  out.reserve(size);
  out.assign(old);
  out.resize(size, '\0');
  unsigned char mask = static_cast<unsigned char>(1u << (7 - (bit & 7)));
  unsigned char b = static_cast<unsigned char>(out[byte]);
  out[byte] = static_cast<char>(on ? (b | mask) : (b & ~mask));
  return out;
}

int64_t Popcount(const unsigned char* p, size_t n) {
  int64_t count = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    count += __builtin_popcountll(w);
  }
  for (; i < n; ++i) count += __builtin_popcount(p[i]);
  return count;
}

// Set bits of s in the bit range [first, last] (inclusive, within s).
int64_t CountBits(std::string_view s, uint64_t first, uint64_t last) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  uint64_t first_byte = first >> 3, last_byte = last >> 3;
  int64_t count = Popcount(p + first_byte, last_byte - first_byte + 1);
  // Take away the bits of the edge bytes outside the range.
  count -= __builtin_popcount(p[first_byte] & ~(0xFFu >> (first & 7)) & 0xFFu);
  count -= __builtin_popcount(p[last_byte] & ((1u << (7 - (last & 7))) - 1));
  return count;
}

// First bit equal to `bit` in the bit range [first, last] of s, or -1.
int64_t FindBit(std::string_view s, uint64_t first, uint64_t last, int bit) {
  uint64_t i = first;
  for (; i <= last && (i & 7) != 0; ++i) {  // the partial first byte
    if (BitAt(s, i) == bit) return static_cast<int64_t>(i);
  }
  if (i > last) return -1;
  // Bytes [byte, whole_end) lie wholly in the range: skip those without a
  // candidate a word, then a byte, at a time.
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char skip_byte = bit ? 0x00 : 0xFF;
  const uint64_t skip_word = bit ? 0 : ~uint64_t(0);
  uint64_t byte = i >> 3;
  const uint64_t whole_end = (last + 1) >> 3;
  for (uint64_t w; byte + 8 <= whole_end; byte += 8) {
    std::memcpy(&w, p + byte, 8);
    if (w != skip_word) break;
  }
  while (byte < whole_end && p[byte] == skip_byte) ++byte;
  if (byte < whole_end) {
    for (int b = 0; b < 8; ++b) {
      if (((p[byte] >> (7 - b)) & 1) == bit) return static_cast<int64_t>(byte * 8 + b);
    }
  }
  for (i = whole_end * 8; i <= last; ++i) {  // the partial last byte
    if (BitAt(s, i) == bit) return static_cast<int64_t>(i);
  }
  return -1;
}

// Redis 7.0's range arithmetic for BITCOUNT/BITPOS: start/end in bytes (or
// bits), negative from the end, clamped into the string. On return [*first,
// *last] is the bit range to scan; false when it is empty.
bool ClampRange(int64_t start, int64_t end, int64_t strlen, bool isbit, uint64_t* first, uint64_t* last) {
  int64_t total = isbit ? strlen * 8 : strlen;
  if (start < 0) start = total + start;
  if (end < 0) end = total + end;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= total) end = total - 1;
  if (start > end) return false;
  *first = isbit ? static_cast<uint64_t>(start) : static_cast<uint64_t>(start) * 8;
  *last = isbit ? static_cast<uint64_t>(end) : static_cast<uint64_t>(end) * 8 + 7;
  return true;
}

// "BYTE" / "BIT" (any case); false after replying a syntax error.
bool ParseUnit(CommandContext& ctx, std::string_view arg, bool* isbit) {
  if (EqualsIgnoreCase(arg, "bit")) *isbit = true;
  else if (EqualsIgnoreCase(arg, "byte")) *isbit = false;
  else {
    ctx.Error(kErrSyntax);
    return false;
  }
  return true;
}

}  // namespace

// --- SETBIT key offset value
// cmd.i64 holds the bit offset; the bit (0/1) is parsed again from the
// argument when needed.
void SetBit(CommandContext& ctx) {
  uint64_t bit;
  if (!ParseBitOffset(ctx, ctx.arg(2), &bit)) return;
  int64_t on;
  if (!ParseInt64(ctx.arg(3), &on) || (on & ~int64_t(1)) != 0) {
    ctx.Error(kErrBitValue);
    return;
  }
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.cmd.i64 = static_cast<int64_t>(bit);
  if ((bit >> 3) + 1 <= kEagerCreateBytes) CasAbsent(ctx, ctx.arg(1), WithBit({}, bit, static_cast<int>(on)));
  else ReadFirst(ctx, ctx.arg(1));
}

bool SetBitFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  const uint64_t bit = static_cast<uint64_t>(ctx.cmd.i64);
  int64_t on = 0;
  ParseInt64(ctx.arg(3), &on);  // validated in SetBit
  switch (RmwOutcome(ctx, res)) {
    case Rmw::kError:
      return true;
    case Rmw::kStored:
      // The reply is the bit's value before: 0 for a key we created.
      ctx.out.Integer(ctx.cmd.phase == kPhaseEqual ? BitAt(ctx.cmd.scratch, bit) : 0);
      return true;
    case Rmw::kCurrent:
      break;
  }
  if (!res.found()) {
    CasAbsent(ctx, ctx.arg(1), WithBit({}, bit, static_cast<int>(on)));
    return false;
  }
  int before = BitAt(res.value, bit);
  if ((bit >> 3) < res.value.size() && before == on) {
    ctx.out.Integer(before);  // nothing changes
    return true;
  }
  CasFrom(ctx, ctx.arg(1), res.value, WithBit(res.value, bit, static_cast<int>(on)));
  return false;
}

// --- GETBIT key offset
void GetBit(CommandContext& ctx) {
  uint64_t bit;
  if (!ParseBitOffset(ctx, ctx.arg(2), &bit)) return;
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.cmd.i64 = static_cast<int64_t>(bit);
  ctx.OpGet(ctx.arg(1));
}

bool GetBitFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (ReadFailed(ctx, res)) return true;
  ctx.out.Integer(res.found() ? BitAt(res.value, static_cast<uint64_t>(ctx.cmd.i64)) : 0);
  return true;
}

// --- BITCOUNT key [start end [BYTE|BIT]]
// Everything but the key is checked after the read (Redis 7.0's order).
void BitCount(CommandContext& ctx) {
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.OpGet(ctx.arg(1));
}

bool BitCountFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (ReadFailed(ctx, res)) return true;
  if (!res.found()) {
    ctx.out.Integer(0);
    return true;
  }
  const int64_t strlen = static_cast<int64_t>(res.value.size());
  uint64_t first = 0, last = 0;
  bool nonempty;
  if (ctx.argc() == 4 || ctx.argc() == 5) {
    int64_t start, end;
    if (!ParseInt64(ctx.arg(2), &start) || !ParseInt64(ctx.arg(3), &end)) {
      ctx.Error(kErrNotInteger);
      return true;
    }
    if (start < 0 && end < 0 && start > end) {  // before the unit is even looked at, as Redis
      ctx.out.Integer(0);
      return true;
    }
    bool isbit = false;
    if (ctx.argc() == 5 && !ParseUnit(ctx, ctx.arg(4), &isbit)) return true;
    nonempty = ClampRange(start, end, strlen, isbit, &first, &last);
  } else if (ctx.argc() == 2) {
    nonempty = strlen > 0;
    last = static_cast<uint64_t>(strlen) * 8 - 1;
  } else {
    ctx.Error(kErrSyntax);
    return true;
  }
  ctx.out.Integer(nonempty ? CountBits(res.value, first, last) : 0);
  return true;
}

// --- BITPOS key bit [start [end [BYTE|BIT]]]
// cmd.i64 holds the bit searched for.
void BitPos(CommandContext& ctx) {
  int64_t bit;
  if (!ParseInt64(ctx.arg(2), &bit)) {
    ctx.Error(kErrNotInteger);
    return;
  }
  if (bit != 0 && bit != 1) {
    ctx.Error("ERR The bit argument must be 1 or 0.");
    return;
  }
  if (WrongType(ctx, ctx.arg(1))) return;
  ctx.cmd.i64 = bit;
  ctx.OpGet(ctx.arg(1));
}

bool BitPosFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  const int bit = static_cast<int>(ctx.cmd.i64);
  if (ReadFailed(ctx, res)) return true;
  if (!res.found()) {
    // A missing key is an endless run of zeros.
    ctx.out.Integer(bit ? -1 : 0);
    return true;
  }
  const int64_t strlen = static_cast<int64_t>(res.value.size());
  uint64_t first = 0, last = 0;
  bool nonempty, end_given = false;
  if (ctx.argc() >= 4 && ctx.argc() <= 6) {
    int64_t start, end;
    if (!ParseInt64(ctx.arg(3), &start)) {
      ctx.Error(kErrNotInteger);
      return true;
    }
    bool isbit = false;
    if (ctx.argc() == 6 && !ParseUnit(ctx, ctx.arg(5), &isbit)) return true;
    if (ctx.argc() >= 5) {
      if (!ParseInt64(ctx.arg(4), &end)) {
        ctx.Error(kErrNotInteger);
        return true;
      }
      end_given = true;
    } else {
      end = strlen - 1;  // bytes: without an end, the unit is always BYTE
    }
    nonempty = ClampRange(start, end, strlen, isbit, &first, &last);
  } else if (ctx.argc() == 3) {
    nonempty = strlen > 0;
    last = static_cast<uint64_t>(strlen) * 8 - 1;
  } else {
    ctx.Error(kErrSyntax);
    return true;
  }
  if (!nonempty) {
    ctx.out.Integer(-1);  // an empty range holds neither a 0 nor a 1
    return true;
  }
  int64_t pos = FindBit(res.value, first, last, bit);
  // Looking for a 0 past the end of the string: without an explicit end the
  // string continues with zeros, so the answer is the first bit after the
  // range; with an explicit end there is none.
  if (pos < 0 && bit == 0 && !end_given) pos = static_cast<int64_t>(last) + 1;
  ctx.out.Integer(pos);
  return true;
}

}  // namespace kvcg::server::cmd
