// kvcg-demo: a short in-process workload that shows the embedded API working
// and prints its throughput. `make run` falls back to it when the server is
// not built.
//
// Workload: prefill N 8-byte keys, then T threads each run batches of B
// operations (95% GET / 5% PUT, uniform keys) for a fixed time.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kvcg/store.h"

namespace {

std::string KeyOf(uint64_t i) {
  std::string key(8, '\0');
  std::memcpy(key.data(), &i, 8);
  return key;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t keys = argc > 1 ? std::stoull(argv[1]) : 1'000'000;
  const unsigned threads = argc > 2 ? std::stoul(argv[2]) : std::max(1u, std::thread::hardware_concurrency());
  const double seconds = argc > 3 ? std::stod(argv[3]) : 3.0;
  const size_t batch_ops = 512;

  kvcg::Config config;
  config.expected_keys = keys;
  std::unique_ptr<kvcg::Store> store;
  kvcg::Status status = kvcg::Store::Open(config, &store);
  if (!status.ok()) {
    std::fprintf(stderr, "kvcg-demo: cannot open store: %s\n", status.ToString().c_str());
    return 1;
  }
  const kvcg::StoreInfo info = store->Info();
  std::printf("kvcg-demo: backend %s on %s (%s)\n", kvcg::BackendName(info.backend),
              info.device.c_str(), info.detail.c_str());

  std::printf("prefilling %llu keys...\n", static_cast<unsigned long long>(keys));
  for (uint64_t base = 0; base < keys; base += batch_ops) {
    kvcg::Batch batch;
    for (uint64_t i = base; i < std::min(keys, base + batch_ops); ++i) batch.Put(KeyOf(i), KeyOf(i));
    store->Execute(std::move(batch));
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> done_ops{0}, misses{0};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      uint64_t ops = 0, miss = 0;
      kvcg::Batch batch;
      while (!stop.load(std::memory_order_relaxed)) {
        batch.Clear();
        for (size_t i = 0; i < batch_ops; ++i) {
          const uint64_t k = rng() % keys;
          if (rng() % 100 < 5) batch.Put(KeyOf(k), KeyOf(rng()));
          else batch.Get(KeyOf(k));
        }
        for (const kvcg::OpResult& r : store->Execute(batch)) miss += !r.found();
        ops += batch_ops;
      }
      done_ops += ops;
      misses += miss;
    });
  }
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%u threads, batches of %zu, 95%% GET / 5%% PUT, uniform over %llu keys\n", threads,
              batch_ops, static_cast<unsigned long long>(keys));
  std::printf("throughput: %.2f M ops/s (%llu ops in %.2f s, %llu misses)\n",
              done_ops.load() / elapsed / 1e6, static_cast<unsigned long long>(done_ops.load()),
              elapsed, static_cast<unsigned long long>(misses.load()));
  std::printf("keys stored: %llu\n", static_cast<unsigned long long>(store->Size()));
  return misses.load() == 0 ? 0 : 2;
}
