// Shared pieces of kvcg-bench-gpu: arguments, CUDA error checks, the JSON
// header every mode prints, and the host workload of the e2e and latency
// modes (keys, values, and the check of every result).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kernels.h"
#include "kvcg/store.h"

namespace kvcg::bench {

// Any CUDA error ends the benchmark (exit 2): a number measured on a failed
// device is worthless.
#define KVCG_CK(x)                                                                   \
  do {                                                                               \
    const cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                 \
                   cudaGetErrorString(e_));                                          \
      std::exit(2);                                                                  \
    }                                                                                \
  } while (0)

// Prints the message and exits 1: a wrong result must fail the run, not
// hide in a number.
[[noreturn]] void Fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

struct Args {
  std::string mode;
  int keys_log2 = -1;         // -1: the mode's default (kernel 27 fixed8 / 24 general,
                              // e2e 24, latency 22)
  double seconds = 3.0;       // e2e: measured seconds per cell
  double warmup = 0.5;        // e2e: unmeasured seconds before each cell
  int threads = 8;            // e2e: submitter threads (also the prefill's)
  int depth = 2;              // e2e: batches in flight per submitter thread
  int batch = 65536;          // e2e: ops per submitted batch; kernel fixed8: ops per batch
  bool batch_given = false;   // --batch was passed (kernel fixed8's default: the store's)
  std::string layout = "both";  // e2e, latency: fixed8 | general | both
  bool layout_given = false;    // --layout was passed (kernel mode's default is fixed8)
  bool cpu = true;            // e2e, latency: also run the CPU backend
  bool consume_in_completion = true;  // e2e: false = on the submitter thread
  int pregenerated = 0;       // e2e: batches of columns generated ahead per thread (0: none)
  std::string mix;            // e2e, kernel fixed8: only this mix (empty: all)
  int iterations = 20000;     // latency: measured batches per cell
  int gpu_idle_spin_us = -1;  // latency: Config::gpu_idle_spin_us (-1: the default)
};

struct Mix {
  const char* name;
  uint32_t put_per_mille;
};

// "YYYY-MM-DDTHH:MM:SSZ".
std::string Now();
// Name of CUDA device 0.
std::string DeviceName();
// $COMMIT, or "unknown".
std::string Commit();
// JSON string literal of `s` (quotes included).
std::string Quote(std::string_view s);
// Opens a store or exits 2.
std::unique_ptr<Store> OpenStore(Config config);
// The fields every document starts with: benchmark, device, date, commit.
void PrintHeader(const char* benchmark);

// ------------------------------------------------------------- workload
// Key number i of the e2e and latency workloads: fixed8 the 8 bytes of
// BenchKey(i); general 16 bytes, BenchKey(i) then ~i. Its value: fixed8 the
// 8 bytes of ValueTag(i); general 64 bytes, ValueTag(i) then 'v's. Every PUT
// of key i writes that same value, so a GET of key i must return it whatever
// the interleaving: the check below needs no bookkeeping beyond the index.
inline uint64_t ValueTag(uint64_t i) { return (i * 0xD6E8FEB86659FD93ull) ^ 0x5BD1E9955BD1E995ull; }

struct Shape {
  bool general;
  size_t key_bytes() const { return general ? 16 : 8; }
  size_t value_bytes() const { return general ? 64 : 8; }
  const char* name() const { return general ? "general" : "fixed8"; }
};

// A GET or PUT of key i, collected as columns and appended with one
// Batch::AppendBulk call (the columnar way an embedder fills a batch from
// arrays). Reused per thread: nothing is allocated per op once warm.
struct Columns {
  std::vector<OpType> types;
  std::vector<uint64_t> keys;    // 1 (fixed8) or 2 (general) words per op
  std::vector<uint64_t> values;  // 1 or 8 words per op
  void Clear() {
    types.clear();
    keys.clear();
    values.clear();
  }
  void Add(Shape shape, bool put, uint64_t i) {
    types.push_back(put ? OpType::kPut : OpType::kGet);
    keys.push_back(BenchKey(i));
    if (shape.general) keys.push_back(~i);
    values.push_back(ValueTag(i));
    if (shape.general) {
      uint64_t v;
      std::memset(&v, 'v', 8);
      for (int w = 0; w < 7; ++w) values.push_back(v);
    }
  }
  void AppendTo(Batch& b, Shape shape) const {
    b.AppendBulk(types.data(), keys.data(), shape.key_bytes(), values.data(),
                 shape.value_bytes(), types.size());
  }
};

// Reads result j of `r` for key i: its code must be `want`; a found value
// must be key i's value. Its first 8 bytes are xor'ed into *sum (the
// consumer's use of the bytes). Returns false on any mismatch.
inline bool CheckResult(const Results& r, size_t j, Code want, uint64_t i, Shape shape,
                        uint64_t* sum) {
  if (r.code(j) != want) return false;
  if (want != Code::kOk) return r.value(j).empty();
  const std::string_view v = r.value(j);
  if (v.size() != shape.value_bytes()) return false;
  uint64_t word;
  std::memcpy(&word, v.data(), 8);
  *sum ^= word;
  return word == ValueTag(i);
}

// A small, fast generator (splitmix64) for the submitter threads.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // True with probability per_mille / 1000.
  bool Chance(uint32_t per_mille) { return ((Next() >> 32) * 1000 >> 32) < per_mille; }
};

// Latencies (any unit): sorted copy's quantile q.
double Quantile(const std::vector<double>& sorted, double q);

// The modes (kernel_bench.cc with kernel_general_bench.cc, e2e_bench.cc,
// latency_bench.cc, expiry_bench.cc).
int RunKernel(const Args& args);
int RunE2e(const Args& args);
int RunLatency(const Args& args);
int RunExpiry(const Args& args);

// Fills keys [0, keys) through Store::Submit with `threads` threads (e2e_bench.cc);
// every PUT must answer kNotFound. Returns the seconds it took.
double Prefill(Store* store, Shape shape, uint64_t keys, int threads);

}  // namespace kvcg::bench
