// RESP2/RESP3 reply framing; see resp_reply.h.
#include "resp_reply.h"

#include <climits>
#include <cstring>

namespace kvcg::loadgen {

namespace {

// The integer of a length line, data[begin, end) (after the type byte, up to
// the '\r'): an optional sign, then decimal digits, up to the first other
// byte; 0 when there are none. What strtol gave there (saturating at
// LONG_MAX; RESP has no leading blanks to skip), without its locale and
// errno work: this runs once per reply, and the load generator's CPU per
// command is what limits what it can measure.
long ParseLength(const char* p, const char* end) {
  bool negative = false;
  if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  unsigned long n = 0;
  for (; p < end && static_cast<unsigned char>(*p - '0') < 10; ++p) {
    const unsigned long digit = static_cast<unsigned long>(*p - '0');
    if (n > (static_cast<unsigned long>(LONG_MAX) - digit) / 10) {  // would pass LONG_MAX
      n = static_cast<unsigned long>(LONG_MAX);
      break;
    }
    n = n * 10 + digit;
  }
  return negative ? -static_cast<long>(n) : static_cast<long>(n);
}

// Returns the end offset of the reply at `pos`, 0 if incomplete, -1 if malformed.
long Skip(const char* data, size_t size, size_t pos, int depth) {
  if (depth > 64 || pos >= size) return depth > 64 ? -1 : 0;
  const char* cr = static_cast<const char*>(std::memchr(data + pos, '\r', size - pos));
  if (cr == nullptr || static_cast<size_t>(cr - data) + 1 >= size) return 0;
  size_t line_end = static_cast<size_t>(cr - data) + 2;
  char type = data[pos];
  switch (type) {
    case '+': case '-': case ':': case '_': case ',': case '#': case '(':
      return static_cast<long>(line_end);
    default:
      break;
  }
  long n = ParseLength(data + pos + 1, cr);
  switch (type) {
    case '$': case '=': case '!':
      if (n < 0) return static_cast<long>(line_end);
      if (line_end + static_cast<size_t>(n) + 2 > size) return 0;
      return static_cast<long>(line_end + static_cast<size_t>(n) + 2);
    case '*': case '~': case '>': case '%': case '|': {
      if (n < 0) return static_cast<long>(line_end);
      long items = (type == '%' || type == '|') ? 2 * n : n;
      size_t at = line_end;
      for (long i = 0; i < items; ++i) {
        long end = Skip(data, size, at, depth + 1);
        if (end <= 0) return end;
        at = static_cast<size_t>(end);
      }
      return static_cast<long>(at);
    }
    default:
      return -1;
  }
}

}  // namespace

long ReplyLength(const char* data, size_t size, bool* is_error) {
  if (size == 0) return 0;
  *is_error = data[0] == '-' || data[0] == '!';
  return Skip(data, size, 0, 0);
}

}  // namespace kvcg::loadgen
