// The server's cache mode (maxmemory + maxmemory-policy) over the Store API:
// Store::SetMemoryLimit, Store::KeyAccess and KeyspaceStats::evicted_keys.
//
// Why a helper instead of calling the store directly: the server's store is
// often a wrapper — the durable store (persistence on) and/or the engine
// (modes kvcg and hot-only) — and a wrapper that does not (yet) forward one
// of these calls answers kUnavailable. These functions then ask the store it
// wraps (Durable::inner, Engine::canonical), so cache mode works wherever
// the canonical store supports it. In the engine modes the hot cache is not
// subject to the limit (docs/EVICTION.md, "What is not done").
#pragma once

#include <cstdint>
#include <string_view>

#include "kvcg/config.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace kvcg::server {

// Store::SetMemoryLimit on `store`, or on the first store under it that
// supports it. kUnavailable when none does.
Status ApplyMemoryLimit(Store* store, uint64_t max_memory_bytes, EvictionPolicy policy);

// Store::KeyAccess likewise.
Status KeyAccessOf(Store* store, std::string_view key, KeyAccessInfo* info);

// KeyspaceStats::evicted_keys of the innermost store that reports it
// (wrappers that do not forward Keyspace() report 0).
uint64_t EvictedKeys(Store* store);

}  // namespace kvcg::server
