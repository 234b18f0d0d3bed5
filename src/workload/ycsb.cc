// See ycsb.h.
#include "workload/ycsb.h"

#include <cstring>

namespace kvcg::workload {

const char* DistributionName(Distribution d) {
  switch (d) {
    case Distribution::kUniform: return "uniform";
    case Distribution::kZipfian: return "zipfian";
    case Distribution::kLatest: return "latest";
  }
  return "unknown";
}

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kRead: return "read";
    case OpKind::kUpdate: return "update";
    case OpKind::kInsert: return "insert";
    case OpKind::kReadModifyWrite: return "rmw";
  }
  return "unknown";
}

bool ParseDistribution(const std::string& text, Distribution* out) {
  if (text == "uniform") *out = Distribution::kUniform;
  else if (text == "zipfian") *out = Distribution::kZipfian;
  else if (text == "latest") *out = Distribution::kLatest;
  else return false;
  return true;
}

bool ApplyCoreWorkload(const std::string& name, WorkloadSpec* spec) {
  auto mix = [&](double r, double u, double i, double rmw, Distribution d) {
    spec->name = name;
    spec->read = r;
    spec->update = u;
    spec->insert = i;
    spec->read_modify_write = rmw;
    spec->distribution = d;
    return true;
  };
  if (name == "a") return mix(0.5, 0.5, 0, 0, Distribution::kZipfian);
  if (name == "b") return mix(0.95, 0.05, 0, 0, Distribution::kZipfian);
  if (name == "c") return mix(1.0, 0, 0, 0, Distribution::kZipfian);
  if (name == "d") return mix(0.95, 0, 0.05, 0, Distribution::kLatest);
  if (name == "f") return mix(0.5, 0, 0, 0.5, Distribution::kZipfian);
  return false;
}

OperationGenerator::OperationGenerator(const WorkloadSpec& spec, uint64_t seed,
                                       std::atomic<uint64_t>* insert_counter)
    : spec_(spec), rng_(seed), insert_counter_(insert_counter) {
  if (spec_.distribution == Distribution::kZipfian) {
    zipf_ = spec_.zipf_items == 0
                ? std::make_unique<ScrambledZipfianGenerator>(spec_.key_space, spec_.theta)
                : std::make_unique<ScrambledZipfianGenerator>(spec_.key_space, spec_.theta,
                                                              spec_.zipf_items);
  } else if (spec_.distribution == Distribution::kLatest) {
    latest_ = std::make_unique<SkewedLatestGenerator>(spec_.prefill, spec_.theta);
  }
}

OperationGenerator::~OperationGenerator() = default;

uint64_t OperationGenerator::NextKey() {
  switch (spec_.distribution) {
    case Distribution::kUniform:
      return rng_.Below(spec_.key_space);
    case Distribution::kZipfian:
      return zipf_->Next(rng_);
    case Distribution::kLatest: {
      const uint64_t latest =
          insert_counter_ ? insert_counter_->load(std::memory_order_relaxed) : spec_.prefill;
      return latest_->Next(rng_, latest);
    }
  }
  return 0;
}

Operation OperationGenerator::Next() {
  const double u = rng_.NextDouble();
  if (u < spec_.read) return {OpKind::kRead, NextKey()};
  if (u < spec_.read + spec_.update) return {OpKind::kUpdate, NextKey()};
  if (u < spec_.read + spec_.update + spec_.insert) {
    const uint64_t index = insert_counter_ ? insert_counter_->fetch_add(1, std::memory_order_relaxed)
                                           : spec_.prefill;
    return {OpKind::kInsert, index};
  }
  return {OpKind::kReadModifyWrite, NextKey()};
}

void FormatKey(uint64_t index, size_t key_bytes, std::string* out) {
  if (key_bytes == 8) {
    out->resize(8);
    std::memcpy(out->data(), &index, 8);
    return;
  }
  std::string digits = std::to_string(index);
  out->assign("user");
  if (key_bytes > 4 + digits.size()) out->append(key_bytes - 4 - digits.size(), '0');
  out->append(digits);
}

void OperationGenerator::Key(uint64_t index, std::string* out) const {
  FormatKey(index, spec_.key_bytes, out);
}

void OperationGenerator::Value(uint64_t tag, std::string* out) const {
  out->resize(spec_.value_bytes);
  uint64_t x = tag * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < spec_.value_bytes; i += 8) {
    const size_t n = spec_.value_bytes - i < 8 ? spec_.value_bytes - i : 8;
    std::memcpy(out->data() + i, &x, n);
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
}

}  // namespace kvcg::workload
