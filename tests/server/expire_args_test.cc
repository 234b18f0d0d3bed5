// Unit tests of the expiry argument parsing (src/server/expire_args.h):
// Redis 7.0's acceptance rules and errors for SET/GETEX options, SETEX-style
// times and EXPIRE-style times, and — the point of doing it apart — the
// overflow edges of seconds * 1000 and now + ttl, checked exactly at the
// boundary (one less is accepted, the boundary itself is not).
#include "server/expire_args.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kvcg::server {
namespace {

constexpr int64_t kMax = INT64_MAX;
constexpr uint64_t kNow = 1'700'000'000'000;  // a fixed clock, ms

bool Opts(std::vector<std::string_view> words, bool getex, StringOptions* o) {
  return ParseStringOptions(words.data(), words.size(), getex, o);
}

std::string Flags(std::vector<std::string_view> words, ExpireFlags* f) {
  return ParseExpireFlags(words.data(), words.size(), f);
}

TEST(ExpireArgs, InvalidTimeErrorNamesTheCommand) {
  EXPECT_EQ(InvalidExpireTimeError("set"), "ERR invalid expire time in 'set' command");
  EXPECT_EQ(InvalidExpireTimeError("getex"), "ERR invalid expire time in 'getex' command");
}

TEST(ExpireArgs, SetTimeRelativeAndAbsolute) {
  uint64_t at = 0;
  EXPECT_EQ(ParseSetTime("10", TimeUnit::kSeconds, TimeBase::kRelative, kNow, &at), TimeError::kNone);
  EXPECT_EQ(at, kNow + 10'000);
  EXPECT_EQ(ParseSetTime("1500", TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &at), TimeError::kNone);
  EXPECT_EQ(at, kNow + 1500);
  EXPECT_EQ(ParseSetTime("1", TimeUnit::kSeconds, TimeBase::kAbsolute, kNow, &at), TimeError::kNone);
  EXPECT_EQ(at, 1000u);  // EXAT in the past is valid: the store deletes the key
  EXPECT_EQ(ParseSetTime("1", TimeUnit::kMilliseconds, TimeBase::kAbsolute, kNow, &at), TimeError::kNone);
  EXPECT_EQ(at, 1u);
}

TEST(ExpireArgs, SetTimeRejectsNonPositiveAndNonIntegers) {
  uint64_t at = 7;
  for (const char* bad : {"0", "-1", "-9999999999999999"}) {
    EXPECT_EQ(ParseSetTime(bad, TimeUnit::kSeconds, TimeBase::kRelative, kNow, &at), TimeError::kInvalidTime) << bad;
    EXPECT_EQ(ParseSetTime(bad, TimeUnit::kMilliseconds, TimeBase::kAbsolute, kNow, &at), TimeError::kInvalidTime)
        << bad;
  }
  for (const char* bad : {"", "1.5", "10s", " 1", "+1", "01", "9223372036854775808", "abc"}) {
    EXPECT_EQ(ParseSetTime(bad, TimeUnit::kSeconds, TimeBase::kRelative, kNow, &at), TimeError::kNotInteger) << bad;
  }
  EXPECT_EQ(at, 7u);  // untouched on error
}

TEST(ExpireArgs, SetTimeSecondsOverflowBoundary) {
  uint64_t at = 0;
  // INT64_MAX / 1000 seconds is the largest that converts; with EXAT it is
  // accepted, one more is not.
  const std::string limit = std::to_string(kMax / 1000);
  const std::string over = std::to_string(kMax / 1000 + 1);
  EXPECT_EQ(ParseSetTime(limit, TimeUnit::kSeconds, TimeBase::kAbsolute, kNow, &at), TimeError::kNone);
  EXPECT_EQ(at, static_cast<uint64_t>(kMax / 1000 * 1000));
  EXPECT_EQ(ParseSetTime(over, TimeUnit::kSeconds, TimeBase::kAbsolute, kNow, &at), TimeError::kInvalidTime);
  EXPECT_EQ(ParseSetTime("10000000000000000", TimeUnit::kSeconds, TimeBase::kRelative, kNow, &at),
            TimeError::kInvalidTime);  // Redis's test: SET EX with a big integer
}

TEST(ExpireArgs, SetTimeNowPlusTtlOverflowBoundary) {
  uint64_t at = 0;
  const int64_t room = kMax - static_cast<int64_t>(kNow);
  EXPECT_EQ(ParseSetTime(std::to_string(room), TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &at),
            TimeError::kNone);
  EXPECT_EQ(at, static_cast<uint64_t>(kMax));
  EXPECT_EQ(ParseSetTime(std::to_string(room + 1), TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &at),
            TimeError::kInvalidTime);
  EXPECT_EQ(ParseSetTime(std::to_string(kMax), TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &at),
            TimeError::kInvalidTime);
  // Seconds that convert but overflow once now is added.
  const int64_t secs = room / 1000 + 1;
  EXPECT_EQ(ParseSetTime(std::to_string(secs), TimeUnit::kSeconds, TimeBase::kRelative, kNow, &at),
            TimeError::kInvalidTime);
  EXPECT_EQ(ParseSetTime(std::to_string(secs - 1), TimeUnit::kSeconds, TimeBase::kRelative, kNow, &at),
            TimeError::kNone);
  // PXAT takes any positive ms, INT64_MAX included (no addition).
  EXPECT_EQ(ParseSetTime(std::to_string(kMax), TimeUnit::kMilliseconds, TimeBase::kAbsolute, kNow, &at),
            TimeError::kNone);
  EXPECT_EQ(at, static_cast<uint64_t>(kMax));
}

TEST(ExpireArgs, SetTimeWithAClockPastInt64) {
  uint64_t at = 0;
  // Not a real date, but must not overflow: every relative time is invalid.
  EXPECT_EQ(ParseSetTime("1", TimeUnit::kMilliseconds, TimeBase::kRelative, UINT64_MAX, &at),
            TimeError::kInvalidTime);
}

TEST(ExpireArgs, ExpireTimeAcceptsNegativeAndZero) {
  int64_t when = 0;
  EXPECT_EQ(ParseExpireTime("-10", TimeUnit::kSeconds, TimeBase::kRelative, kNow, &when), TimeError::kNone);
  EXPECT_EQ(when, static_cast<int64_t>(kNow) - 10'000);
  EXPECT_EQ(ParseExpireTime("0", TimeUnit::kSeconds, TimeBase::kAbsolute, kNow, &when), TimeError::kNone);
  EXPECT_EQ(when, 0);
  EXPECT_EQ(ParseExpireTime("-5", TimeUnit::kMilliseconds, TimeBase::kAbsolute, kNow, &when), TimeError::kNone);
  EXPECT_EQ(when, -5);
  EXPECT_EQ(ParseExpireTime("100", TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &when), TimeError::kNone);
  EXPECT_EQ(when, static_cast<int64_t>(kNow) + 100);
  EXPECT_EQ(ParseExpireTime("", TimeUnit::kSeconds, TimeBase::kRelative, kNow, &when), TimeError::kNotInteger);
  EXPECT_EQ(ParseExpireTime("1e3", TimeUnit::kSeconds, TimeBase::kRelative, kNow, &when), TimeError::kNotInteger);
}

TEST(ExpireArgs, ExpireTimeSecondsBounds) {
  int64_t when = 0;
  // Redis's tests: EXPIRE with 9223372036854776 (> INT64_MAX / 1000),
  // 10000000000000000, 18446744073709561 and the negative -9223372036854776.
  for (const char* bad : {"9223372036854776", "10000000000000000", "18446744073709561", "-9223372036854776",
                          "-9999999999999999"}) {
    EXPECT_EQ(ParseExpireTime(bad, TimeUnit::kSeconds, TimeBase::kRelative, kNow, &when), TimeError::kInvalidTime)
        << bad;
  }
  // The lowest that converts is fine (a time long past).
  EXPECT_EQ(ParseExpireTime(std::to_string(INT64_MIN / 1000), TimeUnit::kSeconds, TimeBase::kRelative, kNow, &when),
            TimeError::kNone);
  EXPECT_EQ(when, INT64_MIN / 1000 * 1000 + static_cast<int64_t>(kNow));
  // EXPIREAT: INT64_MAX / 1000 converts and needs no addition.
  EXPECT_EQ(ParseExpireTime(std::to_string(kMax / 1000), TimeUnit::kSeconds, TimeBase::kAbsolute, kNow, &when),
            TimeError::kNone);
}

TEST(ExpireArgs, ExpireTimeBasetimeOverflow) {
  int64_t when = 0;
  // Redis's test: EXPIRE 9223370399119966 converts but passes INT64_MAX with now added.
  EXPECT_EQ(ParseExpireTime("9223370399119966", TimeUnit::kSeconds, TimeBase::kRelative, kNow, &when),
            TimeError::kInvalidTime);
  // PEXPIRE 9223372036854770000 (Redis's test) overflows with now added...
  EXPECT_EQ(ParseExpireTime("9223372036854770000", TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &when),
            TimeError::kInvalidTime);
  // ... PEXPIREAT of the same works.
  EXPECT_EQ(ParseExpireTime("9223372036854770000", TimeUnit::kMilliseconds, TimeBase::kAbsolute, kNow, &when),
            TimeError::kNone);
  EXPECT_EQ(when, 9223372036854770000);
  const int64_t room = kMax - static_cast<int64_t>(kNow);
  EXPECT_EQ(ParseExpireTime(std::to_string(room), TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &when),
            TimeError::kNone);
  EXPECT_EQ(when, kMax);
  EXPECT_EQ(ParseExpireTime(std::to_string(room + 1), TimeUnit::kMilliseconds, TimeBase::kRelative, kNow, &when),
            TimeError::kInvalidTime);
}

TEST(ExpireArgs, StoreExpireAtMapsThePastToOne) {
  EXPECT_EQ(StoreExpireAt(0), 1u);  // never kNoExpiry: that would make the key persistent
  EXPECT_EQ(StoreExpireAt(-5), 1u);
  EXPECT_EQ(StoreExpireAt(INT64_MIN), 1u);
  EXPECT_EQ(StoreExpireAt(42), 42u);
  EXPECT_EQ(StoreExpireAt(kMax), static_cast<uint64_t>(kMax));
  // Redis's answers for a negative time: GT fails, LT holds, on a key with a TTL.
  EXPECT_FALSE(ExpireConditionHolds(ExpireCondition::kIfGreater, kNow, StoreExpireAt(-10)));
  EXPECT_TRUE(ExpireConditionHolds(ExpireCondition::kIfLess, kNow, StoreExpireAt(-10)));
  EXPECT_TRUE(ExpireConditionHolds(ExpireCondition::kIfLess, kNoExpiry, StoreExpireAt(-10)));
}

TEST(ExpireArgs, ExpireFlags) {
  ExpireFlags f;
  EXPECT_EQ(Flags({}, &f), "");
  EXPECT_EQ(f.condition(), ExpireCondition::kAlways);
  EXPECT_EQ(Flags({"nx"}, &f), "");
  EXPECT_EQ(f.condition(), ExpireCondition::kIfNone);
  EXPECT_EQ(Flags({"XX"}, &f), "");
  EXPECT_EQ(f.condition(), ExpireCondition::kIfSet);
  EXPECT_EQ(Flags({"Gt"}, &f), "");
  EXPECT_EQ(f.condition(), ExpireCondition::kIfGreater);
  EXPECT_EQ(Flags({"lt"}, &f), "");
  EXPECT_EQ(f.condition(), ExpireCondition::kIfLess);
  EXPECT_FALSE(f.requires_expiry());
  EXPECT_EQ(Flags({"gt", "xx"}, &f), "");
  EXPECT_EQ(f.condition(), ExpireCondition::kIfGreater);  // GT implies XX
  EXPECT_FALSE(f.requires_expiry());
  EXPECT_EQ(Flags({"lt", "xx"}, &f), "");
  EXPECT_EQ(f.condition(), ExpireCondition::kIfLess);
  EXPECT_TRUE(f.requires_expiry());
  EXPECT_EQ(Flags({"nx", "nx"}, &f), "");  // repeating is fine
}

TEST(ExpireArgs, ExpireFlagErrors) {
  ExpireFlags f;
  const std::string nx = "ERR NX and XX, GT or LT options at the same time are not compatible";
  EXPECT_EQ(Flags({"nx", "xx"}, &f), nx);
  EXPECT_EQ(Flags({"NX", "GT"}, &f), nx);
  EXPECT_EQ(Flags({"lt", "nx"}, &f), nx);
  EXPECT_EQ(Flags({"lt", "gt"}, &f), "ERR GT and LT options at the same time are not compatible");
  EXPECT_EQ(Flags({"AB"}, &f), "ERR Unsupported option AB");
  // An unknown word is reported before a conflict, whatever the order.
  EXPECT_EQ(Flags({"nx", "xx", "ab"}, &f), "ERR Unsupported option ab");
  EXPECT_EQ(Flags({"XX", "AB"}, &f), "ERR Unsupported option AB");
  // NX with GT and LT: the NX error wins (Redis checks it first).
  EXPECT_EQ(Flags({"gt", "lt", "nx"}, &f), nx);
}

TEST(ExpireArgs, SetOptions) {
  StringOptions o;
  ASSERT_TRUE(Opts({}, false, &o));
  EXPECT_FALSE(o.has_time || o.nx || o.xx || o.get || o.keepttl);
  ASSERT_TRUE(Opts({"EX", "10"}, false, &o));
  EXPECT_TRUE(o.has_time);
  EXPECT_EQ(o.unit, TimeUnit::kSeconds);
  EXPECT_EQ(o.base, TimeBase::kRelative);
  EXPECT_EQ(o.time, "10");
  ASSERT_TRUE(Opts({"pxat", "123", "nx", "get"}, false, &o));
  EXPECT_EQ(o.unit, TimeUnit::kMilliseconds);
  EXPECT_EQ(o.base, TimeBase::kAbsolute);
  EXPECT_TRUE(o.nx && o.get);
  ASSERT_TRUE(Opts({"xx", "keepttl", "get"}, false, &o));
  EXPECT_TRUE(o.xx && o.keepttl && o.get);
  // The same expiry option twice: allowed, the last time wins (as Redis).
  ASSERT_TRUE(Opts({"ex", "10", "ex", "20"}, false, &o));
  EXPECT_EQ(o.time, "20");
  // The time word is taken as the time even when it looks like an option.
  ASSERT_TRUE(Opts({"ex", "nx"}, false, &o));
  EXPECT_EQ(o.time, "nx");
  EXPECT_FALSE(o.nx);
}

TEST(ExpireArgs, SetOptionSyntaxErrors) {
  StringOptions o;
  EXPECT_FALSE(Opts({"nx", "xx"}, false, &o));
  EXPECT_FALSE(Opts({"xx", "nx"}, false, &o));
  EXPECT_FALSE(Opts({"ex", "10", "px", "100"}, false, &o));
  EXPECT_FALSE(Opts({"exat", "10", "pxat", "100"}, false, &o));
  EXPECT_FALSE(Opts({"ex", "10", "keepttl"}, false, &o));
  EXPECT_FALSE(Opts({"keepttl", "px", "10"}, false, &o));
  EXPECT_FALSE(Opts({"ex"}, false, &o));  // no time after it
  EXPECT_FALSE(Opts({"persist"}, false, &o));  // GETEX only
  EXPECT_FALSE(Opts({"foo"}, false, &o));
}

TEST(ExpireArgs, GetexOptions) {
  StringOptions o;
  ASSERT_TRUE(Opts({"persist"}, true, &o));
  EXPECT_TRUE(o.persist);
  ASSERT_TRUE(Opts({"EXAT", "5"}, true, &o));
  EXPECT_EQ(o.base, TimeBase::kAbsolute);
  EXPECT_FALSE(Opts({"persist", "ex", "10"}, true, &o));
  EXPECT_FALSE(Opts({"ex", "10", "persist"}, true, &o));
  EXPECT_FALSE(Opts({"nx"}, true, &o));       // SET only
  EXPECT_FALSE(Opts({"get"}, true, &o));      // SET only
  EXPECT_FALSE(Opts({"keepttl"}, true, &o));  // SET only
  EXPECT_FALSE(Opts({"px"}, true, &o));
}

// Randomized check against a reference in 128-bit arithmetic (which cannot
// overflow): Redis's rules stated directly on the exact values. Times are
// drawn mostly near the edges (0, ±INT64_MAX/1000, INT64_MAX - now, the
// limits of int64) where an overflow would hide.
TEST(ExpireArgs, RandomTimesMatchExactArithmetic) {
  using i128 = __int128;
  std::mt19937_64 rng(1234);
  const int64_t edges[] = {0, 1, -1, kMax / 1000, INT64_MIN / 1000, kMax, INT64_MIN,
                           kMax - static_cast<int64_t>(kNow), (kMax - static_cast<int64_t>(kNow)) / 1000};
  for (int iter = 0; iter < 200000; ++iter) {
    int64_t v;
    if (iter % 4 == 0) {
      v = static_cast<int64_t>(rng());
    } else {
      const int64_t edge = edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
      const int64_t delta = static_cast<int64_t>(rng() % 2001) - 1000;
      const i128 sum = static_cast<i128>(edge) + delta;
      if (sum > kMax || sum < INT64_MIN) continue;
      v = static_cast<int64_t>(sum);
    }
    const uint64_t now = iter % 3 == 0 ? rng() % (uint64_t{1} << 62) : kNow;
    const std::string text = std::to_string(v);
    for (TimeUnit unit : {TimeUnit::kSeconds, TimeUnit::kMilliseconds}) {
      for (TimeBase base : {TimeBase::kRelative, TimeBase::kAbsolute}) {
        const i128 scale = unit == TimeUnit::kSeconds ? 1000 : 1;
        const i128 add = base == TimeBase::kRelative ? static_cast<i128>(now) : 0;
        // SET/GETEX: v > 0, v * scale and the sum within int64.
        const i128 set_exact = static_cast<i128>(v) * scale + add;
        const bool set_ok = v > 0 && static_cast<i128>(v) * scale <= kMax && set_exact <= kMax;
        uint64_t at = 0;
        const TimeError se = ParseSetTime(text, unit, base, now, &at);
        ASSERT_EQ(se == TimeError::kNone, set_ok) << text << " now=" << now;
        ASSERT_TRUE(se == TimeError::kNone || se == TimeError::kInvalidTime);
        if (set_ok) {
          ASSERT_EQ(static_cast<i128>(at), set_exact) << text;
        }
        // EXPIRE: v * scale within int64, the sum not above INT64_MAX.
        const i128 scaled = static_cast<i128>(v) * scale;
        const bool exp_ok = scaled <= kMax && scaled >= INT64_MIN && scaled + add <= kMax;
        int64_t when = 0;
        const TimeError ee = ParseExpireTime(text, unit, base, now, &when);
        ASSERT_EQ(ee == TimeError::kNone, exp_ok) << text << " now=" << now;
        if (exp_ok) {
          ASSERT_EQ(static_cast<i128>(when), scaled + add) << text;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvcg::server
