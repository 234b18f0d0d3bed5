// Expiry argument parsing; see expire_args.h for the rules and why they live
// apart. Every check below mirrors a line of Redis 7.0's t_string.c /
// expire.c, in the same order, so that the same input gets the same error.
#include "server/expire_args.h"

#include <cstdint>

#include "server/resp_parser.h"

namespace kvcg::server {

namespace {

constexpr int64_t kMax = INT64_MAX;
constexpr int64_t kMin = INT64_MIN;

// The clock as a signed time; a clock past INT64_MAX (not a real date) is
// clamped so that the checks below stay exact.
int64_t SignedNow(uint64_t now) { return now > static_cast<uint64_t>(kMax) ? kMax : static_cast<int64_t>(now); }

bool IsWord(std::string_view a, const char* w) { return EqualsIgnoreCase(a, w); }

}  // namespace

std::string InvalidExpireTimeError(std::string_view command) {
  std::string e = "ERR invalid expire time in '";
  e.append(command);
  e.append("' command");
  return e;
}

TimeError ParseSetTime(std::string_view arg, TimeUnit unit, TimeBase base, uint64_t now, uint64_t* expire_at) {
  int64_t ms;
  if (!ParseInt64(arg, &ms)) return TimeError::kNotInteger;
  // Negative or zero, or a product that would overflow.
  if (ms <= 0 || (unit == TimeUnit::kSeconds && ms > kMax / 1000)) return TimeError::kInvalidTime;
  if (unit == TimeUnit::kSeconds) ms *= 1000;
  if (base == TimeBase::kRelative) {
    // Redis adds first and then tests for a wrap to <= 0; checking before
    // adding answers the same without the signed overflow.
    const int64_t n = SignedNow(now);
    if (ms > kMax - n) return TimeError::kInvalidTime;
    ms += n;
  }
  *expire_at = static_cast<uint64_t>(ms);  // > 0 here
  return TimeError::kNone;
}

TimeError ParseExpireTime(std::string_view arg, TimeUnit unit, TimeBase base, uint64_t now, int64_t* when_ms) {
  int64_t when;
  if (!ParseInt64(arg, &when)) return TimeError::kNotInteger;
  if (unit == TimeUnit::kSeconds) {
    if (when > kMax / 1000 || when < kMin / 1000) return TimeError::kInvalidTime;
    when *= 1000;
  }
  // basetime is 0 for EXPIREAT/PEXPIREAT and now (>= 0) otherwise, so only
  // the upper bound can be passed.
  const int64_t basetime = base == TimeBase::kRelative ? SignedNow(now) : 0;
  if (when > kMax - basetime) return TimeError::kInvalidTime;
  *when_ms = when + basetime;
  return TimeError::kNone;
}

ExpireCondition ExpireFlags::condition() const {
  if (nx) return ExpireCondition::kIfNone;
  if (gt) return ExpireCondition::kIfGreater;
  if (lt) return ExpireCondition::kIfLess;
  if (xx) return ExpireCondition::kIfSet;
  return ExpireCondition::kAlways;
}

std::string ParseExpireFlags(const std::string_view* args, size_t n, ExpireFlags* out) {
  ExpireFlags f;
  for (size_t i = 0; i < n; ++i) {
    if (IsWord(args[i], "nx")) f.nx = true;
    else if (IsWord(args[i], "xx")) f.xx = true;
    else if (IsWord(args[i], "gt")) f.gt = true;
    else if (IsWord(args[i], "lt")) f.lt = true;
    else return "ERR Unsupported option " + std::string(args[i]);
  }
  if (f.nx && (f.xx || f.gt || f.lt)) return "ERR NX and XX, GT or LT options at the same time are not compatible";
  if (f.gt && f.lt) return "ERR GT and LT options at the same time are not compatible";
  *out = f;
  return "";
}

bool ParseStringOptions(const std::string_view* args, size_t n, bool getex, StringOptions* out) {
  StringOptions o;
  // Which expiry option was given (Redis's OBJ_EX/PX/EXAT/PXAT bits): the
  // same one may repeat, a different one is a syntax error.
  int which = 0;  // 0 none, 1 EX, 2 PX, 3 EXAT, 4 PXAT
  for (size_t i = 0; i < n; ++i) {
    const std::string_view a = args[i];
    const bool has_next = i + 1 < n;
    int time_option = 0;
    if (IsWord(a, "ex")) time_option = 1;
    else if (IsWord(a, "px")) time_option = 2;
    else if (IsWord(a, "exat")) time_option = 3;
    else if (IsWord(a, "pxat")) time_option = 4;

    if (!getex && IsWord(a, "nx") && !o.xx) {
      o.nx = true;
    } else if (!getex && IsWord(a, "xx") && !o.nx) {
      o.xx = true;
    } else if (!getex && IsWord(a, "get")) {
      o.get = true;
    } else if (!getex && IsWord(a, "keepttl") && which == 0) {
      o.keepttl = true;
    } else if (getex && IsWord(a, "persist") && which == 0) {
      o.persist = true;
    } else if (time_option != 0 && !o.keepttl && !o.persist && (which == 0 || which == time_option) && has_next) {
      which = time_option;
      o.has_time = true;
      o.unit = (time_option == 1 || time_option == 3) ? TimeUnit::kSeconds : TimeUnit::kMilliseconds;
      o.base = time_option <= 2 ? TimeBase::kRelative : TimeBase::kAbsolute;
      o.time = args[++i];
    } else {
      return false;
    }
  }
  *out = o;
  return true;
}

}  // namespace kvcg::server
