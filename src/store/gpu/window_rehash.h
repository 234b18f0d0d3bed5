// The window table's rebuild kernel (window_rehash.cu): every live entry of
// one window table inserted into another (growth: WindowTable::Grow).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "store/gpu/window_types.h"

namespace kvcg::store::gpu {

// Inserts every live slot of `from` into `to` (which must be cleared, with
// room for them all under its load limit), with its value and access byte,
// counting the slots it claims in *to.used; copies the sentinel keys' side
// table and access bytes. `slot_hashes`: null = each key's hash is
// Xxh3Fixed8 (the store's default hash, computed here); else device memory
// with the hash of slot i's key at index i (4 W of `from` entries; a custom
// Config::hash only the host can compute). Nothing else may run on either
// table meanwhile. Enqueued on `stream`; returns the launch error.
cudaError_t WindowRehash(const WindowTableView& from, const WindowTableView& to,
                         const uint64_t* slot_hashes, cudaStream_t stream);

}  // namespace kvcg::store::gpu
