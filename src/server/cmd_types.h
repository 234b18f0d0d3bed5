// The type rules of the string commands: what a string command does when
// its key holds a list or a set (collections.h).
//
// Every check starts with CollectionKeyspace::active(), one atomic load that
// is false while no list or set exists, so the string hot path takes no lock
// and allocates nothing in the common case. Handlers call these after their
// own argument checks, so argument errors come first, as in Redis:
//   * reads and read-modify-writes (GET, STRLEN, INCR, APPEND, SETRANGE,
//     SETBIT, GETSET, SET ... GET, ...): WrongType() answers WRONGTYPE and
//     the command changes nothing;
//   * overwrites (SET, SETEX, PSETEX, MSET): DropCollection() deletes the
//     collection, then the string is PUT (Redis's SET replaces any type);
//   * conditional writes (SETNX, SET NX, MSETNX, RENAMENX): HoldsCollection()
//     counts the key as existing.
// The windows these leave against other connections are in collections.h.
#pragma once

#include <string_view>

#include "server/cmd_common.h"
#include "server/connection.h"
#include "server/server.h"

namespace kvcg::server {

inline bool HoldsCollection(CommandContext& ctx, std::string_view key) {
  CollectionKeyspace& c = ctx.server.collections();
  return c.active() && c.Contains(key);
}

// Replies WRONGTYPE and returns true when `key` holds a list or a set.
inline bool WrongType(CommandContext& ctx, std::string_view key) {
  if (!HoldsCollection(ctx, key)) return false;
  ctx.Error(kErrWrongType);
  return true;
}

// Before a string overwrites `key`: deletes a list or set held there.
inline void DropCollection(CommandContext& ctx, std::string_view key) {
  CollectionKeyspace& c = ctx.server.collections();
  if (c.active()) c.Erase(key);
}

}  // namespace kvcg::server
