// SameKeyOrder: the in-batch numbering that makes the kernel run ops on one
// key in batch order. Checked against a direct model: for every op, the set
// of earlier same-key ops it must wait for, and that waiting for `need` done
// ops of its group waits for exactly (at least) those.
#include "store/gpu/same_key_order.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace kvcg::store::gpu {
namespace {

struct Op {
  uint64_t key;
  bool writer;
};

void Number(const std::vector<Op>& ops, uint64_t (*slot_hash)(uint64_t), std::vector<uint32_t>* group,
            std::vector<uint32_t>* need, SameKeyOrder* order) {
  group->assign(ops.size(), 99);
  need->assign(ops.size(), 99);
  order->Begin(ops.size());
  for (uint32_t i = 0; i < ops.size(); ++i) {
    order->Add(i, slot_hash(ops[i].key), ops[i].writer,
               [&](uint32_t j) { return ops[j].key == ops[i].key; }, group->data(), need->data());
  }
}

TEST(SameKeyOrder, SingletonsNeverWait) {
  SameKeyOrder order;
  std::vector<Op> ops;
  for (uint64_t k = 0; k < 100; ++k) ops.push_back({k, k % 2 == 0});
  std::vector<uint32_t> group, need;
  Number(ops, [](uint64_t k) { return k; }, &group, &need, &order);
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(group[i], 0u) << i;
    EXPECT_EQ(need[i], 0u) << i;
  }
  EXPECT_EQ(order.groups(), 0u);
}

TEST(SameKeyOrder, PutGetDeleteGet) {
  SameKeyOrder order;
  std::vector<Op> ops = {{5, true}, {5, false}, {6, false}, {5, true}, {5, false}, {5, false}};
  std::vector<uint32_t> group, need;
  Number(ops, [](uint64_t k) { return k; }, &group, &need, &order);
  EXPECT_EQ(order.groups(), 1u);
  EXPECT_EQ(group[0], 1u);
  EXPECT_EQ(group[2], 0u);
  // PUT rank 0; GET waits for the PUT; DELETE (rank 2) waits for both;
  // the two GETs after it wait for the DELETE only (rank 2 + 1 = 3 done).
  EXPECT_EQ(need[0], 0u);
  EXPECT_EQ(need[1], 1u);
  EXPECT_EQ(need[3], 2u);
  EXPECT_EQ(need[4], 3u);
  EXPECT_EQ(need[5], 3u);
}

// Random batches, with a degenerate slot hash (every key collides) and a
// good one: the numbering must be the same, and for each op, "need done"
// must imply that every earlier write of its key (and, for writes, every
// earlier op of its key) is done, in every execution order the waits allow.
class SameKeyOrderRandom : public ::testing::TestWithParam<int> {};

TEST_P(SameKeyOrderRandom, MatchesModel) {
  std::mt19937_64 rng(GetParam());
  SameKeyOrder order;
  for (int round = 0; round < 20; ++round) {
    const int n = 1 + int(rng() % 400);
    const int keys = 1 + int(rng() % 20);
    std::vector<Op> ops;
    for (int i = 0; i < n; ++i) ops.push_back({rng() % keys, rng() % 3 != 0});
    std::vector<uint32_t> g1, n1, g2, n2;
    Number(ops, [](uint64_t) { return uint64_t(7); }, &g1, &n1, &order);
    Number(ops, [](uint64_t k) -> uint64_t { return k * 0x9E3779B97F4A7C15ull; }, &g2, &n2, &order);
    ASSERT_EQ(n1, n2);
    // Model: rank within key, last write rank.
    std::vector<int> count(keys, 0), last_write(keys, -1);
    for (int i = 0; i < n; ++i) {
      const int k = int(ops[i].key);
      const int rank = count[k]++;
      const uint32_t want = ops[i].writer ? uint32_t(rank) : uint32_t(last_write[k] + 1);
      ASSERT_EQ(n1[i], want) << "op " << i;
      if (ops[i].writer) last_write[k] = rank;
    }
    // Same group id for same key when the key occurs twice or more.
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j) {
        if (ops[i].key == ops[j].key) {
          ASSERT_NE(g1[i], 0u);
          ASSERT_EQ(g1[i], g1[j]);
        } else if (g1[i] != 0) {
          ASSERT_NE(g1[i], g1[j]);
        }
      }
    }
    // Simulate: repeatedly run any op whose wait is satisfied (latest first,
    // the most adversarial order) and check the model's order constraint.
    std::vector<uint32_t> done(order.groups() + 1, 0);
    std::vector<bool> ran(n, false);
    int remaining = n;
    while (remaining > 0) {
      int pick = -1;
      for (int i = n - 1; i >= 0; --i) {
        if (!ran[i] && (g1[i] == 0 || done[g1[i]] >= n1[i])) {
          pick = i;
          break;
        }
      }
      ASSERT_GE(pick, 0) << "deadlock";
      for (int j = 0; j < pick; ++j) {
        if (ops[j].key != ops[pick].key) continue;
        if (ops[pick].writer || ops[j].writer) {
          ASSERT_TRUE(ran[j]) << pick << " overtook " << j;
        }
      }
      ran[pick] = true;
      --remaining;
      if (g1[pick] != 0) ++done[g1[pick]];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SameKeyOrderRandom, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace kvcg::store::gpu
