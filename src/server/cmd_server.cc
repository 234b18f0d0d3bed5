// Server commands: COMMAND, CONFIG, INFO, DBSIZE, FLUSHALL/FLUSHDB, TIME,
// FUNCTION FLUSH/LIST (SHUTDOWN and the other persistence commands:
// cmd_persistence.cc). DBSIZE
// and FLUSHALL are barriers (see command_table.h): they run after every
// earlier command of the connection has taken effect.
#include <sys/utsname.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "kvcg/config.h"
#include "kvcg/durable.h"
#include "kvcg/engine.h"
#include "server/cmd_common.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/glob.h"
#include "server/io_thread.h"
#include "server/server.h"

namespace kvcg::server::cmd {

namespace {

constexpr const char* kKvcgVersion = "0.1.0";
constexpr const char* kRedisCompatVersion = "7.0.0";

std::vector<std::string> Words(const char* s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = s; *p; ++p) {
    if (*p == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(*p);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

void FlagList(RespWriter& out, uint32_t flags) {
  std::vector<const char*> names;
  if (flags & kCmdWrite) names.push_back("write");
  if (flags & kCmdReadonly) names.push_back("readonly");
  if (flags & kCmdWrite) names.push_back("denyoom");
  if (flags & kCmdAdmin) names.push_back("admin");
  if (flags & kCmdNoAuth) names.push_back("no_auth");
  if (flags & kCmdLoading) names.push_back("loading");
  if (flags & kCmdStale) names.push_back("stale");
  if (flags & kCmdFast) names.push_back("fast");
  out.SetHeader(names.size());
  for (const char* n : names) out.SimpleString(n);
}

// COMMAND INFO entry (Redis 7: 10 fields).
void CommandInfo(RespWriter& out, const CommandSpec& c) {
  out.ArrayHeader(10);
  out.Bulk(c.name);
  out.Integer(c.arity);
  FlagList(out, c.flags);
  out.Integer(c.first_key);
  out.Integer(c.last_key);
  out.Integer(c.key_step);
  std::vector<std::string> cats = Words(c.acl_categories);
  out.SetHeader(cats.size());
  for (const auto& cat : cats) out.SimpleString(cat);
  out.ArrayHeader(0);  // tips
  out.ArrayHeader(0);  // key specs
  std::vector<std::string> subs = Words(c.subcommands);
  out.ArrayHeader(subs.size());
  for (const auto& s : subs) {
    out.ArrayHeader(10);
    out.Bulk(std::string(c.name) + "|" + s);
    out.Integer(-2);
    out.SetHeader(0);
    out.Integer(0);
    out.Integer(0);
    out.Integer(0);
    out.SetHeader(0);
    out.ArrayHeader(0);
    out.ArrayHeader(0);
    out.ArrayHeader(0);
  }
}

void CommandDocs(RespWriter& out, const CommandSpec& c) {
  std::vector<std::string> subs = Words(c.subcommands);
  out.MapHeader(subs.empty() ? 4 : 5);
  out.Bulk("summary");
  out.Bulk(c.summary);
  out.Bulk("since");
  out.Bulk(c.since);
  out.Bulk("group");
  out.Bulk(c.group);
  out.Bulk("complexity");
  out.Bulk(c.complexity);
  if (!subs.empty()) {
    out.Bulk("subcommands");
    out.MapHeader(subs.size());
    for (const auto& s : subs) {
      out.Bulk(std::string(c.name) + "|" + s);
      out.MapHeader(2);
      out.Bulk("summary");
      out.Bulk(std::string(c.name) + " " + s);
      out.Bulk("group");
      out.Bulk(c.group);
    }
  }
}

std::string Human(uint64_t bytes) {
  char buf[32];
  double b = static_cast<double>(bytes);
  if (bytes < 1024) std::snprintf(buf, sizeof(buf), "%" PRIu64 "B", bytes);
  else if (bytes < (1ull << 20)) std::snprintf(buf, sizeof(buf), "%.2fK", b / 1024);
  else if (bytes < (1ull << 30)) std::snprintf(buf, sizeof(buf), "%.2fM", b / (1 << 20));
  else std::snprintf(buf, sizeof(buf), "%.2fG", b / (1ull << 30));
  return buf;
}

uint64_t RssBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string Us(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", static_cast<double>(ns) / 1000.0);
  return buf;
}

std::string BuildInfo(CommandContext& ctx, const std::set<std::string>& want) {
  Server& srv = ctx.server;
  ServerConfig cfg = srv.ConfigSnapshot();
  ThreadStats st;
  srv.SumStats(&st);
  bool all = want.empty() || want.count("all") || want.count("everything") || want.count("default");
  bool everything = want.count("all") || want.count("everything");
  auto on = [&](const char* s) { return all || want.count(s) != 0; };
  std::string o;
  auto line = [&](const std::string& k, const std::string& v) { o += k + ":" + v + "\r\n"; };
  auto section = [&](const char* title) {
    if (!o.empty()) o += "\r\n";
    o += std::string("# ") + title + "\r\n";
  };
  uint64_t now = WallMs();
  if (on("server")) {
    section("Server");
    utsname u{};
    uname(&u);
    line("redis_version", kRedisCompatVersion);
    line("kvcg_version", kKvcgVersion);
    line("redis_mode", "standalone");
    line("os", std::string(u.sysname) + " " + u.release + " " + u.machine);
    line("arch_bits", "64");
    line("multiplexing_api", "epoll");
    line("process_id", std::to_string(getpid()));
    line("tcp_port", std::to_string(srv.bound_port()));
    line("uptime_in_seconds", std::to_string((now - srv.start_ms()) / 1000));
    line("uptime_in_days", std::to_string((now - srv.start_ms()) / 86400000));
    line("io_threads_active", std::to_string(srv.io_threads()));
  }
  if (on("clients")) {
    section("Clients");
    line("connected_clients", std::to_string(srv.connected().load()));
    line("maxclients", std::to_string(cfg.maxclients));
    line("blocked_clients", "0");
  }
  if (on("memory")) {
    section("Memory");
    uint64_t used = srv.store()->MemoryBytes();
    line("used_memory", std::to_string(used));
    line("used_memory_human", Human(used));
    uint64_t rss = RssBytes();
    line("used_memory_rss", std::to_string(rss));
    line("used_memory_rss_human", Human(rss));
    line("maxmemory", std::to_string(cfg.store.max_memory_bytes));
    line("maxmemory_human", Human(cfg.store.max_memory_bytes));
    line("maxmemory_policy", EvictionPolicyName(cfg.store.eviction));
  }
  if (on("persistence")) {
    section("Persistence");
    srv.persistence().AppendInfo(&o);
  }
  if (on("stats")) {
    section("Stats");
    line("total_connections_received", std::to_string(Load(st.connections_received)));
    line("total_commands_processed", std::to_string(Load(st.commands)));
    line("total_net_input_bytes", std::to_string(Load(st.net_input_bytes)));
    line("total_net_output_bytes", std::to_string(Load(st.net_output_bytes)));
    line("rejected_connections", std::to_string(Load(st.rejected_connections)));
    line("expired_keys", std::to_string(srv.ExpiredKeys()));
    line("evicted_keys", std::to_string(srv.store()->Keyspace().evicted_keys));
    line("keyspace_hits", std::to_string(Load(st.keyspace_hits)));
    line("keyspace_misses", std::to_string(Load(st.keyspace_misses)));
    uint64_t errors = 0;
    for (const auto& f : st.failed_calls) errors += Load(f);
    line("total_error_replies", std::to_string(errors));
    line("total_protocol_errors", std::to_string(Load(st.protocol_errors)));
  }
  if (on("replication")) {
    section("Replication");
    line("role", "master");
    line("connected_slaves", "0");
  }
  if (on("kvcg")) {
    section("kvcg");
    const StoreInfo& si = srv.store_info();
    line("backend", BackendName(si.backend));
    line("device", si.device);
    line("store_detail", si.detail);
    line("mode", ModeName(cfg.store.mode));
    if (!cfg.mode_reason.empty()) line("mode_reason", cfg.mode_reason);
    line("layout", LayoutName(si.layout));
    line("store_keys", std::to_string(srv.store()->Size()));
    line("store_memory_bytes", std::to_string(srv.store()->MemoryBytes()));
    // Hot/cold split and the router: from the engine when the mode has one
    // (kvcg, hot-only); canonical is the canonical store alone.
    if (Engine* engine = AsEngine(srv.store())) {
      EngineStats es = engine->Stats();
      auto lat = [&](const char* prefix, const LatencySummary& l) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.2f", l.p50_us);
        line(std::string(prefix) + "_latency_p50_us", buf);
        std::snprintf(buf, sizeof(buf), "%.2f", l.p99_us);
        line(std::string(prefix) + "_latency_p99_us", buf);
      };
      line("hot_ops", std::to_string(es.hot.ops));
      line("hot_hits", std::to_string(es.hot.hits));
      line("hot_misses", std::to_string(es.hot.misses));
      lat("hot", es.hot.latency);
      line("cold_ops", std::to_string(es.cold.ops));
      lat("cold", es.cold.latency);
      line("hot_cache_entries", std::to_string(es.hot_cache_entries));
      line("router_model_version", std::to_string(es.model_version));
      line("router_model", es.model);
      if (es.model_hot_keys >= 0) line("router_model_hot_keys", std::to_string(es.model_hot_keys));
      if (!es.router_model.empty()) {  // kvcg mode: the shadow model's kind and trainer
        line("router_trainer", es.router_model);
        line("router_trainer_detail", es.router_trainer);
      }
      line("router_switches", std::to_string(es.switches));
    } else {
      line("hot_ops", "0");
      line("cold_ops", std::to_string(Load(st.batch_ops)));
      line("router_model_version", "none");
    }
    uint64_t batches = Load(st.batches), ops = Load(st.batch_ops);
    line("batches", std::to_string(batches));
    line("batch_ops", std::to_string(ops));
    char avg[32];
    std::snprintf(avg, sizeof(avg), "%.2f", batches ? static_cast<double>(ops) / static_cast<double>(batches) : 0.0);
    line("avg_batch_ops", avg);
    uint64_t members = Load(st.batch_members);
    std::snprintf(avg, sizeof(avg), "%.2f", batches ? static_cast<double>(members) / static_cast<double>(batches) : 0.0);
    line("avg_batch_clients", avg);
    line("early_rounds", std::to_string(Load(st.early_rounds)));
    line("rmw_extra_rounds", std::to_string(Load(st.cas_retries)));
    line("reads", std::to_string(Load(st.reads)));
    line("stage_parse_dispatch_us_total", Us(Load(st.parse_ns)));
    line("stage_write_us_total", Us(Load(st.reply_ns)));
    line("stage_store_us_total", Us(st.store_latency.sum_ns()));
    line("store_batch_latency_p50_us", Us(st.store_latency.Quantile(0.50)));
    line("store_batch_latency_p99_us", Us(st.store_latency.Quantile(0.99)));
    line("store_batch_latency_p999_us", Us(st.store_latency.Quantile(0.999)));
    line("read_to_reply_p50_us", Us(st.command_latency.Quantile(0.50)));
    line("read_to_reply_p99_us", Us(st.command_latency.Quantile(0.99)));
    line("read_to_reply_p999_us", Us(st.command_latency.Quantile(0.999)));
  }
  if (everything || want.count("commandstats")) {
    section("Commandstats");
    for (const CommandSpec& c : Commands()) {
      uint64_t calls = Load(st.calls[c.id]), failed = Load(st.failed_calls[c.id]);
      if (calls == 0 && failed == 0) continue;
      line(std::string("cmdstat_") + c.name, "calls=" + std::to_string(calls) +
                                                 ",usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=" +
                                                 std::to_string(failed));
    }
  }
  if (on("keyspace")) {
    section("Keyspace");
    // Redis counts keys not yet reclaimed after expiring too (keys=, expires=).
    // keys= counts the lists and sets too (collections.h); they have no TTL.
    const KeyspaceStats ks = srv.Keyspace();
    const uint64_t keys = ks.keys + srv.collections().size();
    if (keys > 0) {
      line("db0", "keys=" + std::to_string(keys) + ",expires=" + std::to_string(ks.volatile_keys) +
                      ",avg_ttl=" + std::to_string(ks.avg_ttl_ms));
    }
  }
  return o;
}

}  // namespace

void Command(CommandContext& ctx) {
  const auto& all = Commands();
  if (ctx.argc() == 1) {
    ctx.out.ArrayHeader(all.size());
    for (const auto& c : all) CommandInfo(ctx.out, c);
    return;
  }
  std::string sub = ToLower(ctx.arg(1));
  if (sub == "count" && ctx.argc() == 2) {
    ctx.out.Integer(static_cast<int64_t>(all.size()));
  } else if (sub == "info") {
    if (ctx.argc() == 2) {
      ctx.out.ArrayHeader(all.size());
      for (const auto& c : all) CommandInfo(ctx.out, c);
      return;
    }
    ctx.out.ArrayHeader(ctx.argc() - 2);
    for (size_t i = 2; i < ctx.argc(); ++i) {
      const CommandSpec* c = FindCommand(ctx.arg(i));
      if (c) CommandInfo(ctx.out, *c);
      else ctx.out.NullArray();
    }
  } else if (sub == "docs") {
    std::vector<const CommandSpec*> list;
    if (ctx.argc() == 2) {
      for (const auto& c : all) list.push_back(&c);
    } else {
      for (size_t i = 2; i < ctx.argc(); ++i) {
        if (const CommandSpec* c = FindCommand(ctx.arg(i))) list.push_back(c);
      }
    }
    ctx.out.MapHeader(list.size());
    for (const CommandSpec* c : list) {
      ctx.out.Bulk(c->name);
      CommandDocs(ctx.out, *c);
    }
  } else if (sub == "list" && ctx.argc() == 2) {
    ctx.out.ArrayHeader(all.size());
    for (const auto& c : all) ctx.out.Bulk(c.name);
  } else if (sub == "help" && ctx.argc() == 2) {
    static const char* lines[] = {"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                                  "(no subcommand)", "    Return details about all commands.", "COUNT",
                                  "    Return the total number of commands.", "DOCS [<command-name> ...]",
                                  "    Return documentation details about commands.", "INFO [<command-name> ...]",
                                  "    Return details about the given commands.", "LIST",
                                  "    Return a list of all commands.", "HELP", "    Print this help."};
    ctx.out.ArrayHeader(std::size(lines));
    for (const char* l : lines) ctx.out.SimpleString(l);
  } else {
    ctx.Error("ERR unknown subcommand '" + std::string(ctx.arg(1)) + "'. Try COMMAND HELP.");
  }
}

void ConfigCmd(CommandContext& ctx) {
  std::string sub = ToLower(ctx.arg(1));
  if (sub == "get" && ctx.argc() >= 3) {
    ServerConfig cfg = ctx.server.ConfigSnapshot();
    std::vector<std::pair<std::string, std::string>> hits;
    std::set<std::string> seen;
    for (size_t i = 2; i < ctx.argc(); ++i) {
      for (const OptionSpec& o : Options()) {
        if (!seen.count(o.name) && GlobMatch(ctx.arg(i), o.name, true)) {
          seen.insert(o.name);
          hits.emplace_back(o.name, o.get(cfg));
        }
      }
    }
    ctx.out.MapHeader(hits.size());
    for (const auto& [k, v] : hits) {
      ctx.out.Bulk(k);
      ctx.out.Bulk(v);
    }
  } else if (sub == "set" && ctx.argc() >= 4 && ctx.argc() % 2 == 0) {
    std::vector<std::pair<std::string, std::string>> changes;
    for (size_t i = 2; i + 1 < ctx.argc(); i += 2) changes.emplace_back(ctx.arg(i), ctx.arg(i + 1));
    std::string e = ctx.server.ConfigSet(changes);
    if (!e.empty()) ctx.Error(e);
    else ctx.out.Ok();
  } else if (sub == "resetstat" && ctx.argc() == 2) {
    ctx.server.ResetStats();
    ctx.out.Ok();
  } else if (sub == "rewrite" && ctx.argc() == 2) {
    ctx.Error("ERR CONFIG REWRITE is not supported by kvcg");
  } else if (sub == "help" && ctx.argc() == 2) {
    static const char* lines[] = {"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                                  "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
                                  "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
                                  "RESETSTAT", "    Reset statistics reported by the INFO command.", "HELP",
                                  "    Print this help."};
    ctx.out.ArrayHeader(std::size(lines));
    for (const char* l : lines) ctx.out.SimpleString(l);
  } else if (sub == "get" || sub == "set" || sub == "resetstat" || sub == "rewrite" || sub == "help") {
    ctx.Error("ERR wrong number of arguments for 'config|" + sub + "' command");
  } else {
    ctx.Error("ERR unknown subcommand '" + std::string(ctx.arg(1)) + "'. Try CONFIG HELP.");
  }
}

void Info(CommandContext& ctx) {
  std::set<std::string> want;
  for (size_t i = 1; i < ctx.argc(); ++i) want.insert(ToLower(ctx.arg(i)));
  ctx.out.Verbatim(BuildInfo(ctx, want));
}

// The store's keys plus the lists and sets (collections.h).
void DbSize(CommandContext& ctx) {
  ctx.out.Integer(static_cast<int64_t>(ctx.server.store()->Size() + ctx.server.collections().size()));
}

void FlushAll(CommandContext& ctx) {
  if (ctx.argc() > 2 || (ctx.argc() == 2 && !EqualsIgnoreCase(ctx.arg(1), "async") &&
                         !EqualsIgnoreCase(ctx.arg(1), "sync"))) {
    ctx.Error(kErrSyntax);
    return;
  }
  ctx.server.store()->Clear();
  ctx.server.collections().Clear();
  if (Durable* durable = ctx.server.persistence().durable()) {
    PersistenceInfo p = durable->Persistence();
    if (p.aof_enabled && !p.aof_last_write_ok) {
      ctx.Error(ctx.server.persistence().AofErrorReply());
      return;
    }
    // As Redis 7.0 does with save rules: an empty snapshot right away, so a
    // crash cannot bring the flushed keys back from the previous one. A
    // running BGSAVE (its image predates the flush) is waited for, then
    // overwritten; Redis kills its child instead.
    if (!durable->durability_config().save_rules.empty()) {
      Status s = ctx.server.persistence().Save(/*wait_for_background_save=*/true);
      if (!s.ok()) spdlog::warn("event=flushall_save_failed error=\"{}\"", s.ToString());
    }
  }
  ctx.out.Ok();
}

// FUNCTION: kvcg has no scripting, so there are never functions to list or
// flush. FLUSH and LIST answer as Redis does with none loaded (Redis's test
// harness sends FUNCTION FLUSH before every test file); the rest is refused.
void Function(CommandContext& ctx) {
  std::string sub = ToLower(ctx.arg(1));
  if (sub == "flush" && ctx.argc() <= 3) {
    if (ctx.argc() == 3 && !EqualsIgnoreCase(ctx.arg(2), "async") && !EqualsIgnoreCase(ctx.arg(2), "sync")) {
      ctx.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    } else {
      ctx.out.Ok();
    }
  } else if (sub == "list") {
    ctx.out.ArrayHeader(0);
  } else if (sub == "flush") {
    ctx.Error("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.");
  } else if (sub == "load" || sub == "delete" || sub == "dump" || sub == "restore" || sub == "kill" ||
             sub == "stats" || sub == "help") {
    ctx.Error("ERR FUNCTION " + std::string(ctx.arg(1)) + " is not supported (kvcg has no scripting)");
  } else {
    ctx.Error("ERR unknown subcommand '" + std::string(ctx.arg(1)) + "'. Try FUNCTION HELP.");
  }
}

void Time(CommandContext& ctx) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ctx.out.ArrayHeader(2);
  ctx.out.Bulk(std::to_string(ts.tv_sec));
  ctx.out.Bulk(std::to_string(ts.tv_nsec / 1000));
}

}  // namespace kvcg::server::cmd
