// Device helpers for kvcg-bench-gpu (bench_kernels.cu): batch generators and
// the random-read bound kernels. Keys of the kernel benchmark are
// BenchKey(i) for i < key_space (a bijection, so prefilled keys are
// distinct) with hash BenchHash(key); the host side uses the same functions.
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
KVCG_BENCH_HD inline uint64_t BenchHash(uint64_t key) {
  key ^= key >> 31;
  key *= 0xbf58476d1ce4e5b9ull;
  return key ^ (key >> 32);
}

// Fills n ops: sequential ? PUT BenchKey(first + i) : uniform keys in
// [0, key_space) with put_per_mille PUTs, the rest GETs.
cudaError_t GenerateArb(uint32_t n, uint64_t first, uint64_t key_space, uint32_t put_per_mille,
                        uint64_t seed, bool sequential, uint64_t* hash, uint64_t* key,
                        uint64_t* ctl, uint64_t* value, cudaStream_t stream);

// threads (a multiple of 256) each read per_thread random 8-byte words.
cudaError_t LaunchRandomRead8(const uint64_t* buf, uint64_t words, uint64_t threads,
                              int per_thread, uint64_t seed, uint64_t* sink, cudaStream_t stream);
// warps (a multiple of 8) each read per_warp random 256-byte slab halves.
cudaError_t LaunchRandomSlab256(const uint64_t* buf, uint64_t slabs, uint64_t warps, int per_warp,
                                uint64_t seed, uint64_t* sink, cudaStream_t stream);

}  // namespace kvcg::bench
