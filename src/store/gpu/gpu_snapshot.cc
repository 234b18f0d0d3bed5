// GpuSnapshotReader (gpu_snapshot.h).
#include "store/gpu/gpu_snapshot.h"

#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "store/gpu/snapshot_kernels.h"

namespace kvcg::store::gpu {

GpuSnapshotReader::GpuSnapshotReader(bool general, char* image, uint64_t image_bytes,
                                     uint64_t entries, std::unique_ptr<ResultEpochs::Lease> hold,
                                     PinnedMemory* memory)
    : general_(general),
      image_(image),
      image_bytes_(image_bytes),
      entries_(entries),
      hold_(std::move(hold)),
      memory_(memory) {}

GpuSnapshotReader::~GpuSnapshotReader() {
  if (image_ != nullptr) memory_->Free(image_, image_bytes_);
  hold_.reset();  // the blobs may go now
}

bool GpuSnapshotReader::Next(SnapshotChunk* chunk) {
  chunk->clear();
  if (!status_.ok()) return false;
  if (chunk->keys.capacity() < kChunkEntries) {
    chunk->keys.reserve(kChunkEntries);
    chunk->values.reserve(kChunkEntries);
  }
  while (at_ < image_bytes_ && chunk->keys.size() < kChunkEntries) {
    const char* e = image_ + at_;
    const uint64_t left = image_bytes_ - at_;
    if (!general_) {
      if (left < 16) break;  // reported below
      chunk->keys.emplace_back(e, 8);
      chunk->values.emplace_back(e + 8, 8);
      chunk->expires.push_back(0);
      at_ += 16;
      continue;
    }
    if (left < 24) break;
    uint64_t blob = 0, lens = 0, expire_at = 0;
    std::memcpy(&blob, e, 8);
    std::memcpy(&lens, e + 8, 8);
    std::memcpy(&expire_at, e + 16, 8);
    const uint32_t key_bytes = uint32_t(lens);
    const uint64_t size = SnapshotEntryBytes(true, key_bytes);
    if (size > left || blob == 0) break;
    chunk->keys.emplace_back(e + 8 * kRecordKeyWord, key_bytes);
    // The ValueBlob is the bytes; their length is in the record (lslab_types.h).
    chunk->values.emplace_back(reinterpret_cast<const char*>(blob), size_t(lens >> 32));
    chunk->expires.push_back(expire_at);
    at_ += size;
  }
  if (at_ < image_bytes_ && chunk->keys.size() < kChunkEntries) {
    // Only a malformed image stops short of its end.
    status_ = Status::Internal("GPU snapshot image is malformed at byte " + std::to_string(at_) +
                               " of " + std::to_string(image_bytes_));
    chunk->clear();
    return false;
  }
  return !chunk->keys.empty();
}

}  // namespace kvcg::store::gpu
