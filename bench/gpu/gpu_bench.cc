// kvcg-bench-gpu: the GPU canonical store's benchmarks (issue 3 §5), each
// printing one JSON document on stdout (progress on stderr) with the device,
// the date and $COMMIT.
//
//   kernel   (a) the L-Slab kernel alone on device-resident batches (keys
//            distinct within a batch), next to the random 8-byte-read and
//            256-byte-slab-read bounds of the same table memory: fixed8
//            (default), 2^27 keys, mixes 100/0, 95/5, 50/50, 0/100
//            (kernel_bench.cc); --layout general: 16-byte keys, 64-byte
//            values, 2^24 keys, mixes 100/0, 95/5, 50/50
//            (kernel_general_bench.cc); --layout both: a JSON array of both.
//   e2e      (b) the Store API end to end: submitter threads build batches
//            in NewBatch() memory, Submit them asynchronously and consume
//            every result; fixed8 and general; GPU and CPU backend in the same
//            run, next to the PCIe bound (e2e_bench.cc).
//   latency  (c) one thread, Execute of one 512-op 95/5 batch at a time:
//            p50/p99/p999/max, GPU and CPU backend (latency_bench.cc).
//   expiry   the active-expiry sweep over a general table of 2^27 keys, half
//            with a TTL: nothing expired, half reclaimed, none volatile left,
//            next to the bytes-read / HBM-bandwidth bound (expiry_bench.cc).
//
// Usage: kvcg-bench-gpu kernel|e2e|latency|expiry [flags]
//   --keys-log2 N        keys prefilled (kernel 27 fixed8 / 24 general, e2e 24,
//                        latency 22, expiry 27)
//   --layout L           fixed8 | general | both: e2e, latency (default both),
//                        kernel (default fixed8)
//   --cpu 0|1            e2e, latency: also run the CPU backend (default 1)
//   --threads T          e2e: submitter threads, also the prefill's (default 8;
//                        expiry, kernel --layout general: the prefill's)
//   --depth D            e2e: batches in flight per thread (default 2)
//   --batch N            e2e: ops per batch (default 65536); kernel --layout
//                        fixed8: ops per batch (default the store's, 540,672)
//   --seconds S          e2e: measured seconds per cell (default 3)
//   --warmup S           e2e: unmeasured seconds before each cell (default 0.5)
//   --consume completion|submitter   e2e: where results are consumed
//   --mix NAME           e2e: run only this mix (get95_put5, get100, get50_put50);
//                        kernel --layout fixed8: only this mix (also put100)
//   --pregenerated P     e2e: each submitter generates P batches' columns
//                        before the clock starts and cycles through them
//                        (an embedder whose keys are already in arrays);
//                        0 (default): generated per batch
//   --iterations N       latency: samples per cell (default 20000)
//   --gpu-idle-spin-us U latency: Config::gpu_idle_spin_us (default: the Config's)
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "bench_util.h"

namespace {

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s kernel|e2e|latency|expiry [--keys-log2 N] [--layout fixed8|general|both] "
               "[--cpu 0|1] [--threads T] [--depth D] [--batch N] [--seconds S] [--warmup S] "
               "[--consume completion|submitter] [--pregenerated P] [--mix NAME] [--iterations N] [--gpu-idle-spin-us U]\n",
               argv0);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using kvcg::bench::Args;
  Args args;
  if (argc < 2) return Usage(argv[0]);
  args.mode = argv[1];
  for (int i = 2; i < argc; i += 2) {
    const std::string f = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "flag %s needs a value\n", f.c_str());
      return Usage(argv[0]);
    }
    const std::string v = argv[i + 1];
    try {
      if (f == "--keys-log2") args.keys_log2 = std::stoi(v);
      else if (f == "--seconds") args.seconds = std::stod(v);
      else if (f == "--warmup") args.warmup = std::stod(v);
      else if (f == "--threads") args.threads = std::stoi(v);
      else if (f == "--depth") args.depth = std::stoi(v);
      else if (f == "--batch") {
        args.batch = std::stoi(v);
        args.batch_given = true;
      }
      else if (f == "--pregenerated") args.pregenerated = std::stoi(v);
      else if (f == "--mix") {
        if (v != "get95_put5" && v != "get100" && v != "get50_put50" && v != "put100") {
          std::fprintf(stderr, "unknown mix %s\n", v.c_str());
          return Usage(argv[0]);
        }
        args.mix = v;
      }
      else if (f == "--layout") {
        args.layout = v;
        args.layout_given = true;
      }
      else if (f == "--cpu") args.cpu = std::stoi(v) != 0;
      else if (f == "--consume") args.consume_in_completion = v == "completion";
      else if (f == "--iterations") args.iterations = std::stoi(v);
      else if (f == "--gpu-idle-spin-us") args.gpu_idle_spin_us = std::stoi(v);
      else {
        std::fprintf(stderr, "unknown flag %s\n", f.c_str());
        return Usage(argv[0]);
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "bad value %s for %s\n", v.c_str(), f.c_str());
      return Usage(argv[0]);
    }
    if (f == "--consume" && v != "completion" && v != "submitter") return Usage(argv[0]);
  }
  if (args.layout != "fixed8" && args.layout != "general" && args.layout != "both") {
    return Usage(argv[0]);
  }
  if (args.keys_log2 > 32 || args.keys_log2 < -1 || args.threads < 1 || args.depth < 1 ||
      args.batch < 1 || args.seconds <= 0 || args.warmup < 0) {
    std::fprintf(stderr, "out-of-range flag value (keys-log2 <= 32; threads, depth, batch >= 1)\n");
    return 1;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "kvcg-bench-gpu: no CUDA device\n");
    return 3;
  }
  if (args.mode == "kernel") return kvcg::bench::RunKernel(args);
  if (args.mode == "e2e") return kvcg::bench::RunE2e(args);
  if (args.mode == "latency") return kvcg::bench::RunLatency(args);
  if (args.mode == "expiry") return kvcg::bench::RunExpiry(args);
  std::fprintf(stderr, "unknown mode %s\n", args.mode.c_str());
  return Usage(argv[0]);
}
