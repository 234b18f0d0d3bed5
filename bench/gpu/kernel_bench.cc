// kvcg-bench-gpu kernel: the table kernels alone on device-resident batches
// (issue 3 §5 (a)). --layout fixed8 (the default) | general | both ("both"
// prints a JSON array of the two documents). fixed8: the window table, the
// layout's table (kernel_window_bench.cc), at three loads; general: the
// L-Slab table (kernel_general_bench.cc). This file: the fixed8 driver and
// the pieces both share (kernel_bench.h).
//
// The benchmarks bypass the pipeline and launch the table kernel themselves
// on batches generated in device memory (bench_kernels.cu), so nothing but
// the kernel is measured: mixes 100/0, 95/5, 50/50, 0/100 GET/PUT on
// batches of max_batch_ops ops. The keys of one batch are distinct (a
// permutation of a window of the key space, bench_kernels.h), so every op's
// ctl has group 0 / need 0: the same-key numbering the pipeline does on the
// GPU (ArbPrepare) is not needed and not measured. Each timed launch has its
// own pre-zeroed header (cursor, allowance), so the timed region (CUDA
// events) holds kernel launches only. Every key exists, so a GET must answer
// found and a PUT "found, stored" without taking room: any other code fails
// the run.
#include "kernel_bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "bench_util.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/window_kernel.h"
#include "store/gpu/window_table.h"

namespace kvcg::bench {

namespace g = kvcg::store::gpu;
using Clock = std::chrono::steady_clock;

void DeviceArb::Alloc(uint32_t n, bool general_layout, uint64_t arena_words) {
  cap = n;
  general = general_layout;
  KVCG_CK(cudaMalloc(&hash, n * 8ull));
  KVCG_CK(cudaMalloc(&key, n * 8ull));
  KVCG_CK(cudaMalloc(&ctl, n * 8ull));
  KVCG_CK(cudaMalloc(&value, n * 8ull));
  KVCG_CK(cudaMalloc(&code, n));
  KVCG_CK(cudaMalloc(&rvalue, n * 8ull));
  KVCG_CK(cudaMalloc(&rrec, n * 8ull));
  KVCG_CK(cudaMalloc(&rlen, n * 4ull));
  KVCG_CK(cudaMalloc(&done, 64));
  KVCG_CK(cudaMemset(done, 0, 64));
  if (general) {
    KVCG_CK(cudaMalloc(&rec, n * 8ull));
    KVCG_CK(cudaMalloc(&vlen, n * 4ull));
    KVCG_CK(cudaMalloc(&arena, std::max<uint64_t>(arena_words, 1) * 8));
  }
}

void DeviceArb::Free() {
  for (void* p : {(void*)hash, (void*)key, (void*)ctl, (void*)value, (void*)code, (void*)rvalue,
                  (void*)rrec, (void*)rlen, (void*)done, (void*)rec, (void*)vlen, (void*)arena}) {
    if (p != nullptr) KVCG_CK(cudaFree(p));
  }
  *this = DeviceArb{};
}

g::ArbView DeviceArb::View(uint32_t n, uint32_t* hdr) const {
  g::ArbView a{};
  a.n = n;
  a.cursor = hdr;
  a.slab_allowance = reinterpret_cast<int*>(hdr + 1);
  a.hash = hash;
  a.key = key;
  a.ctl = ctl;
  a.value = value;
  a.expected = nullptr;  // no CAS
  a.rec = rec;           // general only (null in fixed8)
  a.vlen = vlen;         // general only
  a.done = done;
  a.arena = arena;       // general only
  a.expire = nullptr;    // no expiry: every op's is kNoExpiry
  a.now = 0;
  a.skip = nullptr;      // every op is well-formed
  a.out_codes = nullptr; // raw res_* columns, not kvcg's form
  a.res_code = code;
  a.res_value = rvalue;
  a.res_len = rlen;
  a.res_rec = rrec;
  return a;
}

void CheckCodes(const DeviceArb& arb, uint32_t n, const char* what, uint8_t get_code,
                uint8_t put_code, int64_t get_len) {
  std::vector<uint8_t> codes(n);
  std::vector<uint64_t> ctl(n);
  std::vector<uint32_t> lens(get_len >= 0 ? n : 0);
  KVCG_CK(cudaMemcpy(codes.data(), arb.code, n, cudaMemcpyDeviceToHost));
  KVCG_CK(cudaMemcpy(ctl.data(), arb.ctl, n * 8ull, cudaMemcpyDeviceToHost));
  if (get_len >= 0) KVCG_CK(cudaMemcpy(lens.data(), arb.rlen, n * 4ull, cudaMemcpyDeviceToHost));
  for (uint32_t i = 0; i < n; ++i) {
    const bool put = (ctl[i] & 3) == g::kOpPut;
    const uint8_t want = put ? put_code : get_code;
    if (codes[i] != want) {
      Fail("kernel %s: op %u (%s) answered code 0x%02x, expected 0x%02x", what, i,
           put ? "PUT" : "GET", codes[i], want);
    }
    if (!put && get_len >= 0 && lens[i] != uint64_t(get_len)) {
      Fail("kernel %s: op %u (GET) found a %u-byte value, expected %lld bytes", what, i, lens[i],
           (long long)get_len);
    }
  }
}

void KernelRig::Init() {
  KVCG_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  KVCG_CK(cudaEventCreate(&e0));
  KVCG_CK(cudaEventCreate(&e1));
  KVCG_CK(cudaMalloc(&hdrs, (kKernelBatches + kKernelReps) * kHdrWords * 4));
}

double KernelRig::SecondsPerLaunch(const std::function<void()>& launch) {
  launch();  // warm-up
  KVCG_CK(cudaStreamSynchronize(s));
  KVCG_CK(cudaEventRecord(e0, s));
  for (int r = 0; r < 5; ++r) launch();
  KVCG_CK(cudaEventRecord(e1, s));
  KVCG_CK(cudaEventSynchronize(e1));
  float ms;
  KVCG_CK(cudaEventElapsedTime(&ms, e0, e1));
  return ms / 1e3 / 5;
}

void KernelRig::Destroy() {
  KVCG_CK(cudaFree(hdrs));
  KVCG_CK(cudaEventDestroy(e0));
  KVCG_CK(cudaEventDestroy(e1));
  KVCG_CK(cudaStreamDestroy(s));
}

double MeasureWindowReads(const uint64_t* slots, uint64_t windows, KernelRig& rig, uint64_t* sink,
                          const uint64_t* records, uint64_t rec_count) {
  const uint64_t tiles = 132ull * 2048 / 4 * 4;
  const int per = 64;
  const double secs = rig.SecondsPerLaunch([&] {
    KVCG_CK(records == nullptr
                ? LaunchRandomWindow64(slots, windows, tiles, per, 11, sink, rig.s)
                : LaunchRandomWindowThenRecord(slots, windows, records, rec_count, tiles, per, 13,
                                               sink, rig.s));
  });
  return double(tiles) * per / secs / 1e9;
}

KernelBounds MeasureBounds(const uint64_t* base, uint64_t bytes, KernelRig& rig) {
  uint64_t* sink;
  KVCG_CK(cudaMalloc(&sink, 8));
  const uint64_t words = bytes / 8;
  const uint64_t slabs = bytes / g::kSlabBytes;
  const uint64_t threads = 132ull * 2048 * 4;
  const int per = 64;
  cudaStream_t s = rig.s;
  auto time_it = [&](const std::function<void()>& launch) { return rig.SecondsPerLaunch(launch); };
  KernelBounds b;
  const double read8_s =
      time_it([&] { KVCG_CK(LaunchRandomRead8(base, words, threads, per, 7, sink, s)); });
  b.read8_gps = threads * per / read8_s / 1e9;
  const uint64_t warps = threads / 32 * 4;
  const double slab_s =
      time_it([&] { KVCG_CK(LaunchRandomSlab256(base, slabs, warps, per, 9, sink, s)); });
  b.slab256_gps = warps * per / slab_s / 1e9;
  KVCG_CK(cudaFree(sink));
  return b;
}

void RunVariants(const g::TableView& table, KernelRig& rig,
                 const std::vector<DeviceArb>& arbs, uint32_t batch, const Mix& mix,
                 const std::vector<std::pair<int, int>>& variants, double slab_gps,
                 double bytes_per_op, int64_t get_len, bool* first_row) {
  int device = 0, sms = 0, max_threads_sm = 0;
  KVCG_CK(cudaGetDevice(&device));
  KVCG_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KVCG_CK(cudaDeviceGetAttribute(&max_threads_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  const int default_blocks = g::LSlabMinBlocks(), default_tile = g::LSlabTile();
  const int nb = int(arbs.size());
  const char* layout = "general";
  cudaStream_t s = rig.s;
  for (const auto& [variant, tile] : variants) {
    g::SetLSlabVariant(variant, tile);
    // Fresh headers: cursor 0, allowance 0 (existing keys only: no slab).
    KVCG_CK(cudaMemsetAsync(rig.hdrs, 0, (kKernelBatches + kKernelReps) * kHdrWords * 4, s));
    for (int b = 0; b < nb; ++b) {
      KVCG_CK(g::LaunchLSlab(table, arbs[b].View(batch, rig.hdrs + b * kHdrWords), 0, s));
    }
    KVCG_CK(cudaStreamSynchronize(s));
    KVCG_CK(cudaEventRecord(rig.e0, s));
    for (int r = 0; r < kKernelReps; ++r) {
      uint32_t* hdr = rig.hdrs + (kKernelBatches + r) * kHdrWords;
      KVCG_CK(g::LaunchLSlab(table, arbs[r % nb].View(batch, hdr), 0, s));
    }
    KVCG_CK(cudaEventRecord(rig.e1, s));
    KVCG_CK(cudaEventSynchronize(rig.e1));
    float ms;
    KVCG_CK(cudaEventElapsedTime(&ms, rig.e0, rig.e1));
    const double gops = double(batch) * kKernelReps / (ms / 1e3) / 1e9;
    // Every key exists: GET found (0), PUT found and stored (0x80).
    const std::string what = std::string(layout) + " " + mix.name;
    for (int b = 0; b < nb; ++b) {
      CheckCodes(arbs[b], batch, what.c_str(), g::kResOk, g::kResOk | g::kResStored, get_len);
    }
    // Theoretical occupancy of the variant (resident threads / the SMs'
    // maximum) and the bytes a probe moves, against the slab-read bound.
    int resident = 0;
    KVCG_CK(g::LSlabResidentBlocks(&resident));
    const double occupancy =
        double(resident) * g::kLSlabBlockThreads / (double(sms) * max_threads_sm);
    std::fprintf(stderr,
                 "kernel %s %-12s min_blocks %d tile %2d: %.3f G ops/s (occupancy %.2f, %.0f%% of "
                 "slab256)\n",
                 layout, mix.name, variant, tile, gops, occupancy, 100.0 * gops / slab_gps);
    std::printf("%s    {\"mix\": \"%s\", \"min_blocks_per_sm\": %d, \"tile\": %d, "
                "\"gops\": %.3f, \"ms_per_batch\": %.4f, \"found_fraction\": 1.0, "
                "\"occupancy\": %.3f, \"share_of_slab256_bound\": %.3f, \"dram_gbps_est\": %.1f}",
                *first_row ? "" : ",\n", mix.name, variant, tile, gops, ms / kKernelReps,
                occupancy, gops / slab_gps, gops * bytes_per_op);
    *first_row = false;
  }
  g::SetLSlabVariant(default_blocks, default_tile);  // back to the store's default
}

std::unique_ptr<Store> OpenKernelStore(Layout layout, uint64_t keys, g::GpuStore** gs) {
  Config c;
  c.backend = Backend::kGpu;
  c.layout = layout;
  c.expected_keys = keys;
  c.active_expiry_hz = 0;  // no sweep kernel beside the timed launches
  auto store = OpenStore(c);
  *gs = dynamic_cast<g::GpuStore*>(store.get());
  if (*gs == nullptr) Fail("kernel: the store is not a GpuStore");
  return store;
}

TableBytes TableDeviceBytes(g::GpuStore& gs) {
  const uint64_t buckets = uint64_t(1) << gs.table().bucket_bits;
  TableBytes b;
  b.used = (buckets + gs.pool().used()) * g::kSlabAndAccessBytes;
  b.allocated = buckets * g::kSlabAndAccessBytes + gs.pool().chunk_count() * g::kPoolChunkBytes;
  return b;
}

int RunKernel(const Args& args) {
  // Kernel mode's layout defaults to fixed8 (scripts/gpu-check.sh's call).
  const std::string layout = args.layout_given ? args.layout : "fixed8";
  if (layout == "fixed8") return RunKernelFixed8(args);
  if (layout == "general") return RunKernelGeneral(args);
  // both: one JSON array of the two documents.
  std::printf("[\n");
  int rc = RunKernelFixed8(args);
  std::printf(",\n");
  std::fflush(stdout);
  if (rc == 0) rc = RunKernelGeneral(args);
  std::printf("]\n");
  return rc;
}

int RunKernelFixed8(const Args& args) {
  const int log2 = args.keys_log2 < 0 ? 27 : args.keys_log2;
  const uint64_t keys = 1ull << log2;
  // The store only tells the batch size (its ARBs'); its own window table
  // starts small. The tables measured are built here, one per load.
  g::GpuStore* gs = nullptr;
  auto store = OpenKernelStore(Layout::kFixed8, 1, &gs);
  // At most the key space, so that a batch's keys can be distinct.
  // --batch overrides the store's batch (a sweep of the batch size).
  const uint64_t want = args.batch_given ? uint64_t(args.batch) : gs->max_batch_ops();
  const uint32_t batch = uint32_t(std::min<uint64_t>(want, keys));
  KernelRig rig;
  rig.Init();
  cudaStream_t s = rig.s;

  // The window table (kernel_window_bench.cc) at its load limit, at 0.7
  // and at 0.5.
  std::vector<WindowBench> windows;
  for (const double load : {g::kMaxWindowLoad, 0.7, 0.5}) {
    windows.push_back(PrefillWindowTable(keys, log2, load, batch, rig));
  }
  // Random 8-byte reads on the first table's windows (DESIGN.md section 5).
  const g::WindowTableView& v0 = windows[0].table->view();
  const KernelBounds bounds = MeasureBounds(v0.slots, v0.windows * g::kWindowBytes, rig);
  const double claim_gops = MeasureClaimBound(batch, rig);

  PrintHeader("kernel");
  std::printf("  \"layout\": \"fixed8\", \"table\": \"window\", \"keys\": %llu, "
              "\"batch_ops\": %u,\n",
              (unsigned long long)keys, batch);
  std::printf("  \"key_order\": \"keys distinct within a batch (ctl group 0, no same-key "
              "numbering; timed: table kernel launches only)\",\n");
  PrintWindowHeader(windows, keys);
  std::printf("  \"bound_random_read8_gps\": %.2f,\n", bounds.read8_gps);
  std::printf("  \"bound_cursor_claims_gops\": %.2f,\n", claim_gops);
  std::printf("  \"claims_bound_note\": \"the window kernel's resident blocks only claiming a "
              "batch from its one cursor, 32 ops per atomic, as its ring claims: a bound on the "
              "kernel's ops/s from the claims alone\",\n");
  std::printf("  \"mixes\": [\n");

  const Mix kMixes[] = {{"get100", 0}, {"get95_put5", 50}, {"get50_put50", 500}, {"put100", 1000}};
  bool first_row = true;
  for (const Mix& mix : kMixes) {
    if (!args.mix.empty() && args.mix != mix.name) continue;
    std::vector<DeviceArb> arbs(kKernelBatches);
    for (int b = 0; b < kKernelBatches; ++b) {
      arbs[b].Alloc(batch);
      // Batch b covers the window [b * batch, (b + 1) * batch) of the key
      // space (mod 2^keys_log2), permuted: distinct keys inside it.
      KVCG_CK(GenerateArb(batch, uint64_t(b) * batch, log2, mix.put_per_mille, 100 + b, false,
                          arbs[b].hash, arbs[b].key, arbs[b].ctl, arbs[b].value, s));
    }
    // GETs only: also over 2 and 3 streams, as the pipeline (3 slots) runs
    // consecutive ARBs of GETs only.
    for (const WindowBench& w : windows) {
      for (int streams = 1; streams <= (mix.put_per_mille == 0 ? 3 : 1); ++streams) {
        RunWindowMix(w, rig, arbs, batch, mix, streams, &first_row);
      }
    }
    for (auto& a : arbs) a.Free();
  }
  std::printf("\n  ]\n}\n");
  rig.Destroy();
  return 0;
}

}  // namespace kvcg::bench
