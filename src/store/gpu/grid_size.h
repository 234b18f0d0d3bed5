// Grid sizes from the device's SM count, written once for the kernels that
// size their grids by it: a grid-stride pass launches enough blocks to fill
// the device a few times over (many warps in flight hide dependent loads)
// and no more than its work needs; a resident kernel launches as many
// blocks as are resident at once (its occupancy times the SMs).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvcg::store::gpu {

// The current device's SM count.
inline cudaError_t DeviceSmCount(int* sms) {
  int device = 0;
  *sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device);
  return err;
}

// Blocks for `units` of work, `units_per_block` a block, at most
// `blocks_per_sm` blocks per SM (the kernel grid-strides beyond); at least
// one. If the SM count cannot be read, one SM is assumed and the error is
// returned with the (still usable) result.
inline cudaError_t GridStrideBlocks(uint64_t units, uint32_t units_per_block,
                                    uint32_t blocks_per_sm, uint32_t* blocks) {
  int sms = 0;
  const cudaError_t err = DeviceSmCount(&sms);
  const uint64_t want = (units + units_per_block - 1) / units_per_block;
  const uint64_t cap = uint64_t(sms > 0 ? sms : 1) * blocks_per_sm;
  const uint64_t b = want < cap ? want : cap;
  *blocks = uint32_t(b == 0 ? 1 : b);
  return err;
}

// Blocks of `threads` threads of `kernel` resident on the device at once:
// its occupancy per SM times the SMs (0 on an error, which is returned).
template <typename Kernel>
cudaError_t ResidentBlocks(Kernel kernel, int threads, int* blocks) {
  *blocks = 0;
  int per_sm = 0, sms = 0;
  cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
  if (err == cudaSuccess) err = DeviceSmCount(&sms);
  if (err == cudaSuccess) *blocks = per_sm * sms;
  return err;
}

}  // namespace kvcg::store::gpu
