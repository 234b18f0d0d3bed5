// kvcg-demo: a short in-process workload that shows the embedded API working
// and prints its throughput. `make run` falls back to it when the server is
// not built.
//
// Workload: prefill N 8-byte keys, then T threads each run batches of B
// operations (95% GET / 5% PUT, uniform keys) for a fixed time.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kvcg/store.h"

namespace {

// The 8 bytes of `i` as a key or value (a view of the caller's variable; the
// batch copies it).
std::string_view Bytes(const uint64_t& i) { return {reinterpret_cast<const char*>(&i), sizeof(i)}; }

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
    kvcg::Batch batch = store->NewBatch();
    for (uint64_t i = base; i < std::min(keys, base + batch_ops); ++i) batch.Put(Bytes(i), Bytes(i));
    store->Execute(std::move(batch));
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> done_ops{0}, misses{0};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      uint64_t ops = 0, miss = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        // A fresh batch in the store's memory each time: the store keeps the
        // one it executes, and NewBatch() saves the copy into pinned memory
        // on the GPU backend.
        kvcg::Batch batch = store->NewBatch();
        batch.Reserve(batch_ops, batch_ops * 8, batch_ops * 8);
        for (size_t i = 0; i < batch_ops; ++i) {
          const uint64_t k = rng() % keys;
          if (rng() % 100 < 5) {
            const uint64_t v = rng();
            batch.Put(Bytes(k), Bytes(v));
          } else {
            batch.Get(Bytes(k));
          }
        }
        const kvcg::Results results = store->Execute(std::move(batch));
        for (size_t i = 0; i < results.size(); ++i) miss += !results.found(i);
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
