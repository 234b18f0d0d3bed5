// The rows the conformance suite runs against: one named Config factory per
// backend configuration. Every TEST_P in this folder runs once per row, so a
// new backend or engine mode joins the whole suite by adding one row here.
//
// A row can also bring its own Open (an engine mode wraps the store) and its
// own availability check (GPU rows need a usable device); a row that is not
// available on this machine is skipped with the reason printed, never passed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kvcg/config.h"
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

inline const std::vector<BackendParam>& BackendParams() {
  static const std::vector<BackendParam> rows = {
      {"cpu-general", &CpuGeneral, &AlwaysAvailable, &Store::Open},
      {"cpu-fixed8", &CpuFixed8, &AlwaysAvailable, &Store::Open},
      {"gpu-general", &GpuGeneral, &GpuRowAvailable, &Store::Open},
      {"gpu-fixed8", &GpuFixed8, &GpuRowAvailable, &Store::Open},
  };
  return rows;
}

}  // namespace kvcg::conformance
