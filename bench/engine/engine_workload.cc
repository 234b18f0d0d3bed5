// The engine benchmark's requests: see engine_workload.h.
#include "engine_workload.h"

#include <bit>
#include <cstring>
#include <memory>
#include <thread>

namespace kvcg::bench::engine {

RequestStream::RequestStream(const KeyChooser& zipf, double read_ratio, uint64_t ops,
                             uint64_t seed) {
  KeyChooser keys = zipf;
  kvcg::workload::Random rng(seed);
  requests_.resize(ops);
  for (uint64_t& r : requests_) {
    const uint64_t id = keys.Next(rng);
    r = rng.NextDouble() < read_ratio ? id : id | kPut;
  }
}

std::vector<RequestStream> DrawStreams(const KeyChooser& zipf, double read_ratio, unsigned threads,
                                       uint64_t ops, uint64_t seed) {
  std::vector<std::unique_ptr<RequestStream>> made(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      made[t] = std::make_unique<RequestStream>(zipf, read_ratio, ops, seed * 7919 + t);
    });
  }
  for (auto& w : workers) w.join();
  std::vector<RequestStream> streams;
  for (auto& m : made) streams.push_back(std::move(*m));
  return streams;
}

std::string KeyOf(uint64_t id) {
  std::string key(8, '\0');
  std::memcpy(key.data(), &id, 8);
  return key;
}

std::string_view KeyView(const uint64_t& id) {
  static_assert(std::endian::native == std::endian::little, "KeyOf's byte order");
  return {reinterpret_cast<const char*>(&id), 8};
}

}  // namespace kvcg::bench::engine
