// The host side of the L-Slab table's growth (lslab_growth.h has the
// design; the kernels are in lslab_growth.cu): GpuStore::GrowSlabTable
// rebuilds the table, Pipeline::MaybeGrowTable decides when.
//
// Order. Everything that can fail for lack of memory — the new head array,
// the flat copy of the entries, the scan and its scratch (all charged to the
// device budget), slabs for the new chains — is
// done while the old table is still whole; a failure there frees what was
// taken and leaves the table as it was (the pipeline tries again once the
// table has grown further). Only then is the slab pool reset and the new
// table written; an error past that point is a device failure (sticky for
// the pipeline, like a failed ARB kernel).
//
// Locking. control_mu_ is held throughout: KeyAccess reads the table under
// it on another thread, and must see the old table or the new one whole.
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>
#include <vector>

#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_growth.h"
#include "store/gpu/pipeline.h"

namespace kvcg::store::gpu {
namespace {

// Device memory taken for one growth, freed (and given back) on every path.
class Scratch {
 public:
  explicit Scratch(DeviceBudget* budget) : budget_(budget) {}
  ~Scratch() {
    for (void* p : held_) cudaFree(p);
    budget_->Give(charged_);
  }
  // False if the budget or the card cannot give `bytes` (no error left).
  template <typename T>
  bool Take(uint64_t count, T** out) {
    const uint64_t bytes = std::max<uint64_t>(count * sizeof(T), 8);
    *out = nullptr;
    if (!budget_->Take(bytes)) return false;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      budget_->Give(bytes);
      return false;
    }
    charged_ += bytes;
    held_.push_back(p);
    *out = static_cast<T*>(p);
    return true;
  }

 private:
  DeviceBudget* const budget_;
  uint64_t charged_ = 0;
  std::vector<void*> held_;
};

Status Failed(cudaError_t err, const char* what) {
  cudaGetLastError();
  return Status::Internal(std::string("growing the L-Slab table: ") + what + ": " +
                          cudaGetErrorString(err));
}

}  // namespace

Status GpuStore::GrowSlabTable(SlabGrowth* g) {
  *g = SlabGrowth{};
  std::lock_guard<std::mutex> lock(control_mu_);
  const uint32_t old_bits = table_.bucket_bits;
  g->old_buckets = g->new_buckets = 1ull << old_bits;
  Scratch scratch(budget_.get());
  unsigned long long* words = nullptr;  // [0] the count, [1] the copy's cursor
  if (!scratch.Take(2, &words)) return Status::Ok();
  cudaError_t err = GrowCountEntries(table_, words, control_);
  unsigned long long n = 0;
  if (err == cudaSuccess) err = cudaMemcpyAsync(&n, words, sizeof(n), cudaMemcpyDeviceToHost, control_);
  if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  if (err != cudaSuccess) return Failed(err, "counting the entries");
  g->entries = n;

  // About 16 entries a bucket (half a slab), as Open sizes the table for
  // expected_keys, within half the device budget, as at Open. Never fewer
  // buckets: with as many, the rebuild only compacts the chains (deletes
  // leave empty slabs in them; the rebuild fills every slab but the last).
  uint32_t bits = std::max<uint32_t>(old_bits, std::bit_width(std::max<uint64_t>(n / 16, 1) - 1));
  const uint64_t limit = budget_->limit();
  while (bits > old_bits && limit != 0 && (kSlabAndAccessBytes << bits) > limit / 2) --bits;
  if (bits > 30) return Status::Ok();  // (and cub counts items in an int)
  const uint64_t buckets = 1ull << bits;

  uint64_t* heads = nullptr;
  GrowEntries e{};
  uint32_t *counts = nullptr, *overflow = nullptr, *first = nullptr;
  char* scan_temp = nullptr;
  const size_t scan_bytes = GrowScanTempBytes(bits);
  if (!scratch.Take(n, &e.hash) || !scratch.Take(n, &e.record) || !scratch.Take(n, &e.access) ||
      !scratch.Take(buckets + 1, &counts) || !scratch.Take(buckets + 1, &overflow) ||
      !scratch.Take(buckets + 1, &first) || !scratch.Take(scan_bytes, &scan_temp)) {
    return Status::Ok();
  }
  const uint64_t head_bytes = buckets * kSlabAndAccessBytes;
  if (!budget_->Take(head_bytes)) return Status::Ok();
  if (cudaMalloc(&heads, head_bytes) != cudaSuccess) {
    cudaGetLastError();
    budget_->Give(head_bytes);
    return Status::Ok();
  }
  // From here the new head array is ours to free until it is installed.
  auto drop_heads = [&] {
    cudaFree(heads);
    budget_->Give(head_bytes);
  };
  err = cudaMemsetAsync(heads, 0, head_bytes, control_);
  if (err == cudaSuccess) err = GrowGatherEntries(table_, e, n, words + 1, control_);
  unsigned long long copied = 0;
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&copied, words + 1, sizeof(copied), cudaMemcpyDeviceToHost, control_);
  }
  if (err == cudaSuccess) err = GrowCountNewBuckets(e, n, bits, counts, control_);
  if (err == cudaSuccess) {
    err = GrowScanOverflow(counts, bits, overflow, first, scan_temp, scan_bytes, control_);
  }
  uint32_t total = 0;  // overflow slabs of the new chains
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&total, first + buckets, sizeof(total), cudaMemcpyDeviceToHost, control_);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  if (err != cudaSuccess) {
    drop_heads();
    return Failed(err, "copying the entries");
  }
  if (copied != n) {  // nothing else runs on the table: the two walks must agree
    drop_heads();
    return Status::Internal("growing the L-Slab table: counted " + std::to_string(n) +
                            " entries, copied " + std::to_string(copied));
  }
  if (!pool_->EnsureCapacity(1 + uint64_t(total))) {
    drop_heads();
    return Status::Ok();
  }

  // The point of no return: the old chains' overflow slabs are reused.
  err = pool_->Reset(total);
  // The new table's view for the kernels; table_ itself changes only in its
  // two fields below (submitting threads read its entry_overhead unlocked).
  TableView next = table_;
  next.buckets = heads;
  next.bucket_bits = bits;
  if (err == cudaSuccess) err = GrowLinkChains(next, counts, first, 1, control_);
  if (err == cudaSuccess) err = GrowPlaceEntries(next, e, n, counts, first, 1, control_);
  if (err == cudaSuccess) err = cudaStreamSynchronize(control_);
  uint64_t* old = buckets_;
  const uint64_t old_bytes = (1ull << old_bits) * kSlabAndAccessBytes;
  buckets_ = heads;
  table_.buckets = heads;
  table_.bucket_bits = bits;
  bucket_count_.store(buckets, std::memory_order_relaxed);
  cudaFree(old);
  budget_->Give(old_bytes);
  if (err != cudaSuccess) return Failed(err, "writing the new chains");
  g->rebuilt = true;
  g->new_buckets = buckets;
  g->overflow_slabs = total;
  return Status::Ok();
}

// When. The table was sized for ~16 keys a bucket (half a head slab);
// overflow slabs beyond half the bucket count mean about twice that (or
// chains left long by deletes), and GETs that walk two slabs deep, so the
// table is then rebuilt at ~16 keys a bucket. A cheap test per ARB: the
// pool's count is host memory. The next threshold is at least twice the
// overflow the rebuilt table starts with, so keys that all share a bucket
// (an injected degenerate hash) cost a rebuild only each time their chain
// doubles; a rebuild that found no memory is tried again at twice the slabs.
void Pipeline::MaybeGrowTable() {
  // Not with a marker taken from the queue: it may be a Clear.
  if (!general_ || sticky_ != cudaSuccess || marker_ != nullptr) return;
  if (grow_at_slabs_ == 0) grow_at_slabs_ = std::max<uint64_t>(store_->bucket_count() / 2, 1);
  if (store_->pool().used() <= grow_at_slabs_) return;
  CompleteInFlight();  // also stops the resident kernel: nothing runs on the table
  GpuStore::SlabGrowth g;
  const Status s = store_->GrowSlabTable(&g);
  if (!s.ok()) {
    std::fprintf(stderr, "kvcg: %s\n", s.ToString().c_str());
    sticky_ = cudaErrorUnknown;
    return;
  }
  if (!g.rebuilt) {
    grow_at_slabs_ = 2 * store_->pool().used();
    return;
  }
  grow_at_slabs_ = std::max<uint64_t>(g.new_buckets / 2, 2 * g.overflow_slabs);
  if (g.new_buckets > g.old_buckets) growths_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace kvcg::store::gpu
