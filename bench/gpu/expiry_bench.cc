// kvcg-bench-gpu expiry: the GPU store's active-expiry sweep
// (expiry_kernels.h) over a large general-layout table.
//
// The store (general layout, 8-byte keys BenchKey(i), 8-byte values, a fake
// clock, active_expiry_hz 0 so that only the measured calls sweep) is
// prefilled with 2^keys_log2 keys (default 2^27) by `threads` submitters;
// half of them (odd i) expire at T + 1000, the rest are persistent, so every
// slab carries the volatile hint. Then, each through Store::ReclaimExpired
// (its sweep kernels timed with CUDA events, the whole call with the host
// clock):
//   idle     clock T: nothing expired — every hinted slab's value half and
//            every record's expire-at word are read (the worst-case scan);
//   reclaim  clock T + 1000: half the keys are unlinked (several passes
//            when they do not fit the sweep's list; the call includes the
//            host's frees of records and value blobs);
//   clean    after: no volatile key left, every hint cleared — a sweep reads
//            one meta word per slab.
// Each is checked (counts removed, Size(), volatile keys; a sample of GETs),
// and reported next to its bound: the bytes the sweep must read (slabs'
// 256-byte value halves + one 32-byte sector per record for idle; one
// 32-byte sector per slab for clean) over the HBM bandwidth (peak, from the
// device's memory clock and bus width).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "store/gpu/gpu_store.h"

namespace kvcg::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kT = 1'700'000'000'000;

std::atomic<uint64_t> g_now{kT};
uint64_t BenchClock() { return g_now.load(std::memory_order_relaxed); }

std::string Bytes(uint64_t x) { return std::string(reinterpret_cast<const char*>(&x), 8); }

// Peak HBM bandwidth in bytes/s (2 transfers per clock), 0 when unknown.
double HbmBytesPerSecond() {
  int dev = 0, khz = 0, bits = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return 2.0 * double(khz) * 1e3 * double(bits) / 8.0;
}

void PrefillTtl(Store* store, uint64_t keys, int threads) {
  std::vector<std::thread> pool;
  std::atomic<bool> ok{true};
  const uint64_t per = (keys + uint64_t(threads) - 1) / uint64_t(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const uint64_t begin = per * uint64_t(t), end = std::min(keys, begin + per);
      for (uint64_t base = begin; base < end; base += 1 << 20) {
        Batch b = store->NewBatch();
        const uint64_t stop = std::min(end, base + (1 << 20));
        b.Reserve(stop - base, (stop - base) * 8, (stop - base) * 8);
        for (uint64_t i = base; i < stop; ++i) {
          b.Put(Bytes(BenchKey(i)), Bytes(ValueTag(i)), i % 2 ? kT + 1000 : kNoExpiry);
        }
        Results r = store->Execute(std::move(b));
        for (size_t j = 0; j < r.size(); ++j) {
          if (r.code(j) != Code::kNotFound) ok = false;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  if (!ok) Fail("expiry: a prefill PUT did not answer kNotFound");
}

struct Cell {
  const char* name;
  uint64_t removed, passes;
  double kernel_ms, call_ms, bound_ms;
};

Cell Sweep(store::gpu::GpuStore* gpu, const char* name, uint64_t want_removed, double bound_ms) {
  Cell c{name, 0, 0, 0, 0, bound_ms};
  const auto t0 = Clock::now();
  c.removed = gpu->ReclaimExpired(&c.passes, &c.kernel_ms);
  c.call_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (c.removed != want_removed) {
    Fail("expiry %s: reclaimed %llu keys, expected %llu", name, (unsigned long long)c.removed,
         (unsigned long long)want_removed);
  }
  std::fprintf(stderr, "expiry %s: %llu keys reclaimed, %llu pass(es), kernels %.3f ms, call %.3f ms "
               "(bound %.3f ms)\n", name, (unsigned long long)c.removed,
               (unsigned long long)c.passes, c.kernel_ms, c.call_ms, bound_ms);
  return c;
}

void CheckSample(Store* store, uint64_t keys, bool odd_gone) {
  Batch b = store->NewBatch();
  for (uint64_t i = 0; i < 4096; ++i) b.Get(Bytes(BenchKey((i * 0x9E3779B1ull) % keys)));
  Results r = store->Execute(std::move(b));
  for (uint64_t i = 0; i < 4096; ++i) {
    const uint64_t k = (i * 0x9E3779B1ull) % keys;
    const bool gone = odd_gone && k % 2 == 1;
    if (r.code(i) != (gone ? Code::kNotFound : Code::kOk) ||
        (!gone && r.value(i) != Bytes(ValueTag(k)))) {
      Fail("expiry: GET of key %llu answered %s", (unsigned long long)k, CodeName(r.code(i)));
    }
  }
}

}  // namespace

int RunExpiry(const Args& args) {
  const int log2 = args.keys_log2 < 0 ? 27 : args.keys_log2;
  const uint64_t keys = 1ull << log2;
  Config c;
  c.backend = Backend::kGpu;
  c.layout = Layout::kGeneral;
  c.expected_keys = keys;
  c.clock = &BenchClock;
  c.active_expiry_hz = 0;
  auto store = OpenStore(c);
  auto* gpu = dynamic_cast<store::gpu::GpuStore*>(store.get());
  if (gpu == nullptr) Fail("expiry: not a GPU store");
  const auto p0 = Clock::now();
  PrefillTtl(store.get(), keys, args.threads);
  const double prefill_s = std::chrono::duration<double>(Clock::now() - p0).count();
  std::fprintf(stderr, "expiry: prefilled %llu keys in %.1f s\n", (unsigned long long)keys,
               prefill_s);
  if (store->Size() != keys) Fail("expiry: Size() %llu after the prefill", (unsigned long long)store->Size());
  if (store->Keyspace().volatile_keys != keys / 2) Fail("expiry: volatile keys after the prefill");

  // Bytes each sweep must read at least: head slabs (buckets) and overflow
  // slabs; per key record one 32-byte sector (its expire-at word).
  const uint64_t buckets = 1ull << gpu->table().bucket_bits;
  const uint64_t slabs = buckets + gpu->pool().used();
  const double bw = HbmBytesPerSecond();
  auto bound = [&](double bytes) { return bw > 0 ? bytes / bw * 1e3 : 0; };
  const double idle_bytes = double(slabs) * 256 + double(keys) * 32;
  const double clean_bytes = double(slabs) * 32;

  std::vector<Cell> cells;
  cells.push_back(Sweep(gpu, "idle", 0, bound(idle_bytes)));
  CheckSample(store.get(), keys, false);
  g_now = kT + 1000;
  cells.push_back(Sweep(gpu, "reclaim", keys / 2, bound(idle_bytes)));
  if (store->Size() != keys / 2 || store->Keyspace().volatile_keys != 0) {
    Fail("expiry: Size() %llu / volatile %llu after the reclaim", (unsigned long long)store->Size(),
         (unsigned long long)store->Keyspace().volatile_keys);
  }
  CheckSample(store.get(), keys, true);
  cells.push_back(Sweep(gpu, "clean", 0, bound(clean_bytes)));

  PrintHeader("expiry");
  std::printf("  \"keys\": %llu, \"layout\": \"general\", \"key_bytes\": 8, \"value_bytes\": 8, "
              "\"volatile_share\": 0.5, \"buckets\": %llu, \"slabs\": %llu, "
              "\"hbm_peak_gbps\": %.1f, \"prefill_s\": %.2f,\n",
              (unsigned long long)keys, (unsigned long long)buckets, (unsigned long long)slabs,
              bw / 1e9, prefill_s);
  std::printf("  \"bound\": \"bytes the sweep must read / peak HBM bandwidth: idle and reclaim "
              "256 B per slab + 32 B per key record, clean 32 B per slab\",\n");
  std::printf("  \"results\": [\n");
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& x = cells[i];
    std::printf("    {\"sweep\": \"%s\", \"removed\": %llu, \"passes\": %llu, \"kernel_ms\": %.3f, "
                "\"call_ms\": %.3f, \"bound_ms\": %.3f, \"keys_per_s\": %.3e}%s\n",
                x.name, (unsigned long long)x.removed, (unsigned long long)x.passes, x.kernel_ms,
                x.call_ms, x.bound_ms, x.kernel_ms > 0 ? double(keys) / (x.kernel_ms / 1e3) : 0.0,
                i + 1 < cells.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
  store.reset();
  return 0;
}

}  // namespace kvcg::bench
