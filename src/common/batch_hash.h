// HashKeys: Config::hash of every key of a batch, as a column.
//
// Why a helper: the engine's routing pass hashes every op of every batch
// before it can answer one hot op, so this loop is part of every hot op's
// latency (docs/BENCHMARKS.md 3c). Through the HashFunction pointer each key
// costs an indirect call and XXH3's dispatch on the key's length; with the
// default hash (Xxh3Hash) this loop calls XXH3 inline instead, and for a
// fixed-width batch of 8-byte keys (the GPU layout's) with the length known
// at compile time, so the hash is a few multiplies per key. Other hashes
// (tests inject degenerate ones) go through the pointer as before.
#pragma once

#include <cstdint>

#include "kvcg/batch.h"
#include "kvcg/hash.h"

namespace kvcg {

// out[i] = hash(batch.key(i)) for every op i (out holds batch.size()).
void HashKeys(const Batch& batch, HashFunction hash, uint64_t* out);

}  // namespace kvcg
