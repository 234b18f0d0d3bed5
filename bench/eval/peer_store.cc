// See peer_store.h.
#include "peer_store.h"

#include <libcuckoo/cuckoohash_map.hh>

#include <string>
#include <string_view>
#include <thread>

namespace kvcg::eval {
namespace {

class CuckooPeer final : public Store {
 public:
  explicit CuckooPeer(uint64_t expected_keys) : map_(expected_keys) {}

  // Values are copied once, under libcuckoo's bucket lock, into the batch's
  // one ResultsBuilder arena (as the CPU backend does): no per-op std::string
  // on the result side.
  void Submit(Batch batch, Completion done) override {
    ResultsBuilder out;
    out.Reset(batch.size());  // every result starts kNotFound
    for (size_t i = 0; i < batch.size(); ++i) {
      key_.assign(batch.key(i));
      switch (batch.type(i)) {
        case OpType::kGet:
          map_.find_fn(key_, [&](const std::string& v) { out.SetValue(i, Code::kOk, v); });
          break;
        case OpType::kPut: {
          // upsert swaps in the new value and hands back the old one under
          // the bucket lock, as the contract's "previous value" asks.
          const std::string_view v = batch.value(i);
          map_.upsert(
              key_,
              [&](std::string& old) {
                out.SetValue(i, Code::kOk, old);
                old.assign(v);
              },
              std::string(v));
          break;
        }
        case OpType::kDelete:
          map_.erase_fn(key_, [&](std::string& old) {
            out.SetValue(i, Code::kOk, old);
            return true;
          });
          break;
        default:
          out.SetCode(i, Code::kInvalidArgument);
          break;
      }
    }
    done(out.Finish());
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
