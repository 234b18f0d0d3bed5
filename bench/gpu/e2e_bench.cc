// kvcg-bench-gpu e2e: the Store API end to end, as a user drives it
// (issue 3 §5 (b)), on the GPU backend and — same run, same workload, same
// threads — on the CPU backend.
//
// Per layout (fixed8: 8-byte keys and values; general: 16-byte keys, 64-byte
// values) and backend:
//   * prefill 2^keys_log2 keys through Store::Submit (big batches, several
//     threads); every PUT must answer kNotFound and Size() must equal the key
//     count afterwards;
//   * per mix (95/5, 100/0, 50/50 GET/PUT, uniform keys): T submitter
//     threads each build batches of --batch ops in Store::NewBatch() memory
//     (page-locked on the GPU backend), Submit them asynchronously with up to
//     --depth in flight, and consume every result: each code is read, and
//     each found value's bytes are checked against the key's value and
//     xor'ed into a checksum — in the completion (default), or, with
//     --consume submitter, on the submitting thread (the completion moves the
//     Results there). Every op must answer kOk (every key exists and PUTs
//     rewrite the key's own value), else the run fails. Throughput is the
//     ops completed during --seconds after --warmup seconds, batch building
//     and consuming included.
// Next to it, the PCIe bound: pinned H2D and D2H bandwidth measured in the
// same run, divided by the bytes one op moves in the pipeline's batch format
// (BytesPerOp below).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "store/gpu/arb_kernels.h"
#include "store/gpu/lslab_types.h"

namespace kvcg::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace g = kvcg::store::gpu;

constexpr uint32_t kPrefillBatch = 1u << 19;  // ops per prefill batch (one ARB each)
const Mix kE2eMixes[] = {{"get95_put5", 50}, {"get100", 0}, {"get50_put50", 500}};

// Pinned-memory copy bandwidth in GB/s (1e9 bytes), one direction.
double MeasurePcie(bool h2d) {
  const size_t bytes = 256ull << 20;
  void *h, *d;
  KVCG_CK(cudaHostAlloc(&h, bytes, cudaHostAllocDefault));
  KVCG_CK(cudaMalloc(&d, bytes));
  std::memset(h, 1, bytes);
  cudaStream_t s;
  KVCG_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  KVCG_CK(cudaEventCreate(&e0));
  KVCG_CK(cudaEventCreate(&e1));
  auto copy = [&] {
    KVCG_CK(h2d ? cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s)
                : cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  };
  copy();
  KVCG_CK(cudaEventRecord(e0, s));
  for (int i = 0; i < 8; ++i) copy();
  KVCG_CK(cudaEventRecord(e1, s));
  KVCG_CK(cudaEventSynchronize(e1));
  float ms;
  KVCG_CK(cudaEventElapsedTime(&ms, e0, e1));
  KVCG_CK(cudaEventDestroy(e0));
  KVCG_CK(cudaEventDestroy(e1));
  KVCG_CK(cudaStreamDestroy(s));
  KVCG_CK(cudaFreeHost(h));
  KVCG_CK(cudaFree(d));
  return 8.0 * bytes / (ms / 1e3) / 1e9;
}

// Bytes one op moves over PCIe in the GPU pipeline's format (pipeline.cc:
// LayoutOf gives each batch's input block, Issue the aux and output regions),
// for a GET/PUT mix with PUT fraction p. Per-batch and per-ARB items (64-byte
// column padding, the segment table, the output header) are left out.
//   in, fixed8: the benchmark's batches are fixed-width (kvcg/batch.h: one
//       AppendBulk of 8-byte keys and values): type 1, key 8, value slot 8
//       per op (a GET's slot travels too), no descriptors.
//     general (16-byte keys, 64-byte values, also fixed-width since 2m):
//       type 1, key bytes 16, + per PUT its put-list entry (PutEntry) and
//       write-op index 4. Values never cross: the host copies a PUT's value
//       into the pinned value heap and the device stores a pointer to it.
//   out, every op: code 1; fixed8: + the value 8; general (large ARBs, as
//       the benchmark's are): + a 64-byte value slot and its length byte (a
//       found GET's value, or another found op's ValueRef, lslab_types.h;
//       no view column) + per write op a WriteOut.
struct PcieBytes {
  double in, out;
};
PcieBytes BytesPerOp(Shape shape, double p) {
  if (!shape.general) return PcieBytes{1.0 + 8 + 8, 1.0 + 8};
  PcieBytes b{1.0 + double(shape.key_bytes()), 1.0};
  b.in += p * double(sizeof(g::PutEntry) + 4);
  b.out += 1.0 + g::kValueCopyBytes + p * double(sizeof(g::WriteOut));
  return b;
}

// One submitted batch of a thread: the key index of each op (the check
// needs it: in idx, or in a pregenerated batch's) and the code each op must
// answer.
struct Slot {
  std::vector<uint64_t> idx;
  const std::vector<uint64_t>* pool_idx = nullptr;  // --pregenerated: its batch's
  const std::vector<uint64_t>& Idx() const { return pool_idx != nullptr ? *pool_idx : idx; }
  Code want = Code::kOk;
  Results results;  // --consume submitter: waiting for the thread
};

// State shared by the submitter threads of one cell.
struct Shared {
  Store* store = nullptr;
  Shape shape{};
  int depth = 2;
  uint32_t batch = 0;
  bool consume_in_completion = true;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ops{0}, bad{0}, checksum{0};
  // The submitter threads' own time, summed over threads: building and
  // submitting batches (NewBatch, the fill, Submit), and consuming results
  // on the thread (--consume submitter). Where the host's time per op goes.
  // submit_ns: the part of fill_ns spent inside Store::Submit.
  std::atomic<uint64_t> fill_ns{0}, submit_ns{0}, filled{0}, consume_ns{0}, consumed{0};
};

uint64_t NowNs() {  // the steady clock
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      Clock::now().time_since_epoch()).count());
}

void Consume(Shared& sh, const Slot& s, const Results& r) {
  uint64_t sum = 0, bad = 0;
  const std::vector<uint64_t>& idx = s.Idx();
  if (r.size() != idx.size()) {
    bad = idx.size() + 1;
  } else {
    for (size_t j = 0; j < r.size(); ++j) {
      bad += !CheckResult(r, j, s.want, idx[j], sh.shape, &sum);
    }
  }
  sh.checksum.fetch_xor(sum, std::memory_order_relaxed);
  if (bad != 0) sh.bad.fetch_add(bad);
  sh.ops.fetch_add(r.size(), std::memory_order_relaxed);
}

// One submitter thread: fill(batch, slot) builds the next batch (false: no
// more work), up to sh.depth batches are in flight, every result is consumed.
// Returns when its work is done or sh.stop is set, and nothing is in flight.
template <typename Fill>
void SubmitterLoop(Shared& sh, Fill fill) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Slot> slots(size_t(sh.depth));
  std::vector<Slot*> free_slots, ready, todo;  // free_slots, ready: under mu
  for (Slot& s : slots) {
    s.idx.reserve(sh.batch);
    free_slots.push_back(&s);
  }
  bool more = true;
  while (true) {
    Slot* s = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] {
        return !ready.empty() || (more && !free_slots.empty()) ||
               free_slots.size() == slots.size();
      });
      todo.swap(ready);
      if (todo.empty()) {
        if (!more) break;  // and nothing in flight
        s = free_slots.back();
        free_slots.pop_back();
      }
    }
    if (!todo.empty()) {  // --consume submitter
      const uint64_t t0 = NowNs();
      uint64_t n = 0;
      for (Slot* t : todo) {
        n += t->results.size();
        Consume(sh, *t, t->results);
        t->results.Release();
      }
      sh.consume_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed);
      sh.consumed.fetch_add(n, std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(mu);
      for (Slot* t : todo) free_slots.push_back(t);
      todo.clear();
      continue;
    }
    const uint64_t t0 = NowNs();
    Batch b = sh.store->NewBatch();
    s->idx.clear();
    s->pool_idx = nullptr;
    if (sh.stop.load(std::memory_order_relaxed) || !fill(b, *s)) {
      more = false;
      std::lock_guard<std::mutex> lock(mu);
      free_slots.push_back(s);
      continue;
    }
    const size_t n = b.size();
    const uint64_t t_submit = NowNs();
    sh.store->Submit(std::move(b), [&sh, &mu, &cv, &free_slots, &ready, s](Results&& r) {
      if (sh.consume_in_completion) {
        Consume(sh, *s, r);
        r.Release();
        std::lock_guard<std::mutex> lock(mu);
        free_slots.push_back(s);
        cv.notify_one();
      } else {
        s->results = std::move(r);
        std::lock_guard<std::mutex> lock(mu);
        ready.push_back(s);
        cv.notify_one();
      }
    });
    const uint64_t t1 = NowNs();
    sh.fill_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
    sh.submit_ns.fetch_add(t1 - t_submit, std::memory_order_relaxed);
    sh.filled.fetch_add(n, std::memory_order_relaxed);
  }
}

struct Cell {
  double ops_per_s = 0;
  uint64_t ops = 0;  // all completed, warm-up included
  uint64_t checksum = 0;
  // A submitter thread's, per op: building and submitting a batch (of it,
  // inside Store::Submit), consuming its results.
  double fill_ns_per_op = 0, submit_ns_per_op = 0, consume_ns_per_op = 0;
};

Cell RunMix(Store* store, Shape shape, int log2, const Mix& mix, const Args& args) {
  Shared sh;
  sh.store = store;
  sh.shape = shape;
  sh.depth = args.depth;
  sh.batch = uint32_t(args.batch);
  sh.consume_in_completion = args.consume_in_completion;
  const uint64_t mask = (1ull << log2) - 1;
  const uint32_t B = sh.batch;
  std::vector<std::thread> th;
  // --pregenerated: each thread's batches of columns, made before the
  // clock starts (each thread makes its own, in parallel).
  const size_t pool = size_t(std::max(0, args.pregenerated));
  std::vector<std::vector<Columns>> pool_cols(size_t(args.threads), std::vector<Columns>(pool));
  std::vector<std::vector<std::vector<uint64_t>>> pool_idx(
      size_t(args.threads), std::vector<std::vector<uint64_t>>(pool));
  std::atomic<int> generated{0};
  for (int t = 0; t < args.threads; ++t) {
    th.emplace_back([&, t] {
      Rng rng{uint64_t(t) * 7919 + mix.put_per_mille + 1};
      Columns cols;
      auto generate = [&](Columns& c, std::vector<uint64_t>& idx) {
        c.Clear();
        for (uint32_t i = 0; i < B; ++i) {
          const uint64_t k = rng.Next() & mask;
          c.Add(shape, rng.Chance(mix.put_per_mille), k);
          idx.push_back(k);
        }
      };
      for (size_t p = 0; p < pool; ++p) generate(pool_cols[size_t(t)][p], pool_idx[size_t(t)][p]);
      generated.fetch_add(1);
      size_t next = 0;
      SubmitterLoop(sh, [&](Batch& b, Slot& s) {
        s.want = Code::kOk;
        if (pool != 0) {
          const size_t p = next++ % pool;
          pool_cols[size_t(t)][p].AppendTo(b, shape);
          s.pool_idx = &pool_idx[size_t(t)][p];
          return true;
        }
        generate(cols, s.idx);
        cols.AppendTo(b, shape);
        return true;
      });
    });
  }
  while (generated.load() < args.threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::duration<double>(args.warmup));
  const uint64_t ops0 = sh.ops.load();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
  const uint64_t ops1 = sh.ops.load();
  const auto t1 = Clock::now();
  sh.stop = true;
  for (auto& x : th) x.join();
  if (sh.bad.load() != 0) {
    Fail("e2e %s %s %s: %llu results with a wrong code or value",
         BackendName(store->Info().backend),
         shape.name(), mix.name, (unsigned long long)sh.bad.load());
  }
  Cell c;
  c.ops_per_s = double(ops1 - ops0) / std::chrono::duration<double>(t1 - t0).count();
  c.ops = sh.ops.load();
  c.checksum = sh.checksum.load();
  c.fill_ns_per_op = sh.filled.load() ? double(sh.fill_ns.load()) / double(sh.filled.load()) : 0;
  c.submit_ns_per_op =
      sh.filled.load() ? double(sh.submit_ns.load()) / double(sh.filled.load()) : 0;
  c.consume_ns_per_op =
      sh.consumed.load() ? double(sh.consume_ns.load()) / double(sh.consumed.load()) : 0;
  return c;
}

}  // namespace

double Prefill(Store* store, Shape shape, uint64_t keys, int threads) {
  Shared sh;
  sh.store = store;
  sh.shape = shape;
  sh.depth = 2;
  sh.batch = uint32_t(std::min<uint64_t>(kPrefillBatch, keys));
  std::atomic<uint64_t> next_chunk{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (int t = 0; t < threads; ++t) {
    th.emplace_back([&] {
      Columns cols;
      SubmitterLoop(sh, [&](Batch& b, Slot& s) {
        const uint64_t first = next_chunk.fetch_add(1) * sh.batch;
        if (first >= keys) return false;
        const uint64_t end = std::min<uint64_t>(keys, first + sh.batch);
        s.want = Code::kNotFound;  // every key is new
        cols.Clear();
        for (uint64_t k = first; k < end; ++k) {
          cols.Add(shape, true, k);
          s.idx.push_back(k);
        }
        cols.AppendTo(b, shape);
        return true;
      });
    });
  }
  for (auto& x : th) x.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (sh.bad.load() != 0 || sh.ops.load() != keys || store->Size() != keys) {
    Fail("prefill %s %s: %llu bad results, %llu ops, Size() %llu, want %llu keys",
         BackendName(store->Info().backend), shape.name(), (unsigned long long)sh.bad.load(),
         (unsigned long long)sh.ops.load(), (unsigned long long)store->Size(),
         (unsigned long long)keys);
  }
  return secs;
}

int RunE2e(const Args& args) {
  const int log2 = args.keys_log2 < 0 ? 24 : args.keys_log2;
  const uint64_t keys = 1ull << log2;
  std::vector<Shape> shapes;
  if (args.layout != "general") shapes.push_back(Shape{false});
  if (args.layout != "fixed8") shapes.push_back(Shape{true});
  const double h2d = MeasurePcie(true), d2h = MeasurePcie(false);
  std::fprintf(stderr, "e2e: pinned PCIe H2D %.1f GB/s, D2H %.1f GB/s\n", h2d, d2h);

  struct Row {
    const Mix* mix;
    Cell gpu, cpu;
  };
  struct LayoutRun {
    Shape shape;
    std::string store[2];  // gpu, cpu: StoreInfo::detail
    double prefill_s[2] = {0, 0};
    std::vector<Row> rows;
  };
  std::vector<LayoutRun> runs;
  const Backend backends[2] = {Backend::kGpu, Backend::kCpu};
  for (const Shape shape : shapes) {
    LayoutRun run;
    run.shape = shape;
    for (const Mix& mix : kE2eMixes) {
      if (args.mix.empty() || args.mix == mix.name) run.rows.push_back(Row{&mix, {}, {}});
    }
    for (int be = 0; be < (args.cpu ? 2 : 1); ++be) {
      Config c;
      c.backend = backends[be];
      c.layout = shape.general ? Layout::kGeneral : Layout::kFixed8;
      c.expected_keys = keys;
      auto store = OpenStore(c);
      run.store[be] = store->Info().detail;
      run.prefill_s[be] = Prefill(store.get(), shape, keys, args.threads);
      std::fprintf(stderr, "e2e %s %s: prefilled %llu keys in %.2f s\n", BackendName(c.backend),
                   shape.name(), (unsigned long long)keys, run.prefill_s[be]);
      for (Row& row : run.rows) {
        Cell cell = RunMix(store.get(), shape, log2, *row.mix, args);
        std::fprintf(stderr,
                     "e2e %s %s %-12s %8.2f M ops/s (value checksum %016llx; per op on a "
                     "submitter: fill+submit %.2f ns (Submit %.2f), consume %.2f ns)\n",
                     BackendName(c.backend), shape.name(), row.mix->name, cell.ops_per_s / 1e6,
                     (unsigned long long)cell.checksum, cell.fill_ns_per_op, cell.submit_ns_per_op,
                     cell.consume_ns_per_op);
        (be == 0 ? row.gpu : row.cpu) = cell;
      }
    }
    runs.push_back(std::move(run));
  }

  PrintHeader("e2e");
  std::printf("  \"api\": \"Store::NewBatch + Store::Submit, async, results consumed %s\",\n",
              args.consume_in_completion ? "in the completion" : "on the submitting thread");
  std::printf("  \"keys\": %llu, \"submit_threads\": %d, \"in_flight_per_thread\": %d, "
              "\"ops_per_submit\": %d, \"seconds\": %.1f, \"warmup_s\": %.1f, "
              "\"pregenerated_batches_per_thread\": %d,\n",
              (unsigned long long)keys, args.threads, args.depth, args.batch, args.seconds,
              args.warmup, args.pregenerated);
  std::printf("  \"pcie_h2d_gbs\": %.1f, \"pcie_d2h_gbs\": %.1f,\n", h2d, d2h);
  std::printf("  \"pcie_bytes_per_op\": \"in: fixed8 (fixed-width batches) 1 type + 8 key + 8 "
              "value slot; general (fixed-width batches too) 1 type + 16 key bytes + "
              "%zu per PUT (PutEntry + write-op index), values stay in host memory. out: 1 code; "
              "fixed8 + 8 value; general + 64 value slot + 1 its length (the value, or a ValueRef) + "
              "%zu per PUT (WriteOut). bound = min(H2D / in, D2H / out)\",\n",
              sizeof(g::PutEntry) + 4, sizeof(g::WriteOut));
  std::printf("  \"layouts\": [\n");
  for (size_t l = 0; l < runs.size(); ++l) {
    const LayoutRun& run = runs[l];
    std::printf("    {\"layout\": \"%s\", \"key_bytes\": %zu, \"value_bytes\": %zu,\n",
                run.shape.name(), run.shape.key_bytes(), run.shape.value_bytes());
    std::printf("     \"gpu_store\": %s, \"cpu_store\": %s,\n", Quote(run.store[0]).c_str(),
                Quote(run.store[1]).c_str());
    std::printf("     \"gpu_prefill_mops\": %.2f, \"cpu_prefill_mops\": %.2f,\n",
                keys / run.prefill_s[0] / 1e6,
                run.prefill_s[1] > 0 ? keys / run.prefill_s[1] / 1e6 : 0.0);
    std::printf("     \"mixes\": [\n");
    for (size_t m = 0; m < run.rows.size(); ++m) {
      const Row& r = run.rows[m];
      const PcieBytes b = BytesPerOp(run.shape, r.mix->put_per_mille / 1000.0);
      const double bound = std::min(h2d * 1e9 / b.in, d2h * 1e9 / b.out);
      std::printf("      {\"mix\": \"%s\", \"gpu_ops_per_s\": %.0f, \"cpu_ops_per_s\": %.0f, "
                  "\"gpu_over_cpu\": %.3f, \"pcie_in_bytes_per_op\": %.2f, "
                  "\"pcie_out_bytes_per_op\": %.2f, \"bound_pcie_ops_per_s\": %.0f, "
                  "\"gpu_ops\": %llu, \"cpu_ops\": %llu, \"gpu_fill_ns_per_op\": %.2f, "
                  "\"gpu_submit_ns_per_op\": %.2f, "
                  "\"gpu_consume_ns_per_op\": %.2f, \"cpu_fill_ns_per_op\": %.2f, "
                  "\"cpu_submit_ns_per_op\": %.2f, \"cpu_consume_ns_per_op\": %.2f}%s\n",
                  r.mix->name, r.gpu.ops_per_s, r.cpu.ops_per_s,
                  r.cpu.ops_per_s > 0 ? r.gpu.ops_per_s / r.cpu.ops_per_s : 0.0, b.in, b.out,
                  bound, (unsigned long long)r.gpu.ops, (unsigned long long)r.cpu.ops,
                  r.gpu.fill_ns_per_op, r.gpu.submit_ns_per_op, r.gpu.consume_ns_per_op,
                  r.cpu.fill_ns_per_op, r.cpu.submit_ns_per_op, r.cpu.consume_ns_per_op,
                  m + 1 < run.rows.size() ? "," : "");
    }
    std::printf("     ]}%s\n", l + 1 < runs.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
  return 0;
}

}  // namespace kvcg::bench
