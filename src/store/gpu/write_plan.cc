// PlanWrites: a batch's write memory in one Take per size class.
#include "store/gpu/write_plan.h"

#include <algorithm>
#include <array>

#include "common/op_scan.h"
#include "store/backends.h"

namespace kvcg::store::gpu {
namespace {

constexpr size_t kClasses = 64;

// Addresses taken per size class, handed out in op order.
struct Taken {
  std::array<uint32_t, kClasses> want{}, got{}, next{}, at{};
  std::vector<uint64_t> addrs;

  void Lay() {  // offsets of each class's run in addrs
    size_t off = 0;
    for (size_t c = 0; c < kClasses; ++c) {
      at[c] = uint32_t(off);
      off += want[c];
    }
    addrs.resize(off);
  }
  uint64_t Next(uint32_t c) { return next[c] < got[c] ? addrs[at[c] + next[c]++] : 0; }
};

}  // namespace

bool PlanWrites(const Batch& b, const Config& config, uint64_t entry_overhead, ValueHeap* values,
                KeyRecordHeap* records, bool may_grow, WritePlan* plan) {
  plan->writes.clear();
  plan->write_ops.clear();
  plan->puts.clear();
  plan->storing = plan->grow = plan->max_charge = 0;
  plan->ready = false;

  // Pass 1: the write ops, their checks and how much memory of each class.
  Taken blobs, recs;
  const OpType* types = b.types();
  size_t i;
  for (OpScan scan(types, b.size(), kWritingTypes); scan.Next(&i);) {
    const OpType t = types[i];
    const uint32_t vlen = uint32_t(b.value(i).size());
    WriteRef w{uint32_t(i), uint32_t(b.key(i).size()), vlen, t, false, nullptr, 0};
    if (TypeIn(t, kStoringTypes) &&
        CheckOperation(config, b, i) == Code::kOk) {
      // A big blob is an allocation of its own: a CUDA call.
      if (ValueHeap::Big(vlen) && !may_grow) return false;
      w.stores = true;
      if (!ValueHeap::Big(vlen)) ++blobs.want[ValueHeap::ClassOf(vlen)];
      ++recs.want[KeyRecordHeap::ClassOf(w.klen)];
      ++plan->storing;
      const uint64_t charge = uint64_t(w.klen) + vlen + entry_overhead;
      plan->grow += charge;
      if (charge > plan->max_charge) plan->max_charge = charge;
    }
    plan->writes.push_back(w);
    plan->write_ops.push_back(uint32_t(i));
  }
  if (plan->storing == 0) {
    plan->ready = true;
    return true;
  }

  // Pass 2: one Take per class.
  blobs.Lay();
  recs.Lay();
  bool short_ = false;
  for (uint32_t c = 0; c < kClasses; ++c) {
    if (blobs.want[c] != 0) {
      blobs.got[c] = uint32_t(values->Take(
          c, blobs.want[c], reinterpret_cast<uint64_t**>(&blobs.addrs[blobs.at[c]]), may_grow));
      short_ |= blobs.got[c] < blobs.want[c];
    }
    if (recs.want[c] != 0) {
      recs.got[c] = uint32_t(records->Take(c, recs.want[c], &recs.addrs[recs.at[c]], may_grow));
      short_ |= recs.got[c] < recs.want[c];
    }
  }
  if (short_ && !may_grow) {  // the pipeline thread will plan it, with new chunks
    for (uint32_t c = 0; c < kClasses; ++c) {
      values->Return(c, reinterpret_cast<uint64_t**>(&blobs.addrs[blobs.at[c]]), blobs.got[c]);
      records->Return(c, &recs.addrs[recs.at[c]], recs.got[c]);
    }
    plan->writes.clear();
    plan->write_ops.clear();
    return false;
  }

  // Pass 3: hand out the memory in op order. A record only with a blob.
  plan->puts.reserve(plan->storing);
  // (No prefetch of the values ahead: one that really ran — GCC had deleted
  // the first one's loop — changed nothing, docs/BENCHMARKS.md 4g.)
  for (WriteRef& w : plan->writes) {
    if (!w.stores) continue;
    const std::string_view value = b.value(w.op);
    if (ValueHeap::Big(w.vlen)) {
      w.blob = values->Allocate(value);  // may_grow: the pipeline thread
    } else {
      w.blob = reinterpret_cast<uint64_t*>(blobs.Next(ValueHeap::ClassOf(w.vlen)));
      if (w.blob != nullptr) ValueHeap::Fill(w.blob, value);
    }
    if (w.blob != nullptr) w.rec = recs.Next(KeyRecordHeap::ClassOf(w.klen));
    plan->puts.push_back(PutEntry{w.op, w.vlen, reinterpret_cast<uint64_t>(w.blob), w.rec});
  }
  // Records left over (their blobs could not be had) go back.
  for (uint32_t c = 0; c < kClasses; ++c) {
    if (recs.next[c] < recs.got[c]) {
      records->Return(c, &recs.addrs[recs.at[c] + recs.next[c]], recs.got[c] - recs.next[c]);
    }
  }
  ValueHeap::FillFence();
  plan->ready = true;
  return true;
}

uint64_t GrowWithin(const WritePlan& plan, uint64_t entry_overhead, uint64_t limit) {
  if (limit == 0 || plan.max_charge <= limit) return plan.grow;
  uint64_t grow = 0;
  for (const WriteRef& w : plan.writes) {
    const uint64_t charge = uint64_t(w.klen) + w.vlen + entry_overhead;
    if (w.stores && charge <= limit) grow += charge;
  }
  return grow;
}

}  // namespace kvcg::store::gpu
