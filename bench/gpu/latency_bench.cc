// kvcg-bench-gpu latency: the round trip of one small batch at low load
// (issue 3 §5 (c); target p99 <= 30 us on the GPU).
//
// One thread, per layout and backend (GPU, then CPU in the same run): the
// store is prefilled (2^keys_log2 keys, default 2^22, through Submit), then
// each sample builds a 512-op 95/5 GET/PUT batch in Store::NewBatch() memory
// (not timed), times Store::Execute (Submit and the wait for its completion),
// checks every result (code kOk, value = the key's value; any other fails
// the run), releases it, and sleeps 50 us so that batches never queue behind
// each other. The first 500 samples are warm-up and not recorded.
// The GPU is measured twice: with the resident kernel (the default: a small
// ARB is posted to a ring that a kernel staying on the device takes it
// from) and with gpu_resident_blocks = 0 (kernels launched per ARB).
// A ring row also counts the samples during which the resident kernel was
// (re)launched for the batch (it ends by itself after a while,
// resident_ring.h; a relaunch the idle pipeline made in the pause, a
// renewal, is counted apart and not left out of the p99), every GPU
// row those before which the pipeline thread had gone to sleep since the
// previous sample was timed, i.e. during the pause (it polls
// Config::gpu_idle_spin_us first; --gpu-idle-spin-us sets it), and each
// gives the p99 of the samples that met neither, so a tail made of
// launches or wake-ups shows as such.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "store/gpu/gpu_store.h"

namespace kvcg::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kOps = 512;
constexpr uint32_t kPutPerMille = 50;
constexpr int kWarmup = 500;
constexpr int kGapUs = 50;
constexpr double kTargetP99Us = 30;

struct Row {
  Backend backend;
  Shape shape;
  uint32_t resident_blocks;  // GPU: the resident kernel's blocks (0 = launches per ARB)
  std::string store;
  std::vector<double> us;  // sorted
  // Samples during which the resident kernel was launched, those in which
  // the pipeline thread slept, and the p99 of the samples with neither.
  uint64_t launch_samples = 0;
  uint64_t sleep_samples = 0;
  double p99_quiet_us = 0;
  // Samples after a renewal (the idle pipeline relaunched a kernel that its
  // lifetime ended, before the batch came): counted, not left out.
  uint64_t renewal_samples = 0;
};

// The resident kernel's launches and the pipeline's sleeps so far (0 for
// other stores).
store::gpu::GpuStore::PathCounts Counts(Store* store) {
  auto* gpu = dynamic_cast<store::gpu::GpuStore*>(store);
  return gpu == nullptr ? store::gpu::GpuStore::PathCounts{} : gpu->path_counts();
}

Row Measure(Backend backend, Shape shape, int log2, const Args& args, uint32_t resident_blocks) {
  const uint64_t keys = 1ull << log2;
  Config c;
  c.backend = backend;
  c.layout = shape.general ? Layout::kGeneral : Layout::kFixed8;
  c.expected_keys = keys;
  c.gpu_resident_blocks = resident_blocks;
  if (args.gpu_idle_spin_us >= 0) c.gpu_idle_spin_us = uint32_t(args.gpu_idle_spin_us);
  auto store = OpenStore(c);
  Prefill(store.get(), shape, keys, args.threads);
  Row row{backend, shape, backend == Backend::kGpu ? resident_blocks : 0, store->Info().detail, {}, 0, 0, 0};
  std::vector<double> us_quiet;
  // The counts when the previous sample's timing ended: a sleep in the
  // pause between two samples is counted for the sample after it.
  auto last = Counts(store.get());
  row.us.reserve(size_t(args.iterations));
  Rng rng{5};
  std::vector<uint64_t> idx(kOps);
  Columns cols;
  uint64_t sum = 0;
  for (int it = 0; it < args.iterations + kWarmup; ++it) {
    Batch b = store->NewBatch();
    cols.Clear();
    for (uint32_t i = 0; i < kOps; ++i) {
      idx[i] = rng.Next() & (keys - 1);
      cols.Add(shape, rng.Chance(kPutPerMille), idx[i]);
    }
    cols.AppendTo(b, shape);
    const auto t0 = Clock::now();
    Results r = store->Execute(std::move(b));
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    const auto after = Counts(store.get());
    // A launch made for this batch's post (not a renewal in the pause,
    // which it does not wait for unless it came in the middle of one).
    const bool launched = after.resident_launches - after.resident_renewals !=
                          last.resident_launches - last.resident_renewals;
    const bool renewed = after.resident_renewals != last.resident_renewals;
    // The thread went to sleep since the previous sample (in the pause, so
    // this batch woke it; or, with no poll at all, right after this one's
    // completion, which the next batch pays too).
    const bool slept = after.idle_sleeps != last.idle_sleeps;
    last = after;
    if (r.size() != kOps) Fail("latency: %zu results for %u ops", r.size(), kOps);
    for (uint32_t i = 0; i < kOps; ++i) {
      if (!CheckResult(r, i, Code::kOk, idx[i], shape, &sum)) {
        Fail("latency %s %s: op %u answered %s with a %zu-byte value, expected kOk and key %llu's "
             "value",
             BackendName(backend), shape.name(), i, CodeName(r.code(i)), r.value(i).size(),
             (unsigned long long)idx[i]);
      }
    }
    r.Release();
    if (it >= kWarmup) {
      row.us.push_back(us);
      row.launch_samples += launched ? 1 : 0;
      row.sleep_samples += slept ? 1 : 0;
      row.renewal_samples += renewed ? 1 : 0;
      if (!launched && !slept) us_quiet.push_back(us);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(kGapUs));
  }
  std::sort(row.us.begin(), row.us.end());
  std::sort(us_quiet.begin(), us_quiet.end());
  if (!us_quiet.empty()) row.p99_quiet_us = Quantile(us_quiet, 0.99);
  std::fprintf(stderr,
               "latency %s %s (resident blocks %u) 512-op batch: p50 %.1f us, p99 %.1f us, p999 %.1f us, max %.1f us "
               "(kernel launched during %llu samples, renewed before %llu, pipeline asleep before %llu; "
               "p99 of the others %.1f us; value checksum %016llx)\n",
               BackendName(backend), shape.name(), row.resident_blocks, Quantile(row.us, 0.5), Quantile(row.us, 0.99),
               Quantile(row.us, 0.999), row.us.back(), (unsigned long long)row.launch_samples,
               (unsigned long long)row.renewal_samples, (unsigned long long)row.sleep_samples,
               row.p99_quiet_us, (unsigned long long)sum);
  return row;
}

}  // namespace

int RunLatency(const Args& args) {
  const int log2 = args.keys_log2 < 0 ? 22 : args.keys_log2;
  if (args.iterations < 1) Fail("latency: --iterations must be positive");
  std::vector<Row> rows;
  for (const bool general : {false, true}) {
    if (args.layout == (general ? "fixed8" : "general")) continue;
    const uint32_t resident = Config{}.gpu_resident_blocks;
    rows.push_back(Measure(Backend::kGpu, Shape{general}, log2, args, resident));
    rows.push_back(Measure(Backend::kGpu, Shape{general}, log2, args, 0));
    if (args.cpu) rows.push_back(Measure(Backend::kCpu, Shape{general}, log2, args, 0));
  }
  PrintHeader("latency");
  std::printf("  \"keys\": %llu, \"batch_ops\": %u, \"mix\": \"get95_put5\", \"threads\": 1, "
              "\"gap_us\": %d, \"timed\": \"Store::Execute (Submit + wait for the completion)\", "
              "\"target_p99_us\": %.0f, \"gpu_idle_spin_us\": %u,\n",
              (unsigned long long)(1ull << log2), kOps, kGapUs, kTargetP99Us,
              args.gpu_idle_spin_us >= 0 ? uint32_t(args.gpu_idle_spin_us) : Config{}.gpu_idle_spin_us);
  std::printf("  \"results\": [\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double mean = std::accumulate(r.us.begin(), r.us.end(), 0.0) / double(r.us.size());
    std::printf("    {\"backend\": \"%s\", \"layout\": \"%s\", \"resident_blocks\": %u, "
                "\"samples\": %zu, "
                "\"p50_us\": %.2f, \"p99_us\": %.2f, \"p999_us\": %.2f, \"max_us\": %.2f, "
                "\"mean_us\": %.2f, \"samples_with_kernel_launch\": %llu, "
                "\"samples_after_kernel_renewal\": %llu, "
                "\"samples_after_pipeline_sleep\": %llu, "
                "\"p99_us_without_launch_or_sleep\": %.2f, \"store\": %s}%s\n",
                BackendName(r.backend), r.shape.name(), r.resident_blocks, r.us.size(),
                Quantile(r.us, 0.5),
                Quantile(r.us, 0.99), Quantile(r.us, 0.999), r.us.back(), mean,
                (unsigned long long)r.launch_samples, (unsigned long long)r.renewal_samples,
                (unsigned long long)r.sleep_samples,
                r.p99_quiet_us, Quote(r.store).c_str(), i + 1 < rows.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
  return 0;
}

}  // namespace kvcg::bench
