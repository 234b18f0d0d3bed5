// Scratch diagnostic: can the GPU gather random 64-byte host values (the
// value heap: THP, cudaHostRegister'd) into a mapped host output buffer fast?
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1); } } while (0)
struct Ref { const char* p; unsigned long long n; };
__global__ void Gather(const Ref* refs, size_t n, char* out, int mode) {
  // 4 lanes per op, 16 bytes each.
  size_t t = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  size_t op = t / 4, part = t % 4;
  if (op >= n) return;
  const uint4* src = reinterpret_cast<const uint4*>(refs[op].p) + part;
  uint4 v = *src;
  if (mode == 1) reinterpret_cast<uint4*>(out + op * 64)[part] = v;   // mapped host
  else reinterpret_cast<uint4*>(out + op * 64)[part] = v;             // device buffer
}
static unsigned long long Mix(unsigned long long z) { z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31); }
int main() {
  const size_t bytes = 1ull << 30;
  char* heap = static_cast<char*>(std::aligned_alloc(2 << 20, bytes));
  madvise(heap, bytes, MADV_HUGEPAGE);
  std::memset(heap, 1, bytes);
  CK(cudaHostRegister(heap, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
  char* pinned4k; CK(cudaHostAlloc((void**)&pinned4k, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(pinned4k, 1, bytes);
  for (size_t n : {size_t(65536), size_t(270000), size_t(540672)}) {
    for (int src = 0; src < 2; ++src) {
      char* base = src ? pinned4k : heap;
      std::vector<Ref> h(n);
      for (size_t i = 0; i < n; ++i) h[i] = {base + (Mix(i + 7 * n) % (bytes / 64)) * 64, 64};
      Ref* d; CK(cudaMalloc(&d, n * sizeof(Ref)));
      CK(cudaMemcpy(d, h.data(), n * sizeof(Ref), cudaMemcpyHostToDevice));
      char* hout; CK(cudaHostAlloc((void**)&hout, n * 64, cudaHostAllocMapped | cudaHostAllocPortable));
      char* dout; CK(cudaMalloc(&dout, n * 64));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
      for (int mode = 1; mode <= 2; ++mode) {
        char* out = mode == 1 ? hout : dout;
        float best = 1e9;
        for (int r = 0; r < 6; ++r) {
          cudaEventRecord(e0);
          Gather<<<(n * 4 + 255) / 256, 256>>>(d, n, out, mode);
          cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
          float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
        }
        CK(cudaGetLastError());
        std::printf("n %7zu src %-13s out %-6s: %8.1f us  %.1f M values/s  %.1f GB/s\n", n, src ? "cudaHostAlloc" : "thp-registered",
                    mode == 1 ? "host" : "device", best * 1e3, n / (best * 1e3), n * 64 / (best * 1e6));
      }
      cudaFree(d); cudaFreeHost(hout); cudaFree(dout);
    }
  }
}
