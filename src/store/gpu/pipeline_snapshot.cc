// Pipeline, snapshot marker: the table's image for Store::OpenSnapshot.
//
// Why at a marker: the pipeline is the store's one path to the table, and
// ARBs' L-Slab kernels run in queue order. Once every ARB before the marker
// has completed (HandleSnapshot drains them, as Clear does) and before the
// next is launched, the table holds exactly the effect of the batches queued
// before the marker: those whose Submit returned before OpenSnapshot
// started, none submitted after it returned, each batch in between wholly in
// or out. The pipeline pauses only for the two kernels (snapshot_kernels.h)
// and the allocation of the image between them.
//
// Blobs. The general layout's image points at value blobs in place; the
// epoch begun here (after every earlier ARB's, before every later one's)
// keeps them: a blob that a later ARB unlinks is retired with that ARB's
// later sequence number, a later Clear() retires the whole heap with a
// sequence number >= this one, and ResultEpochs frees neither while this
// epoch is held (result_epochs.h). The reader holds it.
#include <cuda_runtime.h>

#include <string>

#include "store/gpu/gpu_snapshot.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/pipeline.h"

namespace kvcg::store::gpu {

void Pipeline::HandleSnapshot(Request* r) {
  while (!inflight_.empty()) CompleteFront();
  SnapshotMarker* m = r->snapshot;
  delete r;
  std::unique_ptr<SnapshotReader> reader;
  Status status = TakeSnapshot(m->begin, m->end, &reader);
  std::lock_guard<std::mutex> lock(m->mu);
  m->status = std::move(status);
  m->reader = std::move(reader);
  m->done = true;
  m->cv.notify_all();
}

Status Pipeline::TakeSnapshot(uint64_t begin, uint64_t end, std::unique_ptr<SnapshotReader>* out) {
  if (sticky_ != cudaSuccess) {
    return Status::Internal(std::string("the GPU failed earlier: ") + cudaGetErrorString(sticky_));
  }
  // A device error other than running short of memory is sticky, as for ARBs.
  auto failed = [&](cudaError_t err, const char* what) {
    cudaGetLastError();
    if (err != cudaErrorMemoryAllocation) sticky_ = err;
    return Status::Internal(std::string("snapshot: ") + what + ": " + cudaGetErrorString(err));
  };
  cudaError_t err;
  if (snapshot_totals_ == nullptr) {
    err = cudaMalloc(reinterpret_cast<void**>(&snapshot_totals_), sizeof(SnapshotTotals));
    if (err != cudaSuccess) {
      snapshot_totals_ = nullptr;
      return failed(err, "cudaMalloc");
    }
  }
  // Nothing else of ours is in flight: any of the slots' streams will do.
  cudaStream_t st = slots_[0].stream;
  const TableView& table = store_->table();
  const uint64_t buckets = 1ull << table.bucket_bits;
  const BucketRange range{begin < buckets ? begin : buckets, end < buckets ? end : buckets};

  // One clock reading for both passes: they must agree on what expired.
  const uint64_t now = store_->config().clock();
  SnapshotTotals counted{};
  err = SnapshotCount(general_, table, range, now, snapshot_totals_, st);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&counted, snapshot_totals_, sizeof(counted), cudaMemcpyDeviceToHost, st);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  if (err != cudaSuccess) return failed(err, "counting the table");

  char* image = nullptr;
  const uint64_t bytes = counted.bytes;
  if (bytes != 0) {
    // Mapped (like the value heap): the dump kernel writes it directly.
    err = cudaHostAlloc(reinterpret_cast<void**>(&image), bytes,
                        cudaHostAllocMapped | cudaHostAllocPortable);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return Status::Internal("snapshot: cannot allocate " + std::to_string(bytes) +
                              " bytes of page-locked host memory for the image of " +
                              std::to_string(counted.entries) + " keys: " +
                              cudaGetErrorString(err));
    }
    SnapshotTotals dumped{};
    err = SnapshotDump(general_, table, range, now, image, bytes, snapshot_totals_, st);
    if (err == cudaSuccess) {
      err = cudaMemcpyAsync(&dumped, snapshot_totals_, sizeof(dumped), cudaMemcpyDeviceToHost, st);
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(st);
    if (err != cudaSuccess) {
      cudaFreeHost(image);
      return failed(err, "copying the table");
    }
    if (dumped.overflow != 0 || dumped.cursor != bytes || dumped.dumped != counted.entries) {
      cudaFreeHost(image);
      return Status::Internal(
          "snapshot: the table's copy disagrees with its count (counted " +
          std::to_string(counted.entries) + " keys / " + std::to_string(bytes) + " bytes, copied " +
          std::to_string(dumped.dumped) + " / " + std::to_string(dumped.cursor) + ")");
    }
  }
  // The blobs the image points at (general layout) live as long as the
  // reader holds this epoch. Begin(0) takes no memory: it cannot fail.
  std::unique_ptr<ResultEpochs::Lease> hold;
  if (general_ && counted.entries != 0) {
    hold = std::make_unique<ResultEpochs::Lease>(epochs_.Begin(0));
  }
  *out = std::make_unique<GpuSnapshotReader>(general_, image, bytes, counted.entries,
                                             std::move(hold));
  return Status::Ok();
}

}  // namespace kvcg::store::gpu
