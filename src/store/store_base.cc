// The Store base class's blocking conveniences, built once on top of the
// asynchronous Submit every implementation provides. Kept apart from
// Store::Open (store.cc) so that backends can link the base class without
// linking each other.
#include <future>

#include "kvcg/store.h"

namespace kvcg {

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
