// GpuSnapshotReader: reads the GPU store's snapshot image (Store::OpenSnapshot,
// kvcg/snapshot.h).
//
// The pipeline copies the table's index into one page-locked host buffer at
// the snapshot's marker (snapshot_kernels.h gives the layout); this reader
// walks that buffer and hands out views: keys (and fixed8 values) point into
// the buffer, general values into their ValueBlobs in the store's value heap,
// read in place, never copied. Those blobs stay valid because the reader
// holds the epoch begun at the marker (result_epochs.h): whatever later
// PUTs, DELETEs and Clear() replace is freed only after the reader is gone.
//
// Lifetime: owns the buffer and the epoch; its destructor gives the one
// back to the pipeline's ImageCache and releases the other, from any thread. It must be destroyed before the
// store (the blobs and the epoch belong to it). Not thread-safe (one reader
// thread at a time, as SnapshotReader says).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kvcg/snapshot.h"
#include "store/gpu/result_epochs.h"

namespace kvcg::store::gpu {

// Page-locked, mapped host buffers for snapshot images, kept for reuse.
// Why: cudaFreeHost waits for every running kernel — the resident one too,
// which stays up to 20 ms (pipeline_resident.cc) — and meanwhile holds a
// driver lock that the pipeline's next launch waits on. A Scan frees one
// image per step, from the caller's thread: an iteration over a table of
// thousands of buckets at COUNT 1 took minutes. A reader gives its buffer
// back here instead (no CUDA call); the next image that fits takes it.
// Small buffers (up to kKeepOne, kKeepBytes in all: Scan steps) are kept;
// larger ones (whole snapshots, rare) are freed at once. Thread-safe.
class ImageCache {
 public:
  static constexpr uint64_t kKeepOne = 4ull << 20, kKeepBytes = 32ull << 20;
  ImageCache() = default;
  ~ImageCache();  // frees the kept buffers; every taken one must be back
  ImageCache(const ImageCache&) = delete;
  ImageCache& operator=(const ImageCache&) = delete;
  // A buffer of at least `bytes` (> 0): a kept one, or a new one.
  cudaError_t Take(uint64_t bytes, char** out);
  // Returns a buffer from Take.
  void Give(char* buffer);

 private:
  std::mutex mu_;
  std::unordered_map<char*, uint64_t> capacity_;  // every buffer out or kept
  std::vector<char*> kept_;
  uint64_t kept_bytes_ = 0;
};

class GpuSnapshotReader final : public SnapshotReader {
 public:
  // Entries per chunk returned by Next.
  static constexpr size_t kChunkEntries = 4096;

  // Takes `image` (`image_bytes` from cudaHostAlloc, or null when empty)
  // holding `entries` entries, and `hold` (general layout: the epoch that
  // keeps their blobs; may be null when nothing points outside the image).
  // `image` came from `cache` (its destructor gives it back there).
  GpuSnapshotReader(bool general, char* image, uint64_t image_bytes, uint64_t entries,
                    std::unique_ptr<ResultEpochs::Lease> hold, ImageCache* cache);
  ~GpuSnapshotReader() override;
  GpuSnapshotReader(const GpuSnapshotReader&) = delete;
  GpuSnapshotReader& operator=(const GpuSnapshotReader&) = delete;

  bool Next(SnapshotChunk* chunk) override;
  uint64_t size() const override { return entries_; }
  Status status() const override { return status_; }

 private:
  const bool general_;
  char* const image_;
  const uint64_t image_bytes_;
  const uint64_t entries_;
  std::unique_ptr<ResultEpochs::Lease> hold_;
  ImageCache* const cache_;
  uint64_t at_ = 0;  // byte offset of the next entry
  Status status_;
};

}  // namespace kvcg::store::gpu
