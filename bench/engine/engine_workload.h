// The engine benchmark's requests (kvcg-bench-engine, engine_bench.cc):
// key ids drawn from YCSB's scrambled zipfian, each client thread's stream
// of them pre-drawn, and the ids' 8-byte keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workload/generators.h"

namespace kvcg::bench::engine {

// Key ids: a zipfian popularity rank, scrambled by FNV-1a into the key space.
// By default the zipfian is drawn over the key space itself, so rank r's key
// is id FNV-1a(r) mod key-space and "the hottest x% of the key space" is
// exact. --ycsb-items 1e10 draws it over YCSB's ITEM_COUNT instead, exactly
// as YCSB's ScrambledZipfianGenerator does; folding 10^10 ranks into 10^9
// ids flattens popularity (at θ = 0.5 the hottest 0.1% of ids then get
// about 0.5% of requests instead of about 3%), which the paper's Fig. 3b
// numbers (0.1% hot -> 1.83% of requests) do not show.
class KeyChooser {
 public:
  KeyChooser(uint64_t key_space, double theta, uint64_t items)
      : key_space_(key_space), zipf_(items, theta) {}
  uint64_t Next(kvcg::workload::Random& rng) {
    return kvcg::workload::FnvHash64(zipf_.Next(rng)) % key_space_;
  }

 private:
  uint64_t key_space_;
  kvcg::workload::ZipfianGenerator zipf_;
};

// One client thread's pre-drawn requests: key ids with the operation in the
// top bit (ids are below the key space, < 2^63), replayed in a cycle.
// Long enough (--stream-ops, 2^22 by default: 32 MiB a thread, about two
// cycles in a 2 s row on the H200 host) that a cycle touches far more keys
// than a GPU's L2 holds lines. What replaying does change: a key PUT in an
// earlier cycle is PUT again where a later cycle's GETs read it, so more
// GETs find their key than with fresh draws (at θ 0.5, 2^20 ops a thread:
// 15.0 % against 11.9 %, the same in every mode; docs/BENCHMARKS.md 3e).
class RequestStream {
 public:
  static constexpr uint64_t kPut = uint64_t{1} << 63;

  // `ops` requests, a share `read_ratio` of them GETs, drawn from `zipf`
  // with a generator seeded by `seed`.
  RequestStream(const KeyChooser& zipf, double read_ratio, uint64_t ops, uint64_t seed);
  uint64_t size() const { return requests_.size(); }
  uint64_t operator[](uint64_t i) const { return requests_[i]; }

 private:
  std::vector<uint64_t> requests_;
};

// Every client thread's stream for one θ, drawn in parallel.
std::vector<RequestStream> DrawStreams(const KeyChooser& zipf, double read_ratio, unsigned threads,
                                       uint64_t ops, uint64_t seed);

// Rank r (0 = most popular) of the scrambled zipfian is key id
// FNV-1a(r) mod key-space, exactly as workload::ScrambledZipfianGenerator
// folds its draws, so "the hottest ranks" names the hottest keys.
inline uint64_t IdOfRank(uint64_t rank, uint64_t key_space) {
  return kvcg::workload::FnvHash64(rank) % key_space;
}

// Key id `id`'s key: its 8 bytes, little-endian.
std::string KeyOf(uint64_t id);

// The same bytes as KeyOf, without a string: a view of `id` itself (the
// submitters append keys this way, so nothing is allocated per operation).
// Valid while `id` is.
std::string_view KeyView(const uint64_t& id);

}  // namespace kvcg::bench::engine
