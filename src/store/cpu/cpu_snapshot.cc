// CPU store snapshots; see cpu_snapshot.h for the design and why it is
// point-in-time.
#include "store/cpu/cpu_snapshot.h"

#include <algorithm>
#include <cstring>
#include <shared_mutex>

namespace kvcg::store::cpu {

void ShardImage::CopyFrom(const ShardTable& table) {
  items_.clear();
  items_.reserve(table.size());
  size_t total = 0;
  table.ForEach([&](const ShardTable::Entry& e) {
    items_.push_back({total, e.key().size(), e.value().size(), e.expire_at});
    total += e.key().size() + e.value().size();
  });
  if (total > capacity_) {
    bytes_.reset(new char[total]);  // uninitialized: every byte is written below
    capacity_ = total;
  }
  char* out = bytes_.get();
  table.ForEach([&](const ShardTable::Entry& e) {
    std::memcpy(out, e.key().data(), e.key().size());
    std::memcpy(out + e.key().size(), e.value().data(), e.value().size());
    out += e.key().size() + e.value().size();
  });
}

// One open image. Each shard's slot and flag are guarded by that shard's
// lock: written by a writer under its exclusive hold, or by this image's one
// reader under its shared hold (no other thread writes them then).
struct SnapshotImage {
  SnapshotImage(uint64_t gen, uint32_t shards) : generation(gen), captured(shards, 0), copies(shards) {}

  const uint64_t generation;
  std::vector<uint8_t> captured;  // the shard's contents at the instant are secured
  std::vector<std::shared_ptr<const ShardImage>> copies;  // a writer's copy, if a writer made it
};

// Reads one image, shard by shard: a shard's copy is emitted in chunks of at
// most kChunkEntries views into it, and released when the next shard starts.
class CpuSnapshotReader final : public SnapshotReader {
 public:
  CpuSnapshotReader(SnapshotRegistry* registry, std::shared_ptr<SnapshotImage> image, uint64_t size)
      : registry_(registry), image_(std::move(image)), size_(size) {}
  ~CpuSnapshotReader() override { registry_->Unregister(image_.get()); }

  bool Next(SnapshotChunk* chunk) override {
    chunk->clear();
    while (current_ == nullptr || position_ == current_->size()) {
      current_ = nullptr;
      held_.reset();
      position_ = 0;
      if (next_shard_ == registry_->shard_count_) {
        registry_->Unregister(image_.get());  // every shard is secured: stop writers copying
        return false;
      }
      TakeShard(next_shard_++);
    }
    const size_t end = std::min(current_->size(), position_ + kChunkEntries);
    chunk->keys.reserve(end - position_);
    chunk->values.reserve(end - position_);
    for (; position_ < end; ++position_) {
      chunk->keys.push_back(current_->key(position_));
      chunk->values.push_back(current_->value(position_));
      chunk->expires.push_back(current_->expire_at(position_));
    }
    return true;
  }

  uint64_t size() const override { return size_; }

 private:
  static constexpr size_t kChunkEntries = 4096;

  // Makes current_ shard s as it was at the image's instant.
  void TakeShard(uint32_t s) {
    CpuShard& shard = registry_->shards_[s];
    std::shared_lock lock(shard.lock);
    if (image_->captured[s]) {
      held_ = std::move(image_->copies[s]);  // a writer copied it; nobody touches the slot again
      current_ = held_.get();
      return;
    }
    // No write has touched the shard since the instant: copy it as it is.
    own_.CopyFrom(shard.table);
    image_->captured[s] = 1;
    current_ = &own_;
  }

  SnapshotRegistry* const registry_;
  const std::shared_ptr<SnapshotImage> image_;
  const uint64_t size_;
  uint32_t next_shard_ = 0;
  ShardImage own_;                          // the reader's own copies, buffer reused
  std::shared_ptr<const ShardImage> held_;  // a writer's copy of the current shard
  const ShardImage* current_ = nullptr;     // own_, held_ or none
  size_t position_ = 0;
};

SnapshotRegistry::SnapshotRegistry(CpuShard* shards, uint32_t shard_count)
    : shards_(shards), shard_count_(shard_count) {}

SnapshotRegistry::~SnapshotRegistry() = default;

Status SnapshotRegistry::Open(std::unique_ptr<SnapshotReader>* out) {
  std::shared_ptr<SnapshotImage> image;
  {
    std::lock_guard lock(mu_);
    const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
    image = std::make_shared<SnapshotImage>(generation, shard_count_);
    open_.push_back(image);
    generation_.store(generation, std::memory_order_release);  // the image's instant
  }
  // The image's size, exactly, without copying anything: a shard no write
  // has touched since the instant is still as it was then; one a write has
  // touched was copied first.
  uint64_t size = 0;
  for (uint32_t s = 0; s < shard_count_; ++s) {
    CpuShard& shard = shards_[s];
    std::shared_lock lock(shard.lock);
    size += image->captured[s] ? image->copies[s]->size() : shard.table.size();
  }
  *out = std::make_unique<CpuSnapshotReader>(this, std::move(image), size);
  return Status::Ok();
}

void SnapshotRegistry::CaptureForOpenImages(CpuShard& shard) {
  const auto s = static_cast<uint32_t>(&shard - shards_);
  // Copy the list (a rare slow path: once per shard per snapshot) so the
  // shard copy below does not hold the mutex other shards' writers need.
  std::vector<std::shared_ptr<SnapshotImage>> open;
  uint64_t generation;
  {
    std::lock_guard lock(mu_);
    generation = generation_.load(std::memory_order_relaxed);
    open = open_;
  }
  std::shared_ptr<ShardImage> copy;
  for (const std::shared_ptr<SnapshotImage>& image : open) {
    if (image->captured[s]) continue;
    if (copy == nullptr) {
      copy = std::make_shared<ShardImage>();
      copy->CopyFrom(shard.table);
    }
    image->copies[s] = copy;
    image->captured[s] = 1;
  }
  shard.captured_generation = generation;
}

void SnapshotRegistry::Unregister(const SnapshotImage* image) {
  std::lock_guard lock(mu_);
  std::erase_if(open_, [image](const std::shared_ptr<SnapshotImage>& p) { return p.get() == image; });
}

}  // namespace kvcg::store::cpu
