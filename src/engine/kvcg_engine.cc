// KvcgEngine: opening and closing, the request workflow and whole-store
// calls; see kvcg_engine.h for the design. The switch protocol is in
// kvcg_engine_switch.cc, expiry and memory in kvcg_engine_keyspace.cc.
#include "engine/kvcg_engine.h"

#include <algorithm>
#include <bit>
#include <chrono>

#include "common/batch_hash.h"
#include "common/thread_name.h"
#include "engine/engine_frame.h"
#include "engine/index_list.h"
#include "store/backends.h"

namespace kvcg::engine {

namespace {

// How many hot ops ahead Route requests each hot-cache stage's line
// (HotCache::PrefetchBucket/Entry): the bucket's line must have arrived
// when the entry's stage reads it, and a hit costs ~50 ns once its lines
// are in the cache, against ~100 ns for a memory read.
constexpr uint32_t kBucketAhead = 12, kEntryAhead = 4;

hotcache::HotCache::Options CacheOptions(const Config& config) {
  hotcache::HotCache::Options o;
  if (config.hot_cache_buckets != 0) {
    o.buckets = config.hot_cache_buckets;
  } else if (config.mode == Mode::kHotOnly) {
    // Every key may end up here: about two keys per bucket at expected_keys,
    // so a probe reads one node.
    o.buckets = std::max<uint64_t>(config.expected_keys / 2, 1 << 10);
  } else {
    o.buckets = 1 << 16;
  }
  // With capacity limits a replayed write could be refused for lack of room
  // after it was acknowledged; write-through lets the canonical store refuse
  // it up front instead.
  o.write_through = config.max_keys != 0 || config.max_memory_bytes != 0;
  // Hot-only mode caches every key a client names; kvcg mode only the
  // model's hot keys, a bounded set.
  o.bound_absent = config.mode == Mode::kHotOnly;
  o.clock = config.clock;
  return o;
}

}  // namespace

// One batch that is not all cold, from routing to completion: the answers
// given here (the HotAnswers base, also the hot cache's ResultSink for its
// ops) and, once they arrive, the canonical store's Results. Handed to the
// delivered Results as an owner by the Finish that answers its last op.
struct KvcgEngine::BatchCtx final : HotAnswers {
  BatchCtx(Completion d, uint32_t n, uint32_t hot_expected, uint64_t start)
      : HotAnswers(hot_expected), done(std::move(d)), n(n), start_ns(start), remaining(n + 1) {}

  // The client's batch while routing; afterwards only while the cache may
  // still refer to it (a miss or a queued op), else it went to the store.
  Batch batch;
  Completion done;
  const uint32_t n;
  const uint64_t start_ns;
  std::atomic<uint32_t> remaining;  // unanswered ops + 1 while routing
  std::vector<Fill> fills;          // routing thread, then the cold completion
  uint32_t plain = 0;               // ops the canonical store answers that are not fills
  bool sent = false;                // the canonical store got the batch
  Results canonical;                // its Results, once they arrive
};

// ---------------------------------------------------------------------------
// Opening and closing.

KvcgEngine::KvcgEngine(const Config& config, std::unique_ptr<Store> canonical)
    : config_(config),
      cpu_only_(config.mode == Mode::kHotOnly),
      canonical_(std::move(canonical)),
      cache_(CacheOptions(config)),
      router_(config.router, cpu_only_ ? MakeAllHotModel() : MakeAllColdModel(),
              cache_.capacity(), config.hash) {
  model_desc_ = router_.model()->Describe();
  model_keys_ = router_.model()->KeyCount();
  if (!cpu_only_ && config.router.switch_period_ms != 0 && router_.sampling()) {
    periodic_ = std::thread([this] {
      SetCurrentThreadName("kvcg-switcher");
      PeriodicSwitcher();
    });
  }
  limit_bytes_ = canonical_limit_ = config.max_memory_bytes;
  limit_policy_ = config.eviction;
  std::lock_guard lock(periodic_mu_);
  expiry_hz_ = config.active_expiry_hz;
  cache_mode_ = Evicts(config.max_memory_bytes, config.eviction);
  StartHousekeeperLocked();
}

bool KvcgEngine::InEngineFrame() { return tls_engine_depth != 0; }

KvcgEngine::~KvcgEngine() {
  {
    std::lock_guard lock(periodic_mu_);
    stopping_ = true;
  }
  periodic_cv_.notify_all();
  if (periodic_.joinable()) periodic_.join();
  if (housekeeper_.joinable()) housekeeper_.join();
  std::unique_lock lock(inflight_mu_);
  inflight_cv_.wait(lock, [this] { return inflight_batches_.load() == 0; });
  // canonical_ is destroyed after this body; it waits for its own batches.
}

// ---------------------------------------------------------------------------
// The request workflow.

void KvcgEngine::SubmitWithEarlyAnswers(Batch batch, Completion done, const EarlyCallback& early) {
  inflight_batches_.fetch_add(1, std::memory_order_relaxed);
  for (;;) {
    if (gate_.TryEnter()) {
      Route(std::move(batch), std::move(done), early ? &early : nullptr);
      gate_.Exit();
      return;
    }
    std::lock_guard lock(park_mu_);
    if (gate_.closed()) {  // still blocked: park it; the switch runs it in order
      parked_.emplace_back(std::move(batch), std::move(done));
      return;
    }
  }
}

void KvcgEngine::Route(Batch batch, Completion done, const EarlyCallback* early) {
  EngineFrame frame;
  const uint64_t start = NowNs();
  const uint32_t n = static_cast<uint32_t>(batch.size());
  // KVCG_ENGINE_PROFILE: the phases' ends (route_profile.h).
  uint64_t phase_end[RouteProfile::kPhases] = {};
  // A model that calls no key hot (kvcg's initial all-cold model, a
  // histogram without a hot bin) decides nothing: the batch goes on as it
  // is, and only the ops the router samples are hashed. Routing it would
  // cost ~10 ns an op on the 2-core VM, ~20 on the H200 host, for nothing.
  if (!cpu_only_ && router_.routes_nothing() && n != 0) {
    router_.SampleUnhashed(batch, config_.hash);
    return ForwardCold(std::move(batch), std::move(done), start, phase_end);
  }
  // Every op's hash and fingerprint first, one inline XXH3 each when
  // Config::hash is the default (common/batch_hash.h; router.h,
  // Fingerprints); then the model classifies the whole batch in one call
  // (Model::Classify: its own loop, its probes' misses overlapped). An
  // all-cold batch goes to the canonical store as it is, with no state of
  // ours. The router's sampling waits until the hot ops are answered. (Not
  // thread_local scratch: Route re-enters through completions. Not zeroed:
  // every entry is written first.)
  std::unique_ptr<uint64_t[]> scratch(new uint64_t[2 * size_t{n} + (size_t{n} + 7) / 8]);
  uint64_t* const hashes = scratch.get();
  uint64_t* const fingerprints = hashes + n;
  uint8_t* const is_hot = reinterpret_cast<uint8_t*>(fingerprints + n);
  HashKeys(batch, config_.hash, hashes);
  if (!cpu_only_) router_.Fingerprints(batch, hashes, fingerprints);
  if (profile_.on()) phase_end[RouteProfile::kHash] = NowNs();
  uint32_t hot_count = n;
  if (!cpu_only_) hot_count = router_.Classify(batch, hashes, fingerprints, is_hot);
  if (hot_count == 0 && n != 0) {
    router_.Sample(batch, hashes);
    return ForwardCold(std::move(batch), std::move(done), start, phase_end);
  }

  auto* ctx = new BatchCtx(std::move(done), n, hot_count, start);
  ctx->batch = std::move(batch);
  Batch& b = ctx->batch;
  // The hot ops, then a pass that runs them with their hot-cache lines
  // requested a few hot ops ahead, stage by stage (bucket, then entry, which
  // reads the bucket's line), so that a batch's cache misses overlap
  // instead of costing two dependent memory reads per hot op
  // (docs/BENCHMARKS.md 3b). (An empty batch comes here too.)
  // n + 1: PushIf writes one past; sized by n, not by the model's count,
  // which a user's Model::Classify might get wrong.
  IndexList hot(n + 1);
  if (cpu_only_) {
    for (uint32_t j = 0; j < n; ++j) hot.Push(j);
  } else {
    for (uint32_t j = 0; j < n; ++j) hot.PushIf(j, is_hot[j]);  // a cold op stays as it is
  }
  if (profile_.on()) phase_end[RouteProfile::kClassify] = NowNs();
  // The ops answered here, to become no-ops in the canonical store's batch.
  IndexList answered_here(hot.size());
  bool keep_batch = false;  // the cache holds a reference into ctx->batch
  uint32_t hits = 0, misses = 0, waited = 0, errors = 0;
  const uint32_t m = hot.size();
  for (uint32_t k = 0; k < m; ++k) {
    if (k + kBucketAhead < m) cache_.PrefetchBucket(hashes[hot[k + kBucketAhead]]);
    if (k + kEntryAhead < m) cache_.PrefetchEntry(hashes[hot[k + kEntryAhead]]);
    const uint32_t j = hot[k];
    // A client's no-op is the store's to answer, like a cold op.
    if (b.type(j) == OpType::kNoop) continue;
    // A hot op is checked here (the cache must not take what the store
    // would refuse); cold ones are checked by the canonical store.
    const Code check = store::CheckOperation(config_, b, j);
    if (check != Code::kOk) {
      ctx->SetError(j, check);
      answered_here.Push(j);
      ++errors;
      continue;
    }
    switch (cache_.Execute(hotcache::OpRef{&b, j, ctx}, hashes[j])) {
      case hotcache::Outcome::kDone:
        ++hits;
        answered_here.Push(j);
        break;
      case hotcache::Outcome::kWaiting:
        ++waited;
        answered_here.Push(j);
        keep_batch = true;
        break;
      case hotcache::Outcome::kMiss:
        ++misses;
        ctx->fills.push_back({j, hashes[j]});
        keep_batch = true;
        break;
    }
  }
  // A hit reaches its caller when the pass ends (the early answers, or the
  // batch's completion): its latency is the pass's. One clock read and one
  // record per batch, not per hit (they cost as much as the hit itself).
  const uint64_t hot_end = hits != 0 || profile_.on() ? NowNs() : 0;
  if (hits) hot_latency_.Record(hot_end - start, hits);
  phase_end[RouteProfile::kHot] = hot_end;
  if (hits) hot_hits_.fetch_add(hits, std::memory_order_relaxed);
  if (misses) hot_misses_.fetch_add(misses, std::memory_order_relaxed);
  if (waited) hot_waited_.fetch_add(waited, std::memory_order_relaxed);
  if (errors) errors_.fetch_add(errors, std::memory_order_relaxed);
  if (early != nullptr && hits + errors != 0) {
    // Every op not cold, not a miss and not queued behind one is answered.
    constexpr uint32_t kStackOps = 1024;
    uint8_t flags_on_stack[kStackOps];
    std::vector<uint8_t> flags_on_heap;
    uint8_t* answered = flags_on_stack;
    if (n > kStackOps) {
      flags_on_heap.resize(n);
      answered = flags_on_heap.data();
    }
    const Results so_far = ctx->Peek(n, answered);
    (*early)(EarlyAnswers{so_far, answered});
  }
  // The shadow model's training is no part of any answer: it runs once the
  // hot ops are answered (it was ~10 % of the pass before them), and before
  // the batch may go to the canonical store, which can free it.
  if (!cpu_only_) router_.Sample(b, hashes);
  const uint32_t noops = answered_here.size();
  if (noops != n) {
    ctx->plain = n - noops - uint32_t(ctx->fills.size());
    ctx->sent = true;
    // The cache refers to the original while a miss or a queued op of it
    // is unanswered: then the store gets a copy (rare once the hot set is
    // cached; a memcpy of the columns), else the original itself.
    Batch to_store = keep_batch ? Batch(b) : std::move(b);
    for (uint32_t k = 0; k < noops; ++k) to_store.SetNoop(answered_here[k]);
    canonical_->Submit(std::move(to_store), [this, ctx](Results&& results) {
      OnCold(ctx, std::move(results));
    });
  }
  if (profile_.on()) profile_.Record(start, phase_end, n, m);
  Finish(ctx, hits + errors + 1);  // +1: the routing pass's own hold on ctx
}

void KvcgEngine::ForwardCold(Batch batch, Completion done, uint64_t start,
                             uint64_t (&phase_end)[RouteProfile::kPhases]) {
  const uint32_t n = static_cast<uint32_t>(batch.size());
  if (profile_.on()) {  // the phases the pass skipped end now
    const uint64_t now = NowNs();
    for (uint64_t& end : phase_end) end = end != 0 ? end : now;
  }
  // Forwarded as it is, and so are its Results: nothing is copied.
  canonical_->Submit(std::move(batch), [this, start, done = std::move(done)](Results&& results) {
    EngineFrame frame;
    cold_latency_.Record(NowNs() - start, results.size());
    cold_ops_.fetch_add(results.size(), std::memory_order_relaxed);
    done(std::move(results));
    FinishStashed(1);
  });
  if (profile_.on()) profile_.Record(start, phase_end, n, 0);
}

void KvcgEngine::OnCold(BatchCtx* ctx, Results&& results) {
  EngineFrame frame;
  const uint64_t latency = NowNs() - ctx->start_ns;
  // Kept before any op is answered: the last answer delivers it.
  ctx->canonical = std::move(results);
  const Results& r = ctx->canonical;
  // ctx stays alive through the fills: the plain ops and later fills are
  // not answered yet, and a fill answers only its own op and ops queued
  // behind it; after the last fill only the plain ops' hold (if any) is left.
  const uint32_t plain = ctx->plain;
  const size_t fills = ctx->fills.size();
  for (size_t j = 0; j < fills; ++j) {
    const Fill f = ctx->fills[j];
    OnFill({&ctx->batch, f.index, ctx}, f.hash, r[f.index]);
  }
  if (plain == 0) return;
  cold_latency_.Record(latency, plain);  // the batch's cold ops share one latency
  cold_ops_.fetch_add(plain, std::memory_order_relaxed);
  Finish(ctx, plain);
}

void KvcgEngine::OnFill(const hotcache::OpRef& op, uint64_t hash, OpResultView result) {
  EngineFrame frame;
  hotcache::HotCache::Completion c;
  cache_.Complete(op, hash, result, &c);
  const uint64_t now = NowNs();
  // Start the next in-flight op before answering: answering may free the
  // batch that holds `op`, never the one that holds `next` (not answered).
  if (c.has_next) {
    const hotcache::OpRef next = c.next;
    Batch one = canonical_->NewBatch();
    one.AppendFrom(*next.batch, next.index);
    canonical_->Submit(std::move(one), [this, next, hash](Results&& results) {
      // The view stays valid once `results` is moved into the batch's
      // results (moving a Results does not move what it points to).
      static_cast<BatchCtx*>(next.sink)->AnswerLate(next.index, results);
      OnFill(next, hash, results[0]);
    });
  }
  cold_ops_.fetch_add(c.done.size(), std::memory_order_relaxed);
  for (const hotcache::OpRef& d : c.done) {
    auto* owner = static_cast<BatchCtx*>(d.sink);
    cold_latency_.Record(now - owner->start_ns);
    Finish(owner, 1);
  }
}

void KvcgEngine::Finish(BatchCtx* ctx, uint32_t ops) {
  if (ctx->remaining.fetch_sub(ops, std::memory_order_acq_rel) != ops) return;
  // Every op is answered: no other thread touches ctx any more.
  Results results;
  if (!ctx->sent) {
    results = ctx->Merge(ctx->n, nullptr);
  } else if (ctx->ApplyTo(&ctx->canonical)) {
    results = std::move(ctx->canonical);
  } else {
    results = ctx->Merge(ctx->n, &ctx->canonical);
  }
  Completion done = std::move(ctx->done);
  // Only the answers' bytes must live as long as the Results: the batch
  // (maybe the store's pinned memory) and the fills go now.
  ctx->batch = Batch();
  std::vector<Fill>().swap(ctx->fills);
  results.Adopt(std::unique_ptr<Results::Owner>(ctx));  // the answers' bytes
  done(std::move(results));
  FinishStashed(1);
}

// ---------------------------------------------------------------------------
// Whole-store calls.

uint64_t KvcgEngine::Size() const {
  // Inside a completion the replay we would wait for may need this thread;
  // there the answer may be off by the updates being replayed.
  std::unique_lock size_lock(size_mu_, std::defer_lock);
  if (tls_engine_depth == 0) size_lock.lock();
  const int64_t size =
      static_cast<int64_t>(canonical_->Size()) + cache_.presence_delta();
  return static_cast<uint64_t>(std::max<int64_t>(size, 0));
}

uint64_t KvcgEngine::MemoryBytes() const {
  // Only the canonical store knows what an entry costs, so updates logged in
  // the hot cache are written there first (a flush: a short block, like a
  // switch without a model change). Inside a completion that flush could
  // wait on the very thread running it, so there the answer leaves out the
  // unreplayed updates. Nothing is logged in write-through mode (capacity
  // limits set), so there it is always exact. Under a memory limit the hot
  // cache's copies count too (as of the last reconcile): the limit bounds
  // both (kvcg_engine_keyspace.cc).
  if (tls_engine_depth == 0 && cache_.dirty() != 0) {
    const_cast<KvcgEngine*>(this)->Flush();
  }
  return canonical_->MemoryBytes() + hot_bytes_.load(std::memory_order_relaxed);
}

void KvcgEngine::Clear() {
  std::lock_guard switch_lock(switch_mu_);
  Block();
  {
    std::lock_guard size_lock(size_mu_);
    cache_.Clear();
    canonical_->Clear();
  }
  // The cache holds nothing to charge now; the next reconcile gives the
  // canonical store its whole limit back (one that was collecting during
  // the Clear may store its count first: off for one period at most).
  hot_bytes_.store(0, std::memory_order_relaxed);
  Unblock();
}

StoreInfo KvcgEngine::Info() const {
  StoreInfo info = canonical_->Info();
  info.detail = std::string("engine ") + ModeName(config_.mode) + " over " +
                BackendName(info.backend) + " canonical store; " + info.detail;
  return info;
}

EngineStats KvcgEngine::Stats() const {
  EngineStats s;
  s.mode = ModeName(config_.mode);
  s.hot.hits = hot_hits_.load(std::memory_order_relaxed);
  s.hot.ops = s.hot.hits;
  s.hot.misses = hot_misses_.load(std::memory_order_relaxed);
  s.hot.waited = hot_waited_.load(std::memory_order_relaxed);
  s.hot.latency = hot_latency_.Summary();
  s.cold.ops = cold_ops_.load(std::memory_order_relaxed);
  s.cold.latency = cold_latency_.Summary();
  s.errors = errors_.load(std::memory_order_relaxed);
  s.hot_cache_entries = cache_.entries();
  s.hot_cache_dirty = cache_.dirty();
  s.samples = router_.samples();
  if (!cpu_only_) {  // hot-only's model is fixed: nothing is trained
    s.router_model = RouterModelName(router_.model_kind());
    s.router_trainer = router_.TrainerDescription();
    s.hot_keys_limit = router_.hot_keys_limit();
  }
  std::lock_guard lock(stats_mu_);
  s.model_version = model_version_;
  s.model = model_desc_;
  s.model_hot_keys = model_keys_;
  s.switches = switch_count_;
  s.recent_switches.assign(switches_.begin(), switches_.end());
  return s;
}

void KvcgEngine::ResetStats() {
  hot_hits_ = 0;
  hot_misses_ = 0;
  hot_waited_ = 0;
  cold_ops_ = 0;
  errors_ = 0;
  hot_latency_.Reset();
  cold_latency_.Reset();
}

}  // namespace kvcg::engine

namespace kvcg {

Status Engine::Open(const Config& config, std::unique_ptr<Store> canonical,
                    std::unique_ptr<Engine>* engine) {
  engine->reset();
  if (canonical == nullptr) return Status::InvalidArgument("engine needs a canonical store");
  if (config.mode != Mode::kKvcg && config.mode != Mode::kHotOnly) {
    return Status::InvalidArgument(std::string("the engine serves modes kvcg and hot-only, not ") +
                                   ModeName(config.mode));
  }
  if (config.hash == nullptr) return Status::InvalidArgument("hash function must not be null");
  if (Status s = store::ValidateRouterConfig(config.router); !s.ok()) return s;
  *engine = std::make_unique<engine::KvcgEngine>(config, std::move(canonical));
  return Status::Ok();
}

}  // namespace kvcg
