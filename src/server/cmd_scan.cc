// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]: Redis 7.0's
// scanGenericCommand (db.c) over Store::Scan (kvcg/store.h).
//
// Design:
//  * One call is one Store::Scan step. The store keeps Redis's guarantee (a
//    key present for the whole iteration is returned at least once, repeats
//    possible) across table growth and concurrent writers, so the command
//    only translates: the cursor is the store's 64-bit cursor printed as an
//    unsigned decimal, opaque to clients; a cursor the store never returned
//    ends or restarts part of the iteration there, never an error.
//  * SCAN is a barrier (command_table.h), like DBSIZE: it runs after every
//    earlier command of the connection has taken effect, then calls the
//    store from start(), synchronously on the connection's I/O thread, and
//    writes the whole reply [cursor as a bulk string, array of keys]. A step
//    is bounded by COUNT (CPU backend: one shard's read lock at a time; GPU
//    backend: a pipeline marker behind earlier batches and a kernel over a
//    run of buckets; engine: the first step writes the hot cache back), and
//    it blocks only this I/O thread, as SAVE does.
//  * Parsing follows Redis 7.0 exactly, texts included: the cursor as
//    strtoul reads it ("-1" wraps, "+5" and "007" are accepted, an empty
//    string is 0; a leading space, trailing bytes or overflow give "ERR
//    invalid cursor"); options in any order and repeated (the last wins);
//    COUNT through string2ll ("ERR value is not an integer or out of
//    range"), and below 1 "ERR syntax error", as is an unknown option or a
//    missing option argument. Default COUNT 10.
//  * Filters apply to the step's keys after the store returned them, as in
//    Redis, so a reply may be an empty array with a nonzero cursor. MATCH
//    is Redis's glob (glob.h), case-sensitive; "*" skips it. The store holds
//    strings only: TYPE "string" (any case) keeps its keys, any other name
//    none. Redis 7.0 does not check the name either (7.2 only in a comment;
//    8.0 answers "ERR unknown type name '<name>'"), so an unknown type is an
//    empty result here too, not an error.
//  * Lists and sets (collections.h) are not in the store: the call that
//    ends the store's iteration (next cursor 0) also returns every list and
//    set key that passes the filters (TYPE "list", "set" or none). So a
//    list or set present for the whole iteration is returned exactly once;
//    that last call may be longer than COUNT when there are many of them.
//  * A store failure (kInternal from a device) is "ERR " + its message.
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvcg/snapshot.h"
#include "kvcg/store.h"
#include "server/cmd_common.h"
#include "server/collections.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/glob.h"
#include "server/resp_parser.h"
#include "server/server.h"

namespace kvcg::server::cmd {

namespace {

constexpr const char* kErrInvalidCursor = "ERR invalid cursor";
constexpr size_t kDefaultCount = 10;

// Redis's parseScanCursorOrReply: strtoul over the argument's bytes (up to a
// NUL byte, as C reads them), refusing a leading space, trailing bytes and
// overflow.
bool ParseCursor(std::string_view arg, uint64_t* cursor) {
  const std::string text(arg);  // NUL-terminated for strtoull
  if (!text.empty() && std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return false;
  *cursor = v;
  return true;
}

}  // namespace

void Scan(CommandContext& ctx) {
  uint64_t cursor = 0;
  if (!ParseCursor(ctx.arg(1), &cursor)) {
    ctx.Error(kErrInvalidCursor);
    return;
  }
  size_t count = kDefaultCount;
  std::string_view pattern;
  bool use_pattern = false;
  bool keep_keys = true;  // false when TYPE names anything but "string"
  bool keep_lists = true, keep_sets = true;  // TYPE list / set (or no TYPE)
  for (size_t i = 2; i < ctx.argc(); i += 2) {
    const std::string_view option = ctx.arg(i);
    if (i + 1 >= ctx.argc()) {
      ctx.Error(kErrSyntax);
      return;
    }
    const std::string_view value = ctx.arg(i + 1);
    if (EqualsIgnoreCase(option, "count")) {
      int64_t n = 0;
      if (!ParseInt64(value, &n)) {
        ctx.Error(kErrNotInteger);
        return;
      }
      if (n < 1) {
        ctx.Error(kErrSyntax);
        return;
      }
      count = static_cast<size_t>(n);
    } else if (EqualsIgnoreCase(option, "match")) {
      pattern = value;
      use_pattern = !(value.size() == 1 && value[0] == '*');
    } else if (EqualsIgnoreCase(option, "type")) {
      keep_keys = EqualsIgnoreCase(value, "string");
      keep_lists = EqualsIgnoreCase(value, "list");
      keep_sets = EqualsIgnoreCase(value, "set");
    } else {
      ctx.Error(kErrSyntax);
      return;
    }
  }

  std::unique_ptr<SnapshotReader> step;
  uint64_t next = 0;
  const Status s = ctx.server.store()->Scan(cursor, count, &step, &next);
  if (!s.ok()) {
    ctx.Error("ERR " + s.message());
    return;
  }
  // The keys the filters keep, copied: a chunk's views end at the next
  // Next(), and the array header needs the count before the first key.
  std::vector<std::string> keys;
  // Expired keys a backend still holds are never returned (as Redis's SCAN).
  const uint64_t now = ctx.Now();
  SnapshotChunk chunk;
  while (step != nullptr && step->Next(&chunk)) {
    if (!keep_keys) continue;
    for (size_t i = 0; i < chunk.keys.size(); ++i) {
      const std::string_view key = chunk.keys[i];
      if (i < chunk.expires.size() && IsExpired(chunk.expires[i], now)) continue;
      if (use_pattern && !GlobMatch(pattern, key, /*nocase=*/false)) continue;
      keys.emplace_back(key);
    }
  }
  if (step != nullptr && !step->status().ok()) {
    ctx.Error("ERR " + step->status().message());
    return;
  }
  CollectionKeyspace& collections = ctx.server.collections();
  if (next == 0 && (keep_lists || keep_sets) && collections.active()) {
    for (auto& [key, type] : collections.Keys()) {
      if (!(type == CollectionType::kList ? keep_lists : keep_sets)) continue;
      if (use_pattern && !GlobMatch(pattern, key, /*nocase=*/false)) continue;
      keys.push_back(std::move(key));
    }
  }
  char digits[24];
  const auto printed = std::to_chars(digits, digits + sizeof(digits), next);
  ctx.out.ArrayHeader(2);
  ctx.out.Bulk(std::string_view(digits, static_cast<size_t>(printed.ptr - digits)));
  ctx.out.ArrayHeader(keys.size());
  for (const std::string& key : keys) ctx.out.Bulk(key);
}

}  // namespace kvcg::server::cmd
