// xxHash3-64, compiled inline from the Debian header so the per-key call has
// no PLT hop and the GPU host (which only gets the header carried) links too.
// HashKeys (common/batch_hash.h) is here for the same reason: XXH3 inline.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/batch_hash.h"
#include "kvcg/hash.h"

namespace kvcg {

uint64_t Xxh3Hash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

void HashKeys(const Batch& batch, HashFunction hash, uint64_t* out) {
  const size_t n = batch.size();
  if (hash != &Xxh3Hash) {
    for (size_t i = 0; i < n; ++i) out[i] = hash(batch.key(i));
    return;
  }
  if (batch.fixed_width() && batch.fixed_key_width() == 8) {
    const char* keys = batch.key_bytes();
    for (size_t i = 0; i < n; ++i) out[i] = XXH3_64bits(keys + 8 * i, 8);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const std::string_view key = batch.key(i);
    out[i] = XXH3_64bits(key.data(), key.size());
  }
}

}  // namespace kvcg
