// Store::Open picks the backend; the blocking conveniences are built once
// here on top of the asynchronous Submit every backend implements.
#include <future>

#include "kvcg/engine.h"
#include "kvcg/store.h"
#include "store/backends.h"

namespace kvcg {

namespace store {

Status ValidateConfig(const Config& config) {
  if (config.hash == nullptr) return Status::InvalidArgument("hash function must not be null");
  if (config.max_key_bytes == 0) return Status::InvalidArgument("max_key_bytes must be > 0");
  if (config.layout == Layout::kFixed8 && (config.max_key_bytes < 8 || config.max_value_bytes < 8)) {
    return Status::InvalidArgument("layout fixed8 needs max_key_bytes and max_value_bytes >= 8");
  }
  if (config.cpu_shards != 0 && (config.cpu_shards & (config.cpu_shards - 1)) != 0) {
    return Status::InvalidArgument("cpu_shards must be a power of two (or 0 for auto)");
  }
  if (config.backend != Backend::kCpu && config.gpu_orchestrators == 0) {
    return Status::InvalidArgument("gpu_orchestrators must be > 0");
  }
  return Status::Ok();
}

}  // namespace store

namespace {
Status OpenCanonical(const Config& config, std::unique_ptr<Store>* out) {
  switch (config.backend) {
    case Backend::kCpu:
      return store::OpenCpuStore(config, out);
    case Backend::kGpu:
      return store::OpenGpuStore(config, out);
    case Backend::kAuto:
      if (store::GpuAvailable(config, nullptr)) return store::OpenGpuStore(config, out);
      return store::OpenCpuStore(config, out);
  }
  return Status::InvalidArgument("unknown backend");
}
}  // namespace

Status Store::Open(const Config& config, std::unique_ptr<Store>* out) {
  out->reset();
  Status s = store::ValidateConfig(config);
  if (!s.ok()) return s;
  if (config.mode == Mode::kGpuOnly) return OpenCanonical(config, out);
  // kvcg and cpu-only: the engine (hot cache + router) over the canonical store.
  Config canonical_config = config;
  canonical_config.mode = Mode::kGpuOnly;
  std::unique_ptr<Store> canonical;
  s = OpenCanonical(canonical_config, &canonical);
  if (!s.ok()) return s;
  std::unique_ptr<Engine> engine;
  s = Engine::Open(config, std::move(canonical), &engine);
  if (s.ok()) *out = std::move(engine);
  return s;
}

void Store::ExecuteInto(const Batch& batch, std::vector<OpResult>* results) {
  std::promise<std::vector<OpResult>> promise;
  std::future<std::vector<OpResult>> future = promise.get_future();
  Submit(batch, [&promise](std::vector<OpResult>&& r) { promise.set_value(std::move(r)); });
  *results = future.get();
}

std::vector<OpResult> Store::Execute(const Batch& batch) {
  std::vector<OpResult> results;
  ExecuteInto(batch, &results);
  return results;
}

namespace {
OpResult ExecuteOne(Store* store, OpType type, std::string_view key, std::string_view value) {
  Batch batch;
  batch.Append(type, key, value);
  std::vector<OpResult> results = store->Execute(batch);
  return std::move(results.at(0));
}
}  // namespace

OpResult Store::Get(std::string_view key) { return ExecuteOne(this, OpType::kGet, key, {}); }
OpResult Store::Put(std::string_view key, std::string_view value) {
  return ExecuteOne(this, OpType::kPut, key, value);
}
OpResult Store::Delete(std::string_view key) { return ExecuteOne(this, OpType::kDelete, key, {}); }

}  // namespace kvcg
