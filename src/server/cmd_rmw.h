// Read-modify-write over the store's compare-and-swap: the loop that makes
// APPEND, INCR*, SETRANGE, SETBIT, ... atomic per key without locks.
//
// Why a loop: the store's only conditional write is CAS ("store D if the key
// holds E", or "if it is absent"), which returns the value it found. A
// command computes its new value from the current one and CASes it in; if
// another client changed the key in between, the CAS fails, returns the
// newer value, and the command recomputes from that (Command::attempts,
// INFO rmw_extra_rounds). The connection keeps its later commands on the
// same key out of the batch while the loop runs (kCmdRmw, connection.h).
//
// A loop starts in one of two ways:
//   * CasAbsent: a CAS "only if absent" with the value the command would
//     store on a new key — one round when the key is indeed absent;
//   * ReadFirst: a plain GET, when that value would be large (SETRANGE at a
//     big offset, SETBIT at a high bit) and building it for nothing is
//     costly when the key usually exists.
// Each finish call then asks RmwOutcome what the last operation did.
//
// Command::phase records which kind the last operation was:
//   kPhaseAbsent  CAS expecting absence;
//   kPhaseEqual   CAS expecting cmd.scratch (a copy of the value it read);
//   kPhaseRead    a GET.
// Handlers with more steps of their own (MSETNX) use phases from
// kPhaseCommandBase up.
//
// Thread-safety: everything here runs on the connection's I/O thread.
#pragma once

#include <string_view>

#include "server/connection.h"

namespace kvcg::server {

inline constexpr uint8_t kPhaseAbsent = 0;
inline constexpr uint8_t kPhaseEqual = 1;
inline constexpr uint8_t kPhaseRead = 2;
inline constexpr uint8_t kPhaseCommandBase = 3;

// Whether the CAS whose result is `r` stored its value (false after a GET).
inline bool CasStored(const Command& c, const OpResultView& r) {
  if (c.phase == kPhaseAbsent) return r.code == Code::kNotFound;
  if (c.phase == kPhaseEqual) return r.found() && r.value == c.scratch;
  return false;
}

// CAS `desired` over `current`. `current` may be a view into the round's
// Results, which dies after the finish call: it is copied into cmd.scratch
// (reusing its capacity across retries) because CasStored compares against
// it next round.
//
// Expiry: a CAS that stores gives the key `expire_at`; without it, the key
// keeps its TTL (ctx.KeepTtl()), which is what every read-modify-write
// command wants (Redis's INCR, APPEND, SETRANGE, SETBIT keep the TTL).
inline void CasFrom(CommandContext& ctx, std::string_view key, std::string_view current, std::string_view desired,
                    uint64_t expire_at) {
  ctx.cmd.scratch.assign(current);
  ctx.cmd.phase = kPhaseEqual;
  std::string_view expected = ctx.cmd.scratch;
  ctx.OpCas(key, &expected, desired, expire_at);
}
inline void CasFrom(CommandContext& ctx, std::string_view key, std::string_view current, std::string_view desired) {
  CasFrom(ctx, key, current, desired, ctx.KeepTtl());
}

// CAS `desired` only if `key` is absent (a new key: KeepTtl() means none).
inline void CasAbsent(CommandContext& ctx, std::string_view key, std::string_view desired, uint64_t expire_at) {
  ctx.cmd.phase = kPhaseAbsent;
  ctx.OpCas(key, nullptr, desired, expire_at);
}
inline void CasAbsent(CommandContext& ctx, std::string_view key, std::string_view desired) {
  CasAbsent(ctx, key, desired, kNoExpiry);
}

// GET `key`, the first step of a loop that computes before it writes.
inline void ReadFirst(CommandContext& ctx, std::string_view key) {
  ctx.cmd.phase = kPhaseRead;
  ctx.OpGet(key);
}

enum class Rmw {
  kError,    // the store failed the operation; its error reply is written
  kStored,   // the CAS stored: the value it replaced is cmd.scratch
             // (kPhaseEqual) or nothing (kPhaseAbsent)
  kCurrent,  // not stored: r.found() / r.value is the key's current state,
             // to compute the next CAS from
};

inline Rmw RmwOutcome(CommandContext& ctx, const OpResultView& r) {
  if (!r.succeeded()) {
    ctx.StoreError(r);
    return Rmw::kError;
  }
  return CasStored(ctx.cmd, r) ? Rmw::kStored : Rmw::kCurrent;
}

// Values up to this size are built up front for a CasAbsent first attempt;
// larger ones start with ReadFirst.
inline constexpr size_t kEagerCreateBytes = 64 * 1024;

}  // namespace kvcg::server
