// CpuStore::Scan — one step of a SCAN over the CPU backend.
//
// The cursor is (shard << 44) | v. Within a shard, v walks the table's home
// slots in Redis's reverse-binary order (dict.c's dictScan): increment the
// reversed cursor over the table's mask bits. A shard's table only ever
// doubles or halves (ShardTable), and an entry's home slot under the new
// mask is its old home with one bit more or less, so every home slot's
// entries are visited even across growth and shrinking — Redis's guarantee
// (a key present for the whole iteration is returned at least once), with
// possible repeats. Entries are found by home slot, not position
// (ShardTable::ForEachAtHome), because deletes shift entries backward and a
// positional cursor could skip one. A step holds one shard's read lock and
// copies what it returns into its reader.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "store/cpu/cpu_store.h"

namespace kvcg::store::cpu {

namespace {

constexpr unsigned kSlotBits = 44;
constexpr uint64_t kSlotMask = (uint64_t(1) << kSlotBits) - 1;

uint64_t Reverse(uint64_t v) {
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
  return __builtin_bswap64(v);
}

// The next home slot after v in reverse-binary order over `mask`; 0 = done.
uint64_t NextHome(uint64_t v, uint64_t mask) {
  v |= ~mask;
  v = Reverse(v);
  ++v;
  return Reverse(v);
}

// The entries of one step, copied: keys and values back to back.
class ScanStepReader final : public SnapshotReader {
 public:
  void Add(std::string_view key, std::string_view value, uint64_t expire_at) {
    items_.push_back({bytes_.size(), key.size(), value.size(), expire_at});
    bytes_.append(key);
    bytes_.append(value);
  }
  size_t count() const { return items_.size(); }

  bool Next(SnapshotChunk* chunk) override {
    chunk->clear();
    if (done_ || items_.empty()) return false;
    done_ = true;
    for (const Item& it : items_) {
      chunk->keys.emplace_back(bytes_.data() + it.offset, it.key_size);
      chunk->values.emplace_back(bytes_.data() + it.offset + it.key_size, it.value_size);
      chunk->expires.push_back(it.expire_at);
    }
    return true;
  }
  uint64_t size() const override { return items_.size(); }

 private:
  struct Item {
    size_t offset, key_size, value_size;
    uint64_t expire_at;
  };
  std::string bytes_;
  std::vector<Item> items_;
  bool done_ = false;
};

}  // namespace

Status CpuStore::Scan(uint64_t cursor, size_t count, std::unique_ptr<SnapshotReader>* out, uint64_t* next) {
  auto step = std::make_unique<ScanStepReader>();
  count = std::max<size_t>(count, 1);
  uint64_t shard = cursor >> kSlotBits;
  uint64_t v = cursor & kSlotMask;
  const uint64_t now = config_.clock();
  *next = 0;
  while (shard < shard_count_) {
    Shard& s = shards_[shard];
    s.lock.lock_shared();
    const uint64_t mask = s.table.mask();
    do {
      s.table.ForEachAtHome(size_t(v), [&](const ShardTable::Entry& e) {
        if (!IsExpired(e.expire_at, now)) step->Add(e.key(), e.value(), e.expire_at);  // never return an expired key
      });
      v = NextHome(v, mask);
    } while (v != 0 && step->count() < count);
    s.lock.unlock_shared();
    if (v != 0) {
      *next = (shard << kSlotBits) | v;
      break;
    }
    ++shard;  // this shard is done
    if (step->count() >= count) {
      if (shard < shard_count_) *next = shard << kSlotBits;
      break;
    }
  }
  *out = std::move(step);
  return Status::Ok();
}

}  // namespace kvcg::store::cpu
