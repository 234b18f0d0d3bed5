// The GPU pipeline's profile: where its thread's time goes (ns), and each
// resident ARB's stages, printed to stderr at Pipeline::Stop() when
// KVCG_GPU_PROFILE is set — the end-to-end and latency benchmarks'
// diagnosis tool. Filled and printed by pipeline_profile.cc. Also the
// counts of its paths, which it keeps whether profiling or not.
#pragma once

#include <cstdint>
#include <vector>

#include "store/gpu/resident_ring.h"

namespace kvcg::store::gpu {

// How the pipeline's ARBs went, counted always (not only when profiling);
// GpuStore::path_counts hands them to tests and benchmarks.
struct PipelinePathCounts {
  uint64_t resident_arbs = 0, resident_launches = 0, stream_arbs = 0;
  uint64_t resident_renewals = 0;  // of the launches: made by the idle poll (NoteResidentExit)
  uint64_t idle_sleeps = 0;  // times the pipeline thread slept for want of work
};

struct PipelineProfile {
  uint64_t idle = 0, gather = 0, launch = 0, wait = 0, frees = 0, deliver = 0;
  uint64_t copies = 0, prepare = 0, lslab = 0;  // parts of launch: host time of the calls
  uint64_t writes = 0, reserve = 0;  // parts of launch: the write-op pass, the rest after it
  // Parts of writes: batches planned on this thread (write_plan.h) and
  // their time; the heaps' Flush + Prepare (spare chunks) per ARB.
  uint64_t planned_here = 0, plan_here = 0, heap_prep = 0;
  // Of heap_prep: the value heap's and the record heap's Flush and
  // Prepare (ns), the calls of each over 20 us, and the heaps' chunk
  // allocations and releases (each stops the resident kernel first).
  uint64_t heap_part[4] = {}, heap_slow[4] = {}, heap_cuda_calls = 0;
  uint64_t arbs = 0, ops = 0, batches = 0;
  uint64_t handed = 0, hand = 0;  // ARBs queued for the delivery thread, time spent queuing
  uint64_t alone = 0;  // ARBs that ran alone for want of reserved room (Launch)
  uint64_t offloaded = 0;         // the delivery thread's deliver time (its own counter)
  // Per ARB on the device (µs, from timing events): stream work begun ->
  // table kernel begun (copy in, prepare, waiting for the earlier ARBs'
  // kernels it follows), -> table kernel done, -> results copied out.
  double dev_before = 0, dev_table = 0, dev_out = 0;
  uint64_t dev_arbs = 0;
  // Per batch on the host (ns): Enqueue -> taken into an ARB, Enqueue ->
  // its completion called.
  uint64_t queued = 0, answered = 0, timed_batches = 0;
  // Resident ARBs (ns): posted -> results seen by the pipeline thread,
  // and on the device (its clock) between successive ResidentMarks.
  uint64_t res_round = 0, res_timed = 0;
  uint64_t res_stage[kResidentMarks - 1] = {};
  // The same per resident ARB (up to kMaxResidentRecords), for the stages
  // of the slowest ARBs: is a tail made on the device or on the host?
  struct ResidentRecord {
    uint64_t queued = 0;   // its first batch's Enqueue -> posted, of which
    // ... -> taken, -> heaps done, -> planned, -> Issue, -> staged (the
    // rest: PostResident)
    uint64_t to_taken = 0, to_heaps = 0, to_planned = 0, to_issue = 0, to_staged = 0;
    uint64_t round = 0;    // posted -> results seen
    uint64_t stage[kResidentMarks - 1] = {};
    uint64_t deliver = 0;  // seen -> delivered inline, or handed on
    uint64_t seen_at = 0;
  };
  std::vector<ResidentRecord> res_records;
};

}  // namespace kvcg::store::gpu
