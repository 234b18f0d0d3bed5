// CollectionKeyspace: the lists and sets of kvcg-server, held in server
// memory beside the Store.
//
// Why here and not in the Store: kvcg's Store (CPU or GPU backend, the
// engine, the durability layer) holds string values only — GPU-resident
// slabs of bytes with per-key GET/PUT/DELETE/CAS. Lists and sets exist so
// that Redis clients (and Redis's own test suite) that touch one now and
// then get Redis's answers, WRONGTYPE included; they are not a GPU data
// structure. So they live here, on the host, in one map behind one mutex,
// and every key is in exactly one of the two places: the Store (a string)
// or this map (a list or a set).
//
// The string hot path: string commands consult this keyspace only when
// active() — one atomic load of the number of collections — is true. With
// no list or set (the common case, and every benchmark) a string command
// takes no lock and allocates nothing here. The load is an acquire: on
// x86-64 and ARMv8 that is the same plain load as a relaxed one, and it
// orders a client's later command after a LPUSH whose reply it saw.
//
// Concurrency: every operation on the map runs under mu_, so the collection
// side is linearizable on its own. What is not atomic is a command that
// needs both places:
//   * LPUSH/SADD on a key that is not a collection first GETs the key from
//     the Store (a string there: WRONGTYPE), then creates the collection.
//     A SET of the same key by another connection between the two leaves
//     the key in both places until one of them is deleted or overwritten.
//   * SET/MSET/SETEX on a collection key delete the collection, then PUT
//     the string; an LPUSH by another connection in between recreates the
//     collection (same outcome: both places).
//   * A string command that checked this map and found nothing may run in
//     the Store after another connection created a collection of that key.
// While a key is in both places, string commands see the collection (they
// check here first) and DEL removes both. Putting a lock on the string hot
// path to close these windows would cost every GET and SET; a connection's
// own pipeline is ordered (list and set commands are kCmdRmw, so the
// connection holds back its later commands on the key while one waits on
// its Store check).
//
// Persistence: nothing here is written by the durability layer (SAVE,
// BGSAVE, the AOF). Lists and sets are in memory only and are gone after a
// restart (docs/COMMANDS.md says so).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

namespace kvcg::server {

enum class CollectionType : uint8_t { kNone, kList, kSet };

// Redis's TYPE name ("list", "set"; "none" for kNone).
const char* CollectionTypeName(CollectionType t);

class CollectionKeyspace {
 public:
  using List = std::deque<std::string>;
  using Set = std::unordered_set<std::string>;

  // What an operation found at the key.
  enum class Access { kOk, kMissing, kWrongType };

  // False when no list or set exists: one atomic load, no lock. String
  // commands check nothing else then.
  bool active() const { return count_.load(std::memory_order_acquire) != 0; }
  size_t size() const { return count_.load(std::memory_order_acquire); }

  CollectionType TypeOf(std::string_view key) const;
  bool Contains(std::string_view key) const { return TypeOf(key) != CollectionType::kNone; }
  // Removes the key's collection; true when there was one.
  bool Erase(std::string_view key);
  void Clear();

  // Runs fn(T&) on the key's collection of type T (List or Set) under the
  // mutex, creating an empty one first when `create`. A collection left
  // empty by fn is deleted (Redis deletes emptied lists and sets).
  template <typename T, typename Fn>
  Access Update(std::string_view key, bool create, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      if (!create) return Access::kMissing;
      it = map_.emplace(std::string(key), Value{std::in_place_type<T>}).first;
    }
    T* c = std::get_if<T>(&it->second);
    if (c == nullptr) return Access::kWrongType;
    fn(*c);
    if (c->empty()) map_.erase(it);
    count_.store(map_.size(), std::memory_order_release);
    return Access::kOk;
  }
  // Runs fn(const T&) under the mutex; kMissing / kWrongType as Update.
  template <typename T, typename Fn>
  Access Read(std::string_view key, Fn&& fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return Access::kMissing;
    const T* c = std::get_if<T>(&it->second);
    if (c == nullptr) return Access::kWrongType;
    fn(*c);
    return Access::kOk;
  }

  // Every key and its type, copied under the mutex (KEYS, SCAN, RANDOMKEY).
  std::vector<std::pair<std::string, CollectionType>> Keys() const;
  // MEMORY USAGE's estimate: key, elements and a per-element charge; 0 when
  // the key is not a collection.
  uint64_t MemoryUsage(std::string_view key) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Value = std::variant<List, Set>;

  mutable std::mutex mu_;
  std::unordered_map<std::string, Value, Hash, std::equal_to<>> map_;
  std::atomic<size_t> count_{0};  // map_.size(), written under mu_
};

}  // namespace kvcg::server
