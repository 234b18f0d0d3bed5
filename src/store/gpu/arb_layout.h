// Internal to the pipeline: where one batch's columns go inside its block
// of the ARB's input region (pipeline.h). Shared by pipeline.cc (Gather's
// size bound) and pipeline_launch.cc (the copies and the segment table).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvcg/batch.h"
#include "store/gpu/arb_kernels.h"

namespace kvcg::store::gpu {

// Bytes of one ARB's input region when it aggregates several batches, and
// the hard limit for a lone batch: key offsets inside it are 32 bits.
constexpr uint64_t kMaxInputBytes = uint64_t(1) << 31;
constexpr uint64_t kMaxLoneInputBytes = (uint64_t(1) << 32) - 1;

inline constexpr size_t A64(size_t x) { return (x + 63) & ~size_t(63); }

// Where one batch's columns sit inside its block (offsets from the block).
struct BlockLayout {
  size_t keys, lens, types, expected, values, expire, cond, key_bytes, value_bytes, size;
};

inline BlockLayout LayoutOf(const Batch& b, bool general) {
  const size_t n = b.size();
  BlockLayout l{};
  size_t off = 0;
  auto take = [&](size_t bytes) {
    const size_t at = off;
    off += A64(bytes);
    return at;
  };
  // A fixed-width batch sends no descriptors: the device derives them.
  const bool fixed = b.fixed_width();
  l.keys = fixed ? SIZE_MAX : take(n * 8);
  l.lens = fixed ? SIZE_MAX : take(n * 4);
  l.types = take(n);
  l.expected = b.has_cas() ? take(n * 8) : SIZE_MAX;
  l.values = general || fixed ? SIZE_MAX : take(n * 8);
  // Expiry columns only for a batch that uses them: none of it costs a
  // batch without TTLs a byte of PCIe.
  l.expire = b.has_expiry() ? take(n * 8) : SIZE_MAX;
  l.cond = b.has_expiry() ? take(n) : SIZE_MAX;
  l.key_bytes = take(b.key_bytes_size());
  // General layout: stored values are written into their blobs in host
  // memory when the batch is submitted (write_plan.h); they do not travel.
  l.value_bytes = general ? SIZE_MAX : take(b.value_bytes_size());
  l.size = A64(off);
  return l;
}

inline uint64_t InputBytes(const Batch& b, bool general) { return LayoutOf(b, general).size; }

// Calls fn(dst_offset, src, bytes) for each column of `b` placed at `l`.
template <typename Fn>
void ForEachColumn(const Batch& b, const BlockLayout& l, Fn fn) {
  const size_t n = b.size();
  if (l.keys != SIZE_MAX) fn(l.keys, b.keys(), n * 8);
  if (l.lens != SIZE_MAX) fn(l.lens, b.value_lens(), n * 4);
  fn(l.types, b.types(), n);
  if (l.expected != SIZE_MAX) fn(l.expected, b.expected_column(), n * 8);
  if (l.values != SIZE_MAX) fn(l.values, b.values(), n * 8);
  if (l.expire != SIZE_MAX) fn(l.expire, b.expire_column(), n * 8);
  if (l.cond != SIZE_MAX) fn(l.cond, b.condition_column(), n);
  fn(l.key_bytes, b.key_bytes(), b.key_bytes_size());
  if (l.value_bytes != SIZE_MAX) fn(l.value_bytes, b.value_bytes(), b.value_bytes_size());
}

// An ARB's work region in device memory: the device copy of the ARB's
// descriptor (a large ARB's prepare reads it there), the prepare's
// normalized columns and scratch for n ops (byte offsets, each column
// 64-byte aligned; n is a large ARB's LargeArbCapacity), cub's scratch of
// temp_bytes (large ARBs), and the expire column when a batch of the ARB
// has expiry.
struct WorkLayout {
  size_t dev, type, check, hash, key, ctl, value, expected, rec, vlen, done, wslot, hkey, sorted,
      idx_in, idx_out, marks, marks_scan, temp, expire, total = 0;
  WorkLayout(size_t n, size_t temp_bytes, bool expire_column) {
    dev = Take(sizeof(ArbDev));
    type = Take(n), check = Take(n), hash = Take(n * 8), key = Take(n * 8), ctl = Take(n * 8),
    value = Take(n * 8), expected = Take(n * 8), rec = Take(n * 8), vlen = Take(n * 4),
    done = Take((n + 1) * 4), wslot = Take(n * 4), hkey = Take(n * 4), sorted = Take(n * 4),
    idx_in = Take(n * 4), idx_out = Take(n * 4), marks = Take(n * 8), marks_scan = Take(n * 8),
    temp = Take(temp_bytes);
    expire = expire_column ? Take(n * 8) : 0;
  }

 private:
  size_t Take(size_t bytes) {
    const size_t at = total;
    total += A64(bytes);
    return at;
  }
};

}  // namespace kvcg::store::gpu
