// Batch: one arena for all key and value bytes, one vector of descriptors.
// Offsets rather than pointers so the arena can grow (and be memcpy'd into a
// pinned GPU buffer) without fixing anything up.
#include "kvcg/batch.h"

namespace kvcg {

const char* OpTypeName(OpType type) {
  switch (type) {
    case OpType::kGet: return "GET";
    case OpType::kPut: return "PUT";
    case OpType::kDelete: return "DELETE";
    case OpType::kCompareAndSwap: return "CAS";
  }
  return "UNKNOWN";
}

void Batch::Append(OpType type, std::string_view key, std::string_view value) {
  Op op;
  op.type = type;
  op.key_offset = arena_.size();
  op.key_size = key.size();
  arena_.append(key);
  op.value_offset = arena_.size();
  op.value_size = value.size();
  arena_.append(value);
  op.expected_offset = arena_.size();
  op.expected_size = 0;
  op.expect_absent = false;
  ops_.push_back(op);
}

void Batch::CompareAndSwap(std::string_view key, const std::string_view* expected,
                           std::string_view desired) {
  Append(OpType::kCompareAndSwap, key, desired);
  Op& op = ops_.back();
  op.expect_absent = expected == nullptr;
  if (expected != nullptr) {
    op.expected_offset = arena_.size();
    op.expected_size = expected->size();
    arena_.append(*expected);
  }
}

void Batch::Clear() {
  ops_.clear();
  arena_.clear();
}

void Batch::Reserve(size_t ops, size_t arena_bytes) {
  ops_.reserve(ops);
  arena_.reserve(arena_bytes);
}

}  // namespace kvcg
