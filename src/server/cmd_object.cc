// OBJECT FREQ key and OBJECT IDLETIME key: Redis 7.0's objectCommand over
// Store::KeyAccess (kvcg/store.h), which reads a key's access word without
// touching it (Redis's LOOKUP_NOTOUCH).
//
// As in Redis, the key is looked up first (missing: nil), then the policy is
// checked against the configured maxmemory-policy with Redis's exact error
// texts: FREQ needs an LFU policy, IDLETIME any other (noeviction included —
// the LRU clock is kept under every non-LFU policy). IDLETIME is whole
// seconds (the store keeps milliseconds). A backend that keeps no access
// time for a live key (the GPU backend, whose LRU time is a pass count, not
// a clock; KeyAccess answers kUnavailable) gets the policy error when the
// policy rules the subcommand out and kvcg's own error otherwise; the GPU
// answers OBJECT FREQ under an LFU policy.
#include "server/cmd_object.h"

#include <string>

#include "kvcg/config.h"
#include "kvcg/store.h"
#include "server/cmd_types.h"
#include "server/connection.h"
#include "server/server.h"

namespace kvcg::server::cmd {

namespace {

constexpr const char* kErrNotLfu =
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching "
    "between policies at runtime LRU and LFU data will take some time to adjust.";
constexpr const char* kErrLfu =
    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between "
    "policies at runtime LRU and LFU data will take some time to adjust.";

}  // namespace

void ObjectAccess(CommandContext& ctx, bool freq) {
  const bool lfu = IsLfuPolicy(ctx.server.ConfigSnapshot().store.eviction);
  if (HoldsCollection(ctx, ctx.arg(2))) {  // lists and sets keep no access word (collections.h)
    if (freq && !lfu) return ctx.Error(kErrNotLfu);
    if (!freq && lfu) return ctx.Error(kErrLfu);
    return ctx.Error("ERR kvcg: lists and sets keep no access time or frequency");
  }
  KeyAccessInfo info;
  const Status s = ctx.server.store()->KeyAccess(ctx.arg(2), &info);
  if (s.code() == Code::kNotFound) return ctx.out.Null();
  if (freq && !lfu) return ctx.Error(kErrNotLfu);
  if (!freq && lfu) return ctx.Error(kErrLfu);
  if (s.code() == Code::kUnavailable) {
    return ctx.Error(std::string("ERR this backend keeps no per-key access ") + (freq ? "frequency" : "time") +
                     " (kvcg: " + s.message() + ")");
  }
  if (!s.ok()) return ctx.Error("ERR " + s.message());
  ctx.out.Integer(freq ? static_cast<int64_t>(info.frequency) : static_cast<int64_t>(info.idle_ms / 1000));
}

}  // namespace kvcg::server::cmd
