// xxHash3-64, compiled inline from the Debian header so the per-key call has
// no PLT hop and the GPU host (which only gets the header carried) links too.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kvcg/hash.h"

namespace kvcg {

uint64_t Xxh3Hash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

}  // namespace kvcg
