// What both window-table kernels (the general one, window_kernel.cu; the
// GET kernel, window_get_kernel.cu) do around an op: load its inputs and
// write its answer. Included by those .cu files only (nvcc); internal to
// each (anonymous namespace).
#pragma once

#include <cuda_runtime.h>

#include "store/gpu/arb_ops.cuh"
#include "store/gpu/lslab_types.h"

namespace kvcg::store::gpu {
namespace {

// One op's result (kvcg's form, or the raw columns) and its group's done
// count, written by the lane that answers it (a tile's leader, a GET lane).
__device__ void Answer(const ArbView& a, uint32_t idx, uint32_t group, bool skip, uint8_t code,
                       uint64_t rv) {
  GroupDone(a, group, code);
  if (a.out_codes != nullptr) {
    WriteOutputs<false>(a, idx, skip, code, rv, 0, 0, 0);
  } else {
    a.res_code[idx] = code;
    a.res_value[idx] = rv;
  }
}

// One op's inputs as its claim loads them (its probe's start comes from the
// hash): the same loads for both ways of claiming.
struct OpInput {
  uint64_t key = 0, hash = 0;
  uint32_t ctl = 0;
  bool skip = false;
};
__device__ __forceinline__ OpInput LoadOp(const ArbView& a, uint32_t i) {
  return {a.key[i], a.hash[i], uint32_t(a.ctl[i]), a.skip != nullptr && a.skip[i] != 0};
}

}  // namespace
}  // namespace kvcg::store::gpu
