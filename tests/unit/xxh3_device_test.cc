// Xxh3Device (src/store/gpu/xxh3_device.h) is our host+device port of
// XXH3_64bits: the GPU hashes general keys with it, and the table and the
// router must agree with kvcg::Xxh3Hash bit for bit. This runs the port on the
// host against xxHash itself over every length up to 1200 (all of XXH3's
// short, mid-size and long code paths, block boundaries included), some long
// lengths, unaligned starts, and against Xxh3Fixed8 for 8-byte keys.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "kvcg/hash.h"
#include "store/gpu/xxh3_device.h"
#include "store/gpu/xxh3_fixed8.h"

namespace kvcg::store::gpu {
namespace {

// Deterministic pseudo-random bytes (xorshift64, fixed seed).
std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

TEST(Xxh3Device, MatchesXxh3_64bitsForEveryLengthUpTo1200) {
  const std::vector<uint8_t> bytes = RandomBytes(1200, 42);
  for (uint32_t len = 0; len <= 1200; ++len) {
    ASSERT_EQ(Xxh3Device(bytes.data(), len), XXH3_64bits(bytes.data(), len)) << "length " << len;
  }
}

TEST(Xxh3Device, MatchesXxh3_64bitsForDifferentContentPerLength) {
  for (uint32_t len = 0; len <= 1200; ++len) {
    const std::vector<uint8_t> bytes = RandomBytes(len, 1000 + len);
    ASSERT_EQ(Xxh3Device(bytes.data(), len), XXH3_64bits(bytes.data(), len)) << "length " << len;
  }
}

TEST(Xxh3Device, MatchesXxh3_64bitsForLongInputs) {
  for (uint32_t len : {2000u, 2047u, 2048u, 2049u, 3072u, 4096u, 65536u, 100003u, 1u << 20}) {
    const std::vector<uint8_t> bytes = RandomBytes(len, len);
    ASSERT_EQ(Xxh3Device(bytes.data(), len), XXH3_64bits(bytes.data(), len)) << "length " << len;
  }
}

TEST(Xxh3Device, MatchesXxh3_64bitsAtUnalignedStarts) {
  const std::vector<uint8_t> bytes = RandomBytes(100003 + 8, 7);
  for (uint32_t len : {0u,   1u,   3u,   4u,   7u,   8u,    9u,    15u,   16u,   17u,
                       31u,  33u,  64u,  65u,  96u,  97u,   127u,  128u,  129u,  143u,
                       200u, 239u, 240u, 241u, 255u, 256u,  511u,  1023u, 1024u, 1025u,
                       1087u, 1088u, 1089u, 2000u, 4096u, 65536u, 100003u}) {
    for (uint32_t offset = 1; offset <= 7; ++offset) {
      const uint8_t* p = bytes.data() + offset;
      ASSERT_EQ(Xxh3Device(p, len), XXH3_64bits(p, len)) << "length " << len << " offset " << offset;
    }
  }
}

TEST(Xxh3Device, AgreesWithXxh3Hash) {
  const std::vector<uint8_t> bytes = RandomBytes(5000, 3);
  for (uint32_t len = 0; len <= 5000; len += (len < 300 ? 1 : 61)) {
    const std::string_view key(reinterpret_cast<const char*>(bytes.data()), len);
    ASSERT_EQ(Xxh3Device(key.data(), len), Xxh3Hash(key)) << "length " << len;
  }
}

TEST(Xxh3Device, EqualsXxh3Fixed8ForEightByteKeys) {
  std::vector<uint64_t> keys = {0, 1, 2, 0xFF, 0x100, 0xFFFFFFFFull, 0x100000000ull,
                                0x0123456789ABCDEFull, 0x8000000000000000ull, ~0ull};
  const std::vector<uint8_t> bytes = RandomBytes(8 * 1000, 11);
  for (size_t i = 0; i < 1000; ++i) {
    uint64_t k;
    std::memcpy(&k, bytes.data() + 8 * i, 8);
    keys.push_back(k);
  }
  for (uint64_t key : keys) {
    uint8_t le[8];
    for (int b = 0; b < 8; ++b) le[b] = static_cast<uint8_t>(key >> (8 * b));
    ASSERT_EQ(Xxh3Device(le, 8), Xxh3Fixed8(key)) << std::hex << key;
    ASSERT_EQ(Xxh3Device(le, 8), XXH3_64bits(le, 8)) << std::hex << key;
  }
}

TEST(Xxh3Device, SecretWordsAreTheDefaultSecret) {
  // Every byte of the 192-byte secret, read back through Secret64, against
  // xxHash's own table.
  for (uint32_t off = 0; off + 8 <= sizeof(XXH3_kSecret); ++off) {
    uint64_t want = 0;
    for (int b = 0; b < 8; ++b) want |= uint64_t(XXH3_kSecret[off + b]) << (8 * b);
    ASSERT_EQ(xxh3_detail::Secret64(off), want) << "offset " << off;
  }
}

}  // namespace
}  // namespace kvcg::store::gpu
