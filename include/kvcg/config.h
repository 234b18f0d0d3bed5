// kvcg/config.h — everything Store::Open needs to know.
//
// Defaults follow Redis where Redis has an equivalent (512 MiB values) and
// the KVCG paper elsewhere. A zero in a "0 = auto/unlimited" field is never an
// error. Store::Open validates the whole Config and rejects contradictions
// with Code::kInvalidArgument before allocating anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kvcg/hash.h"

namespace kvcg {

// Which canonical-store backend holds the keys.
enum class Backend : uint8_t {
  kAuto,  // GPU if a usable CUDA device exists, else CPU. Never fails for lack of a GPU.
  kGpu,   // L-Slab on the GPU; Open fails with kUnavailable when there is no GPU.
  kCpu,   // The CPU concurrent hash map; same semantics, no GPU needed.
};

// How keys and values are laid out in the canonical store.
enum class Layout : uint8_t {
  kGeneral,  // Binary keys and values of any size within the limits below.
  kFixed8,   // Keys and values of exactly 8 bytes, stored inline (the paper's
             // benchmark configuration). Other sizes get kInvalidArgument.
};

// Which components serve requests (the paper's configurations, §8). The
// names say what serves: the canonical store (GPU or CPU backend) alone,
// the hot cache in front of it for the keys the router calls hot, or the hot
// cache for every key. The paper's names "gpu-only" (KVG) and "cpu-only"
// (KVC) still parse, as deprecated spellings of "canonical" and "hot-only".
enum class Mode : uint8_t {
  kCanonical,  // "canonical" (the paper's KVG): every operation goes to the canonical store.
  kKvcg,       // "kvcg": router + hot cache on the CPU, everything else to the canonical store.
  kHotOnly,    // "hot-only" (the paper's KVC): the hot cache serves every key.
};

// How the router's shadow model is trained from sampled requests (§7; see
// src/router/router.h and docs/ARCHITECTURE.md "Router").
enum class RouterModel : uint8_t {
  kHistogram,     // "histogram", the paper's: counts per bin of the hash space; a
                  // bin is hot when its share exceeds the threshold. Every key of
                  // a hot bin is hot, cold ones included (the evaluation's baseline).
  kHeavyHitters,  // "heavy-hitters": a Space-Saving sketch of the sampled keys; the
                  // most frequent keys, at most RouterConfig::hot_keys, are hot.
};

// What a write does when storing would pass Config::max_memory_bytes
// (Redis's maxmemory-policy). "allkeys" policies may evict any key,
// "volatile" ones only keys with an expire-at. LRU and LFU are approximate,
// as in Redis: each entry keeps a small access clock / frequency counter and
// the store evicts the best of a sample (CPU backend) or the best of a bucket
// (GPU backend) — see docs/EVICTION.md.
enum class EvictionPolicy : uint8_t {
  kNoEviction,      // "noeviction": the write gets kCapacityExhausted (Redis's OOM).
  kAllKeysLru,      // "allkeys-lru"
  kAllKeysLfu,      // "allkeys-lfu"
  kAllKeysRandom,   // "allkeys-random"
  kVolatileLru,     // "volatile-lru"
  kVolatileLfu,     // "volatile-lfu"
  kVolatileRandom,  // "volatile-random"
  kVolatileTtl,     // "volatile-ttl": the nearest expire-at first
};

// Milliseconds since the Unix epoch: the clock every expire-at is read
// against. A plain function pointer, so tests can inject a fake clock.
using ClockFunction = uint64_t (*)();
// CLOCK_REALTIME in milliseconds (Redis's mstime()). Thread-safe.
uint64_t SystemClockMs();

// Parse "auto"/"gpu"/"cpu", "general"/"fixed8", "kvcg"/"canonical"/"hot-only"
// and "histogram"/"heavy-hitters", and Redis's maxmemory-policy names.
// Return false (leaving *out alone) on anything else.
bool ParseBackend(const std::string& text, Backend* out);
bool ParseLayout(const std::string& text, Layout* out);
bool ParseMode(const std::string& text, Mode* out);
// The current name of a deprecated mode spelling ("gpu-only" -> "canonical",
// "cpu-only" -> "hot-only"); null for any other text.
const char* ModeReplacement(const std::string& text);
bool ParseRouterModel(const std::string& text, RouterModel* out);
bool ParseEvictionPolicy(const std::string& text, EvictionPolicy* out);
const char* EvictionPolicyName(EvictionPolicy policy);
// Whether a store under this limit and policy evicts (cache mode): a limit
// is set and the policy is not noeviction.
constexpr bool Evicts(uint64_t max_memory_bytes, EvictionPolicy policy) {
  return max_memory_bytes != 0 && policy != EvictionPolicy::kNoEviction;
}
// The policy ranks by Redis's LFU counter (allkeys-lfu, volatile-lfu).
constexpr bool IsLfuPolicy(EvictionPolicy p) {
  return p == EvictionPolicy::kAllKeysLfu || p == EvictionPolicy::kVolatileLfu;
}
// The policy evicts only keys with an expire-at (volatile-*).
constexpr bool IsVolatilePolicy(EvictionPolicy p) {
  return p == EvictionPolicy::kVolatileLru || p == EvictionPolicy::kVolatileLfu ||
         p == EvictionPolicy::kVolatileRandom || p == EvictionPolicy::kVolatileTtl;
}
// "always" / "everysec" / "no" (Redis's appendfsync values).
enum class FsyncPolicy : uint8_t;
bool ParseFsyncPolicy(const std::string& text, FsyncPolicy* out);
const char* FsyncPolicyName(FsyncPolicy policy);
const char* BackendName(Backend backend);
const char* LayoutName(Layout layout);
const char* ModeName(Mode mode);
const char* RouterModelName(RouterModel model);

// When the append-only log is forced to stable storage (Redis's appendfsync).
enum class FsyncPolicy : uint8_t {
  kAlways,    // A write's completion is called only after its log record is
              // fsync'ed (group commit: one fsync covers every write waiting).
  kEverySec,  // Written at once, fsync'ed about once a second: a crash loses
              // at most ~1 s of acknowledged writes.
  kNo,        // Written at once, fsync left to the OS.
};

// Redis's "save <seconds> <changes>": snapshot when at least `changes` writes
// happened and `seconds` passed since the last snapshot.
struct SaveRule {
  uint64_t seconds = 0;
  uint64_t changes = 0;
};

// Persistence (kvcg/durable.h). With `dir` empty the store lives in memory
// only and Store::Open returns no Durable. Otherwise Open loads what `dir`
// holds (the log when append_only, else the snapshot), then logs every
// acknowledged write (append_only) and takes snapshots by `save_rules`.
struct DurabilityConfig {
  std::string dir;                          // Directory of every file below; "" = off.
  bool append_only = false;                 // Redis "appendonly".
  FsyncPolicy fsync = FsyncPolicy::kEverySec;  // Redis "appendfsync".
  std::string snapshot_file = "dump.kvcg";  // Redis "dbfilename" (kvcg's own format, docs/PERSISTENCE.md).
  std::string log_dir = "appendonlydir";    // Redis "appenddirname", inside dir.
  std::string log_name = "appendonly.kvcg"; // Redis "appendfilename": prefix of the log's files.
  std::vector<SaveRule> save_rules;         // Redis "save"; empty = no automatic snapshots.
  // Redis "auto-aof-rewrite-percentage" / "-min-size": rewrite the log when it
  // grew by this percentage over its size after the last rewrite and is at
  // least min bytes. 0 percent = never automatically.
  uint32_t auto_rewrite_percentage = 100;
  uint64_t auto_rewrite_min_bytes = 64ull << 20;
  bool load_on_open = true;  // false: start empty and overwrite what dir holds at the first save.
};

struct Config {
  Backend backend = Backend::kAuto;
  Layout layout = Layout::kGeneral;
  // kCanonical opens the canonical store alone; kKvcg and kHotOnly wrap it
  // in the engine (hot cache + router, see kvcg/engine.h).
  Mode mode = Mode::kCanonical;

  // --- Limits (per operation). Larger input gets kKeyTooLarge/kValueTooLarge.
  size_t max_key_bytes = 64 * 1024;
  size_t max_value_bytes = 512ull * 1024 * 1024;

  // --- Capacity. A PUT that would exceed either gets kCapacityExhausted and
  // changes nothing; everything stored before stays readable.
  uint64_t max_keys = 0;          // Distinct keys; 0 = unlimited.
  uint64_t max_memory_bytes = 0;  // Keys + values + per-entry overhead; 0 = unlimited.
  uint64_t expected_keys = 1 << 20;  // Sizing hint only; tables grow past it.
  // What a write that would pass max_memory_bytes does: fail (noeviction,
  // the default) or evict keys first. max_keys is never evicted for.
  EvictionPolicy eviction = EvictionPolicy::kNoEviction;

  // --- Expiry (kvcg/batch.h, Expiry).
  ClockFunction clock = &SystemClockMs;  // Must not be null.
  // Active expiry: how often per second expired keys are looked for and
  // reclaimed without being accessed (Redis's "hz"). CPU backend: an
  // incremental sweep of the shards that hold keys with an expire-at; GPU
  // backend: a sweep kernel over the table. 0 = lazy expiry only (plus
  // Store::ReclaimExpired).
  uint32_t active_expiry_hz = 10;

  // Hash of a key; see kvcg/hash.h. Must not be null.
  HashFunction hash = &Xxh3Hash;

  // --- CPU backend.
  uint32_t cpu_shards = 0;  // Independently locked shards; 0 = 64 per hardware thread, rounded to a power of two.

  // --- GPU backend.
  int gpu_device = 0;                // CUDA device ordinal.
  uint64_t gpu_memory_bytes = 0;     // Device memory the slab pool may use; 0 = 3/4 of what is free.
  uint32_t gpu_orchestrators = 4;    // Ignored: the GPU store has one ordered pipeline (kept so configs parse).
  uint32_t gpu_max_batch_ops = 0;    // Aggregated batch size bound; 0 = 2 x resident threads.
  uint32_t gpu_batch_timeout_us = 20;  // Aggregation time bound (Mega-KV periodic scheduling).
  // How long the pipeline thread keeps polling for work after the store went
  // idle before it sleeps. A sleeping thread costs the next batch a wake-up
  // (H200 host: a 512-op round trip's p50 / p99 26 / 38 us became 31 / 48
  // with a sleep before each batch); a polling one costs a core. The default
  // matches how long the resident kernel stays on the device without work
  // (1 ms), so a store used at least every millisecond never pays either.
  uint32_t gpu_idle_spin_us = 1000;
  // Blocks of the resident kernel that takes small aggregated batches (up to
  // 1,024 ops and 32 KB of input) from a mapped ring instead of launching
  // kernels per batch; it ends by itself after 1 ms without work. 0 = off:
  // every batch launches its own kernels.
  uint32_t gpu_resident_blocks = 16;
  uint32_t retry_timeout_ms = 1000;  // Bound on internal retries before kTimedOut.

  // --- Engine (modes kvcg and hot-only; ignored by canonical).
  struct RouterConfig {
    RouterModel model = RouterModel::kHeavyHitters;  // What the shadow model is.
    uint32_t bins = 10000;        // histogram: bins over the hash space (the paper's 10,000).
    // A bin (histogram) or a key (heavy-hitters) is hot when its share of the
    // sampled accesses exceeds this. 0 = the model's default
    // (RouterThreshold): 0.001 for histogram; none for heavy-hitters, where
    // hot_keys and a floor of two samples per key decide.
    double threshold = 0;
    // The share of the sampled accesses the shadow model's hot keys must
    // have had together (their guaranteed counts for heavy-hitters, their
    // bins' counts for histogram) for the model to be installed as built;
    // below it the shadow model routes nothing (an all-cold model, which the
    // engine forwards without hashing or classifying). Classifying costs
    // every request its hash and a probe, while the hot cache only pays on
    // the requests it serves: on a flat load (YCSB θ = 0.5 over 1 G keys, the
    // hottest 10 K keys get 0.3 %) routing costs more than it saves. 0 =
    // install whatever the trainer built (the paper's router).
    double min_hot_share = 0.05;
    // heavy-hitters: the most keys the model calls hot (its sketch tracks 4x
    // as many); 0 = the hot cache's capacity (hot_cache_buckets, rounded up
    // to a power of two, x 8 entries), at most kMaxRouterHotKeys.
    uint64_t hot_keys = 0;
    double sample_rate = 0.01;    // Fraction of requests the shadow model is trained on.
    uint32_t switch_period_ms = 1000;  // Install the shadow model this often; 0 = only on demand.
    uint64_t min_samples = 10000;      // A periodic switch waits for this many samples.
  } router;
  uint64_t hot_cache_buckets = 0;  // Hot-cache buckets (8-entry nodes each); 0 = auto.

  // --- Persistence: append-only log and snapshots (off by default).
  DurabilityConfig durability;
};

// Largest RouterConfig::hot_keys (an automatic one is capped here too).
constexpr uint64_t kMaxRouterHotKeys = uint64_t{1} << 26;

// The threshold the router applies: RouterConfig::threshold, or the model's
// default when it is 0 (see RouterConfig).
double RouterThreshold(const Config::RouterConfig& router);

}  // namespace kvcg
