// WindowSpace: the window table's TableSpace (table_space.h). A batch
// reserves one EMPTY slot per op that may insert, under the table's load
// limit (kMaxWindowLoad); the kernel lets it claim at most that many
// (its allowance), and Release counts what it claimed, so `used` (live
// slots + tombstones) is known on the host without reading the device.
//
// Growth: a rebuild (WindowTable::Grow) moves every entry into a new set of
// windows, which no kernel may overlap, so Reserve never grows — it fails,
// the pipeline drains and calls ReserveAvailable, which rebuilds: into
// about twice the windows the live keys and the batch need (load ~0.4
// after it), or into as many as before when tombstones, not live keys, took
// the room. The old windows are freed after the move; both count against
// the device budget meanwhile.
//
// Scans across a rebuild. A rebuild moves every entry, so a Scan cursor (a
// window index) from before it means nothing in the new windows. Before it
// rebuilds, the space keeps a host copy of the old windows — the table as
// it was at that moment, tagged with its generation — and a Scan step whose
// cursor carries that generation reads the copy instead: a key present from
// the start to the end of the iteration was present then, in one window
// of the copy, so the iteration still returns it (its value as of the
// rebuild: Redis's SCAN promises keys, and any value the key held). The
// copies of the last kKeptImages generations are kept, each for at most
// kImageLifetime; a cursor older than that starts over (duplicates, nothing
// missed, as Redis allows). Growth doubles the table, so the copies add up
// to less than the current table.
//
// Thread-safety: the pipeline's thread calls Reserve / ReserveAvailable /
// Release / Reset / ScanImageWindows / ScanImage; a rebuild holds `table_mu` (the store's lock
// for other threads' reads of the table, e.g. KeyAccess) while it runs.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "store/gpu/slab_pool.h"
#include "store/gpu/table_space.h"
#include "store/gpu/window_table.h"

namespace kvcg::store::gpu {

class WindowSpace final : public TableSpace {
 public:
  // host_hash: empty when the store hashes with Xxh3 (the rebuild hashes on
  // the device), else the store's hash of an 8-byte key. `stream` and
  // `table_mu` are the store's control stream and the lock that guards it.
  WindowSpace(WindowTable* table, DeviceBudget* budget,
              std::function<uint64_t(uint64_t)> host_hash, cudaStream_t stream,
              std::mutex* table_mu);

  bool Reserve(uint64_t n) override;
  uint64_t ReserveAvailable(uint64_t want, bool* exhausted) override;
  void Release(uint64_t reserved, uint64_t taken) override;
  // Clear(): the table is empty again (nothing in flight).
  void Reset();

  uint64_t used() const;
  // Rebuilds so far (a Scan cursor from before one restarts).
  uint64_t generation() const;
  // The first CUDA error a rebuild met (cudaSuccess if none).
  cudaError_t error() const;

  // A Scan step over the kept copy of generation `generation`.
  // ScanImageWindows: the copy's window count (a step's run depends on it),
  // 0 when no copy of that generation is kept (a copy has at least 2).
  // ScanImage: appends the live entries (key word, value word) of the
  // copy's windows [begin, end) — and the sentinel keys when begin is 0 —
  // to *entries; false when no copy of that generation is kept.
  uint64_t ScanImageWindows(uint64_t generation);
  bool ScanImage(uint64_t generation, uint64_t begin, uint64_t end,
                 std::vector<uint64_t>* entries);

  static constexpr size_t kKeptImages = 4;
  static constexpr std::chrono::minutes kImageLifetime{10};

 private:
  // Rebuilds for `want` more claims; mu_ held, nothing in flight.
  void RebuildLocked(uint64_t want);
  // The table's windows and side table, copied to the host before a rebuild.
  struct Image {
    uint64_t generation = 0, windows = 0;
    std::vector<uint64_t> words;  // windows * kWindowWords
    uint64_t special[4] = {};
    std::chrono::steady_clock::time_point made;
  };
  // Copies the table as it is now (table_mu held); false on a CUDA error.
  bool KeepImageLocked();
  // The kept copy of `generation`, once the expired ones are dropped; null
  // when none is kept. mu_ held.
  const Image* FindImageLocked(uint64_t generation);

  WindowTable* const table_;
  DeviceBudget* const budget_;
  const std::function<uint64_t(uint64_t)> host_hash_;
  cudaStream_t const stream_;
  std::mutex* const table_mu_;
  mutable std::mutex mu_;
  uint64_t used_ = 0;
  uint64_t reserved_ = 0;
  uint64_t generation_ = 0;
  cudaError_t error_ = cudaSuccess;
  std::deque<Image> images_;  // newest last
};

}  // namespace kvcg::store::gpu
