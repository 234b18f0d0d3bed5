// libFuzzer target for the expiry argument parsing (src/server/expire_args.cc):
// issue 13 asks that TTL parsing never overflows. Built with ASan + UBSan and
// -fno-sanitize-recover, so a signed overflow anywhere in the parsing aborts.
//
// Input: 8 bytes of clock (ms since the epoch, any value, past INT64_MAX
// included), one selector byte, then NUL-separated arguments. Checked
// against exact 128-bit arithmetic (abort = finding):
//   ParseSetTime    success <=> the value is an integer > 0 whose absolute
//                   time in ms fits int64 (Redis's rules), and then
//                   expire_at equals that time (>= 1);
//   ParseExpireTime success <=> the value is an integer whose absolute time
//                   in ms fits int64 (seconds within INT64 / 1000), and then
//                   when_ms equals it;
//   ParseExpireFlags / ParseStringOptions: never crash; on success the
//                   flags they report are consistent (no NX with XX, one
//                   time option, the time argument is one of the inputs).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "server/expire_args.h"
#include "server/resp_parser.h"

using namespace kvcg::server;

namespace {

using i128 = __int128;
constexpr i128 kMax = INT64_MAX;
constexpr i128 kMin = INT64_MIN;

i128 SignedNow(uint64_t now) { return now > uint64_t(INT64_MAX) ? kMax : i128(now); }

void CheckSetTime(std::string_view arg, TimeUnit unit, TimeBase base, uint64_t now) {
  uint64_t at = 0;
  const TimeError e = ParseSetTime(arg, unit, base, now, &at);
  int64_t v = 0;
  const bool integer = ParseInt64(arg, &v);
  if (!integer) {
    if (e != TimeError::kNotInteger) abort();
    return;
  }
  bool valid = v > 0;
  i128 ms = v;
  if (unit == TimeUnit::kSeconds) {
    if (i128(v) > kMax / 1000) valid = false;
    ms = i128(v) * 1000;
  }
  if (base == TimeBase::kRelative) {
    if (ms > kMax - SignedNow(now)) valid = false;
    ms += SignedNow(now);
  }
  if (valid != (e == TimeError::kNone)) abort();
  if (!valid && e != TimeError::kInvalidTime) abort();
  if (valid && (i128(at) != ms || at < 1)) abort();
}

void CheckExpireTime(std::string_view arg, TimeUnit unit, TimeBase base, uint64_t now) {
  int64_t when = 0;
  const TimeError e = ParseExpireTime(arg, unit, base, now, &when);
  int64_t v = 0;
  if (!ParseInt64(arg, &v)) {
    if (e != TimeError::kNotInteger) abort();
    return;
  }
  bool valid = true;
  i128 ms = v;
  if (unit == TimeUnit::kSeconds) {
    if (i128(v) > kMax / 1000 || i128(v) < kMin / 1000) valid = false;
    ms = i128(v) * 1000;
  }
  if (base == TimeBase::kRelative) ms += SignedNow(now);
  if (ms > kMax) valid = false;
  if (valid != (e == TimeError::kNone)) abort();
  if (!valid && e != TimeError::kInvalidTime) abort();
  if (valid && i128(when) != ms) abort();
  if (valid && StoreExpireAt(when) == kvcg::kNoExpiry) abort();  // a past time must not mean "persistent"
}

void CheckFlags(const std::vector<std::string_view>& args) {
  ExpireFlags f;
  const std::string err = ParseExpireFlags(args.data(), args.size(), &f);
  if (!err.empty()) return;
  if (f.nx && (f.xx || f.gt || f.lt)) abort();
  if (f.gt && f.lt) abort();
}

void CheckStringOptions(const std::vector<std::string_view>& args, bool getex) {
  StringOptions o;
  if (!ParseStringOptions(args.data(), args.size(), getex, &o)) return;
  if (o.nx && o.xx) abort();
  if (int(o.keepttl) + int(o.persist) + int(o.has_time) > 1) abort();
  if (getex && (o.nx || o.xx || o.get || o.keepttl)) abort();
  if (!getex && o.persist) abort();
  if (o.has_time) {
    bool found = false;
    for (std::string_view a : args) found = found || (a.data() == o.time.data() && a.size() == o.time.size());
    if (!found) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  uint64_t now = 0;
  std::memcpy(&now, data, 8);
  const uint8_t selector = data[8];
  const std::string_view rest(reinterpret_cast<const char*>(data + 9), size - 9);
  std::vector<std::string_view> args;
  for (size_t start = 0; start <= rest.size();) {
    const size_t end = rest.find('\0', start);
    const size_t stop = end == std::string_view::npos ? rest.size() : end;
    args.push_back(rest.substr(start, stop - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  const TimeUnit unit = (selector & 1) ? TimeUnit::kMilliseconds : TimeUnit::kSeconds;
  const TimeBase base = (selector & 2) ? TimeBase::kAbsolute : TimeBase::kRelative;
  for (std::string_view a : args) {
    CheckSetTime(a, unit, base, now);
    CheckExpireTime(a, unit, base, now);
  }
  CheckFlags(args);
  CheckStringOptions(args, (selector & 4) != 0);
  return 0;
}
