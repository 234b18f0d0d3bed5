// kvcg/hash.h — the key hash used by every component.
//
// The hash decides the bucket in the canonical store, the hot cache and the
// router's histogram bin, so all of them must use the same function. It is a
// plain function pointer (not std::function) because it runs once per
// operation on the hot path. Tests inject degenerate hashes (e.g. one that
// maps every key to 7) to prove that equal hashes never make keys alias.
#pragma once

#include <cstdint>
#include <string_view>

namespace kvcg {

using HashFunction = uint64_t (*)(std::string_view key);

// xxHash3-64 with seed 0. Thread-safe, pure.
uint64_t Xxh3Hash(std::string_view key);

}  // namespace kvcg
