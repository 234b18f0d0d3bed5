// kvcg-ycsb: the YCSB driver of kvcg's evaluation (docs/EVALUATION.md).
//
// One invocation opens one system — kvcg, gpu-only (the paper's KVG),
// cpu-only (KVC) or libcuckoo (the CPU peer map) — prefills it once, and
// then measures every point of the sweep given on the command line (the
// cartesian product of --theta, --read-ratio and --hot-fraction lists), each
// as: [install/train the router's model] → warm-up (not measured) → reset
// stats → measured closed-loop run (closed_loop.h). Every point becomes one
// JSON line (full configuration, throughput, per-component latency) on
// --out and one CSV row on --csv.
//
// Zipfian: YCSB's scrambled zipfian, with ranks drawn over the key space by
// default (as kvcg-bench-engine does): folding YCSB's 10^10 ranks into 10^9
// ids flattens popularity, which the paper's Fig. 3b numbers do not show.
// --zipf-items 1e10 gives YCSB's exact folding.
//
// Prefill: with a zipfian distribution the --prefill most popular keys are
// loaded (the paper holds 10 M of 1 G keys; loading the popular ones makes
// GETs on them find values); otherwise key indices [0, prefill), as YCSB
// does. Prefill goes straight into the canonical store, so the hot cache
// starts empty.
//
// Models (kvcg mode): "prior" installs the paper's prior-knowledge model, the
// hottest --hot-fraction of the key space; "trained" trains the router's
// shadow model on --train-ops requests of the point's workload and installs
// it — its kind is --router-model: "histogram", the paper's (--threshold,
// --bins) and the default here, or "heavy-hitters" (--threshold, --hot-keys);
// both --sample-rate; "--model histogram" (the default) and "--model
// heavy-hitters" are short for "trained" with that kind; "none" keeps the engine's
// initial all-cold model. --switch-period-ms lets the engine switch by
// itself as well.
//
// Timeline (Fig. 7): --timeline-ms N records, per N ms of the measured run,
// the client batch latency and the engine's hot/cold per-operation latency;
// --switch-at S installs the shadow model S seconds into the measured run
// (the model until then is all-cold, so the hottest keys start on the
// canonical store as in the paper). Switch instants are in the JSON.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "closed_loop.h"
#include "kvcg/engine.h"
#include "kvcg/store.h"
#include "peer_store.h"
#include "result_writer.h"
#include "workload/popularity.h"
#include "workload/ycsb.h"

namespace {

using kvcg::eval::Json;
namespace wl = kvcg::workload;

struct Params {
  std::string system = "kvcg";
  std::string backend = "auto";
  std::string layout = "auto";
  std::string workload = "b";
  std::string distribution;  // "" = the workload's
  std::vector<double> thetas = {0.99};
  std::vector<double> read_ratios;  // empty = the workload's mix
  std::vector<double> hot_fractions = {0.001};
  uint64_t key_space = 1'000'000'000;
  uint64_t prefill = 10'000'000;
  uint64_t zipf_items = 0;  // 0 = the key space
  std::string prefill_order = "auto";
  size_t key_bytes = 8;
  size_t value_bytes = 8;
  unsigned threads = std::max(2u, std::thread::hardware_concurrency() / 2);
  unsigned batch = 512;
  unsigned pipeline = 2;
  double seconds = 5;
  uint64_t ops = 0;
  double warmup = 1;
  uint64_t seed = 1;
  std::string model = "histogram";          // normalized to "trained" + router_model
  std::string router_model = "histogram";   // the paper's baseline
  double threshold = 0;                     // 0 = the router model's default
  uint64_t hot_keys = 0;                    // heavy-hitters: 0 = the hot cache's capacity
  uint32_t bins = 10000;
  double sample_rate = 0.01;
  double min_hot_share = 0;  // the paper's router installs whatever it trained
  uint64_t train_ops = 5'000'000;
  uint32_t switch_period_ms = 0;
  double timeline_ms = 0;
  double switch_at = -1;
  uint32_t gpu_orchestrators = 4;
  uint64_t gpu_memory_mb = 0;
  std::string label;
  std::string out = "-";
  std::string csv;
  double progress_s = 1;
};

Json ConfigJson(const Params& p, const std::string& layout, const std::string& prefill_order) {
  Json j;
  j.Str("system", p.system).Str("backend", p.backend).Str("layout", layout)
      .Str("workload", p.workload).Str("distribution", p.distribution)
      .Int("key_space", p.key_space).Int("prefill", p.prefill)
      .Int("zipf_items", p.zipf_items == 0 ? p.key_space : p.zipf_items).Str("prefill_order", prefill_order)
      .Int("key_bytes", p.key_bytes).Int("value_bytes", p.value_bytes)
      .Int("threads", p.threads).Int("batch", p.batch).Int("pipeline", p.pipeline)
      .Num("seconds", p.seconds).Int("ops", p.ops).Num("warmup_seconds", p.warmup)
      .Int("seed", p.seed).Str("model", p.model).Str("router_model", p.router_model)
      .Int("hot_keys", p.hot_keys).Num("threshold", p.threshold)
      .Int("bins", p.bins).Num("sample_rate", p.sample_rate)
      .Num("min_hot_share", p.min_hot_share).Int("train_ops", p.train_ops)
      .Int("switch_period_ms", p.switch_period_ms).Num("timeline_ms", p.timeline_ms)
      .Num("switch_at", p.switch_at).Int("gpu_orchestrators", p.gpu_orchestrators)
      .Int("gpu_memory_mb", p.gpu_memory_mb);
  return j;
}

Json LatencyJson(uint64_t ops, const kvcg::LatencySummary& s) {
  Json j;
  j.Int("ops", ops).Num("mean_us", s.mean_us).Num("p50_us", s.p50_us).Num("p90_us", s.p90_us)
      .Num("p99_us", s.p99_us).Num("p999_us", s.p999_us).Num("max_us", s.max_us);
  if (!s.cdf.empty()) {  // the engine's full distribution, for Fig. 4's CDF
    std::string points = "[";
    char buf[64];
    for (const auto& [us, fraction] : s.cdf) {
      std::snprintf(buf, sizeof buf, "%s[%.4g,%.6g]", points.size() > 1 ? "," : "", us, fraction);
      points += buf;
    }
    j.Raw("cdf", points + "]");
  }
  return j;
}

kvcg::LatencySummary SummaryOf(const kvcg::LatencyHistogram& h) {
  kvcg::LatencySummary s;
  s.count = h.count();
  s.mean_us = h.mean() / 1e3;
  s.p50_us = h.Percentile(0.5) / 1e3;
  s.p90_us = h.Percentile(0.9) / 1e3;
  s.p99_us = h.Percentile(0.99) / 1e3;
  s.p999_us = h.Percentile(0.999) / 1e3;
  s.max_us = h.max() / 1e3;
  return s;
}

uint64_t KeyIndexForPrefill(uint64_t r, bool hottest, uint64_t key_space) {
  return hottest ? wl::ScrambledZipfianIndexOfRank(r, key_space) : r;
}

void Prefill(kvcg::Store* store, const Params& p, bool hottest) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  std::atomic<uint64_t> failed{0};
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::string key, value(p.value_bytes, 'v');
      for (uint64_t begin = t * 4096ull; begin < p.prefill; begin += threads * 4096ull) {
        const uint64_t end = std::min(p.prefill, begin + 4096);
        kvcg::Batch batch = store->NewBatch();
        batch.Reserve(end - begin, (end - begin) * ((p.key_bytes + 7) & ~size_t{7}),
                      (end - begin) * ((p.value_bytes + 7) & ~size_t{7}));
        for (uint64_t r = begin; r < end; ++r) {
          wl::FormatKey(KeyIndexForPrefill(r, hottest, p.key_space), p.key_bytes, &key);
          std::memcpy(value.data(), &r, std::min<size_t>(8, value.size()));
          batch.Put(key, value);
        }
        const kvcg::Results results = store->Execute(std::move(batch));
        for (size_t i = 0; i < results.size(); ++i) failed += !results[i].succeeded();
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failed != 0) {
    std::fprintf(stderr, "kvcg-ycsb: prefill: %llu puts failed\n",
                 static_cast<unsigned long long>(failed.load()));
  }
}

// The paper's prior-knowledge model: the keys of the hottest
// `fraction` x key_space zipfian ranks.
std::shared_ptr<const kvcg::Model> PriorModel(const Params& p, double fraction, uint64_t* keys_out) {
  const uint64_t ranks = static_cast<uint64_t>(fraction * static_cast<double>(p.key_space));
  std::unordered_set<uint64_t> seen;
  std::vector<std::string> keys;
  keys.reserve(ranks);
  std::string key;
  for (uint64_t r = 0; r < ranks; ++r) {
    const uint64_t index = wl::ScrambledZipfianIndexOfRank(r, p.key_space);
    if (!seen.insert(index).second) continue;
    wl::FormatKey(index, p.key_bytes, &key);
    keys.push_back(key);
  }
  *keys_out = keys.size();
  char desc[96];
  std::snprintf(desc, sizeof desc, "prior(hottest %g%% of key space)", fraction * 100);
  return kvcg::MakeKeySetModel(std::move(keys), desc);
}

std::string SwitchesJson(const std::vector<kvcg::SwitchRecord>& records, uint64_t since_unix_us,
                         uint64_t run_start_unix_us) {
  std::string out = "[";
  for (const kvcg::SwitchRecord& r : records) {
    if (r.start_unix_us < since_unix_us) continue;
    Json j;
    j.Int("version", r.version).Str("model", r.model).Str("reason", r.reason).Bool("ok", r.ok)
        .Num("at_s", (static_cast<double>(r.start_unix_us) - static_cast<double>(run_start_unix_us)) / 1e6)
        .Num("duration_us", r.duration_us).Num("blocked_us", r.blocked_us)
        .Int("replayed", r.replayed).Int("evicted", r.evicted).Int("deferred", r.deferred);
    if (out.size() > 1) out += ", ";
    out += j.str();
  }
  return out + "]";
}

uint64_t UnixMicros() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Per-interval deltas of the engine's hot/cold latency (timeline mode).
struct EngineInterval {
  double t_s = 0;
  uint64_t hot_ops = 0, cold_ops = 0;
  double hot_mean_us = 0, cold_mean_us = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Params p;
  CLI::App app{"kvcg-ycsb: YCSB driver for kvcg (docs/EVALUATION.md)"};
  app.add_option("--system,--mode", p.system, "kvcg, gpu-only, cpu-only or libcuckoo (the CPU peer map)");
  app.add_option("--backend", p.backend, "canonical store backend: auto, gpu, cpu");
  app.add_option("--layout", p.layout, "auto (fixed8 for 8-byte keys and values), general or fixed8");
  app.add_option("--workload", p.workload, "YCSB core workload: a, b, c, d, f");
  app.add_option("--distribution", p.distribution, "override: uniform, zipfian, latest");
  app.add_option("--theta", p.thetas, "zipfian/latest skew(s), comma list = sweep")->delimiter(',');
  app.add_option("--read-ratio", p.read_ratios, "override the mix: reads r, updates 1-r; comma list = sweep")
      ->delimiter(',');
  app.add_option("--hot-fraction", p.hot_fractions, "prior model: hottest fraction(s) of the key space")
      ->delimiter(',');
  app.add_option("--key-space", p.key_space, "distinct key ids requests are drawn from");
  app.add_option("--prefill", p.prefill, "keys loaded before measuring");
  app.add_option("--zipf-items", p.zipf_items,
                 "zipfian ranks drawn over this many items, folded into the key space "
                 "(0 = the key space; 1e10 = YCSB's ITEM_COUNT)");
  app.add_option("--prefill-order", p.prefill_order, "auto, hottest (popular ranks first) or sequential");
  app.add_option("--key-bytes", p.key_bytes, "8 = binary ids, otherwise \"user000…\" strings");
  app.add_option("--value-bytes", p.value_bytes, "value size (8..1024 in the paper's runs)");
  app.add_option("--threads", p.threads, "client (and hot-cache) threads");
  app.add_option("--batch", p.batch, "YCSB operations per batch (the paper: 512)");
  app.add_option("--pipeline", p.pipeline, "batches in flight per client thread");
  app.add_option("--seconds", p.seconds, "measured seconds per point (when --ops is 0)");
  app.add_option("--ops", p.ops, "measured YCSB operations per point (0 = use --seconds)");
  app.add_option("--warmup", p.warmup, "warm-up seconds per point (not measured)");
  app.add_option("--seed", p.seed, "workload seed");
  app.add_option("--model", p.model,
                 "kvcg model: histogram, heavy-hitters, trained (kind: --router-model), prior or none");
  app.add_option("--router-model", p.router_model,
                 "trained model's kind: histogram (the paper's) or heavy-hitters");
  app.add_option("--threshold", p.threshold,
                 "trained model: hot bin/key access share (0 = the model's default)");
  app.add_option("--hot-keys", p.hot_keys, "heavy-hitters: most hot keys (0 = hot cache capacity)");
  app.add_option("--bins", p.bins, "histogram model: bins over the hash space");
  app.add_option("--sample-rate", p.sample_rate, "histogram model: sampled fraction of requests");
  app.add_option("--min-hot-share", p.min_hot_share,
                 "trained model: routes nothing below this hot share (0, the paper's: never)");
  app.add_option("--train-ops", p.train_ops, "histogram model: requests to train on per point");
  app.add_option("--switch-period-ms", p.switch_period_ms, "engine's own periodic switch (0 = off)");
  app.add_option("--timeline-ms", p.timeline_ms, "timeline bucket width (0 = no timeline)");
  app.add_option("--switch-at", p.switch_at, "timeline: install the shadow model at this second");
  app.add_option("--gpu-orchestrators", p.gpu_orchestrators, "GPU backend orchestrator threads");
  app.add_option("--gpu-memory-mb", p.gpu_memory_mb, "GPU slab pool (0 = backend default)");
  app.add_option("--label", p.label, "experiment label stored with every result");
  app.add_option("--out", p.out, "JSON Lines output (appended; - = stdout)");
  app.add_option("--csv", p.csv, "CSV summary (appended; header when new)");
  app.add_option("--progress", p.progress_s, "progress line period in seconds (0 = off)");
  CLI11_PARSE(app, argc, argv);

  wl::WorkloadSpec base_spec;
  if (!wl::ApplyCoreWorkload(p.workload, &base_spec)) {
    std::fprintf(stderr, "kvcg-ycsb: unknown workload %s (a, b, c, d, f)\n", p.workload.c_str());
    return 2;
  }
  if (!p.distribution.empty() && !wl::ParseDistribution(p.distribution, &base_spec.distribution)) {
    std::fprintf(stderr, "kvcg-ycsb: unknown distribution %s\n", p.distribution.c_str());
    return 2;
  }
  p.distribution = wl::DistributionName(base_spec.distribution);
  base_spec.key_space = p.key_space;
  base_spec.prefill = p.prefill;
  base_spec.zipf_items = p.zipf_items == 0 ? p.key_space : p.zipf_items;
  base_spec.key_bytes = p.key_bytes;
  base_spec.value_bytes = p.value_bytes;
  if (p.prefill > p.key_space || p.key_space == 0 || p.value_bytes == 0 || p.threads == 0 ||
      p.batch == 0) {
    std::fprintf(stderr, "kvcg-ycsb: need 0 < prefill <= key-space, value-bytes, threads, batch > 0\n");
    return 2;
  }
  for (double t : p.thetas) {
    if (!(t > 0 && t < 1)) {
      std::fprintf(stderr, "kvcg-ycsb: theta must be in (0, 1)\n");
      return 2;
    }
  }
  std::string prefill_order = p.prefill_order;
  if (prefill_order == "auto") {
    prefill_order = base_spec.distribution == wl::Distribution::kZipfian ? "hottest" : "sequential";
  }
  std::string layout = p.layout;
  if (layout == "auto") layout = p.key_bytes == 8 && p.value_bytes == 8 ? "fixed8" : "general";

  // --- Open the system.
  const bool peer = p.system == "libcuckoo";
  kvcg::Config config;
  if (!peer && !kvcg::ParseMode(p.system, &config.mode)) {
    std::fprintf(stderr, "kvcg-ycsb: unknown system %s\n", p.system.c_str());
    return 2;
  }
  if (!kvcg::ParseBackend(p.backend, &config.backend) || !kvcg::ParseLayout(layout, &config.layout)) {
    std::fprintf(stderr, "kvcg-ycsb: bad --backend or --layout\n");
    return 2;
  }
  config.expected_keys = p.prefill;
  config.router.bins = p.bins;
  if (p.model == "histogram" || p.model == "heavy-hitters") {
    if (app.count("--router-model") != 0 && p.router_model != p.model) {
      std::fprintf(stderr, "kvcg-ycsb: --model %s contradicts --router-model %s\n", p.model.c_str(),
                   p.router_model.c_str());
      return 2;
    }
    p.router_model = p.model;
    p.model = "trained";
  }
  if ((p.model != "trained" && p.model != "prior" && p.model != "none") ||
      !kvcg::ParseRouterModel(p.router_model, &config.router.model)) {
    std::fprintf(stderr, "kvcg-ycsb: bad --model or --router-model\n");
    return 2;
  }
  config.router.threshold = p.threshold;
  config.router.hot_keys = p.hot_keys;
  config.router.sample_rate = p.model == "trained" ? p.sample_rate : 0;
  config.router.min_hot_share = p.min_hot_share;
  p.threshold = kvcg::RouterThreshold(config.router);  // what the router applies, for the record
  config.router.switch_period_ms = p.switch_period_ms;
  config.gpu_orchestrators = p.gpu_orchestrators;
  config.gpu_memory_bytes = p.gpu_memory_mb << 20;
  if (config.mode == kvcg::Mode::kKvcg && p.model == "prior") {
    double most = 0;
    for (double f : p.hot_fractions) most = std::max(most, f);
    config.hot_cache_buckets =
        std::max<uint64_t>(static_cast<uint64_t>(most * static_cast<double>(p.key_space)) / 4, 1 << 12);
  }
  std::unique_ptr<kvcg::Store> store;
  if (peer) {
    store = kvcg::eval::OpenCuckooPeer(p.prefill);
  } else {
    const kvcg::Status s = kvcg::Store::Open(config, &store);
    if (!s.ok()) {
      std::fprintf(stderr, "kvcg-ycsb: open %s: %s\n", p.system.c_str(), s.ToString().c_str());
      return 1;
    }
  }
  kvcg::Engine* engine = kvcg::AsEngine(store.get());
  const bool kvcg_mode = engine != nullptr && config.mode == kvcg::Mode::kKvcg;
  const kvcg::StoreInfo info = store->Info();
  std::fprintf(stderr, "kvcg-ycsb [%s] %s; %s; prefilling %llu keys (%s)\n", p.system.c_str(),
               info.device.c_str(), info.detail.c_str(), static_cast<unsigned long long>(p.prefill),
               prefill_order.c_str());
  const auto prefill_start = std::chrono::steady_clock::now();
  Prefill(engine ? engine->canonical() : store.get(), p, prefill_order == "hottest");
  const double prefill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - prefill_start).count();

  const bool timeline = p.timeline_ms > 0;
  std::vector<double> read_ratios = p.read_ratios;
  if (read_ratios.empty()) read_ratios.push_back(-1);  // the workload's own mix
  std::vector<double> hot_fractions = p.hot_fractions;
  if (!kvcg_mode || p.model != "prior") hot_fractions = {-1};
  std::atomic<uint64_t> insert_counter{p.prefill};
  uint64_t phase_seed = p.seed;
  bool trained_before = false;
  int exit_code = 0;

  for (double theta : p.thetas) {
    for (double read_ratio : read_ratios) {
      for (double hot_fraction : hot_fractions) {
        wl::WorkloadSpec spec = base_spec;
        spec.theta = theta;
        if (read_ratio >= 0) {
          spec.read = read_ratio;
          spec.update = 1 - read_ratio;
          spec.insert = spec.read_modify_write = 0;
        }
        char point_name[160];
        std::snprintf(point_name, sizeof point_name, "%s θ=%g%s%s", p.system.c_str(), theta,
                      read_ratio >= 0 ? (" r=" + Json::Number(read_ratio)).c_str() : "",
                      hot_fraction >= 0 ? (" hot=" + Json::Number(hot_fraction)).c_str() : "");
        kvcg::eval::LoadOptions load;
        load.threads = p.threads;
        load.batch = p.batch;
        load.pipeline = p.pipeline;

        // --- The model.
        uint64_t prior_keys = 0;
        if (kvcg_mode && p.model == "prior") {
          engine->InstallModel(PriorModel(p, hot_fraction, &prior_keys), "kvcg-ycsb", nullptr);
        } else if (kvcg_mode && p.model == "trained" && !timeline) {
          // Samples from the previous point would leak into this one's
          // model; a switch restarts training.
          if (trained_before) engine->SwitchToShadowModel(nullptr);
          load.ops = p.train_ops;
          load.seed = ++phase_seed;
          std::fprintf(stderr, "kvcg-ycsb [%s] training on %llu requests\n", point_name,
                       static_cast<unsigned long long>(p.train_ops));
          kvcg::eval::RunClosedLoop(store.get(), spec, &insert_counter, load, nullptr);
          kvcg::SwitchRecord rec;
          const kvcg::Status s = engine->SwitchToShadowModel(&rec);
          if (!s.ok()) std::fprintf(stderr, "kvcg-ycsb: switch failed: %s\n", s.ToString().c_str());
          trained_before = true;
        }

        // --- Warm-up.
        load.ops = 0;
        load.seconds = p.warmup;
        load.seed = ++phase_seed;
        if (p.warmup > 0) kvcg::eval::RunClosedLoop(store.get(), spec, &insert_counter, load, nullptr);
        if (engine != nullptr) engine->ResetStats();

        // --- Measured run.
        load.ops = p.ops;
        load.seconds = p.seconds;
        load.seed = ++phase_seed;
        load.interval_ms = p.timeline_ms;
        load.tick_ms = timeline ? p.timeline_ms : 100;
        const uint64_t run_start_unix_us = UnixMicros();
        std::vector<EngineInterval> engine_timeline;
        kvcg::EngineStats last{};
        double last_progress = 0;
        uint64_t last_completed = 0;
        std::thread switcher;
        bool switch_started = false;
        auto tick = [&](double elapsed, uint64_t completed) {
          if (engine != nullptr && timeline) {
            const kvcg::EngineStats now = engine->Stats();
            EngineInterval iv;
            iv.t_s = elapsed;
            auto delta = [](const kvcg::LatencySummary& a, const kvcg::LatencySummary& b,
                            uint64_t* ops, double* mean) {
              *ops = a.count - std::min(a.count, b.count);
              const double sum = a.mean_us * a.count - b.mean_us * b.count;
              *mean = *ops ? std::max(0.0, sum / *ops) : NAN;
            };
            delta(now.hot.latency, last.hot.latency, &iv.hot_ops, &iv.hot_mean_us);
            delta(now.cold.latency, last.cold.latency, &iv.cold_ops, &iv.cold_mean_us);
            engine_timeline.push_back(iv);
            last = now;
          }
          if (kvcg_mode && p.switch_at >= 0 && !switch_started && elapsed >= p.switch_at) {
            switch_started = true;
            switcher = std::thread([engine] {
              kvcg::SwitchRecord rec;
              engine->SwitchToShadowModel(&rec);
            });
          }
          if (p.progress_s > 0 && elapsed - last_progress >= p.progress_s) {
            std::fprintf(stderr, "kvcg-ycsb [%s] %.1f s: %.3f M store ops/s\n", point_name, elapsed,
                         static_cast<double>(completed - last_completed) / (elapsed - last_progress) / 1e6);
            last_progress = elapsed;
            last_completed = completed;
          }
        };
        const kvcg::eval::LoadResult r =
            kvcg::eval::RunClosedLoop(store.get(), spec, &insert_counter, load, tick);
        if (switcher.joinable()) switcher.join();

        // --- Results.
        const double mops = static_cast<double>(r.ycsb_ops) / r.seconds / 1e6;
        const kvcg::LatencySummary batch = SummaryOf(r.batch_latency);
        Json hot, cold, total;
        uint64_t hot_ops = 0, cold_ops = 0;
        double total_mean = batch.mean_us;
        std::string model = "none (canonical store only)", switches = "[]";
        Json hot_detail;
        if (engine != nullptr) {
          const kvcg::EngineStats st = engine->Stats();
          hot_ops = st.hot.ops;
          cold_ops = st.cold.ops;
          hot = LatencyJson(hot_ops, st.hot.latency);
          cold = LatencyJson(cold_ops, st.cold.latency);
          const double n = static_cast<double>(st.hot.latency.count + st.cold.latency.count);
          total_mean = n > 0 ? (st.hot.latency.mean_us * st.hot.latency.count +
                                st.cold.latency.mean_us * st.cold.latency.count) / n
                             : 0;
          hot_detail.Int("hits", st.hot.hits).Int("misses", st.hot.misses)
              .Int("waited", st.hot.waited).Int("cache_entries", st.hot_cache_entries);
          model = st.model;
          switches = SwitchesJson(st.recent_switches, run_start_unix_us, run_start_unix_us);
        } else {
          // Without an engine every operation completes with its batch.
          hot = LatencyJson(0, kvcg::LatencySummary{});
          cold_ops = peer ? 0 : r.store_ops;
          cold = LatencyJson(cold_ops, peer ? kvcg::LatencySummary{} : batch);
          if (peer) model = "none (CPU peer map)";
        }
        total = LatencyJson(r.store_ops, batch);
        total.Num("op_mean_us", total_mean);

        Json point;
        point.Num("theta", theta).Num("read_ratio", spec.read).Num("update_ratio", spec.update)
            .Num("insert_ratio", spec.insert).Num("rmw_ratio", spec.read_modify_write)
            .Num("hot_fraction", hot_fraction >= 0 ? hot_fraction : NAN)
            .Int("prior_hot_keys", prior_keys).Int("value_bytes", p.value_bytes)
            .Num("threshold", p.threshold);
        const std::time_t now = std::time(nullptr);
        char when[32];
        std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
        Json line;
        line.Str("tool", "kvcg-ycsb").Int("schema", 1).Str("label", p.label).Str("when", when)
            .Str("system", p.system).Str("device", info.device)
            .Str("backend", kvcg::BackendName(info.backend)).Str("detail", info.detail)
            .Int("hardware_threads", std::thread::hardware_concurrency())
            .Obj("config", ConfigJson(p, layout, prefill_order)).Obj("point", point)
            .Num("prefill_seconds", prefill_s).Num("seconds", r.seconds)
            .Int("ycsb_ops", r.ycsb_ops).Int("store_ops", r.store_ops).Int("batches", r.batches)
            .Num("throughput_mops", mops)
            .Num("store_throughput_mops", static_cast<double>(r.store_ops) / r.seconds / 1e6)
            .Num("hot_share", r.store_ops ? static_cast<double>(hot_ops) / static_cast<double>(r.store_ops) : 0)
            .Obj("hot", hot).Obj("cold", cold).Obj("total", total).Obj("batch", LatencyJson(r.batches, batch))
            .Raw("hot_cache", engine ? hot_detail.str() : "null")
            .Int("not_found", r.not_found).Int("errors", r.errors).Str("model", model)
            .Raw("switches", switches)
            .Str("latency_definition",
                 "hot/cold: per operation, Submit to result, from the engine (hot-cache misses count "
                 "as cold); without an engine, per batch (Submit to completion). total: per batch, "
                 "Submit to completion, measured by the client; total.op_mean_us: per-operation mean");
        if (timeline) {
          std::string client = "[", eng = "[";
          for (size_t i = 0; i < r.timeline.size(); ++i) {
            const kvcg::eval::ClientInterval& c = r.timeline[i];
            Json j;
            j.Num("t_s", (i + 1) * p.timeline_ms / 1e3).Int("batches", c.batches)
                .Int("store_ops", c.store_ops)
                .Num("batch_mean_us", c.batches ? c.latency_sum_ns / 1e3 / c.batches : NAN);
            client += (i ? ", " : "") + j.str();
          }
          for (size_t i = 0; i < engine_timeline.size(); ++i) {
            const EngineInterval& e = engine_timeline[i];
            Json j;
            j.Num("t_s", e.t_s).Int("hot_ops", e.hot_ops).Num("hot_mean_us", e.hot_mean_us)
                .Int("cold_ops", e.cold_ops).Num("cold_mean_us", e.cold_mean_us);
            eng += (i ? ", " : "") + j.str();
          }
          Json tl;
          tl.Num("interval_ms", p.timeline_ms).Raw("client", client + "]").Raw("engine", eng + "]");
          line.Obj("timeline", tl);
        }
        if (!kvcg::eval::AppendLine(p.out, line.str())) exit_code = 1;
        if (!p.csv.empty()) {
          const kvcg::LatencySummary none{};
          kvcg::LatencySummary hs = none, cs = none;
          if (engine != nullptr) {
            const kvcg::EngineStats st = engine->Stats();
            hs = st.hot.latency;
            cs = st.cold.latency;
          } else if (!peer) {
            cs = batch;
          }
          auto n = [](double v) { return Json::Number(v); };
          const std::vector<std::string> header = {
              "label", "system", "device", "workload", "distribution", "theta", "read_ratio",
              "hot_fraction", "value_bytes", "threshold", "threads", "batch", "seconds",
              "throughput_mops", "hot_share", "hot_mean_us", "hot_p50_us", "hot_p90_us",
              "hot_p99_us", "hot_p999_us", "cold_mean_us", "cold_p50_us", "cold_p90_us",
              "cold_p99_us", "cold_p999_us", "op_mean_us", "batch_p50_us", "batch_p90_us",
              "batch_p99_us", "batch_p999_us", "errors"};
          const std::vector<std::string> row = {
              p.label, p.system, info.device, p.workload, p.distribution, n(theta), n(spec.read),
              n(hot_fraction >= 0 ? hot_fraction : NAN), std::to_string(p.value_bytes), n(p.threshold),
              std::to_string(p.threads), std::to_string(p.batch), n(r.seconds), n(mops),
              n(r.store_ops ? static_cast<double>(hot_ops) / static_cast<double>(r.store_ops) : 0),
              n(hs.mean_us), n(hs.p50_us), n(hs.p90_us), n(hs.p99_us), n(hs.p999_us), n(cs.mean_us),
              n(cs.p50_us), n(cs.p90_us), n(cs.p99_us), n(cs.p999_us), n(total_mean),
              n(batch.p50_us), n(batch.p90_us), n(batch.p99_us), n(batch.p999_us),
              std::to_string(r.errors)};
          if (!kvcg::eval::AppendCsvRow(p.csv, header, row)) exit_code = 1;
        }
        std::fprintf(stderr,
                     "kvcg-ycsb [%s] %.3f Mops/s; hot %.1f%% mean %.1f us p99 %.1f us; cold mean %.1f "
                     "us p99 %.1f us; batch p50 %.1f us; errors %llu\n",
                     point_name, mops,
                     r.store_ops ? 100.0 * static_cast<double>(hot_ops) / static_cast<double>(r.store_ops) : 0,
                     engine ? engine->Stats().hot.latency.mean_us : 0,
                     engine ? engine->Stats().hot.latency.p99_us : 0,
                     engine ? engine->Stats().cold.latency.mean_us : batch.mean_us,
                     engine ? engine->Stats().cold.latency.p99_us : batch.p99_us, batch.p50_us,
                     static_cast<unsigned long long>(r.errors));
        if (r.errors != 0) exit_code = 1;
      }
    }
  }
  return exit_code;
}
