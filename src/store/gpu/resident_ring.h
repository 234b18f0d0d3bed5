// The resident kernel's ring: how the pipeline hands small ARBs to a kernel
// that stays on the device, instead of launching kernels per ARB.
//
// Why. A small ARB (a server round, a 512-op batch) launched as kernels
// costs the pipeline thread 3-4 CUDA calls of 2.5-5 µs each and the ARB two
// kernel start-ups (~5 µs each) on the device; at a few hundred ops that
// fixed cost is most of its ~35 µs round trip (docs/BENCHMARKS.md 2f). The
// resident kernel (resident_kernel.cuh) is launched once and then takes ARBs
// from this ring: the pipeline writes the ARB's descriptor and rings a
// doorbell (two stores to mapped host memory), block 0 prepares the ARB
// (arb_prepare.cuh's one-block prepare) and the blocks run its ops (the
// same table code as the per-ARB kernel; when every op has a tile of its
// own outside block 0, block 0 leaves them to the others and is free for
// the next ARB's prepare, arb_ops.cuh StaticClaim); the last block writes the results
// to host memory and the completed sequence number next to the doorbell.
//
// Protocol (all words 64-bit, sequence numbers start at 1 and only grow):
//   host:   desc[seq % kResidentRing] = the ARB, stage[seq % kResidentRing]
//           = its input region; doorbell = seq | input bytes << 40 (release).
//   device: block 0 waits for doorbell >= seq, reads the descriptor and the
//           input together (one round trip: the doorbell said how many
//           bytes; when it names a later seq, the descriptor first), prepares, waits until ARB
//           seq - 1 is finished on the device, then go = (gen, seq); the
//           other blocks wait for go; all run the ops; the last block
//           publishes the results and sets done_seq = seq (host memory)
//           and finished = seq (device memory). (Only block 0 polls host
//           memory: with the others polling the doorbell too, to read the
//           descriptor before go, a 512-op ARB took ~100 us instead of ~26
//           on the H200 host — the doorbell's and the input's PCIe reads
//           queued behind theirs; BENCHMARKS 2z.)
//   exit:   the kernel ends by itself when no ARB came for idle_ns, when it
//           has run life_ns, or when the host asks (stop_gen = its gen);
//           it writes exit_word = gen << 40 | (first seq it did NOT take)
//           before ending, with kResidentEndedByLife when its lifetime
//           ended it. The host relaunches (gen + 1, from that seq) when an
//           ARB it posted was not taken, and at once when the lifetime
//           ended it while the host polls for work (the store is in use:
//           the next ARB then pays no launch).
// Why it ends by itself: CUDA calls such as cudaFree and cudaFreeHost wait
// for the whole device, so a kernel that never ended would hang any thread
// that frees memory (the value heap, pinned batches, a table rebuild). With
// the time bounds such a call waits at most idle_ns (or life_ns under
// constant load). The pipeline stops the kernel itself before its own
// allocating work (markers, rebuilds, a large ARB), so it rarely waits.
#pragma once

#include <cstdint>

#include "store/gpu/arb_kernels.h"
#include "store/gpu/lslab_types.h"
#include "store/gpu/window_types.h"

namespace kvcg::store::gpu {

constexpr uint32_t kResidentRing = 4;         // >= the pipeline's slots
constexpr uint32_t kResidentThreads = 256;    // per block: the prepare's and both table kernels'
constexpr uint32_t kResidentMaxOps = 1024;    // 256 threads x 4 items: the prepare's shared memory
constexpr uint32_t kResidentStageBytes = 32 << 10;  // an ARB's input region at most (the
                                                    // pipeline's kKernelCopyInBytes)
constexpr uint32_t kDoorbellBytesShift = 40;  // the doorbell's input bytes, above its seq
constexpr uint64_t kResidentGenShift = 40;
constexpr uint64_t kResidentSeqMask = (1ull << 39) - 1;
constexpr uint64_t kResidentExitBit = 1ull << 39;      // in go: the kernel ends
constexpr uint64_t kResidentEndedByLife = 1ull << 39;  // in exit_word: it ran life_ns

// A launch's generation: 24 bits in the words (gen << 40), so it counts
// 1 .. kResidentMaxGen and wraps to 1 (0 is the zeroed words'). Counting
// on past 2^24 launches (~4 days of a 20 ms lifetime) would make every
// comparison with a word fail and the store hang. Wrapping cannot alias:
// each word holds the newest or the previous launch's generation (stop_gen
// excepted, which a launch clears when it equals its own).
constexpr uint64_t kResidentMaxGen = (1ull << (64 - kResidentGenShift)) - 1;
constexpr uint64_t NextResidentGen(uint64_t gen) { return gen >= kResidentMaxGen ? 1 : gen + 1; }
static_assert(NextResidentGen(0) == 1 && NextResidentGen(1) == 2 &&
                  NextResidentGen(kResidentMaxGen) == 1 &&
                  (kResidentMaxGen << kResidentGenShift) >> kResidentGenShift == kResidentMaxGen,
              "generations wrap within their 24 bits");

// The kernel's timings of each ARB (ResidentParams::profile, for the
// pipeline's KVCG_GPU_PROFILE): device clock readings (ns) at these points,
// written to ResidentHostWords::prof of the ARB's ring entry.
enum ResidentMark : uint32_t {
  kMarkDoorbell,    // block 0 saw the doorbell
  kMarkDesc,        // ... read the descriptor and the staged input
  kMarkStaged,      // ... stored the input in device memory
  kMarkOpsNormalized,  // ... wrote every op's normalized columns
  kMarkGrouped,     // ... grouped the ops by hash (the prepare's table)
  kMarkNormalized,  // ... scattered the puts and write slots
  kMarkNumbered,    // ... sorted and numbered them: the prepare's end
  kMarkGo,          // ... the previous ARB finished: go
  kMarkLastGo,      // the last block to finish saw go
  kMarkOpsDone,     // ... its ops are done, so all are
  kMarkPublished,   // ... the results are in host memory
  kResidentMarks
};

// One ARB as the kernel needs it: the prepare's input, the table kernel's
// view, and the table (the field of the store's layout).
struct alignas(16) ResidentDesc {
  ArbDev prep;
  ArbView view;
  TableView lslab;        // general layout
  WindowTableView window; // fixed8
  uint32_t items;         // the prepare's items per thread: 1, 2 or 4
};
static_assert(sizeof(ResidentDesc) % 16 == 0, "copied in 16-byte words");

// Page-locked, mapped host memory. Each word on its own cache line: the
// host writes the doorbell and stop_gen, the device the other two.
struct ResidentHostWords {
  alignas(64) volatile uint64_t doorbell;   // the newest seq posted | its input bytes << 40
  alignas(64) volatile uint64_t done_seq;   // the newest seq completed
  alignas(64) volatile uint64_t exit_word;  // gen << 40 | kResidentEndedByLife? | first seq not taken
  alignas(64) volatile uint64_t stop_gen;   // the host asks generation stop_gen to end
  ResidentDesc desc[kResidentRing];
  uint64_t prof[kResidentRing][kResidentMarks];  // with ResidentParams::profile
  // The ARB's input region (ArbDev::stage points here), at a place the
  // kernel knows before it read the descriptor.
  alignas(64) char stage[kResidentRing][kResidentStageBytes];
};

// Device memory, zeroed at allocation.
struct ResidentDevWords {
  alignas(64) uint64_t go;        // gen << 40 | exit bit | seq: block 0 to the others
  alignas(64) uint64_t finished;  // the newest seq whose ops all ran (this generation)
  ResidentDesc desc[kResidentRing];  // block 0's copy for the other blocks
};

struct ResidentParams {
  ResidentHostWords* host = nullptr;  // mapped
  ResidentDevWords* dev = nullptr;
  uint64_t gen = 0;
  uint64_t start_seq = 0;  // the first ARB this launch takes
  uint64_t idle_ns = 0, life_ns = 0;
  uint32_t profile = 0;  // nonzero: write ResidentHostWords::prof
};

}  // namespace kvcg::store::gpu
