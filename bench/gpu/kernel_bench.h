// Pieces shared by the parts of kvcg-bench-gpu kernel: the fixed8
// benchmark (kernel_bench.cc), its window-table rows
// (kernel_window_bench.cc) and the general-layout one
// (kernel_general_bench.cc). Definitions in kernel_bench.cc unless noted.
//
// They bypass the store's pipeline and launch the table kernels themselves
// on device-resident batches (DeviceArb); the timed region (CUDA events)
// holds kernel launches only, each with its own pre-zeroed header (cursor,
// allowance 0).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {
class GpuStore;
class WindowTable;
}  // namespace kvcg::store::gpu

namespace kvcg::bench {

// Header words of one launch: [0] cursor, [1] slab allowance, [2..3] unused.
constexpr size_t kHdrWords = 4;
// Device-resident batches per mix, and timed launches over them (round robin).
constexpr int kKernelBatches = 4, kKernelReps = 24;

// One device-resident batch: the L-Slab input and result columns. The
// general layout adds vlen, rec and the key arena (arena_words words).
struct DeviceArb {
  uint32_t cap = 0;
  bool general = false;
  uint64_t *hash = nullptr, *key = nullptr, *ctl = nullptr, *value = nullptr;
  uint64_t *rec = nullptr, *arena = nullptr;  // general only
  uint32_t* vlen = nullptr;                   // general only
  uint8_t* code = nullptr;
  uint64_t *rvalue = nullptr, *rrec = nullptr;
  uint32_t* rlen = nullptr;
  uint32_t* done = nullptr;  // per-group counters: unused (every op is group 0), but valid

  // fixed8: Alloc(n). general: Alloc(n, true, words of key bytes).
  void Alloc(uint32_t n, bool general_layout = false, uint64_t arena_words = 0);
  void Free();
  // The view of the first n ops, with launch header `hdr` (kHdrWords words).
  store::gpu::ArbView View(uint32_t n, uint32_t* hdr) const;
};

// Copies the result codes (and the ctl words, for each op's type) of `n`
// ops back and checks each: get_code for a GET, put_code for a PUT; with
// get_len >= 0 a GET's res_len must be get_len too (general). Fails the run
// on the first mismatch.
void CheckCodes(const DeviceArb& arb, uint32_t n, const char* what, uint8_t get_code,
                uint8_t put_code, int64_t get_len = -1);

// Stream, events and the launch headers (kKernelBatches warm-up headers,
// then kKernelReps timed ones) of one kernel benchmark.
struct KernelRig {
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  uint32_t* hdrs = nullptr;
  void Init();
  void Destroy();
  // Mean seconds of `launch` (enqueued on s) over 5 timed runs after one
  // warm-up.
  double SecondsPerLaunch(const std::function<void()>& launch);
};

// Random-read bounds measured on a table's own memory (`bytes` from
// `base`): random 8-byte reads and random 256-byte slab-half reads (what
// one L-Slab probe costs), in G reads/s.
struct KernelBounds {
  double read8_gps = 0, slab256_gps = 0;
};
KernelBounds MeasureBounds(const uint64_t* base, uint64_t bytes, KernelRig& rig);

// Random 64-byte window reads over `windows` windows at `slots` (a tile of 4
// lanes a window, as a window-table probe reads), in G reads/s; with
// `records` (rec_count 128-byte records) each read is followed by the read
// of the record the window names (a general GET on windows). `sink`: 8
// bytes of device memory.
double MeasureWindowReads(const uint64_t* slots, uint64_t windows, KernelRig& rig, uint64_t* sink,
                          const uint64_t* records = nullptr, uint64_t rec_count = 0);

// One mix of general-layout batches on the L-Slab table under each kernel
// variant ({min_blocks, tile} pairs): per variant, a warm-up launch of every
// batch, then kKernelReps timed launches; every op must answer found (GET,
// with a get_len-byte value) or "found, stored" (PUT). Prints a progress
// line on stderr and one JSON row per variant on stdout (preceded by ",\n"
// unless *first_row); bytes_per_op turns G ops/s into the dram_gbps_est
// column. Restores the default variant.
void RunVariants(const store::gpu::TableView& table, KernelRig& rig,
                 const std::vector<DeviceArb>& arbs, uint32_t batch, const Mix& mix,
                 const std::vector<std::pair<int, int>>& variants, double slab_gps,
                 double bytes_per_op, int64_t get_len, bool* first_row);

// Opens a GPU store of `layout` sized for `keys`, active expiry off (no
// sweep kernel may run beside the timed launches); *gs: the store as a
// GpuStore (its table and pool).
std::unique_ptr<Store> OpenKernelStore(Layout layout, uint64_t keys, store::gpu::GpuStore** gs);

// Device memory of the table: head slabs and the pool slabs taken (each
// with its access bytes), then what the pool has allocated.
struct TableBytes {
  uint64_t used = 0, allocated = 0;
};
TableBytes TableDeviceBytes(store::gpu::GpuStore& gs);

// Window tables (kernel_window_bench.cc): one sized for the keys at `load`,
// prefilled with BenchKey(0 .. keys) (checked), and its random 64-byte
// window-read bounds: in launches of ~17 M reads (window64_gps), and in
// launches of one batch's `batch` reads (window64_batch_gps: what a launch
// per batch costs the reads alone).
struct WindowBench {
  std::unique_ptr<store::gpu::WindowTable> table;
  double load = 0, fill_s = 0, window64_gps = 0, window64_batch_gps = 0;
  double mean_probe_windows = 0;  // windows a hit reads, on average
  uint64_t max_probe_windows = 0;
};
WindowBench PrefillWindowTable(uint64_t keys, int keys_log2, double load, uint32_t batch,
                               KernelRig& rig);
// A bound on the window kernel's rate from its claims alone: ops per
// second when the kernel's resident blocks only claim a batch of `batch`
// ops from one cursor, 32 at a time (the ring's claim).
double MeasureClaimBound(uint32_t batch, KernelRig& rig);
// The "window_tables" header field of the fixed8 document.
void PrintWindowHeader(const std::vector<WindowBench>& tables, uint64_t keys);
// As RunVariants, on a window table (one kernel variant); rows carry
// "table": "window" and the load. The batches are launched over `streams`
// streams in turn (more than one only for batches of GETs only, which the
// pipeline runs beside each other).
void RunWindowMix(const WindowBench& w, KernelRig& rig, const std::vector<DeviceArb>& arbs,
                  uint32_t batch, const Mix& mix, int streams, bool* first_row);

// The two layouts' benchmarks (each prints one JSON document).
int RunKernelFixed8(const Args& args);
int RunKernelGeneral(const Args& args);

}  // namespace kvcg::bench
