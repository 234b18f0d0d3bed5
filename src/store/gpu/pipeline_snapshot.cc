// Pipeline, snapshot marker: the table's image for Store::OpenSnapshot.
//
// Why at a marker: the pipeline is the store's one path to the table, and
// ARBs' L-Slab kernels run in queue order. Once every ARB before the marker
// has completed (Run() quiesces before every marker) and before the
// next is launched, the table holds exactly the effect of the batches queued
// before the marker: those whose Submit returned before OpenSnapshot
// started, none submitted after it returned, each batch in between wholly in
// or out. The pipeline pauses only for the two kernels (snapshot_kernels.h;
// the window table's: window_snapshot_kernels.h) and the allocation of the
// image between them.
//
// Blobs. The general layout's image points at value blobs in place; the
// epoch begun here (after every earlier ARB's, before every later one's)
// keeps them: a blob that a later ARB unlinks is retired with that ARB's
// later sequence number, a later Clear() retires the whole heap with a
// sequence number >= this one, and ResultEpochs frees neither while this
// epoch is held (result_epochs.h). The reader holds it.
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include "store/gpu/gpu_snapshot.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/pipeline.h"
#include "store/gpu/window_snapshot_kernels.h"

namespace kvcg::store::gpu {

void Pipeline::HandleSnapshot(Request* r) {
  SnapshotMarker* m = r->snapshot;
  delete r;
  std::unique_ptr<SnapshotReader> reader;
  Status status;
  if (general_) {
    status = m->scan ? SlabScanStep(m, &reader) : TakeSnapshot(m->begin, m->end, &reader);
  } else {
    status = m->scan ? WindowScanStep(m, &reader) : TakeWindowSnapshot(m->begin, m->end, &reader);
  }
  std::lock_guard<std::mutex> lock(m->mu);
  m->status = std::move(status);
  m->reader = std::move(reader);
  m->done = true;
  m->cv.notify_all();
}

// The image's host memory and the reader, for both tables: mapped, like the
// value heap, so the dump kernel writes it directly; from the store's
// PinnedMemory pool, which the reader gives it back to (gpu_snapshot.h).
namespace {

Status AllocateImage(PinnedMemory* memory, uint64_t bytes, uint64_t entries, char** image) {
  *image = nullptr;
  if (bytes == 0) return Status::Ok();
  *image = static_cast<char*>(memory->Allocate(bytes));
  if (*image != nullptr) return Status::Ok();
  return Status::Internal("snapshot: cannot allocate " + std::to_string(bytes) +
                          " bytes of page-locked host memory for the image of " +
                          std::to_string(entries) + " keys");
}

Status CheckDump(const SnapshotTotals& counted, const SnapshotTotals& dumped) {
  if (dumped.overflow == 0 && dumped.cursor == counted.bytes && dumped.dumped == counted.entries) {
    return Status::Ok();
  }
  return Status::Internal("snapshot: the table's copy disagrees with its count (counted " +
                          std::to_string(counted.entries) + " keys / " +
                          std::to_string(counted.bytes) + " bytes, copied " +
                          std::to_string(dumped.dumped) + " / " + std::to_string(dumped.cursor) +
                          ")");
}

}  // namespace

uint64_t ScanRun(uint64_t remaining, uint64_t units, uint64_t count, uint64_t keys) {
  // About `count` entries: count * units / keys units at the table's mean
  // load (rounded up, so a sparse table takes many a step, not one), and
  // every remaining unit when the table looks empty. `keys` only sizes the
  // run; whatever it says, every unit is still visited.
  if (keys == 0) return remaining;
  const unsigned __int128 want =
      (static_cast<unsigned __int128>(count < 1 ? 1 : count) * units + keys - 1) / keys;
  if (want >= remaining) return remaining;
  return want < 1 ? 1 : static_cast<uint64_t>(want);
}

namespace {

// A window-table Scan step's run: ScanRun's, but at least kMinScanWindows
// windows. Why a floor: a step is a pipeline marker (a drain and two
// kernels) and a window holds only 4 slots, so steps of COUNT entries made
// an iteration with COUNT 1 cost thousands of drains beside concurrent
// writers (an L-Slab bucket holds ~16 keys, and its steps were never that
// small). 15 windows are at most 60 entries (+ the two sentinel keys), so a
// step stays within 2 * COUNT + 64 (the conformance suite's bound: COUNT is
// a hint, in Redis too).
constexpr uint64_t kMinScanWindows = 15;

uint64_t WindowScanRun(uint64_t windows, uint64_t begin, uint64_t count, uint64_t keys) {
  const uint64_t remaining = windows - (begin < windows ? begin : windows);
  const uint64_t run = ScanRun(remaining, windows, count, keys);
  const uint64_t floor = remaining < kMinScanWindows ? remaining : kMinScanWindows;
  return run > floor ? run : floor;
}

}  // namespace

Status Pipeline::SnapshotFailed(cudaError_t err, const char* what) {
  // A device error other than running short of memory is sticky, as for ARBs.
  cudaGetLastError();
  if (err != cudaErrorMemoryAllocation) sticky_ = err;
  return Status::Internal(std::string("snapshot: ") + what + ": " + cudaGetErrorString(err));
}

Status Pipeline::SnapshotBegin() {
  if (sticky_ != cudaSuccess) {
    return Status::Internal(std::string("the GPU failed earlier: ") + cudaGetErrorString(sticky_));
  }
  if (snapshot_totals_ == nullptr) {
    const cudaError_t err =
        cudaMalloc(reinterpret_cast<void**>(&snapshot_totals_), sizeof(SnapshotTotals));
    if (err != cudaSuccess) {
      snapshot_totals_ = nullptr;
      return SnapshotFailed(err, "cudaMalloc");
    }
  }
  return Status::Ok();
}

Status Pipeline::SlabScanStep(SnapshotMarker* m, std::unique_ptr<SnapshotReader>* out) {
  const uint32_t bits = store_->table().bucket_bits;
  const uint64_t buckets = 1ull << bits;
  const uint32_t shift = kScanBucketBits - bits;
  m->next = 0;
  if ((m->cursor >> kScanBucketBits) != 0) {  // not one of ours: past the end
    *out = std::make_unique<GpuSnapshotReader>(true, nullptr, 0, 0, nullptr, pinned_);
    return Status::Ok();
  }
  // Tables only grow (Clear keeps the bucket array), so a cursor made at a
  // smaller table names the first of the buckets its bucket split into.
  const uint64_t begin = m->cursor >> shift;
  const uint64_t end = begin + ScanRun(buckets - begin, buckets, m->count, m->keys);
  Status s = TakeSnapshot(begin, end, out);
  if (s.ok() && end < buckets) m->next = end << shift;
  return s;
}

Status Pipeline::WindowScanStep(SnapshotMarker* m, std::unique_ptr<SnapshotReader>* out) {
  WindowSpace& space = store_->window_space();
  const uint64_t gen = space.generation() & kScanGenerationMask;
  const uint64_t cursor_gen = m->cursor >> kScanWindowBits;
  uint64_t begin = m->cursor & kScanWindowMask;
  if (m->cursor != 0 && cursor_gen != gen) {
    // Begun before a rebuild: the rest of the iteration reads the copy of
    // the table kept from then (window_space.h), if it still is.
    if (const uint64_t windows = space.ScanImageWindows(cursor_gen); windows != 0) {
      const uint64_t end = begin + WindowScanRun(windows, begin, m->count, m->keys);
      std::vector<uint64_t> entries;
      // (False only if the copy expired since ScanImageWindows: start over.)
      if (space.ScanImage(cursor_gen, begin, end, &entries)) {
        m->next = end < windows ? cursor_gen << kScanWindowBits | end : 0;
        char* image = nullptr;
        const uint64_t bytes = entries.size() * 8;
        Status s = AllocateImage(pinned_, bytes, entries.size() / 2, &image);
        if (!s.ok()) return s;
        if (bytes != 0) std::memcpy(image, entries.data(), bytes);
        *out = std::make_unique<GpuSnapshotReader>(false, image, bytes, entries.size() / 2,
                                                   nullptr, pinned_);
        return Status::Ok();
      }
    }
    begin = 0;  // no copy kept: start over (duplicates, nothing missed)
  }
  const uint64_t windows = store_->window().windows();
  if (m->cursor == 0) begin = 0;
  const uint64_t end = begin + WindowScanRun(windows, begin, m->count, m->keys);
  m->next = end < windows ? gen << kScanWindowBits | end : 0;
  return TakeWindowSnapshot(begin, end, out);
}

Status Pipeline::TakeWindowSnapshot(uint64_t begin, uint64_t end,
                                    std::unique_ptr<SnapshotReader>* out) {
  const WindowTableView table = store_->window_view();
  const WindowRange range{begin, end};
  SnapshotTotals counted{};
  char* image = nullptr;
  const Status s = CountAndDump(
      [&](SnapshotTotals* t, cudaStream_t st) { return WindowSnapshotCount(table, range, t, st); },
      [&](char* img, uint64_t bytes, SnapshotTotals* t, cudaStream_t st) {
        return WindowSnapshotDump(table, range, img, bytes, t, st);
      },
      &counted, &image);
  if (!s.ok()) return s;
  *out = std::make_unique<GpuSnapshotReader>(false, image, counted.bytes, counted.entries, nullptr,
                                             pinned_);
  return Status::Ok();
}

Status Pipeline::CountAndDump(const CountPass& count, const DumpPass& dump, SnapshotTotals* counted,
                              char** image) {
  *image = nullptr;
  Status s = SnapshotBegin();
  if (!s.ok()) return s;
  // Nothing else of ours is in flight: any of the slots' streams will do.
  cudaStream_t st = slots_[0].stream;
  cudaError_t err = count(snapshot_totals_, st);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(counted, snapshot_totals_, sizeof(*counted), cudaMemcpyDeviceToHost, st);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  if (err != cudaSuccess) return SnapshotFailed(err, "counting the table");
  s = AllocateImage(pinned_, counted->bytes, counted->entries, image);
  if (!s.ok() || *image == nullptr) return s;
  SnapshotTotals dumped{};
  err = dump(*image, counted->bytes, snapshot_totals_, st);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&dumped, snapshot_totals_, sizeof(dumped), cudaMemcpyDeviceToHost, st);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  s = err != cudaSuccess ? SnapshotFailed(err, "copying the table") : CheckDump(*counted, dumped);
  if (!s.ok()) {
    pinned_->Free(*image, counted->bytes);
    *image = nullptr;
  }
  return s;
}

Status Pipeline::TakeSnapshot(uint64_t begin, uint64_t end, std::unique_ptr<SnapshotReader>* out) {
  const TableView& table = store_->table();
  const uint64_t buckets = 1ull << table.bucket_bits;
  const BucketRange range{begin < buckets ? begin : buckets, end < buckets ? end : buckets};
  // One clock reading for both passes: they must agree on what expired.
  const uint64_t now = store_->config().clock();
  SnapshotTotals counted{};
  char* image = nullptr;
  const Status s = CountAndDump(
      [&](SnapshotTotals* t, cudaStream_t st) { return SnapshotCount(table, range, now, t, st); },
      [&](char* img, uint64_t bytes, SnapshotTotals* t, cudaStream_t st) {
        return SnapshotDump(table, range, now, img, bytes, t, st);
      },
      &counted, &image);
  if (!s.ok()) return s;
  const uint64_t bytes = counted.bytes;
  // The blobs the image points at live as long as the reader holds this
  // epoch. Begin(0) takes no memory: it cannot fail.
  std::unique_ptr<ResultEpochs::Lease> hold;
  if (counted.entries != 0) hold = std::make_unique<ResultEpochs::Lease>(epochs_.Begin(0));
  *out = std::make_unique<GpuSnapshotReader>(true, image, bytes, counted.entries,
                                             std::move(hold), pinned_);
  return Status::Ok();
}

}  // namespace kvcg::store::gpu
