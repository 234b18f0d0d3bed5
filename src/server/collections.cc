// CollectionKeyspace (see collections.h for the design).
#include "server/collections.h"

namespace kvcg::server {

const char* CollectionTypeName(CollectionType t) {
  switch (t) {
    case CollectionType::kList:
      return "list";
    case CollectionType::kSet:
      return "set";
    default:
      return "none";
  }
}

namespace {

CollectionType TypeOfValue(const std::variant<CollectionKeyspace::List, CollectionKeyspace::Set>& v) {
  return std::holds_alternative<CollectionKeyspace::List>(v) ? CollectionType::kList : CollectionType::kSet;
}

// A rough per-element charge (node or bucket, string header), so MEMORY
// USAGE grows with the collection as Redis's does; not allocator-exact.
constexpr uint64_t kElementOverhead = 32;
constexpr uint64_t kCollectionOverhead = 96;

}  // namespace

CollectionType CollectionKeyspace::TypeOf(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  return it == map_.end() ? CollectionType::kNone : TypeOfValue(it->second);
}

bool CollectionKeyspace::Erase(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  map_.erase(it);
  count_.store(map_.size(), std::memory_order_release);
  return true;
}

void CollectionKeyspace::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
  count_.store(0, std::memory_order_release);
}

std::vector<std::pair<std::string, CollectionType>> CollectionKeyspace::Keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, CollectionType>> out;
  out.reserve(map_.size());
  for (const auto& [key, value] : map_) out.emplace_back(key, TypeOfValue(value));
  return out;
}

uint64_t CollectionKeyspace::MemoryUsage(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return 0;
  uint64_t bytes = kCollectionOverhead + key.size();
  std::visit(
      [&](const auto& c) {
        for (const std::string& e : c) bytes += e.size() + kElementOverhead;
      },
      it->second);
  return bytes;
}

}  // namespace kvcg::server
