// See closed_loop.h.
#include "closed_loop.h"

#include <chrono>
#include <condition_variable>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace kvcg::eval {
namespace {

using Clock = std::chrono::steady_clock;

// Completions may run on the store's threads, so each client's counters sit
// behind its own (practically uncontended) mutex.
struct ClientState {
  std::mutex mu;
  LoadResult result;
  std::atomic<unsigned> outstanding{0};
};

constexpr size_t Align8(size_t x) { return (x + 7) & ~size_t{7}; }

uint64_t SeedOf(uint64_t seed, unsigned thread) {
  // splitmix64 of (seed, thread): neighbouring seeds give unrelated streams.
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + thread + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

LoadResult RunClosedLoop(Store* store, const workload::WorkloadSpec& spec,
                         std::atomic<uint64_t>* insert_counter, const LoadOptions& options,
                         const TickFn& tick) {
  const unsigned threads = options.threads == 0 ? 1 : options.threads;
  const unsigned pipeline = options.pipeline == 0 ? 1 : options.pipeline;
  std::vector<std::unique_ptr<ClientState>> clients;
  for (unsigned t = 0; t < threads; ++t) clients.push_back(std::make_unique<ClientState>());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> completed{0};
  // Generators are built before the clock starts: a zipfian's zeta sum takes
  // tens of milliseconds, which would otherwise eat into short runs.
  std::latch ready(threads);
  std::atomic<bool> go{false};
  Clock::time_point start;
  const double interval_ns = options.interval_ms * 1e6;

  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ClientState& me = *clients[t];
      workload::OperationGenerator gen(spec, SeedOf(options.seed, t), insert_counter);
      ready.count_down();
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint64_t quota = options.ops == 0 ? UINT64_MAX
                                        : options.ops / threads + (t < options.ops % threads ? 1 : 0);
      std::string key, value;
      uint64_t tag = static_cast<uint64_t>(t) << 40;
      uint64_t ycsb_ops = 0;
      while (quota > 0 && !stop.load(std::memory_order_relaxed)) {
        while (me.outstanding.load(std::memory_order_acquire) >= pipeline) std::this_thread::yield();
        // A batch in the store's own memory (pinned on the GPU backend), sized
        // up front; a read-modify-write adds a second op and a second key.
        Batch batch = store->NewBatch();
        const unsigned n = static_cast<unsigned>(std::min<uint64_t>(options.batch, quota));
        const size_t rmw = spec.read_modify_write > 0 ? 2 : 1;
        batch.Reserve(n * rmw, n * rmw * Align8(spec.key_bytes), n * Align8(spec.value_bytes));
        for (unsigned i = 0; i < n; ++i) {
          const workload::Operation op = gen.Next();
          gen.Key(op.key_index, &key);
          switch (op.kind) {
            case workload::OpKind::kRead:
              batch.Get(key);
              break;
            case workload::OpKind::kUpdate:
            case workload::OpKind::kInsert:
              gen.Value(++tag, &value);
              batch.Put(key, value);
              break;
            case workload::OpKind::kReadModifyWrite:
              gen.Value(++tag, &value);
              batch.Get(key);
              batch.Put(key, value);
              break;
          }
        }
        quota -= n;
        ycsb_ops += n;
        const uint64_t store_ops = batch.size();
        me.outstanding.fetch_add(1, std::memory_order_acq_rel);
        const auto submitted = Clock::now();
        store->Submit(std::move(batch), [&, submitted, store_ops](Results&& results) {
          const auto now = Clock::now();
          const uint64_t ns = static_cast<uint64_t>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(now - submitted).count());
          uint64_t not_found = 0, errors = 0;
          // Only the codes are consumed; the Results is released on return.
          const Code* codes = results.codes();
          for (size_t i = 0; i < results.size(); ++i) {
            not_found += codes[i] == Code::kNotFound;
            errors += codes[i] != Code::kOk && codes[i] != Code::kNotFound;
          }
          {
            std::lock_guard lock(me.mu);
            LoadResult& res = me.result;
            res.batch_latency.Record(ns);
            res.batches += 1;
            res.store_ops += store_ops;
            res.not_found += not_found;
            res.errors += errors;
            if (interval_ns > 0) {
              const double since = std::chrono::duration<double, std::nano>(now - start).count();
              const size_t slot = static_cast<size_t>(since / interval_ns);
              if (res.timeline.size() <= slot) res.timeline.resize(slot + 1);
              res.timeline[slot].batches += 1;
              res.timeline[slot].store_ops += store_ops;
              res.timeline[slot].latency_sum_ns += ns;
            }
          }
          completed.fetch_add(store_ops, std::memory_order_relaxed);
          me.outstanding.fetch_sub(1, std::memory_order_acq_rel);
        });
      }
      while (me.outstanding.load(std::memory_order_acquire) != 0) std::this_thread::yield();
      std::lock_guard lock(me.mu);
      me.result.ycsb_ops = ycsb_ops;
    });
  }

  ready.wait();
  start = Clock::now();
  go.store(true, std::memory_order_release);

  // The monitor: ticks, and ends a timed run.
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread monitor([&] {
    const auto period = std::chrono::duration<double, std::milli>(options.tick_ms > 0 ? options.tick_ms : 100);
    auto next = start + std::chrono::duration_cast<Clock::duration>(period);
    std::unique_lock lock(done_mu);
    while (!done) {
      if (done_cv.wait_until(lock, next, [&] { return done; })) break;
      next += std::chrono::duration_cast<Clock::duration>(period);
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (options.ops == 0 && elapsed >= options.seconds) stop = true;
      lock.unlock();
      if (tick) tick(elapsed, completed.load(std::memory_order_relaxed));
      lock.lock();
    }
  });
  if (options.ops == 0) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(options.seconds)));
    stop = true;
  }
  for (auto& w : workers) w.join();
  const auto end = Clock::now();
  {
    std::lock_guard lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
  monitor.join();

  LoadResult total;
  total.seconds = std::chrono::duration<double>(end - start).count();
  for (auto& c : clients) {
    std::lock_guard lock(c->mu);
    const LoadResult& r = c->result;
    total.ycsb_ops += r.ycsb_ops;
    total.store_ops += r.store_ops;
    total.batches += r.batches;
    total.not_found += r.not_found;
    total.errors += r.errors;
    total.batch_latency.Merge(r.batch_latency);
    if (total.timeline.size() < r.timeline.size()) total.timeline.resize(r.timeline.size());
    for (size_t i = 0; i < r.timeline.size(); ++i) {
      total.timeline[i].batches += r.timeline[i].batches;
      total.timeline[i].store_ops += r.timeline[i].store_ops;
      total.timeline[i].latency_sum_ns += r.timeline[i].latency_sum_ns;
    }
  }
  return total;
}

}  // namespace kvcg::eval
