// Shared pieces of the concurrent stress tests: the backend rows they run
// against, layout-aware key and value generators, and the run-length knobs.
//
// Rows: CPU general and fixed8, CPU with a forced-collision hash (every key
// hashes to 7, so all keys share one bucket/shard and only exact key
// comparison keeps them apart), and the GPU backend in both layouts (plain
// and with collisions). GPU rows are skipped with the reason printed when no
// usable GPU exists (CI), never silently passed.
//
// Run length: each stress test runs for KVCG_STRESS_SECONDS (default 1.0)
// with KVCG_STRESS_THREADS threads (default 8), and stops early after
// KVCG_STRESS_MAX_OPS operations (default 600000) so the history stays cheap
// to check. Sanitizer builds keep the defaults: the op cap, not the clock,
// bounds the work in a fast build, and in a slow one the clock does.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "kvcg/config.h"
#include "store/backends.h"

namespace kvcg::stress {

struct Row {
  const char* name;  // gtest suffix
  Config (*make_config)();
  bool gpu;
};

inline uint64_t CollidingHash(std::string_view) { return uint64_t{7}; }

inline Config Base(Backend backend, Layout layout) {
  Config c;
  c.backend = backend;
  c.layout = layout;
  c.expected_keys = 64;  // Small tables: growth happens under contention too.
  c.gpu_memory_bytes = 256ull << 20;  // The test GPU is shared.
  return c;
}
inline Config CpuGeneral() { return Base(Backend::kCpu, Layout::kGeneral); }
inline Config CpuFixed8() { return Base(Backend::kCpu, Layout::kFixed8); }
inline Config CpuCollide() {
  Config c = CpuGeneral();
  c.hash = &CollidingHash;
  return c;
}
inline Config GpuGeneral() { return Base(Backend::kGpu, Layout::kGeneral); }
inline Config GpuFixed8() { return Base(Backend::kGpu, Layout::kFixed8); }
inline Config GpuFixed8Collide() {
  Config c = GpuFixed8();
  c.hash = &CollidingHash;
  return c;
}

inline std::vector<Row> Rows() {
  return {
      {"cpu_general", &CpuGeneral, false},        {"cpu_fixed8", &CpuFixed8, false},
      {"cpu_collide", &CpuCollide, false},        {"gpu_general", &GpuGeneral, true},
      {"gpu_fixed8", &GpuFixed8, true},           {"gpu_fixed8_collide", &GpuFixed8Collide, true},
  };
}

inline std::string RowName(const Row& row) { return row.name; }
// GoogleTest prints parameters with this (found by ADL) in test names/logs.
inline void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

// Empty when the row can run here, else why not.
inline std::string Unavailable(const Row& row, const Config& config) {
  if (!row.gpu) return "";
  std::string why;
  if (store::GpuAvailable(config, &why)) return "";
  return why.empty() ? std::string("unknown reason") : why;
}

inline double EnvDouble(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  return end != text && v > 0 ? v : fallback;
}
inline double StressSeconds() { return EnvDouble("KVCG_STRESS_SECONDS", 1.0); }
inline int StressThreads() { return static_cast<int>(EnvDouble("KVCG_STRESS_THREADS", 8)); }
inline uint64_t StressMaxOps() {
  return static_cast<uint64_t>(EnvDouble("KVCG_STRESS_MAX_OPS", 600'000));
}

// `count` distinct keys valid for `layout`. General keys vary in length and
// include binary bytes and a long key; fixed8 keys are 8 binary bytes.
// `salt` separates key sets of different roles in one test.
inline std::vector<std::string> Keys(Layout layout, int count, uint32_t salt = 0) {
  std::vector<std::string> keys;
  for (int i = 0; i < count; ++i) {
    const uint64_t n = (uint64_t{salt} << 32) | static_cast<uint64_t>(i);
    if (layout == Layout::kFixed8) {
      const uint64_t mixed = n * 0x9e3779b97f4a7c15ull;  // Bijective: distinct keys.
      std::string k(8, '\0');
      std::memcpy(k.data(), &mixed, 8);
      keys.push_back(std::move(k));
    } else if (i % 8 == 5) {
      keys.push_back(std::string("bin\0key", 7) + std::to_string(n));
    } else if (i % 8 == 7) {
      keys.push_back(std::string(300, 'L') + std::to_string(n));
    } else {
      keys.push_back("key:" + std::to_string(n));
    }
  }
  return keys;
}

// A value no other write in the run produces: (writer, sequence number)
// packed into 8 bytes for fixed8; a readable tag padded to `pad` extra bytes
// for the general layout.
inline std::string UniqueValue(Layout layout, uint32_t writer, uint64_t seq, size_t pad = 0) {
  if (layout == Layout::kFixed8) {
    const uint64_t v = (uint64_t{writer} << 48) | (seq & ((uint64_t{1} << 48) - 1));
    std::string out(8, '\0');
    std::memcpy(out.data(), &v, 8);
    return out;
  }
  std::string out = "w" + std::to_string(writer) + "#" + std::to_string(seq);
  out.append(pad, static_cast<char>('a' + seq % 26));
  return out;
}

}  // namespace kvcg::stress
