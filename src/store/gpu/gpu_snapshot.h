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
// back to the store's PinnedMemory pool and releases the other, from any
// thread. Why the pool: cudaFreeHost waits for every running kernel — the
// resident one too, which stays up to 20 ms (pipeline_resident.cc) — and
// meanwhile holds a driver lock that the pipeline's next launch waits on;
// a Scan frees one image per step, and an iteration over a table of
// thousands of buckets at COUNT 1 took minutes. The pool keeps freed blocks
// for reuse, with no CUDA call. It must be destroyed before the
// store (the blobs and the epoch belong to it). Not thread-safe (one reader
// thread at a time, as SnapshotReader says).
#pragma once

#include <cstdint>
#include <memory>

#include "kvcg/snapshot.h"
#include "store/gpu/pinned_memory.h"
#include "store/gpu/result_epochs.h"

namespace kvcg::store::gpu {

class GpuSnapshotReader final : public SnapshotReader {
 public:
  // Entries per chunk returned by Next.
  static constexpr size_t kChunkEntries = 4096;

  // Takes `image` (`image_bytes` from `memory`, given back there by the
  // destructor; null when empty) holding `entries` entries, and `hold`
  // (general layout: the epoch that keeps their blobs; may be null when
  // nothing points outside the image).
  GpuSnapshotReader(bool general, char* image, uint64_t image_bytes, uint64_t entries,
                    std::unique_ptr<ResultEpochs::Lease> hold, PinnedMemory* memory);
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
  PinnedMemory* const memory_;
  uint64_t at_ = 0;  // byte offset of the next entry
  Status status_;
};

}  // namespace kvcg::store::gpu
