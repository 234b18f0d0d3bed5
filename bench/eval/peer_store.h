// The CPU peer map of Fig. 5/6 (the paper compares against MICA; we use the
// foundation benchmark's peer, libcuckoo, with the same data model:
// cuckoohash_map<std::string, std::string>) behind the kvcg::Store interface,
// so the driver runs it exactly like every kvcg mode.
//
// Submit executes the whole batch on the calling thread before returning and
// then calls the completion there: there is no batching to amortise, so the
// batch's latency is each operation's latency. GET/PUT/DELETE return the
// previous value as the Store contract says; compare-and-swap is not needed
// by YCSB and answers kInvalidArgument. No limits are enforced.
// Thread-safe (libcuckoo is a concurrent map).
#pragma once

#include <memory>

#include "kvcg/store.h"

namespace kvcg::eval {

// Opens an empty peer map sized for `expected_keys`.
std::unique_ptr<Store> OpenCuckooPeer(uint64_t expected_keys);

}  // namespace kvcg::eval
