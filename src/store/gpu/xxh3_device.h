// Xxh3Device: XXH3-64 (seed 0, default secret) of a key of any length,
// computable on the host and on the device.
//
// Why our own port: for general (variable-length) keys the GPU hashes the
// keys itself, so the host does no per-op work. The table is shared with the
// Store path and the router, which hash with kvcg::Xxh3Hash (XXH3_64bits from
// xxhash.h on the host), so this function must agree with it bit for bit for
// every length. xxhash.h itself is host-only (its secret is a host `static
// const` array and its 128-bit multiply uses host intrinsics), hence this
// re-statement of the same algorithm:
//   len 0..16     XXH3_len_0to16_64b   (1..3, 4..8, 9..16 byte cases)
//   len 17..128   XXH3_len_17to128_64b (pairs of 16-byte mixes from both ends)
//   len 129..240  XXH3_len_129to240_64b
//   len > 240     XXH3_hashLong_64b: 8 accumulators over 64-byte stripes,
//                 a scramble after each 16-stripe (1024-byte) block, a last
//                 stripe at the end of the input, then the accumulators merged.
// Xxh3Fixed8 (xxh3_fixed8.h) is the len == 8 case folded by hand.
//
// The default 192-byte secret is kept as 24 little-endian 64-bit words behind
// a constexpr switch (SecretWord), so it needs no __constant__/__device__
// array and no --expt-relaxed-constexpr: every read of it at a fixed offset
// folds to an immediate once the loops below are unrolled.
//
// Input: any alignment. On the host words are read with memcpy; on the device
// an 8-byte aligned word is one load (our callers pass 8-byte aligned key
// bytes, so every stripe load of a long key is), a 4-byte aligned one two,
// anything else byte by byte.
//
// tests/unit/xxh3_device_test.cc checks it against XXH3_64bits on the host
// for every length up to 1200, several long lengths and unaligned starts.
#pragma once

#include <cstdint>
#include <cstring>

#include "store/gpu/lslab_types.h"

// Loop unrolling hint for the fixed-count loops (full unroll turns every
// secret read into a constant). Device pass: nvcc's `#pragma unroll`. Host
// pass behind nvcc: none (nvcc's front end rejects GCC's spelling and g++
// warns on nvcc's; an index that stays variable only costs a table load, as
// the compiler turns SecretWord's switch into one). Plain g++/clang: their own.
#if defined(__CUDA_ARCH__)
#define KVCG_XXH3_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define KVCG_XXH3_UNROLL
#elif defined(__clang__)
#define KVCG_XXH3_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define KVCG_XXH3_UNROLL _Pragma("GCC unroll 16")
#else
#define KVCG_XXH3_UNROLL
#endif
// The 16-stripe loops of HashLong<kKnownAligned8>: on the device only the
// aligned path (the one our callers take) is unrolled; unrolling the
// byte-wise path too would add thousands of instructions for a rare case.
#if defined(__CUDA_ARCH__)
#define KVCG_XXH3_UNROLL_STRIPES _Pragma("unroll (kKnownAligned8 ? 16 : 1)")
#else
#define KVCG_XXH3_UNROLL_STRIPES KVCG_XXH3_UNROLL
#endif

namespace kvcg::store::gpu {

namespace xxh3_detail {

constexpr uint64_t kPrime32_1 = 0x9E3779B1ull;
constexpr uint64_t kPrime32_2 = 0x85EBCA77ull;
constexpr uint64_t kPrime32_3 = 0xC2B2AE3Dull;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ull;

constexpr uint32_t kStripeBytes = 64;
constexpr uint32_t kSecretBytes = 192;
constexpr uint32_t kStripesPerBlock = (kSecretBytes - kStripeBytes) / 8;  // 16
constexpr uint32_t kBlockBytes = kStripeBytes * kStripesPerBlock;         // 1024

// Word i (bytes 8i..8i+7, little-endian) of xxHash's default 192-byte secret.
KVCG_HD constexpr uint64_t SecretWord(uint32_t i) {
  switch (i) {
    case 0: return 0xbe4ba423396cfeb8ull;
    case 1: return 0x1cad21f72c81017cull;
    case 2: return 0xdb979083e96dd4deull;
    case 3: return 0x1f67b3b7a4a44072ull;
    case 4: return 0x78e5c0cc4ee679cbull;
    case 5: return 0x2172ffcc7dd05a82ull;
    case 6: return 0x8e2443f7744608b8ull;
    case 7: return 0x4c263a81e69035e0ull;
    case 8: return 0xcb00c391bb52283cull;
    case 9: return 0xa32e531b8b65d088ull;
    case 10: return 0x4ef90da297486471ull;
    case 11: return 0xd8acdea946ef1938ull;
    case 12: return 0x3f349ce33f76faa8ull;
    case 13: return 0x1d4f0bc7c7bbdcf9ull;
    case 14: return 0x3159b4cd4be0518aull;
    case 15: return 0x647378d9c97e9fc8ull;
    case 16: return 0xc3ebd33483acc5eaull;
    case 17: return 0xeb6313faffa081c5ull;
    case 18: return 0x49daf0b751dd0d17ull;
    case 19: return 0x9e68d429265516d3ull;
    case 20: return 0xfca1477d58be162bull;
    case 21: return 0xce31d07ad1b8f88full;
    case 22: return 0x280416958f3acb45ull;
    case 23: return 0x7e404bbbcafbd7afull;
    default: return 0;
  }
}

// The 8 secret bytes starting at byte `off` (any offset < 185), little-endian.
KVCG_HD constexpr uint64_t Secret64(uint32_t off) {
  const uint32_t word = off >> 3;
  const uint32_t shift = (off & 7u) * 8u;
  return shift == 0 ? SecretWord(word)
                    : (SecretWord(word) >> shift) | (SecretWord(word + 1) << (64u - shift));
}

// The 4 secret bytes starting at byte `off`, little-endian.
KVCG_HD constexpr uint32_t Secret32(uint32_t off) { return static_cast<uint32_t>(Secret64(off)); }

KVCG_HD inline uint64_t Bswap64(uint64_t x) {
  x = ((x & 0x00FF00FF00FF00FFull) << 8) | ((x >> 8) & 0x00FF00FF00FF00FFull);
  x = ((x & 0x0000FFFF0000FFFFull) << 16) | ((x >> 16) & 0x0000FFFF0000FFFFull);
  return (x << 32) | (x >> 32);
}

KVCG_HD inline uint64_t Rotl64(uint64_t x, uint32_t r) { return (x << r) | (x >> (64u - r)); }

KVCG_HD inline uint64_t LoadBytesLE(const uint8_t* p, uint32_t n) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8u * i);
  return v;
}

// Little-endian loads from any address. kKnownAligned8: the caller guarantees
// an 8-byte aligned address (only used on the device).
template <bool kKnownAligned8 = false>
KVCG_HD inline uint64_t ReadLE64(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  if (kKnownAligned8 || (reinterpret_cast<uintptr_t>(p) & 7u) == 0) {
    return *reinterpret_cast<const uint64_t*>(p);
  }
  if ((reinterpret_cast<uintptr_t>(p) & 3u) == 0) {
    const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
    return uint64_t(q[0]) | (uint64_t(q[1]) << 32);
  }
  return LoadBytesLE(p, 8);
#else
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = Bswap64(v);
#endif
  return v;
#endif
}

KVCG_HD inline uint32_t ReadLE32(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  if ((reinterpret_cast<uintptr_t>(p) & 3u) == 0) return *reinterpret_cast<const uint32_t*>(p);
  return static_cast<uint32_t>(LoadBytesLE(p, 4));
#else
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = static_cast<uint32_t>(Bswap64(v) >> 32);
#endif
  return v;
#endif
}

// Full 64x64 -> 128-bit product, low half XOR high half.
KVCG_HD inline uint64_t MulFold64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return (a * b) ^ __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__)
  const unsigned __int128 prod = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(prod) ^ static_cast<uint64_t>(prod >> 64);
#else
  const uint64_t ll = (a & 0xFFFFFFFFull) * (b & 0xFFFFFFFFull);
  const uint64_t hl = (a >> 32) * (b & 0xFFFFFFFFull);
  const uint64_t lh = (a & 0xFFFFFFFFull) * (b >> 32);
  const uint64_t hh = (a >> 32) * (b >> 32);
  const uint64_t mid = (ll >> 32) + (hl & 0xFFFFFFFFull) + lh;
  const uint64_t hi = (hl >> 32) + (mid >> 32) + hh;
  const uint64_t lo = (mid << 32) | (ll & 0xFFFFFFFFull);
  return lo ^ hi;
#endif
}

// XXH64's final mix (used by the 0- and 1..3-byte cases).
KVCG_HD inline uint64_t Xxh64Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  return h ^ (h >> 32);
}

// XXH3's light final mix, for inputs that are already well mixed.
KVCG_HD inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= 0x165667919E3779F9ull;
  return h ^ (h >> 32);
}

// XXH3's stronger final mix for the 4..8-byte case (Evensen's rrmxmx).
KVCG_HD inline uint64_t Rrmxmx(uint64_t h, uint64_t len) {
  h ^= Rotl64(h, 49) ^ Rotl64(h, 24);
  h *= 0x9FB21C651E98DF25ull;
  h ^= (h >> 35) + len;
  h *= 0x9FB21C651E98DF25ull;
  return h ^ (h >> 28);
}

// 16 input bytes against 16 secret bytes starting at `secret_off`.
KVCG_HD inline uint64_t Mix16(const uint8_t* p, uint32_t secret_off) {
  return MulFold64(ReadLE64(p) ^ Secret64(secret_off), ReadLE64(p + 8) ^ Secret64(secret_off + 8));
}

KVCG_HD inline uint64_t HashUpTo16(const uint8_t* p, uint32_t len) {
  if (len > 8) {
    const uint64_t lo = ReadLE64(p) ^ (Secret64(24) ^ Secret64(32));
    const uint64_t hi = ReadLE64(p + len - 8) ^ (Secret64(40) ^ Secret64(48));
    return Avalanche(uint64_t(len) + Bswap64(lo) + hi + MulFold64(lo, hi));
  }
  if (len >= 4) {
    const uint64_t first = ReadLE32(p);
    const uint64_t last = ReadLE32(p + len - 4);
    const uint64_t v = last + (first << 32);
    return Rrmxmx(v ^ (Secret64(8) ^ Secret64(16)), len);
  }
  if (len > 0) {
    // Bytes: [last, len, first, middle] from low to high.
    const uint32_t packed = (uint32_t(p[0]) << 16) | (uint32_t(p[len >> 1]) << 24) |
                            uint32_t(p[len - 1]) | (len << 8);
    return Xxh64Avalanche(uint64_t(packed) ^ uint64_t(Secret32(0) ^ Secret32(4)));
  }
  return Xxh64Avalanche(Secret64(56) ^ Secret64(64));
}

KVCG_HD inline uint64_t Hash17To128(const uint8_t* p, uint32_t len) {
  uint64_t acc = uint64_t(len) * kPrime64_1;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        acc += Mix16(p + 48, 96);
        acc += Mix16(p + len - 64, 112);
      }
      acc += Mix16(p + 32, 64);
      acc += Mix16(p + len - 48, 80);
    }
    acc += Mix16(p + 16, 32);
    acc += Mix16(p + len - 32, 48);
  }
  acc += Mix16(p, 0);
  acc += Mix16(p + len - 16, 16);
  return Avalanche(acc);
}

KVCG_HD inline uint64_t Hash129To240(const uint8_t* p, uint32_t len) {
  uint64_t acc = uint64_t(len) * kPrime64_1;
  KVCG_XXH3_UNROLL
  for (uint32_t i = 0; i < 8; ++i) acc += Mix16(p + 16 * i, 16 * i);
  acc = Avalanche(acc);
  // Chunks 8..len/16-1 (at most 7 of them) reuse the secret from byte 3.
  const uint32_t chunks = len / 16;
  KVCG_XXH3_UNROLL
  for (uint32_t i = 8; i < 15; ++i) {
    if (i < chunks) acc += Mix16(p + 16 * i, 16 * (i - 8) + 3);
  }
  // The last 16 bytes, against secret bytes 119..134 (136 - 17).
  acc += Mix16(p + len - 16, 119);
  return Avalanche(acc);
}

// One 64-byte stripe into the 8 accumulators, with the secret from byte
// `secret_off`. Each lane adds its input word to its neighbour (lane ^ 1) and
// the 32x32 product of the halves of (input ^ secret) to itself.
template <bool kKnownAligned8>
KVCG_HD inline void AccumulateStripe(uint64_t (&acc)[8], const uint8_t* p, uint32_t secret_off) {
  KVCG_XXH3_UNROLL
  for (uint32_t lane = 0; lane < 8; ++lane) {
    const uint64_t v = ReadLE64<kKnownAligned8>(p + 8 * lane);
    const uint64_t k = v ^ Secret64(secret_off + 8 * lane);
    acc[lane ^ 1] += v;
    acc[lane] += (k & 0xFFFFFFFFull) * (k >> 32);
  }
}

// After each full block: mix every accumulator with the last 64 secret bytes.
KVCG_HD inline void Scramble(uint64_t (&acc)[8]) {
  KVCG_XXH3_UNROLL
  for (uint32_t lane = 0; lane < 8; ++lane) {
    uint64_t a = acc[lane];
    a ^= a >> 47;
    a ^= Secret64(kSecretBytes - kStripeBytes + 8 * lane);
    acc[lane] = a * kPrime32_1;
  }
}

// len > 240. kKnownAligned8: p is 8-byte aligned (device fast path), so every
// stripe load (at p + 64n + 8 lane) is one aligned word.
template <bool kKnownAligned8>
KVCG_HD inline uint64_t HashLong(const uint8_t* p, uint32_t len) {
  uint64_t acc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                     kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  const uint32_t blocks = (len - 1) / kBlockBytes;
  for (uint32_t b = 0; b < blocks; ++b) {
    const uint8_t* block = p + b * kBlockBytes;
    KVCG_XXH3_UNROLL_STRIPES
    for (uint32_t s = 0; s < kStripesPerBlock; ++s) {
      AccumulateStripe<kKnownAligned8>(acc, block + s * kStripeBytes, 8 * s);
    }
    Scramble(acc);
  }
  // Whole stripes of the last (partial) block; the final stripe is excluded
  // here because it is always taken from the end of the input below.
  const uint8_t* block = p + blocks * kBlockBytes;
  const uint32_t stripes = ((len - 1) - blocks * kBlockBytes) / kStripeBytes;  // < 16
  KVCG_XXH3_UNROLL_STRIPES
  for (uint32_t s = 0; s < kStripesPerBlock; ++s) {
    if (s < stripes) AccumulateStripe<kKnownAligned8>(acc, block + s * kStripeBytes, 8 * s);
  }
  // Last 64 input bytes (possibly overlapping), secret from byte 192-64-7.
  AccumulateStripe<false>(acc, p + len - kStripeBytes, kSecretBytes - kStripeBytes - 7);
  // Merge: 4 pairs of accumulators against the secret from byte 11.
  uint64_t h = uint64_t(len) * kPrime64_1;
  KVCG_XXH3_UNROLL
  for (uint32_t i = 0; i < 4; ++i) {
    h += MulFold64(acc[2 * i] ^ Secret64(11 + 16 * i), acc[2 * i + 1] ^ Secret64(11 + 16 * i + 8));
  }
  return Avalanche(h);
}

}  // namespace xxh3_detail

// XXH3_64bits(data, len) with seed 0 and the default secret.
KVCG_HD inline uint64_t Xxh3Device(const void* data, uint32_t len) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (len <= 16) return xxh3_detail::HashUpTo16(p, len);
  if (len <= 128) return xxh3_detail::Hash17To128(p, len);
  if (len <= 240) return xxh3_detail::Hash129To240(p, len);
#ifdef __CUDA_ARCH__
  if ((reinterpret_cast<uintptr_t>(p) & 7u) == 0) return xxh3_detail::HashLong<true>(p, len);
#endif
  return xxh3_detail::HashLong<false>(p, len);
}

}  // namespace kvcg::store::gpu

#undef KVCG_XXH3_UNROLL
#undef KVCG_XXH3_UNROLL_STRIPES
