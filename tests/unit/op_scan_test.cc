// OpScan / TypeMask64 (src/common/op_scan.h): the positions it yields are
// exactly those a per-op type test finds, for every type set, column length
// (chunk tails included), density and byte value (types outside 0..7 are in
// no set), at any alignment of the column.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/op_scan.h"

namespace kvcg {
namespace {

std::vector<size_t> Reference(const std::vector<uint8_t>& bytes, size_t from, size_t n,
                              uint32_t set) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t t = bytes[from + i];
    if (t < 8 && (set >> t & 1) != 0) out.push_back(i);
  }
  return out;
}

std::vector<size_t> Scanned(const std::vector<uint8_t>& bytes, size_t from, size_t n,
                            uint32_t set) {
  std::vector<size_t> out;
  const auto* types = reinterpret_cast<const OpType*>(bytes.data() + from);
  size_t i;
  for (OpScan s(types, n, set); s.Next(&i);) out.push_back(i);
  return out;
}

TEST(OpScan, YieldsExactlyTheOpsOfTheSetInOrder) {
  std::mt19937_64 rng(7);
  const uint32_t sets[] = {kStoringTypes, kWritingTypes, TypeBit(OpType::kGet),
                           TypeBit(OpType::kExpire), 0u, 0xffu};
  for (int density : {0, 1, 50, 500, 1000}) {
    std::vector<uint8_t> bytes(1000 + 7);
    for (auto& b : bytes) {
      const uint64_t r = rng();
      // Mostly GETs; `density` per mille a random type, a few bytes no type.
      b = r % 1000 < uint64_t(density) ? uint8_t(1 + (r >> 20) % 4) : 0;
      if ((r >> 40) % 97 == 0) b = uint8_t(5 + (r >> 48) % 250);
    }
    for (size_t from : {0, 1, 7}) {
      for (size_t n : {0, 1, 15, 16, 17, 63, 64, 65, 128, 999, 1000}) {
        for (uint32_t set : sets) {
          ASSERT_EQ(Scanned(bytes, from, n, set), Reference(bytes, from, n, set))
              << "density " << density << " from " << from << " n " << n << " set " << set;
        }
      }
    }
  }
}

TEST(OpScan, MaskOfAChunkNamesEachPosition) {
  std::vector<OpType> types(64, OpType::kGet);
  types[0] = OpType::kPut;
  types[17] = OpType::kCompareAndSwap;
  types[63] = OpType::kPut;
  types[40] = OpType::kDelete;
  EXPECT_EQ(TypeMask64(types.data(), 64, kStoringTypes),
            (uint64_t(1) << 0) | (uint64_t(1) << 17) | (uint64_t(1) << 63));
  EXPECT_EQ(TypeMask64(types.data(), 64, kWritingTypes),
            (uint64_t(1) << 0) | (uint64_t(1) << 17) | (uint64_t(1) << 40) | (uint64_t(1) << 63));
  // Only `count` ops are looked at.
  EXPECT_EQ(TypeMask64(types.data(), 17, kStoringTypes), uint64_t(1));
}

}  // namespace
}  // namespace kvcg
