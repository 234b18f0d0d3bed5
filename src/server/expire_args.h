// Parsing of Redis's expiry arguments — SET/GETEX's EX|PX|EXAT|PXAT|KEEPTTL|
// PERSIST options, the times of SETEX/PSETEX, and EXPIRE's time with its
// NX|XX|GT|LT flags — into the store's absolute expire-at (milliseconds since
// the Unix epoch, kvcg/batch.h).
//
// Why a file of its own: these rules are where Redis's replies are most
// particular (which option may follow which, which error wins, when a time
// is "invalid" rather than "not an integer") and where the arithmetic can
// overflow (seconds * 1000, now + ttl). Keeping them pure functions of their
// arguments and `now` lets tests/server/expire_args_test.cc check every edge
// without a server.
//
// Arithmetic never overflows: every product and sum is range-checked before
// it is computed, as Redis 7.0 checks it (getExpireMillisecondsOrReply,
// expireGenericCommand), so an argument Redis calls invalid is invalid here
// and nothing here is undefined behaviour.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvcg/batch.h"

namespace kvcg::server {

enum class TimeUnit : uint8_t { kSeconds, kMilliseconds };
enum class TimeBase : uint8_t { kRelative, kAbsolute };  // EX/PX vs EXAT/PXAT

// What a time argument parse can say (the caller formats the reply).
enum class TimeError : uint8_t {
  kNone,
  kNotInteger,   // "ERR value is not an integer or out of range"
  kInvalidTime,  // InvalidExpireTimeError(command)
};

// "ERR invalid expire time in '<command>' command" (Redis's
// addReplyErrorExpireTime; `command` lowercase, as Redis's fullname).
std::string InvalidExpireTimeError(std::string_view command);

// SET / SETEX / PSETEX / GETEX times (Redis's getExpireMillisecondsOrReply):
// an integer > 0; in seconds it must not pass INT64_MAX / 1000; a relative
// time must not pass INT64_MAX - now. On success *expire_at is the absolute
// time in ms, >= 1 (an absolute time may be in the past: the store then
// deletes the key at once).
TimeError ParseSetTime(std::string_view arg, TimeUnit unit, TimeBase base, uint64_t now, uint64_t* expire_at);

// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT times (Redis's expireGenericCommand):
// any integer, negative included; in seconds it must lie in
// [INT64_MIN / 1000, INT64_MAX / 1000]; the absolute result must not pass
// INT64_MAX. *when_ms is the absolute time in ms and may be zero or negative
// (a time in the past).
TimeError ParseExpireTime(std::string_view arg, TimeUnit unit, TimeBase base, uint64_t now, int64_t* when_ms);

// The store's expire-at for an EXPIRE time from ParseExpireTime: the time
// itself, or 1 (the epoch's first millisecond, long past) for a time <= 0 —
// the store deletes a key whose expire-at is past, and kNoExpiry (0) would
// mean "persistent" instead. ExpireConditionHolds gives the same answer for
// 1 as Redis gives for the negative time (GT fails, LT holds).
inline uint64_t StoreExpireAt(int64_t when_ms) { return when_ms <= 0 ? 1 : static_cast<uint64_t>(when_ms); }

// EXPIRE's optional flags (args[0..n) are the arguments after the time).
// Returns "" with *out set, or the complete error reply: "ERR Unsupported
// option <arg>" for the first unknown word (checked before conflicts, as
// Redis does), then "ERR NX and XX, GT or LT options at the same time are
// not compatible", then "ERR GT and LT options at the same time are not
// compatible". XX with GT or LT (allowed) is XX's check then GT/LT's: the
// store's single condition is GT/LT there, which implies XX for GT; for LT
// with XX the caller must also require an expiry (see ExpireFlags).
struct ExpireFlags {
  bool nx = false, xx = false, gt = false, lt = false;
  // The store's condition: GT/LT win over XX when both are given (GT implies
  // XX; "LT XX" is ExpireCondition::kIfLess plus requires_expiry).
  ExpireCondition condition() const;
  // "LT XX": LT alone would apply to a key without expiry, XX forbids it.
  bool requires_expiry() const { return xx && lt; }
};
std::string ParseExpireFlags(const std::string_view* args, size_t n, ExpireFlags* out);

// SET's and GETEX's options (Redis's parseExtendedStringArgumentsOrReply).
// For SET: NX, XX, GET, KEEPTTL, EX/PX/EXAT/PXAT <time>; for GETEX: PERSIST
// and EX/PX/EXAT/PXAT <time>. Expiry options exclude each other (but the
// same one may repeat, the last time winning, as in Redis); NX excludes XX.
// A time option without a following argument, an unknown word or a
// conflict: false (the caller replies "ERR syntax error").
struct StringOptions {
  bool nx = false, xx = false, get = false, keepttl = false, persist = false;
  bool has_time = false;
  TimeUnit unit = TimeUnit::kSeconds;
  TimeBase base = TimeBase::kRelative;
  std::string_view time;  // the time argument, when has_time
};
bool ParseStringOptions(const std::string_view* args, size_t n, bool getex, StringOptions* out);

}  // namespace kvcg::server
