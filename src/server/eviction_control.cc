// See eviction_control.h.
#include "server/eviction_control.h"

#include "kvcg/durable.h"
#include "kvcg/engine.h"

namespace kvcg::server {

namespace {

// The store `store` wraps, or null.
Store* Under(Store* store) {
  if (Durable* d = AsDurable(store)) return d->inner();
  if (Engine* e = AsEngine(store)) return e->canonical();
  return nullptr;
}

}  // namespace

Status ApplyMemoryLimit(Store* store, uint64_t max_memory_bytes, EvictionPolicy policy) {
  Status s = Status::Unavailable("no store");
  for (Store* at = store; at != nullptr; at = Under(at)) {
    s = at->SetMemoryLimit(max_memory_bytes, policy);
    if (s.code() != Code::kUnavailable) return s;
  }
  return s;
}

Status KeyAccessOf(Store* store, std::string_view key, KeyAccessInfo* info) {
  Status s = Status::Unavailable("no store");
  for (Store* at = store; at != nullptr; at = Under(at)) {
    s = at->KeyAccess(key, info);
    if (s.code() != Code::kUnavailable) return s;
  }
  return s;
}

uint64_t EvictedKeys(Store* store) {
  uint64_t evicted = 0;
  for (Store* at = store; at != nullptr; at = Under(at)) evicted = std::max(evicted, at->Keyspace().evicted_keys);
  return evicted;
}

}  // namespace kvcg::server
