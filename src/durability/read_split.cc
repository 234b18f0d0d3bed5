// ReadSplit (read_split.h).
#include "durability/read_split.h"

#include <bit>
#include <memory>
#include <utility>

#include "common/batch_hash.h"
#include "common/op_scan.h"

namespace kvcg::durability {

void OpsOnWrittenKeys(const Batch& batch, HashFunction hash, std::vector<uint32_t>* written) {
  written->clear();
  const size_t n = batch.size();
  size_t writes = 0;
  for (size_t i = 0; i < n; ++i) writes += TypeIn(batch.type(i), kWritingTypes);
  if (writes == 0) return;
  std::vector<uint64_t> hashes(n);
  HashKeys(batch, hash, hashes.data());
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

bool PlanReadSplit(const Batch& batch, HashFunction hash, ReadSplitPlan* plan) {
  std::vector<uint32_t> written, others;
  OpsOnWrittenKeys(batch, hash, &written);
  uint64_t written_bytes = 0, other_bytes = 0;
  for (size_t i = 0, w = 0; i < batch.size(); ++i) {
    const uint64_t bytes = batch.key(i).size() + batch.value(i).size() + batch.expected(i).size();
    if (w < written.size() && written[w] == i) {
      ++w;
      written_bytes += bytes;
    } else if (batch.type(i) != OpType::kNoop) {
      others.push_back(uint32_t(i));
      other_bytes += bytes;
    }
  }
  if (others.empty()) return false;
  plan->copies_written = written_bytes <= other_bytes;
  plan->copied = std::move(plan->copies_written ? written : others);
  plan->bytes = plan->copies_written ? written_bytes : other_bytes;
  return true;
}

Results SplitJoin::Merge(Results base, Results copy, const std::vector<uint32_t>& copied) {
  // Mostly: the copy's answers over the masked ops, in place.
  bool in_place = copy.size() >= copied.size();
  for (size_t k = 0; k < copied.size() && in_place; ++k) {
    in_place = base.Replace(copied[k], copy.code(k), copy.value(k), copy.expire_at(k));
  }
  if (in_place) {
    struct Held final : Results::Owner {
      explicit Held(Results r) : results(std::move(r)) {}
      Results results;
    };
    base.Adopt(std::make_unique<Held>(std::move(copy)));
    return base;
  }
  // A column the answer needs is missing (an expire-at where no op of the
  // base had one): both Results seen through a new one. Ops before the
  // failed Replace already view `copy`, which the new Results keeps too.
  ResultsBuilder b;
  b.Reset(base.size());
  size_t k = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const bool copied_op = k < copied.size() && copied[k] == i;
    const Results& from = copied_op ? copy : base;
    const size_t j = copied_op ? k++ : i;
    if (j >= from.size()) {
      b.SetCode(i, Code::kInternal);  // the store answered too few ops
    } else {
      b.SetView(i, from[j]);
    }
  }
  b.Keep(std::move(base));
  b.Keep(std::move(copy));
  return b.Finish();
}

void SplitJoin::Arrive(Results* slot, Results&& r) {
  *slot = std::move(r);
  if (left_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Store::Completion done = std::move(done_);
  Results merged = Merge(std::move(base_), std::move(copy_), copied_);
  delete this;
  done(std::move(merged));
}

}  // namespace kvcg::durability
