// The rows the conformance suite runs against: one named Config factory per
// backend configuration. Every TEST_P in this folder runs once per row, so a
// new backend or engine mode joins the whole suite by adding one row here.
//
// A row can also bring its own Open (an engine mode wraps the store) and its
// own availability check (GPU rows need a usable device); a row that is not
// available on this machine is skipped with the reason printed, never passed.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvcg/config.h"
#include "kvcg/engine.h"
#include "kvcg/hash.h"
#include "kvcg/model.h"
#include "kvcg/status.h"
#include "kvcg/store.h"
#include "store/backends.h"

namespace kvcg::conformance {

struct BackendParam {
  // Printed name, e.g. "cpu-general"; with '-' -> '_' it is the gtest suffix.
  const char* name;
  // A fresh Config for this row. Tests adjust limits/capacity/hash on top of it.
  Config (*make_config)();
  // True when the row can run here; otherwise *why says why not (printed on skip).
  bool (*available)(const Config& config, std::string* why);
  // Opens the store under test.
  Status (*open)(const Config& config, std::unique_ptr<Store>* store);
};

inline bool AlwaysAvailable(const Config&, std::string*) { return true; }

inline bool GpuRowAvailable(const Config& config, std::string* why) {
  std::string reason;
  if (store::GpuAvailable(config, &reason)) return true;
  *why = "GPU backend unavailable: " + reason;
  return false;
}

// Every row starts from this: a small sizing hint, so that tables grow during
// the tests (the growth path needs testing as much as the steady state) and
// opening one of the suite's many stores is cheap.
inline Config TestDefaults() {
  Config c;
  c.expected_keys = 1024;
  return c;
}

inline Config CpuGeneral() {
  Config c = TestDefaults();
  c.backend = Backend::kCpu;
  c.layout = Layout::kGeneral;
  return c;
}
inline Config CpuFixed8() {
  Config c = CpuGeneral();
  c.layout = Layout::kFixed8;
  return c;
}
inline Config GpuGeneral() {
  Config c = TestDefaults();
  c.backend = Backend::kGpu;
  c.layout = Layout::kGeneral;
  // Keep the slab pool modest: the suite opens many stores on a shared GPU.
  c.gpu_memory_bytes = 1ull << 30;
  return c;
}
inline Config GpuFixed8() {
  Config c = GpuGeneral();
  c.layout = Layout::kFixed8;
  return c;
}

// Engine modes (hot cache + router over a canonical store; kvcg/engine.h).
//  * kvcg-switching: starts all-cold and retrains + switches models every
//    millisecond on a few samples, so the switch protocol (block, drain,
//    replay, install, evict) runs in the middle of the suite's operations.
//  * kvcg-mixed: a fixed model that makes half of all keys hot (by their
//    bytes, not Config::hash, so forced collisions do not make all keys one
//    class); every test then mixes hot-cache and canonical-store keys.
//  * cpu-only: every key hot (the paper's KVC).
inline Config KvcgSwitching(Config c) {
  c.mode = Mode::kKvcg;
  c.router.switch_period_ms = 1;
  c.router.min_samples = 16;
  c.router.sample_rate = 1.0;
  c.router.threshold = 0.01;
  // Install whatever was trained: the suites' loads are flat, and the floor
  // would keep every switch all-cold, sparing the hot cache's side of it.
  c.router.min_hot_share = 0;
  return c;
}
inline Config KvcgFixedModel(Config c) {
  c.mode = Mode::kKvcg;
  c.router.switch_period_ms = 0;  // only the model installed at open
  return c;
}
inline Config CpuOnly(Config c) {
  c.mode = Mode::kHotOnly;
  return c;
}
inline Config KvcgSwitchingCpuGeneral() { return KvcgSwitching(CpuGeneral()); }
inline Config KvcgMixedCpuGeneral() { return KvcgFixedModel(CpuGeneral()); }
inline Config KvcgMixedCpuFixed8() { return KvcgFixedModel(CpuFixed8()); }
inline Config CpuOnlyCpuGeneral() { return CpuOnly(CpuGeneral()); }
inline Config CpuOnlyCpuFixed8() { return CpuOnly(CpuFixed8()); }
inline Config CpuOnlyGpuFixed8() { return CpuOnly(GpuFixed8()); }
inline Config KvcgSwitchingGpuGeneral() { return KvcgSwitching(GpuGeneral()); }
inline Config KvcgMixedGpuGeneral() { return KvcgFixedModel(GpuGeneral()); }
inline Config KvcgMixedGpuFixed8() { return KvcgFixedModel(GpuFixed8()); }

// Opens the engine and installs the half-hot model before the test starts.
inline Status OpenKvcgMixed(const Config& config, std::unique_ptr<Store>* store) {
  Status s = Store::Open(config, store);
  if (!s.ok()) return s;
  Engine* engine = AsEngine(store->get());
  if (engine == nullptr) {
    store->reset();
    return Status::Internal("mode kvcg did not open an Engine");
  }
  s = engine->InstallModel(
      MakePredicateModel([](std::string_view key, uint64_t) { return (Xxh3Hash(key) & 1) != 0; },
                         "half of the keys hot, by key bytes"),
      "conformance row kvcg-mixed", nullptr);
  if (!s.ok()) store->reset();
  return s;
}

// Persistence rows: the Durable wrapper (kvcg/durable.h) around a backend or
// the engine, logging every write. Each open gets a fresh directory (removed
// at exit), so no store ever loads another's files.
inline std::string FreshDurabilityDir() {
  static std::mutex mu;
  static std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>;
    std::atexit([] {
      for (const std::string& d : *dirs) std::filesystem::remove_all(d);
    });
    return v;
  }();
  std::string tmpl = (std::filesystem::temp_directory_path() / "kvcg-conformance-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return {};
  std::lock_guard<std::mutex> lock(mu);
  dirs->push_back(tmpl);
  return tmpl;
}
inline Config LogAlways(Config c) {
  c.durability.append_only = true;
  c.durability.fsync = FsyncPolicy::kAlways;
  return c;
}
inline Config LogEverySec(Config c) {
  c.durability.append_only = true;
  c.durability.fsync = FsyncPolicy::kEverySec;
  return c;
}
inline Config CpuGeneralLogAlways() { return LogAlways(CpuGeneral()); }
inline Config CpuFixed8LogEverySec() { return LogEverySec(CpuFixed8()); }
inline Config KvcgMixedCpuGeneralLogAlways() { return LogAlways(KvcgMixedCpuGeneral()); }
inline Config GpuGeneralLogAlways() { return LogAlways(GpuGeneral()); }
inline Status OpenDurable(const Config& config, std::unique_ptr<Store>* store) {
  Config c = config;
  c.durability.dir = FreshDurabilityDir();
  if (c.durability.dir.empty()) return Status::Internal("mkdtemp failed");
  return Store::Open(c, store);
}
inline Status OpenDurableKvcgMixed(const Config& config, std::unique_ptr<Store>* store) {
  Config c = config;
  c.durability.dir = FreshDurabilityDir();
  if (c.durability.dir.empty()) return Status::Internal("mkdtemp failed");
  return OpenKvcgMixed(c, store);
}

inline const std::vector<BackendParam>& BackendParams() {
  static const std::vector<BackendParam> rows = {
      {"cpu-general", &CpuGeneral, &AlwaysAvailable, &Store::Open},
      {"cpu-fixed8", &CpuFixed8, &AlwaysAvailable, &Store::Open},
      {"gpu-general", &GpuGeneral, &GpuRowAvailable, &Store::Open},
      {"gpu-fixed8", &GpuFixed8, &GpuRowAvailable, &Store::Open},
      {"kvcg-switching-cpu-general", &KvcgSwitchingCpuGeneral, &AlwaysAvailable, &Store::Open},
      {"kvcg-switching-gpu-general", &KvcgSwitchingGpuGeneral, &GpuRowAvailable, &Store::Open},
      {"kvcg-mixed-cpu-general", &KvcgMixedCpuGeneral, &AlwaysAvailable, &OpenKvcgMixed},
      {"kvcg-mixed-cpu-fixed8", &KvcgMixedCpuFixed8, &AlwaysAvailable, &OpenKvcgMixed},
      {"cpu-only-cpu-general", &CpuOnlyCpuGeneral, &AlwaysAvailable, &Store::Open},
      {"cpu-only-cpu-fixed8", &CpuOnlyCpuFixed8, &AlwaysAvailable, &Store::Open},
      {"cpu-only-gpu-fixed8", &CpuOnlyGpuFixed8, &GpuRowAvailable, &Store::Open},
      {"kvcg-mixed-gpu-general", &KvcgMixedGpuGeneral, &GpuRowAvailable, &OpenKvcgMixed},
      {"kvcg-mixed-gpu-fixed8", &KvcgMixedGpuFixed8, &GpuRowAvailable, &OpenKvcgMixed},
      {"cpu-general-log-always", &CpuGeneralLogAlways, &AlwaysAvailable, &OpenDurable},
      {"cpu-fixed8-log-everysec", &CpuFixed8LogEverySec, &AlwaysAvailable, &OpenDurable},
      {"kvcg-mixed-cpu-general-log-always", &KvcgMixedCpuGeneralLogAlways, &AlwaysAvailable,
       &OpenDurableKvcgMixed},
      {"gpu-general-log-always", &GpuGeneralLogAlways, &GpuRowAvailable, &OpenDurable},
  };
  return rows;
}

}  // namespace kvcg::conformance
