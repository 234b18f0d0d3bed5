// Helpers shared by the command handlers (cmd_*.cc).
#pragma once

#include <string>
#include <string_view>

#include "server/resp_parser.h"

namespace kvcg {
struct OpResultView;
}

namespace kvcg::server {

struct CommandContext;

// EqualsIgnoreCase and ParseInt64 are in resp_parser.h (no dependencies, so
// the fuzz targets link them alone).
std::string ToLower(std::string_view s);

// Counts a read of a key in INFO's keyspace_hits / keyspace_misses (Redis
// counts the lookups of read commands: GET, GETRANGE, BITCOUNT, LCS, ...).
void CountKeyspaceHit(CommandContext& ctx, const OpResultView& r);
// The start of a one-key read's finish: a store error becomes the reply
// (true: nothing more to answer); otherwise the keyspace hit or miss is
// counted (false).
bool ReadFailed(CommandContext& ctx, const OpResultView& res);
// Redis's getIntFromObjectOrReply for a 32-bit integer argument (database
// indexes). True with *out set; false with *error set to the reply: `msg`
// when given, else kErrNotInteger for a non-integer or kErrIntRange for an
// integer outside int32. *error points to a static string.
bool ParseIntArg(std::string_view s, int* out, const char** error, const char* msg = nullptr);

// Redis's standard error strings, where clients match on them.
inline constexpr const char* kErrSyntax = "ERR syntax error";
inline constexpr const char* kErrNotInteger = "ERR value is not an integer or out of range";
inline constexpr const char* kErrIntRange = "ERR value is out of range, value must between -2147483648 and 2147483647";
inline constexpr const char* kErrDbRange = "ERR DB index is out of range";
inline constexpr const char* kErrNotFloat = "ERR value is not a valid float";
inline constexpr const char* kErrOverflow = "ERR increment or decrement would overflow";
inline constexpr const char* kErrTooBig = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr const char* kErrWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr const char* kErrWrongPass = "WRONGPASS invalid username-password pair or user is disabled.";

}  // namespace kvcg::server
