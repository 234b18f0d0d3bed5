// RespParser: the request side of the Redis protocol — RESP multibulk
// commands ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") and inline commands ("GET k\n",
// as telnet and redis-cli send them), with Redis's limits and its exact
// protocol error strings.
//
// The parser is incremental and keeps no copy of the input: it is always
// handed the bytes starting at the first unparsed command (the caller may
// have moved them, so state is kept as offsets from that start), remembers
// how far it got, and on completion exposes the arguments as offsets into
// those bytes. A command split over many reads therefore costs O(its size),
// not O(size x reads). Inline arguments need unquoting, so they are owned by
// the parser until the next call.
//
// Errors follow Redis 7 (networking.c): the caller sends "-ERR <error()>"
// and closes the connection after the replies of the commands before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvcg::server {

struct ParserLimits {
  uint64_t max_bulk_len = 512ull * 1024 * 1024;  // proto-max-bulk-len
  uint64_t max_multibulk_len = 1024 * 1024;      // arguments per command
  uint64_t max_inline_len = 64 * 1024;           // inline line / length header bytes
  // Redis's stricter limits before AUTH (10 arguments, 16 KiB bulks) when a
  // password is required, so an unauthenticated peer cannot make us buffer much.
  bool unauthenticated = false;
};

class RespParser {
 public:
  enum class Result {
    kCommand,   // A command is complete: argc()/arg(); it used consumed() bytes.
    kEmpty,     // An empty command ("*0", "*-1", a blank line): skip consumed() bytes.
    kNeedMore,  // Incomplete; call again with the same start and more bytes.
    kError,     // Malformed; error() says why. The parser must be Reset() to reuse.
  };

  // Parses the command starting at data[0]. `size` must not shrink between
  // calls for the same command, and `data` must hold the same bytes.
  Result Parse(const char* data, size_t size, const ParserLimits& limits);

  size_t consumed() const { return consumed_; }
  size_t argc() const { return inline_ ? inline_args_.size() : args_.size(); }
  // The i-th argument of the completed command; `data` as passed to Parse.
  std::string_view arg(size_t i, const char* data) const {
    if (inline_) return inline_args_[i];
    return {data + args_[i].offset, args_[i].size};
  }
  // Whether arg() views point into parser-owned memory (valid until the next
  // Parse) rather than into the caller's bytes.
  bool is_inline() const { return inline_; }
  // While kNeedMore inside a bulk: total bytes (from data[0]) the command needs
  // at least, so the caller can size its next read. 0 when unknown.
  size_t bytes_hint() const { return hint_; }
  const std::string& error() const { return error_; }

  // Forgets any partial command.
  void Reset();

 private:
  struct Arg {
    size_t offset;
    size_t size;
  };
  Result ParseMultibulk(const char* data, size_t size, const ParserLimits& limits);
  Result ParseInline(const char* data, size_t size, const ParserLimits& limits);
  Result Fail(std::string message);
  Result Done(size_t consumed, Result r);

  // Multibulk state: pos_ is the next unparsed byte; remaining_ the arguments
  // still to come (0 = header not parsed yet); bulk_len_ -1 = length unparsed.
  size_t pos_ = 0;
  int64_t remaining_ = 0;
  int64_t bulk_len_ = -1;
  std::vector<Arg> args_;

  bool inline_ = false;
  std::vector<std::string> inline_args_;

  size_t consumed_ = 0;
  size_t hint_ = 0;
  std::string error_;
};

// Splits an inline command line like Redis's sdssplitargs: whitespace
// separated, "double quotes" with \n \r \t \b \a \xHH escapes, 'single
// quotes' with \'. Returns false on unbalanced quotes.
bool SplitInlineArgs(std::string_view line, std::vector<std::string>* out);

// Redis's string2ll: a strict decimal int64 ("-12"; no "+", no spaces, no
// leading zeros, no overflow). Used for protocol lengths and integer arguments.
bool ParseInt64(std::string_view s, int64_t* out);

// ASCII lower case (no locale: command and option names are ASCII).
inline char AsciiLower(char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch | 0x20) : ch; }

// ASCII case-insensitive equality (command and option names like "NX", subcommands).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace kvcg::server
