// RESP request parsing; see resp_parser.h. The structure mirrors Redis's
// processMultibulkBuffer/processInlineBuffer so that limits and error strings
// match what Redis clients and tests expect.
#include "server/resp_parser.h"


#include <algorithm>
#include <climits>
#include <cstring>

namespace kvcg::server {

namespace {

constexpr int64_t kUnauthMultibulk = 10;
constexpr int64_t kUnauthBulk = 16384;

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Error text must stay on one line of the reply.
char Printable(char c) { return (c == '\r' || c == '\n') ? ' ' : c; }

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() >= 21) return false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    if (++i == s.size()) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

bool SplitInlineArgs(std::string_view line, std::vector<std::string>* out) {
  out->clear();
  // sdssplitargs walks a C string: an embedded NUL ends the line.
  size_t nul = line.find('\0');
  if (nul != std::string_view::npos) line = line.substr(0, nul);
  const char* p = line.data();
  const char* end = p + line.size();
  auto at = [&](const char* q) -> char { return q < end ? *q : '\0'; };
  for (;;) {
    while (p < end && IsSpace(*p)) ++p;
    if (p >= end) return true;
    bool in_double = false, in_single = false, done = false;
    std::string current;
    while (!done) {
      char c = at(p);
      if (in_double) {
        if (c == '\\' && at(p + 1) == 'x' && HexValue(at(p + 2)) >= 0 && HexValue(at(p + 3)) >= 0) {
          current.push_back(static_cast<char>(HexValue(at(p + 2)) * 16 + HexValue(at(p + 3))));
          p += 3;
        } else if (c == '\\' && at(p + 1) != '\0') {
          ++p;
          switch (*p) {
            case 'n': current.push_back('\n'); break;
            case 'r': current.push_back('\r'); break;
            case 't': current.push_back('\t'); break;
            case 'b': current.push_back('\b'); break;
            case 'a': current.push_back('\a'); break;
            default: current.push_back(*p); break;
          }
        } else if (c == '"') {
          // A closing quote must be followed by a space or the end.
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;  // unterminated quotes
        } else {
          current.push_back(c);
        }
      } else if (in_single) {
        if (c == '\\' && at(p + 1) == '\'') {
          ++p;
          current.push_back('\'');
        } else if (c == '\'') {
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          current.push_back(c);
        }
      } else {
        switch (c) {
          case ' ': case '\n': case '\r': case '\t': case '\0':
            done = true;
            break;
          case '"': in_double = true; break;
          case '\'': in_single = true; break;
          default: current.push_back(c); break;
        }
      }
      if (p < end) ++p;
    }
    out->push_back(std::move(current));
  }
}

void RespParser::Reset() {
  pos_ = 0;
  remaining_ = 0;
  bulk_len_ = -1;
  args_.clear();
  inline_ = false;
  inline_args_.clear();
  consumed_ = 0;
  hint_ = 0;
}

RespParser::Result RespParser::Fail(std::string message) {
  error_ = "Protocol error: " + std::move(message);
  return Result::kError;
}

RespParser::Result RespParser::Done(size_t consumed, Result r) {
  consumed_ = consumed;
  pos_ = 0;
  remaining_ = 0;
  bulk_len_ = -1;
  hint_ = 0;
  return r;
}

RespParser::Result RespParser::Parse(const char* data, size_t size, const ParserLimits& limits) {
  if (pos_ == 0 && remaining_ == 0) {
    args_.clear();
    inline_args_.clear();
    if (size == 0) return Result::kNeedMore;
    inline_ = data[0] != '*';
  }
  return inline_ ? ParseInline(data, size, limits) : ParseMultibulk(data, size, limits);
}

RespParser::Result RespParser::ParseInline(const char* data, size_t size, const ParserLimits& limits) {
  const char* newline = static_cast<const char*>(std::memchr(data, '\n', size));
  if (newline == nullptr) {
    if (size > limits.max_inline_len) return Fail("too big inline request");
    return Result::kNeedMore;
  }
  size_t line_len = static_cast<size_t>(newline - data);
  size_t consumed = line_len + 1;
  if (line_len > 0 && data[line_len - 1] == '\r') --line_len;
  if (line_len > limits.max_inline_len) return Fail("too big inline request");
  if (!SplitInlineArgs({data, line_len}, &inline_args_)) return Fail("unbalanced quotes in request");
  return Done(consumed, inline_args_.empty() ? Result::kEmpty : Result::kCommand);
}

RespParser::Result RespParser::ParseMultibulk(const char* data, size_t size, const ParserLimits& limits) {
  if (remaining_ == 0) {
    // "*<count>\r\n"
    const char* cr = static_cast<const char*>(std::memchr(data, '\r', size));
    if (cr == nullptr) {
      if (size > limits.max_inline_len) return Fail("too big mbulk count string");
      return Result::kNeedMore;
    }
    size_t header = static_cast<size_t>(cr - data);
    if (header + 2 > size) return Result::kNeedMore;  // the '\n' is not here yet
    int64_t count;
    if (!ParseInt64({data + 1, header - 1}, &count) || count > INT_MAX ||
        (count > 0 && static_cast<uint64_t>(count) > limits.max_multibulk_len)) {
      return Fail("invalid multibulk length");
    }
    if (limits.unauthenticated && count > kUnauthMultibulk) return Fail("unauthenticated multibulk length");
    pos_ = header + 2;
    if (count <= 0) return Done(pos_, Result::kEmpty);
    remaining_ = count;
    // Reserve modestly: the count is untrusted until the bytes arrive.
    args_.reserve(static_cast<size_t>(std::min<int64_t>(count, 1024)));
  }
  while (remaining_ > 0) {
    if (bulk_len_ < 0) {
      // "$<len>\r\n"
      const char* start = data + pos_;
      size_t avail = size - pos_;
      const char* cr = static_cast<const char*>(std::memchr(start, '\r', avail));
      if (cr == nullptr) {
        if (avail > limits.max_inline_len) return Fail("too big bulk count string");
        hint_ = 0;
        return Result::kNeedMore;
      }
      size_t header = static_cast<size_t>(cr - start);
      if (header + 2 > avail) return Result::kNeedMore;
      if (start[0] != '$') return Fail(std::string("expected '$', got '") + Printable(start[0]) + "'");
      int64_t len;
      if (!ParseInt64({start + 1, header - 1}, &len) || len < 0 ||
          static_cast<uint64_t>(len) > limits.max_bulk_len) {
        return Fail("invalid bulk length");
      }
      if (limits.unauthenticated && len > kUnauthBulk) return Fail("unauthenticated bulk length");
      pos_ += header + 2;
      bulk_len_ = len;
    }
    // The payload and its trailing CRLF (not checked, as in Redis).
    size_t need = static_cast<size_t>(bulk_len_) + 2;
    if (size - pos_ < need) {
      hint_ = pos_ + need;
      return Result::kNeedMore;
    }
    args_.push_back({pos_, static_cast<size_t>(bulk_len_)});
    pos_ += need;
    bulk_len_ = -1;
    --remaining_;
  }
  return Done(pos_, Result::kCommand);
}

}  // namespace kvcg::server
