// Helpers shared by the GPU backend tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "kvcg/config.h"
#include "kvcg/store.h"
#include "store/backends.h"

// Skips the current test, printing why, when no usable CUDA device exists.
#define SKIP_WITHOUT_GPU()                                                         \
  do {                                                                             \
    std::string why;                                                               \
    if (!::kvcg::store::GpuAvailable(::kvcg::Config{}, &why)) {                    \
      GTEST_SKIP() << "no GPU: " << why;                                           \
    }                                                                              \
  } while (0)

namespace kvcg::gpu_test {

// The 8 bytes of `x`, as a fixed8 key or value.
inline std::string Bytes8(uint64_t x) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &x, 8);
  return s;
}

// A GPU store of `layout` with a 1 GiB slab pool.
inline Config GpuConfig(Layout layout) {
  Config c;
  c.backend = Backend::kGpu;
  c.layout = layout;
  c.gpu_memory_bytes = 1ull << 30;
  return c;
}

// The same with every key hashing to 7: one bucket, one long slab chain,
// and (in an ARB's prepare) one group of every op.
inline Config CollidingGpuConfig(Layout layout) {
  Config c = GpuConfig(layout);
  c.hash = [](std::string_view) -> uint64_t { return 7; };
  return c;
}

// Store::Open(c), failing the test (non-fatally: the caller checks the
// pointer) with the status when it does not open.
inline std::unique_ptr<Store> OpenOrDie(const Config& c) {
  std::unique_ptr<Store> s;
  const Status st = Store::Open(c, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

}  // namespace kvcg::gpu_test
