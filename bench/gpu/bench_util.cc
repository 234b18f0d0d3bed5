// Shared helpers of kvcg-bench-gpu; see bench_util.h.
#include "bench_util.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <ctime>

namespace kvcg::bench {

void Fail(const char* fmt, ...) {
  std::fflush(stdout);
  std::fprintf(stderr, "kvcg-bench-gpu: FAILED: ");
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  std::exit(1);
}

std::string Now() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string DeviceName() {
  cudaDeviceProp p{};
  KVCG_CK(cudaGetDeviceProperties(&p, 0));
  return p.name;
}

std::string Commit() {
  const char* c = std::getenv("COMMIT");
  return c != nullptr && *c != '\0' ? c : "unknown";
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", ch);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::unique_ptr<Store> OpenStore(Config config) {
  std::unique_ptr<Store> store;
  const Status s = Store::Open(config, &store);
  if (!s.ok()) {
    std::fprintf(stderr, "open (%s, %s): %s\n", BackendName(config.backend),
                 LayoutName(config.layout), s.ToString().c_str());
    std::exit(2);
  }
  return store;
}

void PrintHeader(const char* benchmark) {
  std::printf("{\n  \"benchmark\": %s, \"device\": %s, \"date\": %s, \"commit\": %s,\n",
              Quote(benchmark).c_str(), Quote(DeviceName()).c_str(), Quote(Now()).c_str(),
              Quote(Commit()).c_str());
}

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, size_t(q * double(sorted.size())));
  return sorted[i];
}

}  // namespace kvcg::bench
