// ServerConfig: every setting of kvcg-server, and the one data-driven option
// table that the config file (redis.conf style), the command-line flags and
// CONFIG GET/SET all go through, so a name means the same thing everywhere.
//
// Names follow redis.conf where Redis has the setting (port, bind, timeout,
// maxclients, requirepass, proto-max-bulk-len, maxmemory, ...); kvcg-only
// settings use the same lowercase-hyphen style (backend, mode, max-batch-ops,
// gpu-*). Byte sizes accept Redis's units (1k = 1000, 1kb = 1024, mb, gb).
//
// Persistence settings (dir, dbfilename, appendonly, appendfsync,
// appendfilename, appenddirname, save, auto-aof-rewrite-*) live in
// store.durability, which Store::Open reads; their defaults are Redis's
// (dir ".", save "3600 1 300 100 60 10000", appendonly no). A wrong value
// gets Redis 7.0's error text ("argument must be 'yes' or 'no'", "Invalid
// save parameters", ...), which CONFIG SET wraps as Redis does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvcg/config.h"

namespace kvcg::server {

struct ServerConfig {
  ServerConfig();  // Redis's persistence defaults (dir ".", the three save rules)

  // --- Network.
  std::string bind = "127.0.0.1";  // space-separated addresses; empty = no TCP
  int port = 6379;                 // 0 = any free port (unlike Redis, where 0 disables TCP)
  std::string unixsocket;          // empty = none
  int io_threads = 0;              // 0 = one per hardware thread
  int tcp_backlog = 511;

  // --- Store.
  Config store;  // backend, mode, layout, capacities, GPU settings, durability
  // Whether "mode" was given (flag or file); if not, ChooseDefaultMode picks
  // it by backend. mode_reason: why the mode is what it is, in one line
  // (start-up banner, INFO kvcg).
  bool mode_given = false;
  std::string mode_reason;

  // --- Persistence (the rest is store.durability).
  // Redis's stop-writes-on-bgsave-error: with save rules set and the last
  // background save failed, write commands are refused with MISCONF.
  bool stop_writes_on_bgsave_error = true;

  // --- Limits and safety.
  uint64_t maxclients = 10000;
  uint64_t timeout_s = 0;  // idle client timeout; 0 = never
  std::string requirepass;
  uint64_t proto_max_bulk_len = 512ull * 1024 * 1024;
  uint64_t proto_max_multibulk_len = 1024 * 1024;
  uint64_t proto_max_inline_len = 64 * 1024;
  uint64_t client_query_buffer_limit = 1024ull * 1024 * 1024;
  // Hard limit on a client's pending reply bytes (Redis's "normal" class
  // hard limit); 0 = none. Over it, the client is disconnected.
  uint64_t client_output_buffer_limit = 0;
  // Backpressure: a client is not read while its pending reply bytes exceed this.
  uint64_t client_output_high_water = 1024 * 1024;
  // Engine-queue share: at most this many store operations per client batch;
  // a client's next batch is not submitted until the previous one completes.
  uint64_t max_batch_ops = 16384;
  uint64_t shutdown_timeout_s = 10;  // bound on draining at SIGTERM/SHUTDOWN

  std::string loglevel = "notice";
};

struct OptionSpec {
  const char* name;
  const char* help;
  bool runtime;  // may be changed with CONFIG SET
  std::string (*get)(const ServerConfig&);
  // Applies `args` (one or more words); returns "" or an error message.
  std::string (*set)(ServerConfig&, const std::vector<std::string>& args);
};

// Every option, in a stable order.
const std::vector<OptionSpec>& Options();
// Case-insensitive lookup; null when unknown.
const OptionSpec* FindOption(const std::string& name);

// Reads a redis.conf-style file ("name value ...", '#' comments, quoting as
// in Redis) into *config. Returns "" or "<file>:<line>: <error>".
std::string LoadConfigFile(const std::string& path, ServerConfig* config);

// The mode when none was given: with a GPU (backend gpu, or auto with a
// usable device) "kvcg" — hot keys on the CPU hot cache, the rest batched to
// the GPU; on the CPU backend "canonical" — the CPU store alone, since a hot
// cache in front of it would be a second CPU hash map. Sets mode_reason
// either way.
void ChooseDefaultMode(ServerConfig* config);

// Parses a byte size with Redis units ("512mb", "1gb", "100"); false if malformed.
bool ParseMemory(const std::string& text, uint64_t* out);

// Redis's "save" value: "" = no rules, else pairs "<seconds> <changes>"
// (seconds >= 1, changes >= 0), as one space-separated string or as words.
// Returns false (leaving *out alone) on anything else.
bool ParseSaveRules(const std::vector<std::string>& words, std::vector<SaveRule>* out);
// "3600 1 300 100" ("" for none): what CONFIG GET save shows.
std::string FormatSaveRules(const std::vector<SaveRule>& rules);

// Checks the whole configuration (not the store part, which Store::Open
// checks); returns "" or an error message.
std::string ValidateServerConfig(const ServerConfig& config);

}  // namespace kvcg::server
