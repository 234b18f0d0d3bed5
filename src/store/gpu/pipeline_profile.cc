// The pipeline's profile (KVCG_GPU_PROFILE=1): where the pipeline thread's
// time goes, how long batches wait and are answered, and for ARBs on the
// resident ring each stage on the device (the kernel's clock marks,
// resident_ring.h) — printed to stderr when the pipeline stops. It is the
// end-to-end benchmarks' diagnosis tool, not a metric of the store.
//
// Means hide a tail: a 512-op batch's p99 sits 20 µs above its p50 on the
// H100 and H200 (docs/BENCHMARKS.md 2h, 2p), and a mean per stage cannot say
// whether that tail is made on the device (a slow probe, a late doorbell)
// or on the host (the pipeline thread or the delivery descheduled). So each
// resident ARB is also recorded (up to kMaxResidentRecords) and the report
// gives every stage's mean over the median ARBs and over the slowest 1 %
// and 0.1 %, ranked by their first batch's Enqueue -> delivered.
#include <algorithm>
#include <cstdio>
#include <string>

#include "store/gpu/pipeline.h"

namespace kvcg::store::gpu {
namespace {

// 2^18 records of ~100 bytes: a 20,000-sample latency run fits many times.
constexpr size_t kMaxResidentRecords = size_t{1} << 18;

// A resident ARB's device stages, between successive ResidentMarks.
constexpr const char* kStageNames[kResidentMarks - 1] = {
    "read", "stored", "normalized", "grouped", "scattered",
    "numbered", "go", "last go", "ops", "published"};

// "read 1.58, stored 1.20, ...": each stage's total / divisor.
std::string StageList(const uint64_t* stage, double divisor) {
  std::string out;
  char item[64];
  for (uint32_t k = 0; k + 1 < kResidentMarks; ++k) {
    std::snprintf(item, sizeof item, "%s%s %.2f", k == 0 ? "" : ", ", kStageNames[k],
                  stage[k] / divisor);
    out += item;
  }
  return out;
}

}  // namespace

void Pipeline::RecordResident(Slot& s) {
  const uint64_t now = NowNs();
  prof_.res_round += now - s.posted_ns;
  const volatile uint64_t* m = res_host_->prof[s.seq % kResidentRing];
  uint64_t stage[kResidentMarks - 1];
  for (uint32_t k = 0; k + 1 < kResidentMarks; ++k) {
    stage[k] = m[k + 1] - m[k];
    prof_.res_stage[k] += stage[k];
  }
  ++prof_.res_timed;
  if (prof_.res_records.size() >= kMaxResidentRecords) return;
  uint64_t first = 0;  // the earliest Enqueue of its batches (a retry's is 0)
  for (const Request* r : s.reqs) {
    if (r->enqueued_ns != 0 && (first == 0 || r->enqueued_ns < first)) first = r->enqueued_ns;
  }
  if (prof_.res_records.empty()) prof_.res_records.reserve(kMaxResidentRecords);
  s.res_record = int64_t(prof_.res_records.size());
  PipelineProfile::ResidentRecord& rec = prof_.res_records.emplace_back();
  rec.queued = first != 0 && first < s.posted_ns ? s.posted_ns - first : 0;
  if (rec.queued != 0 && first <= s.taken_ns && s.taken_ns <= s.heaps_ns &&
      s.heaps_ns <= s.planned_ns && s.planned_ns <= s.issue_ns && s.issue_ns <= s.staged_ns &&
      s.staged_ns <= s.posted_ns) {
    rec.to_taken = s.taken_ns - first;
    rec.to_heaps = s.heaps_ns - s.taken_ns;
    rec.to_planned = s.planned_ns - s.heaps_ns;
    rec.to_issue = s.issue_ns - s.planned_ns;
    rec.to_staged = s.staged_ns - s.issue_ns;
  }
  rec.round = now - s.posted_ns;
  std::copy(stage, stage + kResidentMarks - 1, rec.stage);
  rec.seen_at = now;
}

void Pipeline::FinishResidentRecord(Slot& s) {
  if (s.res_record < 0) return;  // not recorded (not resident, or past the cap)
  PipelineProfile::ResidentRecord& rec = prof_.res_records[size_t(s.res_record)];
  rec.deliver = NowNs() - rec.seen_at;
  s.res_record = -1;
}

void Pipeline::PrintProfile() {
  if (prof_.arbs == 0) return;
  const double ops = double(prof_.ops);
  std::fprintf(stderr,
               "gpu pipeline: %llu ARBs, %llu batches, %llu ops (%.0f ops/ARB); ms idle %.1f "
               "gather %.1f launch %.1f (writes %.1f reserve+issue %.1f copies %.1f prepare %.1f "
               "lslab %.1f) wait %.1f frees "
               "%.1f deliver %.1f; ns/op launch %.2f wait %.2f frees %.2f deliver %.2f\n",
               (unsigned long long)prof_.arbs, (unsigned long long)prof_.batches,
               (unsigned long long)prof_.ops, ops / prof_.arbs, prof_.idle / 1e6,
               prof_.gather / 1e6, prof_.launch / 1e6, prof_.writes / 1e6, prof_.reserve / 1e6,
               prof_.copies / 1e6, prof_.prepare / 1e6,
               prof_.lslab / 1e6, prof_.wait / 1e6, prof_.frees / 1e6,
               prof_.deliver / 1e6, prof_.launch / ops, prof_.wait / ops, prof_.frees / ops,
               prof_.deliver / ops);
  if (general_) {
    std::fprintf(stderr,
                 "gpu pipeline writes: %llu of %llu batches planned on this thread (ms %.1f), "
                 "heaps' flush and spare chunks ms %.1f (values flush %.1f, records flush %.1f, "
                 "values prepare %.1f, records prepare %.1f; calls over 20 us %llu / %llu / %llu / "
                 "%llu; chunk allocations and releases %llu)\n",
                 (unsigned long long)prof_.planned_here, (unsigned long long)prof_.batches,
                 prof_.plan_here / 1e6, prof_.heap_prep / 1e6, prof_.heap_part[0] / 1e6,
                 prof_.heap_part[1] / 1e6, prof_.heap_part[2] / 1e6, prof_.heap_part[3] / 1e6,
                 (unsigned long long)prof_.heap_slow[0], (unsigned long long)prof_.heap_slow[1],
                 (unsigned long long)prof_.heap_slow[2], (unsigned long long)prof_.heap_slow[3],
                 (unsigned long long)prof_.heap_cuda_calls);
  }
  std::fprintf(stderr,
               "gpu pipeline delivery: %llu of %llu ARBs handed to the delivery thread (ms "
               "queuing %.1f, its delivery %.1f)\n",
               (unsigned long long)prof_.handed, (unsigned long long)prof_.arbs,
               prof_.hand / 1e6, prof_.offloaded / 1e6);
  std::fprintf(stderr,
               "gpu pipeline paths: %llu ARBs on the resident ring (%llu launches, %llu of them "
               "renewals while idle), %llu on streams (device times below: those only); %llu ran "
               "alone for want of reserved room\n",
               (unsigned long long)resident_arbs_.load(), (unsigned long long)resident_launches_.load(),
               (unsigned long long)resident_renewals_.load(), (unsigned long long)stream_arbs_.load(),
               (unsigned long long)prof_.alone);
  if (prof_.res_timed != 0) {
    const double n = double(prof_.res_timed);
    std::fprintf(stderr,
                 "gpu pipeline resident: per ARB (us) posted -> results seen %.2f; on the device "
                 "from the doorbell: %s\n",
                 prof_.res_round / 1e3 / n, StageList(prof_.res_stage, 1e3 * n).c_str());
  }
  const double arbs = prof_.dev_arbs != 0 ? double(prof_.dev_arbs) : 1.0;
  const double batches = prof_.timed_batches != 0 ? double(prof_.timed_batches) : 1.0;
  std::fprintf(stderr,
               "gpu pipeline latency: per ARB on the device (us) to its table kernel %.1f, "
               "table kernel %.1f, copy out %.1f; per batch (us) queued %.1f, answered %.1f\n",
               prof_.dev_before / arbs, prof_.dev_table / arbs, prof_.dev_out / arbs,
               prof_.queued / 1e3 / batches, prof_.answered / 1e3 / batches);

  // The resident ARBs ranked by Enqueue -> delivered.
  std::vector<PipelineProfile::ResidentRecord>& recs = prof_.res_records;
  if (recs.size() < 100) return;
  auto total = [](const PipelineProfile::ResidentRecord& r) { return r.queued + r.round + r.deliver; };
  std::sort(recs.begin(), recs.end(),
            [&](const auto& a, const auto& b) { return total(a) < total(b); });
  const size_t n = recs.size();
  auto band = [&](const char* name, size_t lo, size_t hi) {
    hi = std::max(hi, lo + 1);
    PipelineProfile::ResidentRecord sum;
    for (size_t i = lo; i < hi; ++i) {
      sum.queued += recs[i].queued;
      sum.to_taken += recs[i].to_taken;
      sum.to_heaps += recs[i].to_heaps;
      sum.to_planned += recs[i].to_planned;
      sum.to_issue += recs[i].to_issue;
      sum.to_staged += recs[i].to_staged;
      sum.round += recs[i].round;
      sum.deliver += recs[i].deliver;
      for (uint32_t k = 0; k + 1 < kResidentMarks; ++k) sum.stage[k] += recs[i].stage[k];
    }
    const double c = double(hi - lo) * 1e3;
    const uint64_t* st = sum.stage;
    uint64_t on_device = 0;  // doorbell seen -> published, on the device's clock
    for (uint32_t k = 0; k + 1 < kResidentMarks; ++k) on_device += st[k];
    // posted -> seen less the device's stages: the doorbell's way there and
    // the done word's way back (PCIe), and the host's polls.
    const double transit = (double(sum.round) - double(on_device)) / c;
    std::fprintf(stderr,
                 "gpu pipeline resident %s (%zu ARBs), mean us: enqueue -> posted %.2f (taken "
                 "%.2f, heaps %.2f, planned %.2f, reserved %.2f, staged %.2f, posted %.2f), posted "
                 "-> seen %.2f (outside the device's marks %.2f), seen -> delivered %.2f; device: "
                 "%s\n",
                 name, hi - lo, sum.queued / c, sum.to_taken / c, sum.to_heaps / c,
                 sum.to_planned / c, sum.to_issue / c, sum.to_staged / c,
                 (double(sum.queued) - double(sum.to_taken + sum.to_heaps + sum.to_planned +
                                              sum.to_issue + sum.to_staged)) / c,
                 sum.round / c, transit, sum.deliver / c, StageList(st, c).c_str());
  };
  std::fprintf(stderr,
               "gpu pipeline resident: %zu ARBs recorded, enqueue -> delivered p50 %.1f p99 %.1f "
               "p999 %.1f us\n",
               n, total(recs[n / 2]) / 1e3, total(recs[n * 99 / 100]) / 1e3,
               total(recs[n * 999 / 1000]) / 1e3);
  band("median band (45-55 %)", n * 45 / 100, n * 55 / 100);
  band("slowest 1 %", n * 99 / 100, n);
  band("slowest 0.1 %", n * 999 / 1000, n);
}

}  // namespace kvcg::store::gpu
