// kvcg-bench-eviction: how good and how costly cache mode is.
//
// Quality. One trace of `requests` key draws from YCSB's zipfian generator
// (θ = 0.99 by default, over `keys` keys; src/workload/generators.h) is
// replayed as a cache would see it: GET the key; on a miss, SET it (the
// fill). The hit ratio (GETs found / GETs) of each maxmemory policy, run
// through the real CPU store with Store::SetMemoryLimit at room for a given
// fraction of the keys, is printed next to exact LRU simulated on the same
// trace at the same capacity (a linked list over key ids: the bound an
// approximated LRU is measured against, as in Redis's documentation of its
// own LRU approximation). Every entry has the same size, so a memory limit
// of capacity x per-entry charge holds exactly `capacity` keys in both.
// The quality runs submit one request at a time, so the store sees the
// trace's exact order, like the simulation.
//
// Cost. The same trace, split over `threads` threads (each its own slice),
// in batches of `batch` GETs followed by one batch of the misses' SETs (as
// the server submits a pipeline), with no memory limit and then with each
// evicting policy at one cache fraction; throughput is requests (GET plus
// fill) per second, and the ratio to the unlimited run is what issue 13
// asks to be at least 0.8. That workload is not the same operations with
// and without the limit (the limited store misses more, so it also SETs
// more); a second one is: YCSB-A's mix over the trace (each request a GET
// or a SET by a fixed coin, no fills), where the limited run executes the
// very same operations and differs only by evicting ("throughput_ycsb_a").
//
// Output: one JSON object on stdout (bench/results/cpu/...; plot with
// bench/eviction/plot.py). DESIGN.md §5's bounds are the GPU machine's; on
// the CPU backend the bounds stated are exact LRU (hit ratio) and the
// unlimited store on the same workload (throughput).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kvcg/store.h"
#include "workload/generators.h"

namespace {

using kvcg::EvictionPolicy;

struct Options {
  uint64_t keys = 1'000'000;
  uint64_t requests = 10'000'000;
  double theta = 0.99;
  uint64_t seed = 42;
  size_t value_bytes = 16;
  std::vector<double> fractions = {0.01, 0.02, 0.05, 0.10, 0.20, 0.40};
  std::vector<EvictionPolicy> policies = {EvictionPolicy::kAllKeysLru, EvictionPolicy::kAllKeysLfu,
                                          EvictionPolicy::kAllKeysRandom};
  double throughput_fraction = 0.10;
  int threads = 2;
  size_t batch = 64;
  int repeats = 3;  // throughput runs, interleaved; the median is reported
  std::string commit = "unknown";
  std::string date = "unknown";
  kvcg::Backend backend = kvcg::Backend::kCpu;  // --backend gpu: the GPU's cache mode
};

constexpr int kKeyBytes = 10;
void KeyOf(uint32_t id, char* out) { std::snprintf(out, kKeyBytes + 1, "k%09u", id); }

// Exact LRU over key ids: a doubly linked list in arrays, most recent at head.
double ExactLruHitRatio(const std::vector<uint32_t>& trace, uint64_t keys, uint64_t capacity) {
  constexpr uint32_t kNil = UINT32_MAX;
  std::vector<uint32_t> prev(keys, kNil), next(keys, kNil);
  std::vector<uint8_t> in(keys, 0);
  uint32_t head = kNil, tail = kNil;
  uint64_t size = 0, hits = 0;
  auto unlink = [&](uint32_t k) {
    if (prev[k] != kNil) next[prev[k]] = next[k]; else head = next[k];
    if (next[k] != kNil) prev[next[k]] = prev[k]; else tail = prev[k];
  };
  auto push_front = [&](uint32_t k) {
    prev[k] = kNil;
    next[k] = head;
    if (head != kNil) prev[head] = k;
    head = k;
    if (tail == kNil) tail = k;
  };
  for (uint32_t k : trace) {
    if (in[k]) {
      ++hits;
      unlink(k);
      push_front(k);
      continue;
    }
    if (size == capacity) {
      const uint32_t victim = tail;
      unlink(victim);
      in[victim] = 0;
      --size;
    }
    push_front(k);
    in[k] = 1;
    ++size;
  }
  return static_cast<double>(hits) / static_cast<double>(trace.size());
}

std::unique_ptr<kvcg::Store> OpenStore(const Options& o, uint64_t limit, EvictionPolicy policy) {
  kvcg::Config c;
  c.backend = o.backend;
  c.active_expiry_hz = 0;
  // As a server configured with maxmemory and maxmemory-policy opens it
  // (expected_keys stays at its default).
  c.max_memory_bytes = limit;
  c.eviction = policy;
  std::unique_ptr<kvcg::Store> store;
  kvcg::Status s = kvcg::Store::Open(c, &store);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  return store;
}

uint64_t EntryCharge(const Options& o) {
  // CpuStore charges key + value + kEntryOverhead (96) per entry; the GPU's
  // general layout key + value + 48 (gpu_store.cc).
  return kKeyBytes + o.value_bytes + (o.backend == kvcg::Backend::kGpu ? 48 : 96);
}

// One request at a time: GET, and SET on a miss. Returns the hit ratio.
double StoreHitRatio(const Options& o, const std::vector<uint32_t>& trace, uint64_t capacity,
                     EvictionPolicy policy, uint64_t* evicted, uint64_t* max_bytes_seen) {
  auto store = OpenStore(o, capacity * EntryCharge(o), policy);
  const std::string value(o.value_bytes, 'v');
  char key[kKeyBytes + 1];
  uint64_t hits = 0;
  *max_bytes_seen = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    KeyOf(trace[i], key);
    const std::string_view k(key, kKeyBytes);
    kvcg::Batch get;
    get.Get(k);
    if (store->Execute(std::move(get))[0].code == kvcg::Code::kOk) {
      ++hits;
      continue;
    }
    kvcg::Batch put;
    put.Put(k, value);
    const kvcg::Code c = store->Execute(std::move(put))[0].code;
    if (c != kvcg::Code::kNotFound && c != kvcg::Code::kOk) {
      std::fprintf(stderr, "fill failed: %s\n", kvcg::CodeName(c));
      std::exit(1);
    }
    if ((i & 0xFFFF) == 0) *max_bytes_seen = std::max(*max_bytes_seen, store->MemoryBytes());
  }
  *max_bytes_seen = std::max(*max_bytes_seen, store->MemoryBytes());
  *evicted = store->Keyspace().evicted_keys;
  return static_cast<double>(hits) / static_cast<double>(trace.size());
}

struct Throughput {
  double requests_per_s = 0;
  double hit_ratio = 0;
};

// The trace over `threads` threads in batches; see the top of the file.
Throughput RunThroughput(const Options& o, const std::vector<uint32_t>& trace, uint64_t limit,
                         EvictionPolicy policy, bool ycsb_a) {
  auto store = OpenStore(o, limit, policy);
  const std::string value(o.value_bytes, 'v');
  std::vector<uint64_t> hits(o.threads, 0);
  const size_t per_thread = trace.size() / o.threads;
  auto work = [&](int t) {
    char key[kKeyBytes + 1];
    std::vector<uint32_t> missed;
    missed.reserve(o.batch);
    const size_t begin = t * per_thread, end = begin + per_thread;
    for (size_t i = begin; i < end; i += o.batch) {
      const size_t n = std::min(o.batch, end - i);
      if (ycsb_a) {  // half GETs, half SETs, by a coin fixed per request index
        kvcg::Batch b = store->NewBatch();
        for (size_t j = 0; j < n; ++j) {
          KeyOf(trace[i + j], key);
          if (kvcg::workload::FnvHash64(i + j) & 1) b.Put(std::string_view(key, kKeyBytes), value);
          else b.Get(std::string_view(key, kKeyBytes));
        }
        kvcg::Results r = store->Execute(std::move(b));
        for (size_t j = 0; j < n; ++j) hits[t] += (kvcg::workload::FnvHash64(i + j) & 1) == 0 && r[j].code == kvcg::Code::kOk;
        continue;
      }
      kvcg::Batch get = store->NewBatch();
      for (size_t j = 0; j < n; ++j) {
        KeyOf(trace[i + j], key);
        get.Get(std::string_view(key, kKeyBytes));
      }
      kvcg::Results r = store->Execute(std::move(get));
      missed.clear();
      for (size_t j = 0; j < n; ++j) {
        if (r[j].code == kvcg::Code::kOk) ++hits[t];
        else missed.push_back(trace[i + j]);
      }
      if (missed.empty()) continue;
      kvcg::Batch put = store->NewBatch();
      for (uint32_t id : missed) {
        KeyOf(id, key);
        put.Put(std::string_view(key, kKeyBytes), value);
      }
      store->Execute(std::move(put));
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t total_hits = 0;
  for (uint64_t h : hits) total_hits += h;
  const double done = static_cast<double>(per_thread * o.threads);
  return {done / s, total_hits / done};
}

std::vector<double> ParseList(const char* s) {
  std::vector<double> out;
  for (const char* p = s; *p;) {
    char* end;
    out.push_back(std::strtod(p, &end));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p) break;
  }
  return out;
}

void Usage() {
  std::fprintf(stderr,
               "usage: kvcg-bench-eviction [--keys N] [--requests N] [--theta T] [--seed S]\n"
               "  [--value-bytes N] [--fractions 0.01,0.1,...] [--policies allkeys-lru,...]\n"
               "  [--throughput-fraction F] [--threads N] [--batch N] [--repeats N]\n"
               "  [--commit SHA] [--date YYYY-MM-DD] [--backend cpu|gpu]\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) {
      Usage();
      return 2;
    }
    ++i;
    if (a == "--keys") o.keys = std::strtoull(v, nullptr, 10);
    else if (a == "--requests") o.requests = std::strtoull(v, nullptr, 10);
    else if (a == "--theta") o.theta = std::strtod(v, nullptr);
    else if (a == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else if (a == "--value-bytes") o.value_bytes = std::strtoull(v, nullptr, 10);
    else if (a == "--fractions") o.fractions = ParseList(v);
    else if (a == "--throughput-fraction") o.throughput_fraction = std::strtod(v, nullptr);
    else if (a == "--threads") o.threads = std::max(1, std::atoi(v));
    else if (a == "--batch") o.batch = std::max<size_t>(1, std::strtoull(v, nullptr, 10));
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(v));
    else if (a == "--commit") o.commit = v;
    else if (a == "--date") o.date = v;
    else if (a == "--backend") {
      if (!kvcg::ParseBackend(v, &o.backend) || o.backend == kvcg::Backend::kAuto) {
        std::fprintf(stderr, "--backend: cpu or gpu\n");
        return 2;
      }
    }
    else if (a == "--policies") {
      o.policies.clear();
      std::string list = v;
      for (size_t p = 0; p <= list.size();) {
        size_t q = list.find(',', p);
        if (q == std::string::npos) q = list.size();
        EvictionPolicy pol;
        if (!kvcg::ParseEvictionPolicy(list.substr(p, q - p), &pol)) {
          std::fprintf(stderr, "unknown policy %s\n", list.substr(p, q - p).c_str());
          return 2;
        }
        o.policies.push_back(pol);
        p = q + 1;
      }
    } else {
      Usage();
      return 2;
    }
  }

  // The trace: YCSB's zipfian over key ids, rank 0 most popular. Ids are
  // turned into keys whose store hash is unrelated to the rank.
  std::vector<uint32_t> trace(o.requests);
  {
    kvcg::workload::Random rng(o.seed);
    kvcg::workload::ZipfianGenerator zipf(o.keys, o.theta);
    for (auto& k : trace) k = static_cast<uint32_t>(zipf.Next(rng));
  }
  std::vector<uint8_t> seen(o.keys, 0);
  uint64_t distinct = 0;
  for (uint32_t k : trace) distinct += seen[k] ? 0 : (seen[k] = 1);

  std::string device;
  {
    auto s = OpenStore(o, 0, EvictionPolicy::kNoEviction);
    device = s->Info().device;
  }
  std::printf("{\n  \"benchmark\": \"eviction\",\n  \"date\": \"%s\",\n  \"commit\": \"%s\",\n", o.date.c_str(),
              o.commit.c_str());
  std::printf("  \"backend\": \"%s\",\n  \"device\": \"%s\",\n", kvcg::BackendName(o.backend), device.c_str());
  std::printf(
      "  \"bound\": \"hit ratio: exact LRU simulated on the same trace at the same capacity; throughput: the same "
      "workload on the same store with no memory limit (DESIGN.md 5's bounds are the GPU machine's and do not apply "
      "to the CPU backend)\",\n");
  std::printf(
      "  \"trace\": {\"generator\": \"YCSB ZipfianGenerator\", \"theta\": %.4g, \"keys\": %" PRIu64
      ", \"requests\": %" PRIu64 ", \"distinct_keys_requested\": %" PRIu64 ", \"seed\": %" PRIu64
      ", \"key_bytes\": %d, \"value_bytes\": %zu, \"charge_per_entry\": %" PRIu64 "},\n",
      o.theta, o.keys, o.requests, distinct, o.seed, kKeyBytes, o.value_bytes, EntryCharge(o));
  std::fflush(stdout);

  std::printf("  \"hit_ratio\": [");
  for (size_t f = 0; f < o.fractions.size(); ++f) {
    const uint64_t capacity = static_cast<uint64_t>(o.fractions[f] * o.keys);
    const double lru = ExactLruHitRatio(trace, o.keys, capacity);
    std::printf("%s\n    {\"cache_fraction\": %.4g, \"capacity_keys\": %" PRIu64 ", \"memory_limit_bytes\": %" PRIu64
                ", \"exact-lru\": %.5f",
                f ? "," : "", o.fractions[f], capacity, capacity * EntryCharge(o), lru);
    std::fflush(stdout);
    for (EvictionPolicy p : o.policies) {
      uint64_t evicted = 0, max_bytes = 0;
      const double h = StoreHitRatio(o, trace, capacity, p, &evicted, &max_bytes);
      std::printf(", \"%s\": %.5f, \"%s_evicted\": %" PRIu64 ", \"%s_max_memory_bytes\": %" PRIu64,
                  kvcg::EvictionPolicyName(p), h, kvcg::EvictionPolicyName(p), evicted,
                  kvcg::EvictionPolicyName(p), max_bytes);
      std::fflush(stdout);
      std::fprintf(stderr, "fraction %.3g %s: %.4f (exact LRU %.4f)\n", o.fractions[f], kvcg::EvictionPolicyName(p),
                   h, lru);
    }
    std::printf("}");
  }
  std::printf("\n  ],\n");

  // Throughput: unlimited and each policy, interleaved `repeats` times, for
  // the cache-fill workload and for YCSB-A's fixed mix.
  const uint64_t capacity = static_cast<uint64_t>(o.throughput_fraction * o.keys);
  auto median = [](std::vector<Throughput> v) {
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.requests_per_s < b.requests_per_s; });
    return v[v.size() / 2];
  };
  for (int ycsb_a = 0; ycsb_a < 2; ++ycsb_a) {
    std::vector<std::vector<Throughput>> runs(o.policies.size() + 1);
    for (int r = 0; r < o.repeats; ++r) {
      runs[0].push_back(RunThroughput(o, trace, 0, EvictionPolicy::kNoEviction, ycsb_a));
      for (size_t p = 0; p < o.policies.size(); ++p) {
        runs[p + 1].push_back(RunThroughput(o, trace, capacity * EntryCharge(o), o.policies[p], ycsb_a));
      }
    }
    const Throughput base = median(runs[0]);
    std::printf("  \"%s\": {\"workload\": \"%s\", \"cache_fraction\": %.4g, \"threads\": %d, \"batch\": %zu, "
                "\"repeats\": %d, \"hardware_threads\": %u,\n",
                ycsb_a ? "throughput_ycsb_a" : "throughput",
                ycsb_a ? "YCSB-A mix over the trace: 50% GET, 50% SET by a fixed coin per request, no fills; the same "
                         "operations with and without the limit"
                       : "cache fill: GET, and SET on a miss",
                o.throughput_fraction, o.threads, o.batch, o.repeats, std::thread::hardware_concurrency());
    std::printf("    \"no-limit\": {\"requests_per_s\": %.0f, \"hit_ratio\": %.5f}", base.requests_per_s,
                base.hit_ratio);
    for (size_t p = 0; p < o.policies.size(); ++p) {
      const Throughput m = median(runs[p + 1]);
      std::printf(",\n    \"%s\": {\"requests_per_s\": %.0f, \"hit_ratio\": %.5f, \"ratio_to_no_limit\": %.3f}",
                  kvcg::EvictionPolicyName(o.policies[p]), m.requests_per_s, m.hit_ratio,
                  m.requests_per_s / base.requests_per_s);
    }
    std::printf("\n  }%s\n", ycsb_a ? "" : ",");
  }
  std::printf("}\n");
  return 0;
}
