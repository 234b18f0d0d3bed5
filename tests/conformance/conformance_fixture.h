// The fixture every conformance test shares, and the assertion helpers that
// make a failing comparison readable (binary values are printed escaped and
// truncated, so a mismatch in a 16 MiB value does not flood the log).
//
// Tests must run on every row of backend_params.h, including Layout::kFixed8,
// which only accepts 8-byte keys and values. K(i)/V(i) produce keys and values
// that are valid in the row's layout, so most tests are written once; tests
// that are inherently about other sizes use KVCG_SKIP_IF_FIXED8(reason).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "backend_params.h"
#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "kvcg/results.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace kvcg {
// gtest finds these through ADL, so EXPECT_EQ on codes prints "not_found".
void PrintTo(Code code, std::ostream* os);
void PrintTo(const OpResult& result, std::ostream* os);
void PrintTo(const OpResultView& result, std::ostream* os);
}  // namespace kvcg

namespace kvcg::conformance {

// `bytes` escaped (\xNN for non-printables) and cut to `max` bytes.
std::string Show(std::string_view bytes, size_t max = 48);

// r is kOk with exactly `value`. Each takes a view (results[i] of a
// Results) or, through the overloads below, an owned OpResult (Get/Put/...).
::testing::AssertionResult Found(const OpResultView& r, std::string_view value);
// r is kNotFound with an empty value.
::testing::AssertionResult NotFound(const OpResultView& r);
// r is the error `code` with an empty value.
::testing::AssertionResult Failed(const OpResultView& r, Code code);
inline OpResultView View(const OpResult& r) { return {r.code, r.value}; }
inline ::testing::AssertionResult Found(const OpResult& r, std::string_view value) {
  return Found(View(r), value);
}
inline ::testing::AssertionResult NotFound(const OpResult& r) { return NotFound(View(r)); }
inline ::testing::AssertionResult Failed(const OpResult& r, Code code) {
  return Failed(View(r), code);
}

// In a test body: skips the rest of the test on fixed8 rows, printing why.
#define KVCG_SKIP_IF_FIXED8(why) \
  if (fixed8()) GTEST_SKIP() << "not applicable to layout fixed8: " << (why)

// gtest prints a row by its name.
void PrintTo(const BackendParam& row, std::ostream* os);

// Deterministic pseudo-random bytes (xorshift), for large and binary values.
std::string RandomBytes(size_t size, uint64_t seed);

class Conformance : public ::testing::TestWithParam<BackendParam> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Closes the current store and opens a fresh one from the row's Config
  // after `tweak` adjusted it. Use as ASSERT_NO_FATAL_FAILURE(Reopen(...)).
  void Reopen(const std::function<void(Config&)>& tweak);

  bool fixed8() const { return config_.layout == Layout::kFixed8; }

  // The i-th key / value: distinct for distinct i, valid in this layout. In
  // the general layout V(i, size) has exactly `size` bytes (>= 1 recommended).
  std::string K(uint64_t i) const;
  std::string V(uint64_t i, size_t general_size = 24) const;

  // An empty batch in the store's own memory (pinned on the GPU rows), as an
  // application gets it; tests that build a plain Batch check that any
  // batch works with any store.
  Batch NewBatch() { return store_->NewBatch(); }

  // Execute, checking that there is one result per operation (a short reply
  // is padded with kInternal results so callers can index safely). The
  // views stay valid while the returned Results lives.
  Results Run(Batch batch);
  OpResult Get(std::string_view key) { return store_->Get(key); }
  OpResult Put(std::string_view key, std::string_view value) { return store_->Put(key, value); }
  OpResult Delete(std::string_view key) { return store_->Delete(key); }
  // expected == nullptr: only if absent.
  OpResult Cas(std::string_view key, const std::string_view* expected, std::string_view desired);

  Config config_;
  std::unique_ptr<Store> store_;
};

}  // namespace kvcg::conformance
