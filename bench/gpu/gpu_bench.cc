// kvcg-bench-gpu: the GPU canonical store's benchmarks (issue 3 §5), each
// printing one JSON document on stdout (progress on stderr).
//
//   kernel   (a) device-resident batches, fixed8, 2^27 keys prefilled,
//            uniform keys, 100/0, 95/5, 50/50, 0/100 GET/PUT; next to the
//            random 8-byte-read and random 256-byte-slab-read bounds measured
//            on the same table memory in the same run. Batches are generated
//            on the device, their duplicate keys numbered on the host exactly
//            as the orchestrator does, and only the kernel launches are timed
//            (CUDA events).
//   e2e      (b) end-to-end batch API: submitter threads copy prebuilt host
//            Batches into Store::Submit, results arrive in host memory; same
//            mixes; fixed8 and general (16-byte keys, 64-byte values); next
//            to the PCIe bound (pinned H2D/D2H bandwidth measured in the same
//            run, divided by the bytes each op moves in our batch format).
//   e2e-bulk (b) the columnar bulk API (kvcg/gpu_bulk.h), fixed8: submitter
//            threads call ExecuteFixed8 on pinned host arrays of --batch ops,
//            results back in pinned host arrays; same mixes, next to the
//            PCIe bound for its 17 B in / 9 B out per op.
//   latency-bulk (c) as latency, through ExecuteFixed8 (fixed8 only).
//   latency  (c) one thread, Execute of a 512-op 95/5 batch at a time (low
//            load): p50, p99, max.
//
// Usage: kvcg-bench-gpu kernel|e2e|e2e-bulk|latency|latency-bulk [--keys-log2 N] [--seconds S]
//        [--threads T] [--layout fixed8|general]
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_kernels.h"
#include "kvcg/gpu_bulk.h"
#include "kvcg/store.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/same_key_order.h"

namespace {

using Clock = std::chrono::steady_clock;
using kvcg::bench::BenchHash;
using kvcg::bench::BenchKey;
namespace g = kvcg::store::gpu;

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

struct Args {
  std::string mode;
  int keys_log2 = 27;
  double seconds = 2.0;
  int threads = 8;
  std::string layout = "fixed8";
  int iterations = 5000;
  int orchestrators = 4;
  int max_batch = 0;  // 0 = the store's default (2 x resident threads)
  int batch = 1 << 22;  // e2e-bulk: ops per ExecuteFixed8 call
};

struct Mix {
  const char* name;
  uint32_t put_per_mille;
};
const Mix kMixes[] = {{"get100", 0}, {"get95_put5", 50}, {"get50_put50", 500}, {"put100", 1000}};

std::string Now() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string DeviceName() {
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  return p.name;
}

std::unique_ptr<kvcg::Store> OpenGpu(kvcg::Config c) {
  c.backend = kvcg::Backend::kGpu;
  std::unique_ptr<kvcg::Store> store;
  kvcg::Status s = kvcg::Store::Open(c, &store);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.ToString().c_str());
    std::exit(2);
  }
  return store;
}

uint64_t HashFromBenchKey(std::string_view key) {
  uint64_t k;
  std::memcpy(&k, key.data(), 8);
  return BenchHash(k);
}

// ---------------------------------------------------------------- (a) kernel
struct DeviceArb {
  uint32_t cap = 0;
  uint64_t *hash = nullptr, *key = nullptr, *ctl = nullptr, *value = nullptr;
  uint8_t* code = nullptr;
  uint64_t* rvalue = nullptr;
  uint32_t* done = nullptr;  // [0] cursor, [1] allowance, [2..] groups
  void Alloc(uint32_t n) {
    cap = n;
    CK(cudaMalloc(&hash, n * 8ull));
    CK(cudaMalloc(&key, n * 8ull));
    CK(cudaMalloc(&ctl, n * 8ull));
    CK(cudaMalloc(&value, n * 8ull));
    CK(cudaMalloc(&code, n));
    CK(cudaMalloc(&rvalue, n * 8ull));
    CK(cudaMalloc(&done, (n / 2 + 4) * 4ull));
  }
  g::ArbView View(uint32_t n) const {
    g::ArbView a{};
    a.n = n;
    a.cursor = done;
    a.slab_allowance = reinterpret_cast<int*>(done + 1);
    a.done = done + 1;  // group g counts in done[1 + g]; g >= 1, done[1] is the allowance
    a.hash = hash;
    a.key = key;
    a.ctl = ctl;
    a.value = value;
    a.res_code = code;
    a.res_value = rvalue;
    return a;
  }
};

// Numbers duplicate keys of a device batch exactly as the orchestrator does.
uint32_t Number(DeviceArb& arb, uint32_t n, g::SameKeyOrder* order) {
  std::vector<uint64_t> key(n), ctl(n);
  CK(cudaMemcpy(key.data(), arb.key, n * 8ull, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ctl.data(), arb.ctl, n * 8ull, cudaMemcpyDeviceToHost));
  std::vector<uint32_t> group(n), need(n);
  order->Begin(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t k = key[i];
    order->Add(i, k, ctl[i] != 0, [&](uint32_t j) { return key[j] == k; }, group.data(),
               need.data());
  }
  for (uint32_t i = 0; i < n; ++i) {
    ctl[i] = g::MakeCtl(uint32_t(ctl[i]), false, group[i], need[i]);
  }
  CK(cudaMemcpy(arb.ctl, ctl.data(), n * 8ull, cudaMemcpyHostToDevice));
  return order->groups();
}

void ResetHeader(const DeviceArb& arb, uint32_t groups, int allowance, cudaStream_t s) {
  CK(cudaMemsetAsync(arb.done, 0, (groups + 3) * 4ull, s));
  CK(cudaMemcpyAsync(arb.done + 1, &allowance, 4, cudaMemcpyHostToDevice, s));
}

int RunKernel(const Args& args) {
  const uint64_t keys = 1ull << args.keys_log2;
  kvcg::Config c;
  c.layout = kvcg::Layout::kFixed8;
  c.expected_keys = keys;
  c.gpu_orchestrators = 1;
  c.hash = &HashFromBenchKey;
  auto store = OpenGpu(c);
  auto* gs = dynamic_cast<g::GpuStore*>(store.get());
  const g::TableView table = gs->table();
  const uint32_t batch = gs->max_batch_ops();
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  // Prefill: sequential distinct keys, no duplicates, every op a new key.
  const uint32_t fill = 1u << 22;
  DeviceArb arb;
  arb.Alloc(std::max(fill, batch));
  const auto t0 = Clock::now();
  for (uint64_t first = 0; first < keys; first += fill) {
    const uint32_t n = uint32_t(std::min<uint64_t>(fill, keys - first));
    if (!gs->pool().Reserve(n)) {
      std::fprintf(stderr, "prefill: slab pool cannot grow\n");
      return 2;
    }
    CK(kvcg::bench::GenerateArb(n, first, keys, 1000, 1, true, arb.hash, arb.key, arb.ctl,
                                arb.value, s));
    ResetHeader(arb, 0, int(n), s);
    CK(g::LaunchLSlab(false, table, arb.View(n), 0, s));
    int left = 0;
    CK(cudaMemcpyAsync(&left, arb.done + 1, 4, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    gs->pool().Release(n, uint64_t(int(n) - left));
  }
  const double fill_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr, "prefilled %llu keys in %.2f s, size %llu\n", (unsigned long long)keys,
               fill_s, (unsigned long long)store->Size());

  // Random-read bounds on the bucket array (the table's own memory).
  uint64_t* sink;
  CK(cudaMalloc(&sink, 8));
  const uint64_t buckets = uint64_t(1) << table.bucket_bits;
  const uint64_t words = buckets * g::kSlabWords;
  const uint64_t threads = 132ull * 2048 * 4;
  const int per = 64;
  auto time_it = [&](auto&& launch) {
    launch();
    CK(cudaStreamSynchronize(s));
    CK(cudaEventRecord(e0, s));
    for (int r = 0; r < 5; ++r) launch();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / 1e3 / 5;
  };
  const double read8_s = time_it([&] {
    CK(kvcg::bench::LaunchRandomRead8(table.buckets, words, threads, per, 7, sink, s));
  });
  const double read8_gps = threads * per / read8_s / 1e9;
  const uint64_t warps = threads / 32 * 4;
  const double slab_s = time_it([&] {
    CK(kvcg::bench::LaunchRandomSlab256(table.buckets, buckets, warps, per, 9, sink, s));
  });
  const double slab_gps = warps * per / slab_s / 1e9;

  std::printf("{\n  \"benchmark\": \"kernel\", \"device\": \"%s\", \"date\": \"%s\",\n",
              DeviceName().c_str(), Now().c_str());
  std::printf("  \"layout\": \"fixed8\", \"keys\": %llu, \"buckets\": %llu, \"batch_ops\": %u,\n",
              (unsigned long long)keys, (unsigned long long)buckets, batch);
  std::printf("  \"prefill_s\": %.3f, \"prefill_mops\": %.1f,\n", fill_s, keys / fill_s / 1e6);
  std::printf("  \"bound_random_read8_gps\": %.2f, \"bound_random_slab256_gps\": %.2f,\n",
              read8_gps, slab_gps);
  std::printf("  \"mixes\": [\n");

  g::SameKeyOrder order;
  constexpr int kBatches = 4, kReps = 24;
  bool first_mix = true;
  for (const Mix& mix : kMixes) {
    std::vector<DeviceArb> arbs(kBatches);
    std::vector<uint32_t> groups(kBatches);
    for (int b = 0; b < kBatches; ++b) {
      arbs[b].Alloc(batch);
      CK(kvcg::bench::GenerateArb(batch, 0, keys, mix.put_per_mille, 100 + b, false, arbs[b].hash,
                                  arbs[b].key, arbs[b].ctl, arbs[b].value, s));
      CK(cudaStreamSynchronize(s));
      groups[b] = Number(arbs[b], batch, &order);
    }
    auto launch = [&](int b) {
      ResetHeader(arbs[b], groups[b], 0, s);  // existing keys only: no slab needed
      CK(g::LaunchLSlab(false, table, arbs[b].View(batch), 0, s));
    };
   const int kVariants[][2] = {{1, 32}, {4, 32}, {4, 16}, {4, 8}, {1, 8}};
   for (const auto& v : kVariants) {
    const int variant = v[0], tile = v[1];
    g::SetLSlabVariant(variant, tile);
    for (int b = 0; b < kBatches; ++b) launch(b);
    CK(cudaStreamSynchronize(s));
    CK(cudaEventRecord(e0, s));
    for (int r = 0; r < kReps; ++r) launch(r % kBatches);
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double ops = double(batch) * kReps;
    const double gops = ops / (ms / 1e3) / 1e9;
    // Sanity: every key exists, so every op must find its key.
    std::vector<uint8_t> codes(batch);
    CK(cudaMemcpy(codes.data(), arbs[(kReps - 1) % kBatches].code, batch, cudaMemcpyDeviceToHost));
    const double found = double(std::count(codes.begin(), codes.end(), uint8_t(0)) +
                                std::count(codes.begin(), codes.end(), uint8_t(0x80))) /
                         batch;
    uint32_t maxg = 0;
    for (uint32_t x : groups) maxg = std::max(maxg, x);
    std::fprintf(stderr, "kernel %-12s min_blocks %d tile %2d: %.3f G ops/s (found %.4f, groups %u)\n",
                 mix.name, variant, tile, gops, found, maxg);
    std::printf("%s    {\"mix\": \"%s\", \"min_blocks_per_sm\": %d, \"tile\": %d, \"gops\": %.3f, "
                "\"ms_per_batch\": %.4f, \"found_fraction\": %.4f, \"dup_groups_per_batch\": %u}",
                first_mix ? "" : ",\n", mix.name, variant, tile, gops, ms / kReps, found, maxg);
    first_mix = false;
   }
    g::SetLSlabVariant(1, 8);  // back to the store's default
    for (auto& a : arbs) {
      cudaFree(a.hash); cudaFree(a.key); cudaFree(a.ctl); cudaFree(a.value);
      cudaFree(a.code); cudaFree(a.rvalue); cudaFree(a.done);
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

// ---------------------------------------------------------------- (b) e2e
double MeasurePcie(bool h2d) {
  const size_t bytes = 256ull << 20;
  void *h, *d;
  CK(cudaHostAlloc(&h, bytes, cudaHostAllocDefault));
  CK(cudaMalloc(&d, bytes));
  std::memset(h, 1, bytes);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto copy = [&] {
    CK(h2d ? cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s)
           : cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  };
  copy();
  CK(cudaEventRecord(e0, s));
  for (int i = 0; i < 8; ++i) copy();
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  cudaFreeHost(h);
  cudaFree(d);
  cudaStreamDestroy(s);
  return 8.0 * bytes / (ms / 1e3) / 1e9;
}

std::string GeneralKey(uint64_t i) {
  std::string k(16, '\0');
  const uint64_t a = BenchKey(i), b = ~i;
  std::memcpy(k.data(), &a, 8);
  std::memcpy(k.data() + 8, &b, 8);
  return k;
}

// Key `i` of the e2e and latency benchmarks in either layout.
std::string KeyBytes(bool general, uint64_t i) {
  if (general) return GeneralKey(i);
  std::string k(8, '\0');
  const uint64_t x = BenchKey(i);
  std::memcpy(k.data(), &x, 8);
  return k;
}

int RunE2e(const Args& args) {
  setenv("KVCG_GPU_PROFILE", "1", 0);  // orchestrators print where their time went
  const bool general = args.layout == "general";
  const uint64_t keys = 1ull << args.keys_log2;
  kvcg::Config c;
  c.layout = general ? kvcg::Layout::kGeneral : kvcg::Layout::kFixed8;
  c.expected_keys = keys;
  c.gpu_orchestrators = uint32_t(args.orchestrators);
  c.gpu_max_batch_ops = uint32_t(args.max_batch);
  auto store = OpenGpu(c);
  auto key_of = [general](uint64_t i) { return KeyBytes(general, i); };
  const std::string value(general ? 64 : 8, 'v');
  const int T = args.threads;
  const uint32_t B = 1u << 16;

  // Prefill through the API, T threads.
  const auto t0 = Clock::now();
  {
    std::vector<std::thread> th;
    for (int t = 0; t < T; ++t) {
      th.emplace_back([&, t] {
        for (uint64_t base = uint64_t(t) * B; base < keys; base += uint64_t(T) * B) {
          kvcg::Batch b;
          for (uint64_t i = base; i < std::min(keys, base + B); ++i) b.Put(key_of(i), value);
          store->Execute(b);
        }
      });
    }
    for (auto& x : th) x.join();
  }
  const double fill_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr, "e2e %s: prefilled %llu keys in %.2f s (%.1f M ops/s), size %llu\n",
               args.layout.c_str(), (unsigned long long)keys, fill_s, keys / fill_s / 1e6,
               (unsigned long long)store->Size());

  const double h2d = MeasurePcie(true), d2h = MeasurePcie(false);
  // Bytes per op in our batch format (orchestrator.cc Layout).
  const double in_bytes = general ? 8 * 6 + 4 + 16 : 32;  // + 8 expected only with CAS
  const double out_bytes = general ? 17 : 9;
  const double bound = std::min(h2d / in_bytes, d2h / out_bytes);
  const double payload_in = general ? 16 + 0.0 : 8;  // GET: the key (values stay host-side in general)

  std::printf("{\n  \"benchmark\": \"e2e\", \"device\": \"%s\", \"date\": \"%s\",\n",
              DeviceName().c_str(), Now().c_str());
  std::printf("  \"layout\": \"%s\", \"keys\": %llu, \"key_bytes\": %d, \"value_bytes\": %zu,\n",
              args.layout.c_str(), (unsigned long long)keys, general ? 16 : 8, value.size());
  std::printf("  \"submit_threads\": %d, \"ops_per_submit\": %u, \"store\": \"%s\",\n", T, B,
              store->Info().detail.c_str());
  std::printf("  \"prefill_mops\": %.1f,\n", keys / fill_s / 1e6);
  std::printf("  \"pcie_h2d_gbs\": %.1f, \"pcie_d2h_gbs\": %.1f, \"arb_in_bytes_per_op\": %.0f, "
              "\"arb_out_bytes_per_op\": %.0f, \"bound_pcie_gops\": %.3f, "
              "\"bound_pcie_key_only_gops\": %.3f,\n",
              h2d, d2h, in_bytes, out_bytes, bound, h2d / payload_in);
  std::printf("  \"mixes\": [\n");
  bool first_mix = true;
  for (const Mix& mix : kMixes) {
    constexpr int kPrebuilt = 8, kWindow = 4;
    std::vector<std::vector<kvcg::Batch>> pre(T);
    {
      std::vector<std::thread> th;
      for (int t = 0; t < T; ++t) {
        th.emplace_back([&, t] {
          std::mt19937_64 rng(t * 7919 + mix.put_per_mille);
          pre[t].resize(kPrebuilt);
          for (auto& b : pre[t]) {
            b.Reserve(B, B * (value.size() + 16));
            for (uint32_t i = 0; i < B; ++i) {
              const std::string k = key_of(rng() % keys);
              if (rng() % 1000 < mix.put_per_mille) b.Put(k, value);
              else b.Get(k);
            }
          }
        });
      }
      for (auto& x : th) x.join();
    }
    std::atomic<uint64_t> done_ops{0}, bad{0};
    std::atomic<bool> stop{false};
    const auto start = Clock::now();
    std::vector<std::thread> th;
    for (int t = 0; t < T; ++t) {
      th.emplace_back([&, t] {
        std::mutex mu;
        std::condition_variable cv;
        int outstanding = 0;
        for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
          {
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [&] { return outstanding < kWindow; });
            ++outstanding;
          }
          kvcg::Batch b = pre[t][i % kPrebuilt];
          store->Submit(std::move(b), [&](std::vector<kvcg::OpResult>&& r) {
            uint64_t miss = 0;
            for (const auto& x : r) miss += x.code != kvcg::Code::kOk;
            if (miss) bad.fetch_add(miss);
            done_ops.fetch_add(r.size(), std::memory_order_relaxed);
            std::lock_guard<std::mutex> lock(mu);
            --outstanding;
            cv.notify_one();
          });
        }
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return outstanding == 0; });
      });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
    stop = true;
    for (auto& x : th) x.join();
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const double gops = done_ops.load() / secs / 1e9;
    std::fprintf(stderr, "e2e %s %-12s %.3f G ops/s (%llu ops, %llu not ok)\n", args.layout.c_str(),
                 mix.name, gops, (unsigned long long)done_ops.load(),
                 (unsigned long long)bad.load());
    std::printf("%s    {\"mix\": \"%s\", \"gops\": %.4f, \"ops\": %llu, \"not_ok\": %llu}",
                first_mix ? "" : ",\n", mix.name, gops, (unsigned long long)done_ops.load(),
                (unsigned long long)bad.load());
    first_mix = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

// ------------------------------------------------------- (b) e2e, bulk API
struct PinnedOps {
  size_t n = 0;
  kvcg::OpType* types = nullptr;
  uint64_t *keys = nullptr, *values = nullptr, *results = nullptr;
  kvcg::Code* codes = nullptr;
  explicit PinnedOps(size_t count) : n(count) {
    types = static_cast<kvcg::OpType*>(kvcg::gpu::AllocPinned(n));
    keys = static_cast<uint64_t*>(kvcg::gpu::AllocPinned(n * 8));
    values = static_cast<uint64_t*>(kvcg::gpu::AllocPinned(n * 8));
    results = static_cast<uint64_t*>(kvcg::gpu::AllocPinned(n * 8));
    codes = static_cast<kvcg::Code*>(kvcg::gpu::AllocPinned(n));
    if (!types || !keys || !values || !results || !codes) {
      std::fprintf(stderr, "AllocPinned failed\n");
      std::exit(2);
    }
  }
  ~PinnedOps() {
    for (void* p : {(void*)types, (void*)keys, (void*)values, (void*)results, (void*)codes}) {
      kvcg::gpu::FreePinned(p);
    }
  }
  kvcg::gpu::Fixed8Ops View(size_t count) const {
    kvcg::gpu::Fixed8Ops o;
    o.n = count;
    o.types = types;
    o.keys = keys;
    o.values = values;
    o.codes = codes;
    o.results = results;
    return o;
  }
};

void BulkOrDie(kvcg::Store* store, const kvcg::gpu::Fixed8Ops& ops) {
  kvcg::Status s = kvcg::gpu::ExecuteFixed8(store, ops);
  if (!s.ok()) {
    std::fprintf(stderr, "ExecuteFixed8: %s\n", s.ToString().c_str());
    std::exit(2);
  }
}

int RunE2eBulk(const Args& args) {
  const uint64_t keys = 1ull << args.keys_log2;
  kvcg::Config c;
  c.layout = kvcg::Layout::kFixed8;
  c.expected_keys = keys;
  c.gpu_orchestrators = uint32_t(args.orchestrators);
  auto store = OpenGpu(c);
  const int T = args.threads;
  const size_t N = size_t(args.batch);
  uint64_t value;
  std::memcpy(&value, "vvvvvvvv", 8);

  std::vector<std::unique_ptr<PinnedOps>> bufs;
  for (int t = 0; t < T; ++t) bufs.push_back(std::make_unique<PinnedOps>(N));
  // Prefill through the bulk API (one thread: the keys are distinct).
  const auto t0 = Clock::now();
  {
    PinnedOps& p = *bufs[0];
    for (uint64_t base = 0; base < keys; base += N) {
      const size_t m = size_t(std::min<uint64_t>(N, keys - base));
      for (size_t i = 0; i < m; ++i) {
        p.types[i] = kvcg::OpType::kPut;
        p.keys[i] = BenchKey(base + i);
        p.values[i] = value;
      }
      BulkOrDie(store.get(), p.View(m));
    }
  }
  const double fill_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr, "e2e-bulk: prefilled %llu keys in %.2f s (%.1f M ops/s incl. host fill), size %llu\n",
               (unsigned long long)keys, fill_s, keys / fill_s / 1e6,
               (unsigned long long)store->Size());

  const double h2d = MeasurePcie(true), d2h = MeasurePcie(false);
  const double in_bytes = 17, out_bytes = 9;  // type + key + value in; code + value out
  const double bound = std::min(h2d / in_bytes, d2h / out_bytes);
  std::printf("{\n  \"benchmark\": \"e2e_bulk\", \"device\": \"%s\", \"date\": \"%s\",\n",
              DeviceName().c_str(), Now().c_str());
  std::printf("  \"api\": \"kvcg::gpu::ExecuteFixed8 (pinned host arrays)\", \"layout\": \"fixed8\", "
              "\"keys\": %llu, \"key_bytes\": 8, \"value_bytes\": 8,\n",
              (unsigned long long)keys);
  std::printf("  \"submit_threads\": %d, \"ops_per_call\": %zu, \"chunk_ops\": 1048576, \"store\": \"%s\",\n",
              T, N, store->Info().detail.c_str());
  std::printf("  \"prefill_mops\": %.1f,\n", keys / fill_s / 1e6);
  std::printf("  \"pcie_h2d_gbs\": %.1f, \"pcie_d2h_gbs\": %.1f, \"in_bytes_per_op\": %.0f, "
              "\"out_bytes_per_op\": %.0f, \"bound_pcie_gops\": %.3f, "
              "\"bound_pcie_store_path_format_gops\": %.3f,\n",
              h2d, d2h, in_bytes, out_bytes, bound, std::min(h2d / 32, d2h / 9));
  std::printf("  \"mixes\": [\n");
  bool first_mix = true;
  for (const Mix& mix : kMixes) {
    for (int t = 0; t < T; ++t) {
      std::mt19937_64 rng(t * 7919 + mix.put_per_mille);
      PinnedOps& p = *bufs[t];
      for (size_t i = 0; i < N; ++i) {
        p.keys[i] = BenchKey(rng() % keys);
        p.types[i] = rng() % 1000 < mix.put_per_mille ? kvcg::OpType::kPut : kvcg::OpType::kGet;
        p.values[i] = value;
      }
    }
    BulkOrDie(store.get(), bufs[0]->View(N));  // warm-up: contexts, buffers
    std::atomic<uint64_t> done_ops{0}, bad{0};
    std::atomic<bool> stop{false};
    const auto start = Clock::now();
    std::vector<std::thread> th;
    for (int t = 0; t < T; ++t) {
      th.emplace_back([&, t] {
        PinnedOps& p = *bufs[t];
        while (!stop.load(std::memory_order_relaxed)) {
          BulkOrDie(store.get(), p.View(N));
          done_ops.fetch_add(N, std::memory_order_relaxed);
        }
        uint64_t miss = 0;
        for (size_t i = 0; i < N; ++i) miss += p.codes[i] != kvcg::Code::kOk;
        bad.fetch_add(miss);
      });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
    stop = true;
    for (auto& x : th) x.join();
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const double gops = done_ops.load() / secs / 1e9;
    std::fprintf(stderr, "e2e-bulk %-12s %.3f G ops/s (%llu ops, %llu not ok in the last calls)\n",
                 mix.name, gops, (unsigned long long)done_ops.load(),
                 (unsigned long long)bad.load());
    std::printf("%s    {\"mix\": \"%s\", \"gops\": %.4f, \"ops\": %llu, \"not_ok_last_calls\": %llu}",
                first_mix ? "" : ",\n", mix.name, gops, (unsigned long long)done_ops.load(),
                (unsigned long long)bad.load());
    first_mix = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}

int RunLatencyBulk(const Args& args) {
  const uint64_t keys = 1ull << std::min(args.keys_log2, 22);
  kvcg::Config c;
  c.layout = kvcg::Layout::kFixed8;
  c.expected_keys = keys;
  c.gpu_orchestrators = uint32_t(args.orchestrators);
  auto store = OpenGpu(c);
  uint64_t value;
  std::memcpy(&value, "vvvvvvvv", 8);
  {
    PinnedOps p(keys);
    for (uint64_t i = 0; i < keys; ++i) {
      p.types[i] = kvcg::OpType::kPut;
      p.keys[i] = BenchKey(i);
      p.values[i] = value;
    }
    BulkOrDie(store.get(), p.View(keys));
  }
  std::mt19937_64 rng(5);
  std::vector<std::unique_ptr<PinnedOps>> pre;
  for (int b = 0; b < 64; ++b) {
    pre.push_back(std::make_unique<PinnedOps>(512));
    for (int i = 0; i < 512; ++i) {
      pre.back()->keys[i] = BenchKey(rng() % keys);
      pre.back()->types[i] = rng() % 100 < 5 ? kvcg::OpType::kPut : kvcg::OpType::kGet;
      pre.back()->values[i] = value;
    }
  }
  std::vector<double> us;
  for (int i = 0; i < args.iterations + 200; ++i) {
    const auto t0 = Clock::now();
    BulkOrDie(store.get(), pre[i % pre.size()]->View(512));
    const double x = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (i >= 200) us.push_back(x);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double q) { return us[std::min(us.size() - 1, size_t(q * us.size()))]; };
  std::fprintf(stderr, "latency-bulk fixed8 512-op call: p50 %.1f us, p99 %.1f us, max %.1f us\n",
               pct(0.5), pct(0.99), us.back());
  std::printf("{\"benchmark\": \"latency_bulk\", \"api\": \"kvcg::gpu::ExecuteFixed8\", \"device\": \"%s\", "
              "\"date\": \"%s\", \"layout\": \"fixed8\", \"batch_ops\": 512, \"mix\": \"get95_put5\", "
              "\"samples\": %zu, \"p50_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f}\n",
              DeviceName().c_str(), Now().c_str(), us.size(), pct(0.5), pct(0.99), us.back());
  return 0;
}

// ---------------------------------------------------------------- (c) latency
int RunLatency(const Args& args) {
  setenv("KVCG_GPU_PROFILE", "1", 0);  // orchestrators print where their time went
  const bool general = args.layout == "general";
  const uint64_t keys = 1ull << std::min(args.keys_log2, 22);
  kvcg::Config c;
  c.layout = general ? kvcg::Layout::kGeneral : kvcg::Layout::kFixed8;
  c.expected_keys = keys;
  c.gpu_orchestrators = uint32_t(args.orchestrators);
  auto store = OpenGpu(c);
  auto key_of = [general](uint64_t i) { return KeyBytes(general, i); };
  const std::string value(general ? 64 : 8, 'v');
  for (uint64_t base = 0; base < keys; base += 1 << 16) {
    kvcg::Batch b;
    for (uint64_t i = base; i < std::min(keys, base + (1 << 16)); ++i) b.Put(key_of(i), value);
    store->Execute(b);
  }
  std::mt19937_64 rng(5);
  std::vector<kvcg::Batch> pre(64);
  for (auto& b : pre) {
    for (int i = 0; i < 512; ++i) {
      const std::string k = key_of(rng() % keys);
      if (rng() % 100 < 5) b.Put(k, value);
      else b.Get(k);
    }
  }
  std::vector<double> us;
  std::vector<kvcg::OpResult> r;
  for (int i = 0; i < args.iterations + 200; ++i) {
    const auto t0 = Clock::now();
    store->ExecuteInto(pre[i % pre.size()], &r);
    const double x = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (i >= 200) us.push_back(x);
    std::this_thread::sleep_for(std::chrono::microseconds(50));  // low load: one batch at a time
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double q) { return us[std::min(us.size() - 1, size_t(q * us.size()))]; };
  std::fprintf(stderr, "latency %s 512-op batch: p50 %.1f us, p99 %.1f us, max %.1f us\n",
               args.layout.c_str(), pct(0.5), pct(0.99), us.back());
  std::printf("{\"benchmark\": \"latency\", \"device\": \"%s\", \"date\": \"%s\", \"layout\": \"%s\", "
              "\"batch_ops\": 512, \"mix\": \"get95_put5\", \"samples\": %zu, \"p50_us\": %.2f, "
              "\"p99_us\": %.2f, \"max_us\": %.2f, \"store\": \"%s\"}\n",
              DeviceName().c_str(), Now().c_str(), args.layout.c_str(), us.size(), pct(0.5),
              pct(0.99), us.back(), store->Info().detail.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s kernel|e2e|e2e-bulk|latency|latency-bulk [--keys-log2 N] [--seconds S] "
                         "[--threads T] [--layout fixed8|general] [--iterations N]\n", argv[0]);
    return 1;
  }
  args.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string f = argv[i], v = argv[i + 1];
    if (f == "--keys-log2") args.keys_log2 = std::stoi(v);
    else if (f == "--seconds") args.seconds = std::stod(v);
    else if (f == "--threads") args.threads = std::stoi(v);
    else if (f == "--layout") args.layout = v;
    else if (f == "--iterations") args.iterations = std::stoi(v);
    else if (f == "--orchestrators") args.orchestrators = std::stoi(v);
    else if (f == "--max-batch") args.max_batch = std::stoi(v);
    else if (f == "--batch") args.batch = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown flag %s\n", f.c_str());
      return 1;
    }
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "kvcg-bench-gpu: no CUDA device\n");
    return 3;
  }
  if (args.mode == "kernel") return RunKernel(args);
  if (args.mode == "e2e") return RunE2e(args);
  if (args.mode == "latency") return RunLatency(args);
  if (args.mode == "e2e-bulk") return RunE2eBulk(args);
  if (args.mode == "latency-bulk") return RunLatencyBulk(args);
  std::fprintf(stderr, "unknown mode %s\n", args.mode.c_str());
  return 1;
}
