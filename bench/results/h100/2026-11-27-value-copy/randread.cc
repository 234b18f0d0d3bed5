// Scratch diagnostic: random 64-byte reads on the host, as the e2e consumer does.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
struct Ref { const char* p; uint64_t n; };
static uint64_t Mix(uint64_t z) { z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31); }
double Run(char* buf, size_t bytes, int threads, int ahead, bool stream_cols) {
  const size_t B = 65536, rounds = 40;
  std::atomic<uint64_t> ns{0}, sink{0};
  std::vector<std::thread> th;
  for (int t = 0; t < threads; ++t) th.emplace_back([&, t] {
    std::vector<Ref> refs(B * 8);
    for (size_t i = 0; i < refs.size(); ++i) refs[i] = {buf + (Mix(i * 131 + t * 977 + 1) % (bytes / 64)) * 64, 64};
    uint64_t s = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t r = 0; r < rounds; ++r) {
      const Ref* v = refs.data() + (r % 8) * B;
      for (size_t j = 0; j < B; ++j) {
        if (ahead && j + ahead < B) __builtin_prefetch(v[j + ahead].p);
        uint64_t w; std::memcpy(&w, v[j].p, 8); s += w;
      }
    }
    ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    sink += s;
  });
  for (auto& x : th) x.join();
  return double(ns.load()) / (double(threads) * B * rounds);
}
int main() {
  const size_t bytes = 1ull << 30;
  char* huge = static_cast<char*>(std::aligned_alloc(2 << 20, bytes));
  madvise(huge, bytes, MADV_HUGEPAGE);
  std::memset(huge, 1, bytes);
  char* plain4k = static_cast<char*>(std::aligned_alloc(4096, bytes));
  madvise(plain4k, bytes, MADV_NOHUGEPAGE);
  std::memset(plain4k, 1, bytes);
  char* pinned = nullptr;
  cudaHostAlloc((void**)&pinned, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  std::memset(pinned, 1, bytes);
  std::system("grep -i AnonHuge /proc/meminfo");
  for (int reg = 0; reg < 2; ++reg) {
    if (reg) { cudaHostRegister(huge, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable); std::printf("-- huge registered\n"); std::system("grep -i AnonHuge /proc/meminfo"); }
    struct { const char* name; char* p; } bufs[] = {{"thp", huge}, {"4k", plain4k}, {"cudaHostAlloc", pinned}};
    for (auto& b : bufs) for (int threads : {1, 14}) for (int ahead : {0, 16, 64})
      std::printf("%-14s threads %2d ahead %2d: %.2f ns/read\n", b.name, threads, ahead, Run(b.p, bytes, threads, ahead, false));
  }
}
