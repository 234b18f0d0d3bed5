// kvcg-server: the Redis-protocol front end of kvcg.
//
//   kvcg-server [redis.conf] [--port 6379] [--backend cpu] [--mode canonical] ...
//
// Every option of the table in src/server/server_config.cc is a flag
// (--name value) and a config-file directive; flags override the file. The
// banner states backend (GPU model or CPU), mode and listening addresses.
// SIGTERM/SIGINT act as SHUTDOWN: drain in-flight requests, save when save
// rules are set, fsync the log, exit 0 (1 if that final save or fsync failed).
// A damaged snapshot or log stops the start with the store's message (file
// and offset) on stderr and exit status 1; load warnings (a torn log tail
// cut off) and what was loaded are logged before the ready line, which
// stays the last start-up line.
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "kvcg/durable.h"
#include "server/resp_parser.h"
#include "server/server.h"
#include "server/server_config.h"

using kvcg::server::ServerConfig;

int main(int argc, char** argv) {
  CLI::App app{"kvcg-server: a Redis-protocol server over the kvcg CPU-GPU key-value store"};
  std::string config_file;
  app.add_option("config", config_file, "redis.conf-style configuration file");
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::string> values(kvcg::server::Options().size());
  for (size_t i = 0; i < kvcg::server::Options().size(); ++i) {
    const auto& o = kvcg::server::Options()[i];
    std::string help = o.help;
    app.add_option(std::string("--") + o.name, values[i], help);
  }
  // Short aliases people expect.
  std::string threads_alias;
  app.add_option("--threads", threads_alias, "alias of --io-threads");
  CLI11_PARSE(app, argc, argv);

  ServerConfig config;
  if (!config_file.empty()) {
    std::string e = kvcg::server::LoadConfigFile(config_file, &config);
    if (!e.empty()) {
      std::fprintf(stderr, "kvcg-server: %s\n", e.c_str());
      return 2;
    }
  }
  for (size_t i = 0; i < kvcg::server::Options().size(); ++i) {
    const auto& o = kvcg::server::Options()[i];
    if (app.count(std::string("--") + o.name) == 0) continue;
    std::vector<std::string> args;
    kvcg::server::SplitInlineArgs(values[i], &args);
    if (args.empty()) args.emplace_back();
    std::string e = o.set(config, args);
    if (!e.empty()) {
      std::fprintf(stderr, "kvcg-server: --%s: %s\n", o.name, e.c_str());
      return 2;
    }
  }
  if (app.count("--threads")) {
    std::string e = kvcg::server::FindOption("io-threads")->set(config, {threads_alias});
    if (!e.empty()) {
      std::fprintf(stderr, "kvcg-server: --threads: %s\n", e.c_str());
      return 2;
    }
  }

  kvcg::server::ChooseDefaultMode(&config);

  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  if (config.loglevel == "debug") spdlog::set_level(spdlog::level::debug);
  else if (config.loglevel == "warning") spdlog::set_level(spdlog::level::warn);
  else if (config.loglevel == "nothing") spdlog::set_level(spdlog::level::off);

  // Signals are taken by one thread with sigwait; block them everywhere else
  // before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  // Over a file-size limit (RLIMIT_FSIZE) write() then fails with EFBIG,
  // which the log reports as a write error (MISCONF), instead of the signal
  // killing the server.
  std::signal(SIGXFSZ, SIG_IGN);

  kvcg::server::Server server(config);
  kvcg::Status s = server.Start();
  if (!s.ok()) {
    spdlog::error("event=startup_failed error=\"{}\"", s.ToString());
    std::fprintf(stderr, "kvcg-server: cannot start: %s\n", s.ToString().c_str());
    return 1;
  }
  const kvcg::StoreInfo& info = server.store_info();
  std::string addrs;
  for (const auto& a : server.listening()) addrs += (addrs.empty() ? "" : " ") + a;
  spdlog::info("event=started version=0.1.0 backend={} device=\"{}\" mode={} layout={} io_threads={} pid={}",
               kvcg::BackendName(info.backend), info.device, kvcg::ModeName(config.store.mode),
               kvcg::LayoutName(info.layout), server.io_threads(), getpid());
  spdlog::info("event=store detail=\"{}\"", info.detail);
  spdlog::info("event=mode mode={} reason=\"{}\"", kvcg::ModeName(config.store.mode), config.mode_reason);
  if (kvcg::Durable* durable = server.persistence().durable()) {
    kvcg::PersistenceInfo p = durable->Persistence();
    for (const std::string& w : p.load_warnings) spdlog::warn("event=load_warning warning=\"{}\"", w);
    spdlog::info("event=loaded keys={} seconds={:.3f} source=\"{}\" dir=\"{}\" appendonly={}", p.loaded_keys,
                 p.load_seconds, p.load_source.empty() ? "none" : p.load_source, durable->durability_config().dir,
                 durable->durability_config().append_only ? "yes" : "no");
  } else {
    spdlog::info("event=persistence state=off");
  }
  // One stable line for scripts and tests to wait for.
  std::printf("kvcg-server ready: backend=%s device=\"%s\" mode=%s listening=%s\n", kvcg::BackendName(info.backend),
              info.device.c_str(), kvcg::ModeName(config.store.mode), addrs.c_str());
  std::fflush(stdout);

  std::thread signal_thread([&server, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("event=signal name={}", sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "other");
    server.RequestShutdown();
  });
  server.WaitForShutdown();
  spdlog::info("event=draining");
  server.Stop();
  int status = server.shutdown_status().ok() ? 0 : 1;
  spdlog::info("event=stopped status={}", status);
  // The signal thread may still wait if SHUTDOWN (not a signal) stopped us.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  return status;
}
