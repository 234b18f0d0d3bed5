// The paper's histogram trainer (see trainer.h): one relaxed atomic counter
// per bin, so sampling threads never lock; Build reads the counters without
// stopping them (a sample landing during the read may or may not count).
#include <atomic>
#include <memory>
#include <vector>

#include "router/bins.h"
#include "router/trainer.h"

namespace kvcg::router {

namespace {

class HistogramTrainer final : public Trainer {
 public:
  HistogramTrainer(uint32_t bins, double threshold)
      : bin_count_(bins), threshold_(threshold),
        bins_(std::make_unique<std::atomic<uint64_t>[]>(bin_count_)) {
    for (size_t i = 0; i < bin_count_; ++i) bins_[i].store(0, std::memory_order_relaxed);
  }

  bool Add(std::string_view, uint64_t hash) override {
    bins_[BinOf(hash, bin_count_)].fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  std::shared_ptr<const Model> Build(double* hot_share) const override {
    *hot_share = 0;
    std::vector<uint64_t> counts(bin_count_);
    uint64_t total = 0;
    for (size_t i = 0; i < bin_count_; ++i) {
      counts[i] = bins_[i].load(std::memory_order_relaxed);
      total += counts[i];
    }
    std::vector<bool> hot(bin_count_, false);
    if (total == 0) return MakeHistogramModel(std::move(hot));
    uint64_t hot_samples = 0;
    for (size_t i = 0; i < bin_count_; ++i) {
      hot[i] = static_cast<double>(counts[i]) / static_cast<double>(total) > threshold_;
      if (hot[i]) hot_samples += counts[i];
    }
    *hot_share = static_cast<double>(hot_samples) / static_cast<double>(total);
    return MakeHistogramModel(std::move(hot));
  }

  void Reset() override {
    for (size_t i = 0; i < bin_count_; ++i) bins_[i].store(0, std::memory_order_relaxed);
  }

  std::string Describe() const override {
    return "histogram(" + std::to_string(bin_count_) + " bins)";
  }

 private:
  const size_t bin_count_;
  const double threshold_;
  std::unique_ptr<std::atomic<uint64_t>[]> bins_;
};

}  // namespace

std::unique_ptr<Trainer> MakeHistogramTrainer(uint32_t bins, double threshold) {
  return std::make_unique<HistogramTrainer>(bins, threshold);
}

}  // namespace kvcg::router
