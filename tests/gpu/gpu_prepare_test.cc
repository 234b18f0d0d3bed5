// The ARB prepare's three size classes (arb_kernels.h) on both layouts: a
// small ARB (<= kSmallArbOps ops, one block of 256 threads), a medium one
// (<= kMediumArbOps, one block of 1,024 threads with its table in dynamic
// shared memory) and a large one (grid kernels and cub), each at and just
// past its bound, with keys repeated inside the batch (same-key numbering)
// and under a hash that sends every key to one group — checked op by op
// against a host model. One Execute per batch, so each batch is one ARB.
// Without a usable GPU every test is skipped with the reason.
#include <gtest/gtest.h>

#include "gpu_differential.h"
#include "gpu_test_util.h"
#include "store/gpu/arb_kernels.h"

namespace kvcg {
namespace {

using gpu_test::GpuConfig;
using gpu_test::OpenOrDie;
using gpu_test::RunDifferential;
using store::gpu::kMediumArbOps;
using store::gpu::kSmallArbOps;

const int kSizes[] = {int(kSmallArbOps), int(kSmallArbOps) + 1, 5000, int(kMediumArbOps),
                      int(kMediumArbOps) + 1};

TEST(GpuPrepare, EverySizeClassAtItsBoundsMatchesTheModel) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    for (bool pinned : {false, true}) {
      for (int ops : kSizes) {
        SCOPED_TRACE(std::string(LayoutName(layout)) + (pinned ? " pinned " : " heap ") +
                     std::to_string(ops) + " ops");
        auto store = OpenOrDie(GpuConfig(layout));
        ASSERT_TRUE(store);
        // 300 keys: every key about ops / 300 times in a batch.
        RunDifferential(store.get(), layout == Layout::kFixed8, 100 + uint64_t(ops), 3, ops, 300,
                        pinned);
      }
    }
  }
}

// Every key hashes alike: the whole batch is one group, one run of the
// medium prepare's sort whose ops must keep batch order (a stable sort) and
// wait for every earlier writer.
TEST(GpuPrepare, OneGroupOfAWholeMediumArbMatchesTheModel) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::kFixed8, Layout::kGeneral}) {
    SCOPED_TRACE(LayoutName(layout));
    auto store = OpenOrDie(gpu_test::CollidingGpuConfig(layout));
    ASSERT_TRUE(store);
    RunDifferential(store.get(), layout == Layout::kFixed8, 9, 2, int(kMediumArbOps), 200);
  }
}

}  // namespace
}  // namespace kvcg
