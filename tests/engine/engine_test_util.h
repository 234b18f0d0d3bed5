// Shared helpers for the engine tests: opening an engine over the CPU
// backend (optionally made asynchronous by DelayedStore) or the GPU backend.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "delayed_store.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"
#include "store/backends.h"

namespace kvcg::testing {

inline Config EngineConfig(Mode mode = Mode::kKvcg, Backend backend = Backend::kCpu) {
  Config c;
  c.backend = backend;
  c.mode = mode;
  c.router.switch_period_ms = 0;  // tests switch by hand unless they say otherwise
  if (backend == Backend::kGpu) c.gpu_memory_bytes = 1ull << 30;
  return c;
}

// Opens the engine over its own canonical store. delay_us > 0 puts a
// DelayedStore (asynchronous, up to delay_us per batch) in between.
inline std::unique_ptr<Engine> OpenEngine(const Config& config, uint32_t delay_us = 0) {
  Config canonical_config = config;
  canonical_config.mode = Mode::kCanonical;
  std::unique_ptr<Store> canonical;
  Status s = Store::Open(canonical_config, &canonical);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return nullptr;
  if (delay_us > 0) canonical = std::make_unique<DelayedStore>(std::move(canonical), delay_us);
  std::unique_ptr<Engine> engine;
  s = Engine::Open(config, std::move(canonical), &engine);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return engine;
}

// Test names for suites parameterized by the canonical store's delay (µs):
// "inline" for 0, else "delayed<N>us".
inline std::string CanonicalDelayName(const ::testing::TestParamInfo<uint32_t>& info) {
  return info.param == 0 ? std::string("inline") : "delayed" + std::to_string(info.param) + "us";
}

// For GPU variants: true (and a printed reason) when the test must skip.
inline bool NoGpu(std::string* why) {
  Config c = EngineConfig(Mode::kCanonical, Backend::kGpu);
  std::string reason;
  if (store::GpuAvailable(c, &reason)) return false;
  *why = "GPU backend unavailable: " + reason;
  return true;
}

}  // namespace kvcg::testing
