// libFuzzer target for the RESP request parser (src/server/resp_parser.cc).
//
// The input is treated as a byte stream arriving in pieces, exactly as a
// connection feeds it: the first byte picks the piece size, the parser is
// called on a growing window that always starts at the first unparsed
// command, consumed bytes are dropped, and parsing stops at the first
// protocol error. Small limits make the limit paths reachable. Invariants
// checked (abort = finding): consumed bytes and argument views stay inside
// the window; kNeedMore never happens on a window that already holds a
// complete command of the same bytes (checked by re-parsing in one piece).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/resp_parser.h"

using kvcg::server::ParserLimits;
using kvcg::server::RespParser;

namespace {

// Parses `stream` fed `piece` bytes at a time; returns the commands seen.
std::vector<std::vector<std::string>> Run(const std::string& stream, size_t piece, const ParserLimits& limits,
                                          bool* error) {
  std::vector<std::vector<std::string>> commands;
  RespParser parser;
  std::string window;
  size_t fed = 0;
  *error = false;
  while (true) {
    RespParser::Result r = parser.Parse(window.data(), window.size(), limits);
    if (r == RespParser::Result::kCommand || r == RespParser::Result::kEmpty) {
      if (parser.consumed() == 0 || parser.consumed() > window.size()) abort();
      if (r == RespParser::Result::kCommand) {
        std::vector<std::string> args;
        for (size_t i = 0; i < parser.argc(); ++i) {
          std::string_view a = parser.arg(i, window.data());
          if (!parser.is_inline() &&
              (a.data() < window.data() || a.data() + a.size() > window.data() + parser.consumed())) {
            abort();
          }
          args.emplace_back(a);
        }
        if (args.empty()) abort();
        commands.push_back(std::move(args));
      }
      window.erase(0, parser.consumed());
      continue;
    }
    if (r == RespParser::Result::kError) {
      if (parser.error().rfind("Protocol error: ", 0) != 0) abort();
      *error = true;
      return commands;
    }
    if (fed >= stream.size()) return commands;  // kNeedMore at end of input
    size_t n = std::min(piece, stream.size() - fed);
    window.append(stream, fed, n);
    fed += n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t piece = 1 + (data[0] % 64);
  std::string stream(reinterpret_cast<const char*>(data + 1), size - 1);
  ParserLimits limits;
  limits.max_bulk_len = 4096;
  limits.max_multibulk_len = 64;
  limits.max_inline_len = 1024;
  bool error_pieces = false, error_whole = false;
  auto pieces = Run(stream, piece, limits, &error_pieces);
  auto whole = Run(stream, stream.size() + 1, limits, &error_whole);
  // Incremental parsing must not change the outcome, except that an error
  // about an over-long header may surface earlier or later.
  if (!error_pieces && !error_whole && pieces != whole) abort();
  return 0;
}
