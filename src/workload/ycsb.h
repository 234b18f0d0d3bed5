// YCSB core workloads as kvcg operation streams.
//
// A WorkloadSpec says what to draw (operation mix, key distribution, key
// space, value size); an OperationGenerator draws it deterministically from
// a seed, one instance per client thread. The benchmarks (bench/engine,
// tools/loadgen, bench/eval) all use this one generator, so their numbers
// describe the same workload.
//
// Keys: index i of the key space becomes 8 raw bytes (little-endian i) when
// key_bytes == 8 — the paper's 8-byte keys, which also fit Layout::kFixed8 —
// or "user" followed by i in decimal, zero-padded to key_bytes, otherwise.
// Prefilled keys are indices [0, prefill); workload D's inserts continue
// from there through a counter shared by all threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "workload/generators.h"

namespace kvcg::workload {

enum class Distribution : uint8_t { kUniform, kZipfian, kLatest };
enum class OpKind : uint8_t { kRead, kUpdate, kInsert, kReadModifyWrite };

const char* DistributionName(Distribution d);
const char* OpKindName(OpKind k);
bool ParseDistribution(const std::string& text, Distribution* out);

struct WorkloadSpec {
  std::string name = "b";
  double read = 0.95, update = 0.05, insert = 0.0, read_modify_write = 0.0;
  Distribution distribution = Distribution::kZipfian;
  double theta = 0.99;          // zipfian/latest skew, in (0, 1)
  uint64_t key_space = 1'000'000'000;
  uint64_t prefill = 10'000'000;
  size_t key_bytes = 8;
  size_t value_bytes = 8;
  // Zipfian ranks are drawn over this many items and folded into key_space;
  // 0 = YCSB's 10^10 (ScrambledZipfianGenerator::kItemCount).
  uint64_t zipf_items = 0;
};

// The YCSB core workloads: "a" (50/50 read/update), "b" (95/5), "c" (read
// only), "d" (95% read latest / 5% insert), "f" (50% read / 50%
// read-modify-write). Sets the mix and distribution; keeps the other fields.
// Returns false for anything else.
bool ApplyCoreWorkload(const std::string& name, WorkloadSpec* spec);

struct Operation {
  OpKind kind;
  uint64_t key_index;
};

class OperationGenerator {
 public:
  // `insert_counter` is shared by all generators of one run (workload D);
  // it starts at spec.prefill. May be null when spec.insert == 0.
  OperationGenerator(const WorkloadSpec& spec, uint64_t seed,
                     std::atomic<uint64_t>* insert_counter);
  ~OperationGenerator();

  Operation Next();
  // Fill *out with the key for `index` (reusing its buffer).
  void Key(uint64_t index, std::string* out) const;
  // Fill *out with a value of spec.value_bytes derived from `tag` (cheap; not
  // random data, but never all zeros, and different tags give different values).
  void Value(uint64_t tag, std::string* out) const;
  Random& rng() { return rng_; }

 private:
  uint64_t NextKey();
  WorkloadSpec spec_;
  Random rng_;
  std::atomic<uint64_t>* insert_counter_;
  std::unique_ptr<ScrambledZipfianGenerator> zipf_;
  std::unique_ptr<SkewedLatestGenerator> latest_;
};

// Key formatting shared with tools that build keys without a generator.
void FormatKey(uint64_t index, size_t key_bytes, std::string* out);

}  // namespace kvcg::workload
