// The option table; see server_config.h. Each entry is a pair of
// non-capturing lambdas, generated per field type by the macros below, so
// adding a setting is one line here.
#include "server/server_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "server/resp_parser.h"
#include "store/backends.h"

namespace kvcg::server {

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string OneArg(const std::vector<std::string>& args, std::string* value) {
  if (args.size() != 1) return "wrong number of arguments";
  *value = args[0];
  return "";
}

std::string SetU64(const std::vector<std::string>& args, uint64_t* field, uint64_t min, uint64_t max) {
  std::string v;
  if (auto e = OneArg(args, &v); !e.empty()) return e;
  int64_t n;
  if (!ParseInt64(v, &n) || n < 0) return "argument must be a non-negative integer";
  if (static_cast<uint64_t>(n) < min || static_cast<uint64_t>(n) > max) {
    return "argument must be between " + std::to_string(min) + " and " + std::to_string(max);
  }
  *field = static_cast<uint64_t>(n);
  return "";
}

std::string SetMem(const std::vector<std::string>& args, uint64_t* field, uint64_t min) {
  std::string v;
  if (auto e = OneArg(args, &v); !e.empty()) return e;
  uint64_t n;
  if (!ParseMemory(v, &n)) return "argument must be a memory value";
  if (n < min) return "argument must be at least " + std::to_string(min);
  *field = n;
  return "";
}

#define KVCG_U64(NAME, FIELD, MIN, MAX, RUNTIME, HELP)                                      \
  OptionSpec {                                                                           \
    NAME, HELP, RUNTIME, [](const ServerConfig& c) { return std::to_string(c.FIELD); }, \
        [](ServerConfig& c, const std::vector<std::string>& a) {                        \
          uint64_t v = c.FIELD;                                                          \
          std::string e = SetU64(a, &v, MIN, MAX);                                       \
          if (e.empty()) c.FIELD = static_cast<decltype(c.FIELD)>(v);                    \
          return e;                                                                      \
        }                                                                                \
  }
#define KVCG_DOUBLE(NAME, FIELD, MIN, MAX, HELP)                                               \
  OptionSpec {                                                                              \
    NAME, HELP, false, [](const ServerConfig& c) { return FormatDouble(c.FIELD); },         \
        [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {             \
          std::string v;                                                                    \
          if (auto e = OneArg(a, &v); !e.empty()) return e;                                 \
          char* end = nullptr;                                                              \
          double d = std::strtod(v.c_str(), &end);                                          \
          if (v.empty() || *end != '\0' || !(d >= MIN && d <= MAX))                          \
            return "argument must be a number between " #MIN " and " #MAX;                  \
          c.FIELD = d;                                                                      \
          return "";                                                                        \
        }                                                                                   \
  }
#define KVCG_MEM(NAME, FIELD, MIN, RUNTIME, HELP)                                           \
  OptionSpec {                                                                           \
    NAME, HELP, RUNTIME, [](const ServerConfig& c) { return std::to_string(c.FIELD); }, \
        [](ServerConfig& c, const std::vector<std::string>& a) {                        \
          uint64_t v = c.FIELD;                                                          \
          std::string e = SetMem(a, &v, MIN);                                            \
          if (e.empty()) c.FIELD = static_cast<decltype(c.FIELD)>(v);                    \
          return e;                                                                      \
        }                                                                                \
  }
#define KVCG_STR(NAME, FIELD, RUNTIME, HELP)                                     \
  OptionSpec {                                                                \
    NAME, HELP, RUNTIME, [](const ServerConfig& c) { return c.FIELD; },      \
        [](ServerConfig& c, const std::vector<std::string>& a) {             \
          return OneArg(a, &c.FIELD);                                         \
        }                                                                     \
  }
#define KVCG_ENUM(NAME, FIELD, PARSE, PRINT, HELP)                                          \
  OptionSpec {                                                                           \
    NAME, HELP, false, [](const ServerConfig& c) { return std::string(PRINT(c.FIELD)); }, \
        [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {          \
          std::string v;                                                                 \
          if (auto e = OneArg(a, &v); !e.empty()) return e;                              \
          if (!PARSE(Lower(v), &c.FIELD)) return "invalid value '" + v + "'";            \
          return "";                                                                     \
        }                                                                                \
  }

// yes|no, case-insensitive, with Redis's error text.
#define KVCG_YESNO(NAME, FIELD, RUNTIME, HELP)                                                        \
  OptionSpec {                                                                                     \
    NAME, HELP, RUNTIME, [](const ServerConfig& c) { return std::string(c.FIELD ? "yes" : "no"); }, \
        [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {                    \
          std::string v = a.size() == 1 ? Lower(a[0]) : "";                                         \
          if (v != "yes" && v != "no") return "argument must be 'yes' or 'no'";                     \
          c.FIELD = v == "yes";                                                                     \
          return "";                                                                                \
        }                                                                                          \
  }
// A file or directory name inside `dir` (no '/'), fixed at start-up.
#define KVCG_FILENAME(NAME, FIELD, HELP, PATH_ERROR)                           \
  OptionSpec {                                                              \
    NAME, HELP, false, [](const ServerConfig& c) { return c.FIELD; },       \
        [](ServerConfig& c, const std::vector<std::string>& a) -> std::string { \
          std::string v;                                                    \
          if (auto e = OneArg(a, &v); !e.empty()) return e;                 \
          if (v.find('/') != std::string::npos) return PATH_ERROR;          \
          if (v.empty() || v == "." || v == "..") return NAME " can't be empty";  \
          c.FIELD = v;                                                      \
          return "";                                                        \
        }                                                                   \
  }

// The shortest text that reads back as `d` (std::to_chars): CONFIG GET
// shows a default of 0.05 as "0.05", not as "%.17g"'s "0.050000000000000003".
std::string FormatDouble(double d) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), d).ptr);
}

const char* LogLevels[] = {"debug", "verbose", "notice", "warning", "nothing"};

std::vector<OptionSpec> MakeOptions() {
  return {
      KVCG_STR("bind", bind, false, "addresses to listen on (space separated; empty = no TCP)"),
      KVCG_U64("port", port, 0, 65535, false, "TCP port; 0 = any free port (printed in the banner)"),
      KVCG_STR("unixsocket", unixsocket, false, "Unix socket path (empty: none)"),
      KVCG_U64("io-threads", io_threads, 0, 1024, false, "I/O threads; 0 = one per hardware thread"),
      KVCG_U64("tcp-backlog", tcp_backlog, 1, 65535, false, "listen() backlog"),
      KVCG_ENUM("backend", store.backend, ParseBackend, BackendName, "auto | gpu | cpu"),
      OptionSpec{"mode",
                 "kvcg | canonical | hot-only (default: kvcg with a GPU, canonical on the CPU backend)", false,
                 [](const ServerConfig& c) { return std::string(ModeName(c.store.mode)); },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   std::string v;
                   if (auto e = OneArg(a, &v); !e.empty()) return e;
                   v = Lower(v);
                   if (!ParseMode(v, &c.store.mode)) return "invalid value '" + v + "'";
                   if (const char* now = ModeReplacement(v)) {
                     std::fprintf(stderr, "kvcg-server: mode '%s' is deprecated, use '%s'\n", v.c_str(), now);
                   }
                   c.mode_given = true;
                   return "";
                 }},
      KVCG_ENUM("layout", store.layout, ParseLayout, LayoutName, "general | fixed8"),
      KVCG_U64("maxclients", maxclients, 1, 1000000, true, "maximum simultaneous clients"),
      KVCG_U64("timeout", timeout_s, 0, 100000000, true, "close clients idle this many seconds; 0 = never"),
      KVCG_STR("requirepass", requirepass, true, "password for AUTH (empty: none)"),
      KVCG_MEM("proto-max-bulk-len", proto_max_bulk_len, 1024 * 1024, true, "largest bulk string (key or value)"),
      KVCG_U64("proto-max-multibulk-len", proto_max_multibulk_len, 1, 1ull << 31, true,
               "most arguments in one command"),
      KVCG_MEM("proto-max-inline-len", proto_max_inline_len, 1024, true, "longest inline command line"),
      KVCG_MEM("client-query-buffer-limit", client_query_buffer_limit, 1024 * 1024, true,
               "largest unparsed input held for one client"),
      OptionSpec{"client-output-buffer-limit",
                 "hard limit on a client's pending replies: <bytes> or 'normal <hard> <soft> <secs>'", true,
                 [](const ServerConfig& c) {
                   return "normal " + std::to_string(c.client_output_buffer_limit) +
                          " 0 0 replica 0 0 0 pubsub 0 0 0";
                 },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   // Only the normal class exists; its hard limit is what we enforce.
                   std::vector<std::string> words;
                   for (const auto& w : a) {
                     std::vector<std::string> split;
                     SplitInlineArgs(w, &split);
                     words.insert(words.end(), split.begin(), split.end());
                   }
                   uint64_t v;
                   if (words.size() == 1) {
                     if (!ParseMemory(words[0], &v)) return "argument must be a memory value";
                     c.client_output_buffer_limit = v;
                     return "";
                   }
                   if (words.empty() || words.size() % 4 != 0) return "wrong number of arguments";
                   for (size_t i = 0; i < words.size(); i += 4) {
                     std::string cls = Lower(words[i]);
                     if (cls != "normal" && cls != "replica" && cls != "slave" && cls != "pubsub")
                       return "invalid client class '" + words[i] + "'";
                     if (!ParseMemory(words[i + 1], &v)) return "argument must be a memory value";
                     if (cls == "normal") c.client_output_buffer_limit = v;
                   }
                   return "";
                 }},
      KVCG_MEM("client-output-high-water", client_output_high_water, 4096, true,
               "stop reading a client while its pending replies exceed this"),
      KVCG_U64("max-batch-ops", max_batch_ops, 1, 1u << 24, true, "most store operations per client batch"),
      KVCG_U64("shutdown-timeout", shutdown_timeout_s, 0, 3600, true, "seconds to drain clients at shutdown"),
      // --- Persistence (store.durability; see server_config.h).
      OptionSpec{"dir", "directory of the snapshot and the log (made absolute at start-up)", false,
                 [](const ServerConfig& c) { return c.store.durability.dir; },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   std::string v;
                   if (auto e = OneArg(a, &v); !e.empty()) return e;
                   if (v.empty()) return "dir can't be empty";
                   c.store.durability.dir = v;
                   return "";
                 }},
      KVCG_FILENAME("dbfilename", store.durability.snapshot_file, "snapshot file name, in dir",
                    "dbfilename can't be a path, just a filename"),
      KVCG_YESNO("appendonly", store.durability.append_only, true, "yes: log every write (append-only log)"),
      OptionSpec{"appendfsync", "always | everysec | no: when the log is fsync'ed", true,
                 [](const ServerConfig& c) { return std::string(FsyncPolicyName(c.store.durability.fsync)); },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   if (a.size() != 1 || !ParseFsyncPolicy(Lower(a[0]), &c.store.durability.fsync))
                     return "argument(s) must be one of the following: everysec, always, no";
                   return "";
                 }},
      KVCG_FILENAME("appendfilename", store.durability.log_name, "prefix of the log's file names",
                    "appendfilename can't be a path, just a filename"),
      KVCG_FILENAME("appenddirname", store.durability.log_dir, "directory of the log's files, in dir",
                    "appenddirname can't be a path, just a dirname"),
      OptionSpec{"save", "snapshot rules: \"<seconds> <changes> ...\"; \"\" = none", true,
                 [](const ServerConfig& c) { return FormatSaveRules(c.store.durability.save_rules); },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   if (!ParseSaveRules(a, &c.store.durability.save_rules)) return "Invalid save parameters";
                   return "";
                 }},
      OptionSpec{"auto-aof-rewrite-percentage", "rewrite the log when it grew by this % since the last rewrite; 0 = never",
                 false, [](const ServerConfig& c) { return std::to_string(c.store.durability.auto_rewrite_percentage); },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   std::string v;
                   if (auto e = OneArg(a, &v); !e.empty()) return e;
                   int64_t n;
                   if (!ParseInt64(v, &n)) return "argument couldn't be parsed into an integer";
                   if (n < 0 || n > INT32_MAX) return "argument must be between 0 and 2147483647 inclusive";
                   c.store.durability.auto_rewrite_percentage = static_cast<uint32_t>(n);
                   return "";
                 }},
      KVCG_MEM("auto-aof-rewrite-min-size", store.durability.auto_rewrite_min_bytes, 0, false,
               "no automatic log rewrite below this size"),
      KVCG_YESNO("stop-writes-on-bgsave-error", stop_writes_on_bgsave_error, true,
                 "refuse writes (MISCONF) while the last background save failed"),
      OptionSpec{"databases", "only database 0 exists", false, [](const ServerConfig&) { return std::string("1"); },
                 [](ServerConfig&, const std::vector<std::string>& a) -> std::string {
                   if (a.size() != 1 || a[0] != "1") return "only one database (0) is supported";
                   return "";
                 }},
      OptionSpec{"loglevel", "debug | verbose | notice | warning | nothing", true,
                 [](const ServerConfig& c) { return c.loglevel; },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   std::string v;
                   if (auto e = OneArg(a, &v); !e.empty()) return e;
                   v = Lower(v);
                   for (const char* l : LogLevels) {
                     if (v == l) {
                       c.loglevel = v;
                       return "";
                     }
                   }
                   return "invalid log level '" + v + "'";
                 }},
      KVCG_U64("hz", store.active_expiry_hz, 0, 500, true,
               "active expiry: sweeps per second for expired keys (Redis's hz); 0 = lazy expiry only"),
      KVCG_MEM("maxmemory", store.max_memory_bytes, 0, true, "store memory limit (keys+values+overhead); 0 = none"),
      // Redis's enum error text, its values in Redis's order.
      OptionSpec{"maxmemory-policy", "what a write over maxmemory does: noeviction | allkeys-lru | allkeys-lfu | "
                 "allkeys-random | volatile-lru | volatile-lfu | volatile-random | volatile-ttl (docs/EVICTION.md)",
                 true, [](const ServerConfig& c) { return std::string(EvictionPolicyName(c.store.eviction)); },
                 [](ServerConfig& c, const std::vector<std::string>& a) -> std::string {
                   std::string v;
                   if (auto e = OneArg(a, &v); !e.empty()) return e;
                   if (!ParseEvictionPolicy(Lower(v), &c.store.eviction)) {
                     return "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, "
                            "volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction";
                   }
                   return "";
                 }},
      KVCG_U64("max-keys", store.max_keys, 0, UINT64_MAX >> 1, false, "most distinct keys; 0 = unlimited"),
      KVCG_U64("expected-keys", store.expected_keys, 1, UINT64_MAX >> 1, false, "sizing hint for the store"),
      KVCG_MEM("max-key-bytes", store.max_key_bytes, 1, false, "longest key the store accepts"),
      KVCG_U64("cpu-shards", store.cpu_shards, 0, 1u << 24, false, "CPU backend shards (power of two; 0 = auto)"),
      KVCG_U64("gpu-device", store.gpu_device, 0, 1024, false, "CUDA device ordinal"),
      KVCG_MEM("gpu-memory", store.gpu_memory_bytes, 0, false, "device memory for the slab pool; 0 = 3/4 of free"),
      KVCG_U64("gpu-orchestrators", store.gpu_orchestrators, 1, 1024, false, "ignored: the GPU store has one ordered pipeline (accepted so old configs parse)"),
      KVCG_U64("gpu-max-batch-ops", store.gpu_max_batch_ops, 0, 1u << 30, false,
               "aggregated GPU batch bound; 0 = 2 x resident threads"),
      KVCG_U64("gpu-batch-timeout-us", store.gpu_batch_timeout_us, 0, 1000000, false,
               "aggregation time bound in microseconds"),
      KVCG_U64("gpu-idle-spin-us", store.gpu_idle_spin_us, 0, 1000000, false,
               "microseconds the GPU pipeline keeps polling after going idle before it sleeps"),
      KVCG_U64("gpu-resident-blocks", store.gpu_resident_blocks, 0, 1024, false,
               "blocks of the kernel that stays on the GPU for small batches; 0 = a launch per batch"),
      KVCG_ENUM("router-model", store.router.model, ParseRouterModel, RouterModelName,
                "heavy-hitters (the most frequent sampled keys) | histogram (the paper's bins)"),
      KVCG_U64("router-bins", store.router.bins, 1, 1u << 30, false, "histogram model: bins over the hash space"),
      KVCG_DOUBLE("router-threshold", store.router.threshold, 0.0, 1.0,
                  "a bin or key is hot when its share of sampled accesses exceeds this; "
                  "0 = the model's default (histogram 0.001, heavy-hitters none)"),
      KVCG_U64("router-hot-keys", store.router.hot_keys, 0, kMaxRouterHotKeys, false,
               "heavy-hitters model: most keys called hot; 0 = the hot cache's capacity"),
      KVCG_DOUBLE("router-sample-rate", store.router.sample_rate, 0.0, 1.0,
                  "fraction of requests the shadow model is trained on"),
      KVCG_DOUBLE("router-min-hot-share", store.router.min_hot_share, 0.0, 1.0,
                  "a shadow model whose hot keys had less of the sampled accesses routes "
                  "nothing; 0 = install it as built"),
      KVCG_U64("router-switch-period-ms", store.router.switch_period_ms, 0, 1u << 30, false,
               "install the shadow model this often; 0 = only on demand"),
      KVCG_U64("router-min-samples", store.router.min_samples, 0, UINT64_MAX >> 1, false,
               "a periodic switch waits for this many samples"),
      KVCG_U64("hot-cache-buckets", store.hot_cache_buckets, 0, UINT64_MAX >> 1, false,
               "hot-cache buckets (8-entry nodes); 0 = auto"),
      KVCG_U64("retry-timeout-ms", store.retry_timeout_ms, 1, 3600000, false,
               "bound on internal retries before an operation times out"),
  };
}

}  // namespace

ServerConfig::ServerConfig() {
  store.durability.dir = ".";
  store.durability.save_rules = {{3600, 1}, {300, 100}, {60, 10000}};
}

bool ParseSaveRules(const std::vector<std::string>& words, std::vector<SaveRule>* out) {
  std::vector<std::string> all;
  for (const auto& w : words) {
    std::vector<std::string> split;
    if (!SplitInlineArgs(w, &split)) return false;
    all.insert(all.end(), split.begin(), split.end());
  }
  if (all.size() % 2 != 0) return false;
  std::vector<SaveRule> rules;
  for (size_t i = 0; i < all.size(); i += 2) {
    int64_t seconds, changes;
    if (!ParseInt64(all[i], &seconds) || !ParseInt64(all[i + 1], &changes) || seconds < 1 || changes < 0) {
      return false;
    }
    rules.push_back({static_cast<uint64_t>(seconds), static_cast<uint64_t>(changes)});
  }
  *out = std::move(rules);
  return true;
}

std::string FormatSaveRules(const std::vector<SaveRule>& rules) {
  std::string out;
  for (const SaveRule& r : rules) {
    if (!out.empty()) out += ' ';
    out += std::to_string(r.seconds) + " " + std::to_string(r.changes);
  }
  return out;
}

const std::vector<OptionSpec>& Options() {
  static const std::vector<OptionSpec> options = MakeOptions();
  return options;
}

const OptionSpec* FindOption(const std::string& name) {
  std::string lower = Lower(name);
  for (const auto& o : Options()) {
    if (lower == o.name) return &o;
  }
  return nullptr;
}

bool ParseMemory(const std::string& text, uint64_t* out) {
  std::string s = Lower(text);
  uint64_t mul = 1;
  struct Unit {
    const char* suffix;
    uint64_t mul;
  };
  static const Unit units[] = {{"gb", 1ull << 30}, {"mb", 1ull << 20}, {"kb", 1ull << 10},
                               {"g", 1000000000ull}, {"m", 1000000ull}, {"k", 1000ull}, {"b", 1}};
  for (const auto& u : units) {
    size_t n = std::char_traits<char>::length(u.suffix);
    if (s.size() > n && s.compare(s.size() - n, n, u.suffix) == 0) {
      mul = u.mul;
      s.resize(s.size() - n);
      break;
    }
  }
  int64_t v;
  if (!ParseInt64(s, &v) || v < 0) return false;
  if (mul != 1 && static_cast<uint64_t>(v) > UINT64_MAX / mul) return false;
  *out = static_cast<uint64_t>(v) * mul;
  return true;
}

void ChooseDefaultMode(ServerConfig* config) {
  if (config->mode_given) {
    config->mode_reason = std::string("mode ") + ModeName(config->store.mode) + " was asked for";
    return;
  }
  const Backend b = config->store.backend;
  const bool gpu = b == Backend::kGpu || (b == Backend::kAuto && store::GpuAvailable(config->store, nullptr));
  config->store.mode = gpu ? Mode::kKvcg : Mode::kCanonical;
  config->mode_reason = gpu ? "default with a GPU: hot keys are served by the CPU hot cache, the rest is "
                              "batched to the GPU"
                            : "default on the CPU backend: the CPU store serves every key (a hot cache in "
                              "front of it would be a second CPU hash map)";
}

std::string LoadConfigFile(const std::string& path, ServerConfig* config) {
  std::ifstream in(path);
  if (!in) return path + ": cannot open";
  std::string line;
  int number = 0;
  bool saw_save = false;
  while (std::getline(in, line)) {
    ++number;
    std::vector<std::string> words;
    auto where = [&] { return path + ":" + std::to_string(number) + ": "; };
    if (!SplitInlineArgs(line, &words)) return where() + "unbalanced quotes";
    if (words.empty() || words[0][0] == '#') continue;
    const OptionSpec* opt = FindOption(words[0]);
    if (opt == nullptr) return where() + "unknown option '" + words[0] + "'";
    std::vector<std::string> args(words.begin() + 1, words.end());
    // redis.conf writes `save ""` for "no snapshots"; `save` alone means the same.
    if (args.empty()) args.emplace_back();
    // As in Redis, the first `save` line replaces the default rules and the
    // following ones add to it ("save 900 1" / "save 300 10" on two lines).
    if (Lower(words[0]) == "save") {
      if (saw_save && !(args.size() == 1 && args[0].empty())) {
        args.insert(args.begin(), FormatSaveRules(config->store.durability.save_rules));
      }
      saw_save = true;
    }
    std::string e = opt->set(*config, args);
    if (!e.empty()) return where() + words[0] + ": " + e;
  }
  return "";
}

std::string ValidateServerConfig(const ServerConfig& config) {
  std::vector<std::string> binds;
  SplitInlineArgs(config.bind, &binds);
  if (binds.empty() && config.unixsocket.empty()) return "nothing to listen on: bind is empty and no unixsocket";
  if (config.store.durability.dir.empty()) return "dir must not be empty";
  if (config.proto_max_bulk_len > config.client_query_buffer_limit) {
    return "proto-max-bulk-len must not exceed client-query-buffer-limit";
  }
  return "";
}

}  // namespace kvcg::server
