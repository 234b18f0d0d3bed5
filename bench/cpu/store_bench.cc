// kvcg-bench-cpu: closed-loop, in-process benchmark of the CPU canonical
// store next to well-known concurrent maps, on the same workload in the same
// run (issue 2 §5).
//
// Workload: uniform keys over a prefilled key space, 95% GET / 5% PUT,
// 8-byte keys and values. Each thread runs batches of --batch operations
// back to back (closed loop) and records each batch's latency; with
// --batch 1 that is the per-operation latency. Systems:
//   kvcg-cpu          kvcg::Store, CPU backend, through Execute: one batch from
//                     NewBatch() per batch, every value read in place from the
//                     Results (allocation per batch, none per op)
//   libcuckoo-string  libcuckoo cuckoohash_map<std::string, std::string> (same data model)
//   libcuckoo-u64     libcuckoo cuckoohash_map<uint64_t, uint64_t> (fixed-width upper bound)
// Output: one JSON document on stdout; progress on stderr.
#include <CLI/CLI.hpp>
#include <libcuckoo/cuckoohash_map.hh>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/latency_histogram.h"
#include "kvcg/store.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string KeyOf(uint64_t i) {
  std::string key(8, '\0');
  std::memcpy(key.data(), &i, 8);
  return key;
}

// One system under test: prefill and a per-thread batch runner.
struct System {
  std::string name;
  std::function<void(uint64_t begin, uint64_t end)> prefill;
  // Returns a runner for one thread: executes `ops` (key index, is_put, value).
  std::function<std::function<void(const std::vector<uint64_t>& keys, const std::vector<uint8_t>& puts)>()> make_runner;
};

struct RunResult {
  unsigned threads;
  double seconds;
  uint64_t ops;
  kvcg::LatencyHistogram latency;
};

RunResult RunClosedLoop(const System& system, unsigned threads, double seconds, uint64_t key_space,
                        size_t batch, double put_fraction) {
  std::atomic<bool> stop{false};
  std::atomic<unsigned> ready{0};
  std::vector<kvcg::LatencyHistogram> hist(threads);
  std::vector<uint64_t> ops(threads, 0);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto run = system.make_runner();
      std::mt19937_64 rng(0x9e3779b97f4a7c15ull * (t + 1));
      std::uniform_int_distribution<uint64_t> key_dist(0, key_space - 1);
      std::bernoulli_distribution put_dist(put_fraction);
      std::vector<uint64_t> keys(batch);
      std::vector<uint8_t> puts(batch);
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (size_t i = 0; i < batch; ++i) {
          keys[i] = key_dist(rng);
          puts[i] = put_dist(rng);
        }
        const auto t0 = Clock::now();
        run(keys, puts);
        const auto t1 = Clock::now();
        hist[t].Record(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        n += batch;
      }
      ops[t] = n;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : workers) w.join();
  RunResult result{threads, std::chrono::duration<double>(Clock::now() - start).count(), 0, {}};
  for (unsigned t = 0; t < threads; ++t) {
    result.ops += ops[t];
    result.latency.Merge(hist[t]);
  }
  return result;
}

void ParallelFor(uint64_t n, unsigned threads, const std::function<void(uint64_t, uint64_t)>& f) {
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads); });
  }
  for (auto& w : workers) w.join();
}

std::string Iso8601Now() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvcg CPU store benchmark (closed loop, 95/5 GET/PUT, 8-byte keys and values)"};
  uint64_t keys = 10'000'000;
  double seconds = 3.0;
  std::vector<unsigned> thread_counts;
  std::vector<size_t> batches{1, 64};
  std::vector<std::string> systems{"kvcg-cpu", "libcuckoo-string", "libcuckoo-u64"};
  double put_fraction = 0.05;
  std::string machine = "cpu", commit = "unknown";
  app.add_option("--keys", keys, "keys prefilled = key space")->capture_default_str();
  app.add_option("--seconds", seconds, "measured seconds per point")->capture_default_str();
  app.add_option("--threads", thread_counts, "thread counts (default 1,2,4.. up to nproc)")->delimiter(',');
  app.add_option("--batch", batches, "operations per batch (1 = per-op latency)")->delimiter(',')->capture_default_str();
  app.add_option("--systems", systems, "systems to run")->delimiter(',')->capture_default_str();
  app.add_option("--put-fraction", put_fraction, "fraction of PUTs")->capture_default_str();
  app.add_option("--machine", machine, "machine label for the JSON")->capture_default_str();
  app.add_option("--commit", commit, "commit label for the JSON");
  CLI11_PARSE(app, argc, argv);

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  if (thread_counts.empty()) {
    for (unsigned t = 1; t < hw; t *= 2) thread_counts.push_back(t);
    thread_counts.push_back(hw);
  }

  std::vector<System> all;
  // kvcg CPU backend.
  std::unique_ptr<kvcg::Store> store;
  {
    kvcg::Config config;
    config.backend = kvcg::Backend::kCpu;
    config.expected_keys = keys;
    kvcg::Status s = kvcg::Store::Open(config, &store);
    if (!s.ok()) {
      std::fprintf(stderr, "open: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  all.push_back({"kvcg-cpu",
                 [&](uint64_t b, uint64_t e) {
                   for (uint64_t i = b; i < e; i += 1024) {
                     const uint64_t n = std::min(e, i + 1024) - i;
                     kvcg::Batch batch = store->NewBatch();
                     batch.Reserve(n, n * 8, n * 8);
                     for (uint64_t k = i; k < i + n; ++k) batch.Put(KeyOf(k), KeyOf(k));
                     store->Execute(std::move(batch));
                   }
                 },
                 [&] {
                   return [&](const std::vector<uint64_t>& ks, const std::vector<uint8_t>& puts) {
                     // Execute consumes the batch, so each call builds a fresh
                     // one, sized up front: one allocation per column region.
                     kvcg::Batch batch = store->NewBatch();
                     batch.Reserve(ks.size(), ks.size() * 8, ks.size() * 8);
                     for (size_t i = 0; i < ks.size(); ++i) {
                       const char* k = reinterpret_cast<const char*>(&ks[i]);
                       if (puts[i]) batch.Put({k, 8}, {k, 8});
                       else batch.Get({k, 8});
                     }
                     const kvcg::Results results = store->Execute(std::move(batch));
                     // Consume the results as libcuckoo's find() does: copy each
                     // value out of the view.
                     uint64_t out = 0;
                     for (size_t i = 0; i < results.size(); ++i) {
                       const std::string_view v = results.value(i);
                       if (v.size() == 8) std::memcpy(&out, v.data(), 8);
                     }
                     asm volatile("" : : "r"(out));
                   };
                 }});
  // libcuckoo, same data model (binary strings).
  libcuckoo::cuckoohash_map<std::string, std::string> cuckoo_str;
  all.push_back({"libcuckoo-string",
                 [&](uint64_t b, uint64_t e) {
                   for (uint64_t k = b; k < e; ++k) cuckoo_str.insert(KeyOf(k), KeyOf(k));
                 },
                 [&] {
                   auto out = std::make_shared<std::string>();
                   return [&, out](const std::vector<uint64_t>& ks, const std::vector<uint8_t>& puts) {
                     std::string key(8, '\0');
                     for (size_t i = 0; i < ks.size(); ++i) {
                       std::memcpy(key.data(), &ks[i], 8);
                       if (puts[i]) cuckoo_str.insert_or_assign(key, key);
                       else cuckoo_str.find(key, *out);
                     }
                   };
                 }});
  // libcuckoo, fixed-width integers: an upper bound for 8-byte keys.
  libcuckoo::cuckoohash_map<uint64_t, uint64_t> cuckoo_u64;
  all.push_back({"libcuckoo-u64",
                 [&](uint64_t b, uint64_t e) {
                   for (uint64_t k = b; k < e; ++k) cuckoo_u64.insert(k, k);
                 },
                 [&] {
                   return [&](const std::vector<uint64_t>& ks, const std::vector<uint8_t>& puts) {
                     uint64_t out = 0;
                     for (size_t i = 0; i < ks.size(); ++i) {
                       if (puts[i]) cuckoo_u64.insert_or_assign(ks[i], ks[i]);
                       else cuckoo_u64.find(ks[i], out);
                     }
                     asm volatile("" : : "r"(out));
                   };
                 }});

  std::ostringstream json;
  json << "{\n  \"benchmark\": \"cpu_store\",\n  \"date\": \"" << Iso8601Now() << "\",\n"
       << "  \"machine\": \"" << machine << "\",\n  \"commit\": \"" << commit << "\",\n"
       << "  \"hardware_threads\": " << hw << ",\n"
       << "  \"workload\": {\"keys\": " << keys << ", \"distribution\": \"uniform\", \"get\": "
       << 1.0 - put_fraction << ", \"put\": " << put_fraction
       << ", \"key_bytes\": 8, \"value_bytes\": 8, \"seconds_per_point\": " << seconds << "},\n"
       << "  \"results\": [";
  bool first = true;
  for (const System& system : all) {
    if (std::find(systems.begin(), systems.end(), system.name) == systems.end()) continue;
    std::fprintf(stderr, "[%s] prefilling %llu keys...\n", system.name.c_str(),
                 static_cast<unsigned long long>(keys));
    const auto p0 = Clock::now();
    ParallelFor(keys, hw, system.prefill);
    const double prefill_s = std::chrono::duration<double>(Clock::now() - p0).count();
    for (size_t batch : batches) {
      for (unsigned threads : thread_counts) {
        RunResult r = RunClosedLoop(system, threads, seconds, keys, batch, put_fraction);
        const double mops = r.ops / r.seconds / 1e6;
        std::fprintf(stderr, "[%s] batch %zu threads %u: %.2f M ops/s, batch latency p50 %llu ns p99 %llu ns\n",
                     system.name.c_str(), batch, threads, mops,
                     static_cast<unsigned long long>(r.latency.Percentile(0.5)),
                     static_cast<unsigned long long>(r.latency.Percentile(0.99)));
        json << (first ? "\n" : ",\n") << "    {\"system\": \"" << system.name << "\", \"threads\": " << threads
             << ", \"batch\": " << batch << ", \"ops\": " << r.ops << ", \"seconds\": " << r.seconds
             << ", \"ops_per_sec\": " << static_cast<uint64_t>(r.ops / r.seconds)
             << ", \"batch_latency_ns\": {\"mean\": " << static_cast<uint64_t>(r.latency.mean())
             << ", \"p50\": " << r.latency.Percentile(0.5) << ", \"p99\": " << r.latency.Percentile(0.99)
             << ", \"p99.9\": " << r.latency.Percentile(0.999) << ", \"max\": " << r.latency.max()
             << "}, \"prefill_seconds\": " << prefill_s << "}";
        first = false;
      }
    }
  }
  json << "\n  ]\n}\n";
  std::fputs(json.str().c_str(), stdout);
  return 0;
}
