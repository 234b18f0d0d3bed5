// ReadSplit (read_split.h).
#include "durability/read_split.h"

#include <bit>
#include <memory>
#include <utility>

#include "common/op_scan.h"
#include "kvcg/hash.h"

namespace kvcg::durability {

void OpsOnWrittenKeys(const Batch& batch, std::vector<uint32_t>* written) {
  written->clear();
  const size_t n = batch.size();
  std::vector<uint64_t> hashes(n);
  size_t writes = 0;
  for (size_t i = 0; i < n; ++i) {
    hashes[i] = Xxh3Hash(batch.key(i));
    if (TypeIn(batch.type(i), kWritingTypes)) ++writes;
  }
  if (writes == 0) return;
  // The written keys by hash (open addressing; slot = a write op's index + 1),
  // then every op looked up: a few dozen writes among hundreds of reads.
  const size_t cap = std::bit_ceil(2 * writes);
  std::vector<uint32_t> table(cap, 0);
  const auto find = [&](size_t i, bool insert) {
    const std::string_view key = batch.key(i);
    for (size_t s = hashes[i] & (cap - 1);; s = (s + 1) & (cap - 1)) {
      const uint32_t at = table[s];
      if (at == 0) {
        if (insert) table[s] = uint32_t(i) + 1;
        return false;
      }
      if (hashes[at - 1] == hashes[i] && batch.key(at - 1) == key) return true;
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (TypeIn(batch.type(i), kWritingTypes)) find(i, /*insert=*/true);
  }
  for (size_t i = 0; i < n; ++i) {
    if (TypeIn(batch.type(i), kWritingTypes) || find(i, /*insert=*/false)) written->push_back(uint32_t(i));
  }
}

Results SplitJoin::Merge(Results reads, Results writes, const std::vector<uint32_t>& written) {
  // Mostly: the written keys' answers over the masked ops, in place.
  bool in_place = writes.size() >= written.size();
  for (size_t k = 0; k < written.size() && in_place; ++k) {
    in_place = reads.Replace(written[k], writes.code(k), writes.value(k), writes.expire_at(k));
  }
  if (in_place) {
    struct Held final : Results::Owner {
      explicit Held(Results r) : results(std::move(r)) {}
      Results results;
    };
    reads.Adopt(std::make_unique<Held>(std::move(writes)));
    return reads;
  }
  // A column the answer needs is missing (an expire-at where no read had
  // one): both Results seen through a new one. Ops before the failed
  // Replace already view `writes`, which the new Results keeps too.
  ResultsBuilder b;
  b.Reset(reads.size());
  size_t k = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const bool from_writes = k < written.size() && written[k] == i;
    const Results& from = from_writes ? writes : reads;
    const size_t j = from_writes ? k++ : i;
    if (j >= from.size()) {
      b.SetCode(i, Code::kInternal);  // the store answered too few ops
    } else if (from.found(j)) {
      b.SetView(i, Code::kOk, from.value(j));
      b.SetExpire(i, from.expire_at(j));
    } else {
      b.SetCode(i, from.code(j));
    }
  }
  b.Keep(std::move(reads));
  b.Keep(std::move(writes));
  return b.Finish();
}

void SplitJoin::Arrive(Results* slot, Results&& r) {
  *slot = std::move(r);
  if (left_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Store::Completion done = std::move(done_);
  Results merged = Merge(std::move(reads_), std::move(writes_), written_);
  delete this;
  done(std::move(merged));
}

}  // namespace kvcg::durability
