// Unit tests of the RESP request parser: multibulk and inline forms,
// incremental input, limits and Redis's exact protocol error strings.
#include "server/resp_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvcg::server {
namespace {

struct Parsed {
  RespParser::Result result;
  std::vector<std::string> args;
  size_t consumed = 0;
  std::string error;
};

Parsed ParseOnce(RespParser& p, const std::string& data, ParserLimits limits = {}) {
  Parsed out;
  out.result = p.Parse(data.data(), data.size(), limits);
  if (out.result == RespParser::Result::kCommand) {
    for (size_t i = 0; i < p.argc(); ++i) out.args.emplace_back(p.arg(i, data.data()));
  }
  if (out.result == RespParser::Result::kCommand || out.result == RespParser::Result::kEmpty) {
    out.consumed = p.consumed();
  }
  if (out.result == RespParser::Result::kError) out.error = p.error();
  return out;
}

TEST(RespParser, Multibulk) {
  RespParser p;
  std::string in = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*1\r\n$4\r\nPING\r\n";
  Parsed a = ParseOnce(p, in);
  ASSERT_EQ(a.result, RespParser::Result::kCommand);
  EXPECT_EQ(a.args, (std::vector<std::string>{"SET", "k", "hello"}));
  Parsed b = ParseOnce(p, in.substr(a.consumed));
  ASSERT_EQ(b.result, RespParser::Result::kCommand);
  EXPECT_EQ(b.args, (std::vector<std::string>{"PING"}));
  EXPECT_EQ(a.consumed + b.consumed, in.size());
}

TEST(RespParser, BinarySafeBulk) {
  RespParser p;
  std::string value("a\0b\r\nc", 6);
  std::string in = "*2\r\n$3\r\nGET\r\n$6\r\n" + value + "\r\n";
  Parsed a = ParseOnce(p, in);
  ASSERT_EQ(a.result, RespParser::Result::kCommand);
  EXPECT_EQ(a.args[1], value);
}

TEST(RespParser, EveryPrefixNeedsMoreThenCompletes) {
  std::string in = "*3\r\n$3\r\nSET\r\n$10\r\nkey-binary\r\n$4\r\nv\r\nv\r\n";
  RespParser p;
  for (size_t n = 0; n < in.size(); ++n) {
    std::string prefix = in.substr(0, n);
    EXPECT_EQ(p.Parse(prefix.data(), prefix.size(), {}), RespParser::Result::kNeedMore) << n;
  }
  Parsed a = ParseOnce(p, in);
  ASSERT_EQ(a.result, RespParser::Result::kCommand);
  EXPECT_EQ(a.args, (std::vector<std::string>{"SET", "key-binary", "v\r\nv"}));
  EXPECT_EQ(a.consumed, in.size());
}

TEST(RespParser, HintSizesTheNextRead) {
  RespParser p;
  std::string in = "*2\r\n$3\r\nGET\r\n$1000\r\nabc";
  EXPECT_EQ(p.Parse(in.data(), in.size(), {}), RespParser::Result::kNeedMore);
  EXPECT_EQ(p.bytes_hint(), std::string("*2\r\n$3\r\nGET\r\n$1000\r\n").size() + 1002);
}

TEST(RespParser, Inline) {
  RespParser p;
  Parsed a = ParseOnce(p, "SET \"a b\" 'c\\'d' \"\\x41\\n\"\r\nrest");
  ASSERT_EQ(a.result, RespParser::Result::kCommand);
  EXPECT_EQ(a.args, (std::vector<std::string>{"SET", "a b", "c'd", "A\n"}));
  EXPECT_EQ(a.consumed, std::string("SET \"a b\" 'c\\'d' \"\\x41\\n\"\r\n").size());
  Parsed b = ParseOnce(p, "PING\n");
  ASSERT_EQ(b.result, RespParser::Result::kCommand);
  EXPECT_EQ(b.args, (std::vector<std::string>{"PING"}));
  EXPECT_EQ(b.consumed, 5u);
}

TEST(RespParser, EmptyCommands) {
  RespParser p;
  for (std::string in : {"*0\r\n", "*-1\r\n", "\r\n", "   \n"}) {
    Parsed a = ParseOnce(p, in);
    EXPECT_EQ(a.result, RespParser::Result::kEmpty) << in;
    EXPECT_EQ(a.consumed, in.size()) << in;
  }
}

TEST(RespParser, ProtocolErrors) {
  struct Case {
    std::string in, error;
  } cases[] = {
      {"*abc\r\n", "Protocol error: invalid multibulk length"},
      {"*3000000000\r\n", "Protocol error: invalid multibulk length"},
      {"*+1\r\n", "Protocol error: invalid multibulk length"},
      {"*1\r\nx3\r\n", "Protocol error: expected '$', got 'x'"},
      {"*1\r\n\r\n\r\n", "Protocol error: expected '$', got ' '"},
      {"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$01\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$99999999999999999999\r\n", "Protocol error: invalid bulk length"},
      {"SET \"a\r\n", "Protocol error: unbalanced quotes in request"},
      {"SET \"a\"b\r\n", "Protocol error: unbalanced quotes in request"},
      {"SET 'a\r\n", "Protocol error: unbalanced quotes in request"},
  };
  for (const auto& c : cases) {
    RespParser p;
    Parsed a = ParseOnce(p, c.in);
    EXPECT_EQ(a.result, RespParser::Result::kError) << c.in;
    EXPECT_EQ(a.error, c.error) << c.in;
  }
}

TEST(RespParser, Limits) {
  ParserLimits limits;
  limits.max_bulk_len = 10;
  limits.max_multibulk_len = 2;
  limits.max_inline_len = 16;
  {
    RespParser p;
    EXPECT_EQ(ParseOnce(p, "*1\r\n$11\r\n", limits).error, "Protocol error: invalid bulk length");
  }
  {
    RespParser p;
    EXPECT_EQ(ParseOnce(p, "*1\r\n$10\r\n0123456789\r\n", limits).result, RespParser::Result::kCommand);
  }
  {
    RespParser p;
    EXPECT_EQ(ParseOnce(p, "*3\r\n", limits).error, "Protocol error: invalid multibulk length");
  }
  {
    RespParser p;
    EXPECT_EQ(ParseOnce(p, std::string(17, 'a'), limits).error, "Protocol error: too big inline request");
  }
  {
    RespParser p;
    EXPECT_EQ(ParseOnce(p, "*" + std::string(17, '1'), limits).error, "Protocol error: too big mbulk count string");
  }
  {
    RespParser p;
    EXPECT_EQ(ParseOnce(p, "*1\r\n$" + std::string(17, '1'), limits).error,
              "Protocol error: too big bulk count string");
  }
  {
    RespParser p;  // under the limits: still waiting, no error
    EXPECT_EQ(ParseOnce(p, std::string(15, 'a'), limits).result, RespParser::Result::kNeedMore);
  }
}

TEST(ParseInt64, MatchesRedisString2ll) {
  int64_t v;
  EXPECT_TRUE(ParseInt64("0", &v) && v == 0);
  EXPECT_TRUE(ParseInt64("-12", &v) && v == -12);
  EXPECT_TRUE(ParseInt64("9223372036854775807", &v) && v == INT64_MAX);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &v) && v == INT64_MIN);
  for (const char* bad : {"", "-", "+1", "01", "-0", " 1", "1 ", "1.0", "9223372036854775808",
                          "-9223372036854775809", "abc", "99999999999999999999"}) {
    EXPECT_FALSE(ParseInt64(bad, &v)) << bad;
  }
}

TEST(SplitInlineArgs, QuotingRules) {
  std::vector<std::string> out;
  ASSERT_TRUE(SplitInlineArgs("  a  b\tc ", &out));
  EXPECT_EQ(out, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_TRUE(SplitInlineArgs("\"\" ''", &out));
  EXPECT_EQ(out, (std::vector<std::string>{"", ""}));
  ASSERT_TRUE(SplitInlineArgs("\"\\t\\r\\x4a\\xzz\"", &out));
  EXPECT_EQ(out, (std::vector<std::string>{"\t\rJxzz"}));
  EXPECT_FALSE(SplitInlineArgs("'abc", &out));
  EXPECT_FALSE(SplitInlineArgs("\"a\"x", &out));
}

}  // namespace
}  // namespace kvcg::server
