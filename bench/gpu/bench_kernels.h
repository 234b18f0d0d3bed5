// Device helpers for kvcg-bench-gpu (bench_kernels.cu): the kernel
// benchmark's batch generator and the random-read bound kernels.
//
// Keys. Key number i (i < key_space) is BenchKey(i), a bijection on 64 bits,
// so the prefilled keys are distinct; the e2e and latency benchmarks use the
// same numbering on the host. Device batches are hashed with the store's own
// hash (XXH3 of the 8 key bytes, store/gpu/xxh3_fixed8.h), so the table the
// kernel benchmark builds is exactly the one Store::Submit would build.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#ifdef __CUDACC__
#define KVCG_BENCH_HD __host__ __device__
#else
#define KVCG_BENCH_HD
#endif

namespace kvcg::bench {

KVCG_BENCH_HD inline uint64_t BenchKey(uint64_t i) {
  // Odd multiplier + xor-shift: invertible on 64 bits.
  uint64_t k = i * 0x9E3779B97F4A7C15ull;
  return k ^ (k >> 29);
}

// A permutation of [0, 2^bits): odd multipliers (invertible modulo 2^bits)
// and xor-shifts (invertible on bits-bit values), twice. Consecutive j map
// to scattered keys, and distinct j stay distinct.
KVCG_BENCH_HD inline uint64_t PermuteKeyIndex(uint64_t j, int bits) {
  const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  const int shift = (bits + 1) / 2;
  uint64_t x = (j * 0x9E3779B97F4A7C15ull) & mask;
  x ^= x >> shift;
  x = (x * 0xBF58476D1CE4E5B9ull) & mask;
  x ^= x >> shift;
  return x;
}

// Fills n ops of a device-resident fixed8 batch (L-Slab columns), ctl with
// group 0 / need 0 for every op:
//   sequential: PUT BenchKey(first + i) (the prefill: every key new);
//   otherwise:  key BenchKey(PermuteKeyIndex((first + i) mod 2^key_log2)),
//               a PUT with probability put_per_mille / 1000, else a GET.
// In the second form the keys of one batch are distinct as long as
// n <= 2^key_log2, which is what lets every op skip same-key numbering.
cudaError_t GenerateArb(uint32_t n, uint64_t first, int key_log2, uint32_t put_per_mille,
                        uint64_t seed, bool sequential, uint64_t* hash, uint64_t* key,
                        uint64_t* ctl, uint64_t* value, cudaStream_t stream);

// threads (a multiple of 256) each read per_thread random 8-byte words.
cudaError_t LaunchRandomRead8(const uint64_t* buf, uint64_t words, uint64_t threads,
                              int per_thread, uint64_t seed, uint64_t* sink, cudaStream_t stream);
// warps (a multiple of 8) each read per_warp random 256-byte slab halves.
cudaError_t LaunchRandomSlab256(const uint64_t* buf, uint64_t slabs, uint64_t warps, int per_warp,
                                uint64_t seed, uint64_t* sink, cudaStream_t stream);

// tiles of 4 lanes (tiles a multiple of 64) each read per_tile random
// 64-byte windows, 16 bytes per lane.
cudaError_t LaunchRandomWindow64(const uint64_t* buf, uint64_t windows, uint64_t tiles,
                                 int per_tile, uint64_t seed, uint64_t* sink, cudaStream_t stream);

// A general-layout GET on a window table of (hash, record) slots: tiles of
// 4 lanes (tiles a multiple of 64) each read per_tile random 64-byte windows
// of windows_buf, each followed by the random 128-byte record of records_buf
// it names (a dependent read), 32 bytes per lane.
cudaError_t LaunchRandomWindowThenRecord(const uint64_t* windows_buf, uint64_t windows,
                                        const uint64_t* records_buf, uint64_t records,
                                        uint64_t tiles, int per_tile, uint64_t seed,
                                        uint64_t* sink, cudaStream_t stream);

// The window kernel's claims and nothing else: `blocks` blocks of 256
// threads whose warps take `chunk` ops at a time from *cursor (lane 0's
// atomicAdd, as the kernel's ring claims) until n ops are taken. *cursor
// must be 0 at launch.
cudaError_t LaunchCursorClaims(uint32_t* cursor, uint32_t n, uint32_t chunk, uint32_t blocks,
                               uint32_t* sink, cudaStream_t stream);

// Of every key in a window table (device `slots`, `windows`): out[0] the sum
// of the windows between its home window and its own, out[1] the keys,
// out[2] the largest such distance (out: 3 words of device memory).
cudaError_t MeasureWindowDisplacement(const uint64_t* slots, uint64_t windows,
                                      unsigned long long* out, cudaStream_t stream);

}  // namespace kvcg::bench
