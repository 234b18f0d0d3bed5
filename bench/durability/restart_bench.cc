// kvcg-bench-restart: how long a restart takes — fill a store with N keys,
// SAVE it, close it, and open it again from the snapshot — for every backend
// asked for, in the same run (issue 14: 100 M 16-byte keys / 32-byte values
// must load in <= 60 s on the H100 host).
//
// Bounds printed next to each load: the store's own bulk-insert rate in the
// same run (a load is bulk PUTs, so it cannot beat it) and the file's
// sequential read rate (the same file read into memory once, page cache warm).
// Output: one JSON document on stdout; progress on stderr.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "kvcg/durable.h"
#include "kvcg/store.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string Iso8601Now() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Key i: 16 bytes ("k" + 15 decimal digits); value: 32 bytes derived from i.
void KeyOf(uint64_t i, char* out) { std::snprintf(out, 17, "k%015llu", static_cast<unsigned long long>(i)); }
void ValueOf(uint64_t i, char* out) {
  for (int w = 0; w < 4; ++w) {
    const uint64_t v = (i + 1) * 0x9E3779B97F4A7C15ull ^ uint64_t(w);
    std::memcpy(out + 8 * w, &v, 8);
  }
}

// Bulk PUT of keys [0, n) in batches of `batch` ops, a few in flight.
double Fill(kvcg::Store* store, uint64_t n, size_t batch) {
  std::vector<kvcg::OpType> types(batch, kvcg::OpType::kPut);
  std::vector<char> keys(batch * 16), values(batch * 32);
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  uint64_t errors = 0;
  const auto t0 = Clock::now();
  for (uint64_t base = 0; base < n; base += batch) {
    const size_t m = size_t(std::min<uint64_t>(batch, n - base));
    for (size_t j = 0; j < m; ++j) {
      char k[17];
      KeyOf(base + j, k);
      std::memcpy(&keys[j * 16], k, 16);
      ValueOf(base + j, &values[j * 32]);
    }
    kvcg::Batch b = store->NewBatch();
    b.AppendBulk(types.data(), keys.data(), 16, values.data(), 32, m);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < 4; });
      ++in_flight;
    }
    store->Submit(std::move(b), [&](kvcg::Results&& r) {
      uint64_t bad = 0;
      for (size_t i = 0; i < r.size(); ++i) bad += r.code(i) != kvcg::Code::kOk && r.code(i) != kvcg::Code::kNotFound;
      std::lock_guard<std::mutex> lock(mu);
      errors += bad;
      --in_flight;
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  if (errors != 0) std::fprintf(stderr, "fill: %llu errors\n", static_cast<unsigned long long>(errors));
  return Since(t0);
}

double ReadFile(const std::string& path) {
  const auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return 0;
  std::vector<char> buf(8 << 20);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
  return Since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvcg-bench-restart: SAVE and restart time per backend"};
  uint64_t keys = 10'000'000;
  std::vector<std::string> backends = {"cpu", "gpu"};
  std::string dir = "";
  size_t batch = 65536;
  app.add_option("--keys", keys, "keys (16-byte keys, 32-byte values)");
  app.add_option("--backends", backends, "backends to run, in order (cpu, gpu)")->delimiter(',');
  app.add_option("--dir", dir, "directory for the snapshot (default: a temporary one)");
  app.add_option("--batch", batch, "ops per fill batch");
  CLI11_PARSE(app, argc, argv);
  const bool own_dir = dir.empty();
  if (own_dir) {
    std::string t = (std::filesystem::temp_directory_path() / "kvcg-restart-XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  std::ostringstream rows;
  bool first = true;
  for (const std::string& name : backends) {
    kvcg::Config config;
    if (!kvcg::ParseBackend(name, &config.backend)) {
      std::fprintf(stderr, "unknown backend %s\n", name.c_str());
      return 2;
    }
    config.expected_keys = keys;
    config.durability.dir = dir + "/" + name;
    config.durability.load_on_open = false;
    std::unique_ptr<kvcg::Store> store;
    kvcg::Status s = kvcg::Store::Open(config, &store);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s (skipped)\n", name.c_str(), s.ToString().c_str());
      continue;
    }
    const std::string device = store->Info().device;
    std::fprintf(stderr, "%s: filling %llu keys\n", name.c_str(), static_cast<unsigned long long>(keys));
    const double fill_s = Fill(store.get(), keys, batch);
    auto t0 = Clock::now();
    s = kvcg::AsDurable(store.get())->Save();
    const double save_s = Since(t0);
    if (!s.ok()) {
      std::fprintf(stderr, "SAVE failed: %s\n", s.ToString().c_str());
      return 1;
    }
    t0 = Clock::now();
    store.reset();
    const double close_s = Since(t0);
    const std::string file = config.durability.dir + "/" + config.durability.snapshot_file;
    const uint64_t bytes = std::filesystem::file_size(file);
    const double read_s = ReadFile(file);
    config.durability.load_on_open = true;
    t0 = Clock::now();
    s = kvcg::Store::Open(config, &store);
    const double open_s = Since(t0);
    if (!s.ok()) {
      std::fprintf(stderr, "reopen failed: %s\n", s.ToString().c_str());
      return 1;
    }
    const kvcg::PersistenceInfo p = kvcg::AsDurable(store.get())->Persistence();
    const uint64_t loaded = store->Size();
    std::fprintf(stderr, "%s: fill %.2f s, save %.2f s, restart %.2f s (%llu keys)\n", name.c_str(), fill_s,
                 save_s, open_s, static_cast<unsigned long long>(loaded));
    rows << (first ? "\n" : ",\n") << "    {\"backend\": \"" << name << "\", \"device\": \"" << device
         << "\", \"keys\": " << keys << ", \"loaded_keys\": " << loaded << ", \"snapshot_bytes\": " << bytes
         << ", \"fill_seconds\": " << fill_s << ", \"fill_keys_per_sec\": " << keys / fill_s
         << ", \"save_seconds\": " << save_s << ", \"close_seconds\": " << close_s
         << ", \"file_read_seconds\": " << read_s << ", \"file_read_gb_per_sec\": " << bytes / read_s / 1e9
         << ", \"restart_seconds\": " << open_s << ", \"load_seconds\": " << p.load_seconds
         << ", \"load_keys_per_sec\": " << loaded / p.load_seconds
         << ", \"target_restart_seconds_for_100M\": 60}";
    first = false;
    store.reset();
    std::filesystem::remove_all(config.durability.dir);
  }
  if (own_dir) std::filesystem::remove_all(dir);
  std::printf(
      "{\n  \"benchmark\": \"restart\",\n  \"date\": \"%s\",\n  \"bound\": \"a load is bulk PUTs: "
      "fill_keys_per_sec (the same store's bulk insert, same run) and file_read_gb_per_sec (page cache)\",\n"
      "  \"rows\": [%s\n  ]\n}\n",
      Iso8601Now().c_str(), rows.str().c_str());
  return 0;
}
