// Unit tests of the persistence options in the server's option table: Redis's
// save syntax, its error texts, and redis.conf's "first save line replaces
// the defaults, later ones add" rule; of the router's model options; and of
// the GPU pipeline's idle poll.
#include "server/server_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace kvcg::server {
namespace {

std::string Set(ServerConfig* c, const char* name, std::vector<std::string> args) {
  const OptionSpec* o = FindOption(name);
  EXPECT_NE(o, nullptr) << name;
  return o == nullptr ? "unknown" : o->set(*c, args);
}

std::string Get(const ServerConfig& c, const char* name) { return FindOption(name)->get(c); }

TEST(ServerConfigPersistence, RedisDefaults) {
  ServerConfig c;
  EXPECT_EQ(Get(c, "dir"), ".");
  EXPECT_EQ(Get(c, "dbfilename"), "dump.kvcg");
  EXPECT_EQ(Get(c, "save"), "3600 1 300 100 60 10000");
  EXPECT_EQ(Get(c, "appendonly"), "no");
  EXPECT_EQ(Get(c, "appendfsync"), "everysec");
  EXPECT_EQ(Get(c, "appendfilename"), "appendonly.kvcg");
  EXPECT_EQ(Get(c, "appenddirname"), "appendonlydir");
  EXPECT_EQ(Get(c, "auto-aof-rewrite-percentage"), "100");
  EXPECT_EQ(Get(c, "auto-aof-rewrite-min-size"), std::to_string(64ull << 20));
  EXPECT_EQ(Get(c, "stop-writes-on-bgsave-error"), "yes");
}

TEST(ServerConfigPersistence, SaveRules) {
  ServerConfig c;
  EXPECT_EQ(Set(&c, "save", {"900 1 300 10"}), "");  // CONFIG SET: one string
  EXPECT_EQ(Get(c, "save"), "900 1 300 10");
  ASSERT_EQ(c.store.durability.save_rules.size(), 2u);
  EXPECT_EQ(c.store.durability.save_rules[1].seconds, 300u);
  EXPECT_EQ(c.store.durability.save_rules[1].changes, 10u);
  EXPECT_EQ(Set(&c, "save", {"60", "0"}), "");  // config file: words
  EXPECT_EQ(Get(c, "save"), "60 0");
  for (const char* bad : {"100", "0 1", "abc 1", "60 -1", "60 1 30", "1.5 2"}) {
    EXPECT_EQ(Set(&c, "save", {bad}), "Invalid save parameters") << bad;
    EXPECT_EQ(Get(c, "save"), "60 0") << "a bad value must change nothing";
  }
  EXPECT_EQ(Set(&c, "save", {""}), "");
  EXPECT_TRUE(c.store.durability.save_rules.empty());
  EXPECT_EQ(Get(c, "save"), "");
}

TEST(ServerConfigPersistence, RedisErrorTexts) {
  ServerConfig c;
  EXPECT_EQ(Set(&c, "appendfsync", {"sometimes"}), "argument(s) must be one of the following: everysec, always, no");
  EXPECT_EQ(Set(&c, "appendfsync", {"ALWAYS"}), "");
  EXPECT_EQ(c.store.durability.fsync, FsyncPolicy::kAlways);
  EXPECT_EQ(Set(&c, "appendonly", {"maybe"}), "argument must be 'yes' or 'no'");
  EXPECT_EQ(Set(&c, "appendonly", {"Yes"}), "");
  EXPECT_TRUE(c.store.durability.append_only);
  EXPECT_EQ(Set(&c, "stop-writes-on-bgsave-error", {"1"}), "argument must be 'yes' or 'no'");
  EXPECT_EQ(Set(&c, "dbfilename", {"a/b"}), "dbfilename can't be a path, just a filename");
  EXPECT_EQ(Set(&c, "appendfilename", {"a/b"}), "appendfilename can't be a path, just a filename");
  EXPECT_EQ(Set(&c, "appenddirname", {"a/b"}), "appenddirname can't be a path, just a dirname");
  EXPECT_EQ(Set(&c, "auto-aof-rewrite-percentage", {"x"}), "argument couldn't be parsed into an integer");
  EXPECT_EQ(Set(&c, "auto-aof-rewrite-percentage", {"-1"}), "argument must be between 0 and 2147483647 inclusive");
  EXPECT_EQ(Set(&c, "auto-aof-rewrite-min-size", {"lots"}), "argument must be a memory value");
  EXPECT_EQ(Set(&c, "auto-aof-rewrite-min-size", {"1mb"}), "");
  EXPECT_EQ(c.store.durability.auto_rewrite_min_bytes, 1u << 20);
  EXPECT_EQ(Set(&c, "dir", {""}), "dir can't be empty");
  // Only what the Durable can change while running may be set at run time.
  for (const char* name : {"appendonly", "appendfsync", "save", "stop-writes-on-bgsave-error"}) {
    EXPECT_TRUE(FindOption(name)->runtime) << name;
  }
  for (const char* name : {"dir", "dbfilename", "appendfilename", "appenddirname", "auto-aof-rewrite-percentage",
                           "auto-aof-rewrite-min-size"}) {
    EXPECT_FALSE(FindOption(name)->runtime) << name;
  }
}

TEST(ServerConfigPersistence, ConfigFileSaveLinesAccumulate) {
  char path[] = "/tmp/kvcg-server-config-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream f(path);
    f << "save 900 1\nsave 300 10\nappendonly yes\n";
  }
  ServerConfig c;
  EXPECT_EQ(LoadConfigFile(path, &c), "");
  EXPECT_EQ(Get(c, "save"), "900 1 300 10");
  EXPECT_TRUE(c.store.durability.append_only);
  {
    std::ofstream f(path);
    f << "save 900 1\nsave \"\"\n";
  }
  ServerConfig d;
  EXPECT_EQ(LoadConfigFile(path, &d), "");
  EXPECT_EQ(Get(d, "save"), "");
  std::remove(path);
}

TEST(ServerConfigRouter, ModelHotKeysAndThreshold) {
  ServerConfig c;
  EXPECT_EQ(Get(c, "router-model"), "heavy-hitters");
  EXPECT_EQ(Get(c, "router-hot-keys"), "0");
  EXPECT_EQ(Get(c, "router-threshold"), "0");
  EXPECT_EQ(Set(&c, "router-model", {"Histogram"}), "");  // case-insensitive, as Redis enums
  EXPECT_EQ(c.store.router.model, RouterModel::kHistogram);
  EXPECT_EQ(Get(c, "router-model"), "histogram");
  EXPECT_EQ(Set(&c, "router-model", {"bins"}), "invalid value 'bins'");
  EXPECT_EQ(c.store.router.model, RouterModel::kHistogram) << "a bad value must change nothing";
  EXPECT_EQ(Set(&c, "router-hot-keys", {"20000"}), "");
  EXPECT_EQ(c.store.router.hot_keys, 20000u);
  EXPECT_NE(Set(&c, "router-hot-keys", {std::to_string(kMaxRouterHotKeys + 1)}), "");
  EXPECT_EQ(Set(&c, "router-threshold", {"0.0001"}), "");
  EXPECT_EQ(c.store.router.threshold, 0.0001);
  EXPECT_EQ(Get(c, "router-min-hot-share"), "0.05") << "the shortest form that reads back";
  EXPECT_EQ(Set(&c, "router-min-hot-share", {"0.2"}), "");
  EXPECT_EQ(c.store.router.min_hot_share, 0.2);
  EXPECT_EQ(Get(c, "router-min-hot-share"), "0.2");
  EXPECT_NE(Set(&c, "router-min-hot-share", {"1.5"}), "");
  EXPECT_EQ(c.store.router.min_hot_share, 0.2) << "a bad value must change nothing";
  EXPECT_EQ(Set(&c, "router-min-hot-share", {"0"}), "");
  EXPECT_EQ(Get(c, "router-min-hot-share"), "0");
  EXPECT_FALSE(FindOption("router-model")->runtime) << "fixed at start-up, like mode";
}

// The GPU pipeline's idle poll: default 1 ms (the store's), microseconds,
// bounded, and fixed at start like the other store sizing options.
TEST(ServerConfigGpu, IdleSpin) {
  ServerConfig c;
  EXPECT_EQ(Get(c, "gpu-idle-spin-us"), std::to_string(Config{}.gpu_idle_spin_us));
  EXPECT_EQ(Set(&c, "gpu-idle-spin-us", {"0"}), "");
  EXPECT_EQ(c.store.gpu_idle_spin_us, 0u);
  EXPECT_EQ(Set(&c, "gpu-idle-spin-us", {"250"}), "");
  EXPECT_EQ(c.store.gpu_idle_spin_us, 250u);
  EXPECT_NE(Set(&c, "gpu-idle-spin-us", {"1000001"}), "");
  EXPECT_NE(Set(&c, "gpu-idle-spin-us", {"-1"}), "");
  EXPECT_EQ(c.store.gpu_idle_spin_us, 250u) << "a bad value must change nothing";
  EXPECT_FALSE(FindOption("gpu-idle-spin-us")->runtime);
}

}  // namespace
}  // namespace kvcg::server
