// The engine benchmark's runs: see engine_load.h.
#include "engine_load.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <sstream>

namespace kvcg::bench::engine {

Totals RunLoad(kvcg::Store* store, const Params& p, const KeyChooser& zipf,
               const std::vector<RequestStream>& streams, double seconds, uint64_t seed,
               double paced_mops) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::vector<Totals> per_thread(p.threads);
  const auto start = Clock::now();
  for (unsigned t = 0; t < p.threads; ++t) {
    threads.emplace_back([&, t] {
      kvcg::workload::Random rng(seed * 7919 + t);
      KeyChooser keys = zipf;  // one per thread
      const RequestStream* stream = streams.empty() ? nullptr : &streams[t];
      uint64_t cursor = stream == nullptr ? 0 : (seed * 0x2545F4914F6CDD1Dull) % stream->size();
      uint64_t cycle = seed << 16;  // distinct per run (warm-up, measure)
      std::atomic<unsigned> outstanding{0};
      std::mutex mu;
      kvcg::LatencyHistogram latency;
      uint64_t ops = 0;
      uint64_t found = 0;  // under mu
      const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
          paced_mops > 0 ? p.batch * p.threads / (paced_mops * 1e6) : 0));
      const bool paced = paced_mops > 0;
      auto next = Clock::now() + interval * t / p.threads;  // threads spread over one interval
      auto wait_for_room = [&] {
        while (outstanding.load(std::memory_order_acquire) >= p.pipeline) std::this_thread::yield();
      };
      while (!stop.load(std::memory_order_relaxed)) {
        if (!paced) wait_for_room();
        // In the store's memory (pinned on the GPU backend), sized up front:
        // 8-byte keys and values, each one aligned word.
        kvcg::Batch batch = store->NewBatch();
        batch.Reserve(p.batch, p.batch * 8, p.batch * 8);
        if (stream != nullptr) {
          for (unsigned i = 0; i < p.batch; ++i) {
            const uint64_t r = (*stream)[cursor];
            if (++cursor == stream->size()) {
              cursor = 0;
              ++cycle;
            }
            const uint64_t id = r & ~RequestStream::kPut;
            if ((r & RequestStream::kPut) == 0) {
              batch.Get(KeyView(id));
            } else {
              // A value of its own in every cycle of the stream.
              const uint64_t v = (id ^ cycle << 40) * 0x9E3779B97F4A7C15ull + cursor;
              batch.Put(KeyView(id), KeyView(v));
            }
          }
        } else {
          for (unsigned i = 0; i < p.batch; ++i) {
            const uint64_t id = keys.Next(rng);
            if (rng.NextDouble() < p.read_ratio) {
              batch.Get(KeyView(id));
            } else {
              const uint64_t v = rng.Next();
              batch.Put(KeyView(id), KeyView(v));
            }
          }
        }
        // Paced: the batch is due at its slot of the schedule, and its
        // latency counts from there, so a thread that fell behind (or
        // waited for a pipeline slot) reports the delay instead of hiding
        // it (no coordinated omission).
        Clock::time_point submitted;
        if (paced) {
          std::this_thread::sleep_until(next);
          submitted = next;
          next += interval;
          wait_for_room();
        } else {
          submitted = Clock::now();
        }
        ops += p.batch;
        outstanding.fetch_add(1, std::memory_order_acq_rel);
        store->Submit(std::move(batch), [&, submitted](kvcg::Results&& results) {
          const uint64_t ns = static_cast<uint64_t>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - submitted)
                  .count());
          uint64_t hits = 0;
          for (size_t i = 0; i < results.size(); ++i) hits += results.found(i);
          {
            std::lock_guard lock(mu);
            latency.Record(ns);
            found += hits;
          }
          outstanding.fetch_sub(1, std::memory_order_acq_rel);
        });
      }
      while (outstanding.load(std::memory_order_acquire) != 0) std::this_thread::yield();
      per_thread[t].ops = ops;
      std::lock_guard lock(mu);
      per_thread[t].batch_latency = latency;
      per_thread[t].found = found;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : threads) th.join();
  Totals total;
  total.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Totals& t : per_thread) {
    total.ops += t.ops;
    total.found += t.found;
    total.batch_latency.Merge(t.batch_latency);
  }
  return total;
}

void Prefill(kvcg::Store* store, const Params& p) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  std::atomic<uint64_t> failed{0};
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (uint64_t begin = t * 4096; begin < p.prefill; begin += threads * 4096) {
        kvcg::Batch batch = store->NewBatch();
        const uint64_t end = std::min(p.prefill, begin + 4096);
        for (uint64_t r = begin; r < end; ++r) {
          const uint64_t id = IdOfRank(r, p.key_space);
          batch.Put(KeyView(id), KeyView(r));
        }
        const kvcg::Results results = store->Execute(std::move(batch));
        for (size_t i = 0; i < results.size(); ++i) failed += !results[i].succeeded();
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failed != 0) std::fprintf(stderr, "prefill: %llu puts failed\n", (unsigned long long)failed.load());
}

std::shared_ptr<const kvcg::Model> PriorModel(const Params& p) {
  const uint64_t hot = static_cast<uint64_t>(p.hot_fraction * static_cast<double>(p.key_space));
  std::vector<std::string> keys;
  keys.reserve(hot);
  for (uint64_t r = 0; r < hot; ++r) keys.push_back(KeyOf(IdOfRank(r, p.key_space)));
  std::ostringstream desc;
  desc << "prior(hottest " << p.hot_fraction * 100 << "% of key space)";
  return kvcg::MakeKeySetModel(std::move(keys), desc.str());
}

}  // namespace kvcg::bench::engine
