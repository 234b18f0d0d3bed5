// kvcg/batch.h — a batch of operations (the paper's Client Request Batch)
// and the per-operation result.
//
// A Batch owns copies of its keys and values in one contiguous arena, so it
// can be handed to another thread (an orchestrator, the GPU copy engine)
// without the caller keeping anything alive. Appending is amortised O(1) and
// allocation-free once the arena has grown to the batch's working size, so a
// Batch reused through Clear() costs no allocation per operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvcg/status.h"

namespace kvcg {

enum class OpType : uint8_t {
  kGet = 0,     // -> value | kNotFound
  kPut = 1,     // -> previous value | kNotFound; always stores the new value
  kDelete = 2,  // -> previous value | kNotFound
  // Compare-and-swap: stores `value` only if the key is present and its value
  // equals `expected`, or — with expect_absent — only if the key is absent (a
  // present key never matches expect_absent, even with an empty value).
  // -> current value before the op | kNotFound, like PUT. Whether it stored
  // follows from the result: found() ? (!expect_absent && result.value == expected)
  //                                  : expect_absent.
  // Read-modify-write commands (INCR, APPEND, SET NX/XX) are loops over it.
  kCompareAndSwap = 3,
};

const char* OpTypeName(OpType type);

// The outcome of one operation.
//   code == kOk:       GET found the key; PUT/DELETE replaced/removed a value.
//                      `value` holds the value read (GET) or the previous value.
//   code == kNotFound: the key was absent. A PUT still stored its value.
//   any other code:    an error; the operation changed nothing and `value` is empty.
struct OpResult {
  Code code = Code::kOk;
  std::string value;

  bool found() const { return code == Code::kOk; }
  // True for the two normal outcomes (kOk, kNotFound).
  bool succeeded() const { return code == Code::kOk || code == Code::kNotFound; }
};

class Batch {
 public:
  struct Op {
    OpType type;
    uint64_t key_offset;
    uint64_t key_size;
    uint64_t value_offset;
    uint64_t value_size;
    uint64_t expected_offset;  // kCompareAndSwap only
    uint64_t expected_size;
    bool expect_absent;
  };

  Batch() = default;

  // Append an operation. Keys and values are copied; the views may die after
  // the call. Sizes are not checked here: limits are enforced by the store,
  // which answers an over-limit operation with an error result.
  void Get(std::string_view key) { Append(OpType::kGet, key, {}); }
  void Put(std::string_view key, std::string_view value) { Append(OpType::kPut, key, value); }
  void Delete(std::string_view key) { Append(OpType::kDelete, key, {}); }
  // `expected == nullptr` means "only if absent".
  void CompareAndSwap(std::string_view key, const std::string_view* expected,
                      std::string_view desired);
  void Append(OpType type, std::string_view key, std::string_view value);

  // Drop all operations, keeping the arena's memory for reuse.
  void Clear();
  void Reserve(size_t ops, size_t arena_bytes);

  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }

  OpType type(size_t i) const { return ops_[i].type; }
  std::string_view key(size_t i) const {
    return {arena_.data() + ops_[i].key_offset, ops_[i].key_size};
  }
  std::string_view value(size_t i) const {
    return {arena_.data() + ops_[i].value_offset, ops_[i].value_size};
  }
  std::string_view expected(size_t i) const {
    return {arena_.data() + ops_[i].expected_offset, ops_[i].expected_size};
  }
  bool expect_absent(size_t i) const { return ops_[i].expect_absent; }
  const std::vector<Op>& ops() const { return ops_; }
  // Bytes of keys and values held.
  size_t arena_bytes() const { return arena_.size(); }

 private:
  std::vector<Op> ops_;
  std::string arena_;
};

}  // namespace kvcg
