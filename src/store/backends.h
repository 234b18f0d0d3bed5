// Internal: the canonical-store backends behind Store::Open, and the checks
// every backend applies to every operation so that both answer bad input
// identically (the conformance suite holds them to it).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/op_scan.h"
#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace kvcg::store {

// Rejects contradictory configurations (null hash, zero limits, ...). For
// the engine modes (kvcg, hot-only) it checks Config::router too.
Status ValidateConfig(const Config& config);
// The router's part: kInvalidArgument naming the field and what it must be.
Status ValidateRouterConfig(const Config::RouterConfig& router);

Status OpenCpuStore(const Config& config, std::unique_ptr<Store>* store);

// Defined by the CUDA backend when built with CUDA, otherwise by a stub that
// answers kUnavailable. `why` (may be null) receives the reason when false.
bool GpuAvailable(const Config& config, std::string* why);
Status OpenGpuStore(const Config& config, std::unique_ptr<Store>* store);

// The per-operation input check of the contract: kOk, or the error code the
// operation must be answered with (nothing may be changed for it).
inline Code CheckOperation(const Config& config, OpType type, std::string_view key,
                           std::string_view value) {
  if (type == OpType::kNoop) return Code::kOk;  // nothing to check: it reads nothing
  const bool stores = TypeIn(type, kStoringTypes);
  if (!stores && type != OpType::kGet && type != OpType::kDelete && type != OpType::kExpire) {
    return Code::kInvalidArgument;
  }
  if (key.size() > config.max_key_bytes) return Code::kKeyTooLarge;
  if (stores && value.size() > config.max_value_bytes) return Code::kValueTooLarge;
  if (config.layout == Layout::kFixed8) {
    if (key.size() != 8) return Code::kInvalidArgument;
    if (stores && value.size() != 8) return Code::kInvalidArgument;
  }
  return Code::kOk;
}

// The same check for operation `i` of `batch`, including the expected value
// of a compare-and-swap (which must also be 8 bytes in Layout::kFixed8).
inline Code CheckOperation(const Config& config, const Batch& batch, size_t i) {
  if (batch.type(i) == OpType::kNoop) return Code::kOk;
  if (batch.overflowed(i)) {
    return uint32_t(batch.keys()[i]) == Batch::kOverflow ? Code::kKeyTooLarge : Code::kValueTooLarge;
  }
  const Code code = CheckOperation(config, batch.type(i), batch.key(i), batch.value(i));
  if (code != Code::kOk) return code;
  // Layout::kFixed8 stores exactly a key word and a value word: no expiry.
  if (config.layout == Layout::kFixed8 &&
      (batch.type(i) == OpType::kExpire || batch.expire_at(i) != kNoExpiry)) {
    return Code::kInvalidArgument;
  }
  if (uint8_t(batch.condition(i)) > uint8_t(ExpireCondition::kIfLess)) return Code::kInvalidArgument;
  if (batch.type(i) == OpType::kCompareAndSwap && !batch.expect_absent(i)) {
    if (batch.expected(i).size() > config.max_value_bytes) return Code::kValueTooLarge;
    if (config.layout == Layout::kFixed8 && batch.expected(i).size() != 8) {
      return Code::kInvalidArgument;
    }
  }
  return Code::kOk;
}

}  // namespace kvcg::store
