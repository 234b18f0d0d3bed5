// See peer_store.h.
#include "peer_store.h"

#include <libcuckoo/cuckoohash_map.hh>

#include <string>
#include <thread>

namespace kvcg::eval {
namespace {

class CuckooPeer final : public Store {
 public:
  explicit CuckooPeer(uint64_t expected_keys) : map_(expected_keys) {}

  void Submit(Batch batch, Completion done) override {
    std::vector<OpResult> results;
    ExecuteInto(batch, &results);
    done(std::move(results));
  }

  void ExecuteInto(const Batch& batch, std::vector<OpResult>* results) override {
    results->resize(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      OpResult& r = (*results)[i];
      r.value.clear();
      key_.assign(batch.key(i));
      switch (batch.type(i)) {
        case OpType::kGet:
          r.code = map_.find_fn(key_, [&](const std::string& v) { r.value = v; })
                       ? Code::kOk
                       : Code::kNotFound;
          break;
        case OpType::kPut: {
          // upsert swaps in the new value and hands back the old one under
          // the bucket lock, as the contract's "previous value" asks.
          bool existed = false;
          const std::string_view v = batch.value(i);
          map_.upsert(
              key_,
              [&](std::string& old) {
                existed = true;
                r.value = std::move(old);
                old.assign(v);
              },
              std::string(v));
          r.code = existed ? Code::kOk : Code::kNotFound;
          break;
        }
        case OpType::kDelete:
          r.code = map_.erase_fn(key_,
                                 [&](std::string& old) {
                                   r.value = std::move(old);
                                   return true;
                                 })
                       ? Code::kOk
                       : Code::kNotFound;
          break;
        default:
          r.code = Code::kInvalidArgument;
          break;
      }
    }
  }

  uint64_t Size() const override { return map_.size(); }
  uint64_t MemoryBytes() const override { return 0; }
  void Clear() override { map_.clear(); }
  StoreInfo Info() const override {
    StoreInfo info;
    info.backend = Backend::kCpu;
    info.device = "CPU (" + std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
    info.detail = "peer: libcuckoo cuckoohash_map<std::string, std::string>";
    return info;
  }

 private:
  libcuckoo::cuckoohash_map<std::string, std::string> map_;
  static thread_local std::string key_;
};

thread_local std::string CuckooPeer::key_;

}  // namespace

std::unique_ptr<Store> OpenCuckooPeer(uint64_t expected_keys) {
  return std::make_unique<CuckooPeer>(expected_keys);
}

}  // namespace kvcg::eval
