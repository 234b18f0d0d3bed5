// ForwardingStore: a test Store that passes every call to the store it
// wraps. A test derives from it and overrides only what it intercepts
// (gating a snapshot's first read, holding a completion, recording a
// setting), so each wrapper says what it does and nothing else.
//
// SubmitWithEarlyAnswers is not forwarded: Store's default calls Submit,
// so a wrapper sees every batch in Submit (and gives no early answers).
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include "kvcg/store.h"

namespace kvcg::testing {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}

  Batch NewBatch() override { return inner_->NewBatch(); }
  void Submit(Batch batch, Completion done) override {
    inner_->Submit(std::move(batch), std::move(done));
  }
  uint64_t Size() const override { return inner_->Size(); }
  uint64_t MemoryBytes() const override { return inner_->MemoryBytes(); }
  void Clear() override { inner_->Clear(); }
  StoreInfo Info() const override { return inner_->Info(); }
  KeyspaceStats Keyspace() const override { return inner_->Keyspace(); }
  uint64_t ReclaimExpired() override { return inner_->ReclaimExpired(); }
  Status SetMemoryLimit(uint64_t max_memory_bytes, EvictionPolicy policy) override {
    return inner_->SetMemoryLimit(max_memory_bytes, policy);
  }
  Status KeyAccess(std::string_view key, KeyAccessInfo* info) const override {
    return inner_->KeyAccess(key, info);
  }
  Status OpenSnapshot(std::unique_ptr<SnapshotReader>* out) override {
    return inner_->OpenSnapshot(out);
  }
  Status Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out,
              uint64_t* next) override {
    return inner_->Scan(cursor, count, out, next);
  }

 protected:
  Store& inner() const { return *inner_; }
  // (Already range-checked by this store's SetActiveExpiryHz.)
  Status ApplyActiveExpiryHz(uint32_t hz) override { return inner_->SetActiveExpiryHz(hz); }

 private:
  std::unique_ptr<Store> inner_;
};

}  // namespace kvcg::testing
