// BatchLoader (batch_loader.h).
#include "durability/batch_loader.h"

#include <utility>

namespace kvcg::durability {

void BatchLoader::Add(OpType type, std::string_view key, std::string_view value, uint64_t expire_at) {
  batch_.Append(type, key, value, expire_at);
  if (expire_at == kKeepExpiry) clock_sensitive_ = true;
  bytes_ += key.size() + value.size();
  ++ops_;
  if (batch_.size() >= kBatchOps || bytes_ >= kBatchBytes) SubmitCurrent();
}

void BatchLoader::AddCas(std::string_view key, const std::string_view* expected, std::string_view value,
                         uint64_t expire_at) {
  batch_.CompareAndSwap(key, expected, value, expire_at);
  clock_sensitive_ = true;
  bytes_ += key.size() + value.size() + (expected ? expected->size() : 0);
  ++ops_;
  if (batch_.size() >= kBatchOps || bytes_ >= kBatchBytes) SubmitCurrent();
}

void BatchLoader::AddExpire(std::string_view key, uint64_t expire_at, ExpireCondition condition) {
  batch_.Expire(key, expire_at, condition);
  clock_sensitive_ = true;
  bytes_ += key.size();
  ++ops_;
  if (batch_.size() >= kBatchOps || bytes_ >= kBatchBytes) SubmitCurrent();
}

void BatchLoader::SubmitCurrent() {
  if (batch_.empty()) return;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return in_flight_ < kInFlight; });
    ++in_flight_;
  }
  Batch b = std::exchange(batch_, store_->NewBatch());
  bytes_ = 0;
  store_->Submit(std::move(b), [this](Results&& r) {
    Status bad;
    uint64_t refused = 0;
    for (size_t i = 0; i < r.size() && bad.ok(); ++i) {
      const Code c = r.code(i);
      if (c == Code::kOk || c == Code::kNotFound) continue;
      if (strict_ || c == Code::kInternal || c == Code::kUnavailable) {
        bad = Status(c, std::string("the store refused a loaded operation: ") + CodeName(c));
      } else {
        ++refused;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    refused_ += refused;
    if (!bad.ok() && error_.ok()) error_ = bad;
    --in_flight_;
    cv_.notify_all();
  });
}

void BatchLoader::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return in_flight_ == 0; });
}

Status BatchLoader::Flush() {
  SubmitCurrent();
  Wait();
  clock_sensitive_ = false;  // everything added so far has run
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace kvcg::durability
