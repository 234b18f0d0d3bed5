// Helpers shared by the command handlers (cmd_*.cc).
#pragma once

#include <string>
#include <string_view>

namespace kvcg {
struct OpResultView;
}

namespace kvcg::server {

struct CommandContext;

// ASCII case-insensitive equality (option names like "NX", subcommands).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
std::string ToLower(std::string_view s);

// Counts a read of a key in INFO's keyspace_hits / keyspace_misses (Redis
// counts the lookups of read commands: GET, GETRANGE, BITCOUNT, LCS, ...).
void CountKeyspaceHit(CommandContext& ctx, const OpResultView& r);

// Redis's standard error strings, where clients match on them.
inline constexpr const char* kErrSyntax = "ERR syntax error";
inline constexpr const char* kErrNotInteger = "ERR value is not an integer or out of range";
inline constexpr const char* kErrNotFloat = "ERR value is not a valid float";
inline constexpr const char* kErrOverflow = "ERR increment or decrement would overflow";
inline constexpr const char* kErrTooBig = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr const char* kErrWrongPass = "WRONGPASS invalid username-password pair or user is disabled.";

}  // namespace kvcg::server
