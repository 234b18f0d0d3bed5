// kvcg-bench-gpu kernel --layout general: the L-Slab kernel alone on
// device-resident batches of the general layout (16-byte keys, 64-byte
// values), next to the random-read bounds of the table's bucket array. The
// fixed8 twin, and the pieces both share (DeviceArb, the bounds, the timed
// variant loop and its checks), are kernel_bench.cc / kernel_bench.h.
//
//   * store: a GPU store with Layout::kGeneral, expected_keys 2^keys_log2
//     (default 24), active expiry off (no sweep kernel may run beside the
//     timed launches);
//   * prefill: keys 0 .. 2^keys_log2 through the public Store API
//     (e2e_bench.cc's Prefill: NewBatch + AppendBulk + Submit, --threads
//     threads, two batches in flight each), since an insert needs the key
//     record the host allocates; every PUT must answer kNotFound and Size()
//     must then equal the key count. Key i is e2e's: BenchKey(i) then ~i
//     (16 bytes), its value ValueTag(i) then 'v's (64 bytes);
//   * hash: each op carries the store's own hash of its key, Config::hash
//     (Xxh3Hash, XXH3-64 seed 0) computed on the host. With that default
//     the pipeline hashes on the device (Xxh3Device, arb_kernels.cu), which
//     must agree with the host function (GpuStore::KeyAccess relies on it
//     too); a mismatch would make a GET miss, and a miss fails the run;
//   * mixes 100/0, 95/5, 50/50 GET/PUT on kKernelBatches batches of
//     max_batch_ops ops built on the host and copied once (outside the
//     timed region): batch b covers the permuted window [b * batch,
//     (b + 1) * batch) of the key space, so its keys are distinct (ctl group
//     0, no same-key numbering). Columns: hash; key = arena byte offset (low
//     32) | 16 << 32; arena = the keys' bytes, two words per op; a PUT's
//     value is a ValueBlob (its 64 bytes, the key's own value) in one
//     pinned, mapped host region, vlen 64; rec 0 (every key exists: no
//     insert); no expiry, no skip; raw res_* results (out_codes null);
//   * variants: the default (0 = the layout's: 1 block/SM uncapped), then
//     {1, 8}, {4, 8}, {3, 8} (min blocks per SM, lanes per op). Every GET
//     must answer kResOk with a 64-byte value, every PUT kResOk | kResStored;
//     anything else fails the run.
// PUTs make the keys' records point at the benchmark's blobs (the store's
// own blobs are left to its heap, freed when it closes); the store's values
// are not read again, and it is closed before the blobs are freed.
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "bench_kernels.h"
#include "bench_util.h"
#include "kernel_bench.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/window_types.h"

namespace kvcg::bench {
namespace {

namespace g = kvcg::store::gpu;

constexpr Shape kShape{true};                      // 16-byte keys, 64-byte values
constexpr uint32_t kKeyBytes = 16, kValueBytes = 64;
constexpr uint64_t kBlobWords = kValueBytes / 8;  // ValueBlob: the bytes (lslab_types.h)
// Bytes a GET moves: the slab's 256-byte key half, the sector of the value
// word (the record pointer), and the key record's header and key (40 of
// its 104 bytes, in a 128-byte size class: two sectors; this benchmark's
// ARBs have no value slots, so the record's value copy is not read).
constexpr double kBytesPerOp = 256 + 32 + 64;

// Builds batch `b` of a mix on the host and copies it into `arb`: op i is
// key PermuteKeyIndex((first + i) mod 2^log2), a PUT with probability
// put_per_mille / 1000; a PUT's blob is slot `first_blob + i` of `blobs`.
void BuildBatch(DeviceArb& arb, uint32_t n, uint64_t first, int log2, const Mix& mix,
                uint64_t seed, HashFunction hash_fn, uint64_t* blobs, uint64_t first_blob) {
  Columns cols;  // e2e's key and value bytes; cols.keys doubles as the arena
  Rng rng{seed};
  const uint64_t mask = (1ull << log2) - 1;
  for (uint32_t i = 0; i < n; ++i) {
    cols.Add(kShape, rng.Chance(mix.put_per_mille), PermuteKeyIndex((first + i) & mask, log2));
  }
  std::vector<uint64_t> hash(n), key(n), ctl(n), value(n, 0), rec(n, 0);
  std::vector<uint32_t> vlen(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const bool put = cols.types[i] == OpType::kPut;
    const uint64_t* k = &cols.keys[2 * size_t(i)];
    hash[i] = hash_fn(std::string_view(reinterpret_cast<const char*>(k), kKeyBytes));
    key[i] = uint64_t(i) * kKeyBytes | uint64_t(kKeyBytes) << 32;
    ctl[i] = g::MakeCtl(put ? g::kOpPut : g::kOpGet, false, 0, 0);
    if (put) {
      uint64_t* blob = blobs + (first_blob + i) * kBlobWords;
      std::memcpy(blob, &cols.values[8 * size_t(i)], kValueBytes);
      value[i] = reinterpret_cast<uint64_t>(blob);  // host pointer = device pointer (UVA)
      vlen[i] = kValueBytes;
    }
  }
  KVCG_CK(cudaMemcpy(arb.hash, hash.data(), n * 8ull, cudaMemcpyHostToDevice));
  KVCG_CK(cudaMemcpy(arb.key, key.data(), n * 8ull, cudaMemcpyHostToDevice));
  KVCG_CK(cudaMemcpy(arb.ctl, ctl.data(), n * 8ull, cudaMemcpyHostToDevice));
  KVCG_CK(cudaMemcpy(arb.value, value.data(), n * 8ull, cudaMemcpyHostToDevice));
  KVCG_CK(cudaMemcpy(arb.rec, rec.data(), n * 8ull, cudaMemcpyHostToDevice));
  KVCG_CK(cudaMemcpy(arb.vlen, vlen.data(), n * 4ull, cudaMemcpyHostToDevice));
  KVCG_CK(cudaMemcpy(arb.arena, cols.keys.data(), n * uint64_t(kKeyBytes), cudaMemcpyHostToDevice));
}

}  // namespace

int RunKernelGeneral(const Args& args) {
  const int log2 = args.keys_log2 < 0 ? 24 : args.keys_log2;
  const uint64_t keys = 1ull << log2;
  g::GpuStore* gs = nullptr;
  auto store = OpenKernelStore(Layout::kGeneral, keys, &gs);

  // Prefill through the Store API (checks every code and Size()).
  const double fill_s = Prefill(store.get(), kShape, keys, args.threads);
  if (store->Size() != keys) {
    Fail("kernel general prefill: Size() %llu after %llu distinct PUTs",
         (unsigned long long)store->Size(), (unsigned long long)keys);
  }
  std::fprintf(stderr, "kernel general: prefilled %llu keys through the Store API in %.2f s\n",
               (unsigned long long)keys, fill_s);

  const g::TableView table = gs->table();
  const HashFunction hash_fn = gs->config().hash;
  const uint32_t batch = uint32_t(std::min<uint64_t>(gs->max_batch_ops(), keys));
  KernelRig rig;
  rig.Init();

  const KernelBounds bounds =
      MeasureBounds(table.buckets, (uint64_t(1) << table.bucket_bits) * g::kSlabBytes, rig);
  // The bound of the general layout on a window table instead (issue 16's
  // way to 3 G ops/s): a 64-byte window of (hash, record) slots at load 0.7,
  // then the 128-byte key record it names, over memory of this key count.
  double window_record_gps = 0, window64_gps = 0;
  {
    const uint64_t windows = uint64_t(double(keys) / (0.7 * g::kWindowSlots)) | 1;
    uint64_t *wbuf = nullptr, *rbuf = nullptr, *sink = nullptr;
    KVCG_CK(cudaMalloc(&wbuf, windows * 64));
    KVCG_CK(cudaMalloc(&rbuf, keys * 128));
    KVCG_CK(cudaMalloc(&sink, 8));
    KVCG_CK(cudaMemsetAsync(wbuf, 0, windows * 64, rig.s));
    KVCG_CK(cudaMemsetAsync(rbuf, 0, keys * 128, rig.s));
    window64_gps = MeasureWindowReads(wbuf, windows, rig, sink);
    window_record_gps = MeasureWindowReads(wbuf, windows, rig, sink, rbuf, keys);
    KVCG_CK(cudaFree(wbuf));
    KVCG_CK(cudaFree(rbuf));
    KVCG_CK(cudaFree(sink));
    std::fprintf(stderr,
                 "kernel general: bounds of a window layout: random 64-byte windows %.2f G/s, "
                 "window then 128-byte record %.2f G/s\n",
                 window64_gps, window_record_gps);
  }
  const uint64_t buckets = uint64_t(1) << table.bucket_bits;
  const TableBytes tb = TableDeviceBytes(*gs);
  const uint64_t rec_bytes = g::KeyRecordAllocBytes(kKeyBytes);  // with the value copy

  // One blob slot per op of the kKernelBatches batches (PUTs use theirs).
  const uint64_t blob_slots = uint64_t(kKernelBatches) * batch;
  uint64_t* blobs = nullptr;
  KVCG_CK(cudaHostAlloc(reinterpret_cast<void**>(&blobs), blob_slots * kBlobWords * 8,
                        cudaHostAllocMapped));

  PrintHeader("kernel");
  std::printf("  \"bytes_per_key\": %.2f, \"bytes_per_key_allocated\": %.2f,\n",
              double(tb.used) / keys, double(tb.allocated) / keys);
  std::printf("  \"key_record_bytes_per_key\": %llu, \"key_record_bytes_per_key_allocated\": %llu,\n",
              (unsigned long long)rec_bytes, (unsigned long long)std::bit_ceil(rec_bytes));
  std::printf("  \"memory_note\": \"bytes_per_key: bucket array + pool slabs used (with access "
              "bytes), device; key records (header + 16 key bytes + the 64-byte value copy, device) "
              "are separate, allocated "
              "in power-of-two size classes; values (ValueBlob: the 64 bytes) live in "
              "pinned host memory and are not counted\",\n");
  std::printf("  \"bound_note\": \"a probe reads a slab's 256-byte key half: slab256 is the bound of "
              "a GET, get100_share_of_bound = get100 ops / slab256 reads; dram_gbps_est = ops x %.0f "
              "bytes (key half + the record pointer's sector + the key record's two sectors)\",\n",
              kBytesPerOp);
  std::printf("  \"layout\": \"general\", \"key_bytes\": %u, \"value_bytes\": %u, \"keys\": %llu, "
              "\"buckets\": %llu, \"batch_ops\": %u,\n",
              kKeyBytes, kValueBytes, (unsigned long long)keys, (unsigned long long)buckets, batch);
  std::printf("  \"hash\": \"Config::hash (Xxh3Hash: XXH3-64, seed 0) of the 16 key bytes, on the "
              "host; the pipeline computes the same on the device\",\n");
  std::printf("  \"key_order\": \"keys distinct within a batch (ctl group 0, no same-key "
              "numbering; timed: L-Slab launches only; every key exists: no insert)\",\n");
  std::printf("  \"prefill\": \"Store API (NewBatch + AppendBulk + Submit), %d threads\", "
              "\"prefill_s\": %.3f, \"prefill_mops\": %.1f,\n",
              args.threads, fill_s, keys / fill_s / 1e6);
  std::printf("  \"bound_random_read8_gps\": %.2f, \"bound_random_slab256_gps\": %.2f,\n",
              bounds.read8_gps, bounds.slab256_gps);
  std::printf("  \"bound_window_layout_window64_gps\": %.2f, "
              "\"bound_window_layout_get_gps\": %.2f,\n",
              window64_gps, window_record_gps);
  std::printf("  \"window_layout_note\": \"not this table: the bound of a GET if the general "
              "layout kept (hash, record) slots in 64-byte windows as fixed8 does (load 0.7, this "
              "key count): one random window, then the 128-byte key record it names "
              "(dependent)\",\n");
  std::printf("  \"variant_note\": \"min_blocks_per_sm 3 (registers capped for 3 blocks per SM) "
              "is the store's default; 1 = registers uncapped\",\n");
  std::printf("  \"mixes\": [\n");

  const Mix kMixes[] = {{"get100", 0}, {"get95_put5", 50}, {"get50_put50", 500}};
  const std::vector<std::pair<int, int>> kVariants = {{4, 8}, {1, 8}, {3, 8}};
  bool first_row = true;
  std::vector<DeviceArb> arbs(kKernelBatches);
  for (auto& a : arbs) a.Alloc(batch, true, uint64_t(batch) * kKeyBytes / 8);
  for (const Mix& mix : kMixes) {
    for (int b = 0; b < kKernelBatches; ++b) {
      BuildBatch(arbs[b], batch, uint64_t(b) * batch, log2, mix, 100 + b, hash_fn, blobs,
                 uint64_t(b) * batch);
    }
    RunVariants(table, rig, arbs, batch, mix, kVariants, bounds.slab256_gps, kBytesPerOp,
                kValueBytes, &first_row);
  }
  std::printf("\n  ]\n}\n");
  for (auto& a : arbs) a.Free();
  rig.Destroy();
  store.reset();  // records point at the blobs: close the store first
  KVCG_CK(cudaFreeHost(blobs));
  return 0;
}

}  // namespace kvcg::bench
