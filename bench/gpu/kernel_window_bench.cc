// kvcg-bench-gpu kernel, fixed8: the window table (store/gpu/window_types.h)
// on the same keys and the same device-resident batches as the L-Slab table,
// in the same run (kernel_bench.cc calls these).
//
// A window table is sized for the key count at a load (0.8, the table's
// limit; 0.7, about the largest within 24 bytes per key; 0.5), prefilled by
// sequential PUT batches of new keys through its own kernel (each batch may
// claim as many EMPTY slots as it has ops), then timed on the mixes'
// batches. Its bound: random 64-byte window reads on its own memory, as one
// probe reads.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "kernel_bench.h"
#include "store/gpu/window_kernel.h"
#include "store/gpu/window_table.h"

namespace kvcg::bench {

namespace g = kvcg::store::gpu;
using Clock = std::chrono::steady_clock;

WindowBench PrefillWindowTable(uint64_t keys, int keys_log2, double load, uint32_t batch,
                               KernelRig& rig) {
  WindowBench w;
  w.load = load;
  // No access bytes: only eviction policies keep them (window_table.h);
  // bytes_per_key_with_access_bytes says what they would add.
  w.table = std::make_unique<g::WindowTable>(g::WindowsFor(keys, load), 0, nullptr, false);
  KVCG_CK(w.table->error());
  cudaStream_t s = rig.s;
  const uint32_t fill = uint32_t(std::min<uint64_t>(1u << 22, keys));
  DeviceArb arb;
  arb.Alloc(fill);
  for (uint64_t first = 0; first < keys; first += fill) {
    const auto t0 = Clock::now();
    const uint32_t n = uint32_t(std::min<uint64_t>(fill, keys - first));
    KVCG_CK(GenerateArb(n, first, keys_log2, 1000, 1, true, arb.hash, arb.key, arb.ctl, arb.value,
                        s));
    const int allowance = int(n);
    KVCG_CK(cudaMemsetAsync(rig.hdrs, 0, kHdrWords * 4, s));
    KVCG_CK(cudaMemcpyAsync(rig.hdrs + 1, &allowance, 4, cudaMemcpyHostToDevice, s));
    KVCG_CK(g::LaunchWindowOps(w.table->view(), arb.View(n, rig.hdrs), 0, s));
    KVCG_CK(cudaStreamSynchronize(s));
    w.fill_s += std::chrono::duration<double>(Clock::now() - t0).count();
    CheckCodes(arb, n, "window prefill", 0xff, g::kResNotFound | g::kResStored);
  }
  arb.Free();
  g::WindowTableStats st;
  KVCG_CK(w.table->Stats(&st, s));
  if (st.keys != keys || st.used != keys) {
    Fail("kernel window prefill: %llu keys, %llu slots used after %llu distinct PUTs",
         (unsigned long long)st.keys, (unsigned long long)st.used, (unsigned long long)keys);
  }
  // The bound: random 64-byte window reads over the table's windows.
  uint64_t* sink;
  KVCG_CK(cudaMalloc(&sink, 24));
  const g::WindowTableView& v = w.table->view();
  w.window64_gps = MeasureWindowReads(v.slots, v.windows, rig, sink);
  // The same reads, one batch's worth per launch: the best of 1 to 8 reads
  // per tile (fewer: more tiles to launch; more: fewer reads in flight).
  for (const int batch_per : {1, 2, 4, 8}) {
    const uint64_t batch_tiles = (uint64_t(batch) / batch_per + 63) / 64 * 64;
    const double batch_secs = rig.SecondsPerLaunch([&] {
      KVCG_CK(LaunchRandomWindow64(v.slots, v.windows, batch_tiles, batch_per, 11, sink, s));
    });
    const double gps = double(batch_tiles) * batch_per / batch_secs / 1e9;
    if (gps > w.window64_batch_gps) w.window64_batch_gps = gps;
  }
  // Probe lengths: windows a hit reads on average, and at most.
  unsigned long long disp[3];
  KVCG_CK(MeasureWindowDisplacement(v.slots, v.windows, reinterpret_cast<unsigned long long*>(sink), s));
  KVCG_CK(cudaMemcpyAsync(disp, sink, 24, cudaMemcpyDeviceToHost, s));
  KVCG_CK(cudaStreamSynchronize(s));
  w.mean_probe_windows = 1.0 + double(disp[0]) / double(disp[1] == 0 ? 1 : disp[1]);
  w.max_probe_windows = disp[2] + 1;
  KVCG_CK(cudaFree(sink));
  std::fprintf(stderr,
               "kernel window load %.2f: %llu windows, %.2f bytes/key, prefill %.2f s, bound "
               "%.2f G window reads/s (%.2f in one-batch launches), a hit reads %.3f windows "
               "(at most %llu)\n",
               load, (unsigned long long)v.windows,
               double(w.table->device_bytes()) / double(keys), w.fill_s, w.window64_gps,
               w.window64_batch_gps,
               w.mean_probe_windows, (unsigned long long)w.max_probe_windows);
  return w;
}

double MeasureClaimBound(uint32_t batch, KernelRig& rig) {
  // One cursor per launch (SecondsPerLaunch launches 6 times), all zeroed
  // before: the timed launches do nothing but claim.
  constexpr int kCursors = 8;
  uint32_t* words;
  KVCG_CK(cudaMalloc(&words, (kCursors + 1) * 4));
  KVCG_CK(cudaMemsetAsync(words, 0, (kCursors + 1) * 4, rig.s));
  int resident = 0;
  KVCG_CK(g::WindowResidentBlocks(&resident));
  int k = 0;
  const double secs = rig.SecondsPerLaunch([&] {
    if (k == kCursors) Fail("kernel claim bound: more launches than cursors");
    KVCG_CK(LaunchCursorClaims(words + k++, batch, 32, uint32_t(resident), words + kCursors, rig.s));
  });
  KVCG_CK(cudaStreamSynchronize(rig.s));
  KVCG_CK(cudaFree(words));
  const double gops = double(batch) / secs / 1e9;
  std::fprintf(stderr,
               "kernel claim bound: %d blocks claiming %u ops 32 at a time from one cursor: "
               "%.2f us per batch, %.2f G ops/s\n",
               resident, batch, secs * 1e6, gops);
  return gops;
}

void PrintWindowHeader(const std::vector<WindowBench>& tables, uint64_t keys) {
  std::printf("  \"window_tables\": [");
  for (size_t i = 0; i < tables.size(); ++i) {
    const WindowBench& w = tables[i];
    std::printf("%s{\"load\": %.2f, \"windows\": %llu, \"bytes_per_key\": %.2f, "
                "\"bytes_per_key_with_access_bytes\": %.2f, "
                "\"prefill_s\": %.3f, \"bound_random_window64_gps\": %.2f, "
                "\"bound_random_window64_batch_gps\": %.2f, "
                "\"mean_probe_windows_hit\": %.3f, \"max_probe_windows\": %llu}",
                i == 0 ? "" : ", ", w.load, (unsigned long long)w.table->windows(),
                double(w.table->device_bytes()) / double(keys),
                double(g::WindowTable::DeviceBytes(w.table->windows(), true)) / double(keys),
                w.fill_s, w.window64_gps, w.window64_batch_gps,
                w.mean_probe_windows, (unsigned long long)w.max_probe_windows);
  }
  std::printf("],\n");
  std::printf("  \"window_bound_note\": \"a window-table GET reads one 64-byte window in the "
              "common case: window64 is its bound, share_of_bound = ops / window64 reads; "
              "window64_batch: the same reads in launches of one batch's reads each (the launch "
              "and its ramp, which every batch pays, included); share_of_hit_bound = ops / "
              "(window64 / mean_probe_windows_hit), the layout's GET bound at that load; "
              "streams: the batches launched over that many streams in turn (GETs only, as the "
              "pipeline runs consecutive ARBs of GETs only; their ARBs carry no hash column: the GET "
              "kernel hashes each key, as in the pipeline); dram_gbps_est = ops x 64 bytes\",\n");
}

void RunWindowMix(const WindowBench& w, KernelRig& rig, const std::vector<DeviceArb>& arbs,
                  uint32_t batch, const Mix& mix, int streams, bool* first_row) {
  int device = 0, sms = 0, max_threads_sm = 0;
  KVCG_CK(cudaGetDevice(&device));
  KVCG_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KVCG_CK(cudaDeviceGetAttribute(&max_threads_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  const int nb = int(arbs.size());
  cudaStream_t s = rig.s;
  KVCG_CK(cudaMemsetAsync(rig.hdrs, 0, (kKernelBatches + kKernelReps) * kHdrWords * 4, s));
  // A batch of GETs only goes to the GET kernel, as the pipeline sends it.
  auto view = [&](int b, uint32_t* hdr) {
    g::ArbView v = arbs[b].View(batch, hdr);
    v.gets_only = mix.put_per_mille == 0 ? 1 : 0;
    // As the pipeline sends it (the store hashes with XXH3): no hash column;
    // the GET kernel hashes each key itself.
    if (v.gets_only) v.hash = nullptr;
    return v;
  };
  for (int b = 0; b < nb; ++b) {
    KVCG_CK(g::LaunchWindowOps(w.table->view(), view(b, rig.hdrs + b * kHdrWords), 0, s));
  }
  KVCG_CK(cudaStreamSynchronize(s));
  // Batches over `streams` streams, in turn (the pipeline runs ARBs of
  // GETs only beside each other, Pipeline::WaitForTableKernels); a batch's
  // columns are only ever used on one stream (`used` batches of the nb).
  const int used = nb - nb % streams;
  std::vector<cudaStream_t> on(size_t(streams), s);
  std::vector<cudaEvent_t> joined(size_t(streams), nullptr);
  for (int k = 1; k < streams; ++k) {
    KVCG_CK(cudaStreamCreateWithFlags(&on[k], cudaStreamNonBlocking));
    KVCG_CK(cudaEventCreateWithFlags(&joined[k], cudaEventDisableTiming));
  }
  KVCG_CK(cudaEventRecord(rig.e0, s));
  for (int k = 1; k < streams; ++k) KVCG_CK(cudaStreamWaitEvent(on[k], rig.e0, 0));
  for (int r = 0; r < kKernelReps; ++r) {
    uint32_t* hdr = rig.hdrs + (kKernelBatches + r) * kHdrWords;
    KVCG_CK(g::LaunchWindowOps(w.table->view(), view(r % used, hdr), 0, on[r % streams]));
  }
  for (int k = 1; k < streams; ++k) {
    KVCG_CK(cudaEventRecord(joined[k], on[k]));
    KVCG_CK(cudaStreamWaitEvent(s, joined[k], 0));
  }
  KVCG_CK(cudaEventRecord(rig.e1, s));
  KVCG_CK(cudaEventSynchronize(rig.e1));
  float ms;
  KVCG_CK(cudaEventElapsedTime(&ms, rig.e0, rig.e1));
  for (int k = 1; k < streams; ++k) {
    KVCG_CK(cudaStreamDestroy(on[k]));
    KVCG_CK(cudaEventDestroy(joined[k]));
  }
  const double gops = double(batch) * kKernelReps / (ms / 1e3) / 1e9;
  const std::string what = std::string("window ") + mix.name;
  for (int b = 0; b < nb; ++b) {
    CheckCodes(arbs[b], batch, what.c_str(), g::kResOk, g::kResOk | g::kResStored);
  }
  // The occupancy of the kernel the mix ran: the GET kernel's for get100.
  int resident_threads = 0;
  if (mix.put_per_mille == 0) {
    KVCG_CK(g::WindowGetResidentThreads(&resident_threads));
  } else {
    KVCG_CK(g::WindowResidentBlocks(&resident_threads));
    resident_threads *= g::kWindowBlockThreads;
  }
  const double occupancy = double(resident_threads) / (double(sms) * max_threads_sm);
  // A hit reads mean_probe_windows windows: the layout's GET bound is the
  // window-read bound over that.
  const double get_bound = w.window64_gps / w.mean_probe_windows;
  std::fprintf(stderr,
               "kernel window load %.2f %-12s on %d stream(s): %.3f G ops/s (occupancy %.2f, "
               "%.0f%% of window64, %.0f%% of window64_batch, %.0f%% of window64 / %.3f windows "
               "a hit)\n",
               w.load, mix.name, streams, gops, occupancy, 100.0 * gops / w.window64_gps,
               100.0 * gops / w.window64_batch_gps, 100.0 * gops / get_bound, w.mean_probe_windows);
  std::printf("%s    {\"table\": \"window\", \"load\": %.2f, \"mix\": \"%s\", \"streams\": %d, "
              "\"min_blocks_per_sm\": %d, \"tile\": %d, \"gops\": %.3f, \"ms_per_batch\": %.4f, "
              "\"found_fraction\": 1.0, \"occupancy\": %.3f, \"share_of_window64_bound\": %.3f, "
              "\"share_of_window64_batch_bound\": %.3f, \"share_of_hit_bound\": %.3f, "
              "\"dram_gbps_est\": %.1f}",
              *first_row ? "" : ",\n", w.load, mix.name, streams, g::kWindowMinBlocks,
              g::kWindowTile, gops, ms / kKernelReps, occupancy, gops / w.window64_gps,
              gops / w.window64_batch_gps, gops / get_bound, gops * 64);
  *first_row = false;
}

}  // namespace kvcg::bench
