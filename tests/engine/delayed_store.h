// DelayedStore: a test-only canonical store that answers asynchronously,
// like the GPU backend, over a synchronous one (the CPU backend).
//
// Submit only enqueues; one worker thread runs the batches in submission
// order after a random delay of up to `max_delay_us` and calls the
// completion on that thread. One FIFO worker keeps the Store contract's
// same-key order across Submit calls; the delay keeps hot-cache misses in
// flight long enough for later operations to queue behind them and for
// model switches to overlap them, which an inline store never does.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "kvcg/store.h"

namespace kvcg::testing {

class DelayedStore final : public Store {
 public:
  DelayedStore(std::unique_ptr<Store> inner, uint32_t max_delay_us)
      : inner_(std::move(inner)), max_delay_us_(max_delay_us), worker_([this] { Run(); }) {}

  ~DelayedStore() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  void Submit(Batch batch, Completion done) override {
    {
      std::lock_guard lock(mu_);
      queue_.emplace_back(std::move(batch), std::move(done));
    }
    cv_.notify_one();
  }
  Batch NewBatch() override { return inner_->NewBatch(); }
  uint64_t Size() const override { return inner_->Size(); }
  uint64_t MemoryBytes() const override { return inner_->MemoryBytes(); }
  void Clear() override { inner_->Clear(); }
  StoreInfo Info() const override { return inner_->Info(); }

 private:
  void Run() {
    std::mt19937 rng(12345);
    for (;;) {
      std::pair<Batch, Completion> item;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      if (max_delay_us_ != 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % (max_delay_us_ + 1)));
      }
      item.second(inner_->Execute(std::move(item.first)));
    }
  }

  std::unique_ptr<Store> inner_;
  const uint32_t max_delay_us_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Batch, Completion>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace kvcg::testing
