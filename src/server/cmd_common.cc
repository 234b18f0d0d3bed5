// Shared handler helpers and the mapping from store result codes to Redis
// error replies.
#include "server/cmd_common.h"

#include <cctype>
#include <cstdint>

#include "server/connection.h"
#include "server/io_thread.h"
#include "server/resp_parser.h"
#include "server/server.h"

namespace kvcg::server {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void CountKeyspaceHit(CommandContext& ctx, const OpResultView& r) {
  ThreadStats& st = ctx.loop.stats();
  Add(r.found() ? st.keyspace_hits : st.keyspace_misses, 1);
}

bool ReadFailed(CommandContext& ctx, const OpResultView& res) {
  if (!res.succeeded()) {
    ctx.StoreError(res);
    return true;
  }
  CountKeyspaceHit(ctx, res);
  return false;
}

bool ParseIntArg(std::string_view s, int* out, const char** error, const char* msg) {
  int64_t v;
  if (!ParseInt64(s, &v)) {
    *error = msg ? msg : kErrNotInteger;
    return false;
  }
  if (v < INT32_MIN || v > INT32_MAX) {
    *error = msg ? msg : kErrIntRange;
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

void CommandContext::Error(std::string_view message) {
  out.Error(message);
  Add(loop.stats().failed_calls[cmd.spec->id], 1);
}

void CommandContext::StoreError(const OpResultView& r) {
  switch (r.code) {
    case Code::kKeyTooLarge:
      Error("ERR key is too large (over max-key-bytes)");
      break;
    case Code::kValueTooLarge:
      Error(kErrTooBig);
      break;
    case Code::kCapacityExhausted:
      Error("OOM command not allowed when used memory > 'maxmemory'.");
      break;
    case Code::kInvalidArgument:
      Error("ERR the store rejected the operation (invalid argument for its layout)");
      break;
    case Code::kUnavailable:
      Error("ERR the store is unavailable");
      break;
    case Code::kTimedOut:
      Error("ERR the store timed out; try again");
      break;
    case Code::kIoError:
      // The append-only log could not be written: the write is not
      // acknowledged (Redis's AOF MISCONF, with the log's errno text).
      Error(server.persistence().AofErrorReply());
      break;
    default:
      Error(std::string("ERR internal store error: ") + CodeName(r.code));
      break;
  }
}

}  // namespace kvcg::server
