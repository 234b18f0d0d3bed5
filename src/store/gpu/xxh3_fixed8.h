// Xxh3Fixed8: XXH3-64 (seed 0) of an 8-byte key, computable on the device.
//
// The bulk path (bulk.h) hashes fixed8 keys on the GPU so that the host does
// no per-op work; the table is shared with the Store path, which hashes with
// Config::hash (Xxh3Hash by default), so both must agree bit for bit. This is
// xxHash's XXH3_len_4to8_64b for len == 8 and seed 0, with the two default
// secret words it reads folded into one constant. tests/gpu checks it against
// Xxh3Hash on the host.
#pragma once

#include <cstdint>

#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {

// `key`: the key's 8 bytes read little-endian.
KVCG_HD inline uint64_t Xxh3Fixed8(uint64_t key) {
  // readLE64(kSecret + 8) ^ readLE64(kSecret + 16)
  constexpr uint64_t kBitflip = 0x1cad21f72c81017cull ^ 0xdb979083e96dd4deull;
  constexpr uint64_t kPrime = 0x9FB21C651E98DF25ull;
  const uint64_t input64 = (key >> 32) | (key << 32);  // input2 + (input1 << 32)
  uint64_t h = input64 ^ kBitflip;
  h ^= ((h << 49) | (h >> 15)) ^ ((h << 24) | (h >> 40));
  h *= kPrime;
  h ^= (h >> 35) + 8;
  h *= kPrime;
  return h ^ (h >> 28);
}

}  // namespace kvcg::store::gpu
