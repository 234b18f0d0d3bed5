// Pipeline::Launch: one ARB from its batches to the device — input blocks,
// segment table, put list, the table's reservation (slabs or window slots,
// table_space.h), and the stream's work (copies, ArbPrepare, the table
// kernel — L-Slab or window — which writes the results, copy out). See
// pipeline.h.
#include <cuda_runtime.h>

#include <cstring>

#include "common/op_scan.h"
#include "store/backends.h"
#include "store/gpu/arb_layout.h"
#include "store/gpu/gpu_store.h"
#include "store/gpu/lslab_kernel.h"
#include "store/gpu/pipeline.h"
#include "store/gpu/window_kernel.h"

namespace kvcg::store::gpu {
namespace {

// Whether no op of `b` writes: its type column 64 ops at a time (OpScan),
// stopping at the first writer. The others are GETs, or ops the prepare
// kernel turns into skipped GETs (a kNoop the engine answered, a type byte
// that fails the input check), which the GET kernel answers as such.
bool WritesNothing(const Batch& b) {
  size_t first_writer;
  return !OpScan(b.types(), b.size(), kWritingTypes).Next(&first_writer);
}

}  // namespace

void Pipeline::Launch(Slot& s, bool exclusive) {
  s.launched_ok = false;
  s.resident = false;
  s.table_kernel = s.reads_table_only = false;
  s.value_slots = false;  // (Issue decides; a swapped-in Delivery may say otherwise)
  s.finished = s.done;  // a valid event on every path (Issue may stop before recording)
  s.arb = nullptr;
  s.put_count = s.write_count = 0;
  s.exclusive = exclusive;
  s.reserved = 0;
  s.storing = 0;
  s.grow = 0;
  if (sticky_ != cudaSuccess) {
    FailAll(s, Code::kInternal);
    return;
  }
  if (s.n == 0) {  // only empty batches: answer at once
    Hand(s);
    return;
  }
  const Config& config = store_->config();
  const bool host_hash = config.hash != &Xxh3Hash;  // a test hash: only the host can run it

  if (general_) {  // frees since the last ARB become takeable; a spare chunk if due
    StageTimer timer(profile_, &prof_.heap_prep);
    uint64_t t = profile_ ? NowNs() : 0;
    auto part = [&](int k) {
      if (!profile_) return;
      const uint64_t now = NowNs();
      prof_.heap_part[k] += now - t;
      if (now - t > 20000) ++prof_.heap_slow[k];
      t = now;
    };
    values_->Flush();
    part(0);
    records_.Flush();
    part(1);
    values_->Prepare();
    part(2);
    records_.Prepare();
    part(3);
  }
  if (profile_) s.heaps_ns = NowNs();
  // Input blocks, segment table, and (general) the memory of stored values.
  std::vector<ArbSegment> segs(s.reqs.size());
  size_t input = 0;
  s.has_expiry = false;
  s.gets_only = !general_;
  for (size_t r = 0; r < s.reqs.size(); ++r) {
    const Batch& b = s.reqs[r]->batch;
    const BlockLayout l = LayoutOf(b, general_);
    ArbSegment& g = segs[r];
    g.op_begin = s.begin[r];
    g.n = uint32_t(b.size());
    g.key_width = uint32_t(b.fixed_key_width());
    g.value_width = uint32_t(b.fixed_value_width());
    g.put_begin = s.put_count;
    g.write_begin = s.write_count;
    g.keys = l.keys == SIZE_MAX ? 0 : input + l.keys;
    g.lens = l.lens == SIZE_MAX ? 0 : input + l.lens;
    g.types = input + l.types;
    g.expected = l.expected == SIZE_MAX ? ~0ull : input + l.expected;
    g.values = l.values == SIZE_MAX ? 0 : input + l.values;
    g.expire = l.expire == SIZE_MAX ? ~0ull : input + l.expire;
    g.cond = l.cond == SIZE_MAX ? ~0ull : input + l.cond;
    if (b.has_expiry()) s.has_expiry = true;
    if (s.gets_only && !WritesNothing(b)) s.gets_only = false;
    g.key_bytes = input + l.key_bytes;
    g.value_bytes = l.value_bytes == SIZE_MAX ? 0 : input + l.value_bytes;
    input += l.size;
    if (!general_) {
      s.storing += b.stores();
      s.grow += b.stores() * (16 + store_->entry_overhead());
      continue;
    }
    // The memory of its writes, taken when it was submitted (write_plan.h),
    // or here when that could not be done or Clear() came in between (the
    // planner also wrote each stored value into its blob).
    StageTimer timer(profile_, &prof_.writes);
    WritePlan& p = s.reqs[r]->plan;
    if (!p.ready || p.generation != generation_) {
      StageTimer plan_timer(profile_, &prof_.plan_here);
      ++prof_.planned_here;
      PlanWrites(b, config, store_->entry_overhead(), values_.get(), &records_,
                 /*may_grow=*/true, &p);
      p.generation = generation_;
    }
    s.put_count += uint32_t(p.puts.size());
    s.write_count += uint32_t(p.write_ops.size());
    s.storing += p.storing;
    s.grow += GrowWithin(p, store_->entry_overhead(), evict_max_);
    p.ready = false;
    p.placed = true;  // the ARB owns the memory now (FreeWrites, FailAll)
  }

  // From this ARB on the table may hold keys with an expire-at: results
  // carry an expire column (until a sweep or Clear finds none left).
  // The first periodic sweep comes a period after the first TTL, not at once.
  if (general_ && s.has_expiry && !may_have_volatile_) {
    may_have_volatile_ = true;
    last_sweep_ns_ = NowNs();
  }
  s.with_expires = general_ && may_have_volatile_;

  // Key offsets inside the input region are 32 bits (ArbView). Only a lone
  // batch can be this large (Gather); it is refused whole.
  if (input > kMaxLoneInputBytes) {
    FailAll(s, Code::kInvalidArgument);
    return;
  }

  // Room: reserve one slab / slot per storing op, or run alone on what is
  // left (the window table may then grow: nothing is in flight).
  if (profile_) s.planned_ns = NowNs();
  StageTimer reserve_timer(profile_, &prof_.reserve);
  MakeRoom(s.grow, s.has_expiry);  // cache mode: evict first if this ARB could pass the limit
  if (s.has_expiry) evict_no_candidates_ = false;  // its EXPIREs / TTL writes make candidates
  if (!exclusive && s.storing > 0 && !store_->space().Reserve(s.storing)) {
    // Run alone: what is in flight releases its slabs as it completes
    // (Finish); its deliveries hold no slab, so they are not waited for.
    CompleteInFlight();
    s.exclusive = true;
    if (profile_) ++prof_.alone;
    // The drain tightened the memory bound to what the finished ARBs left
    // plus what is in flight, which no longer counts this ARB's growth:
    // with nothing in flight the exact figure is at hand, so make room anew.
    if (evict_max_ != 0) {
      mem_bound_ = store_->MemoryBytes();
      MakeRoom(s.grow, s.has_expiry);
    }
  }
  s.pool_exhausted = false;
  if (s.exclusive) {
    // It may rebuild the table (window_space.h): no kernel of ours may run.
    StopResident();
    s.reserved = store_->space().ReserveAvailable(s.storing, &s.pool_exhausted);
  } else {
    s.reserved = s.storing;
  }

  const cudaError_t err = Issue(s, input, segs, host_hash);
  if (err != cudaSuccess) {
    cudaGetLastError();
    // Short of host or device memory for the batch itself: this ARB fails,
    // later ones may fit. Anything else is a device failure.
    if (err == cudaErrorMemoryAllocation) {
      s.fail = Code::kCapacityExhausted;
    } else {
      sticky_ = err;
      s.fail = Code::kInternal;
    }
  }
  s.launched_ok = err == cudaSuccess;
  inflight_.push_back(&s);
}

cudaError_t Pipeline::Issue(Slot& s, size_t input, const std::vector<ArbSegment>& segs,
                            bool host_hash) {
  const size_t n = s.n;
  if (profile_) s.issue_ns = NowNs();
  const bool small_arb = n <= kSmallArbOps;
  // Its prepare is one kernel (ArbPrepare) up to kMediumArbOps ops, a
  // dozen grid kernels and cub calls past that (arb_kernels.h).
  const bool one_block_prepare = n <= kMediumArbOps;
  // Output region (device, then one copy into the ARB's pinned buffer).
  size_t out = 0;
  // A large general ARB's found GETs return values of up to kValueCopyBytes
  // in the output itself (ArbView::value_slots), and its other found ops
  // their views in the same slots: a 64-byte slot and a length byte per op
  // instead of a 16-byte view, and every consumer reads its values in
  // order. Not for an ARB that runs alone (exclusive): it may be
  // RunRetries', whose results are copied as views into another ARB's view
  // column and must outlive its own.
  const bool value_slots = general_ && !small_arb && !s.exclusive;
  s.value_slots = value_slots;
  s.out_codes = out;
  out += A64(n);
  s.out_values = out;
  if (!value_slots) out += A64(n * (general_ ? sizeof(ValueRef) : 8));
  s.out_writes = out;
  out += A64(size_t(s.write_count) * sizeof(WriteOut));
  s.out_expires = out;
  if (s.with_expires) out += A64(n * 8);
  s.out_value_lens = out;
  if (value_slots) out += A64(n);
  s.out_value_slots = out;
  if (value_slots) out += A64(n * kValueCopyBytes);
  s.out_hdr = out;  // the kernel's header: cursor, slab allowance, retry flag; memory sample
  out += 64;

  // Aux region: segments, puts, write ops, host hashes.
  size_t aux = 0;
  const size_t seg_off = aux;
  aux += A64(segs.size() * sizeof(ArbSegment));
  const size_t put_off = aux;
  aux += A64(size_t(s.put_count) * sizeof(PutEntry));
  const size_t wop_off = aux;
  aux += A64(size_t(s.write_count) * 4);
  const size_t hash_off = aux;
  if (host_hash) aux += A64(n * 8);

  // A small ARB's prepare is one single-block kernel that needs no scratch,
  // and it moves its bytes inside the kernels where they fit (pipeline.h,
  // kKernelCopyInBytes / kKernelCopyOutBytes): the prepare reads the staging
  // buffer (in_kernel) and the table kernel writes the results (publish).
  // Input blocks: large page-locked batches go straight from their memory
  // (direct), the rest through the staging buffer.
  auto direct = [&](const Batch& b) { return b.pinned() && b.size() >= kDirectOps; };
  bool in_kernel = small_arb && input + aux <= kKernelCopyInBytes;
  for (size_t r = 0; in_kernel && r < s.reqs.size(); ++r) in_kernel = !direct(s.reqs[r]->batch);
  const bool publish = small_arb && out <= kKernelCopyOutBytes;
  // Such an ARB goes to the resident kernel when it runs (resident_ring.h);
  // what is in flight on the other path completes first.
  s.resident = ResidentEligible(n, in_kernel, publish);
  SwitchPath(s.resident);

  s.arb = epochs_.Begin(out);
  if (s.arb == nullptr) return cudaErrorMemoryAllocation;

  // Work region: the normalized columns and scratch (a large ARB's for its
  // size class).
  size_t temp = 0;
  const uint32_t cap = one_block_prepare ? uint32_t(n) : LargeArbCapacity(uint32_t(n));
  if (!one_block_prepare) {
    cudaError_t e = LargeTempBytes(cap, &temp);
    if (e != cudaSuccess) return e;
  }
  const bool expire_column = general_ && s.has_expiry;
  const WorkLayout wl(cap, temp, expire_column);
  const size_t work = wl.total;

  const size_t stage_need = input + aux;
  if (!s.resident && s.stage_cap < stage_need) {
    if (s.stage != nullptr) cudaFreeHost(s.stage);
    s.stage = nullptr;
    s.stage_cap = 0;
    const size_t want = stage_need + stage_need / 2 + 4096;
    if (cudaHostAlloc(reinterpret_cast<void**>(&s.stage), want, cudaHostAllocMapped) !=
        cudaSuccess) {
      s.stage = nullptr;
      return cudaErrorMemoryAllocation;
    }
    s.stage_cap = want;
  }
  if (!Ensure(s.in, input + aux) || !Ensure(s.work, work) || !Ensure(s.out, out)) {
    return cudaErrorMemoryAllocation;
  }

  // A resident ARB's input goes to its ring entry's stage, where the kernel
  // finds it before it read the descriptor (resident_ring.h); it is posted
  // next, as seq res_posted_ + 1 (PostResident).
  static_assert(kKernelCopyInBytes <= kResidentStageBytes, "a resident ARB's input fits its stage");
  char* const stage =
      s.resident ? res_host_->stage[(res_posted_ + 1) % kResidentRing] : s.stage;

  cudaStream_t st = s.stream;
  cudaError_t err = cudaSuccess;
  const bool timed = profile_ && !s.resident;  // device timing events (not in the ring)
  uint64_t t0 = profile_ ? NowNs() : 0;
  if (timed) err = cudaEventRecord(s.t_begin, st);
  // Input blocks: large page-locked batches straight from their memory, the
  // rest gathered into the staging buffer (one copy per run of them).
  // A small ARB whose input is all staged needs no copy call: the prepare
  // kernel reads the staging buffer itself (ArbDev::stage).
  size_t run_begin = 0, run_end = 0;
  auto flush = [&] {
    if (!in_kernel && err == cudaSuccess && run_end > run_begin) {
      err = cudaMemcpyAsync(s.in.p + run_begin, stage + run_begin, run_end - run_begin,
                            cudaMemcpyHostToDevice, st);
    }
    run_begin = run_end = 0;
  };
  size_t at = 0;
  for (size_t r = 0; r < s.reqs.size(); ++r) {
    const Batch& b = s.reqs[r]->batch;
    const BlockLayout l = LayoutOf(b, general_);
    if (direct(b)) {
      flush();
      ForEachColumn(b, l, [&](size_t off, const void* src, size_t bytes) {
        if (err == cudaSuccess && bytes != 0) {
          err = cudaMemcpyAsync(s.in.p + at + off, src, bytes, cudaMemcpyHostToDevice, st);
        }
      });
    } else {
      ForEachColumn(b, l, [&](size_t off, const void* src, size_t bytes) {
        if (bytes != 0) std::memcpy(stage + at + off, src, bytes);
      });
      if (run_end != at) run_begin = at;
      run_end = at + l.size;
    }
    at += l.size;
  }
  // The aux region follows the input blocks in both buffers: when the last
  // block was staged, one copy takes both (a small ARB: one copy in all).
  const bool aux_joins_run = run_end == input && run_end > run_begin;
  if (!aux_joins_run) flush();

  char* aux_h = stage + input;
  std::memcpy(aux_h + seg_off, segs.data(), segs.size() * sizeof(ArbSegment));
  if (general_) {  // each batch's plan as it is (ArbSegment::put_begin, write_begin)
    PutEntry* puts = reinterpret_cast<PutEntry*>(aux_h + put_off);
    uint32_t* wops = reinterpret_cast<uint32_t*>(aux_h + wop_off);
    for (size_t r = 0; r < s.reqs.size(); ++r) {
      const WritePlan& p = s.reqs[r]->plan;
      if (!p.puts.empty()) {
        std::memcpy(puts + segs[r].put_begin, p.puts.data(), p.puts.size() * sizeof(PutEntry));
      }
      if (!p.write_ops.empty()) {
        std::memcpy(wops + segs[r].write_begin, p.write_ops.data(), p.write_ops.size() * 4);
      }
    }
  }
  if (host_hash) {
    uint64_t* h = reinterpret_cast<uint64_t*>(aux_h + hash_off);
    const HashFunction hash = store_->config().hash;
    for (size_t r = 0; r < s.reqs.size(); ++r) {
      const Batch& b = s.reqs[r]->batch;
      for (size_t i = 0; i < b.size(); ++i) h[s.begin[r] + i] = hash(b.key(i));
    }
  }
  if (aux_joins_run) {
    run_end = input + aux;
    flush();
  } else if (err == cudaSuccess && !in_kernel) {
    err = cudaMemcpyAsync(s.in.p + input, aux_h, aux, cudaMemcpyHostToDevice, st);
  }

  ArbDev a;
  a.n = uint32_t(n);
  a.segments = uint32_t(segs.size());
  a.general = general_;
  a.max_key = store_->config().max_key_bytes;
  a.max_value = store_->config().max_value_bytes;
  a.input = s.in.p;
  a.seg = reinterpret_cast<const ArbSegment*>(s.in.p + input + seg_off);
  a.puts = reinterpret_cast<const PutEntry*>(s.in.p + input + put_off);
  a.put_count = s.put_count;
  a.write_ops = reinterpret_cast<const uint32_t*>(s.in.p + input + wop_off);
  a.write_count = s.write_count;
  a.host_hash = host_hash ? reinterpret_cast<const uint64_t*>(s.in.p + input + hash_off) : nullptr;
  if (in_kernel) {
    a.stage = stage;
    a.stage_bytes = uint32_t(input + aux);
  }
  a.allowance = int(s.reserved);
  char* w = s.work.p;
  a.type = reinterpret_cast<uint8_t*>(w + wl.type);
  a.check = reinterpret_cast<uint8_t*>(w + wl.check);
  a.hash = reinterpret_cast<uint64_t*>(w + wl.hash);
  a.key = reinterpret_cast<uint64_t*>(w + wl.key);
  a.ctl = reinterpret_cast<uint64_t*>(w + wl.ctl);
  a.value = reinterpret_cast<uint64_t*>(w + wl.value);
  a.expected = reinterpret_cast<uint64_t*>(w + wl.expected);
  a.rec = reinterpret_cast<uint64_t*>(w + wl.rec);
  a.vlen = reinterpret_cast<uint32_t*>(w + wl.vlen);
  a.done = reinterpret_cast<uint32_t*>(w + wl.done);
  a.wslot = reinterpret_cast<uint32_t*>(w + wl.wslot);
  a.hdr = reinterpret_cast<uint32_t*>(s.out.p + s.out_hdr);
  a.hkey = reinterpret_cast<uint32_t*>(w + wl.hkey);
  a.sorted_hkey = reinterpret_cast<uint32_t*>(w + wl.sorted);
  a.idx_in = reinterpret_cast<uint32_t*>(w + wl.idx_in);
  a.idx_out = reinterpret_cast<uint32_t*>(w + wl.idx_out);
  a.marks = reinterpret_cast<int2*>(w + wl.marks);
  a.marks_scan = reinterpret_cast<int2*>(w + wl.marks_scan);
  a.temp = temp != 0 ? w + wl.temp : nullptr;
  a.expire = expire_column ? reinterpret_cast<uint64_t*>(w + wl.expire) : nullptr;
  a.temp_bytes = temp;

  ArbView v{};
  v.n = a.n;
  v.gets_only = s.gets_only ? 1 : 0;
  v.cursor = a.hdr;
  v.slab_allowance = reinterpret_cast<int*>(a.hdr + 1);
  v.hash = a.hash;
  v.key = a.key;
  v.ctl = a.ctl;
  v.value = a.value;
  v.expected = a.expected;
  v.rec = a.rec;
  v.vlen = a.vlen;
  v.done = a.done;
  v.arena = reinterpret_cast<const uint64_t*>(s.in.p);
  v.skip = a.check;
  v.out_codes = reinterpret_cast<uint8_t*>(s.out.p + s.out_codes);
  // (A slot ARB has no view column: nothing may be written through out_values.)
  v.out_values = value_slots ? nullptr : s.out.p + s.out_values;
  v.out_writes = reinterpret_cast<uint64_t*>(s.out.p + s.out_writes);
  v.wslot = a.wslot;
  v.retry_flag = a.hdr + 2;
  v.expire = a.expire;
  v.now = store_->config().clock();
  v.out_expires =
      s.with_expires ? reinterpret_cast<uint64_t*>(s.out.p + s.out_expires) : nullptr;
  if (value_slots) {
    v.value_slots = reinterpret_cast<uint64_t*>(s.out.p + s.out_value_slots);
    v.value_lens = reinterpret_cast<uint8_t*>(s.out.p + s.out_value_lens);
  }
  // A small ARB's kernel hands its results over itself (ArbView::publish).
  if (publish) {
    v.publish = s.arb->out;
    v.publish_src = s.out.p;
    v.publish_bytes = uint32_t(out);
    v.blocks_done = a.hdr + 3;
  }

  uint64_t t1 = profile_ ? NowNs() : 0;
  if (profile_) prof_.copies += t1 - t0;
  if (s.resident) {
    s.staged_ns = t1;
    s.mem_sampled = false;
    if (err == cudaSuccess) err = PostResident(s, a, v);
    if (profile_) prof_.prepare += NowNs() - t1;
    return err;
  }
  if (err == cudaSuccess) {
    err = one_block_prepare ? ArbPrepare(a, st)
                            : LaunchLargePrepare(s, a, cap, reinterpret_cast<ArbDev*>(w + wl.dev));
  }
  if (profile_) {
    t0 = NowNs();
    prof_.prepare += t0 - t1;
  }
  // Same-key order across ARBs: this table kernel after those it must
  // follow (WaitForTableKernels). Nothing in flight: nothing to wait for.
  s.reads_table_only = !general_ && TakesGetKernel(store_->window_view(), s.gets_only);
  if (err == cudaSuccess) err = WaitForTableKernels(s.reads_table_only, st);
  // The GET kernel hashes a key itself when the store's hash is XXH3 (two
  // multiplies against 8 bytes of DRAM read per op: window_get_kernel.cu).
  if (s.reads_table_only && !host_hash) v.hash = nullptr;
  if (err == cudaSuccess && timed) err = cudaEventRecord(s.t_table, st);
  if (err == cudaSuccess) {
    err = general_ ? LaunchLSlab(store_->table(), v, 0, st)
                   : LaunchWindowOps(store_->window_view(), v, 0, st);
  }
  if (err == cudaSuccess) err = cudaEventRecord(s.lslab_done, st);
  s.table_kernel = err == cudaSuccess;
  stream_arbs_.fetch_add(1, std::memory_order_relaxed);
  // Cache mode: the charged bytes once this ARB ran, returned with its
  // results, so that the pipeline's bound on memory tightens at every
  // completion instead of only at an eviction pass (pipeline_eviction.cc).
  s.mem_sampled = false;
  if (err == cudaSuccess && evict_max_ != 0) {
    // After the kernel's own copy when it published, else before the copy.
    char* at = (publish ? s.arb->out : s.out.p) + s.out_hdr + kHdrMemSample;
    err = SampleMemBytes(store_->table(), at, st);
    s.mem_sampled = err == cudaSuccess;
  }
  if (profile_) prof_.lslab += NowNs() - t0;
  if (err == cudaSuccess && !publish) {
    err = cudaMemcpyAsync(s.arb->out, s.out.p, out, cudaMemcpyDeviceToHost, st);
  }
  // When the table kernel was the last work (it published its results),
  // its event is the ARB's: one CUDA call less.
  const bool table_last = publish && !s.mem_sampled;
  s.finished = table_last ? s.lslab_done : s.done;
  if (err == cudaSuccess && !table_last) err = cudaEventRecord(s.done, st);
  return err;
}

// Which table kernels in flight a new ARB's must wait for. Same-key order
// across ARBs only orders an op after an earlier ARB's op on its key when
// one of the two writes; two reads of a key may run in either order, or at
// once. An ARB that only reads the table (fixed8 GETs on a table without
// access bytes: the GET kernel, window_kernel.h, which writes nothing in
// the table) therefore waits only for the newest writing ARB's kernel, and
// runs beside the reading ones launched since (on its own stream: with
// 540 K-op ARBs one kernel's tail and the next one's start then overlap).
// A writing ARB waits for that writer and for every reading ARB after it;
// the writer had waited for everything before it, so by transitivity each
// write follows every earlier op of the ARBs in flight, and each read every
// earlier write. inflight_ holds the ARBs launched before this one, oldest
// first; one whose table kernel was never launched (Issue stopped early, or
// it went to the resident kernel, which never runs beside stream ARBs,
// pipeline_resident.cc) is passed over. Drains, sweeps and table rebuilds
// complete what is in flight first.
cudaError_t Pipeline::WaitForTableKernels(bool reads_table_only, cudaStream_t st) {
  for (auto it = inflight_.rbegin(); it != inflight_.rend(); ++it) {
    const Slot& p = **it;
    if (!p.table_kernel) continue;  // none launched (resident, or Issue stopped early)
    if (!p.reads_table_only || !reads_table_only) {
      const cudaError_t err = cudaStreamWaitEvent(st, p.lslab_done, 0);
      if (err != cudaSuccess) return err;
    }
    if (!p.reads_table_only) break;  // the newest writer: it followed all before it
  }
  return cudaSuccess;
}

cudaError_t Pipeline::LargeTempBytes(uint32_t cap, size_t* bytes) {
  for (const auto& [c, b] : large_temp_) {
    if (c == cap) {
      *bytes = b;
      return cudaSuccess;
    }
  }
  const cudaError_t err = ArbTempBytes(cap, bytes);
  if (err == cudaSuccess) large_temp_.emplace_back(cap, *bytes);
  return err;
}

cudaError_t Pipeline::LaunchLargePrepare(Slot& s, const ArbDev& a, uint32_t cap, ArbDev* dev) {
  // The slot's previous ARB is complete (its slot was free), so its copy
  // of the old descriptor has run: overwriting it is safe.
  *s.prep_host = a;
  const cudaError_t err =
      cudaMemcpyAsync(dev, s.prep_host, sizeof(ArbDev), cudaMemcpyHostToDevice, s.stream);
  return err != cudaSuccess ? err : ArbPrepareLarge(dev, a, cap, s.stream);
}

}  // namespace kvcg::store::gpu
